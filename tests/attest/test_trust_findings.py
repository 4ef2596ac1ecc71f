"""Issue 15, one test per finding, each tried as a consumer would (the CLI) and each failing on the
code before the fix. Imports only what existed then, so the file runs against the old tree too."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.trust import format_rfc3339
from acxoci.attestation.attach import attest_artifact
from acxoci.oci.layout import LayoutStore
from tests.harness.cli import acx_json, run_acx
from tests.harness.installs import (
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    rom_digest,
    write_policy,
)
from tests.harness.workflows import pinned_workflow

NOW = datetime.now(UTC).replace(microsecond=0)
SIGNED = NOW - timedelta(days=1)
HOUR_AGO = format_rfc3339(NOW - timedelta(hours=1))


def _reg(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"schemaVersion": "acx.trust-registry/1", "keys": list(entries)}))
    return path


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> tuple[PrivateKey, Path, Path]:
    """A cartridge signed a day ago, pushed and attested (cartridge predicate) by its key; built once
    per module (every test only reads it: building, pushing and attesting cost ~1 s a test)."""
    tmp = tmp_path_factory.mktemp("trust-findings")
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp / "agent.acx", key, signed_at=SIGNED)
    layout = tmp / "layout"
    desc = push_cartridge(layout, acx, "v1")
    attest_artifact(LayoutStore(layout), desc, "agents/agent", key, now=SIGNED)
    return key, acx, layout


BAD_KEYS = {
    "revoked": {"status": "revoked"},
    "compromised": {"status": "revoked", "revocationReason": "key-compromise", "revokedAt": HOUR_AGO},
    "expired": {"status": "expired", "notAfter": HOUR_AGO},
}


@pytest.mark.parametrize("how", [*BAD_KEYS, "other-publisher", "unknown"])
def test_verify_fails_unless_the_registry_vouches(how: str, signed: tuple[PrivateKey, Path, Path],
                                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`acx verify --trust-registry` exited 0 for a revoked, expired or foreign-publisher key
    (trust=portable, a note) while an unknown key exited 1."""
    key, _, layout = signed
    if how == "unknown":
        entry = registry_entry(generate_ed25519(), PUBLISHER)
    elif how == "other-publisher":
        entry = registry_entry(key, "io.github.someone-else")
    else:
        entry = registry_entry(key, PUBLISHER, **BAD_KEYS[how])
    reg = _reg(tmp_path / "t.json", entry)
    code, out = acx_json(capsys, "verify", f"oci-layout:{layout}:v1", "--trust-registry", str(reg))
    assert code == 1 and out["ok"] is False, out
    good = _reg(tmp_path / "good.json", registry_entry(key, PUBLISHER))
    code, out = acx_json(capsys, "verify", f"oci-layout:{layout}:v1", "--trust-registry", str(good))
    assert code == 0, out


def test_cartridge_verify_rejects_a_revoked_key_without_require(signed: tuple[PrivateKey, Path, Path],
                                                               tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    key, acx, _ = signed
    reg = _reg(tmp_path / "t.json", registry_entry(key, PUBLISHER, status="revoked"))
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--trust-registry", str(reg))
    assert code == 1 and out["trust"] == "tampered", out
    assert out["issues"] == ["signer key is revoked"]


@pytest.mark.parametrize("reason", ["superseded", "retired"])
def test_backdated_signed_at_no_longer_makes_a_retired_key_trusted(
        reason: str, signed: tuple[PrivateKey, Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A retired key's holder can date a new signature before `revokedAt`: without an independent
    timestamp the signature is portable, never trusted (decision 0014)."""
    key, acx, _ = signed
    reg = _reg(tmp_path / "t.json", registry_entry(key, PUBLISHER, status="revoked", revocationReason=reason,
                                                   revokedAt=HOUR_AGO))
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--trust-registry", str(reg),
                         "--require", "trusted")
    assert code == 8 and out["trust"] == "portable", out
    assert out["issues"][0].startswith(f"signer key is {reason}; its signedAt")


def test_expired_key_says_why(signed: tuple[PrivateKey, Path, Path], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """An expired key said only "not eligible for trusted status"."""
    key, acx, _ = signed
    reg = _reg(tmp_path / "t.json", registry_entry(key, PUBLISHER, **BAD_KEYS["expired"]))
    code, out = acx_json(capsys, "cartridge", "verify", str(acx), "--trust-registry", str(reg),
                         "--require", "trusted")
    assert code == 8 and out["issues"][0].startswith("signer key is expired;"), out


def test_workflow_ready_with_a_registry_does_not_staff_an_attacker_key(
        signed: tuple[PrivateKey, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`workflow ready --trust-registry` staffed a cartridge whose key merely claimed a trusted
    publisher id; `--require trusted` did not exist."""
    _, acx, _ = signed
    roster = tmp_path / "roster"
    roster.mkdir()
    shutil.copyfile(acx, roster / "agent.acx")
    wf = tmp_path / "team.cal.json"
    wf.write_text(json.dumps(pinned_workflow(rom_digest(acx))))
    honest = _reg(tmp_path / "t.json", registry_entry(generate_ed25519(), PUBLISHER))
    code, out = acx_json(capsys, "workflow", "ready", str(wf), "--cartridges", str(roster),
                         "--trust-registry", str(honest))
    assert code == 1 and out["participants"][0]["staffed"] is False, out
    assert "signer key is not in the trust registry" in out["participants"][0]["reason"]
    r = run_acx(capsys, "workflow", "ready", str(wf), "--cartridges", str(roster), "--trust-registry",
                str(honest), "--require", "trusted")
    assert r.returncode == 1 and "No such option" not in r.stderr


def test_workflow_ready_require_trusted(signed: tuple[PrivateKey, Path, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    key, acx, _ = signed
    roster = tmp_path / "roster"
    roster.mkdir()
    shutil.copyfile(acx, roster / "agent.acx")
    wf = tmp_path / "team.cal.json"
    wf.write_text(json.dumps(pinned_workflow(rom_digest(acx))))
    retired = _reg(tmp_path / "t.json", registry_entry(key, PUBLISHER, status="revoked",
                                                       revocationReason="retired", revokedAt=HOUR_AGO))
    base = ["workflow", "ready", str(wf), "--cartridges", str(roster), "--trust-registry", str(retired)]
    assert acx_json(capsys, *base, "--require", "portable")[0] == 0  # portable when asked for
    for extra in ((), ("--require", "trusted")):  # a trust registry means trusted unless told otherwise
        code, out = acx_json(capsys, *base, *extra)
        assert code == 1 and "signer key is retired" in out["participants"][0]["reason"], out


def test_install_portable_refuses_a_key_claiming_a_trusted_publisher(
        signed: tuple[PrivateKey, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`minimumTrust: portable` installed an attacker-signed cartridge ("… is trusted (portable)")."""
    _, _, layout = signed
    reg = _reg(tmp_path / "t.json", registry_entry(generate_ed25519(), PUBLISHER))
    pol = write_policy(tmp_path / "p.yaml", {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]}],
                                             "minimumTrust": "portable"})
    code, out = acx_json(capsys, "install", f"oci-layout:{layout}:v1", "--policy", str(pol), "--store",
                         str(tmp_path / "store"))
    assert code == 8 and out["status"] == "refused", out
    trust = next(c for c in out["checks"] if c["id"] == "trust")
    assert trust["status"] == "fail" and trust["kind"] == "untrusted_publisher", trust


def test_one_reason_for_an_unknown_signer_in_every_install_check(
        signed: tuple[PrivateKey, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a wrong registry, check 4 said "signer not in trust registry" and check 5 "DSSE
    signature does not verify": the same fact must read the same."""
    _, _, layout = signed
    reg = _reg(tmp_path / "t.json", registry_entry(generate_ed25519(), PUBLISHER))
    pol = write_policy(tmp_path / "p.yaml", {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]}],
                                             "attestations": {"formats": ["bundle"]}})
    code, out = acx_json(capsys, "install", f"oci-layout:{layout}:v1", "--policy", str(pol), "--store",
                         str(tmp_path / "store"))
    assert code == 8, out
    checks = {c["id"]: c for c in out["checks"]}
    fact = "signer key is not in the trust registry"
    assert checks["trust"]["reason"].startswith(fact), checks["trust"]
    assert fact in checks["attestations"]["reason"], checks["attestations"]
    assert "does not verify" not in checks["attestations"]["reason"]


def test_level_attestations_are_not_reported_as_unverified(tmp_path: Path, vectors_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Every `acx verify` of a levelled artifact printed "unverified … level/v1 … does not verify
    with the given key" even when all was well."""
    from acxoci.attestation.attach import write_attestation
    from acxoci.attestation.statements import oci_statement

    key, issuer_key = generate_ed25519(), generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "agent.acx", key, signed_at=SIGNED)
    layout = tmp_path / "layout"
    desc = push_cartridge(layout, acx, "v1")
    target = LayoutStore(layout)
    attest_artifact(target, desc, "agents/agent", key, now=SIGNED)
    level_type = "https://acx.dev/attestation/level/v1"
    level = oci_statement(desc.digest, "agents/agent", level_type, {"acxLevel": 20})
    write_attestation(target, desc.plain(), level, issuer_key, formats="both", now=SIGNED)
    pub = tmp_path / "k.pub"
    pub.write_text(key.public().spki_pem())
    code, out = acx_json(capsys, "verify", f"oci-layout:{layout}:v1", "--key", str(pub))
    assert code == 0, out
    levels = [a for a in out["attestations"] if a.get("predicateType") == "https://acx.dev/attestation/level/v1"]
    assert levels and all(a["verdict"] == "skipped" for a in levels), levels
    assert all("not checked: needs --issuers" in " ".join(a["reasons"]) for a in levels), levels


def test_workflow_attestation_carries_signed_at(tmp_path: Path, vectors_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Workflow attestations written by acx carried no signedAt, so they could never be trusted."""
    src = vectors_dir / "workflow" / "team.signed.cal.json"
    doc = json.loads(src.read_text())
    layout = tmp_path / "layout"
    key = generate_ed25519()
    keyfile = tmp_path / "k.pem"
    keyfile.write_bytes(key.pkcs8_pem())
    code, out = acx_json(capsys, "push", str(src), f"oci-layout:{layout}:v1", "--sign", "--key", str(keyfile))
    assert code == 0, out
    from acxoci.attestation.verify import find_attestations
    from acxoci.oci.target import fetch_bytes

    target = LayoutStore(layout)
    found, _ = find_attestations(target, target.resolve("v1"))
    bundles = [f for f in found if f.format == "bundle"]
    assert bundles
    data = json.loads(fetch_bytes(target, bundles[0].layer))
    import base64

    stmt = json.loads(base64.b64decode(data["dsseEnvelope"]["payload"]))
    assert stmt["predicate"]["signedAt"] == doc["integrity"]["signedAt"]


def test_cartridge_build_signs_at_build_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`key trust` starts the key's window now while `cartridge build` dated the signature at the
    package's exportedAt, so the guide's steps gave "signed before key validity window"."""
    from tests.harness.env import REPO

    key = tmp_path / "publisher.pem"
    assert run_acx(capsys, "key", "generate", "-o", str(key)).returncode == 0
    reg = tmp_path / "trust.json"
    r = run_acx(capsys, "key", "trust", str(tmp_path / "publisher.pub.pem"), "--publisher",
                "dev.example.team", "-r", str(reg))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "agent.acx"
    r = run_acx(capsys, "cartridge", "build", str(REPO / "examples" / "agent-package"), "-o", str(out),
                "--publisher", "dev.example.team", "--key", str(key))
    assert r.returncode == 0, r.stdout + r.stderr
    code, data = acx_json(capsys, "cartridge", "verify", str(out), "--trust-registry", str(reg),
                          "--require", "trusted")
    assert code == 0 and data["trust"] == "trusted", data
    # a signature dated before the key's window says which date to register the key from
    early = tmp_path / "early.acx"
    r = run_acx(capsys, "cartridge", "build", str(REPO / "examples" / "agent-package"), "-o", str(early),
                "--publisher", "dev.example.team", "--key", str(key), "--created-at", "2026-01-02T00:00:00Z")
    assert r.returncode == 0
    code, data = acx_json(capsys, "cartridge", "verify", str(early), "--trust-registry", str(reg),
                          "--require", "trusted")
    assert code == 8 and "acx key trust --not-before 2026-01-02T00:00:00Z" in data["issues"][0], data


# ---- identifiers: whole-string patterns, integers that are integers ----------------------------


def test_install_name_with_a_trailing_newline_is_refused(
        signed: tuple[PrivateKey, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key, _, layout = signed
    reg = _reg(tmp_path / "t.json", registry_entry(key, PUBLISHER))
    pol = write_policy(tmp_path / "p.yaml",
                       {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]}]})
    store = tmp_path / "store"
    code, out = acx_json(capsys, "install", f"oci-layout:{layout}:v1", "--policy", str(pol), "--store",
                         str(store), "--name", "evil\n")
    assert code == 2, out
    assert not store.exists() or not any("\n" in p.name for p in store.rglob("*"))


@pytest.mark.parametrize("field", ["rotatedTo", "publisherId"])
def test_registry_identifiers_with_a_trailing_newline_are_refused(field: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  vectors_dir: Path) -> None:
    """`$` let "com.example.team\n" pass as a publisher id (with the matching dns-txt record) and
    "ed25519:<hex>\n" as a keyid."""
    from acxoci.attest.trust import expected_txt_record

    pub = "com.example.team"
    entry = registry_entry(generate_ed25519(), pub)
    if field == "publisherId":
        entry["publisherId"] = pub + "\n"
        entry["namespaceProof"]["txtRecord"] = expected_txt_record(pub + "\n")
    else:
        entry["rotatedTo"] = "ed25519:" + "b" * 64 + "\n"
    reg = _reg(tmp_path / "t.json", entry)
    code, out = acx_json(capsys, "cartridge", "verify", str(vectors_dir / "sample" / "sample.acx"),
                         "--trust-registry", str(reg))
    assert code == 3, out


def test_digest_with_a_trailing_newline_is_not_a_digest() -> None:
    from acxoci.oci.descriptor import is_digest

    assert is_digest("sha256:" + "a" * 64) and not is_digest("sha256:" + "a" * 64 + "\n")


def test_policy_publisher_id_with_a_trailing_newline_is_invalid(tmp_path: Path) -> None:
    from acxoci.errors import InvalidInput
    from acxoci.install.vpolicy import load_policy

    pol = write_policy(tmp_path / "p.yaml", {"publishers": [{"id": PUBLISHER + "\n"}]})
    with pytest.raises(InvalidInput, match="publisher id"):
        load_policy(pol, now=NOW)
