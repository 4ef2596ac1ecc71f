"""A small fault-injecting HTTP/1.1 proxy on 127.0.0.1 in front of a real registry.

Rules say which requests to break and how, each a bounded number of times (so no request loop
can run forever): reset the connection mid-upload, answer 5xx or 429 + Retry-After, truncate
or corrupt a response body, add bytes beyond the declared size, loop redirects, send an
oversized or malformed manifest, or a malformed WWW-Authenticate challenge. Everything else
is forwarded unchanged (Host is kept, so the registry's Location URLs point at the proxy).
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import socketserver
import struct
import threading
import time
from dataclasses import dataclass, field

LOOPBACK = "127.0.0.1"


@dataclass
class Rule:
    """Break requests whose method matches (`*` = any) and whose path matches `path` (regex),
    `times` times.

    action: reset_body | status | truncate | corrupt | extra | redirect_loop | oversize |
            bad_json | bad_auth | fake_ok (answer 201 without storing: a lost update) |
            drip (forward the answer in 16 slices, `delay` seconds apart: a slow server)
    """

    method: str
    path: str
    action: str
    times: int = 1
    status: int = 503
    retry_after: str | None = None
    hits: int = 0
    delay: float = 0.02

    def matches(self, method: str, path: str) -> bool:
        return (
            self.hits < self.times and self.method in ("*", method) and re.search(self.path, path) is not None
        )


@dataclass
class Log:
    entries: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, action)


class FaultProxy:
    """Start with `FaultProxy(upstream).start()`; `host` is `127.0.0.1:PORT`; `stop()` closes it."""

    def __init__(self, upstream: str, rules: list[Rule] | None = None) -> None:
        self.upstream = upstream
        self.rules = list(rules or [])
        self.log = Log()
        self._lock = threading.Lock()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self._server = Server((LOOPBACK, 0), Handler)
        self.host = f"{LOOPBACK}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def _pick(self, method: str, path: str) -> Rule | None:
        with self._lock:
            for r in self.rules:
                if r.matches(method, path):
                    r.hits += 1
                    self.log.entries.append((method, path, r.action))
                    return r
        self.log.entries.append((method, path, "forward"))
        return None

    # -- HTTP plumbing -----------------------------------------------------------------------------
    def _serve(self, sock: socket.socket) -> None:
        rfile = sock.makefile("rb")
        try:
            if rfile.peek(1)[:1] == b"\x16":  # a TLS ClientHello (acx probes loopback HTTPS first): answer
                sock.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")  # as a plain server
                return  # does, at once, instead of waiting for a line that never comes
            while True:
                line = rfile.readline(65537)
                if not line:
                    return
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers: list[tuple[str, str]] = []
                while True:
                    h = rfile.readline(65537)
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers.append((k.strip(), v.strip()))
                hmap = {k.lower(): v for k, v in headers}
                length = int(hmap.get("content-length", "0") or 0)
                rule = self._pick(method, target)
                if rule is not None and rule.action == "reset_body":
                    rfile.read(max(0, length // 2))
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()
                    return
                body = self._read_body(rfile, hmap, length)
                if rule is not None and rule.action in (
                    "status",
                    "redirect_loop",
                    "bad_auth",
                    "oversize",
                    "bad_json",
                    "fake_ok",
                ):
                    self._synthetic(sock, rule, method, target)
                    continue
                status, reason, rheaders, rbody = self._forward(method, target, headers, body)
                if rule is not None and rule.action == "truncate":
                    self._send(sock, status, reason, rheaders, rbody[: len(rbody) // 2], length=len(rbody))
                    sock.close()
                    return
                if rule is not None and rule.action == "corrupt" and rbody:
                    rbody = bytes([rbody[0] ^ 0x01]) + rbody[1:]
                if rule is not None and rule.action == "extra":
                    rbody = rbody + b"!"
                if rule is not None and rule.action == "drip":
                    if method == "HEAD":
                        self._send(sock, status, reason, rheaders, rbody, head=True)
                    else:
                        self._send_drip(sock, status, reason, rheaders, rbody, rule.delay)
                    continue
                self._send(sock, status, reason, rheaders, rbody, head=(method == "HEAD"))
        except (ConnectionError, OSError, ValueError):
            return
        finally:
            with contextlib.suppress(OSError):
                sock.close()

    @staticmethod
    def _read_body(rfile: object, hmap: dict[str, str], length: int) -> bytes:
        read = rfile.read  # type: ignore[attr-defined]
        if hmap.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)  # type: ignore[attr-defined]
                if size == 0:
                    rfile.readline()  # type: ignore[attr-defined]
                    return out
                out += read(size)
                rfile.readline()  # type: ignore[attr-defined]
        return bytes(read(length)) if length else b""

    def _forward(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        host, port = self.upstream.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for k, v in headers:
                if k.lower() in ("content-length", "transfer-encoding", "connection"):
                    continue
                conn.putheader(k, v)
            if body or method in ("PUT", "POST", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            resp = conn.getresponse()
            data = resp.read()
            rheaders = [
                (k, v) for k, v in resp.getheaders() if k.lower() not in ("transfer-encoding", "connection")
            ]
            return resp.status, resp.reason, rheaders, data
        finally:
            conn.close()

    @staticmethod
    def _send(
        sock: socket.socket,
        status: int,
        reason: str,
        headers: list[tuple[str, str]],
        body: bytes,
        *,
        length: int | None = None,
        head: bool = False,
    ) -> None:
        lines = [f"HTTP/1.1 {status} {reason}"]
        have_length = False
        for k, v in headers:
            if k.lower() == "content-length":
                have_length = True
                if not head:
                    v = str(length if length is not None else len(body))
            lines.append(f"{k}: {v}")
        if not have_length:
            lines.append(f"Content-Length: {length if length is not None else len(body)}")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head else body))

    @classmethod
    def _send_drip(cls, sock: socket.socket, status: int, reason: str, headers: list[tuple[str, str]],
                   body: bytes, delay: float) -> None:
        """Headers at once, then the body in 16 slices `delay` seconds apart (bounded: 16 sleeps)."""
        lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers
                                                   if k.lower() != "content-length"]
        lines.append(f"Content-Length: {len(body)}")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        step = max(1, -(-len(body) // 16))
        for i in range(0, len(body), step):
            time.sleep(delay)
            sock.sendall(body[i : i + step])

    def _synthetic(self, sock: socket.socket, rule: Rule, method: str, target: str) -> None:
        headers: list[tuple[str, str]] = []
        body = b""
        status, reason = rule.status, "Fault"
        if rule.action == "status":
            if rule.retry_after is not None:
                headers.append(("Retry-After", rule.retry_after))
            body = b'{"errors":[{"code":"UNAVAILABLE","message":"injected"}]}'
        elif rule.action == "redirect_loop":
            status, reason = 307, "Temporary Redirect"
            headers.append(("Location", target))
        elif rule.action == "bad_auth":
            status, reason = 401, "Unauthorized"
            headers.append(("WWW-Authenticate", 'Bearer realm="not-a-url" service=,,="'))
        elif rule.action == "oversize":
            status, reason = 200, "OK"
            body = b'{"schemaVersion":2,"pad":"' + b"x" * (4 * 1024 * 1024 + 10) + b'"}'
            headers.append(("Content-Type", "application/vnd.oci.image.manifest.v1+json"))
        elif rule.action == "fake_ok":
            status, reason = 201, "Created"
        elif rule.action == "bad_json":
            status, reason = 200, "OK"
            body = b'{"schemaVersion":2,"mediaType":'
            headers.append(("Content-Type", "application/vnd.oci.image.manifest.v1+json"))
        self._send(sock, status, reason, headers, body, head=(method == "HEAD"))
