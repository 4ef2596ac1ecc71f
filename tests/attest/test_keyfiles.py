"""acxoci.keyfiles and fsutil.read_bytes: the one way every signing command reads a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from acxoci.attest.cosignkey import encrypt_cosign_key
from acxoci.attest.keys import generate_ed25519, generate_p256
from acxoci.errors import AuthError, InvalidInput, NotFound, UsageError
from acxoci.fsutil import read_bytes
from acxoci.keyfiles import load_key, password_from_env, readable_by_others


def test_password_sources_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ACX_KEY_PASSWORD", "COSIGN_PASSWORD", "MINE"):
        monkeypatch.delenv(name, raising=False)
    assert password_from_env(None) is None
    monkeypatch.setenv("COSIGN_PASSWORD", "c")
    assert password_from_env(None) == b"c"
    monkeypatch.setenv("ACX_KEY_PASSWORD", "a")
    assert password_from_env(None) == b"a"
    with pytest.raises(UsageError, match="MINE"):
        password_from_env("MINE")
    monkeypatch.setenv("MINE", "m")
    assert password_from_env("MINE") == b"m"


def test_loads_pem_encrypted_pem_and_cosign_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACX_KEY_PASSWORD", raising=False)
    monkeypatch.delenv("COSIGN_PASSWORD", raising=False)
    ed, p256 = generate_ed25519(), generate_p256()
    plain = tmp_path / "plain.pem"
    plain.write_bytes(ed.pkcs8_pem())
    assert load_key(plain).public().keyid() == ed.public().keyid()
    enc = tmp_path / "enc.pem"
    enc.write_bytes(ed.pkcs8_pem(b"secret"))
    with pytest.raises(AuthError):
        load_key(enc)
    monkeypatch.setenv("PW", "secret")
    assert load_key(enc, "PW").public().keyid() == ed.public().keyid()
    cosign = tmp_path / "cosign.key"
    cosign.write_bytes(encrypt_cosign_key(p256, b"secret", n=1024))
    assert load_key(cosign, "PW").public().fingerprint_hex() == p256.public().fingerprint_hex()
    monkeypatch.setenv("PW", "wrong")
    with pytest.raises(AuthError):
        load_key(cosign, "PW")


def test_typed_read_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as nf:
        load_key(tmp_path / "missing.pem")
    assert nf.value.where == str(tmp_path / "missing.pem")
    junk = tmp_path / "junk.pem"
    junk.write_bytes(b"not a key")
    with pytest.raises(InvalidInput):
        load_key(junk)
    with pytest.raises(InvalidInput, match="exceeds 4 bytes"):
        read_bytes(junk, "thing", limit=4)
    assert read_bytes(junk, "thing", limit=9) == b"not a key"


def test_permission_warning_predicate(tmp_path: Path) -> None:
    k = tmp_path / "k.pem"
    k.write_bytes(b"x")
    k.chmod(0o600)
    assert not readable_by_others(k)
    k.chmod(0o644)
    assert readable_by_others(k)
