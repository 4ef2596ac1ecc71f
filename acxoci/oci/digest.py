"""Streaming digest + size verification: every byte read from a target goes through
`VerifyingReader`, which fails on the first byte past the declared size and at EOF on a
short body or a wrong digest. File helpers hash without loading files into memory."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import mmap
import os
import queue
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Protocol

from acxoci.oci.descriptor import Descriptor
from acxoci.oci.errors import DigestMismatch, DiskFull, SizeMismatch, TruncatedBody, Unsupported

CHUNK = 1024 * 1024
PIPELINE_MIN = 16 * 1024 * 1024
PIPELINE_BUFFERS = 4
WRITE_THREAD = True
DIRECT_IO = os.environ.get("ACX_DIRECT_IO", "1") not in ("0", "false", "no")
"""Large bodies copied into a regular file are written with O_DIRECT where the OS and filesystem
accept it: the bytes go from a few reused buffers to disk without filling the page cache, which
on VMs costs more than the disk write (buffered fallback on any refusal). `ACX_DIRECT_IO=0`
turns it off (docs/decisions/0008-direct-io-pulls.md)."""
DIRECT_ALIGN = 4096
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


class Readable(Protocol):
    """Anything with `read(n)` returning bytes (file, socket stream, VerifyingReader)."""

    def read(self, n: int = -1, /) -> bytes: ...


def new_hasher(digest: str) -> hashlib._Hash:
    """A hashlib object for the algorithm of `digest` (sha256 or sha512)."""
    alg = digest.split(":", 1)[0]
    if alg == "sha256":
        return hashlib.sha256()
    if alg == "sha512":
        return hashlib.sha512()
    raise Unsupported(f"unsupported digest algorithm {alg!r}", where=digest)


class VerifyingReader:
    """Wraps a byte stream for `desc`: counts and hashes while reading; raises SizeMismatch or
    DigestMismatch as soon as the stream proves false. `verified` is True only after EOF matched."""

    def __init__(
        self,
        raw: Readable,
        desc: Descriptor,
        *,
        where: str = "",
        on_close: Callable[[], None] | None = None,
        progress: Callable[[int], None] | None = None,
        resume: tuple[hashlib._Hash, int] | None = None,
    ) -> None:
        self._raw = raw
        self.desc = desc
        # `resume`: the hash state and count of bytes already verified-in-progress elsewhere (a
        # staging file's prefix); this reader continues from there and proves the whole object
        self._hasher = resume[0] if resume is not None else new_hasher(desc.digest)
        self._count = resume[1] if resume is not None else 0
        self._where = where or desc.digest
        self._on_close = on_close
        self._progress = progress
        self.verified = False
        self._eof = False

    def read(self, n: int = -1, /) -> bytes:
        """Read up to n bytes (n<0: all that remains). Raises as soon as the stream lies."""
        if n < 0:
            return b"".join(self.chunks())
        if self._eof:
            return b""
        remaining = self.desc.size - self._count
        if remaining <= 0:
            self._check_eof()
            return b""
        data = self._raw.read(min(n, remaining))
        if not data:
            self._finish()
            return b""
        self._count += len(data)
        self._hasher.update(data)
        if self._progress is not None:
            self._progress(len(data))
        if self._count >= self.desc.size:
            self._check_eof()
        return data

    def add_progress(self, fn: Callable[[int], None]) -> None:
        """Also call `fn(n)` for every n bytes read (chained after any existing callback)."""
        prev = self._progress
        if prev is None:
            self._progress = fn
            return

        def both(n: int) -> None:
            prev(n)
            fn(n)

        self._progress = both

    def readinto(self, buf: memoryview, /) -> int:
        """Fill `buf` (no allocation when the source has `readinto`); same checks as `read`."""
        if self._eof:
            return 0
        remaining = self.desc.size - self._count
        if remaining <= 0:
            self._check_eof()
            return 0
        raw_readinto = getattr(self._raw, "readinto", None)
        if raw_readinto is None:
            data = self.read(min(len(buf), remaining))
            buf[: len(data)] = data
            return len(data)
        n = int(raw_readinto(buf[: min(len(buf), remaining)]) or 0)
        if not n:
            self._finish()
            return 0
        self._count += n
        self._hasher.update(buf[:n])
        if self._progress is not None:
            self._progress(n)
        if self._count >= self.desc.size:
            self._check_eof()
        return n

    def copy_to(
        self, fh: IO[bytes], bufsize: int = 2 * 1024 * 1024, progress: Callable[[int], None] | None = None
    ) -> int:
        """Stream everything into `fh`; returns the byte count. Raises (after writing) if the
        content lies, so callers write to a temp file and rename only after this returns.
        Large bodies use a two-stage pipeline: a thread receives into a small pool of reused
        buffers while this thread hashes and writes (hashlib, sockets and files release the GIL),
        so memory stays at POOL x bufsize whatever the size. A full disk or a file-size limit
        is DiskFull (writeback_failed), not a bare OSError."""
        try:
            return self._copy_to(fh, bufsize, progress)
        except OSError as exc:
            if exc.errno in DISK_FULL_ERRNOS:
                raise DiskFull(
                    f"writing failed: {os.strerror(exc.errno or 0).lower()}", where=getattr(fh, "name", None)
                    and str(fh.name), hint="free disk space or raise the file-size limit, then retry",
                ) from None
            raise

    def _copy_to(self, fh: IO[bytes], bufsize: int, progress: Callable[[int], None] | None) -> int:
        if (
            self.desc.size >= PIPELINE_MIN
            and getattr(self._raw, "readinto", None) is not None
            and self._count == 0
            and not self._eof
        ):
            return self._copy_pipelined(fh, bufsize, progress)
        buf = memoryview(bytearray(bufsize))
        total = 0
        while True:
            n = self.readinto(buf)
            if not n:
                break
            fh.write(buf[:n])
            total += n
            if progress is not None:
                progress(n)
        return total  # readinto returned 0: verified, or the reader was already at its end

    def _copy_pipelined(self, fh: IO[bytes], bufsize: int, progress: Callable[[int], None] | None) -> int:
        direct = _DirectWriter.open(fh)
        if direct is not None:
            bufsize = -(-bufsize // DIRECT_ALIGN) * DIRECT_ALIGN
        free: queue.Queue[memoryview] = queue.Queue()
        for _ in range(PIPELINE_BUFFERS):
            # page-aligned buffers for O_DIRECT; plain ones otherwise
            free.put(memoryview(mmap.mmap(-1, bufsize) if direct is not None else bytearray(bufsize)))
        full: queue.Queue[tuple[memoryview | None, int] | BaseException] = queue.Queue()
        stop = threading.Event()
        raw_readinto = self._raw.readinto  # type: ignore[attr-defined]
        size = self.desc.size

        def fill(buf: memoryview, want: int) -> int:
            # whole buffers (only the last one short): fewer hand-offs, aligned direct writes
            got = 0
            while got < want:
                n = int(raw_readinto(buf[got:want]) or 0)
                if not n:
                    break
                got += n
            return got

        def produce() -> None:
            try:
                left = size
                while left > 0:
                    while True:
                        if stop.is_set():
                            return
                        try:
                            buf = free.get(timeout=0.5)
                            break
                        except queue.Empty:
                            continue
                    want = min(len(buf), left)
                    n = fill(buf, want)
                    if n:
                        left -= n
                        full.put((buf, n))
                    if n < want:
                        full.put((None, 0))
                        return
                full.put((None, 1 if self._raw.read(1) else 0))
            except BaseException as exc:
                full.put(exc)

        to_write: queue.Queue[tuple[memoryview, int] | None] = queue.Queue()
        write_error: list[BaseException] = []

        def write() -> None:
            while True:
                job = to_write.get()
                if job is None:
                    return
                wbuf, k = job
                try:
                    if not write_error:
                        if direct is not None:
                            direct.write(wbuf, k)
                        else:
                            fh.write(wbuf[:k])
                except BaseException as exc:  # re-raised by the consumer
                    write_error.append(exc)
                free.put(wbuf)

        worker = threading.Thread(target=produce, name="acx-fetch", daemon=True)
        writer = threading.Thread(target=write, name="acx-write", daemon=True)
        worker.start()
        writer.start()
        try:
            while True:
                item = full.get()
                if isinstance(item, BaseException):
                    raise item
                buf, n = item
                if write_error:
                    raise write_error[0]
                if buf is None:
                    to_write.put(None)
                    writer.join()
                    if write_error:
                        raise write_error[0]
                    if direct is not None:
                        direct.close(fh)
                    self._eof = True
                    if n:
                        raise SizeMismatch(f"more than the declared {size} bytes", where=self._where)
                    self._finish()
                    return self._count
                self._hasher.update(buf[:n])
                if WRITE_THREAD or direct is not None:
                    to_write.put((buf, n))
                else:
                    fh.write(buf[:n])
                    free.put(buf)
                self._count += n
                if self._progress is not None:
                    self._progress(n)
                if progress is not None:
                    progress(n)
        finally:
            stop.set()
            to_write.put(None)
            if worker.is_alive() and not self.verified:
                self.close()  # unblock a producer stuck in recv
            worker.join(timeout=5)
            writer.join(timeout=5)
            if direct is not None and not writer.is_alive():
                with contextlib.suppress(OSError, ValueError):  # failing already: keep that error
                    direct.close(fh)

    def _check_eof(self) -> None:
        # The declared size is reached: one more byte means the body is longer than declared.
        if self._raw.read(1):
            raise SizeMismatch(f"more than the declared {self.desc.size} bytes", where=self._where)
        self._finish()

    def _finish(self) -> None:
        self._eof = True
        if self._count != self.desc.size:
            raise TruncatedBody(
                f"got {self._count} bytes, expected {self.desc.size} (truncated body)", where=self._where
            )
        got = f"{self.desc.digest.split(':', 1)[0]}:{self._hasher.hexdigest()}"
        if got != self.desc.digest:
            raise DigestMismatch(f"content hashes to {got}", where=self._where)
        self.verified = True

    def chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        """Iterate verified chunks until EOF (the last iteration raises if the content lies)."""
        while True:
            data = self.read(size)
            if not data:
                return
            yield data

    def read_all(self) -> bytes:
        """All content (only for small objects: manifests, configs)."""
        return b"".join(self.chunks())

    def close(self) -> None:
        if self._on_close is not None:
            cb, self._on_close = self._on_close, None
            cb()

    def __enter__(self) -> VerifyingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _DirectWriter:
    """Writes whole aligned buffers straight to a file descriptor opened by someone else, with
    O_DIRECT switched on for the copy and off again at `close` (which also trims the zero padding
    of the last block and leaves `fh` positioned after the data). Falls back to plain writes on
    EINVAL, so a filesystem that takes the flag but not the I/O still gets every byte."""

    _write: Callable[[int, memoryview], int] = staticmethod(os.write)  # swapped by tests

    def __init__(self, fd: int, flags: int, start: int) -> None:
        self.fd = fd
        self.flags = flags
        self.start = start
        self.written = 0
        self.direct = True
        self.closed = False

    @classmethod
    def open(cls, fh: IO[bytes]) -> _DirectWriter | None:
        """Switch `fh` (flushed) to O_DIRECT if it is a regular file at an aligned offset, else None."""
        o_direct = getattr(os, "O_DIRECT", 0)
        if not DIRECT_IO or not o_direct:
            return None
        try:
            import fcntl

            fd = fh.fileno()
            fh.flush()
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            start = os.lseek(fd, 0, os.SEEK_CUR)
            if start % DIRECT_ALIGN:
                return None
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | o_direct)
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
            return None
        return cls(fd, flags, start)

    def write(self, buf: memoryview, k: int) -> None:
        """Write `buf[:k]`; while direct, the last short block is padded with zeros (trimmed later)."""
        end = k
        if self.direct and k % DIRECT_ALIGN:
            end = k + (-k % DIRECT_ALIGN)  # buffers are a multiple of DIRECT_ALIGN long
            buf[k:end] = bytes(end - k)
        done = 0
        while done < min(k, end):
            try:
                n = self._write(self.fd, buf[done:end])
            except OSError as exc:
                if not (self.direct and exc.errno == errno.EINVAL):
                    raise
                self._plain()  # back at the start of this buffer: write it again, unpadded
                end, done = k, 0
                continue
            if not n:
                raise OSError(errno.EIO, "write returned 0")
            done += n
        self.written += k

    def _plain(self) -> None:
        import fcntl

        self.direct = False
        fcntl.fcntl(self.fd, fcntl.F_SETFL, self.flags)
        os.lseek(self.fd, self.start + self.written, os.SEEK_SET)  # drop a partly written tail

    def close(self, fh: IO[bytes]) -> None:
        """Back to buffered mode; cut the padding; position `fh` after the data written."""
        if self.closed:
            return
        self.closed = True
        if self.direct:
            self._plain()
        os.ftruncate(self.fd, self.start + self.written)
        fh.seek(self.start + self.written)


def file_digest(path: Path, algorithm: str = "sha256") -> tuple[str, int]:
    """`(alg:hex, size)` of a file, streamed through one reused buffer (no per-chunk allocation)."""
    h = hashlib.new(algorithm)
    size = 0
    buf = memoryview(bytearray(4 * 1024 * 1024))
    with path.open("rb", buffering=0) as fh:
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            h.update(buf[:n])
            size += n
    return f"{algorithm}:{h.hexdigest()}", size


def file_descriptor(path: Path, media_type: str) -> Descriptor:
    """Descriptor of a file on disk (streamed hash)."""
    digest, size = file_digest(path)
    return Descriptor(media_type, digest, size)


def copy_verified(reader: VerifyingReader, dest: Path, *, fsync: bool = False) -> None:
    """Stream `reader` into a temp file beside `dest`, then rename into place only after the
    digest and size were proven. On any failure the temp file is removed: no partial file."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{os.getpid()}.{id(reader):x}.part"
    fh: IO[bytes] = tmp.open("wb")
    try:
        with fh:
            written = reader.copy_to(fh)
            if not reader.verified or written != reader.desc.size:
                # a reader already read (or failed) elsewhere proves nothing about these bytes
                raise SizeMismatch(f"copied {written} of {reader.desc.size} bytes from a reader that was "
                                   "already read", where=reader.desc.digest)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
