"""Distribution-spec v1.1 client on `requests`: one `RegistryTarget` per repository.

- auth: Basic and Bearer (token with scopes) from `WWW-Authenticate`, credentials from the docker
  config (auth.py); tokens are cached per scope set;
- redirects are followed by hand (bounded, loop-detected) and `Authorization` is dropped when the
  redirect leaves the registry host;
- retries with exponential backoff on 429/5xx/connection errors, honouring `Retry-After`, bounded
  in count and total time;
- blobs: HEAD, cross-repo mount, monolithic PUT for small blobs, chunked PATCH for large ones
  that resumes from the registry's reported `Range` after a dropped connection;
- manifests: PUT with their media type, `OCI-Subject` read, Referrers API with the tag-schema
  fallback (`sha256-<hex>` index; read, merge, write, re-read; see docs/decisions/0004);
- every blob and manifest read goes through `VerifyingReader` (digest + size while streaming).
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import http.client
import io
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlencode, urljoin, urlsplit, urlunsplit

import requests
import urllib3.exceptions

from acxoci.errors import AcxError
from acxoci.oci.auth import Challenge, Credential, load_credential, parse_challenge
from acxoci.oci.descriptor import (
    EMPTY_JSON,
    MANIFEST_LIMIT,
    MANIFEST_TYPES,
    OCI_INDEX,
    Descriptor,
    Manifest,
    manifest_bytes,
    parse_manifest,
    referrer_entry,
)
from acxoci.oci.digest import CHUNK, Readable, VerifyingReader, file_digest, new_hasher
from acxoci.oci.errors import (
    BlobNotFound,
    DigestMismatch,
    MalformedManifest,
    ManifestNotFound,
    ManifestTooLarge,
    RegistryAuthError,
    RegistryProtocolError,
    RegistryUnavailable,
    SizeMismatch,
    TruncatedBody,
    Unsupported,
    UploadFailed,
)
from acxoci.oci.reference import Reference, fallback_tag, valid_tag
from acxoci.oci.target import RemoteOptions
from attest.canonical import loads_strict

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_REDIRECTS = 5
MANIFEST_ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)
USER_AGENT = "acxoci"
UPLOAD_BUFFER = 4 * 1024 * 1024
BUFFERED_LIMIT = 8 * 1024 * 1024
"""Largest piece held in memory when the source cannot be re-read (bounded RSS)."""


def use_plain_http(host: str, plain_http: bool | None) -> bool:
    """Plain HTTP only when asked, or automatically for loopback hosts when not specified."""
    if plain_http is not None:
        return plain_http
    hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    return hostname in LOOPBACK_HOSTS


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Parse `Retry-After` (seconds or HTTP-date); None if absent or unparseable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


def _scope_pairs(scopes: tuple[str, ...]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for s in scopes:
        resource, _, actions = s.rpartition(":")
        for a in actions.split(","):
            out.add((resource, a))
    return out


class _Body:
    """A sized, iterable request body streaming `length` bytes from a read function (requests sends
    it with Content-Length and without buffering)."""

    def __init__(
        self,
        read: Callable[[int], bytes],
        length: int,
        progress: Callable[[int], None] | None = None,
        source: object = None,
    ) -> None:
        self._source = source
        self._read = read
        self._length = length
        self._progress = progress

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[bytes | memoryview]:
        left = self._length
        readinto = getattr(self._source, "readinto", None)
        if readinto is not None:
            # urllib3 sends each chunk before asking for the next: one reused buffer is safe
            buf = bytearray(min(UPLOAD_BUFFER, max(1, left)))
            view = memoryview(buf)
            while left > 0:
                n = readinto(view[: min(len(buf), left)])
                if not n:
                    raise SizeMismatch(f"source ended {left} bytes early", where="upload")
                left -= n
                if self._progress is not None:
                    self._progress(n)
                yield view[:n]
            return
        while left > 0:
            data = self._read(min(CHUNK, left))
            if not data:
                raise SizeMismatch(f"source ended {left} bytes early", where="upload")
            left -= len(data)
            if self._progress is not None:
                self._progress(len(data))
            yield data


def _read_exact(content: Readable, n: int) -> bytes:
    """Read n bytes unless the source ends first (sources may return short reads)."""
    parts: list[bytes] = []
    got = 0
    while got < n:
        data = content.read(n - got)
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


class _RawReader:
    """Adapts a streaming `requests` response to `read(n)` / `readinto(buf)`; a body cut short
    becomes SizeMismatch. `readinto` reads straight from the socket into the caller's buffer when
    the body is not content-encoded (no per-chunk allocation: the fast path for large blobs)."""

    def __init__(self, resp: requests.Response, where: str) -> None:
        self._resp = resp
        self._where = where
        fp = getattr(resp.raw, "_fp", None)
        encoded = resp.headers.get("Content-Encoding", "").strip().lower() not in ("", "identity")
        self._fp = fp if isinstance(fp, http.client.HTTPResponse) and not encoded else None

    def read(self, n: int = -1, /) -> bytes:
        try:
            if self._fp is not None:
                return self._fp.read(n if n >= 0 else None)
            data: bytes = self._resp.raw.read(n if n >= 0 else None)
            return data
        except (
            urllib3.exceptions.ProtocolError,
            urllib3.exceptions.IncompleteRead,
            http.client.IncompleteRead,
        ) as exc:
            raise TruncatedBody(f"body truncated: {exc}", where=self._where) from None
        except (urllib3.exceptions.ReadTimeoutError, requests.RequestException, OSError) as exc:
            raise RegistryUnavailable(f"read failed: {exc}", where=self._where) from None

    def readinto(self, buf: memoryview, /) -> int:
        if self._fp is None:
            data = self.read(len(buf))
            buf[: len(data)] = data
            return len(data)
        try:
            return self._fp.readinto(buf)
        except http.client.IncompleteRead as exc:
            raise TruncatedBody(f"body truncated: {exc!r}", where=self._where) from None
        except (ConnectionError, TimeoutError, OSError, http.client.HTTPException) as exc:
            raise RegistryUnavailable(f"read failed: {exc}", where=self._where) from None


class Transport:
    """HTTP to one registry host: session, auth state, retries, redirects. Shared by the
    RegistryTargets of that host (thread-safe for the token cache)."""

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

    def __init__(self, host: str, options: RemoteOptions) -> None:
        self.host = host
        self.options = options
        self.scheme = "http" if use_plain_http(host, options.plain_http) else "https"
        self.base = f"{self.scheme}://{host}"
        self.session = requests.Session()
        self.session.headers["User-Agent"] = USER_AGENT
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=8, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        import os

        ca = options.ca_file or os.environ.get("ACX_CA_FILE")
        self.verify: bool | str = False if options.insecure_skip_verify else (ca or True)
        self._cred: Credential | None = None
        self._basic: str | None = None
        self._tokens: list[tuple[set[tuple[str, str]], str]] = []
        self._lock = threading.Lock()
        self.sleep: Callable[[float], None] = time.sleep

    # -- credentials ---------------------------------------------------------------------------
    def credential(self) -> Credential:
        if self._cred is None:
            if self.options.username is not None or self.options.password is not None:
                self._cred = Credential(self.options.username or "", self.options.password or "")
            else:
                self._cred = load_credential(self.host, self.options.docker_config)
        return self._cred

    def _auth_header(self, scopes: tuple[str, ...]) -> str | None:
        want = _scope_pairs(scopes)
        with self._lock:
            for have, token in reversed(self._tokens):
                if want <= have:
                    return f"Bearer {token}"
        return self._basic

    def _authenticate(self, challenge: Challenge, scopes: tuple[str, ...]) -> None:
        cred = self.credential()
        if challenge.scheme == "basic":
            if cred.empty or cred.identity_token:
                raise RegistryAuthError(
                    "the registry requires credentials (basic auth); run `acx login`", where=self.host
                )
            raw = f"{cred.username}:{cred.password}".encode()
            self._basic = "Basic " + base64.b64encode(raw).decode()
            return
        all_scopes = list(
            dict.fromkeys([*scopes, *[s for s in challenge.params.get("scope", "").split(" ") if s]])
        )
        token = self._fetch_token(challenge, all_scopes, cred)
        with self._lock:
            self._tokens.append((_scope_pairs(tuple(all_scopes)), token))

    def _fetch_token(self, challenge: Challenge, scopes: list[str], cred: Credential) -> str:
        realm = challenge.params["realm"]
        service = challenge.params.get("service")
        try:
            if cred.identity_token:
                form = {
                    "grant_type": "refresh_token",
                    "refresh_token": cred.identity_token,
                    "client_id": USER_AGENT,
                    "scope": " ".join(scopes),
                }
                if service:
                    form["service"] = service
                resp = self.session.post(realm, data=form, timeout=self.options.timeout, verify=self.verify)
            else:
                params: list[tuple[str, str]] = [("service", service)] if service else []
                params += [("scope", s) for s in scopes]
                auth = (cred.username, cred.password) if cred.username else None
                resp = self.session.get(
                    realm, params=params, auth=auth, timeout=self.options.timeout, verify=self.verify
                )
        except requests.exceptions.TooManyRedirects as exc:
            raise RegistryProtocolError("token server redirect loop", where=realm) from exc
        except requests.RequestException as exc:
            raise RegistryUnavailable(f"token server unreachable: {exc}", where=realm) from exc
        with resp:
            if resp.status_code in (401, 403):
                raise RegistryAuthError(
                    f"token server refused the credentials ({resp.status_code})", where=realm
                )
            if resp.status_code != 200:
                raise RegistryProtocolError(f"token server answered {resp.status_code}", where=realm)
            try:
                body = loads_strict(resp.content[: 1024 * 1024])
            except ValueError as exc:
                raise RegistryProtocolError("token server returned malformed JSON", where=realm) from exc
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryProtocolError("token server response has no token", where=realm)
        return token

    # -- requests --------------------------------------------------------------------------------
    def url(self, path: str) -> str:
        return urljoin(self.base + "/", path)

    def request(
        self,
        method: str,
        url: str,
        *,
        scopes: tuple[str, ...],
        headers: dict[str, str] | None = None,
        body: Callable[[], Any] | bytes | None = None,
        stream: bool = False,
        retry: bool = True,
    ) -> requests.Response:
        """Send with auth, manual redirects and bounded retries on 429/5xx/network errors.
        `body` may be a factory so a retried request gets a fresh body."""
        start = time.monotonic()
        attempt = 0
        waited = 0.0

        def spent() -> float:
            return max(time.monotonic() - start, waited)

        while True:
            try:
                resp = self._send_authed(method, url, scopes, headers or {}, body, stream)
            except requests.exceptions.SSLError as exc:
                raise RegistryProtocolError(
                    f"TLS verification failed: {exc}",
                    where=self.host,
                    hint="pass --ca-file (or ACX_CA_FILE) for a private CA; "
                    "--plain-http only for HTTP registries",
                ) from None
            except (
                requests.ConnectionError,
                requests.Timeout,
                requests.exceptions.ChunkedEncodingError,
            ) as exc:
                attempt += 1
                delay = self._backoff(attempt)
                if (
                    not retry
                    or attempt > self.options.max_retries
                    or spent() + delay > self.options.max_retry_seconds
                ):
                    raise RegistryUnavailable(f"{method} failed: {exc}", where=_redact(url)) from None
                self.sleep(delay)
                waited += delay
                continue
            if resp.status_code in RETRY_STATUS and retry:
                attempt += 1
                delay = retry_after_seconds(resp.headers.get("Retry-After")) or self._backoff(attempt)
                if attempt <= self.options.max_retries and spent() + delay <= self.options.max_retry_seconds:
                    resp.close()
                    self.sleep(delay)
                    waited += delay
                    continue
            return resp

    def _backoff(self, attempt: int) -> float:
        return float(min(8.0, 0.1 * (2 ** (attempt - 1))) * (0.5 + random.random() / 2))

    def _send_authed(
        self,
        method: str,
        url: str,
        scopes: tuple[str, ...],
        headers: dict[str, str],
        body: Callable[[], Any] | bytes | None,
        stream: bool,
    ) -> requests.Response:
        hdrs = dict(headers)
        auth = self._auth_header(scopes)
        if auth:
            hdrs["Authorization"] = auth
        resp = self._send_follow(method, url, hdrs, body, stream)
        if resp.status_code != 401:
            if resp.status_code == 403:
                resp.close()
                raise RegistryAuthError(f"access denied ({method} {urlsplit(url).path})", where=self.host)
            return resp
        header = resp.headers.get("WWW-Authenticate")
        resp.close()
        if not header:
            raise RegistryAuthError("401 without a WWW-Authenticate challenge", where=self.host)
        challenge = parse_challenge(header)
        if auth and challenge.scheme == "basic":
            raise RegistryAuthError("the registry rejected the credentials", where=self.host)
        self._authenticate(challenge, scopes)
        auth = self._auth_header(scopes)
        if not auth:
            raise RegistryAuthError("no usable credentials for the challenge", where=self.host)
        hdrs["Authorization"] = auth
        resp = self._send_follow(method, url, hdrs, body, stream)
        if resp.status_code in (401, 403):
            resp.close()
            raise RegistryAuthError(
                f"the registry rejected the credentials ({resp.status_code})", where=self.host
            )
        return resp

    def _send_follow(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: Callable[[], Any] | bytes | None,
        stream: bool,
    ) -> requests.Response:
        seen: set[str] = set()
        hdrs = dict(headers)
        for _ in range(MAX_REDIRECTS + 1):
            data = body() if callable(body) else body
            resp = self.session.request(
                method,
                url,
                headers=hdrs,
                data=data,
                stream=stream,
                allow_redirects=False,
                timeout=self.options.timeout,
                verify=self.verify,
            )
            if resp.status_code in (301, 302, 303, 307, 308) and method in ("GET", "HEAD"):
                loc = resp.headers.get("Location")
                resp.close()
                if not loc:
                    raise RegistryProtocolError(
                        f"redirect {resp.status_code} without Location", where=_redact(url)
                    )
                seen.add(url)
                url = urljoin(url, loc)
                if url in seen:
                    raise RegistryProtocolError("redirect loop", where=_redact(url))
                if urlsplit(url).netloc != self.host:
                    hdrs.pop("Authorization", None)
                continue
            return resp
        raise RegistryProtocolError(f"more than {MAX_REDIRECTS} redirects", where=_redact(url))

    def ping(self) -> None:
        """Version check: GET /v2/ must answer 200 (or 401 with a challenge we can satisfy)."""
        resp = self.request("GET", self.url("/v2/"), scopes=())
        with resp:
            if resp.status_code != 200:
                raise RegistryProtocolError(
                    f"GET /v2/ answered {resp.status_code}; not an OCI registry?", where=self.host
                )


def _redact(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    q = parts.query + ("&" if parts.query else "") + urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, q, parts.fragment))


def _error_text(resp: requests.Response) -> str:
    try:
        body = resp.content[:2000].decode("utf-8", "replace")
    except (requests.RequestException, OSError):
        body = ""
    return f"HTTP {resp.status_code} {body.strip()[:300]}"


def _raise_for(resp: requests.Response, what: str, where: str) -> None:
    """Map an unexpected status to a typed error."""
    code = resp.status_code
    text = _error_text(resp)
    resp.close()
    if code in RETRY_STATUS:
        raise RegistryUnavailable(f"{what}: {text}", where=where)
    if code in (401, 403):
        raise RegistryAuthError(f"{what}: {text}", where=where)
    if code == 404:
        raise ManifestNotFound(f"{what}: not found", where=where)
    if code == 405:
        raise Unsupported(f"{what}: the registry does not allow this ({text})", where=where)
    raise RegistryProtocolError(f"{what}: unexpected {text}", where=where)


def _next_link(resp: requests.Response, current: str) -> str | None:
    link = resp.headers.get("Link")
    if not link or 'rel="next"' not in link:
        return None
    start, end = link.find("<"), link.find(">")
    if start < 0 or end < start:
        return None
    return urljoin(current, link[start + 1 : end])


class RegistryTarget:
    """One repository of an OCI registry as a Target (see target.py for the contract)."""

    def __init__(
        self, ref: Reference, options: RemoteOptions | None = None, transport: Transport | None = None
    ) -> None:
        self.ref = ref
        self.repository = ref.repository
        self.options = options or RemoteOptions()
        self.transport = transport or Transport.for_host(ref.api_host, self.options)
        self._pull = (f"repository:{self.repository}:pull",)
        self._push = (f"repository:{self.repository}:pull,push",)
        self._referrers_api: bool | None = None
        self._manifest_cache: dict[str, bytes] = {}
        self.progress: Callable[[int], None] | None = None
        self.mount_from: dict[str, str] = {}

    @property
    def name(self) -> str:
        return f"{self.ref.host}/{self.repository}"

    def _url(self, kind: str, ident: str) -> str:
        return self.transport.url(f"/v2/{self.repository}/{kind}/{ident}")

    def _where(self, ident: str) -> str:
        return f"{self.name}@{ident}" if ":" in ident else f"{self.name}:{ident}"

    # -- reads -----------------------------------------------------------------------------------
    def resolve(self, reference: str) -> Descriptor:
        """HEAD the manifest (GET when the registry omits the digest or length)."""
        url = self._url("manifests", reference)
        resp = self.transport.request("HEAD", url, scopes=self._pull, headers={"Accept": MANIFEST_ACCEPT})
        with resp:
            if resp.status_code == 404:
                raise ManifestNotFound("manifest not found", where=self._where(reference))
            if resp.status_code != 200:
                _raise_for(resp, "resolve", self._where(reference))
            mt = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
            digest = resp.headers.get("Docker-Content-Digest")
            length = resp.headers.get("Content-Length")
        if ":" in reference and reference.startswith(("sha256:", "sha512:")):
            if digest and digest != reference:
                raise DigestMismatch(f"registry answered digest {digest}", where=self._where(reference))
            digest = reference
        if mt in MANIFEST_TYPES and digest and length and length.isdigit():
            size = int(length)
            if size > MANIFEST_LIMIT:
                raise ManifestTooLarge(
                    f"manifest of {size} bytes exceeds the 4 MiB limit", where=self._where(reference)
                )
            return Descriptor(mt, digest, size)
        data, mt2 = self._get_manifest_bytes(reference)
        hasher = new_hasher(digest or "sha256:")
        hasher.update(data)
        actual = f"{(digest or 'sha256:').split(':')[0]}:{hasher.hexdigest()}"
        if digest and actual != digest:
            raise DigestMismatch(
                f"manifest hashes to {actual}, registry said {digest}", where=self._where(reference)
            )
        m = parse_manifest(
            data, media_type=mt2 if mt2 in MANIFEST_TYPES else None, where=self._where(reference)
        )
        return Descriptor(m.media_type, actual, len(data))

    def _get_manifest_bytes(self, reference: str) -> tuple[bytes, str]:
        resp = self.transport.request(
            "GET",
            self._url("manifests", reference),
            scopes=self._pull,
            headers={"Accept": MANIFEST_ACCEPT},
            stream=True,
        )
        with resp:
            if resp.status_code == 404:
                raise ManifestNotFound("manifest not found", where=self._where(reference))
            if resp.status_code != 200:
                _raise_for(resp, "get manifest", self._where(reference))
            length = resp.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > MANIFEST_LIMIT:
                raise ManifestTooLarge(
                    f"manifest of {length} bytes exceeds the 4 MiB limit", where=self._where(reference)
                )
            raw = _RawReader(resp, self._where(reference))
            data = raw.read(MANIFEST_LIMIT + 1)
            if len(data) > MANIFEST_LIMIT:
                raise ManifestTooLarge("manifest exceeds the 4 MiB limit", where=self._where(reference))
            mt = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
        return data, mt

    def fetch(self, desc: Descriptor) -> VerifyingReader:
        """Stream a blob or manifest; the reader checks size and digest as it goes."""
        is_manifest = desc.media_type in MANIFEST_TYPES
        if is_manifest and desc.size > MANIFEST_LIMIT:
            raise ManifestTooLarge(
                f"manifest of {desc.size} bytes exceeds the 4 MiB limit", where=desc.digest
            )
        if is_manifest and desc.digest in self._manifest_cache:
            return VerifyingReader(io.BytesIO(self._manifest_cache[desc.digest]), desc)
        url = self._url("manifests" if is_manifest else "blobs", desc.digest)
        headers = {"Accept": MANIFEST_ACCEPT} if is_manifest else {}
        resp = self.transport.request("GET", url, scopes=self._pull, headers=headers, stream=True)
        where = self._where(desc.digest)
        if resp.status_code == 404:
            resp.close()
            if is_manifest:
                raise ManifestNotFound("manifest not found", where=where)
            raise BlobNotFound("blob not found", where=where)
        if resp.status_code != 200:
            _raise_for(resp, "fetch", where)
        length = resp.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) != desc.size:
            resp.close()
            raise SizeMismatch(f"registry announces {length} bytes, descriptor says {desc.size}", where=where)
        return VerifyingReader(
            _RawReader(resp, where), desc, where=where, on_close=resp.close, progress=self.progress
        )

    def exists(self, desc: Descriptor) -> bool:
        kind = "manifests" if desc.media_type in MANIFEST_TYPES else "blobs"
        headers = {"Accept": MANIFEST_ACCEPT} if kind == "manifests" else {}
        resp = self.transport.request(
            "HEAD", self._url(kind, desc.digest), scopes=self._pull, headers=headers
        )
        with resp:
            if resp.status_code == 200:
                return True
            if resp.status_code == 404:
                return False
            _raise_for(resp, "exists", self._where(desc.digest))
        return False  # pragma: no cover

    def tags(self) -> list[str]:
        url: str | None = self.transport.url(f"/v2/{self.repository}/tags/list?n=1000")
        out: list[str] = []
        pages = 0
        while url and pages < 1000:
            pages += 1
            resp = self.transport.request("GET", url, scopes=self._pull)
            with resp:
                if resp.status_code == 404:
                    raise ManifestNotFound("repository not found", where=self.name)
                if resp.status_code != 200:
                    _raise_for(resp, "list tags", self.name)
                try:
                    body = loads_strict(resp.content[: MANIFEST_LIMIT * 4])
                except ValueError as exc:
                    raise RegistryProtocolError("tag list is malformed JSON", where=self.name) from exc
                got = body.get("tags") if isinstance(body, dict) else None
                if got is not None and (
                    not isinstance(got, list) or not all(isinstance(t, str) for t in got)
                ):
                    raise RegistryProtocolError("tag list has no string list `tags`", where=self.name)
                out.extend(got or [])
                url = _next_link(resp, url)
        return sorted(set(out))

    # -- referrers -------------------------------------------------------------------------------
    def _index_entries(self, data: bytes, where: str) -> list[dict[str, Any]]:
        m = parse_manifest(data, where=where)
        if not m.is_index:
            raise MalformedManifest("referrers answer is not an image index", where=where)
        return [dict(d.raw or d.to_json()) for d in m.manifests]

    def referrers_api(self, subject: Descriptor) -> bool:
        """Does this registry serve the Referrers API? (probed once per repository)."""
        if self._referrers_api is None:
            self._referrers_via_api(subject)
        return bool(self._referrers_api)

    def _referrers_via_api(self, subject: Descriptor) -> list[dict[str, Any]] | None:
        url: str | None = self._url("referrers", subject.digest)
        out: list[dict[str, Any]] = []
        pages = 0
        while url and pages < 100:
            pages += 1
            resp = self.transport.request(
                "GET", url, scopes=self._pull, headers={"Accept": OCI_INDEX}, stream=True
            )
            with resp:
                ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
                if resp.status_code in (404, 400, 405, 406) or (
                    resp.status_code == 200 and ctype != OCI_INDEX
                ):
                    if pages == 1:
                        self._referrers_api = False
                        return None
                    raise RegistryProtocolError(
                        f"referrers page answered {resp.status_code}", where=self.name
                    )
                if resp.status_code != 200:
                    _raise_for(resp, "referrers", self._where(subject.digest))
                data = _RawReader(resp, self.name).read(MANIFEST_LIMIT + 1)
                if len(data) > MANIFEST_LIMIT:
                    raise ManifestTooLarge("referrers index exceeds the 4 MiB limit", where=self.name)
                out.extend(self._index_entries(data, f"{self._where(subject.digest)} referrers"))
                url = _next_link(resp, url)
        self._referrers_api = True
        return out

    def _fallback_index(self, subject: Descriptor) -> tuple[dict[str, Any] | None, Descriptor | None]:
        tag = fallback_tag(subject.digest)
        try:
            desc = self.resolve(tag)
        except ManifestNotFound:
            return None, None
        with self.fetch(desc) as reader:
            data = reader.read_all()
        m = parse_manifest(data, media_type=desc.media_type, where=self._where(tag))
        if not m.is_index:
            raise MalformedManifest("referrers fallback tag does not hold an index", where=self._where(tag))
        return dict(m.raw), desc

    def referrers(self, desc: Descriptor, artifact_type: str | None = None) -> list[Descriptor]:
        """Referrers API if served, else the `sha256-<hex>` tag. The artifactType filter is applied
        here, looking into a referrer's manifest when the listing carries only the config type."""
        entries = self._referrers_via_api(desc) if self._referrers_api is not False else None
        if entries is None:
            raw, _ = self._fallback_index(desc)
            entries = list(raw.get("manifests") or []) if raw else []
        out: list[Descriptor] = []
        seen: set[str] = set()
        for i, e in enumerate(entries):
            d = Descriptor.from_json(e, f"{self._where(desc.digest)} referrers[{i}]")
            if d.digest in seen:
                continue
            seen.add(d.digest)
            if artifact_type and d.artifact_type != artifact_type:
                if d.artifact_type not in (None, EMPTY_JSON) or d.media_type not in MANIFEST_TYPES:
                    continue
                m = self._fetch_manifest(d)
                if m.effective_artifact_type() != artifact_type:
                    continue
                d = referrer_entry(d.plain(), m)
            out.append(d)
        return out

    def _fetch_manifest(self, desc: Descriptor) -> Manifest:
        with self.fetch(desc) as reader:
            data = reader.read_all()
        return parse_manifest(data, media_type=desc.media_type, where=self._where(desc.digest))

    def _fallback_add(self, subject: Descriptor, entry: Descriptor) -> None:
        """Read-modify-write the `sha256-<hex>` index, keeping every other entry; re-read to
        detect a lost update and retry (bounded). The residual race is in docs/decisions/0004."""
        tag = fallback_tag(subject.digest)
        for attempt in range(6):
            raw, _ = self._fallback_index(subject)
            index = raw or {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
            manifests = list(index.get("manifests") or [])
            if any(isinstance(e, dict) and e.get("digest") == entry.digest for e in manifests):
                return
            index = {
                **index,
                "mediaType": index.get("mediaType", OCI_INDEX),
                "manifests": [*manifests, entry.to_json()],
            }
            data = manifest_bytes(index)
            self._put_manifest(data, OCI_INDEX, tag)
            again, _ = self._fallback_index(subject)
            if again and any(
                isinstance(e, dict) and e.get("digest") == entry.digest for e in again.get("manifests") or []
            ):
                return
            self.transport.sleep(0.05 * (attempt + 1) * (1 + random.random()))
        raise UploadFailed(
            "referrers fallback index kept losing our entry (concurrent writers)", where=self._where(tag)
        )

    def _fallback_remove(self, subject: Descriptor, digest: str) -> None:
        tag = fallback_tag(subject.digest)
        raw, _ = self._fallback_index(subject)
        if not raw:
            return
        manifests = [
            e for e in raw.get("manifests") or [] if not (isinstance(e, dict) and e.get("digest") == digest)
        ]
        if len(manifests) != len(raw.get("manifests") or []):
            self._put_manifest(manifest_bytes({**raw, "manifests": manifests}), OCI_INDEX, tag)

    # -- writes ----------------------------------------------------------------------------------
    def _put_manifest(self, data: bytes, media_type: str, reference: str) -> requests.Response:
        if len(data) > MANIFEST_LIMIT:
            raise ManifestTooLarge(f"manifest of {len(data)} bytes exceeds the 4 MiB limit", where=reference)
        resp = self.transport.request(
            "PUT",
            self._url("manifests", reference),
            scopes=self._push,
            headers={"Content-Type": media_type},
            body=data,
        )
        with resp:
            if resp.status_code not in (200, 201):
                _raise_for(resp, "push manifest", self._where(reference))
        return resp

    def push_manifest(self, desc: Descriptor, data: bytes, reference: str | None = None) -> None:
        """PUT a manifest under its digest (or a tag) and maintain referrers for its subject."""
        reader = VerifyingReader(io.BytesIO(data), desc, where=desc.digest)
        reader.read_all()
        resp = self._put_manifest(data, desc.media_type, reference or desc.digest)
        said = resp.headers.get("Docker-Content-Digest")
        if said and said != desc.digest:
            raise UploadFailed(f"registry stored digest {said}, expected {desc.digest}", where=self.name)
        self._remember(desc.digest, data)
        m = parse_manifest(data, media_type=desc.media_type, where=desc.digest)
        if m.subject is None:
            return
        if resp.headers.get("OCI-Subject"):
            self._referrers_api = True
            return
        if self.referrers_api(m.subject):
            return
        self._fallback_add(m.subject, referrer_entry(desc.plain(), m))

    def _remember(self, digest: str, data: bytes) -> None:
        if len(self._manifest_cache) > 256:
            self._manifest_cache.clear()
        self._manifest_cache[digest] = data

    def push(self, desc: Descriptor, content: Readable) -> None:
        if desc.media_type in MANIFEST_TYPES:
            if desc.size > MANIFEST_LIMIT:
                raise ManifestTooLarge(
                    f"manifest of {desc.size} bytes exceeds the 4 MiB limit", where=desc.digest
                )
            data = VerifyingReader(content, desc, where=desc.digest).read_all()
            self.push_manifest(desc, data)
            return
        self.push_blob(desc, content)

    def tag(self, desc: Descriptor, tag: str) -> None:
        if not valid_tag(tag):
            raise MalformedManifest(f"invalid tag {tag!r}", where=self.name)
        data = self._manifest_cache.get(desc.digest)
        if data is None:
            with self.fetch(desc) as reader:
                data = reader.read_all()
        self._put_manifest(data, desc.media_type, tag)

    def delete(self, desc: Descriptor) -> None:
        """DELETE a manifest by digest; also drop it from its subject's fallback index."""
        if desc.media_type not in MANIFEST_TYPES:
            raise Unsupported("only manifests are deleted", where=desc.digest)
        subject: Descriptor | None = None
        with contextlib.suppress(ManifestNotFound, BlobNotFound):
            subject = self._fetch_manifest(desc).subject
        resp = self.transport.request("DELETE", self._url("manifests", desc.digest), scopes=self._push)
        with resp:
            if resp.status_code not in (200, 202):
                _raise_for(resp, "delete", self._where(desc.digest))
        self._manifest_cache.pop(desc.digest, None)
        if subject is not None and not self.referrers_api(subject):
            self._fallback_remove(subject, desc.digest)

    # -- blob upload -----------------------------------------------------------------------------
    def _start_upload(self, desc: Descriptor) -> str | None:
        """POST an upload session (trying a cross-repo mount first); None means already mounted."""
        url = self.transport.url(f"/v2/{self.repository}/blobs/uploads/")
        scopes: tuple[str, ...] = self._push
        src = self.mount_from.get(desc.digest)
        if src and src != self.repository:
            url = _with_query(url, {"mount": desc.digest, "from": src})
            scopes = (*self._push, f"repository:{src}:pull")
        resp = self.transport.request("POST", url, scopes=scopes, headers={"Content-Length": "0"})
        with resp:
            if resp.status_code == 201 and src:
                return None
            if resp.status_code != 202:
                _raise_for(resp, "start upload", self._where(desc.digest))
            loc = resp.headers.get("Location")
        if not loc:
            raise RegistryProtocolError("upload session without Location", where=self.name)
        return urljoin(self.transport.base + "/", loc)

    def _finish_upload(
        self, location: str, desc: Descriptor, body: Callable[[], Any] | None, length: int
    ) -> None:
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(length)}
        resp = self.transport.request(
            "PUT",
            _with_query(location, {"digest": desc.digest}),
            scopes=self._push,
            headers=headers,
            body=body,
            retry=body is None,
        )
        with resp:
            if resp.status_code in (200, 201, 204):
                said = resp.headers.get("Docker-Content-Digest")
                if said and said != desc.digest:
                    raise UploadFailed(f"registry stored {said}, expected {desc.digest}", where=self.name)
                return
            if resp.status_code in RETRY_STATUS:
                raise RegistryUnavailable(f"finishing upload: HTTP {resp.status_code}", where=self.name)
            _raise_for(resp, "finish upload", self._where(desc.digest))

    def push_blob(self, desc: Descriptor, content: Readable) -> None:
        """Upload a blob: skip if present, mount if possible, monolithic if small, else chunked
        with resume. A seekable source is re-read on retry; otherwise chunks are buffered."""
        if self.exists(desc):
            return
        seekable = bool(getattr(content, "seekable", lambda: False)())
        base = content.tell() if seekable else 0  # type: ignore[attr-defined]
        limit = (
            self.options.monolithic_limit if seekable else min(self.options.monolithic_limit, BUFFERED_LIMIT)
        )
        if desc.size <= limit:
            if seekable:

                def read_at(offset: int, n: int) -> bytes:
                    content.seek(base + offset)  # type: ignore[attr-defined]
                    return content.read(n)

                data: bytes | None = None
            else:
                data = VerifyingReader(content, desc, where=desc.digest).read_all()
            self._monolithic(desc, data, read_at if seekable else None)
            return
        self._chunked(desc, content, seekable, base)

    def _monolithic(
        self, desc: Descriptor, data: bytes | None, read_at: Callable[[int, int], bytes] | None
    ) -> None:
        start = time.monotonic()
        for attempt in range(1, self.options.max_retries + 2):
            location = self._start_upload(desc)
            if location is None:
                return
            try:
                if data is not None:
                    self._finish_upload(location, desc, lambda: data, len(data))
                else:
                    assert read_at is not None

                    def make_body(reader_at: Callable[[int, int], bytes] = read_at) -> _Body:
                        pos = [0]

                        def read(n: int) -> bytes:
                            chunk = reader_at(pos[0], n)
                            pos[0] += len(chunk)
                            return chunk

                        return _Body(read, desc.size, self.progress)

                    self._finish_upload(location, desc, make_body, desc.size)
                return
            except RegistryUnavailable:
                if (
                    attempt > self.options.max_retries
                    or time.monotonic() - start > self.options.max_retry_seconds
                ):
                    raise
                self.transport.sleep(self.transport._backoff(attempt))

    def _upload_status(self, location: str) -> tuple[int, str] | None:
        """GET the upload session: (next offset, location) or None if the session is gone."""
        resp = self.transport.request("GET", location, scopes=self._push)
        with resp:
            if resp.status_code in (404, 400):
                return None
            if resp.status_code not in (204, 200):
                _raise_for(resp, "upload status", self.name)
            rng = resp.headers.get("Range", "")
            loc = resp.headers.get("Location") or location
        if not rng:
            return 0, urljoin(self.transport.base + "/", loc)
        try:
            end = int(rng.split("-", 1)[1])
        except (IndexError, ValueError):
            raise RegistryProtocolError(f"malformed upload Range {rng!r}", where=self.name) from None
        if rng.strip() == "0-0":  # distribution reports an empty session as 0-0
            end = -1
        return end + 1, urljoin(self.transport.base + "/", loc)

    def push_file_hashing(self, path: Path, media_type: str) -> Descriptor:
        """Upload a large file while its digest is computed in parallel (one pass saved): the
        chunked session starts at once; when the hash is ready the blob is HEADed and the session
        abandoned if the registry already has it; the final PUT carries the computed digest."""
        size = path.stat().st_size
        box: dict[str, Any] = {}

        def hash_it() -> None:
            try:
                box["digest"] = file_digest(path)
            except BaseException as exc:
                box["error"] = exc

        worker = threading.Thread(target=hash_it, name="acx-hash", daemon=True)
        worker.start()

        def final() -> Descriptor:
            worker.join()
            if "error" in box:
                raise box["error"]
            digest, got = box["digest"]
            if got != size:
                raise SizeMismatch(f"{path} changed size during upload", where=str(path))
            return Descriptor(media_type, digest, size)

        checked = [False]

        def probe() -> bool:
            if checked[0] or worker.is_alive():
                return False
            checked[0] = True
            return self.exists(final())

        placeholder = Descriptor(media_type, "sha256:" + "0" * 64, size)
        with path.open("rb") as fh:
            self._chunked(placeholder, fh, True, 0, probe=probe, final=final)
        return final()

    def _cancel_upload(self, location: str) -> None:
        with contextlib.suppress(AcxError):
            self.transport.request("DELETE", location, scopes=self._push, retry=False).close()

    def _chunked(
        self,
        desc: Descriptor,
        content: Readable,
        seekable: bool,
        base: int,
        *,
        probe: Callable[[], bool] | None = None,
        final: Callable[[], Descriptor] | None = None,
    ) -> None:
        chunk = max(
            1024 * 1024, self.options.chunk_size if seekable else min(self.options.chunk_size, BUFFERED_LIMIT)
        )
        hasher = new_hasher(desc.digest)
        hashed = 0
        location = self._start_upload(desc)
        if location is None:
            return
        offset = 0
        buf = b""
        buf_start = 0
        failures = 0
        start = time.monotonic()
        while offset < desc.size:
            n = min(chunk, desc.size - offset)
            if seekable:

                def make_body(at: int = offset, k: int = n, b: bytes = b"") -> _Body:
                    content.seek(base + at)  # type: ignore[attr-defined]
                    return _Body(content.read, k, self.progress, source=content)
            else:
                if offset >= buf_start + len(buf):
                    buf_start = offset
                    buf = _read_exact(content, n)
                    if len(buf) != n:
                        raise SizeMismatch(f"source ended early at {offset + len(buf)}", where=desc.digest)
                    hasher.update(buf)
                    hashed += len(buf)
                n = len(buf) - (offset - buf_start)

                def make_body(at: int = offset - buf_start, k: int = n, b: bytes = buf) -> _Body:
                    stream = io.BytesIO(memoryview(b)[at:])
                    return _Body(stream.read, k, self.progress)

            headers = {
                "Content-Type": "application/octet-stream",
                "Content-Length": str(n),
                "Content-Range": f"{offset}-{offset + n - 1}",
            }
            try:
                resp = self.transport.request(
                    "PATCH", location, scopes=self._push, headers=headers, body=make_body, retry=False
                )
                with resp:
                    if resp.status_code not in (202, 204):
                        if resp.status_code in RETRY_STATUS or resp.status_code == 416:
                            raise RegistryUnavailable(f"chunk answered {resp.status_code}", where=self.name)
                        _raise_for(resp, "upload chunk", self._where(desc.digest))
                    loc = resp.headers.get("Location")
                    rng = resp.headers.get("Range")
                if loc:
                    location = urljoin(self.transport.base + "/", loc)
                new_offset = offset + n
                if rng:
                    try:
                        new_offset = int(rng.split("-", 1)[1]) + 1
                    except (IndexError, ValueError):
                        raise RegistryProtocolError(f"malformed Range {rng!r}", where=self.name) from None
                if new_offset != offset + n:
                    raise RegistryProtocolError(
                        f"registry acknowledged up to {new_offset}, sent {offset + n}", where=self.name
                    )
                offset = new_offset
                if probe is not None and probe():
                    self._cancel_upload(location)
                    return
            except RegistryUnavailable as exc:
                failures += 1
                if (
                    failures > self.options.max_retries
                    or time.monotonic() - start > self.options.max_retry_seconds
                ):
                    raise
                self.transport.sleep(self.transport._backoff(failures))
                status = self._upload_status(location)
                if status is None:
                    if not seekable and buf_start != 0:
                        raise UploadFailed(
                            "upload session lost and the source cannot be re-read",
                            where=self._where(desc.digest),
                        ) from exc
                    restarted = self._start_upload(desc)
                    if restarted is None:
                        return
                    location, offset = restarted, 0
                    continue
                reported, location = status
                low = 0 if seekable else buf_start
                if reported < low or reported > offset + n:
                    if seekable and reported <= desc.size:
                        offset = reported
                        continue
                    raise UploadFailed(
                        f"registry resumed at {reported}, outside the buffered chunk",
                        where=self._where(desc.digest),
                    ) from exc
                offset = reported
        if not seekable:
            got = f"{desc.digest.split(':')[0]}:{hasher.hexdigest()}"
            if hashed != desc.size or got != desc.digest:
                raise DigestMismatch(f"source content hashes to {got}", where=desc.digest)
            if content.read(1):
                raise SizeMismatch("source is longer than the descriptor", where=desc.digest)
        self._finish_upload(location, final() if final is not None else desc, None, 0)
