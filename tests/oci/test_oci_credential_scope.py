"""Credential scoping against a malicious loopback registry (tests/harness/evilregistry.py), for
Basic and for Bearer: credentials and tokens reach only the registry's own origin and its token
realm over HTTPS; never an upload Location or a redirect on another origin; https → http is
refused; a 401 from another origin is not answered."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from acxoci.errors import AcxError
from acxoci.oci.errors import RegistryAuthError, RegistryProtocolError
from tests.harness.authregistry import (
    BASIC,
    BLOB,
    BLOB_DESC,
    authorized,
    make_registry,
    target_for,
)
from tests.harness.evilregistry import EvilServer, Reply, Request, recorder


@pytest.fixture
def other() -> Iterator[EvilServer]:
    o = recorder()
    yield o
    o.stop()


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
@pytest.mark.parametrize("chunked", [False, True])
def test_upload_location_on_another_origin_gets_no_credentials(
    scheme: str, chunked: bool, other: EvilServer
) -> None:
    reg = make_registry(scheme, {"upload_location": f"{other.url}/upload/1?state=x"})
    try:
        t = target_for(reg, plain_http=True, monolithic_limit=0 if chunked else 1 << 20, chunk_size=1 << 20)
        t.push_blob(BLOB_DESC, io.BytesIO(BLOB))
        assert any(authorized(r, scheme) for r in reg.seen)  # the registry itself got them
        assert [r.method for r in other.seen]  # the upload really went to the other origin
        assert other.requests_with_auth() == []
    finally:
        reg.stop()


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
def test_redirect_to_another_origin_drops_credentials(scheme: str, other: EvilServer) -> None:
    reg = make_registry(scheme, {"redirect": f"{other.url}/blob"})
    try:
        t = target_for(reg, plain_http=True)
        with pytest.raises(AcxError), t.fetch(BLOB_DESC) as r:  # the recorder's body is not the blob
            r.read_all()
        assert [r.path for r in other.seen] == ["/blob"]
        assert other.requests_with_auth() == []
    finally:
        reg.stop()


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
def test_same_host_other_port_is_another_origin(scheme: str, other: EvilServer) -> None:
    reg = make_registry(scheme, {"redirect": f"http://localhost:{other.host.split(':')[1]}/blob"})
    try:
        t = target_for(reg, plain_http=True)
        with pytest.raises(AcxError), t.fetch(BLOB_DESC) as r:
            r.read_all()
        assert other.seen and other.requests_with_auth() == []
    finally:
        reg.stop()


def test_challenge_from_another_origin_is_not_answered(other: EvilServer) -> None:
    def foreign(req: Request) -> Reply:
        return Reply(401, {"WWW-Authenticate": f'Bearer realm="{other.url}/token",service="x"'})

    thief = EvilServer(foreign)
    reg = make_registry("basic", {"upload_location": f"{thief.url}/upload/1"})
    try:
        t = target_for(reg, plain_http=True)
        with pytest.raises(RegistryAuthError, match="sent only to"):
            t.push_blob(BLOB_DESC, io.BytesIO(BLOB))
        assert thief.requests_with_auth() == [] and other.seen == []
    finally:
        reg.stop()
        thief.stop()


def test_tls_registry_with_http_token_realm_refused(tmp_path: Path, other: EvilServer) -> None:
    reg = make_registry("bearer", {}, tls_dir=tmp_path / "tls", realm=f"{other.url}/token")
    try:
        t = target_for(reg, ca_file=str(reg.ca_path))
        with pytest.raises(RegistryAuthError, match="not HTTPS"):
            t.exists(BLOB_DESC)
        assert other.seen == []  # not even an anonymous request
    finally:
        reg.stop()


def test_plain_http_registry_may_use_http_realm(other: EvilServer) -> None:
    """The user chose plain HTTP for this registry: an http realm is acceptable then."""
    reg = make_registry("bearer", {}, realm=f"{other.url}/token")
    try:
        t = target_for(reg, plain_http=True)
        with pytest.raises(RegistryAuthError):  # the recorder's token is not the registry's
            t.exists(BLOB_DESC)
        assert [r.auth for r in other.seen] == [BASIC]
    finally:
        reg.stop()


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
def test_https_to_http_redirect_refused(scheme: str, tmp_path: Path, other: EvilServer) -> None:
    reg = make_registry(scheme, {}, tls_dir=tmp_path / "tls")
    reg_port = reg.host.split(":")[1]
    try:
        for target_url in (f"http://127.0.0.1:{reg_port}/blob", f"{other.url}/blob"):
            t = target_for(reg, ca_file=str(reg.ca_path))
            behave_redirect(reg, scheme, target_url)
            with pytest.raises(RegistryProtocolError, match="HTTPS to plain HTTP"):
                t.fetch(BLOB_DESC)
        assert other.seen == []
    finally:
        reg.stop()


def behave_redirect(reg: EvilServer, scheme: str, location: str) -> None:
    """Point blob GETs of `reg` at `location` (keeps its auth rules)."""
    inner = reg.script

    def script(req: Request) -> Reply:
        if req.method == "GET" and "/blobs/" in req.path and authorized(req, scheme):
            return Reply(307, {"Location": location})
        return inner(req)

    reg.script = script


@pytest.mark.parametrize("scheme", ["basic", "bearer"])
def test_https_upload_location_on_http_refused(scheme: str, tmp_path: Path, other: EvilServer) -> None:
    reg = make_registry(scheme, {"upload_location": f"{other.url}/upload/1"}, tls_dir=tmp_path / "tls")
    try:
        t = target_for(reg, ca_file=str(reg.ca_path))
        with pytest.raises(RegistryProtocolError, match="plain HTTP"):
            t.push_blob(BLOB_DESC, io.BytesIO(BLOB))
        assert other.seen == []
    finally:
        reg.stop()


def test_token_realm_redirect_to_another_origin_drops_basic(other: EvilServer) -> None:
    reg = make_registry("bearer", {"token_redirect": f"{other.url}/token"})
    try:
        t = target_for(reg, plain_http=True)
        with pytest.raises(RegistryAuthError):
            t.exists(BLOB_DESC)
        assert [r.path.split("?")[0] for r in other.seen] == ["/token"]
        assert other.requests_with_auth() == []
    finally:
        reg.stop()
