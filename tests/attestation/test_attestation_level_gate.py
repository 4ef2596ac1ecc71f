"""`acx verify REF --require-level`: the attestation verdict plus the level credential (issuer,
ROM binding, revocation through the credential's own status list), on an OCI layout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.artifact import push_path
from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.cli.output import OPTS
from acxoci.oci.target import open_target
from tests.harness.cli import acx_json as acx

ISSUER = "did:web:verifier.example"
NOW = "2026-08-01T12:00:00Z"
LATER = "2026-08-01T13:00:00Z"
AT = datetime(2026, 8, 1, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _reset_opts() -> Iterator[None]:
    yield
    OPTS.json = OPTS.verbose = OPTS.quiet = False




def _issuer_registry(path: Path, pub_pem: str, keyid: str) -> None:
    reg = {"schemaVersion": "acx.trust-registry/1", "keys": [{
        "keyid": keyid, "publisherId": "example.verifier", "algorithm": "ed25519",
        "publicKeyPem": pub_pem, "status": "active",
        "notBefore": "2026-01-01T00:00:00Z", "notAfter": "2028-01-01T00:00:00Z",
        "namespaceProof": {"method": "dns-txt", "txtRecord": "_acx-challenge.verifier.example",
                           "verifiedAt": "2026-01-01T00:00:00Z"}}]}
    path.write_text(json.dumps(reg))


@pytest.fixture
def world(tmp_path: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """A built + pushed + attested cartridge, an issuer registry and a status list on the layout."""
    signer = generate_ed25519()
    (tmp_path / "signer.pem").write_bytes(signer.pkcs8_pem())
    (tmp_path / "signer.pub").write_text(signer.public().spki_pem())
    cart = tmp_path / "agent.acx"
    build_cartridge(vectors_dir / "sample" / "sample-agent-package", cart, publisher="io.github.tester",
                    key=signer, created_at=NOW)
    layout = f"oci-layout:{tmp_path / 'store'}"
    target, _ = open_target(layout)
    push_path(target, cart, "agent", verify=True, registry=None, now=AT, created=NOW)
    push_path(target, cart, "bare", verify=True, registry=None, now=AT, created=LATER)  # other manifest
    for tag in ("agent", "bare"):
        code, out = acx(capsys, "attest", f"{layout}:{tag}", "--key", str(tmp_path / "signer.pem"),
                        "--now", NOW)
        assert code == 0, out
    issuer = generate_ed25519()
    (tmp_path / "issuer.pem").write_bytes(issuer.pkcs8_pem())
    _issuer_registry(tmp_path / "issuers.json", issuer.public().spki_pem(), issuer.public().keyid())
    status_ref = f"{layout}:status"
    sl = tmp_path / "sl.json"
    code, out = acx(capsys, "status-list", "create", "--id", status_ref, "--issuer", ISSUER,
                    "--issuer-key", str(tmp_path / "issuer.pem"), "-o", str(sl), "--now", NOW)
    assert code == 0, out
    code, out = acx(capsys, "status-list", "publish", str(sl), status_ref, "--now", NOW)
    assert code == 0, out
    assert acx(capsys, "level", "bench-init", "--demo", "-o", str(tmp_path / "bench"))[0] == 0
    code, out = acx(capsys, "level", "issue", f"{layout}:agent", "--bench",
                    str(tmp_path / "bench" / "acx-bench-dag-de@2026.07.1.bench.json"),
                    "--issuer", ISSUER, "--issuer-key", str(tmp_path / "issuer.pem"),
                    "--status-list", str(sl),
                    "--attempt-log", str(tmp_path / "attempts.jsonl"), "--competence", "24",
                    "--now", NOW, "-o", str(tmp_path / "vc.json"))
    assert code == 0, out
    return {"dir": tmp_path, "layout": layout, "status": status_ref, "issued": out}


def _verify(capsys: pytest.CaptureFixture[str], w: dict[str, Any], tag: str, *extra: str) -> tuple[int, Any]:
    d = w["dir"]
    return acx(capsys, "verify", f"{w['layout']}:{tag}", "--key", str(d / "signer.pub"),
               "--issuers", str(d / "issuers.json"), "--cache-dir", str(d / "cache"), "--now", LATER,
               "--allow-demo-level", *extra)


def test_level_gate_pass_low_revoked(world: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    level = world["issued"]["level"]
    assert 15 <= level < 25  # senior

    code, res = _verify(capsys, world, "agent", "--require-level", "senior")
    assert code == 0, res
    assert res["ok"] and res["attestationsOk"] and res["level"]["ok"]
    assert res["level"]["level"] == level and res["level"]["required"] == 15
    assert res["level"]["credentials"][0]["status"]["state"] == "valid"
    assert res["level"]["credentials"][0]["status"]["source"] == world["status"]

    code, res = _verify(capsys, world, "agent", "--require-level", "legend")
    assert code == 1 and res["attestationsOk"] and not res["ok"]
    assert f"verified level {level} is below the required" in res["level"]["reason"]
    assert any(r.startswith("level: ") for r in res["reasons"])

    d = world["dir"]
    code, out = acx(capsys, "level", "revoke", str(d / "vc.json"), "--status-list", str(d / "sl.json"),
                    "--issuer-key", str(d / "issuer.pem"), "--publish", world["status"], "--now", NOW)
    assert code == 0, out
    code, res = _verify(capsys, world, "agent", "--require-level", "senior")
    assert code == 1 and res["attestationsOk"] and not res["ok"]
    assert res["level"]["credentials"][0]["state"] == "revoked"
    assert "revoked" in res["level"]["reason"]


def test_level_gate_no_credential_and_plain_verify(world: dict[str, Any],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, res = _verify(capsys, world, "bare", "--require-level", "1")
    assert code == 1 and res["attestationsOk"] and not res["ok"]
    assert res["level"]["reason"] == "no level credential attached"
    code, res = _verify(capsys, world, "bare")  # without --require-level: attestation verdict only
    assert code == 0 and "level" not in res


def test_require_level_needs_issuers(world: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    d = world["dir"]
    code, res = acx(capsys, "verify", f"{world['layout']}:agent", "--key", str(d / "signer.pub"),
                    "--require-level", "senior")
    assert code != 0 and "--issuers" in json.dumps(res)


def test_require_level_lists_the_referrers_once(world: dict[str, Any],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """On a registry, attestations and level credentials come from one referrer listing."""
    from tests.harness.memregistry import MemRegistry

    reg = MemRegistry().start()
    try:
        code, res = acx(capsys, "cp", "-r", "--to-plain-http", f"{world['layout']}:agent",
                        f"{reg.host}/acx/agent:agent")
        assert code == 0, res
        reg.reset_counts()
        d = world["dir"]
        code, res = acx(capsys, "verify", "--plain-http", f"{reg.host}/acx/agent:agent", "--key",
                        str(d / "signer.pub"), "--issuers", str(d / "issuers.json"), "--cache-dir",
                        str(d / "cache"), "--now", LATER, "--require-level", "senior", "--allow-demo-level")
        assert code == 0, res
        assert res["ok"] and res["attestationsOk"] and res["level"]["ok"]
        assert reg.referrer_lists == {res["subject"]: 1}
        assert not any(r.method == "HEAD" and r.path.endswith("/manifests/agent") for r in reg.seen)
    finally:
        reg.stop()


def test_a_demo_level_counts_only_when_allowed(world: dict[str, Any],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The level was measured by the demo solver: like a policy without level.allowDemo, the flags
    form sets it aside (exit 1, saying so); --allow-demo-level counts it."""
    d = world["dir"]
    code, res = acx(capsys, "verify", f"{world['layout']}:agent", "--key", str(d / "signer.pub"), "--issuers",
                    str(d / "issuers.json"), "--cache-dir", str(d / "cache"), "--now", LATER,
                    "--require-level", "senior")
    assert code == 1 and res["attestationsOk"] and not res["level"]["ok"], res
    assert "a demonstration" in res["level"]["reason"] and "--allow-demo-level" in res["level"]["reason"]
