"""`acx install` from a real registry (distribution 2.8 on loopback): a full install with a level
credential attached as a referrer, and a fault-injecting proxy between acx and the registry
(connection resets, truncated bodies, 5xx, corrupted bytes) that never yields a partial or
unverified install; a retry through a healthy proxy completes."""

from __future__ import annotations

import http.server
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from acxoci.attest.keys import generate_ed25519
from acxoci.errors import AcxError
from acxoci.install.install import install
from acxoci.install.reverify import verify_item
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.oci.copy import copy
from acxoci.oci.layout import LayoutStore
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.target import RemoteOptions
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    attach_level,
    issue_level,
    level_policy,
    make_cartridge,
    push_cartridge,
    registry_entry,
    tree_hash,
    write_policy,
    write_registry,
)

pytestmark = pytest.mark.interop
FAST = RemoteOptions(plain_http=True, max_retries=1, max_retry_seconds=0.5, timeout=10)


@dataclass
class Faults:
    """Which fault to inject into how many more blob/manifest GETs."""

    mode: str = "none"  # none | reset | truncate | 5xx | corrupt
    remaining: int = 0
    injected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, path: str) -> str:
        with self.lock:
            if self.mode == "none" or self.remaining <= 0 or "/v2/" not in path or path.endswith("/v2/"):
                return "none"
            if "/blobs/" not in path and "/manifests/" not in path:
                return "none"
            self.remaining -= 1
            self.injected.append(f"{self.mode} {path}")
            return self.mode


def _proxy(upstream: str, faults: Faults) -> tuple[socketserver.ThreadingTCPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            fault = faults.take(self.path) if self.command == "GET" else "none"
            if fault == "reset":
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                )
                self.connection.close()
                self.close_connection = True
                return
            if fault == "5xx":
                msg = b'{"errors":[{"code":"UNAVAILABLE","message":"injected"}]}'
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
                return
            resp = requests.request(
                self.command,
                f"http://{upstream}{self.path}",
                headers=headers,
                data=body,
                allow_redirects=False,
                timeout=30,
            )
            data = resp.content
            if fault == "corrupt" and data:
                data = data[:-1] + bytes([data[-1] ^ 0x01])
            self.send_response(resp.status_code)
            for k, v in resp.headers.items():
                if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                    self.send_header(k, v)
            length = resp.headers.get("Content-Length", "0") if self.command == "HEAD" else str(len(data))
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command == "HEAD":
                return
            if fault == "truncate":
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.wfile.write(data)

        do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


@dataclass
class Remote:
    tmp: Path
    ref: str
    policy: Path
    registry_host: str
    trust: Path


@pytest.fixture
def remote(tmp_path: Path, vectors_dir: Path, distribution_registry: Any) -> Remote:
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    layout = tmp_path / "layout"
    desc = push_cartridge(layout, acx, "v1")
    lv = issue_level(tmp_path, acx)
    attach_level(layout, desc, lv.credential)
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    host = distribution_registry.host
    dst = RegistryTarget(parse_reference(f"{host}/acx/sample:v1"), FAST)
    copy(LayoutStore(layout), dst, "v1")
    return Remote(tmp_path, f"{host}/acx/sample:v1", level_policy(tmp_path, reg, lv, "mid"), host, reg)


@pytest.fixture
def proxy(remote: Remote) -> Iterator[tuple[Faults, str]]:
    faults = Faults()
    server, addr = _proxy(remote.registry_host, faults)
    try:
        yield faults, addr
    finally:
        server.shutdown()
        server.server_close()


def test_install_from_registry_with_level_referrer(remote: Remote) -> None:
    store = Store(remote.tmp / "store")
    out = install(remote.ref, policy=load_policy(remote.policy, now=NOW), store=store, now=NOW, remote=FAST)
    assert out.status == "installed", [c.to_json() for c in out.failed]
    assert {c.id: c.status for c in out.checks}["level"] == "pass"
    item = store.require(out.name or "")
    assert item.record["repository"] == remote.ref.rsplit(":", 1)[0]
    assert verify_item(item, load_policy(remote.policy, now=NOW), NOW).ok


@pytest.mark.parametrize("mode", ["reset", "truncate", "5xx", "corrupt"])
def test_faults_never_yield_a_partial_or_unverified_install(
    remote: Remote, proxy: tuple[Faults, str], mode: str
) -> None:
    faults, addr = proxy
    store = Store(remote.tmp / "store")
    ref = remote.ref.replace(remote.registry_host, addr)
    policy = load_policy(remote.policy, now=NOW)
    outcomes: list[str] = []
    for budget in (1, 2, 3, 5, 8, 13):  # fault the first `budget` GETs of each attempt
        faults.mode, faults.remaining = mode, budget
        before = tree_hash(store.root)
        try:
            out = install(ref, policy=policy, store=store, now=NOW, remote=FAST)
            outcomes.append(out.status)
        except AcxError as exc:
            outcomes.append(f"error:{exc.kind}")
            assert tree_hash(store.root) == before, "a failed install changed the store"
            continue
        if out.status == "refused":
            assert tree_hash(store.root) == before
        for item in store.all_items():  # whatever is there is complete and verifies
            assert verify_item(item, policy, NOW).files_ok
            assert all(c["status"] in ("pass", "skip") for c in item.record["checks"])
        if out.status == "installed":
            with store.transaction() as txn:  # start over so the next fault pattern is tried too
                txn.uninstall(out.name or "")
    assert faults.injected, "the proxy injected nothing"
    if mode == "corrupt":  # altered bytes are never installed: each attempt is a refusal
        assert outcomes == ["refused"] * len(outcomes)
    if mode == "truncate":  # a cut transfer is a retryable transport failure, not a verdict
        assert set(outcomes) == {"error:host_failure"}
    assert any(o != "installed" for o in outcomes), outcomes
    faults.mode = "none"
    final = install(ref, policy=policy, store=store, now=NOW, remote=FAST)
    assert final.status == "installed", ([(c.id, c.reason) for c in final.failed], outcomes)
    assert [i.digest for i in store.list()] == [final.digest]


def test_cli_install_from_registry_plain_http(remote: Remote) -> None:
    import json
    import os
    import subprocess
    import sys

    from tests.harness.env import REPO

    store = remote.tmp / "cli-store"
    policy = write_policy(
        remote.tmp / "cli.yaml", {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(remote.trust)]}]}
    )  # no level: the fixture's credential is dated at the tests' fixed NOW
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACX_TEST_")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "acxoci",
            "install",
            remote.ref,
            "--plain-http",
            "--policy",
            str(policy),
            "--store",
            str(store),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "installed" and out["reference"] == remote.ref
    assert Store(store).require(out["name"]).record["tag"] == "v1"
