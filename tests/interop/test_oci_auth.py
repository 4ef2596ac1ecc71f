"""Auth against real registries: htpasswd Basic (login writes the docker config oras reads) and
Bearer tokens from a token server (distribution 2.8 `auth: token:`), plus refusals."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from acxoci.errors import AuthError
from acxoci.oci.auth import Credential, load_credential, store_credential
from acxoci.oci.descriptor import OCI_MANIFEST, manifest_bytes
from acxoci.oci.digest import file_descriptor
from acxoci.oci.errors import TLSFailure
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget, Transport
from acxoci.oci.shapes import EMPTY_CONFIG_BLOB, empty_config
from acxoci.oci.target import RemoteOptions, fetch_manifest, push_bytes
from tests.harness.peers import Oras
from tests.harness.servers import Registry
from tests.harness.tokenserver import TokenServer, start_distribution_token

pytestmark = pytest.mark.interop


def _roundtrip(target: RegistryTarget, tmp: Path) -> None:
    f = tmp / "payload.bin"
    f.write_bytes(b"auth payload " * 1000)
    layer = file_descriptor(f, "application/octet-stream")
    cfg = push_bytes(target, EMPTY_CONFIG_BLOB, "application/vnd.oci.empty.v1+json")
    with f.open("rb") as fh:
        target.push(layer, fh)
    m = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": "application/x.acx.test",
        "config": empty_config(),
        "layers": [layer.to_json()],
    }
    desc = push_bytes(target, manifest_bytes(m), OCI_MANIFEST)
    target.tag(desc, "v1")
    assert cfg.digest == empty_config()["digest"]
    got = fetch_manifest(target, target.resolve("v1"))
    with target.fetch(got.layers[0]) as r:
        assert r.read_all() == f.read_bytes()


def test_basic_auth_login_config_and_refusal(
    distribution_registry_basic: Registry, oras13: Oras, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = distribution_registry_basic
    cfgdir = tmp_path / "docker"
    monkeypatch.setenv("DOCKER_CONFIG", str(cfgdir))
    ref = parse_reference(f"{reg.host}/auth/basic:v1")
    anon = RegistryTarget(
        ref,
        RemoteOptions(plain_http=True, docker_config=str(cfgdir)),
        transport=Transport(reg.host, RemoteOptions(plain_http=True, docker_config=str(cfgdir))),
    )
    with pytest.raises(AuthError):
        anon.tags()
    wrong = Transport(reg.host, RemoteOptions(plain_http=True, username="acx", password="nope"))
    with pytest.raises(AuthError):
        wrong.ping()
    # login = ping with the credentials, then the same file oras/docker use
    Transport(reg.host, RemoteOptions(plain_http=True, username="acx", password="acx-secret")).ping()
    path = store_credential(reg.host, Credential("acx", "acx-secret"))
    assert json.loads(path.read_text())["auths"][reg.host]["auth"]
    assert load_credential(reg.host) == Credential("acx", "acx-secret")
    opts = RemoteOptions(plain_http=True, docker_config=str(cfgdir))
    target = RegistryTarget(ref, opts, transport=Transport(reg.host, opts))
    _roundtrip(target, tmp_path)
    # oras reads the credentials acx stored
    out = oras13.run(
        "repo", "tags", "--plain-http", f"{reg.host}/auth/basic", env={"DOCKER_CONFIG": str(cfgdir)}
    ).stdout.split()
    assert out == ["v1"]


@pytest.fixture
def token_registry(tmp_path: Path) -> Iterator[tuple[Registry, TokenServer]]:
    reg, tokens = start_distribution_token(tmp_path / "token-reg")
    yield reg, tokens
    reg.stop()
    tokens.stop()


def test_bearer_token_auth(token_registry: tuple[Registry, TokenServer], tmp_path: Path) -> None:
    reg, tokens = token_registry
    ref = parse_reference(f"{reg.host}/auth/token:v1")
    opts = RemoteOptions(plain_http=True, username="acx", password="acx-secret")
    target = RegistryTarget(ref, opts, transport=Transport(reg.host, opts))
    _roundtrip(target, tmp_path)
    assert any("repository:auth/token:pull,push" in s for s in tokens.requests)
    # tokens are cached per scope: a second read needs no new token
    n = len(tokens.requests)
    target.resolve("v1")
    assert len(tokens.requests) == n
    bad = RemoteOptions(plain_http=True, username="acx", password="wrong")
    with pytest.raises(AuthError):
        RegistryTarget(ref, bad, transport=Transport(reg.host, bad)).resolve("v1")
    anon = RemoteOptions(plain_http=True, username="", password="")
    with pytest.raises(AuthError):
        RegistryTarget(ref, anon, transport=Transport(reg.host, anon)).push(
            file_descriptor(tmp_path / "payload.bin", "application/octet-stream"), io.BytesIO(b"")
        )


def test_tls_verified_by_default_and_custom_ca(distribution_registry_tls: Registry, tmp_path: Path) -> None:
    reg = distribution_registry_tls
    ref = parse_reference(f"{reg.host}/tls/x:v1")
    strict = RemoteOptions(plain_http=False, max_retries=0)
    with pytest.raises(TLSFailure):
        RegistryTarget(ref, strict, transport=Transport(reg.host, strict)).tags()
    ok = RemoteOptions(plain_http=False, ca_file=str(reg.ca_path))
    _roundtrip(RegistryTarget(ref, ok, transport=Transport(reg.host, ok)), tmp_path)


def test_cli_login_logout(
    distribution_registry_basic: Registry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from acxoci.cli import main as cli_main
    from acxoci.cli.output import OPTS

    reg = distribution_registry_basic
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "cfg"))

    def run(*args: str, stdin: str = "") -> int:
        OPTS.json = OPTS.verbose = OPTS.quiet = False
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        with pytest.raises(SystemExit) as ex:
            cli_main.main(["--json", *args])
        return int(ex.value.code or 0)

    assert run("login", reg.host, "-u", "acx", "--password-stdin", stdin="wrong\n") == AuthError.exit_code
    assert not (tmp_path / "cfg" / "config.json").exists()
    assert run("login", reg.host, "-u", "acx", "--password-stdin", stdin="acx-secret\n") == 0
    assert load_credential(reg.host) == Credential("acx", "acx-secret")
    assert run("tags", f"{reg.host}/none") == 4  # authenticated: the repository simply does not exist
    assert run("logout", reg.host) == 0
    assert load_credential(reg.host).empty
    Transport._pool.clear()  # each CLI run is a new process; in-process, drop the cached session
    assert run("tags", f"{reg.host}/none") == AuthError.exit_code
    capsys.readouterr()


def test_real_registries_auth_with_no_scheme_flag(
    token_registry: tuple[Registry, TokenServer], distribution_registry_basic: Registry, tmp_path: Path
) -> None:
    """Real distribution (token auth, and htpasswd behind a proxy origin) with no scheme flag:
    the loopback probe falls back to HTTP, Basic still reaches the loopback token realm (the
    scoping rules allow it), and uploads whose Location names the proxy origin carry on."""
    from tests.harness.faultproxy import FaultProxy

    reg, tokens = token_registry
    ref = parse_reference(f"{reg.host}/auth/scope:v1")
    opts = RemoteOptions(username="acx", password="acx-secret")  # no plain-HTTP choice
    target = RegistryTarget(ref, opts, transport=Transport(reg.host, opts))
    _roundtrip(target, tmp_path)
    assert target.transport.scheme == "http" and tokens.requests  # fell back; realm used
    basic = distribution_registry_basic
    with FaultProxy(basic.host) as proxy:
        bref = parse_reference(f"{proxy.host}/auth/scope:v1")
        bopts = RemoteOptions(username="acx", password="acx-secret")
        _roundtrip(RegistryTarget(bref, bopts, transport=Transport(proxy.host, bopts)), tmp_path)
        assert any(m == "PATCH" or m == "PUT" for m, _, _ in proxy.log.entries)
