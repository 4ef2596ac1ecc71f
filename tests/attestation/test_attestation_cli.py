"""The attest CLI in-process on an OCI layout: attest / verify with --key and --trust-registry,
password handling, usage errors, and the blob commands' exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acxoci.attest.cosignkey import encrypt_cosign_key
from acxoci.attest.keys import generate_ed25519, generate_p256
from acxoci.cli import main as cli_main
from acxoci.cli.output import OPTS
from acxoci.oci.layout import LayoutStore
from tests.harness.attestations import push_cartridge


@pytest.fixture(autouse=True)
def reset_opts() -> None:
    OPTS.json = OPTS.verbose = OPTS.quiet = False


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    with pytest.raises(SystemExit) as ex:
        cli_main.main(args)
    out, err = capsys.readouterr()
    return int(ex.value.code or 0), out, err


@pytest.fixture
def layout(tmp_path: Path, vectors_dir: Path) -> str:
    store = LayoutStore(tmp_path / "store")
    push_cartridge(store, vectors_dir / "sample" / "sample.acx")
    return f"oci-layout:{tmp_path / 'store'}:v1"


def _trust_registry(path: Path, pub_pem: str, keyid: str, status: str = "active") -> Path:
    entry: dict[str, object] = {
        "keyid": keyid, "publisherId": "io.github.example-acx", "algorithm": "ed25519",
        "publicKeyPem": pub_pem, "status": status, "notBefore": "2026-01-01T00:00:00Z",
        "notAfter": "2030-01-01T00:00:00Z",
        "namespaceProof": {"method": "github-oidc",
                           "oidcSubject": "repo:example-acx/agents:ref:refs/heads/main",
                           "oidcIssuer": "https://token.actions.githubusercontent.com",
                           "verifiedAt": "2026-01-02T00:00:00Z"}}
    if status == "revoked":
        entry.update(revokedAt="2026-02-01T00:00:00Z", revocationReason="key-compromise")
    path.write_text(json.dumps({"schemaVersion": "acx.trust-registry/1", "keys": [entry]}))
    return path


def test_attest_and_verify_with_trust_registry(layout: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    key = generate_ed25519()
    keyfile = tmp_path / "cosign.key"
    keyfile.write_bytes(encrypt_cosign_key(key, b"pw", n=1024))
    monkeypatch.setenv("MY_PW", "pw")
    code, out, err = run(["--json", "attest", layout, "--key", str(keyfile), "--password-env", "MY_PW"],
                         capsys)
    assert code == 0, err
    assert json.loads(out)["keyId"] == key.public().keyid()
    reg = _trust_registry(tmp_path / "trust.json", key.public().spki_pem(), key.public().keyid())
    when = ["--now", "2026-11-30T00:00:00Z"]
    code, out, _ = run(["--json", "verify", layout, "--trust-registry", str(reg), *when], capsys)
    rep = json.loads(out)
    assert code == 0 and rep["ok"], rep
    assert {a.get("trust") for a in rep["attestations"] if a["verdict"] == "verified"} == {"trusted"}
    bad = _trust_registry(tmp_path / "bad.json", key.public().spki_pem(), key.public().keyid(),
                          status="revoked")
    code, out, _ = run(["verify", layout, "--trust-registry", str(bad), *when], capsys)
    assert code == 1 and "FAILED" in out and "key-compromise" in out


def test_password_problems(layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    keyfile = tmp_path / "cosign.key"
    keyfile.write_bytes(encrypt_cosign_key(generate_p256(), b"pw", n=1024))
    monkeypatch.setenv("COSIGN_PASSWORD", "nope")
    code, _, err = run(["attest", layout, "--key", str(keyfile)], capsys)
    assert code == 5 and "wrong password" in err
    code, _, err = run(["attest", layout, "--key", str(keyfile), "--password-env", "UNSET_VAR_X"], capsys)
    assert code == 2 and "UNSET_VAR_X" in err


def test_usage_errors(layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = tmp_path / "k.pub"
    pub.write_text(generate_ed25519().public().spki_pem())
    assert run(["verify", layout], capsys)[0] == 2
    assert run(["verify", layout, "--key", str(pub), "--trust-registry", str(pub)], capsys)[0] == 2
    priv = tmp_path / "k.pem"
    priv.write_bytes(generate_ed25519().pkcs8_pem())
    assert run(["attest", layout, "--key", str(priv), "--format", "xml"], capsys)[0] == 2
    assert run(["attest", layout, "--key", str(priv), "--predicate-type", "https://x"], capsys)[0] == 2
    code, _, err = run(["verify", layout, "--key", str(tmp_path / "missing.pub")], capsys)
    assert code == 4 and "missing.pub" in err


def test_custom_predicate(layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = generate_p256()
    priv, pub, pred = tmp_path / "k.pem", tmp_path / "k.pub", tmp_path / "p.json"
    priv.write_bytes(key.pkcs8_pem())
    pub.write_text(key.public().spki_pem())
    pred.write_text(json.dumps({"scanner": "x", "ok": True}))
    code, out, err = run(["--json", "attest", layout, "--key", str(priv), "--predicate-type", "https://ex.com/scan/v1",
                          "--predicate", str(pred), "--format", "bundle"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["legacy"] is None and res["bundleReferrer"] and res["envelopeReferrer"] is None
    code, out, _ = run(["--json", "verify", layout, "--key", str(pub), "--type", "https://ex.com/scan/v1"],
                       capsys)
    assert code == 0 and [a["format"] for a in json.loads(out)["attestations"]] == ["bundle"]


def test_blob_cli(tmp_path: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = generate_ed25519()
    priv, pub = tmp_path / "k.pem", tmp_path / "k.pub"
    priv.write_bytes(key.pkcs8_pem())
    pub.write_text(key.public().spki_pem())
    cart = vectors_dir / "sample" / "sample.acx"
    # a cartridge gets the cartridge predicate by default
    bundle = str(tmp_path / "b")
    code, out, err = run(["--json", "attest-blob", str(cart), "--key", str(priv), "--bundle", bundle], capsys)
    assert code == 0, err
    assert json.loads(out)["predicateType"] == "https://acx.dev/attestation/cartridge/v1"
    code, out, _ = run(["verify-blob", str(cart), "--key", str(pub), "--bundle", str(tmp_path / "b")], capsys)
    assert code == 0 and out.startswith("VERIFIED")
    other = tmp_path / "other"
    other.write_bytes(b"x")
    code, out, _ = run(["verify-blob", str(other), "--key", str(pub), "--bundle", bundle], capsys)
    assert code == 1 and "does not match the attested digest" in out
    assert run(["attest-blob", str(other), "--key", str(priv), "--bundle", bundle + "2"], capsys)[0] == 2
