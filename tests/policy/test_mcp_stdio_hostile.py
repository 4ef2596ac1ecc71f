"""The MCP stdio client against hostile servers (stand-ins written by the test, not real MCP
servers; named so): a server that never reads what it is sent cannot block a write past the
deadline, whatever it sends (a 2 MB request id, thousands of requests, requests into a pipe shrunk
to one page); an answer is matched to the request by the id's type and value (`true` and `1.0`
are not 1); and at the deadline the server's whole process group is killed at once."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.errors import InvalidInput, TransientError
from acxoci.policy.mcp_stdio import MAX_SERVER_REQUESTS, query_server, same_id
from tests.harness.cli import acx_json
from tests.harness.env import REPO

REVISION = "2025-06-18"
HEAD = "import json, os, signal, sys, time\nout = sys.stdout.buffer\n" \
       "def send(o):\n    out.write(json.dumps(o).encode() + b'\\n'); out.flush()\n"
STAND_INS = {
    # one request whose id is 2 MB: echoing it back would fill the pipe of a server that never reads
    "big-id": "send({'jsonrpc': '2.0', 'id': 'i' * 2_000_000, 'method': 'roots/list'})\ntime.sleep(60)\n",
    # thousands of requests, never reading the refusals
    "request-flood": "for i in range(5000):\n"
                     "    send({'jsonrpc': '2.0', 'id': i, 'method': 'sampling/createMessage',"
                     " 'params': {'x': 'y' * 50}})\ntime.sleep(60)\n",
    # few requests, each refusal long enough to fill a one-page pipe that is never read
    "small-pipe": "import fcntl\nfcntl.fcntl(0, 1031, 4096)\n"  # F_SETPIPE_SZ on its stdin
                  "for i in range(40):\n"
                  "    send({'jsonrpc': '2.0', 'id': 'r' * 250 + str(i), 'method': 'ping'})\n"
                  "time.sleep(60)\n",
}


def stand_in(tmp: Path, name: str, body: str) -> str:
    script = tmp / f"stand_in_{name}.py"
    script.write_text(HEAD + body)
    return f"{sys.executable} {script}"


@pytest.mark.parametrize(("name", "error", "needle"), [
    ("big-id", InvalidInput, "id is not a short string"),
    ("request-flood", InvalidInput, f"more than {MAX_SERVER_REQUESTS} requests"),
    ("small-pipe", TransientError, "did not answer within"),
])
def test_a_server_that_never_reads_cannot_block_past_the_deadline(
    tmp_path: Path, name: str, error: type[Exception], needle: str
) -> None:
    start = time.monotonic()
    with pytest.raises(error) as caught:
        query_server(stand_in(tmp_path, name, STAND_INS[name]), protocol_version=REVISION, timeout=2)
    assert needle in str(caught.value)
    assert time.monotonic() - start < 4.5  # the deadline, and killing the server, not a hang


def answering(first_id: str, second_id: str) -> str:
    """A server that answers initialize with `first_id` and tools/list with `second_id` (Python
    expressions of the request's id)."""
    return (
        "def read():\n    return json.loads(sys.stdin.buffer.readline())\n"
        "req = read()\n"
        f"rid = {first_id}\n"
        "send({'jsonrpc': '2.0', 'id': rid, 'result': {'protocolVersion': req['params']['protocolVersion'],"
        " 'serverInfo': {'name': 'stand-in'}, 'capabilities': {'tools': {}}}})\n"
        "read()\nreq = read()\n"
        f"rid = {second_id}\n"
        "send({'jsonrpc': '2.0', 'id': rid, 'result': {'tools': [{'name': 'fs_read',"
        " 'inputSchema': {'type': 'object'}}]}})\n"
        "time.sleep(0.2)\n"
    )


@pytest.mark.parametrize(("first", "second", "shown"), [
    ("True", "req['id']", "true"),
    ("req['id']", "float(req['id'])", "2.0"),
    ("str(req['id'])", "req['id']", '"1"'),
    ("req['id'] + 7", "req['id']", "8"),
])
def test_an_answer_must_carry_the_very_id_sent(tmp_path: Path, first: str, second: str, shown: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        query_server(stand_in(tmp_path, "wrong-id", answering(first, second)), protocol_version=REVISION,
                     timeout=5)
    assert f"with the id {shown}" in str(caught.value)
    server = query_server(stand_in(tmp_path, "right-id", answering("req['id']", "req['id']")),
                          protocol_version=REVISION, timeout=5)
    assert [t.name for t in server.tools] == ["fs_read"] and server.server_name == "stand-in"
    assert same_id(1, 1) and not same_id(True, 1) and not same_id(1.0, 1) and not same_id("1", 1)


def test_the_process_group_is_killed_at_the_deadline(tmp_path: Path) -> None:
    """A silent server that ignores SIGTERM and has a child in its process group: both are gone
    right after the deadline."""
    pids = tmp_path / "pids"
    body = (
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = os.fork()\n"
        "if child == 0:\n    time.sleep(60)\n    os._exit(0)\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child}}')\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    with pytest.raises(TransientError):
        query_server(stand_in(tmp_path, "stubborn", body), protocol_version=REVISION, timeout=1)
    assert time.monotonic() - start < 2.5  # no grace period once the deadline has passed
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 2
        while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
            assert time.monotonic() < deadline, f"process {pid} survived"
            time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def test_acx_check_reports_a_hostile_server_typed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    cart = tmp_path / "a.acx"
    build_cartridge(pkg, cart, publisher="io.github.example-acx", key=generate_ed25519(),
                    created_at="2026-05-04T09:00:00.000Z")
    start = time.monotonic()
    code, out = acx_json(capsys, "check", str(cart), "--mcp-stdio",
                         stand_in(tmp_path, "big-id", STAND_INS["big-id"]), "--mcp-timeout", "2")
    assert code == 3 and out["error"]["kind"] == "invalid_input", out
    assert time.monotonic() - start < 4.5
