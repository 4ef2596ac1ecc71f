"""Inputs the fuzz campaign found that crashed the tool (exit 70), kept as regression tests: each
now ends in a typed error through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import env
from tests.harness.cli import acx_json, run_acx


def test_workflow_with_an_integer_outside_the_jcs_domain_is_invalid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((env.vectors() / "workflow" / "team.signed.cal.json").read_text())
    doc["limits"] = {"maxSteps": 2**64}
    p = tmp_path / "big.cal.json"
    p.write_text(json.dumps(doc))
    code, out = acx_json(capsys, "workflow", "verify", str(p))
    assert code == 3 and out["error"]["kind"] == "invalid_input", out


@pytest.mark.parametrize("method", [["dns-txt"], {"m": 1}])
def test_trust_registry_with_an_unhashable_proof_method_is_invalid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], method: object
) -> None:
    reg = json.loads((env.vectors() / "sample" / "trust-active.json").read_text())
    reg["keys"][0]["namespaceProof"]["method"] = method
    p = tmp_path / "trust.json"
    p.write_text(json.dumps(reg))
    cart = env.vectors() / "sample" / "sample.acx"
    code, out = acx_json(capsys, "cartridge", "verify", str(cart), "--trust-registry", str(p))
    assert code == 3 and out["error"]["kind"] == "invalid_input", out


@pytest.mark.parametrize(
    "config",
    [
        {"auths": {"127.0.0.1:5000": {"auth": "\u00e9YWN4OmFjeA=="}}},  # non-ASCII base64
        {"credsStore": "x\u0000y"},  # NUL in a helper name
        {"credsStore": "../not-a-dir/x"},  # a path, not a helper name
    ],
)
def test_hostile_docker_config_is_an_auth_error_not_a_crash(config: dict[str, object],
                                                           tmp_path: Path) -> None:
    from acxoci.errors import AcxError
    from acxoci.oci.auth import load_credential

    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(AcxError) as info:
        load_credential("127.0.0.1:5000", str(tmp_path))
    assert info.value.exit_code in (3, 5), info.value


def test_run_acx_reports_internal_errors_as_70(capsys: pytest.CaptureFixture[str]) -> None:
    """Guard for the tests above: the CLI harness really sees exit codes (a usage error is 2)."""
    assert run_acx(capsys, "cartridge", "verify").returncode == 2


def test_workflow_with_a_non_ascii_public_key_is_tampered_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((env.vectors() / "workflow" / "team.signed.cal.json").read_text())
    doc["integrity"]["publicKeyPem"] = "\u2add" + doc["integrity"]["publicKeyPem"]
    p = tmp_path / "w.cal.json"
    p.write_text(json.dumps(doc))
    code, out = acx_json(capsys, "workflow", "verify", str(p))
    assert code == 1 and out["trust"] == "tampered" and "invalid public key" in " ".join(out["issues"]), out


def test_workflow_with_a_public_key_of_an_unknown_algorithm_is_tampered_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found on 1 December 2026 (seed 140424): one byte of the embedded key's algorithm OID
    changed (1.3.101.112 to 0.39.101.112) made the crypto library raise UnsupportedAlgorithm."""
    import base64

    doc = json.loads((env.vectors() / "workflow" / "team.signed.cal.json").read_text())
    pem = doc["integrity"]["publicKeyPem"]
    body = "".join(line for line in pem.splitlines() if "-----" not in line)
    der = base64.b64decode(body)
    assert der.count(b"\x06\x03\x2b\x65\x70") == 1
    bad = base64.b64encode(der.replace(b"\x06\x03\x2b\x65\x70", b"\x06\x03\x27\x65\x70")).decode()
    doc["integrity"]["publicKeyPem"] = f"-----BEGIN PUBLIC KEY-----\n{bad}\n-----END PUBLIC KEY-----\n"
    p = tmp_path / "w.cal.json"
    p.write_text(json.dumps(doc))
    code, out = acx_json(capsys, "workflow", "verify", str(p))
    assert code == 1 and out["trust"] == "tampered" and "invalid public key" in " ".join(out["issues"]), out


def test_dsse_payload_type_with_a_lone_surrogate_is_malformed() -> None:
    from acxoci.attest.canonical import loads_strict
    from acxoci.attest.dsse import Envelope
    from acxoci.attest.errors import MalformedError

    with pytest.raises(MalformedError, match="surrogate"):  # the one JSON entry point refuses it
        loads_strict(b'{"payloadType": "\\ud800x", "payload": "e30=", "signatures": [{"sig": "AA=="}]}')
    doc = {"payloadType": "\ud800x", "payload": "e30=", "signatures": [{"sig": "AA=="}]}
    with pytest.raises(MalformedError, match="payloadType"):  # and so does the model, given one
        Envelope.from_json(doc)
    ok = Envelope.from_json({"payloadType": "application/vnd.in-toto+json; é", "payload": "e30=",
                             "signatures": [{"sig": "AA=="}]})
    assert ok.pae().startswith(b"DSSEv1 ")


def test_objects_sz_outside_the_json_integer_domain_is_a_typed_refusal(tmp_path: Path) -> None:
    """`verify_cartridge` (the library call, not only the CLI) refuses an objects.sz the ROM
    manifest cannot hold as JSON: a typed refusal, never a MalformedError escaping."""
    import shutil
    import sqlite3
    from contextlib import closing

    from acxoci.cartridge.verify import verify_cartridge
    from tests.harness.cartridges import NOW

    p = tmp_path / "big-sz.acx"
    shutil.copyfile(env.vectors() / "sample" / "sample.acx", p)
    with closing(sqlite3.connect(str(p))) as c:
        c.execute("UPDATE objects SET sz = 4611686018427387904 WHERE oid = (SELECT min(oid) FROM objects)")
        c.commit()
    verdict = verify_cartridge(p, registry=None, now=NOW)
    assert verdict.rejected and verdict.trust == "tampered", verdict
    assert any("sz" in i for i in verdict.issues), verdict.issues
