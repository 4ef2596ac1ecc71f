"""Builders for the Exchange tests (no tests here): an Exchange folder made at test time with
cartridges and a workflow built and signed by a run-time key, the reference artifacts from
../shared/vectors/reference laid out at their coordinates, and a status.json ledger."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PrivateKey
from acxoci.cartridge.build import build_cartridge
from tests.harness.env import REPO
from tests.harness.installs import NOW, PUBLISHER, rom_digest

REF_CARTRIDGES = {"ada-ridge": "io.github.ridgeworks", "rex-calder": "io.github.calder-sec"}
REF_WORKFLOWS = ("ship-a-feature", "research-council")
LEDGER_TIME = "2026-11-20T00:00:00.000Z"


@dataclass
class Exchange:
    """The folder and the identities of what the tests put in it."""

    root: Path
    ids: dict[str, dict[str, str]]
    reference_cartridges: list[str]


def build_version(tmp: Path, key: PrivateKey, version: str, description: str | None = None) -> Path:
    pkg = tmp / f"pkg-{version}"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    manifest = json.loads((pkg / "manifest.json").read_text())
    manifest["artifactVersion"] = version
    if description:
        manifest["description"] = description
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=2))
    out = tmp / f"pr-reviewer-{version}.acx"
    build_cartridge(pkg, out, publisher=PUBLISHER, key=key, created_at=f"2026-11-1{version[2]}T00:00:00.000Z")
    return out


def identity(kind: str, pid: str, aid: str, version: str, digest: str) -> dict[str, str]:
    return {"artifactType": kind, "publisherId": pid, "id": aid, "version": version, "digest": digest}


def make_exchange(
    tmp: Path, key: PrivateKey, vectors: Path, *, reference_cartridges: bool = True
) -> Exchange:
    """cartridges pr-reviewer 0.9.0 (superseded by 1.1.0), 1.0.0 (withdrawn), 1.1.0; the vector
    workflow signed by `key` (deprecated); the reference CALs; and the reference cartridges when
    acxoci's spec check accepts them (the Exchange gate requires a clean package spec)."""
    from acxoci.cartridge.spec import check_spec
    from acxoci.workflow.sign import sign_workflow

    root = tmp / "registry"
    ids: dict[str, dict[str, str]] = {}
    for v in ("0.9.0", "1.0.0", "1.1.0"):
        acx = build_version(tmp, key, v)
        dest = root / "cartridges" / PUBLISHER / "pr-reviewer" / v / "cartridge.acx"
        dest.parent.mkdir(parents=True)
        shutil.copyfile(acx, dest)
        ids[v] = identity("agent", PUBLISHER, "pr-reviewer", v, rom_digest(dest))
    doc = json.loads((vectors / "workflow" / "team.cal.json").read_text())
    signed = sign_workflow(doc, publisher_id=PUBLISHER, key=key, now=NOW)
    wf = root / "cals" / PUBLISHER / signed["id"] / f"{signed['version']}.cal.json"
    wf.parent.mkdir(parents=True)
    wf.write_text(json.dumps(signed, indent=2))
    ids["workflow"] = identity(
        "workflow", PUBLISHER, signed["id"], signed["version"], signed["integrity"]["digest"]
    )
    for name in REF_WORKFLOWS:
        d = json.loads((vectors / "reference" / f"{name}.cal.json").read_text())
        dest = root / "cals" / d["integrity"]["publisherId"] / d["id"] / f"{d['version']}.cal.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vectors / "reference" / f"{name}.cal.json", dest)
    laid: list[str] = []
    for name, pub in REF_CARTRIDGES.items():
        src = vectors / "reference" / f"{name}.acx"
        if not reference_cartridges or not check_spec(src).clean:
            continue
        dest = root / "cartridges" / pub / name / "1.0.0" / "cartridge.acx"
        dest.parent.mkdir(parents=True)
        shutil.copyfile(src, dest)
        laid.append(name)
    ledger: dict[str, Any] = {
        "schemaVersion": "acx.registry-status/1",
        "updatedAt": LEDGER_TIME,
        "entries": [
            {
                "artifact": ids["0.9.0"],
                "status": "superseded",
                "reason": "replaced by 1.1.0 with better review rules",
                "recordedAt": LEDGER_TIME,
                "successor": ids["1.1.0"],
            },
            {
                "artifact": ids["1.0.0"],
                "status": "withdrawn",
                "reason": "ships a broken review checklist",
                "recordedAt": LEDGER_TIME,
                "advisory": "https://example.org/advisories/1",
            },
            {
                "artifact": ids["workflow"],
                "status": "deprecated",
                "reason": "use the next team workflow instead",
                "recordedAt": LEDGER_TIME,
            },
        ],
    }
    (root / "status.json").write_text(json.dumps(ledger, indent=2))
    return Exchange(root, ids, laid)
