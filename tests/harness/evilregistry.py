"""A malicious registry of our own on loopback (real peers cannot misbehave on purpose).

`EvilServer(script)` serves HTTP (or HTTPS with a throwaway CA) on 127.0.0.1; every request is
recorded (`seen`: method, path, Authorization) and answered by `script(req) -> Reply`. A
`Reply` body may be bytes or an iterator of bytes (endless, dripping or huge bodies are
generators, never held in memory). A client that disconnects ends the generator.

`RefChain` builds a repository with a chain of referrers (each manifest's subject is the one
before) that the script can serve: manifests by digest and the Referrers API per subject.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.harness.servers import LOOPBACK, make_ca_and_cert

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = b"{}"
EMPTY_DIGEST = "sha256:" + hashlib.sha256(EMPTY).hexdigest()


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def auth(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""
    length: int | None = None
    """Content-Length to announce for an iterator body (None: close-delimited)."""


Script = Callable[[Request], Reply]


class EvilServer:
    """One scripted HTTP(S) server; `host` is `127.0.0.1:PORT`, `url` its base URL."""

    def __init__(self, script: Script, *, tls_dir: Path | None = None) -> None:
        self.script = script
        self.seen: list[Request] = []
        self.ca_path: Path | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def _handle(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                server.seen.append(req)
                rep = server.script(req)
                self.send_response(rep.status)
                for k, v in rep.headers.items():
                    self.send_header(k, v)
                if isinstance(rep.body, bytes):
                    self.send_header("Content-Length", str(len(rep.body)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(rep.body)
                    return
                if rep.length is not None:
                    self.send_header("Content-Length", str(rep.length))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                try:
                    for chunk in rep.body:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                    self.close_connection = True

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.httpd.daemon_threads = True
        self.scheme = "http"
        if tls_dir is not None:
            tls_dir.mkdir(parents=True, exist_ok=True)
            self.ca_path, crt, key = make_ca_and_cert(tls_dir)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(crt), str(key))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.host = f"{LOOPBACK}:{self.httpd.server_address[1]}"
        self.url = f"{self.scheme}://{self.host}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def requests_with_auth(self) -> list[Request]:
        return [r for r in self.seen if r.auth]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def recorder() -> EvilServer:
    """A bystander origin: answers 200/202/201 to anything and records what it was sent."""

    def script(req: Request) -> Reply:
        if req.method == "PATCH":
            return Reply(202, {"Location": req.path, "Range": f"0-{max(0, len(req.body) - 1)}"})
        if req.method == "PUT":
            return Reply(201)
        return Reply(200, {"Content-Type": "application/json"}, b'{"token": "stolen"}')

    return EvilServer(script)


def huge(total: int, chunk: int = 1024 * 1024) -> Iterator[bytes]:
    """`total` bytes of filler, produced a chunk at a time."""
    block = b"x" * chunk
    sent = 0
    while sent < total:
        n = min(chunk, total - sent)
        yield block[:n]
        sent += n


def endless(chunk: int = 1024 * 1024) -> Iterator[bytes]:
    block = b"y" * chunk
    while True:
        yield block


def drip(every: float = 5.0, total: int = 10_000) -> Iterator[bytes]:
    """One byte every `every` seconds."""
    for _ in range(total):
        yield b"z"
        time.sleep(every)


def manifest_json(subject: tuple[str, int] | None, n: int) -> bytes:
    m: dict[str, object] = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": "application/x.acx.chain",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2},
        "layers": [{"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}],
        "annotations": {"n": str(n)},
    }
    if subject is not None:
        m["subject"] = {"mediaType": OCI_MANIFEST, "digest": subject[0], "size": subject[1]}
    return json.dumps(m, separators=(",", ":")).encode()


class RefChain:
    """`depth` manifests, each the subject of the next; `root` is the first (tag `v1`)."""

    def __init__(self, depth: int, fanout: int = 1) -> None:
        self.manifests: dict[str, bytes] = {}
        self.referrers: dict[str, list[dict[str, object]]] = {}
        prev: tuple[str, int] | None = None
        for i in range(depth + 1):
            data = manifest_json(prev, i)
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            self.manifests[digest] = data
            if prev is not None:
                self.referrers.setdefault(prev[0], []).append(
                    {
                        "mediaType": OCI_MANIFEST,
                        "digest": digest,
                        "size": len(data),
                        "artifactType": "application/x.acx.chain",
                    }
                )
            else:
                self.root = digest
            prev = (digest, len(data))
        if fanout > 1:  # many referrers of the root
            for j in range(fanout):
                data = manifest_json((self.root, len(self.manifests[self.root])), 10_000_000 + j)
                digest = "sha256:" + hashlib.sha256(data).hexdigest()
                self.manifests[digest] = data
                self.referrers.setdefault(self.root, []).append(
                    {
                        "mediaType": OCI_MANIFEST,
                        "digest": digest,
                        "size": len(data),
                        "artifactType": "application/x.acx.chain",
                    }
                )

    def script(self, req: Request) -> Reply:
        path = req.path.split("?", 1)[0]
        parts = path.split("/")
        if path == "/v2/":
            return Reply(200, {"Content-Type": "application/json"}, b"{}")
        if "/manifests/" in path:
            ident = parts[-1]
            digest = self.root if ident == "v1" else ident
            data = self.manifests.get(digest)
            if data is None:
                return Reply(404)
            return Reply(200, {"Content-Type": OCI_MANIFEST, "Docker-Content-Digest": digest}, data)
        if "/blobs/" in path and parts[-1] == EMPTY_DIGEST:
            return Reply(
                200,
                {"Content-Type": "application/octet-stream", "Docker-Content-Digest": EMPTY_DIGEST},
                EMPTY,
            )
        if "/referrers/" in path:
            index = {
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": self.referrers.get(parts[-1], []),
            }
            return Reply(200, {"Content-Type": OCI_INDEX}, json.dumps(index).encode())
        return Reply(404)


# -- hostile listings, tokens and names (issue 30) -----------------------------------------------
# Each `plant_*` takes a registry of ours that stores manifests and answers the Referrers API and
# the fallback tag from them (tests/harness/memregistry.py's MemRegistry) and makes it lie in one
# way; `bearer_token_server` answers every token request with one chosen token.

CONFIG = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}


def referrer_json(subject: tuple[str, int], artifact_type: str, **extra: object) -> dict[str, object]:
    """A referrer manifest of `subject` (empty config, empty layer) as a JSON object."""
    m: dict[str, object] = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
                            "config": CONFIG, "layers": [CONFIG],
                            "subject": {"mediaType": OCI_MANIFEST, "digest": subject[0], "size": subject[1]}}
    m.update(extra)
    return m


def fallback_tag_of(digest: str) -> str:
    return digest.replace(":", "-", 1)


def entry(digest: str, size: int, artifact_type: str | None = None) -> dict[str, object]:
    e: dict[str, object] = {"mediaType": OCI_MANIFEST, "digest": digest, "size": size}
    if artifact_type is not None:
        e["artifactType"] = artifact_type
    return e


def plant_stray(reg: object, subject: tuple[str, int], other: tuple[str, int], artifact_type: str,
                *, via: str = "api") -> tuple[str, int]:
    """A referrer whose manifest's subject is `other`, listed under `subject` too: by the
    Referrers API (`via="api"`) or in `subject`'s fallback tag index (`via="tag"`)."""
    planted = reg.add_manifest(referrer_json(other, artifact_type))  # type: ignore[attr-defined]
    listed = entry(*planted, artifact_type)
    if via == "api":
        reg.extra_referrers.setdefault(subject[0], []).append(listed)  # type: ignore[attr-defined]
    else:
        plant_fallback_index(reg, subject, [listed])
    return planted


def plant_fallback_index(reg: object, subject: tuple[str, int], entries: list[dict[str, object]]) -> str:
    """`subject`'s `sha256-<hex>` tag pointing at an index of its present entries and `entries`
    (exactly as given)."""
    tag = fallback_tag_of(subject[0])
    held = reg.tags.get(tag)  # type: ignore[attr-defined]
    before = json.loads(reg.manifests[held][1])["manifests"] if held else []  # type: ignore[attr-defined]
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [*before, *entries]}
    digest, _ = reg.add_manifest(index, tag=tag)  # type: ignore[attr-defined]
    return str(digest)


def plant_gone(reg: object, subject: tuple[str, int]) -> str:
    """A listed referrer whose manifest the registry does not have (404 on GET)."""
    gone = "sha256:" + "ab" * 32
    reg.extra_referrers.setdefault(subject[0], []).append(entry(gone, 300, "application/x.gone"))  # type: ignore[attr-defined]
    return gone


def plant_oversized(reg: object, subject: tuple[str, int]) -> str:
    """A listed referrer declaring a 600 MB manifest (the server would stream it endlessly)."""
    big = "sha256:" + "cd" * 32
    reg.extra_referrers.setdefault(subject[0], []).append(entry(big, 600 * 1024 * 1024))  # type: ignore[attr-defined]
    return big


def plant_malformed_entry(reg: object, subject: tuple[str, int]) -> None:
    """A listing entry outside the descriptor grammar (an artifactType carrying a line break)."""
    reg.extra_referrers.setdefault(subject[0], []).append(  # type: ignore[attr-defined]
        {"mediaType": OCI_MANIFEST, "digest": "sha256:" + "ee" * 32, "size": 10,
         "artifactType": "application/x.ok\nverified: yes"})


def bearer_token_server(token: str, inner: Script) -> Script:
    """`inner`'s registry behind a Bearer challenge whose realm (this server) answers `token`."""

    def script(req: Request) -> Reply:
        if req.path.startswith("/token"):
            return Reply(200, {"Content-Type": "application/json"}, json.dumps({"token": token}).encode())
        if not req.auth:
            return Reply(401, {"WWW-Authenticate": f'Bearer realm="http://{req.headers.get("host")}/token",'
                                                   'service="evil"'})
        return inner(req)

    return script
