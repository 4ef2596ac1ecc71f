"""An Agent Graph goes through the OCI life cycle like a workflow: push, attest (graph predicate
bound to the manifest), verify (content re-checked against the attested graph digest), install
under a policy trusting its signer (no staffing: a graph has no team), refusal when tampered."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.install.install import install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.workflow.graph import sign_graph
from tests.harness.cli import run_acx
from tests.harness.installs import registry_entry, trusting_policy, write_registry

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
PUBLISHER = "io.github.example-acx"
SOURCE = "graph/product-delivery.agent-graph.json"


def _signed_graph(vectors: Path, tmp: Path, key_name: str = "g") -> tuple[Path, object]:
    key = generate_ed25519()
    doc = sign_graph(json.loads((vectors / SOURCE).read_text()), publisher_id=PUBLISHER, key=key, now=NOW)
    path = tmp / f"{key_name}.signed.agent-graph.json"
    path.write_text(json.dumps(doc, indent=2))
    return path, key


def test_push_attest_verify_install(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph, key = _signed_graph(vectors_dir, tmp_path)
    ref = f"oci-layout:{tmp_path / 'layout'}:pd"
    assert run_acx(capsys, "push", str(graph), ref).returncode == 0
    att_key = tmp_path / "att.pem"
    att = generate_ed25519()
    att_key.write_bytes(att.pkcs8_pem())
    res = run_acx(capsys, "--json", "attest", ref, "--key", str(att_key))
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["predicateType"] == "https://acx.dev/attestation/agent-graph/v1"
    pub = tmp_path / "att.pub"
    pub.write_text(att.public().spki_pem())
    res = run_acx(capsys, "--json", "verify", ref, "--key", str(pub))
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["ok"], report
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])  # type: ignore[arg-type]
    pol = load_policy(trusting_policy(tmp_path, reg), now=NOW)
    out = install(ref, policy=pol, store=Store(tmp_path / "store"), now=NOW)
    assert out.status == "installed", [c.to_json() for c in out.failed]
    assert out.kind == "agent-graph" and out.record is not None
    checks = {c["id"]: c["status"] for c in out.record["checks"]}
    assert checks["signature"] == "pass" and checks["trust"] == "pass"
    assert checks["staffing"] == "skip" and checks["harness"] == "skip"
    assert out.name == f"{PUBLISHER}/product-delivery"
    # an unknown signer is not trusted by that policy
    other, _ = _signed_graph(vectors_dir, tmp_path, "other")
    ref2 = f"oci-layout:{tmp_path / 'layout'}:other"
    assert run_acx(capsys, "push", str(other), ref2).returncode == 0
    refused = install(ref2, policy=pol, store=Store(tmp_path / "store2"), now=NOW)
    assert refused.status == "refused" and {c.id for c in refused.failed} == {"trust"}


def test_tampered_graph_is_refused_at_install(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph, key = _signed_graph(vectors_dir, tmp_path)
    doc = json.loads(graph.read_text())
    doc["routes"][0]["purpose"] = "Do something the signer never said to do."
    graph.write_text(json.dumps(doc))
    ref = f"oci-layout:{tmp_path / 'layout'}:bad"
    assert run_acx(capsys, "push", "--no-verify", str(graph), ref).returncode == 0
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])  # type: ignore[arg-type]
    out = install(
        ref,
        policy=load_policy(trusting_policy(tmp_path, reg), now=NOW),
        store=Store(tmp_path / "store"),
        now=NOW,
    )
    assert out.status == "refused"
    assert {c.id: c.kind for c in out.failed}["signature"] == "tampered"
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").glob("*/*/record.json"))


def test_release_a_graph(vectors_dir: Path, tmp_path: Path) -> None:
    """`acx release` takes a `graph:` input through prepare, push, attest and read-back verify."""
    import yaml

    from acxoci.release.interpreter import run_goal
    from acxoci.release.plan import load_plan
    from tests.harness.releases import make_world

    layout = tmp_path / "w" / "layout"
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{layout}"])
    graph, key = _signed_graph(vectors_dir, w.tmp)
    reg = write_registry(w.tmp / "graph-trust.json", [registry_entry(key, PUBLISHER)])  # type: ignore[arg-type]
    pol = yaml.safe_load(w.policy.read_text())
    pol["publishers"] = [{"id": PUBLISHER, "trustRegistries": [str(reg)]}]
    w.policy.write_text(yaml.safe_dump(pol))
    doc = w.plan_doc()
    doc["inputs"]["artifacts"]["agent"] = {"graph": graph.name}
    w.write_plan(doc)
    result = run_goal(load_plan(w.plan), root=w.state)
    assert result.exit_code() == 0 and result.status.state == "done", result.status.to_json()
    ev = result.status.effect(f"verify:agent@oci-layout:{layout}").evidence or {}
    assert ev["acceptance"] == "installable", ev
    assert ev["checks"]["attestations"] == "pass" and ev["checks"]["signature"] == "pass"
