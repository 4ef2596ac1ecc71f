"""HTTP to one registry host: the resolved settings (settings.py), one session (session.py), auth
(authorizer.py) and retries (retry.py) put together. Every request:

- runs under an overall deadline (`options.deadline`, plus size / `options.min_rate` for large
  bodies) enforced on the socket, so a dripping server ends in RegistryTimeout;
- carries the registry's credentials only to the registry's own origin, hop by hop: a redirect
  or an upload `Location` on another origin gets none, and a 401 from another origin is refused
  rather than answered; an https → http redirect or Location is refused outright;
- retries 429/5xx and connection failures with bounded backoff (count and time);
- fails with one sentence naming the host and the flag to use (session.failure).

Transports are pooled per (host, options): one setup per registry for a whole command."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urljoin, urlsplit

import requests

from acxoci.oci.auth import parse_challenge
from acxoci.oci.authorizer import Authorizer
from acxoci.oci.errors import (
    DeadlineExceeded,
    ManifestNotFound,
    RegistryAuthError,
    RegistryProtocolError,
    RegistryUnavailable,
    Unsupported,
    WrongScheme,
)
from acxoci.oci.retry import RETRY_STATUS, Budget, retry_after_seconds
from acxoci.oci.session import (
    Deadline,
    deadline_scope,
    error_text,
    failure,
    http_to_https_port,
    new_session,
    origin,
    preload_small,
    probe_says_plain,
    proxies_for,
    quiet_insecure_warnings,
    redact,
    start_deadline,
    wire_url,
)
from acxoci.oci.settings import HostSettings, RemoteOptions, resolve

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)

Body = Callable[[], Any] | bytes | None


class Transport:
    """HTTP to one registry host (thread-safe; shared by the RegistryTargets of that host)."""

    _pool: ClassVar[dict[tuple[str, RemoteOptions], Transport]] = {}
    _pool_lock = threading.Lock()

    @classmethod
    def for_host(cls, host: str, options: RemoteOptions) -> Transport:
        key = (host, options)
        with cls._pool_lock:
            t = cls._pool.get(key)
            if t is None:
                t = cls._pool[key] = cls(host, options)
            return t

    def __init__(self, host: str, options: RemoteOptions, settings: HostSettings | None = None) -> None:
        self.host = host
        self.options = options
        self.settings = settings or resolve(host, options)
        self._auto = self.settings.scheme == "auto"
        self.scheme = "https" if self._auto else self.settings.scheme
        self.verify = self.settings.verify
        if self.verify is False:
            quiet_insecure_warnings()
        self.session = new_session()
        self.auth = Authorizer(host, self.settings, options, self)
        self.sleep: Callable[[float], None] = time.sleep
        self._probe_lock = threading.Lock()
        self.referrers_api: bool | None = None  # does the registry serve the Referrers API? (once)

    # -- scheme ----------------------------------------------------------------------------------
    def _probe(self) -> None:
        """Loopback with no explicit choice: HTTPS unless the peer answers TLS in plain HTTP."""
        with self._probe_lock:
            if not self._auto:
                return
            d = start_deadline(min(self.options.deadline, 10.0), self.host)
            try:
                with deadline_scope(d):
                    self.session.get(
                        f"https://{self.host}/v2/",
                        stream=True,
                        allow_redirects=False,
                        timeout=min(self.options.timeout, 10.0),
                        verify=self.verify,
                    ).close()
            except requests.RequestException as exc:
                if probe_says_plain(exc) or self._answers_plain_http(exc):
                    self.scheme = "http"
            finally:
                d.cancel()
            self._auto = False

    def _answers_plain_http(self, exc: BaseException) -> bool:
        """Confirm a failed HTTPS probe by asking in plain HTTP: a peer that answers HTTP (and not
        with the "HTTP request to an HTTPS server" 400) speaks plain HTTP. A handshake can fail in
        several ways against a plain-HTTP server (the server may close before answering), so the
        answer decides, not the shape of the TLS error. An untrusted certificate never falls back."""
        import ssl

        from acxoci.oci.session import _chain, http_to_https_port

        if any(isinstance(e, ssl.SSLCertVerificationError) for e in _chain(exc)):
            return False
        d = start_deadline(min(self.options.deadline, 10.0), self.host)
        try:
            with deadline_scope(d):
                resp = self.session.get(f"http://{self.host}/v2/", stream=True, allow_redirects=False,
                                        timeout=min(self.options.timeout, 10.0))
        except requests.RequestException:
            return False
        finally:
            d.cancel()
        with resp:
            return not http_to_https_port(resp)

    @property
    def base(self) -> str:
        if self._auto:
            self._probe()
        return f"{self.scheme}://{self.host}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return origin(self.base)

    @property
    def credential(self) -> Callable[[], Any]:  # kept for callers of the old API
        return self.auth.credential

    def url(self, path: str) -> str:
        return urljoin(self.base + "/", path)

    def resolve_location(self, loc: str, current: str | None = None) -> str:
        """An upload `Location` made absolute against the URL that answered it (default: the
        registry); its origin is checked on every hop."""
        return urljoin(current or (self.base + "/"), loc)

    # -- one hop ---------------------------------------------------------------------------------
    def _send_once(
        self, method: str, url: str, headers: dict[str, str], data: Any, d: Deadline
    ) -> requests.Response:
        scheme = urlsplit(url).scheme.lower()
        try:
            with deadline_scope(d):
                resp = self.session.request(
                    method,
                    url,
                    headers=headers,
                    data=data,
                    stream=True,
                    allow_redirects=False,
                    timeout=(self.options.timeout, self.options.timeout),
                    verify=self.verify,
                    proxies=proxies_for(url),
                )
        except requests.RequestException as exc:
            raise failure(exc, urlsplit(url).netloc or self.host, scheme, method, url, d) from None
        if scheme == "http" and resp.status_code == 400:
            preload_small(resp, self.host)
            if http_to_https_port(resp):
                resp.close()
                raise WrongScheme(
                    f"{urlsplit(url).netloc} speaks HTTPS, not plain HTTP",
                    where=self.host,
                    hint="drop --plain-http (or pass --no-plain-http)",
                )
        return resp

    def follow(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: Body,
        *,
        auth_value: str | None,
        auth_origin: tuple[str, str, int] | None,
        size_hint: int = 0,
    ) -> tuple[requests.Response, str]:
        """Send, following GET/HEAD redirects by hand (bounded, loop-detected). `auth_value` is
        attached only on hops to `auth_origin`; https → http is refused."""
        d = start_deadline(self.options.deadline + size_hint / max(1, self.options.min_rate), self.host)
        seen: set[str] = set()
        try:
            for _ in range(MAX_REDIRECTS + 1):
                self._check_scheme(url)
                url = wire_url(url)  # what is checked below is what is sent
                hdrs = dict(headers)
                if auth_value and auth_origin is not None and origin(url) == auth_origin:
                    hdrs["Authorization"] = auth_value
                data = body() if callable(body) else body
                resp = self._send_once(method, url, hdrs, data, d)
                if resp.status_code in REDIRECTS and method in ("GET", "HEAD"):
                    loc = resp.headers.get("Location")
                    resp.close()
                    if not loc:
                        raise RegistryProtocolError(
                            f"redirect {resp.status_code} without Location", where=redact(url)
                        )
                    seen.add(url)
                    nxt = urljoin(url, loc)
                    if urlsplit(url).scheme.lower() == "https" and urlsplit(nxt).scheme.lower() != "https":
                        raise RegistryProtocolError(
                            "refusing a redirect from HTTPS to plain HTTP",
                            where=f"{redact(url)} -> {redact(nxt)}",
                        )
                    if nxt in seen:
                        raise RegistryProtocolError("redirect loop", where=redact(nxt))
                    url = nxt
                    continue
                _bind(resp, d)
                return resp, url
            raise RegistryProtocolError(f"more than {MAX_REDIRECTS} redirects", where=redact(url))
        except BaseException:
            d.cancel()
            raise

    def _check_scheme(self, url: str) -> None:
        scheme = urlsplit(url).scheme.lower()
        if scheme not in ("http", "https"):
            raise RegistryProtocolError(f"refusing a {scheme or 'relative'} URL", where=redact(url))
        if scheme == "http" and self.scheme == "https":
            raise RegistryProtocolError(
                "refusing to leave HTTPS for plain HTTP",
                where=redact(url),
                hint="the registry pointed a redirect or upload at an http:// URL",
            )

    # -- with auth and retries -------------------------------------------------------------------
    def _send_authed(
        self,
        method: str,
        url: str,
        scopes: tuple[str, ...],
        headers: dict[str, str],
        body: Body,
        size_hint: int,
    ) -> requests.Response:
        mine = self.origin
        auth = self.auth.header(scopes)
        resp, final = self.follow(
            method, url, headers, body, auth_value=auth, auth_origin=mine, size_hint=size_hint
        )
        if resp.status_code == 403:
            resp.close()
            raise RegistryAuthError(f"access denied ({method} {urlsplit(url).path})", where=self.host)
        if resp.status_code != 401:
            return resp
        header = resp.headers.get("WWW-Authenticate")
        resp.close()
        if origin(final) != mine:
            raise RegistryAuthError(
                f"{urlsplit(final).netloc} asked for credentials; they are sent only to {self.host}",
                where=redact(final),
            )
        if not header:
            raise RegistryAuthError("401 without a WWW-Authenticate challenge", where=self.host)
        challenge = parse_challenge(header)
        if auth and challenge.scheme == "basic":
            raise RegistryAuthError("the registry rejected the credentials", where=self.host)
        self.auth.authenticate(challenge, scopes)
        auth = self.auth.header(scopes)
        if not auth:
            raise RegistryAuthError("no usable credentials for the challenge", where=self.host)
        resp, _ = self.follow(
            method, url, headers, body, auth_value=auth, auth_origin=mine, size_hint=size_hint
        )
        if resp.status_code in (401, 403):
            resp.close()
            raise RegistryAuthError(
                f"the registry rejected the credentials (HTTP {resp.status_code})", where=self.host
            )
        return resp

    def request(
        self,
        method: str,
        url: str,
        *,
        scopes: tuple[str, ...],
        headers: dict[str, str] | None = None,
        body: Body = None,
        stream: bool = False,
        retry: bool = True,
        size_hint: int = 0,
    ) -> requests.Response:
        """Send with auth, redirects and bounded retries. `body` may be a factory so a retried
        request gets a fresh body. Without `stream` at most a small body is read (into
        `resp.content`); with it, the caller reads under the request's deadline and closes."""
        budget = Budget(self.options.max_retries, self.options.max_retry_seconds)
        while True:
            try:
                resp = self._send_authed(method, url, scopes, headers or {}, body, size_hint)
            except DeadlineExceeded:
                raise
            except RegistryUnavailable:
                delay = budget.next_delay() if retry else None
                if delay is None:
                    raise
                self.sleep(delay)
                continue
            if resp.status_code in RETRY_STATUS and retry:
                delay = budget.next_delay(retry_after_seconds(resp.headers.get("Retry-After")))
                if delay is not None:
                    resp.close()
                    self.sleep(delay)
                    continue
            if not stream:
                preload_small(resp, self.host)
                resp.close()  # content kept; connection back to the pool, deadline cancelled
            return resp

    def ping(self) -> None:
        """Version check: GET /v2/ must answer 200 (or 401 with a challenge we can satisfy)."""
        resp = self.request("GET", self.url("/v2/"), scopes=())
        with resp:
            if resp.status_code != 200:
                raise RegistryProtocolError(
                    f"GET /v2/ answered {error_text(resp)}; not an OCI registry?", where=self.host
                )


def _bind(resp: requests.Response, d: Deadline) -> None:
    """Tie the deadline to the response: reads check it, closing cancels it."""
    resp.acx_deadline = d  # type: ignore[attr-defined]
    close = resp.close

    def closing() -> None:
        d.cancel()
        close()

    resp.close = closing  # type: ignore[method-assign]


def raise_for(resp: requests.Response, what: str, where: str) -> None:
    """Map an unexpected status to a typed error (reading at most a few KiB of the body)."""
    code = resp.status_code
    text = error_text(resp)
    resp.close()
    if code in RETRY_STATUS:
        raise RegistryUnavailable(f"{what}: {text}", where=where)
    if code in (401, 403):
        raise RegistryAuthError(f"{what}: {text}", where=where)
    if code == 404:
        raise ManifestNotFound(f"{what}: not found ({text})", where=where)
    if code == 405:
        raise Unsupported(f"{what}: the registry does not allow this ({text})", where=where)
    raise RegistryProtocolError(f"{what}: unexpected {text}", where=where)
