"""The HTTP layer under every registry and https request: a `requests` session whose connections
obey an overall per-request deadline, capped body reads, origins, and failures turned into one
actionable sentence (typed) instead of library reprs.

Deadline: each request runs under a `Deadline`; the connections it uses are registered with one
watchdog thread, which shuts the socket down when the deadline passes. A server that drips one
byte every few seconds therefore ends in `RegistryTimeout` within the deadline, whichever thread
is reading (per-read socket timeouts alone never fire on a drip)."""

from __future__ import annotations

import contextlib
import heapq
import http.client
import socket
import ssl
import threading
import time
import warnings
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions
from requests.adapters import HTTPAdapter

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.errors import AcxError
from acxoci.oci.errors import (
    DeadlineExceeded,
    LimitExceeded,
    RegistryProtocolError,
    RegistryTimeout,
    RegistryUnavailable,
    TLSFailure,
    TruncatedBody,
    WrongScheme,
)

USER_AGENT = "acxoci"
ERROR_TEXT_LIMIT = 4096
SMALL_BODY_LIMIT = 64 * 1024
"""Bodies of status-only answers (HEAD, PUT, POST, PATCH) are read up to this and then dropped."""


# -- origins ---------------------------------------------------------------------------------
def wire_url(url: str) -> str:
    """The URL exactly as the sender (requests / urllib3) will use it. Origins are judged on this
    form, never on the raw string: Python's urlsplit and urllib3 disagree on some URLs (a
    backslash ends urllib3's authority, not urlsplit's), so `http://evil\\@registry/` would
    otherwise pass the origin check and go to `evil`. A URL with userinfo is refused (requests
    would put its own Basic header on it)."""
    if any(ord(ch) < 0x21 or ch == "\x7f" for ch in url):
        raise RegistryProtocolError("refusing a URL with spaces or control characters", where=redact(url))
    prep = requests.models.PreparedRequest()
    try:
        prep.prepare_url(url, None)
    except (requests.RequestException, urllib3.exceptions.HTTPError, ValueError):
        raise RegistryProtocolError("refusing a URL that cannot be parsed", where=redact(url)) from None
    wire = str(prep.url)
    if urllib3.util.parse_url(wire).auth or urlsplit(wire).username is not None:
        raise RegistryProtocolError("refusing a URL with user information", where=redact(url))
    return wire


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL as it goes on the wire (wire_url), default ports filled in:
    the unit credentials are scoped to."""
    wire = wire_url(url)
    parts = urlsplit(wire)
    sender = urllib3.util.parse_url(wire)
    if (parts.hostname or "").lower() != (sender.host or "").lower().strip("[]") or (
        parts.port != sender.port
    ):
        raise RegistryProtocolError("refusing an ambiguous URL", where=redact(url))
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        raise RegistryProtocolError("URL with an invalid port", where=redact(url)) from None
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def redact(url: str) -> str:
    """A URL without its query and fragment (upload URLs carry session state), printable only."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    text = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return "".join(ch for ch in text if ch.isprintable())[:300]  # a registry-chosen URL is untrusted


# -- deadlines -------------------------------------------------------------------------------
class Deadline:
    """One request's overall time limit; sockets used for it are shut down when it passes."""

    def __init__(self, seconds: float, where: str) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.where = where
        self.expired = False
        self.done = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()

    def attach(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            if self.expired:
                _shutdown(sock)
            elif sock not in self._socks:
                self._socks.append(sock)

    def fire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.expired = True
            socks, self._socks = self._socks, []
        for s in socks:
            _shutdown(s)

    def cancel(self) -> None:
        with self._lock:
            self.done = True
            self._socks = []

    def error(self) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"{self.where} did not finish answering within {round(self.seconds, 1):g}s",
            where=self.where,
            hint="the registry is too slow or stalled; retry later",
        )


def _shutdown(sock: socket.socket) -> None:
    # the base-class shutdown: on an SSLSocket it skips the TLS close and just wakes the reader
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread firing deadlines in time order."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._n = 0

    def arm(self, d: Deadline) -> None:
        with self._cv:
            self._n += 1
            heapq.heappush(self._heap, (d.at, self._n, d))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="acx-deadline", daemon=True)
                self._thread.start()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._heap:
                    self._cv.wait()
                at, _, d = self._heap[0]
                now = time.monotonic()
                if d.done:  # cancelled: drop it
                    heapq.heappop(self._heap)
                    continue
                if at > now:
                    self._cv.wait(at - now)
                    continue
                heapq.heappop(self._heap)
            d.fire()


_WATCHDOG = _Watchdog()
_current = threading.local()


@contextlib.contextmanager
def deadline_scope(d: Deadline) -> Any:
    """Connections opened or reused by requests sent inside this block belong to `d`."""
    prev = getattr(_current, "deadline", None)
    _current.deadline = d
    try:
        yield d
    finally:
        _current.deadline = prev


def start_deadline(seconds: float, where: str) -> Deadline:
    d = Deadline(seconds, where)
    _WATCHDOG.arm(d)
    return d


def _attach_current(sock: socket.socket | None) -> None:
    d: Deadline | None = getattr(_current, "deadline", None)
    if d is not None:
        d.attach(sock)


class _Deadlined(urllib3.connection.HTTPConnection):
    """A connection whose socket joins the current request's deadline on connect and each request."""

    def connect(self) -> None:
        super().connect()
        _attach_current(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _attach_current(self.sock)
        super().request(*args, **kwargs)


class _Conn(_Deadlined):
    pass


class _TLSConn(_Deadlined, urllib3.connection.HTTPSConnection):
    pass


class _Pool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _Conn


class _TLSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _TLSConn


class _Adapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}


def new_session(pool: int = 8) -> requests.Session:
    """A session with deadline-aware connections, no implicit credentials (`trust_env` off: no
    .netrc, no env CA bundle; proxies are passed explicitly per request)."""
    s = requests.Session()
    s.trust_env = False
    s.headers["User-Agent"] = USER_AGENT
    # bodies are hashed and capped as they arrive, never decompressed: ask for none
    s.headers["Accept-Encoding"] = "identity"
    adapter = _Adapter(pool_connections=4, pool_maxsize=max(8, pool), max_retries=0)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


def proxies_for(url: str) -> dict[str, str]:
    """HTTP(S)_PROXY / NO_PROXY from the environment for this URL (loopback is never proxied)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "127.0.0.1", "::1"):
        return {}
    return dict(requests.utils.get_environ_proxies(url))


def quiet_insecure_warnings() -> None:
    """`--insecure` was chosen explicitly: no urllib3 warning with source paths on every request."""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)


# -- reading ---------------------------------------------------------------------------------
class RawReader:
    """Adapts a streaming response to `read(n)` / `readinto(buf)`; a cut body becomes
    TruncatedBody, a passed deadline RegistryTimeout. `readinto` reads straight from the socket
    into the caller's buffer when the body is not content-encoded (the fast path for blobs)."""

    def __init__(self, resp: requests.Response, where: str, deadline: Deadline | None = None) -> None:
        self._resp = resp
        self._where = where
        self.deadline = deadline if deadline is not None else getattr(resp, "acx_deadline", None)
        fp = getattr(resp.raw, "_fp", None)
        encoded = resp.headers.get("Content-Encoding", "").strip().lower() not in ("", "identity")
        self._fp = fp if isinstance(fp, http.client.HTTPResponse) and not encoded else None

    def _timed_out(self) -> bool:
        return self.deadline is not None and self.deadline.expired

    def read(self, n: int = -1, /) -> bytes:
        try:
            if self._fp is not None:
                data = self._fp.read(n if n >= 0 else None)
            else:
                data = self._resp.raw.read(n if n >= 0 else None)
        except (
            urllib3.exceptions.ProtocolError,
            urllib3.exceptions.IncompleteRead,
            http.client.IncompleteRead,
        ) as exc:
            if self._timed_out():
                raise self.deadline.error() from None  # type: ignore[union-attr]
            raise TruncatedBody(f"body cut short ({type(exc).__name__})", where=self._where) from None
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError, ValueError) as exc:
            if self._timed_out():
                raise self.deadline.error() from None  # type: ignore[union-attr]
            raise RegistryUnavailable(
                f"reading the answer failed: {_reason(exc)}", where=self._where
            ) from None
        if not data and self._timed_out():
            raise self.deadline.error()  # type: ignore[union-attr]
        return bytes(data)

    def readinto(self, buf: memoryview, /) -> int:
        if self._fp is None:
            data = self.read(len(buf))
            buf[: len(data)] = data
            return len(data)
        try:
            n = self._fp.readinto(buf)
        except http.client.IncompleteRead:
            if self._timed_out():
                raise self.deadline.error() from None  # type: ignore[union-attr]
            raise TruncatedBody("body cut short", where=self._where) from None
        except (ConnectionError, TimeoutError, OSError, ValueError, http.client.HTTPException) as exc:
            if self._timed_out():
                raise self.deadline.error() from None  # type: ignore[union-attr]
            raise RegistryUnavailable(
                f"reading the answer failed: {_reason(exc)}", where=self._where
            ) from None
        if not n and self._timed_out():
            raise self.deadline.error()  # type: ignore[union-attr]
        return n


def read_capped(resp: requests.Response, cap: int, where: str, what: str) -> bytes:
    """The whole body of a streamed response, refusing (LimitExceeded) past `cap` bytes without
    reading further; the response is closed."""
    try:
        length = resp.headers.get("Content-Length")
        declared = int(length) if length and length.isascii() and length.isdigit() else None
        if declared is not None and declared > cap:
            raise LimitExceeded(f"{what} of {declared} bytes exceeds the {cap}-byte limit", where=where)
        raw = RawReader(resp, where)
        parts: list[bytes] = []
        got = 0
        ended = False
        while got <= cap:
            data = raw.read(min(65536, cap + 1 - got))
            if not data:
                ended = True
                break
            parts.append(data)
            got += len(data)
        if got > cap:
            raise LimitExceeded(f"{what} exceeds the {cap}-byte limit", where=where)
        encoded = resp.headers.get("Content-Encoding", "").strip().lower() not in ("", "identity")
        method = getattr(getattr(resp, "request", None), "method", None)
        if declared is not None and got < declared and not encoded and method != "HEAD":
            # a body cut before its declared length is a retryable transfer failure, never content
            raise TruncatedBody(f"{what} ended after {got} of {declared} bytes", where=where)
        if ended:  # the whole body was read: the connection goes back to the pool for the next request
            release_connection(resp)
        return b"".join(parts)
    finally:
        resp.close()


def finish(resp: requests.Response) -> None:
    """Close a streamed response, handing its connection back to the pool when the body was read
    to its end (the next request to the registry then needs no new connection)."""
    release_connection(resp)
    resp.close()


def release_connection(resp: requests.Response) -> None:
    """Hand a response's connection back to its pool once its body was read to the end (reading
    straight from the socket, urllib3 does not know the body is done and would close it)."""
    raw = resp.raw
    fp = getattr(raw, "_fp", None)
    if isinstance(fp, http.client.HTTPResponse) and not fp.isclosed():
        return  # not at the end after all: never reuse a connection with bytes left on it
    release = getattr(raw, "release_conn", None)
    if release is not None:
        release()


def preload_small(resp: requests.Response, where: str) -> None:
    """For status-only calls: read at most SMALL_BODY_LIMIT bytes into `resp.content` (so the
    connection can be reused); a longer body is cut there and its connection dropped."""
    if getattr(resp, "_content_consumed", False):
        return
    raw = RawReader(resp, where)
    parts: list[bytes] = []
    got = 0
    try:
        while got <= SMALL_BODY_LIMIT:
            data = raw.read(min(65536, SMALL_BODY_LIMIT + 1 - got))
            if not data:
                break
            parts.append(data)
            got += len(data)
    except AcxError:
        resp.close()
        raise
    body = b"".join(parts)
    if got > SMALL_BODY_LIMIT:
        resp.close()
        body = body[:SMALL_BODY_LIMIT]
    resp._content = body
    resp._content_consumed = True  # type: ignore[attr-defined]


def registry_error_text(status: int, body: bytes) -> str:
    """Pure: `HTTP 404: NAME_UNKNOWN: repository name not known to registry`. The registry's own
    OCI error codes and messages are kept; any other body (an HTML page, a proxy's text) is not
    shown, as it is neither ours nor bounded in what it says."""
    details: list[str] = []
    try:
        doc = loads_strict(body, max_bytes=65536) if body.lstrip()[:1] == b"{" else None
    except AttestError:
        doc = None
    errors = doc.get("errors") if isinstance(doc, dict) else None
    for err in errors[:3] if isinstance(errors, list) else []:
        if not isinstance(err, dict):
            continue
        code, message = err.get("code"), err.get("message")
        parts = [str(x)[:200] for x in (code, message) if isinstance(x, str) and x]
        if parts:
            details.append(": ".join(parts))
    clean = "; ".join("".join(ch if ch.isprintable() else "?" for ch in d) for d in details)
    return f"HTTP {status}" + (f": {clean}" if clean else "")


def error_text(resp: requests.Response) -> str:
    """The registry's own error words (see registry_error_text): at most ERROR_TEXT_LIMIT bytes are read."""
    body = b""
    if getattr(resp, "_content_consumed", False) and isinstance(resp._content, bytes):
        body = resp._content[:ERROR_TEXT_LIMIT]
    else:
        with contextlib.suppress(AcxError):
            body = RawReader(resp, "").read(ERROR_TEXT_LIMIT)
        resp.close()
    return registry_error_text(resp.status_code, body)


# -- failures --------------------------------------------------------------------------------
def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(out) < 20:
        e = todo.pop(0)
        if e in out:
            continue
        out.append(e)
        for nxt in (getattr(e, "reason", None), e.__cause__, e.__context__, *getattr(e, "args", ())):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return out


def _reason(exc: BaseException) -> str:
    """The most specific cause in the chain, as a few words (never a library repr)."""
    chain = _chain(exc)
    checks: list[tuple[type[BaseException] | tuple[type[BaseException], ...], str | None]] = [
        (ssl.SSLCertVerificationError, None),
        (ssl.SSLError, None),
        (ConnectionRefusedError, "connection refused"),
        (ConnectionResetError, "connection reset"),
        (socket.gaierror, "host name not found"),
        ((TimeoutError, socket.timeout, urllib3.exceptions.TimeoutError), "timed out"),
    ]
    for kind, words in checks:
        for e in chain:
            if not isinstance(e, kind):
                continue
            if isinstance(e, ssl.SSLCertVerificationError):
                return str(e.verify_message or e.reason or "certificate not trusted")
            if isinstance(e, ssl.SSLError):
                return str(e.reason or "TLS error").lower().replace("_", " ")
            return str(words)
    return type(exc).__name__


NOT_TLS_MARKERS = (
    "wrong version number",
    "record layer failure",
    "unknown protocol",
    "packet length too long",
    "http request",
)


def peer_not_tls(exc: BaseException) -> bool:
    """True when an HTTPS attempt failed because the peer answered in plain HTTP."""
    for e in _chain(exc):
        if isinstance(e, ssl.SSLError) and not isinstance(e, ssl.SSLCertVerificationError):
            text = f"{e.reason} {e}".lower().replace("_", " ")
            if any(m in text for m in NOT_TLS_MARKERS):
                return True
    return False


def failure(
    exc: BaseException, host: str, scheme: str, method: str, url: str, deadline: Deadline | None = None
) -> AcxError:
    """One sentence naming the host and what to do, for a request that raised."""
    if deadline is not None and deadline.expired:
        return deadline.error()
    chain = _chain(exc)
    if scheme == "https" and peer_not_tls(exc):
        return WrongScheme(
            f"{host} speaks plain HTTP, not HTTPS",
            where=host,
            hint="pass --plain-http (or set plainHttp in the registries file)",
        )
    for e in chain:
        if isinstance(e, ssl.SSLCertVerificationError):
            return TLSFailure(
                f"the TLS certificate of {host} is not trusted ({_reason(e)})",
                where=host,
                hint="pass --ca-file FILE (or set SSL_CERT_FILE / ACX_CA_FILE, or caFile in a "
                "registries file); --insecure skips verification",
            )
    for e in chain:
        if isinstance(e, ssl.SSLError):
            return TLSFailure(
                f"TLS handshake with {host} failed ({_reason(e)})",
                where=host,
                hint="check --ca-file / --plain-http for this registry",
            )
    reason = _reason(exc)
    if reason == "connection refused":
        return RegistryUnavailable(
            f"cannot connect to {host}: connection refused",
            where=host,
            hint="is the registry running, and is the host:port right?",
        )
    if reason == "timed out":
        return RegistryTimeout(
            f"{host} did not answer in time",
            where=host,
            hint="the registry is slow or unreachable; retry later",
        )
    if reason == "host name not found":
        return RegistryUnavailable(f"cannot resolve the host name of {host}", where=host)
    return RegistryUnavailable(f"{method} {redact(url)} failed: {reason}", where=host)


def probe_says_plain(exc: BaseException) -> bool:
    """For the loopback probe: the HTTPS attempt failed in a way a plain-HTTP peer causes (a TLS
    error other than certificate verification, a reset or EOF in the handshake); refusals and
    timeouts do not count, nor does an untrusted certificate (that is a TLS registry)."""
    chain = _chain(exc)
    if any(isinstance(e, ssl.SSLCertVerificationError) for e in chain):
        return False
    if any(isinstance(e, ConnectionRefusedError | TimeoutError | socket.timeout) for e in chain):
        return False
    return any(
        isinstance(e, ssl.SSLError | ConnectionResetError | http.client.RemoteDisconnected) for e in chain
    )


HTTPS_ON_HTTP_MARKERS = ("http request to an https server", "client sent an http request to an https")


def http_to_https_port(resp: requests.Response) -> bool:
    """distribution/Go and nginx answer 400 when plain HTTP reaches their TLS port."""
    if resp.status_code != 400:
        return False
    consumed = getattr(resp, "_content_consumed", False)
    body = resp._content if consumed and isinstance(resp._content, bytes) else b""
    text = body[:ERROR_TEXT_LIMIT].decode("utf-8", "replace").lower()
    return any(m in text for m in HTTPS_ON_HTTP_MARKERS) or "plain http request was sent to https" in text
