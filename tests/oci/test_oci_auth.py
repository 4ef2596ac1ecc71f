"""Auth pieces without a registry: WWW-Authenticate parsing, docker config (auths, credHelpers,
credsStore via a docker-credential-* program, DOCKER_CONFIG), login/logout file shape."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from acxoci.oci.auth import (
    Credential,
    load_credential,
    parse_challenge,
    remove_credential,
    store_credential,
)
from acxoci.oci.errors import RegistryAuthError, RegistryProtocolError


def test_parse_bearer_and_basic() -> None:
    c = parse_challenge(
        'Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull,push"'
    )
    assert c.scheme == "bearer"
    assert c.params == {
        "realm": "https://auth.example/token",
        "service": "reg",
        "scope": "repository:a/b:pull,push",
    }
    assert parse_challenge('Basic realm="x y"').params == {"realm": "x y"}


@pytest.mark.parametrize(
    "header",
    [
        'Bearer realm="not-a-url"',
        "Negotiate abc",
        'Bearer realm="https://x",,="',
        "Bearer realm=",
        "",
        'Bearer realm="https://x" service="unterminated',
    ],
)
def test_malformed_challenges(header: str) -> None:
    with pytest.raises(RegistryProtocolError):
        parse_challenge(header)


def test_config_auths_roundtrip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "cfg"))
    path = store_credential("reg.example:5000", Credential("u", "p:w"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entry = json.loads(path.read_text())["auths"]["reg.example:5000"]
    assert base64.b64decode(entry["auth"]).decode() == "u:p:w"
    assert load_credential("reg.example:5000") == Credential("u", "p:w")
    assert load_credential("other:1").empty
    assert remove_credential("reg.example:5000")
    assert load_credential("reg.example:5000").empty
    assert not remove_credential("reg.example:5000")


def test_identity_token_and_bad_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"auths": {"https://r.example": {"identitytoken": "tok"}}}))
    assert load_credential("r.example", str(tmp_path)) == Credential(identity_token="tok")
    cfg.write_text("{not json")
    with pytest.raises(RegistryAuthError):
        load_credential("r.example", str(tmp_path))


HELPER = """
import json, pathlib, sys
store = pathlib.Path(STORE)
action, data = sys.argv[1], sys.stdin.read()
if action == "get":
    f = store / data.strip()
    if not f.exists():
        print("credentials not found in native keychain")
        sys.exit(1)
    print(f.read_text())
elif action == "store":
    d = json.loads(data)
    (store / d["ServerURL"]).write_text(json.dumps({"Username": d["Username"], "Secret": d["Secret"]}))
elif action == "erase":
    (store / data.strip()).unlink(missing_ok=True)
"""


def _helper(bindir: Path, store: Path) -> None:
    script = bindir / "docker-credential-acxtest"
    script.write_text(f"#!{sys.executable}\nSTORE = {str(store)!r}\n{HELPER}")
    script.chmod(0o755)


def test_creds_store_and_cred_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir, store = tmp_path / "bin", tmp_path / "store"
    bindir.mkdir()
    store.mkdir()
    _helper(bindir, store)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    cfgdir = tmp_path / "cfg"
    cfgdir.mkdir()
    (cfgdir / "config.json").write_text(json.dumps({"credsStore": "acxtest"}))
    store_credential("r.example", Credential("alice", "s3cret"), str(cfgdir))
    assert "auths" not in json.loads((cfgdir / "config.json").read_text())  # secret went to the helper
    assert load_credential("r.example", str(cfgdir)) == Credential("alice", "s3cret")
    assert load_credential("unknown.example", str(cfgdir)).empty
    (cfgdir / "config.json").write_text(
        json.dumps({"credHelpers": {"h.example": "acxtest"}, "auths": {"h.example": {"auth": "eDp5"}}})
    )
    (store / "h.example").write_text(json.dumps({"Username": "<token>", "Secret": "refresh"}))
    assert load_credential("h.example", str(cfgdir)) == Credential(identity_token="refresh")
    remove_credential("h.example", str(cfgdir))
    assert not (store / "h.example").exists()
    (cfgdir / "config.json").write_text(json.dumps({"credsStore": "missing-helper"}))
    with pytest.raises(RegistryAuthError):
        load_credential("r.example", str(cfgdir))
