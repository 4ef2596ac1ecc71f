"""Blob uploads of a registry repository (mixed into RegistryTarget): skip what exists, try a
cross-repository mount, monolithic PUT for small blobs, chunked PATCH for large ones resuming
from the registry's reported `Range` after a dropped connection, and hash-while-uploading for
large files. Upload `Location`s are followed under the transport's origin rule (credentials
only to the registry's own origin; never from HTTPS to plain HTTP)."""

from __future__ import annotations

import contextlib
import io
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from acxoci.errors import AcxError
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.digest import CHUNK, Readable, VerifyingReader, file_digest, new_hasher
from acxoci.oci.errors import (
    DigestMismatch,
    RegistryProtocolError,
    RegistryUnavailable,
    SizeMismatch,
    UploadFailed,
)
from acxoci.oci.retry import RETRY_STATUS, backoff
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.transport import Transport, raise_for

UPLOAD_BUFFER = 4 * 1024 * 1024
RELAY_BUFFER = 256 * 1024
"""Piece size when relaying a network stream into an upload: small enough that receiving and
sending overlap in the kernel's socket buffers (a 4 MiB piece would serialise them)."""
BUFFERED_LIMIT = 8 * 1024 * 1024
"""Largest piece held in memory when the source cannot be re-read (bounded RSS)."""


def with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    q = parts.query + ("&" if parts.query else "") + urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, q, parts.fragment))


class _Body:
    """A sized, iterable request body streaming `length` bytes from a read function (requests sends
    it with Content-Length and without buffering)."""

    def __init__(
        self,
        read: Callable[[int], bytes],
        length: int,
        progress: Callable[[int], None] | None = None,
        source: object = None,
        buffer: int = 0,
    ) -> None:
        self._source = source
        self._buffer = buffer or UPLOAD_BUFFER
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
            buf = bytearray(min(self._buffer, max(1, left)))
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


class UploadsMixin:
    """Blob upload methods of RegistryTarget (see registry.py for the attributes they use)."""

    transport: Transport
    repository: str
    options: RemoteOptions
    progress: Callable[[int], None] | None
    mount_from: dict[str, str]
    _push: tuple[str, ...]
    _absent: set[str]

    @property
    def name(self) -> str:
        raise NotImplementedError

    def exists(self, desc: Descriptor) -> bool:
        raise NotImplementedError

    def _where(self, ident: str) -> str:
        raise NotImplementedError

    def _start_upload(self, desc: Descriptor) -> str | None:
        """POST an upload session (trying a cross-repo mount first); None means already mounted."""
        url = self.transport.url(f"/v2/{self.repository}/blobs/uploads/")
        scopes: tuple[str, ...] = self._push
        src = self.mount_from.get(desc.digest)
        if src and src != self.repository:
            url = with_query(url, {"mount": desc.digest, "from": src})
            scopes = (*self._push, f"repository:{src}:pull")
        resp = self.transport.request("POST", url, scopes=scopes, headers={"Content-Length": "0"})
        with resp:
            if resp.status_code == 201 and src:
                return None
            if resp.status_code != 202:
                raise_for(resp, "start upload", self._where(desc.digest))
            loc = resp.headers.get("Location")
        if not loc:
            raise RegistryProtocolError("upload session without Location", where=self.name)
        return self.transport.resolve_location(loc)

    def _finish_upload(
        self, location: str, desc: Descriptor, body: Callable[[], Any] | None, length: int
    ) -> None:
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(length)}
        resp = self.transport.request(
            "PUT",
            with_query(location, {"digest": desc.digest}),
            scopes=self._push,
            headers=headers,
            body=body,
            retry=body is None,
            size_hint=desc.size,  # the body, or the registry hashing the whole blob before answering
        )
        with resp:
            if resp.status_code in (200, 201, 204):
                said = resp.headers.get("Docker-Content-Digest")
                if said and said != desc.digest:
                    raise UploadFailed(f"registry stored {said}, expected {desc.digest}", where=self.name)
                self._absent.discard(desc.digest)  # stored now, whoever HEADed it before
                return
            if resp.status_code in RETRY_STATUS:
                raise RegistryUnavailable(f"finishing upload: HTTP {resp.status_code}", where=self.name)
            raise_for(resp, "finish upload", self._where(desc.digest))

    def push_blob(self, desc: Descriptor, content: Readable) -> None:
        """Upload a blob: skip if present, mount if possible, monolithic if small, else chunked
        with resume. A seekable source is re-read on retry; otherwise chunks are buffered. A blob
        the caller's HEAD just found missing is not HEADed again (one request saved per blob)."""
        if desc.digest not in self._absent and self.exists(desc):
            return
        self._absent.discard(desc.digest)
        seekable = bool(getattr(content, "seekable", lambda: False)())
        base = content.tell() if seekable else 0  # type: ignore[attr-defined]
        limit = (
            self.options.monolithic_limit if seekable else min(self.options.monolithic_limit, BUFFERED_LIMIT)
        )
        verifying = isinstance(content, VerifyingReader) and content.desc.digest == desc.digest
        if not seekable and verifying and limit < desc.size <= self.options.monolithic_limit:
            self._streamed(desc, content)  # e.g. cp: the source stream goes straight into one PUT
            return
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
                self.transport.sleep(backoff(attempt))

    def _streamed(self, desc: Descriptor, content: Readable) -> None:
        """One POST and one streaming PUT of a source that verifies itself (a VerifyingReader for
        this digest) and cannot be re-read: no buffering and no second hash; a failed PUT is not
        retried (the caller's rerun skips the blobs already copied)."""
        location = self._start_upload(desc)
        if location is None:
            return
        self._finish_upload(
            location,
            desc,
            lambda: _Body(content.read, desc.size, self.progress, source=content, buffer=RELAY_BUFFER),
            desc.size,
        )

    def _upload_status(self, location: str) -> tuple[int, str] | None:
        """GET the upload session: (next offset, location) or None if the session is gone."""
        resp = self.transport.request("GET", location, scopes=self._push)
        with resp:
            if resp.status_code in (404, 400):
                return None
            if resp.status_code not in (204, 200):
                raise_for(resp, "upload status", self.name)
            rng = resp.headers.get("Range", "")
            loc = resp.headers.get("Location") or location
        if not rng:
            return 0, self.transport.resolve_location(loc, location)
        try:
            end = int(rng.split("-", 1)[1])
        except (IndexError, ValueError):
            raise RegistryProtocolError(f"malformed upload Range {rng!r}", where=self.name) from None
        if rng.strip() == "0-0":  # distribution reports an empty session as 0-0
            end = -1
        return end + 1, self.transport.resolve_location(loc, location)

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
        # a VerifyingReader for this digest proves the bytes itself: no second hash
        self_checked = isinstance(content, VerifyingReader) and content.desc.digest == desc.digest
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
                    if not self_checked:
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
                    "PATCH", location, scopes=self._push, headers=headers, body=make_body, retry=False,
                    size_hint=n,
                )
                with resp:
                    if resp.status_code not in (202, 204):
                        if resp.status_code in RETRY_STATUS or resp.status_code == 416:
                            raise RegistryUnavailable(f"chunk answered {resp.status_code}", where=self.name)
                        raise_for(resp, "upload chunk", self._where(desc.digest))
                    loc = resp.headers.get("Location")
                    rng = resp.headers.get("Range")
                if loc:
                    location = self.transport.resolve_location(loc, location)
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
                self.transport.sleep(backoff(failures))
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
            got = desc.digest if self_checked else f"{desc.digest.split(':')[0]}:{hasher.hexdigest()}"
            if hashed != desc.size or got != desc.digest:
                raise DigestMismatch(f"source content hashes to {got}", where=desc.digest)
            if content.read(1):
                raise SizeMismatch("source is longer than the descriptor", where=desc.digest)
        self._finish_upload(location, final() if final is not None else desc, None, 0)
