"""A malicious loopback registry that demands credentials (Basic or Bearer, with its own token
endpoint) and points uploads and blob redirects wherever a test says, with the client to talk to
it: shared by the credential-scope tests (no tests here)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from acxoci.oci.descriptor import Descriptor
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget, Transport
from acxoci.oci.settings import RemoteOptions
from tests.harness.evilregistry import EvilServer, Reply, Request

USER, PASSWORD = "acx", "s3cret"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
TOKEN = "registry-token"
BLOB = b"hello blob"
BLOB_DESC = Descriptor("application/octet-stream", "sha256:" + hashlib.sha256(BLOB).hexdigest(), len(BLOB))


def authorized(req: Request, scheme: str) -> bool:
    """Whether `req` carries this registry's own Basic credentials or Bearer token."""
    return req.auth == (BASIC if scheme == "basic" else f"Bearer {TOKEN}")


def make_registry(
    scheme: str,
    behave: dict[str, object],
    *,
    tls_dir: Path | None = None,
    realm: str | None = None,
) -> EvilServer:
    """A registry demanding `scheme` auth; `behave` says where it points uploads/redirects."""
    box: dict[str, EvilServer] = {}

    def script(req: Request) -> Reply:
        me = box["me"]
        path = req.path.split("?", 1)[0]
        if path == "/token":
            if req.auth != BASIC:
                return Reply(401)
            if "token_redirect" in behave:
                return Reply(307, {"Location": str(behave["token_redirect"])})
            return Reply(200, {"Content-Type": "application/json"}, b'{"token": "%s"}' % TOKEN.encode())
        if not authorized(req, scheme):
            challenge = (
                'Basic realm="evil"'
                if scheme == "basic"
                else f'Bearer realm="{realm or me.url + "/token"}",service="evil"'
            )
            return Reply(401, {"WWW-Authenticate": challenge})
        if req.method == "HEAD" and "/blobs/" in path:
            return Reply(404)
        if req.method == "POST" and path.endswith("/blobs/uploads/"):
            return Reply(202, {"Location": str(behave["upload_location"])})
        if req.method == "GET" and "/blobs/" in path:
            return Reply(307, {"Location": str(behave["redirect"])})
        return Reply(404)

    box["me"] = EvilServer(script, tls_dir=tls_dir)
    return box["me"]


def target_for(reg: EvilServer, **kw: object) -> RegistryTarget:
    """Our registry client for `reg`'s evil/repo, with USER/PASSWORD and no retries."""
    opts = RemoteOptions(username=USER, password=PASSWORD, max_retries=0, **kw)  # type: ignore[arg-type]
    ref = parse_reference(f"{reg.host}/evil/repo:v1")
    return RegistryTarget(ref, opts, transport=Transport(reg.host, opts))
