"""Hostile review of the registry client (credential scope, bounds, digests) against the malicious
loopback registry: each case here broke (or could have broken) a rule of docs/decisions/0011 and
is kept so it stays fixed."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from acxoci.errors import AcxError
from tests.harness.evilregistry import EvilServer, recorder
from tests.unit.test_oci_credential_scope import BLOB, BLOB_DESC, _target, make_registry


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
        t = _target(reg, plain_http=True)
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
        t = _target(reg, plain_http=True)
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
        t = _target(reg, plain_http=True)
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
