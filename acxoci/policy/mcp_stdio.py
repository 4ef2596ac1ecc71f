"""A minimal MCP client over stdio for the boot handshake (`--mcp-stdio 'CMD ...'`): start the
server (the command split as a shell would, run without a shell), `initialize` with the
cartridge's protocol revision, `notifications/initialized`, `tools/list` (every page), then stop
it. Bounded: one deadline for the whole exchange, a cap on each message and on all output, on
pages and on tools; the server's stderr is discarded; the process group is killed at the end.
Everything the server says is untrusted JSON, decoded strictly and checked before use."""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acxoci.errors import InvalidInput, NotFound, TransientError, UsageError
from attest.canonical import loads_strict
from attest.errors import AttestError

DEFAULT_TIMEOUT = 30.0
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_PAGES = 32
MAX_TOOLS = 1024
CLIENT_INFO = {"name": "acxoci", "version": "0.1.0"}


@dataclass(frozen=True)
class McpTool:
    """A tool the server lists: its name and input schema (what binding checks)."""

    name: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class McpServer:
    """What the server said: the protocol revision it chose, its name, and its tools."""

    protocol_version: str
    server_name: str | None
    tools: tuple[McpTool, ...]
    command: tuple[str, ...]


def split_command(command: str) -> list[str]:
    """The argv of `command`, split as a POSIX shell would (quotes, escapes); no shell runs it."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--mcp-stdio: cannot split the command: {exc}") from exc
    if not argv:
        raise UsageError("--mcp-stdio needs a command")
    if shutil.which(argv[0]) is None:
        raise NotFound(f"--mcp-stdio: command not found: {argv[0]}")
    return argv


class _Session:
    """One server process and its line-delimited JSON-RPC stream, under one deadline."""

    def __init__(self, argv: list[str], timeout: float) -> None:
        self.argv = argv
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.buf = b""
        self.total = 0
        self.next_id = 0
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, method: str, params: Mapping[str, Any] | None = None, *, notify: bool = False) -> int:
        import json

        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = dict(params)
        if not notify:
            self.next_id += 1
            msg["id"] = self.next_id
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise TransientError(f"the MCP server closed its input ({self._exit()})") from exc
        return self.next_id

    def _exit(self) -> str:
        code = self.proc.poll()
        return "still running" if code is None else f"exit code {code}"

    def _line(self) -> bytes:
        assert self.proc.stdout is not None
        while b"\n" not in self.buf:
            if len(self.buf) > MAX_MESSAGE_BYTES:
                raise InvalidInput(
                    f"an MCP message is larger than {MAX_MESSAGE_BYTES} bytes", where=self.where
                )
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TransientError(
                    f"the MCP server did not answer within {self.timeout:g} s", where=self.where
                )
            if not self.sel.select(left):
                continue
            try:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
            except BlockingIOError:
                continue
            if not chunk:
                raise TransientError(
                    f"the MCP server stopped before answering ({self._exit()})", where=self.where
                )
            self.total += len(chunk)
            if self.total > MAX_OUTPUT_BYTES:
                raise InvalidInput(
                    f"the MCP server wrote more than {MAX_OUTPUT_BYTES} bytes", where=self.where
                )
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    @property
    def where(self) -> str:
        return "mcp-stdio: " + " ".join(self.argv)

    def result(self, want: int) -> Mapping[str, Any]:
        """The result of request `want`; notifications and other traffic are skipped."""
        while True:
            line = self._line().strip()
            if not line:
                continue
            try:
                msg = loads_strict(line)
            except AttestError as exc:
                raise InvalidInput(
                    f"the MCP server wrote a line that is not JSON-RPC: {exc}", where=self.where
                ) from exc
            if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                raise InvalidInput(
                    "the MCP server wrote a message that is not JSON-RPC 2.0", where=self.where
                )
            if "method" in msg and "id" in msg:  # a request to us: we offer no client features
                self._reply_unsupported(msg["id"])
                continue
            if msg.get("id") != want:
                continue
            err = msg.get("error")
            if err is not None:
                text = err.get("message") if isinstance(err, dict) else err
                raise InvalidInput(
                    f"the MCP server answered with an error: {str(text)[:300]}", where=self.where
                )
            res = msg.get("result")
            if not isinstance(res, dict):
                raise InvalidInput("the MCP server's result is not an object", where=self.where)
            return res

    def _reply_unsupported(self, rid: Any) -> None:
        import json

        assert self.proc.stdin is not None
        reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
        with contextlib.suppress(OSError):
            self.proc.stdin.write(json.dumps(reply).encode("utf-8") + b"\n")
            self.proc.stdin.flush()

    def close(self) -> None:
        self.sel.close()
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # anything the server left behind in its group
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _tools(page: Mapping[str, Any], where: str) -> list[McpTool]:
    raw = page.get("tools")
    if not isinstance(raw, list):
        raise InvalidInput("tools/list did not return a tools array", where=where)
    out = []
    for i, t in enumerate(raw):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not t["name"]:
            raise InvalidInput(f"tools[{i}] has no name", where=where)
        schema = t.get("inputSchema")
        if not isinstance(schema, dict):
            raise InvalidInput(f"tool {t['name'][:128]!r} has no inputSchema object", where=where)
        out.append(McpTool(t["name"][:256], schema))
    return out


def query_server(command: str, *, protocol_version: str, timeout: float = DEFAULT_TIMEOUT) -> McpServer:
    """Start the server, initialize it at `protocol_version`, list every tool, stop it."""
    argv = split_command(command)
    session = _Session(argv, timeout)
    try:
        init = session.result(
            session.send(
                "initialize",
                {"protocolVersion": protocol_version, "capabilities": {}, "clientInfo": CLIENT_INFO},
            )
        )
        version = init.get("protocolVersion")
        if not isinstance(version, str) or not version:
            raise InvalidInput("initialize returned no protocolVersion", where=session.where)
        info = init.get("serverInfo")
        name = info.get("name") if isinstance(info, dict) and isinstance(info.get("name"), str) else None
        session.send("notifications/initialized", notify=True)
        tools: list[McpTool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = session.result(session.send("tools/list", {"cursor": cursor} if cursor else None))
            tools += _tools(page, session.where)
            if len(tools) > MAX_TOOLS:
                raise InvalidInput(f"the MCP server lists more than {MAX_TOOLS} tools", where=session.where)
            nxt = page.get("nextCursor")
            if not isinstance(nxt, str) or not nxt:
                break
            cursor = nxt
        else:
            raise InvalidInput(f"tools/list has more than {MAX_PAGES} pages", where=session.where)
    finally:
        session.close()
    return McpServer(version[:64], name[:128] if name else None, tuple(tools), tuple(argv))
