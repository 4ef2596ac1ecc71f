"""Every read bounded, every walk capped, measured in a subprocess against a malicious loopback
registry: a 300 MB error body, an endless body and a 1-byte-per-5-s body end in a typed error
within the deadline and under 150 MB RSS; 10,000 referrers and a 1,500-deep referrer chain end
typed (never exit 70); a full disk (RLIMIT_FSIZE) is writeback_failed with nothing left behind."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.evilregistry import OCI_MANIFEST, EvilServer, RefChain, Reply, Request, drip, endless, huge

MB = 1024 * 1024
RSS_LIMIT_KB = 150 * 1024

PROBE = r"""
import json, sys, time
from acxoci.errors import AcxError
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.target import fetch_bytes

host, what, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
opts = RemoteOptions(plain_http=True, max_retries=0, deadline=deadline, timeout=30.0)
t = RegistryTarget(parse_reference(host + "/evil/repo:v1"), opts)
t0 = time.monotonic()
try:
    if what == "tags":
        t.tags()
    elif what == "manifest":
        fetch_bytes(t, Descriptor("application/vnd.oci.image.manifest.v1+json", "sha256:" + "a" * 64, 4000))
    elif what == "blob":
        with t.fetch(Descriptor("application/octet-stream", "sha256:" + "b" * 64, 1024 * 1024)) as r:
            r.read_all()
    out = {"kind": None}
except AcxError as e:
    out = {"kind": e.kind, "message": e.message}
out["seconds"] = time.monotonic() - t0
# peak RSS of this program's own address space (VmHWM): a wait4 ru_maxrss would also count the
# pages of the big pytest process this child was forked from
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
out["rss_kb"] = int(hwm[0].split()[1]) if hwm else 0
print(json.dumps(out))
"""


def probe(host: str, what: str, deadline: float = 6.0) -> tuple[dict[str, Any], int, float]:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", PROBE, host, what, str(deadline)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    guard = threading.Timer(90, proc.kill)  # an unbounded client must fail the test, not hang it
    guard.start()
    _, status, _usage = os.wait4(proc.pid, 0)
    guard.cancel()
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    assert os.waitstatus_to_exitcode(status) == 0, err[-2000:]
    data = json.loads(out)
    return data, int(data["rss_kb"]), time.monotonic() - t0


@pytest.fixture
def evil() -> Iterator[EvilServer]:
    def script(req: Request) -> Reply:
        path = req.path.split("?", 1)[0]
        if path.endswith("/tags/list"):
            mode = server.mode
            if mode == "error300":
                return Reply(400, {"Content-Type": "text/plain"}, huge(300 * MB), length=300 * MB)
            if mode == "endless":
                return Reply(200, {"Content-Type": "application/json"}, endless())
            return Reply(200, {"Content-Type": "application/json"}, drip(), length=10_000)
        if "/manifests/" in path:
            return Reply(200, {"Content-Type": OCI_MANIFEST}, drip(), length=4000)
        if "/blobs/" in path:
            return Reply(200, {"Content-Type": "application/octet-stream"}, drip(), length=MB)
        return Reply(200, {}, b"{}")

    server = EvilServer(script)
    server.mode = "error300"  # type: ignore[attr-defined]
    yield server
    server.stop()


def test_300mb_error_body_is_cut(evil: EvilServer) -> None:
    out, rss, _ = probe(evil.host, "tags")
    assert out["kind"] == "registry_protocol" and "HTTP 400" in out["message"]
    assert out["seconds"] < 6 and rss < RSS_LIMIT_KB


def test_endless_body_is_capped(evil: EvilServer) -> None:
    evil.mode = "endless"  # type: ignore[attr-defined]
    out, rss, _ = probe(evil.host, "tags")
    assert out["kind"] == "limit_exceeded", out
    assert out["seconds"] < 6 and rss < RSS_LIMIT_KB


@pytest.mark.parametrize("what", ["tags", "manifest"])
def test_drip_body_ends_within_the_deadline(evil: EvilServer, what: str) -> None:
    evil.mode = "drip"  # type: ignore[attr-defined]
    out, rss, _took = probe(evil.host, what, deadline=3.0)
    assert out["kind"] == "host_failure" and "within 3s" in out["message"], out
    assert 2.5 < out["seconds"] < 6 and rss < RSS_LIMIT_KB


def test_drip_blob_is_held_to_a_minimum_rate(evil: EvilServer) -> None:
    """A blob gets the deadline plus size / min_rate (1 MiB at 256 KiB/s: +4 s), then ends typed."""
    evil.mode = "drip"  # type: ignore[attr-defined]
    out, rss, _ = probe(evil.host, "blob", deadline=2.0)
    assert out["kind"] == "host_failure" and "within 6s" in out["message"], out
    assert 5.5 < out["seconds"] < 9 and rss < RSS_LIMIT_KB


def test_cli_tags_300mb_error_body(evil: EvilServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = acx_json(capsys, "tags", f"{evil.host}/evil/repo", "--plain-http")
    assert code == 3 and data["error"]["kind"] == "registry_protocol"


@pytest.fixture
def chain_registry(request: pytest.FixtureRequest) -> Iterator[EvilServer]:
    depth, fanout = request.param
    chain = RefChain(depth, fanout)
    server = EvilServer(chain.script)
    yield server
    server.stop()


@pytest.mark.parametrize("chain_registry", [(1, 10_000)], indirect=True)
def test_ten_thousand_referrers_are_refused(
    chain_registry: EvilServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"{chain_registry.host}/evil/repo:v1"
    code, data = acx_json(capsys, "discover", ref, "--plain-http")
    assert code == 3 and data["error"]["kind"] == "limit_exceeded", data
    code, data = acx_json(capsys, "cp", "-r", ref, f"oci-layout:{tmp_path / 'out'}:v1", "--from-plain-http")
    assert code == 3 and data["error"]["kind"] == "limit_exceeded", data


@pytest.mark.parametrize("chain_registry", [(1500, 1)], indirect=True)
def test_1500_deep_referrer_chain_is_refused(
    chain_registry: EvilServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"{chain_registry.host}/evil/repo:v1"
    code, data = acx_json(capsys, "cp", "-r", ref, f"oci-layout:{tmp_path / 'out'}:v1", "--from-plain-http")
    assert code == 3 and data["error"]["kind"] == "limit_exceeded", data
    code, data = acx_json(capsys, "discover", ref, "--plain-http", "--depth", "5000")
    assert code == 3 and data["error"]["kind"] == "limit_exceeded", data


def test_disk_full_is_writeback_failed_and_leaves_nothing(
    tmp_path: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    shutil.copy(vectors_dir / "sample" / "sample.acx", tmp_path / "cart.acx")
    code, _ = acx_json(capsys, "push", str(tmp_path / "cart.acx"), f"oci-layout:{src}:v1")
    assert code == 0
    out = tmp_path / "out"
    out.mkdir()
    dst = tmp_path / "dst"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (32 * 1024, 32 * 1024))

    acx = [sys.executable, "-m", "acxoci", "--json"]
    for args in (
        ["pull", f"oci-layout:{src}:v1", "-o", str(out), "--no-verify"],
        ["cp", f"oci-layout:{src}:v1", f"oci-layout:{dst}:v1"],
    ):
        proc = subprocess.run(
            [*acx, *args],
            capture_output=True,
            text=True,
            cwd=str(REPO),
            preexec_fn=limit,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=120,
        )
        assert proc.returncode == 7, proc.stdout + proc.stderr
        assert json.loads(proc.stdout)["error"]["kind"] == "writeback_failed"
    assert list(out.iterdir()) == []
    leftovers = [p for p in dst.rglob("*") if p.is_file() and p.stat().st_size > 32 * 1024 - 1]
    partial = [p for p in dst.rglob("*.part")]
    assert partial == [] and leftovers == []


def test_dripping_headers_end_within_the_deadline() -> None:
    """The deadline covers the status line and headers too (not only the body)."""
    import socket

    from acxoci.oci.errors import DeadlineExceeded
    from acxoci.oci.registry import Transport
    from acxoci.oci.settings import RemoteOptions

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    stop = threading.Event()

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.is_set():
                try:
                    conn.sendall(b"X")
                except OSError:
                    return
                time.sleep(0.5)

    threading.Thread(target=serve, daemon=True).start()
    host = f"127.0.0.1:{srv.getsockname()[1]}"
    t = Transport(host, RemoteOptions(plain_http=True, max_retries=0, deadline=2.0, timeout=30.0))
    t0 = time.monotonic()
    try:
        with pytest.raises(DeadlineExceeded):
            t.request("GET", t.url("/v2/"), scopes=())
        assert time.monotonic() - t0 < 4
    finally:
        stop.set()
        srv.close()
