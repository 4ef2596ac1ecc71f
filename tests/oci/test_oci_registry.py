"""Registry client rules that need no real registry: plain-HTTP choice, Retry-After parsing,
credentials never follow a redirect to another host, redirect loops and retry bounds."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from acxoci.oci.errors import RegistryProtocolError, RegistryUnavailable
from acxoci.oci.registry import Transport, retry_after_seconds, use_plain_http
from acxoci.oci.target import RemoteOptions


def test_plain_http_rule() -> None:
    # loopback without a choice: None = HTTPS first, plain HTTP only if the peer is not TLS
    assert use_plain_http("localhost:5000", None) is None
    assert use_plain_http("127.0.0.1:5000", None) is None
    assert use_plain_http("[::1]:5000", None) is None
    assert use_plain_http("registry.example.com", None) is False
    assert not use_plain_http("127.0.0.1:5000", False)
    assert use_plain_http("registry.example.com", True)


def test_retry_after() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0


class _Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def two_hosts() -> Iterator[tuple[_Server, _Server, list[tuple[str, str | None]]]]:
    seen: list[tuple[str, str | None]] = []
    other: list[_Server] = []

    class Other(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(("other", self.headers.get("Authorization")))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    class Reg(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(("registry", self.headers.get("Authorization")))
            if self.headers.get("Authorization") is None:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="t"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path.startswith("/loop"):
                self.send_response(307)
                self.send_header("Location", self.path)
            elif self.path.startswith("/busy"):
                self.send_response(503)
                self.send_header("Retry-After", "1")
            else:
                self.send_response(307)
                self.send_header("Location", f"http://{other[0].host}/blob")
            self.send_header("Content-Length", "0")
            self.end_headers()

    o = _Server(Other)
    other.append(o)
    r = _Server(Reg)
    yield r, o, seen
    r.stop()
    o.stop()


def test_credentials_not_sent_to_another_host(
    two_hosts: tuple[_Server, _Server, list[tuple[str, str | None]]],
) -> None:
    reg, _, seen = two_hosts
    t = Transport(reg.host, RemoteOptions(plain_http=True, username="u", password="p"))
    resp = t.request("GET", t.url("/v2/a/blobs/sha256:x"), scopes=("repository:a:pull",))
    assert resp.status_code == 200 and resp.content == b"ok"
    assert seen[0] == ("registry", None) and seen[1][0] == "registry" and seen[1][1]
    assert seen[-1] == ("other", None)


def test_redirect_loop_and_bounded_retries(
    two_hosts: tuple[_Server, _Server, list[tuple[str, str | None]]],
) -> None:
    reg, _, _ = two_hosts
    t = Transport(reg.host, RemoteOptions(plain_http=True, username="u", password="p", max_retries=3))
    with pytest.raises(RegistryProtocolError):
        t.request("GET", t.url("/loop"), scopes=())
    delays: list[float] = []
    t.sleep = delays.append
    resp = t.request("GET", t.url("/busy"), scopes=())
    assert resp.status_code == 503 and delays == [1.0, 1.0, 1.0]  # Retry-After honoured, count bounded
    t2 = Transport(
        reg.host,
        RemoteOptions(plain_http=True, username="u", password="p", max_retries=10, max_retry_seconds=2.5),
    )
    delays2: list[float] = []
    t2.sleep = delays2.append
    t2.request("GET", t2.url("/busy"), scopes=())
    assert sum(delays2) <= 2.5  # bounded in time too


def test_unreachable_is_transient() -> None:
    t = Transport("127.0.0.1:1", RemoteOptions(plain_http=True, max_retries=1))
    t.sleep = lambda s: None
    with pytest.raises(RegistryUnavailable):
        t.request("GET", t.url("/v2/"), scopes=())
