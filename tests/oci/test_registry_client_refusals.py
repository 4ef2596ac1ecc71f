"""The registry client's refusals (credential scope, bounds, digests) against the malicious loopback
registry, from a hostile review: each case here broke (or could have broken) a rule of docs/decisions/0011 and
is kept so it stays fixed."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acxoci.errors import AcxError
from acxoci.oci.auth import Credential, load_credential, remove_credential, store_credential
from acxoci.oci.errors import RegistryProtocolError
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget, Transport
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.staging import fetch_staged, staging_path
from tests.harness.authregistry import BLOB, BLOB_DESC, make_registry, target_for
from tests.harness.evilregistry import OCI_MANIFEST, EvilServer, RefChain, Reply, Request, recorder


@pytest.fixture
def other() -> Iterator[EvilServer]:
    o = recorder()
    yield o
    o.stop()


def _differential(other: EvilServer, reg_host: str, path: str) -> str:
    """A URL that Python's urlsplit reads as the registry but urllib3 (the sender) as `other`."""
    return f"http://{other.host}\\@{reg_host}{path}"


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
def test_backslash_redirect_does_not_fool_the_origin_check(scheme: str, other: EvilServer) -> None:
    box: dict[str, str] = {}
    reg = make_registry(scheme, {"redirect": _Lazy(box, "redirect")})
    box["redirect"] = _differential(other, reg.host, "/blob")
    try:
        t = target_for(reg, plain_http=True)
        with pytest.raises(AcxError), t.fetch(BLOB_DESC) as r:
            r.read_all()
        assert other.requests_with_auth() == []
    finally:
        reg.stop()


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
def test_backslash_upload_location_gets_no_credentials(scheme: str, other: EvilServer) -> None:
    box: dict[str, str] = {}
    reg = make_registry(scheme, {"upload_location": _Lazy(box, "loc")})
    box["loc"] = _differential(other, reg.host, "/upload/1?state=x")
    try:
        t = target_for(reg, plain_http=True)
        t.push_blob(BLOB_DESC, io.BytesIO(BLOB))  # the upload goes to `other`, without credentials
        assert [r.method for r in other.seen] == ["PUT"]
        assert other.requests_with_auth() == []
    finally:
        reg.stop()


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
def test_userinfo_in_location_is_refused(scheme: str, other: EvilServer) -> None:
    box: dict[str, str] = {}
    reg = make_registry(scheme, {"redirect": _Lazy(box, "redirect")})
    box["redirect"] = f"http://user:pw@{other.host}/blob"
    try:
        t = target_for(reg, plain_http=True)
        with pytest.raises(AcxError), t.fetch(BLOB_DESC) as r:
            r.read_all()
        assert other.seen == []
    finally:
        reg.stop()


class _Lazy:
    """A string filled in after the registry's port is known."""

    def __init__(self, box: dict[str, str], key: str) -> None:
        self.box, self.key = box, key

    def __str__(self) -> str:
        return self.box[self.key]


def _blob_registry(data: bytes) -> EvilServer:
    """A plain registry that serves one blob (whatever digest is asked)."""

    def script(req: Request) -> Reply:
        if "/blobs/" in req.path:
            return Reply(200, {"Content-Type": "application/octet-stream"}, data)
        return Reply(200, {}, b"{}")

    return EvilServer(script)


def test_staging_file_planted_as_symlink_is_not_written_through(tmp_path: Path) -> None:
    """A staging name that already exists as a symlink (the folder came from elsewhere, or another
    local user planted it) must not make the pull truncate or write the file it points to."""
    reg = _blob_registry(BLOB)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious " * 100)
    out = tmp_path / "out"
    out.mkdir()
    spot = staging_path(out, BLOB_DESC)
    spot.symlink_to(victim)
    try:
        opts = RemoteOptions(plain_http=True, max_retries=0)
        t = RegistryTarget(parse_reference(f"{reg.host}/r:v1"), opts, transport=Transport(reg.host, opts))
        got = fetch_staged(t, BLOB_DESC, spot)
        assert got.read_bytes() == BLOB
        assert not got.is_symlink()
    except AcxError:
        pass  # refusing is fine too
    finally:
        reg.stop()
    assert victim.read_bytes() == b"precious " * 100


@pytest.mark.parametrize("bad", ["sha256:../../../other/x", "sha256:" + "A" * 64, "md5:abcd"])
def test_registry_digest_header_must_be_a_digest(bad: str) -> None:
    """A HEAD's Docker-Content-Digest is not a descriptor from a verified manifest: a malformed one
    is refused at once (it must not steer later URLs, e.g. with dot segments, or file names)."""
    chain = RefChain(1)

    def script(req: Request) -> Reply:
        if req.method == "HEAD" and "/manifests/" in req.path:
            head = {"Content-Type": OCI_MANIFEST, "Docker-Content-Digest": bad}
            return Reply(200, head, chain.manifests[chain.root])
        return chain.script(req)

    reg = EvilServer(script)
    try:
        opts = RemoteOptions(plain_http=True, max_retries=0)
        t = RegistryTarget(parse_reference(f"{reg.host}/r:v1"), opts, transport=Transport(reg.host, opts))
        with pytest.raises(RegistryProtocolError, match="digest"):
            t.resolve("v1")
        assert all(r.path.startswith("/v2/r/") or r.path == "/v2/" for r in reg.seen)
    finally:
        reg.stop()


def _run_isolated(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parents[2]
    full = {**os.environ, **env, "PYTHONPATH": str(repo)}
    return subprocess.run(
        [sys.executable, "-c", code], env=full, cwd=cwd, capture_output=True, text=True, timeout=60
    )


LOAD_AND_MEASURE = """
import sys, threading, os
from acxoci.errors import AcxError
from acxoci.oci.auth import load_credential
t = threading.Timer(10, lambda: os._exit(9)); t.daemon = True; t.start()
try:
    load_credential('127.0.0.1:5000'); print('loaded')
except AcxError as e:
    print('refused', e.kind)
hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0].split()[1]
print('rss', int(hwm) // 1024)  # this process image's peak (ru_maxrss survives fork + exec)
"""


def test_docker_config_that_is_huge_is_refused_within_bounds(tmp_path: Path) -> None:
    cfg = tmp_path / "docker"
    cfg.mkdir()
    with (cfg / "config.json").open("wb") as fh:
        fh.write(b"{")
        fh.truncate(1 << 30)  # sparse 1 GiB
    proc = _run_isolated(LOAD_AND_MEASURE, {"DOCKER_CONFIG": str(cfg)}, tmp_path)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert "refused" in proc.stdout
    assert int(proc.stdout.split("rss")[1]) < 150


def test_docker_config_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    cfg = tmp_path / "docker"
    cfg.mkdir()
    os.mkfifo(cfg / "config.json")
    proc = _run_isolated(LOAD_AND_MEASURE, {"DOCKER_CONFIG": str(cfg)}, tmp_path)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    assert "refused" in proc.stdout


def test_credential_helper_name_cannot_be_a_path(tmp_path: Path) -> None:
    """`credHelpers` names a program `docker-credential-<name>` looked up on PATH; a name with a
    slash would run a file relative to the working folder instead."""
    cfg = tmp_path / "docker"
    cfg.mkdir()
    (cfg / "config.json").write_text(json.dumps({"credHelpers": {"127.0.0.1:5000": "../evil"}}))
    marker = tmp_path / "ran"
    trap = tmp_path / "docker-credential-.."
    trap.mkdir()
    (trap / "evil").write_text(f"#!/bin/sh\ntouch {marker}\necho '{{}}'\n")
    (trap / "evil").chmod(0o755)
    proc = _run_isolated(LOAD_AND_MEASURE, {"DOCKER_CONFIG": str(cfg)}, tmp_path)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert not marker.exists()
    assert "refused" in proc.stdout


def test_no_compression_is_asked_for_so_none_is_decoded() -> None:
    """Bodies are hashed and capped as they arrive and never decompressed (a gzip bomb stays a
    small blob that fails its digest). So the client must not advertise gzip: a proxy that
    compresses JSON whenever the client accepts it (nginx `gzip on`) would break every tag list
    and manifest."""

    def script(req: Request) -> Reply:
        body = json.dumps({"name": "r", "tags": ["v1"]}).encode()
        if "gzip" in req.headers.get("accept-encoding", ""):
            return Reply(
                200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, gzip.compress(body)
            )
        return Reply(200, {"Content-Type": "application/json"}, body)

    reg = EvilServer(script)
    try:
        opts = RemoteOptions(plain_http=True, max_retries=0)
        t = RegistryTarget(parse_reference(f"{reg.host}/r:v1"), opts, transport=Transport(reg.host, opts))
        assert t.tags() == ["v1"]
        assert all(r.headers.get("accept-encoding") == "identity" for r in reg.seen)
    finally:
        reg.stop()


@pytest.mark.parametrize("helpers", [[], "x", 5])
def test_docker_config_with_odd_cred_helpers_is_a_typed_error(helpers: object, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"credHelpers": helpers, "credsStore": 7}))
    for call in (
        lambda: store_credential("127.0.0.1:5000", Credential("u", "p"), str(tmp_path)),
        lambda: remove_credential("127.0.0.1:5000", str(tmp_path)),
        lambda: load_credential("127.0.0.1:5000", str(tmp_path)),
    ):
        with pytest.raises(AcxError):
            call()


@pytest.mark.parametrize("answer", ["[]", '"x"', '{"Username": 5, "Secret": null}'])
def test_credential_helper_with_odd_answer_is_a_typed_error(
    answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helper = tmp_path / "bin" / "docker-credential-odd"
    helper.parent.mkdir()
    helper.write_text(f"#!/bin/sh\necho '{answer}'\n")
    helper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{helper.parent}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "config.json").write_text(json.dumps({"credHelpers": {"127.0.0.1:5000": "odd"}}))
    with pytest.raises(AcxError):
        load_credential("127.0.0.1:5000", str(tmp_path))


@pytest.mark.parametrize("bad", ["\x1b]0;owned\x07", "../../../x", "sha256:" + "0" * 64, "a" * 200])
def test_tag_list_entries_must_be_tags(bad: str) -> None:
    """Listed tags are printed (a terminal escape) and used as references by the roster (dot
    segments in a URL path, a digest in disguise): an entry outside the tag grammar is refused."""

    def script(req: Request) -> Reply:
        body = json.dumps({"name": "r", "tags": ["v1", bad]}).encode()
        return Reply(200, {"Content-Type": "application/json"}, body)

    reg = EvilServer(script)
    try:
        opts = RemoteOptions(plain_http=True, max_retries=0)
        t = RegistryTarget(parse_reference(f"{reg.host}/r:v1"), opts, transport=Transport(reg.host, opts))
        with pytest.raises(RegistryProtocolError, match="tag"):
            t.tags()
    finally:
        reg.stop()
