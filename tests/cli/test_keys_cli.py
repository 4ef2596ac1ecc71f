"""`acx key generate`: PKCS#8 PEM at 0600, public PEM beside it, keyid printed, passphrase from
an env var; and the build/sign CLI using that key."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from acxoci.attest.keys import load_private_pem, load_public_pem
from acxoci.errors import AuthError
from tests.harness.cli import run_acx
from tests.harness.env import REPO


@pytest.mark.parametrize("ktype", ["ed25519", "p256"])
def test_generate_writes_0600_key_and_public_pem(
    tmp_path: Path, ktype: str, capsys: pytest.CaptureFixture[str]
) -> None:
    acx = lambda *a: run_acx(capsys, *a)  # noqa: E731
    key = tmp_path / "signer.key.pem"
    res = acx("--json", "key", "generate", "-o", str(key), "--type", ktype)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    pub = tmp_path / "signer.pub.pem"
    assert data["publicKey"] == str(pub)
    priv = load_private_pem(key.read_bytes())
    assert b"BEGIN PRIVATE KEY" in key.read_bytes()
    assert load_public_pem(pub.read_bytes()).keyid() == priv.public().keyid() == data["keyId"]
    assert data["keyId"].startswith("ed25519:" if ktype == "ed25519" else "ecdsa-")


def test_generate_refuses_overwrite_and_encrypts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    acx = lambda *a: run_acx(capsys, *a)  # noqa: E731
    monkeypatch.setenv("ACX_TEST_PW", "s3cret")
    monkeypatch.delenv("ACX_UNSET_VAR_X", raising=False)
    key = tmp_path / "k.pem"
    assert acx("key", "generate", "-o", str(key), "--password-env", "ACX_TEST_PW").returncode == 0
    assert b"ENCRYPTED PRIVATE KEY" in key.read_bytes()
    load_private_pem(key.read_bytes(), b"s3cret")
    again = acx("key", "generate", "-o", str(key))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert (
        acx("key", "generate", "-o", str(tmp_path / "x.pem"), "--password-env", "ACX_UNSET_VAR_X").returncode
        == 2
    )


def test_build_and_resign_via_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    acx = lambda *a: run_acx(capsys, *a)  # noqa: E731
    monkeypatch.setenv("PW", "pw")
    key = tmp_path / "k.key.pem"
    assert acx("key", "generate", "-o", str(key), "--password-env", "PW").returncode == 0
    out = tmp_path / "a.acx"
    args = [
        "--json",
        "cartridge",
        "build",
        str(REPO / "examples" / "agent-package"),
        "-o",
        str(out),
        "--publisher",
        "io.github.example-acx",
        "--key",
        str(key),
        "--password-env",
        "PW",
        "--created-at",
        "2026-05-04T09:00:00.000Z",
    ]
    res = acx(*args)
    assert res.returncode == 0, res.stderr
    built = json.loads(res.stdout)
    assert built["fieldLearned"] == "quarantined (default)" and built["quarantined"] == ["rev-0003"]
    assert key.read_bytes().splitlines()[1] not in out.read_bytes()
    first = out.read_bytes()
    assert acx(*args[:5], str(tmp_path / "b.acx"), *args[6:]).returncode == 0
    assert (tmp_path / "b.acx").read_bytes() == first
    monkeypatch.setenv("PW", "nope")
    wrong = acx(*args)
    # a wrong passphrase is an authentication failure for every signing command (cosign.key too)
    assert wrong.returncode == AuthError.exit_code
    monkeypatch.setenv("PW", "pw")
    signed = acx(
        "--json",
        "cartridge",
        "sign",
        str(out),
        "--key",
        str(key),
        "--password-env",
        "PW",
        "--signed-at",
        "2026-06-01T00:00:00Z",
    )
    assert signed.returncode == 0, signed.stderr
    assert json.loads(signed.stdout)["romDigest"] == built["romDigest"]
    assert out.read_bytes() != first  # new signedAt, same ROM
    verify = acx("--json", "cartridge", "verify", str(out))
    assert verify.returncode == 0 and json.loads(verify.stdout)["trust"] == "portable"
