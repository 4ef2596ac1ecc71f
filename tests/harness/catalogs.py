"""Builders for the Studio and catalog tests (no tests here): the Exchange folder of the exchange
tests (laid out at test time from ../shared/vectors/reference) plus the reference's signed Agent
Graph, a hostile workflow and a hostile cartridge (HTML and script in every string a page shows)
signed by a run-time key, and a workflow tampered after signing; with the trust registry and the
policy that trust that key."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.workflow.sign import sign_workflow
from tests.harness.env import REPO
from tests.harness.exchanges import make_exchange
from tests.harness.installs import NOW, PUBLISHER, registry_entry, trusting_policy, write_registry

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
HOSTILE_DESC = ("<svg/onload=window.__pwned=3> a team whose every string tries to run script: "
                "</textarea><script>window.__pwned=4</script> & \"quotes\" 'too' \u202eright-to-left")
HOSTILE_SKILL = "<script>window.__pwned=5</script><b onmouseover=window.__pwned=6>review</b> a diff"
TAMPER_MARK = "TAMPERED-AFTER-SIGNING-7f3a"


@dataclass
class CatalogExchange:
    """The folder, its trust registry and policy, the key, and where the special cases are."""

    root: Path
    trust: Path
    policy: Path
    key: PrivateKey
    hostile_workflow: Path
    hostile_agent: Path
    tampered: Path
    graph: Path


def hostile_workflow_doc(vectors: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((vectors / "workflow" / "team.cal.json").read_text())
    doc.update(id="hostile-team", version="1.0.0", name=HOSTILE, description=HOSTILE_DESC)
    doc["nodes"][0]["action"] = '</text><script>window.__pwned=7</script><text x="0">'
    doc["rac"][0]["description"] = "<iframe src=javascript:window.__pwned=8></iframe> structure only"
    return doc


def _hostile_cartridge(tmp: Path, key: PrivateKey) -> Path:
    pkg = tmp / "hostile-package"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    manifest = json.loads((pkg / "manifest.json").read_text())
    manifest.update(name=HOSTILE, artifactId="hostile-agent", agentId="hostile-agent",
                    description=HOSTILE_DESC)
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=2))
    skill = pkg / "skills" / "review-checklist" / "SKILL.md"
    text = skill.read_text().replace(
        "description: A short checklist for reviewing a pull request. Use when asked to review a diff "
        "or a pull request.", f"description: {json.dumps(HOSTILE_SKILL)}")
    skill.write_text(text)
    out = tmp / "hostile-agent.acx"
    build_cartridge(pkg, out, publisher=PUBLISHER, key=key, created_at="2026-11-15T00:00:00.000Z")
    return out


def make_catalog_exchange(tmp: Path, vectors: Path) -> CatalogExchange:
    key = generate_ed25519()
    ex = make_exchange(tmp, key, vectors)
    root = ex.root
    graph = root / "graphs" / "io.github.lboel" / "product-delivery" / "1.0.0.agent-graph.json"
    graph.parent.mkdir(parents=True)
    shutil.copyfile(vectors / "graph" / "product-delivery.signed.agent-graph.json", graph)
    signed = sign_workflow(hostile_workflow_doc(vectors), publisher_id=PUBLISHER, key=key, now=NOW)
    hostile = root / "cals" / PUBLISHER / "hostile-team" / "1.0.0.cal.json"
    hostile.parent.mkdir(parents=True)
    hostile.write_text(json.dumps(signed, indent=2))
    tdoc = json.loads((vectors / "workflow" / "team.cal.json").read_text())
    tdoc.update(id="tampered-team", version="1.0.0")
    tsigned = sign_workflow(tdoc, publisher_id=PUBLISHER, key=key, now=NOW)
    tsigned["description"] = TAMPER_MARK + " " + tsigned["description"]
    tampered = root / "cals" / PUBLISHER / "tampered-team" / "1.0.0.cal.json"
    tampered.parent.mkdir(parents=True)
    tampered.write_text(json.dumps(tsigned, indent=2))
    agent = root / "cartridges" / PUBLISHER / "hostile-agent" / "1.0.0" / "cartridge.acx"
    agent.parent.mkdir(parents=True)
    shutil.copyfile(_hostile_cartridge(tmp, key), agent)
    trust = write_registry(tmp / "trust.json", [registry_entry(key, PUBLISHER)])
    policy = trusting_policy(tmp, trust)
    return CatalogExchange(root, trust, policy, key, hostile, agent, tampered, graph)
