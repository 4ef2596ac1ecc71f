"""Every command family reaches a TLS registry (distribution 2.8, throwaway CA) on loopback,
by `127.0.0.1` and by `localhost`, with the CA given three ways: `--ca-file`, `SSL_CERT_FILE`,
and a registries file. Loopback tries HTTPS first (docs/decisions/0011), so no flag is needed
to pick the scheme; without the CA the failure is a `tls_failure` naming `--ca-file`.
Also: HTTP spoken to the TLS port and TLS spoken to an HTTP port are one-line `wrong_scheme`
errors, and connection refused names the host."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cli import acx_json, run_acx
from tests.harness.servers import Registry, free_port

pytestmark = pytest.mark.interop


def _ok(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, data = acx_json(capsys, *args)
    assert code == 0, f"acx {' '.join(args)} -> {code}: {data}"
    return data


@pytest.mark.parametrize("how", ["flag", "env", "registries"])
@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_command_families_over_tls_on_loopback(
    distribution_registry_tls: Registry,
    tmp_path: Path,
    vectors_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    how: str,
) -> None:
    reg = distribution_registry_tls
    assert reg.ca_path is not None
    host = f"{name}:{reg.host.split(':')[1]}"
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("ACX_CA_FILE", raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    tls: list[str] = []
    if how == "flag":
        tls = ["--ca-file", str(reg.ca_path)]
    elif how == "env":
        monkeypatch.setenv("SSL_CERT_FILE", str(reg.ca_path))
    else:
        shutil.copy(reg.ca_path, tmp_path / "ca.pem")
        regs = tmp_path / "registries.json"
        regs.write_text(json.dumps({"registries": {host: {"caFile": "ca.pem"}}}))
        tls = ["--registries", str(regs)]
    cart = tmp_path / "cart.acx"
    shutil.copy(vectors_dir / "sample" / "sample.acx", cart)
    key = tmp_path / "k.pem"
    assert run_acx(capsys, "-q", "key", "generate", "-o", str(key)).returncode == 0
    ref = f"{host}/acx/tls:v1"

    pushed = _ok(capsys, "push", str(cart), ref, *tls)  # push
    out = tmp_path / "pulled"
    out.mkdir()
    assert _ok(capsys, "pull", ref, "-o", str(out), *tls)["digest"] == pushed["digest"]  # pull
    assert "v1" in _ok(capsys, "tags", f"{host}/acx/tls", *tls)["tags"]  # tags
    assert _ok(capsys, "manifest", "get", ref, *tls)["descriptor"]["digest"] == pushed["digest"]
    _ok(capsys, "attest", ref, "--key", str(key), *tls)  # attest (bundle + legacy)
    tree = _ok(capsys, "discover", ref, *tls)  # discover
    assert tree["referrers"] and tree["warnings"]  # distribution 2.8: fallback tag, warned
    verdict = _ok(capsys, "verify", ref, "--key", str(tmp_path / "k.pub.pem"), *tls)  # verify
    assert verdict["ok"] is True
    layout = f"oci-layout:{tmp_path / 'copy'}:v1"
    _ok(capsys, "cp", "-r", ref, layout, *tls)  # cp registry → layout ...
    cp_tls = [t.replace("--", "--to-", 1) if t.startswith("--ca") else t for t in tls]
    _ok(capsys, "cp", "-r", layout, f"{host}/acx/tls-copy:v1", *cp_tls)  # ... and back (--to-*)
    assert _ok(capsys, "login", host, "-u", "someone", "-p", "pw", *tls)["host"] == host  # login
    assert host in json.loads((tmp_path / "docker" / "config.json").read_text())["auths"]
    auth_file = tmp_path / "auth.json"  # --registry-config names the file itself, like oras
    _ok(capsys, "login", host, "-u", "someone", "-p", "pw", "--registry-config", str(auth_file), *tls)
    assert host in json.loads(auth_file.read_text())["auths"]


def test_tls_registry_without_the_ca_names_the_flag(
    distribution_registry_tls: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("ACX_CA_FILE", raising=False)
    r = run_acx(capsys, "tags", f"{distribution_registry_tls.host}/acx/none")
    assert r.returncode == 5, r.stderr
    assert "tls_failure" in r.stderr and "--ca-file" in r.stderr and "Traceback" not in r.stderr
    assert "urllib3" not in r.stderr and "HTTPSConnection" not in r.stderr


def test_wrong_scheme_both_ways_and_refused(
    distribution_registry_tls: Registry,
    distribution_registry: Registry,
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_acx(capsys, "tags", f"{distribution_registry_tls.host}/acx/x", "--plain-http")
    assert r.returncode == 2 and "wrong_scheme" in r.stderr and "speaks HTTPS" in r.stderr, r.stderr
    r = run_acx(capsys, "tags", f"{distribution_registry.host}/acx/x", "--no-plain-http")
    assert r.returncode == 2 and "speaks plain HTTP" in r.stderr and "--plain-http" in r.stderr, r.stderr
    r = run_acx(capsys, "tags", f"127.0.0.1:{free_port()}/acx/x")
    assert r.returncode == 6 and "connection refused" in r.stderr and "127.0.0.1" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) <= 3  # one sentence (rich may wrap it)


def test_plain_http_loopback_still_works_without_flags(
    distribution_registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data = acx_json(capsys, "tags", f"{distribution_registry.host}/acx/none")
    assert code == 4 and data["error"]["kind"] == "not_found"  # reached over HTTP after the TLS probe
