"""`acx builder` as a real process on 127.0.0.1, spoken to with raw HTTP: it serves only its own
shipped files with the strict headers, answers `POST /api/lint` exactly as `acx workflow lint` /
`acx graph lint` / `digest` / `remix` answer, refuses DNS-rebinding and cross-site requests,
oversized, chunked and non-JSON bodies and every other method, writes nothing, and stops on
SIGTERM with exit 0."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from acxoci.studio.server import CSP
from tests.harness.cli import acx_json
from tests.harness.installs import tree_hash
from tests.harness.web import Builder, start_builder


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Builder]:
    work = tmp_path_factory.mktemp("builder")
    b = start_builder(work)
    yield b
    b.stop()


Answer = tuple[int, dict[str, str], bytes]


def request(b: Builder, method: str, path: str, body: bytes | None = None, *,
            headers: dict[str, str] | None = None, host: str | None = None) -> Answer:
    """One raw request; `host` replaces the Host header (None: the builder's own)."""
    conn = http.client.HTTPConnection("127.0.0.1", b.port, timeout=10)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host if host is not None else f"127.0.0.1:{b.port}")
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    if body is not None and "Content-Length" not in (headers or {}):
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def lint(b: Builder, body: bytes, query: str = "", **headers: str) -> tuple[int, Any]:
    h = {"Origin": f"http://127.0.0.1:{b.port}", "Content-Type": "application/json", **headers}
    status, _, data = request(b, "POST", "/api/lint" + query, body, headers=h)
    return status, json.loads(data)


def assert_strict_headers(h: dict[str, str]) -> None:
    assert h["content-security-policy"] == CSP
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "frame-ancestors 'none'" in CSP
    assert h["referrer-policy"] == "no-referrer" and h["x-content-type-options"] == "nosniff"
    assert h["x-frame-options"] == "DENY" and h["cache-control"] == "no-store"


def test_serves_its_own_files_with_strict_headers(builder: Builder) -> None:
    status, h, body = request(builder, "GET", "/")
    assert status == 200 and h["content-type"].startswith("text/html") and b"/studio.js" in body
    assert_strict_headers(h)
    assert b"<script>" not in body and b"onclick" not in body  # no inline script for the CSP to allow
    status, h, _ = request(builder, "GET", "/studio.js")
    assert status == 200 and h["content-type"].startswith("text/javascript")
    for path in ("/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/static/index.html",
                 "/studio.js/..", "//etc/passwd", "/index.html%00", "/.git/config", "/api/lint"):
        status, h, _ = request(builder, "GET", path)
        assert status == 404, path
        assert_strict_headers(h)


def test_host_must_name_the_builder(builder: Builder) -> None:
    """DNS rebinding: a page at evil.example resolved to 127.0.0.1 sends Host: evil.example."""
    for host in (f"evil.example:{builder.port}", "127.0.0.1", f"127.0.0.1:{builder.port + 1}",
                 f"localhost.evil.example:{builder.port}", ""):
        status, h, _ = request(builder, "GET", "/", host=host)
        assert status == 421, host
        assert_strict_headers(h)
    status, _, _ = request(builder, "GET", "/", host=f"localhost:{builder.port}")
    assert status == 200


def test_the_endpoint_answers_only_its_own_page(builder: Builder) -> None:
    doc = Path(os.environ.get("ACX_SHARED_DIR", "")).joinpath("vectors/workflow/team.cal.json")
    body = doc.read_bytes() if doc.is_file() else b"{}"
    mine = f"http://127.0.0.1:{builder.port}"
    cases: list[tuple[dict[str, str], int]] = [
        ({"Content-Type": "application/json"}, 403),  # no Origin
        ({"Origin": "http://evil.example", "Content-Type": "application/json"}, 403),
        ({"Origin": "null", "Content-Type": "application/json"}, 403),
        # an Origin naming the builder by another name than the Host it was asked under
        ({"Origin": f"http://localhost:{builder.port}", "Content-Type": "application/json"}, 403),
        ({"Origin": mine, "Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403),
        ({"Origin": mine, "Content-Type": "text/plain"}, 415),  # a simple, un-preflighted form post
        ({"Origin": mine, "Content-Type": "application/x-www-form-urlencoded"}, 415),
    ]
    for headers, expected in cases:
        status, h, _ = request(builder, "POST", "/api/lint", body, headers=headers)
        assert status == expected, headers
        assert_strict_headers(h)
    status, _, _ = request(builder, "POST", "/api/lint", body, host=f"evil.example:{builder.port}",
                           headers={"Origin": f"http://evil.example:{builder.port}",
                                    "Content-Type": "application/json"})
    assert status == 421
    status, _, _ = request(builder, "POST", "/other", body, headers={"Origin": mine})
    assert status == 405
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"):
        status, h, _ = request(builder, method, "/api/lint", b"", headers={"Origin": mine})
        assert status == 405, method
        assert_strict_headers(h)


def test_body_limits_are_checked_before_reading(builder: Builder) -> None:
    mine = {"Origin": f"http://127.0.0.1:{builder.port}", "Content-Type": "application/json"}
    # a declared 2 GiB body is refused from the headers alone (nothing is read)
    for declared in (2**31, 2**20 + 1):
        status, _, _ = request(builder, "POST", "/api/lint", b"",
                               headers={**mine, "Content-Length": str(declared)})
        assert status == 413
    status, answer = lint(builder, b" " * (2**20 - 2) + b"{}")  # exactly 1 MiB is analysed
    assert status == 200 and answer["kind"] == "workflow"
    status, _, _ = request(builder, "POST", "/api/lint", b"", headers={**mine, "Transfer-Encoding": "chunked",
                                                                     "Content-Length": "0"})
    assert status == 411
    status, _, _ = request(builder, "POST", "/api/lint", b"{}", headers={**mine, "Content-Length": "-1"})
    assert status == 411
    for bad in (b"not json", b'{"a": 1, "a": 2}', b"[1, 2]", b"\xff\xfe", b'{"x": 1e999}'):
        status, answer = lint(builder, bad)
        assert status == 400 and answer["error"]["kind"] == "invalid_input", bad
    status, answer = lint(builder, b"{}", "?remix=steal")
    assert status == 400 and "relation" in answer["error"]["message"]


def test_a_repeated_host_or_origin_is_refused(builder: Builder) -> None:
    mine = f"127.0.0.1:{builder.port}"
    conn = http.client.HTTPConnection("127.0.0.1", builder.port, timeout=10)
    conn.putrequest("GET", "/", skip_host=True)
    conn.putheader("Host", mine)
    conn.putheader("Host", "evil.example")
    conn.endheaders()
    assert conn.getresponse().status == 421
    conn.close()
    body = b"{}"
    conn = http.client.HTTPConnection("127.0.0.1", builder.port, timeout=10)
    conn.putrequest("POST", "/api/lint", skip_host=True)
    for k, v in (("Host", mine), ("Origin", f"http://{mine}"), ("Origin", "http://evil.example"),
                 ("Content-Type", "application/json"), ("Content-Length", "2")):
        conn.putheader(k, v)
    conn.endheaders(body)
    assert conn.getresponse().status == 403
    conn.close()


def test_a_body_that_trickles_in_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole body must arrive within the request deadline (here shortened), however slowly
    each byte comes; the server (in this process, on a real socket) answers 408 and goes on."""
    import threading

    from acxoci.studio import server as S

    monkeypatch.setattr(S, "REQUEST_TIMEOUT", 0.6)
    monkeypatch.setattr(S.StudioHandler, "timeout", 0.3)
    srv = S.StudioServer(0)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            head = (b"POST /api/lint HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: http://127.0.0.1:%d\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            s.sendall(head % (srv.port, srv.port))
            for _ in range(3):
                time.sleep(0.25)
                s.sendall(b" ")
            answer = s.recv(4096)
        assert answer.startswith(b"HTTP/1.0 408"), answer[:80]
        b = Builder(srv.url, srv.port, None, Path())  # type: ignore[arg-type]
        assert request(b, "GET", "/")[0] == 200
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_slow_client_does_not_hold_the_builder(builder: Builder) -> None:
    """A client that sends half a request and waits does not stop the next one being served."""
    with socket.create_connection(("127.0.0.1", builder.port), timeout=5) as slow:
        slow.sendall(b"POST /api/lint HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % builder.port)
        status, _, _ = request(builder, "GET", "/")
        assert status == 200


@pytest.mark.parametrize("publish", [False, True])
def test_lint_answers_as_the_command_line(builder: Builder, vectors_dir: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str], publish: bool) -> None:
    files = [*sorted((vectors_dir / "workflow" / "lint").glob("*.cal.json")),
             vectors_dir / "workflow" / "team.cal.json", vectors_dir / "workflow" / "team.tampered.cal.json",
             vectors_dir / "graph" / "product-delivery.agent-graph.json"]
    for f in files:
        graph = f.name.endswith(".agent-graph.json")
        flag = ["--publish"] if publish else []
        code, cli = acx_json(capsys, "graph" if graph else "workflow", "lint", str(f), *flag)
        status, answer = lint(builder, f.read_bytes(), "?publish=1" if publish else "")
        assert status == 200
        assert answer["kind"] == ("agent-graph" if graph else "workflow")
        assert [i["text"] for i in answer["lint"]["issues"]] == [i["text"] for i in cli["issues"]], f.name
        assert all("value" not in i for i in answer["lint"]["issues"])  # the text carries it, cut short
        assert answer["lint"]["ok"] == cli["ok"] == (code == 0), f.name
        _, digest = acx_json(capsys, "graph" if graph else "workflow", "digest", str(f))
        assert answer["digest"] == digest["digest"]


def test_signature_and_remix_as_the_command_line(builder: Builder, vectors_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    parent = vectors_dir / "workflow" / "team.signed.cal.json"
    status, answer = lint(builder, parent.read_bytes(), "?remix=fork")
    assert status == 200 and answer["signature"]["ok"] and answer["signature"]["trust"] == "portable"
    code, _ = acx_json(capsys, "workflow", "remix", str(parent), "-o", str(tmp_path / "cli.cal.json"),
                       "--relation", "fork")
    assert code == 0
    assert answer["remix"]["draft"] == json.loads((tmp_path / "cli.cal.json").read_text())
    _, digest = acx_json(capsys, "workflow", "digest", str(parent))
    assert answer["remix"]["parent"]["digest"] == digest["digest"]
    # a tampered parent is not remixed (as `acx workflow remix` refuses it)
    tampered = vectors_dir / "workflow" / "team.tampered.cal.json"
    status, answer = lint(builder, tampered.read_bytes(), "?remix=remix")
    assert status == 200 and answer["signature"]["trust"] == "tampered" and "error" in answer["remix"]
    code, _ = acx_json(capsys, "workflow", "remix", str(tampered), "-o", str(tmp_path / "t.cal.json"))
    assert code != 0
    # an unsigned document cannot be remixed
    status, answer = lint(builder, (vectors_dir / "workflow" / "team.cal.json").read_bytes(), "?remix=remix")
    assert "error" in answer["remix"] and answer["signature"] is None
    # a graph parent: the lineage names an agent-graph, pinned to `acx graph digest`
    gparent = vectors_dir / "graph" / "product-delivery.signed.agent-graph.json"
    status, answer = lint(builder, gparent.read_bytes(), "?remix=remix")
    _, gd = acx_json(capsys, "graph", "digest", str(gparent))
    p = answer["remix"]["parent"]
    assert p["artifactType"] == "agent-graph" and p["digest"] == gd["digest"] and p["relation"] == "remix"
    assert "integrity" not in answer["remix"]["draft"]
    draft = tmp_path / "draft.agent-graph.json"
    draft.write_text(json.dumps(answer["remix"]["draft"]))
    code, out = acx_json(capsys, "graph", "lint", str(draft), "--publish")
    assert code == 0, out


def test_builder_writes_nothing_and_stops_on_sigterm(tmp_path: Path, vectors_dir: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    b = start_builder(work)
    try:
        before = tree_hash(work)
        for f in (vectors_dir / "workflow").glob("*.json"):
            lint(b, f.read_bytes(), "?remix=remix&publish=1")
        request(b, "GET", "/")
        assert tree_hash(work) == before  # only the log the test itself opened is there
        assert b.url.startswith("http://127.0.0.1:")
        # loopback only: the listening socket is bound to 127.0.0.1, not to every address
        listening = Path(f"/proc/{b.proc.pid}/net/tcp").read_text() if Path("/proc").is_dir() else ""
        if listening:
            ours = [ln for ln in listening.splitlines()[1:] if ln.split()[1].endswith(f":{b.port:04X}")
                    and ln.split()[3] == "0A"]
            assert ours and all(ln.split()[1].startswith("0100007F:") for ln in ours)
        os.kill(b.proc.pid, signal.SIGTERM)
        assert b.proc.wait(timeout=10) == 0
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", b.port), timeout=2).close()
    finally:
        b.stop()
    c = start_builder(work)  # Ctrl-C ends it the same way
    try:
        os.kill(c.proc.pid, signal.SIGINT)
        assert c.proc.wait(timeout=10) == 0
    finally:
        c.stop()


def test_a_busy_port_is_a_typed_error(builder: Builder, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = acx_json(capsys, "builder", "--port", str(builder.port))
    assert code == 9 and out["error"]["kind"] == "blocked" and str(builder.port) in out["error"]["message"]


# ---- the review's HTTP findings ------------------------------------------------------------------


def raw(port: int, data: bytes, *, timeout: float = 10) -> bytes:
    """Send `data` as is and read the whole answer (until the builder closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def head_of(answer: bytes) -> tuple[int, dict[str, str]]:
    """(status, headers) of a raw answer; fails when it has no HTTP status line."""
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    assert head[0].startswith("HTTP/1."), answer[:200]
    return int(head[0].split()[1]), {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in head[1:])}


@contextmanager
def in_process(monkeypatch: pytest.MonkeyPatch, **limits: Any) -> Iterator[Any]:
    """A StudioServer in this process on a real socket, with module limits overridden."""
    import threading

    from acxoci.studio import server as S

    for name, value in limits.items():
        monkeypatch.setattr(S, name, value)
    srv = S.StudioServer(0)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_malformed_request_gets_a_status_line_and_the_headers(builder: Builder) -> None:
    mine = b"127.0.0.1:%d" % builder.port
    for data in (b"GARBAGE\r\n\r\n", b"GET /\r\n\r\n",
                 b"GET / HTTP/9.9<b>x</b>\r\nHost: " + mine + b"\r\n\r\n",
                 b"GET / HTTP/2.0\r\nHost: " + mine + b"\r\n\r\n", b"GET / HTTP/1.1 extra\r\n\r\n"):
        status, h = head_of(raw(builder.port, data))
        assert 400 <= status < 600, data
        assert_strict_headers(h)
        assert h["content-type"] == "application/json", data


def test_the_host_is_checked_before_the_method(builder: Builder) -> None:
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "FOO"):
        status, h, _ = request(builder, method, "/", host="evil.example")
        assert status == 421, method
        assert_strict_headers(h)
    status, h, _ = request(builder, "FOO", "/")
    assert status == 501
    assert_strict_headers(h)


def test_only_origin_form_targets_and_one_content_length(builder: Builder) -> None:
    mine = f"127.0.0.1:{builder.port}"
    for target in ("http://evil.example/", f"http://{mine}/", "*", "evil.example:443"):
        status, h, _ = request(builder, "GET", target)
        assert status == 400, target
        assert_strict_headers(h)
    data = (f"POST /api/lint HTTP/1.1\r\nHost: {mine}\r\nOrigin: http://{mine}\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 100\r\n\r\n{}").encode()
    status, h = head_of(raw(builder.port, data))
    assert status == 400
    assert_strict_headers(h)


def test_a_request_has_one_deadline_however_its_headers_trickle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each header byte arrives well within the per-read timeout; the request as a whole does not
    arrive within REQUEST_TIMEOUT (here shortened), and the connection is closed then."""
    from acxoci.studio import server as S

    monkeypatch.setattr(S.StudioHandler, "timeout", 0.5)
    with in_process(monkeypatch, REQUEST_TIMEOUT=0.8) as srv:
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % srv.port)
            closed = False
            while time.monotonic() - start < 4:
                time.sleep(0.2)
                try:
                    s.sendall(b"a")
                    s.setblocking(False)
                    closed = s.recv(1) == b""
                except BlockingIOError:
                    pass
                except OSError:
                    closed = True
                finally:
                    s.setblocking(True)
                if closed:
                    break
        assert closed and time.monotonic() - start < 2.5


def test_connections_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    with in_process(monkeypatch, MAX_CONNECTIONS=2) as srv:
        held = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(2)]
        for s in held:
            s.sendall(b"GET / HTTP/1.1\r\n")  # half a request: each holds its connection
        time.sleep(0.3)
        status, h = head_of(raw(srv.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % srv.port))
        assert status == 503
        assert_strict_headers(h)
        for s in held:
            s.close()
        b = Builder(srv.url, srv.port, None, Path())  # type: ignore[arg-type]
        deadline = time.monotonic() + 5
        while request(b, "GET", "/")[0] != 200:
            assert time.monotonic() < deadline, "the closed connections were never released"
            time.sleep(0.1)


def test_a_failing_handler_answers_500_with_the_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    from acxoci.studio import server as S

    def analyse_with_a_bug(*args: Any, **kwargs: Any) -> Any:  # a stand-in for any handler bug
        raise TypeError("a stand-in bug")

    monkeypatch.setattr(S, "analyse", analyse_with_a_bug)
    with in_process(monkeypatch) as srv:
        b = Builder(srv.url, srv.port, None, Path())  # type: ignore[arg-type]
        status, h, body = request(b, "POST", "/api/lint", b"{}", headers={
            "Origin": f"http://127.0.0.1:{srv.port}", "Content-Type": "application/json"})
        assert status == 500 and json.loads(body)["error"]["kind"] == "internal"
        assert_strict_headers(h)
        assert request(b, "GET", "/")[0] == 200
