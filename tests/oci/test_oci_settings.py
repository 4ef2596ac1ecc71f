"""Transport setup resolution (pure apart from reading the registries file): flags beat the
registries file, which beats ACX_CA_FILE, which beats SSL_CERT_FILE; the loopback rule; a
malformed registries file is a usage error naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acxoci.errors import UsageError
from acxoci.oci.auth import config_path
from acxoci.oci.settings import RemoteOptions, active_options, resolve, using


@pytest.fixture
def cas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    out = {}
    for name in ("flag", "file", "acx", "ssl"):
        p = tmp_path / f"{name}.pem"
        p.write_text("x")
        out[name] = p
    monkeypatch.delenv("ACX_CA_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("ACX_REGISTRIES_FILE", raising=False)
    return out


def test_ca_precedence(cas: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    regs = tmp_path / "regs.json"
    regs.write_text(json.dumps({"registries": {"r.example:5000": {"caFile": "file.pem"}}}))
    monkeypatch.setenv("SSL_CERT_FILE", str(cas["ssl"]))
    assert resolve("r.example:5000", RemoteOptions()).verify == str(cas["ssl"])
    monkeypatch.setenv("ACX_CA_FILE", str(cas["acx"]))
    assert resolve("r.example:5000", RemoteOptions()).verify == str(cas["acx"])
    monkeypatch.setenv("ACX_REGISTRIES_FILE", str(regs))
    assert resolve("r.example:5000", RemoteOptions()).verify == str(cas["file"])  # relative to the file
    assert resolve("other:5000", RemoteOptions()).verify == str(cas["acx"])
    assert resolve("r.example:5000", RemoteOptions(ca_file=str(cas["flag"]))).verify == str(cas["flag"])
    assert resolve("r.example:5000", RemoteOptions(insecure_skip_verify=True)).verify is False


def test_scheme_rule(cas: dict[str, Path], tmp_path: Path) -> None:
    assert resolve("localhost:5000", RemoteOptions()).scheme == "auto"
    assert resolve("127.0.0.1:5000", RemoteOptions()).scheme == "auto"
    assert resolve("[::1]:5000", RemoteOptions()).scheme == "auto"
    assert resolve("registry.example", RemoteOptions()).scheme == "https"
    assert resolve("127.0.0.1:5000", RemoteOptions(plain_http=False)).scheme == "https"
    s = resolve("registry.example", RemoteOptions(plain_http=True))
    assert s.scheme == "http" and s.plain_chosen
    regs = tmp_path / "regs.json"
    regs.write_text(json.dumps({"registries": {"lab:80": {"plainHttp": True}}}))
    s = resolve("lab:80", RemoteOptions(registries_file=str(regs)))
    assert s.scheme == "http" and s.plain_chosen
    assert resolve("lab:80", RemoteOptions(registries_file=str(regs), plain_http=False)).scheme == "https"


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"registries": []},
        {"registries": {"h": {"plainHttp": "yes"}}},
        {"registries": {"h": {"caFile": 3}}},
        {"registries": {"h": {"password": "x"}}},
        {"registries": {}, "extra": 1},
    ],
)
def test_bad_registries_file(doc: object, tmp_path: Path, cas: dict[str, Path]) -> None:
    regs = tmp_path / "regs.json"
    regs.write_text(json.dumps(doc))
    with pytest.raises(UsageError):
        resolve("h", RemoteOptions(registries_file=str(regs)))


def test_missing_ca_file_is_usage(cas: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a regular file"):
        resolve("h", RemoteOptions(ca_file=str(tmp_path / "nope.pem")))


def test_registry_config_file_or_dir(tmp_path: Path) -> None:
    f = tmp_path / "auth.json"
    f.write_text("{}")
    assert config_path(str(f)) == f
    assert config_path(str(tmp_path)) == tmp_path / "config.json"


def test_active_options_scope() -> None:
    assert active_options() == RemoteOptions()
    with using(RemoteOptions(plain_http=True)):
        assert active_options().plain_http is True
    assert active_options() == RemoteOptions()
