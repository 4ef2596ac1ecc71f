"""Distribution-spec v1.1 API of one repository as a `Target` (`RegistryTarget`): resolve, fetch,
exists, tags, manifests and referrers. The parts below it each have one job:

- settings.py: the transport setup per host (flags, registries file, env);
- session.py: HTTP session, deadlines, capped reads, actionable failures;
- authorizer.py / auth.py: credentials, challenges, tokens, scoped to the registry's origin;
- retry.py: retry policy; transport.py: one host's requests (auth, redirects, retries);
- uploads.py: blob uploads (mount, monolithic, chunked with resume, hash-while-uploading).

Every read is bounded: manifests and referrer pages 4 MiB, tag pages 4 MiB and `max_tags` tags,
referrer listings `max_referrers` entries over `max_referrer_pages` pages (LimitExceeded past
them); blob and manifest bodies go through `VerifyingReader` (digest + size while streaming) and
a blob read cut short resumes with a Range request (bounded attempts)."""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urljoin

import requests

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.errors import AcxError
from acxoci.oci.descriptor import (
    EMPTY_DATA,
    EMPTY_DIGEST,
    MANIFEST_LIMIT,
    MANIFEST_TYPES,
    OCI_INDEX,
    Descriptor,
    Manifest,
    is_digest,
    manifest_bytes,
    parse_manifest,
    referrer_entry,
)
from acxoci.oci.digest import Readable, VerifyingReader, new_hasher
from acxoci.oci.errors import (
    BlobNotFound,
    DeadlineExceeded,
    DigestMismatch,
    LimitExceeded,
    MalformedManifest,
    ManifestNotFound,
    ManifestTooLarge,
    RegistryProtocolError,
    RegistryUnavailable,
    SizeMismatch,
    TruncatedBody,
    Unsupported,
    UploadFailed,
)
from acxoci.oci.listing import (
    SOURCE_API,
    SOURCE_TAG,
    ReferrerListing,
    check_candidates,
    index_entries,
    listed_candidates,
)
from acxoci.oci.reference import Reference, fallback_tag, valid_tag
from acxoci.oci.retry import retry_after_seconds
from acxoci.oci.session import RawReader, error_text, finish, read_capped, registry_error_text
from acxoci.oci.settings import LOOPBACK_HOSTS, RemoteOptions, active_options, is_loopback
from acxoci.oci.transport import Transport, raise_for
from acxoci.oci.uploads import UploadsMixin

__all__ = ["LOOPBACK_HOSTS", "RegistryTarget", "Transport", "registry_error_text", "retry_after_seconds",
           "use_plain_http"]

MANIFEST_ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)
TAG_PAGE_LIMIT = 4 * 1024 * 1024
MANIFEST_CACHE_BYTES = 32 * 1024 * 1024


def use_plain_http(host: str, plain_http: bool | None) -> bool | None:
    """The user's plain-HTTP choice; None (loopback, no choice) means HTTPS first, then HTTP."""
    if plain_http is not None:
        return plain_http
    return None if is_loopback(host) else False


def _check_referrer_count(n: int, cap: int, where: str) -> None:
    if n > cap:
        raise LimitExceeded(
            f"more than {cap} referrers listed",
            where=where,
            hint="a subject with this many referrers is refused (options.max_referrers)",
        )


def _header_digest(resp: requests.Response, where: str) -> str | None:
    """The registry's Docker-Content-Digest, if it sent one: it must be a well-formed digest (it
    goes into URLs and comparisons, and is not covered by any verified manifest)."""
    said = resp.headers.get("Docker-Content-Digest")
    if said is None or said.strip() == "":
        return None
    said = said.strip()
    if not is_digest(said):
        raise RegistryProtocolError(f"registry sent a malformed digest {said[:80]!r}", where=where)
    return said


class _Body:
    """One response body as a reader, with its `close`."""

    def __init__(self, raw: RawReader, close: Callable[[], None]) -> None:
        self.raw = raw
        self.close = close

    def read(self, n: int = -1, /) -> bytes:
        return self.raw.read(n)

    def readinto(self, buf: memoryview, /) -> int:
        return self.raw.readinto(buf)


class _ResumingReader:
    """A blob body that, when cut short (reset, truncation), is re-requested from the current
    offset with `Range` (at most `attempts` times). The caller's VerifyingReader keeps hashing,
    so the resumed bytes are digest-checked with the rest. Deadlines are never resumed."""

    def __init__(
        self, open_at: Callable[[int], _Body], size: int, where: str, attempts: int, offset: int = 0
    ) -> None:
        self._open_at = open_at
        self._size = size
        self._where = where
        self._left = attempts
        self._offset = offset
        self._cur: _Body | None = open_at(offset)

    def _resume(self, exc: Exception | None) -> None:
        if self._cur is not None:
            self._cur.close()
            self._cur = None
        if self._left <= 0 or self._offset >= self._size:
            if exc is not None:
                raise exc
            return
        self._left -= 1
        self._cur = self._open_at(self._offset)

    def _step(self, fn: Callable[[_Body], Any]) -> Any:
        while True:
            if self._cur is None:
                return None
            try:
                got = fn(self._cur)
            except DeadlineExceeded:
                raise
            except (TruncatedBody, RegistryUnavailable) as exc:
                if self._offset >= self._size:
                    raise
                self._resume(exc)
                continue
            n = len(got) if isinstance(got, bytes) else int(got or 0)
            if n == 0 and self._offset < self._size:
                if self._left <= 0:
                    return got
                self._resume(None)
                continue
            self._offset += n
            return got

    def read(self, n: int = -1, /) -> bytes:
        got = self._step(lambda b: b.read(n))
        return got if isinstance(got, bytes) else b""

    def readinto(self, buf: memoryview, /) -> int:
        cur = self._cur
        if cur is not None:  # the fast path: one call per buffer while nothing goes wrong
            try:
                n = cur.raw.readinto(buf)
            except (TruncatedBody, RegistryUnavailable):
                n = -1
            if n > 0:
                self._offset += n
                return n
        got = self._step(lambda b: b.readinto(buf))
        return int(got or 0)

    def close(self) -> None:
        if self._cur is not None:
            self._cur.close()
            self._cur = None


def _next_link(resp: requests.Response, current: str) -> str | None:
    link = resp.headers.get("Link")
    if not link or 'rel="next"' not in link:
        return None
    start, end = link.find("<"), link.find(">")
    if start < 0 or end < start:
        return None
    return urljoin(current, link[start + 1 : end])


class RegistryTarget(UploadsMixin):
    """One repository of an OCI registry as a Target (see target.py for the contract)."""

    def __init__(
        self, ref: Reference, options: RemoteOptions | None = None, transport: Transport | None = None
    ) -> None:
        self.ref = ref
        self.repository = ref.repository
        self.options = options or active_options()
        self.transport = transport or Transport.for_host(ref.api_host, self.options)
        self._pull = (f"repository:{self.repository}:pull",)
        self._push = (f"repository:{self.repository}:pull,push",)
        self._manifest_cache: dict[str, bytes] = {}
        self.progress: Callable[[int], None] | None = None
        self.mount_from: dict[str, str] = {}
        self._absent: set[str] = set()
        """Blobs a HEAD just found missing: the upload that follows skips its own HEAD (once)."""

    @property
    def name(self) -> str:
        return f"{self.ref.host}/{self.repository}"

    def _url(self, kind: str, ident: str) -> str:
        return self.transport.url(f"/v2/{self.repository}/{kind}/{ident}")

    def _where(self, ident: str) -> str:
        return f"{self.name}@{ident}" if ":" in ident else f"{self.name}:{ident}"

    # -- reads -----------------------------------------------------------------------------------
    def _why_missing(self, url: str) -> str:
        """A HEAD 404 has no body: ask once more with GET for the registry's own words (its OCI
        error code and message, e.g. NAME_UNKNOWN vs MANIFEST_UNKNOWN)."""
        try:
            resp = self.transport.request("GET", url, scopes=self._pull, headers={"Accept": MANIFEST_ACCEPT},
                                          stream=True)
        except AcxError:
            return "HTTP 404"
        with resp:
            return error_text(resp) if resp.status_code == 404 else "HTTP 404"

    def resolve(self, reference: str) -> Descriptor:
        """HEAD the manifest (GET when the registry omits the digest or length)."""
        url = self._url("manifests", reference)
        resp = self.transport.request("HEAD", url, scopes=self._pull, headers={"Accept": MANIFEST_ACCEPT})
        with resp:
            if resp.status_code == 404:
                raise ManifestNotFound(f"manifest not found ({self._why_missing(url)})",
                                       where=self._where(reference))
            if resp.status_code != 200:
                raise_for(resp, "resolve", self._where(reference))
            mt = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
            digest = _header_digest(resp, self._where(reference))
            length = resp.headers.get("Content-Length")
        if ":" in reference and reference.startswith(("sha256:", "sha512:")):
            if digest and digest != reference:
                raise DigestMismatch(f"registry answered digest {digest}", where=self._where(reference))
            digest = reference
        if mt in MANIFEST_TYPES and digest and length and length.isascii() and length.isdigit():
            size = int(length)
            if size > MANIFEST_LIMIT:
                raise ManifestTooLarge(
                    f"manifest of {size} bytes exceeds the 4 MiB limit", where=self._where(reference)
                )
            return Descriptor(mt, digest, size)
        data, mt2, _ = self._get_manifest(reference)
        return self._descriptor_of(reference, data, mt2, digest)

    def resolve_manifest(self, reference: str) -> Descriptor:
        """Resolve `reference` when its manifest is fetched next (install, pull): one GET instead of
        HEAD then GET. The digest is the hash of the body read (≤ 4 MiB), so what is verified next is
        what was resolved; a Docker-Content-Digest that disagrees, or a body that does not hash to a
        pinned digest, is DigestMismatch. The bytes come back in the descriptor's `data`."""
        data, mt, said = self._get_manifest(reference)
        return replace(self._descriptor_of(reference, data, mt, said), data=data)

    def _descriptor_of(self, reference: str, data: bytes, mt: str, said: str | None) -> Descriptor:
        """The descriptor of manifest bytes read for `reference`: their own digest, which must equal
        the registry's `said` digest and a digest `reference` pins (DigestMismatch otherwise)."""
        where = self._where(reference)
        pinned = reference if is_digest(reference) else None
        if pinned and said and said != pinned:
            raise DigestMismatch(f"registry answered digest {said}", where=where)
        want = pinned or said
        hasher = new_hasher(want or "sha256:")
        hasher.update(data)
        actual = f"{(want or 'sha256:').split(':')[0]}:{hasher.hexdigest()}"
        if want and actual != want:
            raise DigestMismatch(f"manifest hashes to {actual}, registry said {want}", where=where)
        m = parse_manifest(data, media_type=mt if mt in MANIFEST_TYPES else None, where=where)
        return Descriptor(m.media_type, actual, len(data))

    def _get_manifest(self, reference: str) -> tuple[bytes, str, str | None]:
        """GET a manifest by tag or digest: (bytes ≤ 4 MiB, Content-Type, Docker-Content-Digest)."""
        resp = self.transport.request(
            "GET",
            self._url("manifests", reference),
            scopes=self._pull,
            headers={"Accept": MANIFEST_ACCEPT},
            stream=True,
        )
        with resp:
            if resp.status_code == 404:
                raise ManifestNotFound(f"manifest not found ({error_text(resp)})",
                                       where=self._where(reference))
            if resp.status_code != 200:
                raise_for(resp, "get manifest", self._where(reference))
            mt = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
            said = _header_digest(resp, self._where(reference))
            try:
                data = read_capped(resp, MANIFEST_LIMIT, self._where(reference), "manifest")
            except LimitExceeded as exc:
                raise ManifestTooLarge(exc.message, where=self._where(reference)) from None
        return data, mt, said

    def fetch(self, desc: Descriptor) -> VerifyingReader:
        """Stream a blob or manifest; the reader checks size and digest as it goes. A blob body cut
        short is resumed with a Range request from where it stopped (bounded attempts)."""
        is_manifest = desc.media_type in MANIFEST_TYPES
        if is_manifest and desc.size > MANIFEST_LIMIT:
            raise ManifestTooLarge(
                f"manifest of {desc.size} bytes exceeds the 4 MiB limit", where=desc.digest
            )
        if is_manifest and desc.digest in self._manifest_cache:
            return VerifyingReader(io.BytesIO(self._manifest_cache[desc.digest]), desc)
        if desc.digest == EMPTY_DIGEST and desc.size == len(EMPTY_DATA):
            return VerifyingReader(io.BytesIO(EMPTY_DATA), desc)  # the empty blob `{}`: known bytes
        where = self._where(desc.digest)
        if is_manifest:
            raw: Any = self._open_body(desc, 0)
        else:
            raw = _ResumingReader(
                lambda at: self._open_body(desc, at), desc.size, where, self.options.max_retries
            )
        return VerifyingReader(raw, desc, where=where, on_close=raw.close, progress=self.progress)

    def fetch_from(self, desc: Descriptor, offset: int, hasher: Any) -> VerifyingReader:
        """Continue a blob from `offset` (a Range request) with the hash state of the bytes before
        it (a staging file's prefix): the reader proves the digest of the whole blob."""
        where = self._where(desc.digest)
        raw = _ResumingReader(
            lambda at: self._open_body(desc, at), desc.size, where, self.options.max_retries, offset
        )
        return VerifyingReader(
            raw, desc, where=where, on_close=raw.close, progress=self.progress, resume=(hasher, offset)
        )

    def _open_body(self, desc: Descriptor, offset: int) -> _Body:
        """GET the blob or manifest body from `offset` (a Range request when > 0)."""
        is_manifest = desc.media_type in MANIFEST_TYPES
        url = self._url("manifests" if is_manifest else "blobs", desc.digest)
        headers = {"Accept": MANIFEST_ACCEPT} if is_manifest else {}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        resp = self.transport.request(
            "GET", url, scopes=self._pull, headers=headers, stream=True, size_hint=desc.size - offset
        )
        where = self._where(desc.digest)
        if resp.status_code == 404:
            resp.close()
            if is_manifest:
                raise ManifestNotFound("manifest not found", where=where)
            raise BlobNotFound("blob not found", where=where)
        if offset:
            want = f"bytes {offset}-{desc.size - 1}/{desc.size}"
            got = (resp.headers.get("Content-Range") or "").strip()
            if resp.status_code != 206 or got not in (want, f"bytes {offset}-{desc.size - 1}/*"):
                resp.close()
                raise TruncatedBody(
                    f"body cut short at {offset} and the registry cannot resume it "
                    f"(HTTP {resp.status_code} {got[:60]})",
                    where=where,
                )
            return _Body(RawReader(resp, where), lambda: finish(resp))
        if resp.status_code != 200:
            raise_for(resp, "fetch", where)
        length = resp.headers.get("Content-Length")
        if length is not None and length.isascii() and length.isdigit() and int(length) != desc.size:
            resp.close()
            raise SizeMismatch(f"registry announces {length} bytes, descriptor says {desc.size}", where=where)
        return _Body(RawReader(resp, where), lambda: finish(resp))

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
                if kind == "blobs":
                    if len(self._absent) > 4096:
                        self._absent.clear()
                    self._absent.add(desc.digest)
                return False
            raise_for(resp, "exists", self._where(desc.digest))
        return False  # pragma: no cover

    def tags(self) -> list[str]:
        """All tags over the registry's pages: each page at most 4 MiB, at most `max_tags` tags."""
        url: str | None = self.transport.url(f"/v2/{self.repository}/tags/list?n=1000")
        out: set[str] = set()
        pages = 0
        while url:
            pages += 1
            if pages > max(1, self.options.max_tags // 100):
                raise LimitExceeded(f"tag list has more than {pages - 1} pages", where=self.name)
            resp = self.transport.request("GET", url, scopes=self._pull, stream=True)
            with resp:
                if resp.status_code == 404:
                    resp.close()
                    raise ManifestNotFound("repository not found", where=self.name)
                if resp.status_code != 200:
                    raise_for(resp, "list tags", self.name)
                nxt = _next_link(resp, url)
                data = read_capped(resp, TAG_PAGE_LIMIT, self.name, "tag list page")
            try:
                body = loads_strict(data)
            except MalformedError as exc:
                raise RegistryProtocolError("tag list is malformed JSON", where=self.name) from exc
            got = body.get("tags") if isinstance(body, dict) else None
            if got is not None and (not isinstance(got, list) or not all(isinstance(t, str) for t in got)):
                raise RegistryProtocolError("tag list has no string list `tags`", where=self.name)
            bad = next((t for t in got or [] if not valid_tag(t)), None)
            if bad is not None:  # printed, and used as a reference: only the tag grammar
                raise RegistryProtocolError(f"tag list has an invalid tag {bad[:80]!r}", where=self.name)
            out.update(got or [])
            if len(out) > self.options.max_tags:
                raise LimitExceeded(f"more than {self.options.max_tags} tags", where=self.name)
            if nxt == url:
                raise RegistryProtocolError("tag list pages loop", where=self.name)
            url = nxt
        return sorted(out)

    # -- referrers -------------------------------------------------------------------------------
    def referrers_api(self, subject: Descriptor) -> bool:
        """Does this registry serve the Referrers API? (probed once per registry host and options:
        the answer is the registry's, so a mirror of many repositories asks once)."""
        if self.transport.referrers_api is None:
            self._referrers_via_api(subject)
        return bool(self.transport.referrers_api)

    def _referrers_via_api(self, subject: Descriptor) -> list[dict[str, Any]] | None:
        """The Referrers API's entries over its pages (None if not served): at most
        `max_referrer_pages` pages of 4 MiB and `max_referrers` entries, else LimitExceeded."""
        url: str | None = self._url("referrers", subject.digest)
        out: list[dict[str, Any]] = []
        pages = 0
        where = self._where(subject.digest)
        while url:
            pages += 1
            if pages > self.options.max_referrer_pages:
                raise LimitExceeded(
                    f"referrers listing has more than {self.options.max_referrer_pages} pages", where=where
                )
            resp = self.transport.request(
                "GET", url, scopes=self._pull, headers={"Accept": OCI_INDEX}, stream=True
            )
            with resp:
                ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
                if resp.status_code in (404, 400, 405, 406) or (
                    resp.status_code == 200 and ctype != OCI_INDEX
                ):
                    resp.close()
                    if pages == 1:
                        self.transport.referrers_api = False
                        return None
                    raise RegistryProtocolError(
                        f"referrers page answered {resp.status_code}", where=self.name
                    )
                if resp.status_code != 200:
                    raise_for(resp, "referrers", where)
                nxt = _next_link(resp, url)
                try:
                    data = read_capped(resp, MANIFEST_LIMIT, where, "referrers page")
                except LimitExceeded:
                    raise ManifestTooLarge(
                        "referrers index exceeds the 4 MiB limit", where=self.name
                    ) from None
            out.extend(index_entries(data, f"{where} referrers"))
            _check_referrer_count(len(out), self.options.max_referrers, where)
            if nxt == url:
                raise RegistryProtocolError("referrers pages loop", where=where)
            url = nxt
        self.transport.referrers_api = True
        return out

    def _fallback_index(self, subject: Descriptor) -> tuple[dict[str, Any] | None, Descriptor | None]:
        """The `sha256-<hex>` index by one GET of the tag (no HEAD first); its digest is computed
        from the bytes and must match the registry's Docker-Content-Digest when it sends one."""
        tag = fallback_tag(subject.digest)
        try:
            data, _, said = self._get_manifest(tag)
        except ManifestNotFound:
            return None, None
        hasher = new_hasher(said or "sha256:")
        hasher.update(data)
        actual = f"{(said or 'sha256:').split(':')[0]}:{hasher.hexdigest()}"
        if said and said != actual:
            raise DigestMismatch(
                f"fallback index hashes to {actual}, registry said {said}", where=self._where(tag)
            )
        index_entries(data, self._where(tag))  # the index's shape; its entries are checked one by one
        raw = loads_strict(data)
        desc = Descriptor(str(raw.get("mediaType") or OCI_INDEX), actual, len(data))
        self._remember(actual, data)
        return raw, desc

    def referrer_listing(self, desc: Descriptor) -> ReferrerListing:
        """The one listing (listing.py): candidates from the Referrers API (when served) and from
        the `sha256-<hex>` fallback tag (always: a tool or a mirror may have written only the
        tag), each kept only when its manifest's subject is `desc`."""
        where = self._where(desc.digest)
        api = self._referrers_via_api(desc) if self.transport.referrers_api is not False else None
        raw, _ = self._fallback_index(desc)
        tagged = list(raw.get("manifests") or []) if raw else []
        for entries in (api or [], tagged):
            _check_referrer_count(len(entries), self.options.max_referrers, where)
        warnings: tuple[str, ...] = ()
        if api is None:
            warnings = (f"{self.name} does not serve the Referrers API; referrers were read from the "
                        f"fallback tag (a cache or mirror in between may hide referrers)",)
        from_api, bad_api = listed_candidates(api or [], SOURCE_API, f"{where} referrers")
        from_tag, bad_tag = listed_candidates(tagged, SOURCE_TAG, f"{where} {fallback_tag(desc.digest)}")
        return check_candidates(desc, from_api + from_tag, self._manifest_bytes, where=where,
                                max_entries=self.options.max_referrers, warnings=warnings,
                                strays=bad_api + bad_tag)

    def referrers(self, desc: Descriptor, artifact_type: str | None = None) -> list[Descriptor]:
        """The referrers of `desc` (referrer_listing), of `artifact_type` as their manifests say."""
        return self.referrer_listing(desc).of_type(artifact_type)

    def _manifest_bytes(self, desc: Descriptor) -> bytes:
        """A manifest's digest-verified bytes (≤ 4 MiB), remembered by digest."""
        with self.fetch(desc) as reader:
            data = reader.read_all()
        self._remember(desc.digest, data)
        return data

    def _fetch_manifest(self, desc: Descriptor) -> Manifest:
        return parse_manifest(self._manifest_bytes(desc), media_type=desc.media_type,
                              where=self._where(desc.digest))

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
                raise_for(resp, "push manifest", self._where(reference))
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
            self.transport.referrers_api = True
        # the fallback index is written when the API is absent, or also when asked (so the
        # referrer survives pull-through caches and tag-only mirrors)
        if self.options.fallback_index or not (self.transport.referrers_api or self.referrers_api(m.subject)):
            self._fallback_add(m.subject, referrer_entry(desc.plain(), m))

    def _remember(self, digest: str, data: bytes) -> None:
        """Keep a manifest's verified bytes by digest (content-addressed: never stale), at most
        256 of them and MANIFEST_CACHE_BYTES in all."""
        held = sum(len(v) for v in self._manifest_cache.values())
        if len(self._manifest_cache) > 256 or held + len(data) > MANIFEST_CACHE_BYTES:
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
                raise_for(resp, "delete", self._where(desc.digest))
        self._manifest_cache.pop(desc.digest, None)
        if subject is not None and not self.referrers_api(subject):
            self._fallback_remove(subject, desc.digest)
