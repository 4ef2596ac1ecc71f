"""`acx builder`: the Studio on 127.0.0.1, in the foreground until SIGINT or SIGTERM.

It serves its own shipped files (an exact list, read once at start: no path from a request ever
reaches the filesystem) and one read-only endpoint, `POST /api/lint` (analysis.analyse). Every
request must name the builder itself in `Host` (a DNS-rebinding page reaches 127.0.0.1 under its
own name, and is refused); the endpoint also requires the builder's own `Origin` and a JSON body
of at most 1 MiB, so another site cannot use it even blindly. Every answer carries the strict
security headers below. There is no write, upload or execution endpoint, and no private key or
registry is ever involved."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from acxoci.studio.analysis import MAX_BODY, BadRequest, analyse
from acxoci.studio.assets import studio_assets

HOST = "127.0.0.1"
API = "/api/lint"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = (
    ("Content-Security-Policy", CSP),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
)
REQUEST_TIMEOUT = 10.0  # seconds a client may take to send its request (no slow-loris hold)
MAX_ANALYSES = 2  # at once (two cores; a third request waits)


def allowed_hosts(port: int) -> frozenset[str]:
    """The `Host` values that name this builder."""
    return frozenset({f"{HOST}:{port}", f"localhost:{port}"})


class StudioServer(ThreadingHTTPServer):
    """The HTTP server: loopback only, its assets in memory, a bound on concurrent analyses."""

    daemon_threads = True

    def __init__(self, port: int, *, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.assets = studio_assets()
        self.now = now
        self.analyses = threading.BoundedSemaphore(MAX_ANALYSES)
        super().__init__((HOST, port), StudioHandler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"


class StudioHandler(BaseHTTPRequestHandler):
    """One request: Host check, then a shipped file or the lint endpoint; anything else is refused."""

    server: StudioServer
    server_version = "acx-builder"
    sys_version = ""
    timeout = REQUEST_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a local tool does not log every request."""

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS:
            self.send_header(name, value)
        super().end_headers()

    def _send(self, status: HTTPStatus, body: bytes, ctype: str, *, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _refuse(self, status: HTTPStatus, message: str, kind: str = "refused") -> None:
        body = json.dumps({"error": {"kind": kind, "message": message}}).encode()
        self.close_connection = True
        self._send(status, body, "application/json")

    def _one(self, name: str) -> str | None:
        """The header's value when it is sent exactly once (None when absent or repeated)."""
        values = self.headers.get_all(name) or []
        return values[0] if len(values) == 1 else None

    def _host_ok(self) -> bool:
        host = self._one("Host")
        if host is None or host not in allowed_hosts(self.server.port):
            self._refuse(HTTPStatus.MISDIRECTED_REQUEST, "this builder answers only to its own address")
            return False
        return True

    def _static(self, head: bool) -> None:
        if not self._host_ok():
            return
        path = urlsplit(self.path).path
        found = self.server.assets.get(path)
        if found is None:
            self._refuse(HTTPStatus.NOT_FOUND, "not found", "not_found")
            return
        self._send(HTTPStatus.OK, found[0], found[1], head=head)

    def do_GET(self) -> None:
        self._static(head=False)

    def do_HEAD(self) -> None:
        self._static(head=True)

    def do_POST(self) -> None:
        if not self._host_ok():
            return
        url = urlsplit(self.path)
        if url.path != API:
            self._refuse(HTTPStatus.METHOD_NOT_ALLOWED, "the only POST endpoint is " + API)
            return
        problem = self._api_problem()
        if problem is not None:
            self._refuse(*problem)
            return
        body = self._body(int(self.headers["Content-Length"]))
        if body is None:
            self._refuse(HTTPStatus.REQUEST_TIMEOUT, "the body did not arrive in time", "invalid_input")
            return
        try:
            query = parse_qs(url.query, max_num_fields=4, strict_parsing=False)
        except ValueError:
            self._refuse(HTTPStatus.BAD_REQUEST, "too many query parameters", "invalid_input")
            return
        publish = query.get("publish", ["0"])[-1] == "1"
        relation = query.get("remix", [None])[-1]
        try:
            with self.server.analyses:
                answer = analyse(body, publish=publish, relation=relation, now=self.server.now())
        except BadRequest as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, exc.message, "invalid_input")
            return
        data = json.dumps(answer, ensure_ascii=False).encode("utf-8")
        self._send(HTTPStatus.OK, data, "application/json; charset=utf-8")

    def _body(self, length: int) -> bytes | None:
        """Exactly `length` bytes, within REQUEST_TIMEOUT in all (None when too slow or cut short)."""
        deadline = time.monotonic() + REQUEST_TIMEOUT
        parts: list[bytes] = []
        left = length
        while left > 0:
            if time.monotonic() > deadline:
                return None
            try:
                chunk = self.rfile.read1(min(left, 64 * 1024))
            except (TimeoutError, OSError):
                return None
            if not chunk:
                return None
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def _api_problem(self) -> tuple[HTTPStatus, str] | None:
        """Why this POST is not the builder's own page asking (None when it is)."""
        h = self.headers
        if self._one("Origin") != f"http://{self._one('Host')}":
            return HTTPStatus.FORBIDDEN, "cross-origin request refused: the Origin must be this builder"
        if h.get("Sec-Fetch-Site", "same-origin") != "same-origin":
            return HTTPStatus.FORBIDDEN, "cross-site request refused"
        if (h.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
            return HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "the body must be application/json"
        if h.get("Transfer-Encoding") is not None:
            return HTTPStatus.LENGTH_REQUIRED, "send a Content-Length, not a chunked body"
        raw = h.get("Content-Length")
        if raw is None or not raw.isascii() or not raw.isdigit():
            return HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required"
        if int(raw) > MAX_BODY:
            return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"at most {MAX_BODY} bytes are analysed"
        return None

    def _not_allowed(self) -> None:
        self._refuse(HTTPStatus.METHOD_NOT_ALLOWED, "method not allowed")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed


class _Stop(Exception):
    """Raised in the main thread by SIGTERM, to leave serve_forever like Ctrl-C does."""


@contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve(server: StudioServer, announce: Callable[[], None] = lambda: None) -> None:
    """Serve until SIGINT or SIGTERM (in the main thread), then close the socket. `announce` runs
    once both signals already stop the server (so a signal right after it is a clean stop)."""
    try:
        with _stop_on_sigterm():
            announce()
            server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        server.server_close()
