"""A minimal MCP client over stdio for the boot handshake (`--mcp-stdio 'CMD ...'`): start the
server (the command split as a shell would, run without a shell), `initialize` with the
cartridge's protocol revision, `notifications/initialized`, `tools/list` (every page), then stop
it. Bounded: one deadline for the whole exchange, every read and write non-blocking within it, a
cap on each message, on all output, on what waits to be written, on the requests the server may
send and on pages and tools; the server's stderr is discarded; its process group is killed at
the end (at once when the exchange failed).
Everything the server says is untrusted JSON, decoded strictly and checked before use."""

from __future__ import annotations

import contextlib
import json
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

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.errors import InvalidInput, NotFound, TransientError, UsageError

DEFAULT_TIMEOUT = 30.0
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_PAGES = 32
MAX_TOOLS = 1024
MAX_PENDING_BYTES = 1024 * 1024  # written to the server but not yet read by it
MAX_SERVER_REQUESTS = 64  # requests the server may send us (each refused)
MAX_ID_CHARS = 256
GRACE_SECONDS = 2.0  # a server that answered may exit on its own, within the deadline
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
    """One server process and its line-delimited JSON-RPC stream, under one deadline: every read
    and every write is non-blocking and waits only as long as the deadline leaves."""

    def __init__(self, argv: list[str], timeout: float) -> None:
        self.argv = argv
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.buf = b""
        self.out = bytearray()  # what is still to be written to the server
        self.total = 0
        self.next_id = 0
        self.requests = 0  # requests the server sent us
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.rfd = self.proc.stdout.fileno()
        self.wfd = self.proc.stdin.fileno()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.rfd, selectors.EVENT_READ)

    def _queue(self, msg: Mapping[str, Any]) -> None:
        """Add one message to what is written to the server as it reads (never blocking)."""
        data = json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n"
        if len(self.out) + len(data) > MAX_PENDING_BYTES:
            raise InvalidInput(
                f"the MCP server does not read its input (more than {MAX_PENDING_BYTES} bytes wait)",
                where=self.where,
            )
        self.out += data

    def send(self, method: str, params: Mapping[str, Any] | None = None, *, notify: bool = False) -> int:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = dict(params)
        if not notify:
            self.next_id += 1
            msg["id"] = self.next_id
        self._queue(msg)
        return self.next_id

    def _exit(self) -> str:
        code = self.proc.poll()
        return "still running" if code is None else f"exit code {code}"

    def _write(self) -> None:
        """Write what the server's input pipe takes now."""
        try:
            n = os.write(self.wfd, self.out[:65536])
        except BlockingIOError:
            return
        except OSError as exc:
            raise TransientError(
                f"the MCP server closed its input ({self._exit()})", where=self.where
            ) from exc
        del self.out[:n]

    def _read(self) -> None:
        """Read what the server wrote, within the caps."""
        try:
            chunk = os.read(self.rfd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            raise TransientError(
                f"the MCP server stopped before answering ({self._exit()})", where=self.where
            )
        self.total += len(chunk)
        if self.total > MAX_OUTPUT_BYTES:
            raise InvalidInput(f"the MCP server wrote more than {MAX_OUTPUT_BYTES} bytes", where=self.where)
        self.buf += chunk

    def _line(self) -> bytes:
        """The next line the server writes; meanwhile what waits for it is written as it reads."""
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
            writing = self.wfd in self.sel.get_map()
            if bool(self.out) != writing:
                if writing:
                    self.sel.unregister(self.wfd)
                else:
                    self.sel.register(self.wfd, selectors.EVENT_WRITE)
            for key, _ in self.sel.select(left):
                if key.fd == self.wfd:
                    self._write()
                else:
                    self._read()
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    @property
    def where(self) -> str:
        return "mcp-stdio: " + " ".join(self.argv)

    def result(self, want: int) -> Mapping[str, Any]:
        """The result of request `want`; notifications are skipped, requests to us refused."""
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
            if "method" in msg:
                if "id" in msg:  # a request to us: we offer no client features
                    self._reply_unsupported(msg["id"])
                continue  # a notification
            rid = msg.get("id")
            if not same_id(rid, want):
                raise InvalidInput(
                    f"the MCP server answered request {want} with the id {json.dumps(rid)[:40]}",
                    where=self.where,
                )
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
        """`Method not found` for a request the server sent us; a bounded number, with a valid id."""
        self.requests += 1
        if self.requests > MAX_SERVER_REQUESTS:
            raise InvalidInput(
                f"the MCP server sent more than {MAX_SERVER_REQUESTS} requests", where=self.where
            )
        valid = (isinstance(rid, str) and len(rid) <= MAX_ID_CHARS) or (
            type(rid) is int and abs(rid) <= 2**53
        )
        if not valid:
            raise InvalidInput(
                "the MCP server sent a request whose id is not a short string or an integer",
                where=self.where,
            )
        self._queue({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})

    def close(self, *, graceful: bool) -> None:
        """Stop the server: after a good exchange it may exit on end of input until the deadline;
        then (and at once otherwise) its whole process group is killed."""
        self.sel.close()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        if graceful:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=max(0.0, min(GRACE_SECONDS, self.deadline - time.monotonic())))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the server and anything it left in its group
        self.proc.wait()
        self.proc.stdout.close()


def same_id(got: Any, sent: int) -> bool:
    """Whether a response's id is the integer id we sent (by type and value: not `true`, not `1.0`)."""
    return type(got) is int and got == sent


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
    done = False
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
        done = True
    finally:
        session.close(graceful=done)
    return McpServer(version[:64], name[:128] if name else None, tuple(tools), tuple(argv))
