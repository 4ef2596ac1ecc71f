"""Trust verdicts through the real CLI (in process), from a hostile review: inputs that tried to
make a command say yes where the table in docs/trust-decisions.md says no."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from tests.harness.cli import acx_json
from tests.harness.installs import (
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    write_policy,
    write_registry,
)

NOW = datetime.now(UTC).replace(microsecond=0)
SIGNED = NOW - timedelta(days=1)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> tuple[Path, PrivateKey, Path]:
    """One cartridge signed by a fresh key (claiming PUBLISHER), pushed to a layout as v1."""
    tmp = tmp_path_factory.mktemp("trust-review")
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp / "agent.acx", key, signed_at=SIGNED)
    layout = tmp / "layout"
    push_cartridge(layout, acx, "v1")
    return acx, key, layout


def _install(capsys: pytest.CaptureFixture[str], layout: Path, policy: Path, store: Path) -> tuple[int, Any]:
    return acx_json(capsys, "install", f"oci-layout:{layout}:v1", "--policy", str(policy), "--store",
                    str(store))


@pytest.mark.parametrize("order", ["active-first", "revoked-first"])
def test_key_active_in_one_registry_revoked_in_another_is_not_installed(
        order: str, signed: tuple[Path, PrivateKey, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Two registries given to one policy publisher disagree about one key: the first listed must
    not win (a revocation published in a second registry would be ignored). Fail closed."""
    _, key, layout = signed
    active = write_registry(tmp_path / "a.json", [registry_entry(key, PUBLISHER)])
    revoked = write_registry(tmp_path / "r.json", [registry_entry(key, PUBLISHER, status="revoked",
                                                                  revocationReason="key-compromise",
                                                                  revokedAt="2026-01-02T00:00:00Z")])
    regs = [str(active), str(revoked)] if order == "active-first" else [str(revoked), str(active)]
    for minimum in ("portable", "trusted"):
        pol = write_policy(tmp_path / f"p-{minimum}.yaml", {
            "publishers": [{"id": PUBLISHER, "trustRegistries": regs}], "minimumTrust": minimum})
        code, out = _install(capsys, layout, pol, tmp_path / f"store-{minimum}")
        assert code != 0, out
        assert not (tmp_path / f"store-{minimum}").exists() or not any((tmp_path / f"store-{minimum}").rglob(
            "*.acx")), out
        assert "conflicting" in json.dumps(out), out


def test_key_registered_to_two_publishers_across_registries_is_refused(
        signed: tuple[Path, PrivateKey, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same key tied to PUBLISHER in one policy publisher's registry and to another publisher in
    another's: whose key it is depends on policy order, so the policy is refused."""
    _, key, layout = signed
    mine = write_registry(tmp_path / "mine.json", [registry_entry(key, PUBLISHER)])
    theirs = write_registry(tmp_path / "theirs.json", [registry_entry(key, "io.github.someone-else")])
    for pubs in ([(PUBLISHER, mine), ("io.github.someone-else", theirs)],
                 [("io.github.someone-else", theirs), (PUBLISHER, mine)]):
        pol = write_policy(tmp_path / "p.yaml", {
            "publishers": [{"id": p, "trustRegistries": [str(r)]} for p, r in pubs]})
        code, out = _install(capsys, layout, pol, tmp_path / "store")
        assert code != 0, out
        assert "conflicting" in json.dumps(out), out


def _claiming(vectors_dir: Path, dest: Path, key: PrivateKey, claim: str) -> Path:
    """A cartridge whose meta and signed predicate claim publisher `claim`, signed by `key`."""
    import sqlite3

    from acxoci.cartridge.sign import resign_file
    from tests.harness.installs import iso

    acx = make_cartridge(vectors_dir, dest, key, signed_at=SIGNED)
    conn = sqlite3.connect(acx, isolation_level=None)
    try:
        conn.execute("UPDATE cartridge SET value = ? WHERE key = 'acx.publisher_id'", (claim,))
    finally:
        conn.close()
    resign_file(acx, key, signed_at=iso(SIGNED), refresh=True)
    return acx


@pytest.mark.parametrize("claim", [
    PUBLISHER + "/../evil", PUBLISHER + "/x/..", PUBLISHER + "/", PUBLISHER + "//x", PUBLISHER + "/x\x00",
    PUBLISHER + "/\u0435vil", PUBLISHER + "/X", PUBLISHER.upper(), PUBLISHER + ".",
    "io.github.example-acx.evil",
])
def test_malformed_or_sibling_publisher_claim_is_not_covered(
        claim: str, vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A key registered to PUBLISHER vouches for PUBLISHER and its well-formed `/sub` namespaces only:
    a `/..`, empty, upper-case, NUL or look-alike segment is no namespace of it (cartridge verify
    --require trusted and install both refuse, 8, naming the claim)."""
    key = generate_ed25519()
    reg = write_registry(tmp_path / "reg.json", [registry_entry(key, PUBLISHER)])
    acx = _claiming(vectors_dir, tmp_path / "a.acx", key, claim)
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--trust-registry", str(reg),
                         "--require", "trusted")
    assert (code, out["trust"]) == (8, "portable"), out
    layout = tmp_path / "layout"
    push_cartridge(layout, acx, "v1")
    pol = write_policy(tmp_path / "p.yaml", {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]}],
                                             "minimumTrust": "portable"})
    code, out = _install(capsys, layout, pol, tmp_path / "store")
    trust = next(c for c in out["checks"] if c["id"] == "trust")
    assert (code, trust["status"], trust["kind"]) == (8, "fail", "untrusted_publisher"), trust


def test_well_formed_sub_namespace_is_still_covered(vectors_dir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The guard above does not take the `/sub` rule away."""
    key = generate_ed25519()
    reg = write_registry(tmp_path / "reg.json", [registry_entry(key, PUBLISHER)])
    acx = _claiming(vectors_dir, tmp_path / "a.acx", key, PUBLISHER + "/team-a")
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--trust-registry", str(reg),
                         "--require", "trusted")
    assert (code, out["trust"]) == (0, "trusted"), out


@pytest.mark.parametrize("field,value", [("notAfter", "9999-12-31T23:59:59-14:00"),
                                         ("notBefore", "0001-01-01T00:00:00+14:00")])
def test_registry_date_outside_utc_years_is_invalid_input_not_internal(
        field: str, value: str, signed: tuple[Path, PrivateKey, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A window bound whose UTC instant falls outside years 1-9999 crashed (OverflowError, exit 70)
    when the reason text printed it; the registry is refused as invalid instead."""
    acx, key, _ = signed
    reg = write_registry(tmp_path / "reg.json", [registry_entry(key, PUBLISHER, **{field: value})])
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--trust-registry", str(reg))
    assert (code, out["error"]["kind"]) == (3, "invalid_input"), out
    assert "outside years" in out["error"]["message"], out


def test_now_outside_utc_years_is_a_usage_error(signed: tuple[Path, PrivateKey, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    acx, _, _ = signed
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--now", "0001-01-01T00:00:00+14:00")
    assert code == 2 and out["error"]["kind"] == "usage", out


@pytest.mark.parametrize("predicate", ["slsa", "cartridge-claiming-mallory"])
def test_verify_counts_no_attestation_by_another_registry_publisher(
        predicate: str, vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`acx verify` with a registry naming two publishers: an attestation of PUBLISHER's cartridge
    signed by the other publisher's key (a SLSA predicate with no publisherId, or the cartridge
    predicate claiming the other publisher) said "verified", exit 0. The artifact's own publisher
    (read from the pulled cartridge) is the claim the key must cover."""
    import dataclasses

    from acxoci.attestation.attach import attest_artifact, content_layer
    from acxoci.attestation.content import cartridge_facts
    from acxoci.oci.layout import LayoutStore
    from acxoci.oci.target import fetch_manifest

    owner, mallory = generate_ed25519(), generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "a.acx", owner, signed_at=SIGNED)
    layout = tmp_path / "layout"
    desc = push_cartridge(layout, acx, "v1")
    reg = write_registry(tmp_path / "reg.json", [registry_entry(owner, PUBLISHER),
                                                 registry_entry(mallory, "io.github.mallory")])
    store = LayoutStore(layout)
    if predicate == "slsa":
        ptype, pred = "https://slsa.dev/provenance/v1", {"buildDefinition": {}}
    else:
        layer = content_layer(fetch_manifest(store, desc), "cartridge")
        facts = dataclasses.replace(cartridge_facts(acx, layer.digest, now=NOW),
                                    publisher_id="io.github.mallory")
        ptype, pred = "https://acx.dev/attestation/cartridge/v1", facts.predicate()
    attest_artifact(store, desc, "agents/agent", mallory, predicate_type=ptype, predicate=pred, now=SIGNED,
                    formats="bundle")
    code, out = acx_json(capsys, "verify", f"oci-layout:{layout}:v1", "--trust-registry", str(reg))
    assert code == 1 and out["ok"] is False, out
    assert any("registered to publisher io.github.mallory, not " + PUBLISHER in r
               for a in out["attestations"] for r in a["reasons"]), out


def test_installed_verify_reports_a_signer_key_revoked_since_install(
        signed: tuple[Path, PrivateKey, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`installed verify` re-checked files and credential revocation only: after the signer key
    was revoked in the registry the recorded policy names, it still said OK (exit 0)."""
    _, key, layout = signed
    reg = write_registry(tmp_path / "reg.json", [registry_entry(key, PUBLISHER)])
    pol = write_policy(tmp_path / "p.yaml",
                       {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]}]})
    store = tmp_path / "store"
    code, out = _install(capsys, layout, pol, store)
    assert code == 0, out
    code, out = acx_json(capsys, "installed", "verify", "--store", str(store))
    assert code == 0 and out["ok"], out
    write_registry(reg, [registry_entry(key, PUBLISHER, status="revoked", revocationReason="key-compromise",
                                        revokedAt="2026-01-02T00:00:00Z")])
    code, out = acx_json(capsys, "installed", "verify", "--store", str(store))
    assert code == 1 and not out["ok"], out
    item = out["items"][0]
    assert item["signer"]["kind"] == "revoked_key", item["problems"]
    assert any(p.startswith("trust [revoked_key]: signer key is revoked for key-compromise")
               for p in item["problems"]), item


def test_release_read_back_refuses_a_policy_weakened_after_prepare(
        tmp_path: Path, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan names its acceptance policy by path only: a policy file weakened between `prepare`
    (which checked the input against it) and the read-back let the release through under the weaker
    one. The read-back now refuses a policy that is not the one prepare checked (validation_failed)."""
    import yaml

    from acxoci.release import interpreter
    from acxoci.release.plan import load_plan
    from tests.harness.releases import make_world

    layout = tmp_path / "layout"
    w = make_world(tmp_path, vectors_dir, [f"oci-layout:{layout}"], formats=())
    weak = yaml.safe_load(w.policy.read_text())
    strong = {**weak, "attestations": {"formats": ["bundle"],
                                       "keys": [{"publicKeyFile": "keys/attest.pub.pem"}]}}
    w.policy.write_text(yaml.safe_dump(strong))  # the plan attaches no attestation: strong refuses it
    real = interpreter.EXECUTORS["prepare"]

    def prepare_then_weaken(ctx: Any, e: Any) -> Any:
        out = real(ctx, e)
        w.policy.write_text(yaml.safe_dump(weak))
        return out

    monkeypatch.setitem(interpreter.EXECUTORS, "prepare", prepare_then_weaken)
    report = interpreter.run_goal(load_plan(w.plan), root=w.state)
    assert report.exit_code() == 9, report.to_json()
    blocked = [e for e in report.status.effects if e.state == "blocked"]
    assert blocked and blocked[0].failure is not None, report.to_json()
    assert blocked[0].failure.cls == "validation_failed"
    assert "acceptance policy changed since prepare" in blocked[0].failure.message


@pytest.mark.parametrize("not_before_days", [30, -30])
def test_signature_dated_after_now_is_not_trusted(not_before_days: int, vectors_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A signature dated 40 days ahead of now was trusted, even by a key whose window only opens in
    30 days (pre-registered successor key used before its time). Dated ahead of now (beyond the
    clock-skew allowance) it is portable, with the reason naming both times."""
    from acxoci.attest.trust import format_rfc3339

    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "a.acx", key, signed_at=NOW + timedelta(days=40))
    reg = write_registry(tmp_path / "reg.json", [registry_entry(
        key, PUBLISHER, notBefore=format_rfc3339(NOW + timedelta(days=not_before_days)),
        notAfter=format_rfc3339(NOW + timedelta(days=365)))])
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--trust-registry", str(reg),
                         "--require", "trusted")
    assert (code, out["trust"]) == (8, "portable"), out
    assert out["issues"][0].startswith("artifact signed at "), out
    assert "later than the time of verification" in out["issues"][0], out
    layout = tmp_path / "layout"
    push_cartridge(layout, acx, "v1")
    pol = write_policy(tmp_path / "p.yaml",
                       {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]}]})
    code, out = _install(capsys, layout, pol, tmp_path / "store")
    trust = next(c for c in out["checks"] if c["id"] == "trust")
    assert (code, trust["kind"]) == (8, "trust_too_low"), trust


def test_graph_signed_for_a_sub_namespace_of_the_registered_publisher_names_why(
        vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Workflows and graphs reject a registry publisher that differs from the signed one, even a
    parent of its `/sub` namespace (reference behaviour, stricter than cartridges): the verdict said
    tampered with no reason at all. It now gives the table's reason text."""
    from acxoci.workflow.graph import sign_graph

    src = json.loads((vectors_dir / "graph" / "product-delivery.agent-graph.json").read_text())
    key = generate_ed25519()
    signed_doc = sign_graph(src, publisher_id="io.github.example/team", key=key, now=SIGNED)
    path = tmp_path / "g.agent-graph.json"
    path.write_text(json.dumps(signed_doc))
    reg = write_registry(tmp_path / "reg.json", [registry_entry(key, "io.github.example")])
    code, out = acx_json(capsys, "graph", "verify", str(path), "--trust-registry", str(reg))
    assert (code, out["trust"]) == (1, "tampered"), out
    assert out["issues"] == ["signer key is registered to publisher io.github.example, not "
                             "io.github.example/team"], out
