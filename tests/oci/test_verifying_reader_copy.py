"""`VerifyingReader` and its pipelined, O_DIRECT copy against hostile sources and failing sinks:
short reads, bodies that run long (or never end), sources and disks that fail mid-copy, a writer
that stalls, partial and zero-length writes, and the exact typed refusal of each. What makes
"pulls verify every digest before use" true: the bytes landed are the bytes proven, every read is
bounded, and a failure anywhere surfaces as itself. Written against the survivors of `make mutate`."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import io
import os
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import acxoci.oci.digest as dg
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.digest import VerifyingReader, copy_verified, file_digest
from acxoci.oci.errors import DigestMismatch, DiskFull, SizeMismatch, TruncatedBody

# 307,456 bytes with no period (a misplaced buffer shows), not a multiple of any buffer or block size here
DATA = b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(9608))
BIG = DATA + hashlib.sha512(DATA).digest() * 30_000  # about 2 MiB: hundreds of pipeline buffers
O_DIRECT = getattr(os, "O_DIRECT", 0)


def _desc(data: bytes = DATA) -> Descriptor:
    return Descriptor("application/octet-stream", "sha256:" + hashlib.sha256(data).hexdigest(), len(data))


class Overread(Exception):
    """Raised by a hostile source when asked for more than any bounded reader could want."""


class Source:
    """A network-like body: `readinto`/`read` give at most `chunk` bytes per call, then `tail`
    forever (an endless body) or EOF; unbounded reads and reading far past the body are refused."""

    def __init__(self, body: bytes, *, chunk: int = 1 << 30, tail: bytes = b"", fail_at: int | None = None,
                 exc: BaseException | None = None) -> None:
        self.body, self.chunk, self.tail = body, chunk, tail
        self.pos = 0
        self.fail_at, self.exc = fail_at, exc
        self.threads: list[threading.Thread] = []

    def _take(self, n: int) -> bytes:
        self.threads.append(threading.current_thread())
        if self.fail_at is not None and self.pos >= self.fail_at and self.exc is not None:
            raise self.exc
        n = min(n, self.chunk)
        if self.pos > len(self.body) + 64 * 1024:
            raise Overread(f"read at {self.pos}, past the {len(self.body)}-byte body")
        out = self.body[self.pos:self.pos + n]  # then the tail, in the same read (one stream)
        if len(out) < n and self.tail:
            out += (self.tail * ((n - len(out)) // len(self.tail) + 1))[: n - len(out)]
        self.pos += len(out)
        return out

    def read(self, n: int | None = -1, /) -> bytes:
        if n is None or n < 0:
            raise Overread("an unbounded read of a network body")
        return self._take(n)

    def readinto(self, buf: memoryview) -> int:
        data = self._take(len(buf))
        buf[: len(data)] = data
        return len(data)


class Sink(io.BytesIO):
    """An in-memory file that records which thread wrote, and can fail or stall on a given write."""

    def __init__(self, *, fail_on: int | None = None, exc: OSError | None = None, stall: float = 0.0,
                 stall_on: int = 1) -> None:
        super().__init__()
        self.fail_on, self.exc, self.stall, self.stall_on = fail_on, exc, stall, stall_on
        self.writes = 0
        self.threads: list[threading.Thread] = []

    def write(self, data: Any, /) -> int:
        self.threads.append(threading.current_thread())
        self.writes += 1
        if self.writes == self.stall_on and self.stall:
            time.sleep(self.stall)
        if self.fail_on is not None and self.writes >= self.fail_on and self.exc is not None:
            raise self.exc
        return super().write(data)


@pytest.fixture
def pipelined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dg, "PIPELINE_MIN", 1)
    monkeypatch.setattr(dg, "DIRECT_IO", False)


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.is_alive()]


# --- the pipelined copy -------------------------------------------------------------------------

@pytest.mark.usefixtures("pipelined")
@pytest.mark.parametrize("chunk", [1, 1000, 4096, 8193])
def test_pipelined_copy_of_short_reads_lands_the_exact_bytes(chunk: int) -> None:
    """A source that returns a little at a time (a socket) still fills whole buffers in order."""
    body = DATA[:40_000] if chunk == 1 else DATA
    src, out = Source(body, chunk=chunk), Sink()
    reader = VerifyingReader(src, _desc(body))
    assert reader.copy_to(out, bufsize=8192) == len(body)
    assert out.getvalue() == body and reader.verified


@pytest.mark.usefixtures("pipelined")
@pytest.mark.parametrize("tail", [b"!", b"endless body " * 100])
def test_pipelined_copy_of_a_long_or_endless_body_stops_one_byte_past_the_size(tail: bytes) -> None:
    src = Source(DATA, chunk=5000, tail=tail)
    reader = VerifyingReader(src, _desc(), where="blob@example")
    with pytest.raises(SizeMismatch) as exc:
        reader.copy_to(Sink(), bufsize=8192)
    assert type(exc.value) is SizeMismatch and exc.value.kind == "size_mismatch"
    assert exc.value.message == f"more than the declared {len(DATA)} bytes"
    assert exc.value.where == "blob@example"
    assert src.pos == len(DATA) + 1  # reads nothing past the one byte that proves the lie
    assert not reader.verified


@pytest.mark.usefixtures("pipelined")
@pytest.mark.parametrize("cut", [1, 4096, len(DATA) - 1])
def test_pipelined_copy_of_a_short_body_is_a_truncation_with_the_counts(cut: int) -> None:
    body = DATA[:-cut]
    reader = VerifyingReader(Source(body, chunk=3000), _desc())
    with pytest.raises(TruncatedBody) as exc:
        reader.copy_to(Sink(), bufsize=8192)
    assert exc.value.kind == "truncated_body" and exc.value.where == _desc().digest
    assert exc.value.message == f"got {len(body)} bytes, expected {len(DATA)} (truncated body)"


@pytest.mark.usefixtures("pipelined")
def test_pipelined_copy_of_wrong_bytes_names_the_digest_they_hash_to() -> None:
    body = b"?" + DATA[1:]
    with pytest.raises(DigestMismatch) as exc:
        VerifyingReader(Source(body, chunk=7000), _desc()).copy_to(Sink(), bufsize=8192)
    assert exc.value.message == "content hashes to sha256:" + hashlib.sha256(body).hexdigest()


@pytest.mark.usefixtures("pipelined")
def test_a_source_failure_mid_copy_surfaces_as_itself() -> None:
    cut = ConnectionResetError(errno.ECONNRESET, "connection reset by peer")
    src = Source(BIG, chunk=8192, fail_at=100_000, exc=cut)
    reader = VerifyingReader(src, _desc(BIG))
    with pytest.raises(ConnectionResetError) as exc:
        reader.copy_to(Sink(), bufsize=8192)
    assert exc.value is cut and not reader.verified


@pytest.mark.usefixtures("pipelined")
def test_a_disk_failure_mid_copy_surfaces_and_leaves_no_thread_behind() -> None:
    """The writer thread's OSError is re-raised by the copy (never swallowed into a "verified"
    copy of a half-written file), and the fetch and write threads are gone when it returns."""
    before = set(threading.enumerate())
    broken = OSError(errno.EIO, "input/output error")
    reader = VerifyingReader(Source(BIG, chunk=8192), _desc(BIG))
    with pytest.raises(OSError) as exc:
        reader.copy_to(Sink(fail_on=2, exc=broken), bufsize=8192)
    assert exc.value is broken and not reader.verified
    assert _new_threads(before) == []


@pytest.mark.usefixtures("pipelined")
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG, errno.EDQUOT])
def test_a_full_disk_mid_copy_is_disk_full(code: int) -> None:
    sink = Sink(fail_on=3, exc=OSError(code, os.strerror(code)))
    sink.name = "/store/blob.part"
    with pytest.raises(DiskFull) as exc:
        VerifyingReader(Source(BIG, chunk=8192), _desc(BIG)).copy_to(sink, bufsize=8192)
    assert exc.value.kind == "writeback_failed"
    assert exc.value.message == f"writing failed: {os.strerror(code).lower()}"
    assert exc.value.where == "/store/blob.part"
    assert exc.value.hint == "free disk space or raise the file-size limit, then retry"


@pytest.mark.usefixtures("pipelined")
def test_a_failure_of_the_last_write_is_raised_after_the_writer_finishes() -> None:
    last = -(-len(DATA) // 8192)
    broken = OSError(errno.EIO, "input/output error")
    reader = VerifyingReader(Source(DATA, chunk=8192), _desc())
    with pytest.raises(OSError) as exc:
        reader.copy_to(Sink(fail_on=last, exc=broken, stall=0.3, stall_on=last), bufsize=8192)
    assert exc.value is broken and not reader.verified


@pytest.mark.usefixtures("pipelined")
def test_a_refused_reader_never_turns_verified_later() -> None:
    """A body one byte too long is refused; reading on afterwards (the extra byte gone) proves nothing."""
    reader = VerifyingReader(Source(DATA + b"!"), _desc())
    with pytest.raises(SizeMismatch):
        reader.copy_to(Sink(), bufsize=8192)
    assert reader.read(1) == b"" and not reader.verified


def test_read_asks_the_source_for_no_more_than_the_declared_size() -> None:
    src = Source(DATA, tail=b"!")
    reader = VerifyingReader(src, _desc())
    assert reader.read(1000) == DATA[:1000]
    with pytest.raises(SizeMismatch):
        reader.read(1 << 20)
    assert src.pos == len(DATA) + 1


@pytest.mark.usefixtures("pipelined")
def test_a_stalled_writer_never_gets_a_buffer_that_is_still_in_flight() -> None:
    """While the disk stalls every buffer is in flight; the fetch thread waits for one to come
    back instead of refilling one whose bytes are not written yet."""
    sink = Sink(stall=1.2)
    reader = VerifyingReader(Source(DATA, chunk=8192), _desc())
    assert reader.copy_to(sink, bufsize=8192) == len(DATA)
    assert sink.getvalue() == DATA and reader.verified


@pytest.mark.usefixtures("pipelined")
def test_pipeline_threads_never_keep_the_process_alive() -> None:
    """A fetch stuck in a dead connection must not stop `acx` from exiting: both threads are daemons,
    and the reading and the writing really happen off the calling thread."""
    src, sink = Source(DATA, chunk=8192), Sink()
    VerifyingReader(src, _desc()).copy_to(sink, bufsize=8192)
    assert src.threads and sink.threads
    assert all(t.daemon and t is not threading.main_thread() for t in src.threads + sink.threads)


def test_large_bodies_are_pipelined_from_the_threshold_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dg, "DIRECT_IO", False)
    for threshold, off_thread in ((len(DATA), True), (len(DATA) + 1, False)):
        monkeypatch.setattr(dg, "PIPELINE_MIN", threshold)
        src, sink = Source(DATA, chunk=8192), Sink()
        VerifyingReader(src, _desc()).copy_to(sink, bufsize=8192)
        assert sink.getvalue() == DATA
        assert all((t is not threading.current_thread()) is off_thread for t in src.threads), threshold


@pytest.mark.usefixtures("pipelined")
def test_copy_after_a_partial_read_continues_from_there() -> None:
    """A reader already part-read (or resumed, or at its end) is copied from where it stands, and
    a long body is still caught at the first byte past the declared size."""
    reader = VerifyingReader(Source(DATA, chunk=8192), _desc())
    head, sink = reader.read(1000), Sink()
    assert reader.copy_to(sink, bufsize=8192) == len(DATA) - 1000
    assert head + sink.getvalue() == DATA and reader.verified
    assert reader.copy_to(sink, bufsize=8192) == 0 and sink.getvalue() == DATA[1000:]  # at its end: nothing
    src = Source(DATA, chunk=8192, tail=b"!")
    reader = VerifyingReader(src, _desc())
    reader.read(1000)
    with pytest.raises(SizeMismatch):
        reader.copy_to(Sink(), bufsize=8192)
    assert src.pos == len(DATA) + 1
    resumed = VerifyingReader(Source(DATA[1000:]), _desc(), resume=(hashlib.sha256(DATA[:1000]), 1000))
    sink = Sink()
    assert resumed.copy_to(sink, bufsize=8192) == len(DATA) - 1000
    assert sink.getvalue() == DATA[1000:] and resumed.verified


@pytest.mark.usefixtures("pipelined")
def test_pipelined_copy_without_the_write_thread_lands_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`WRITE_THREAD` off: the hashing thread writes each buffer itself and hands it back."""
    monkeypatch.setattr(dg, "WRITE_THREAD", False)
    sink = Sink()
    reader = VerifyingReader(Source(DATA, chunk=8192), _desc())
    assert reader.copy_to(sink, bufsize=8192) == len(DATA)
    assert sink.getvalue() == DATA and reader.verified
    assert all(t is threading.current_thread() for t in sink.threads)


@pytest.mark.usefixtures("pipelined")
def test_a_disk_failure_unblocks_a_fetch_stuck_in_a_dead_connection() -> None:
    """The fetch thread is blocked in a read that only closing the connection ends: a failing disk
    closes it (the reader's `on_close`), so the copy returns promptly with the disk's error."""
    closed = threading.Event()

    class Stuck(Source):
        def readinto(self, buf: memoryview) -> int:
            if self.pos >= 1_000_000:
                closed.wait(10)
                raise ConnectionAbortedError(errno.ECONNABORTED, "connection closed")
            return super().readinto(buf)

    before = set(threading.enumerate())
    broken = OSError(errno.EIO, "input/output error")
    reader = VerifyingReader(Stuck(BIG, chunk=8192), _desc(BIG), on_close=closed.set)
    with pytest.raises(OSError) as exc:
        reader.copy_to(Sink(fail_on=1, exc=broken), bufsize=8192)
    assert exc.value is broken and closed.is_set()
    assert _new_threads(before) == []


@pytest.mark.parametrize("named", [True, False])
def test_disk_full_names_the_file_when_it_has_a_name(named: bool) -> None:
    sink = Sink(fail_on=1, exc=OSError(errno.ENOSPC, "no space"))
    if named:
        sink.name = "/store/blob.part"
    with pytest.raises(DiskFull) as exc:
        VerifyingReader(Source(DATA), _desc()).copy_to(sink, bufsize=8192)
    assert exc.value.where == ("/store/blob.part" if named else None)
    assert exc.value.message == "writing failed: no space left on device"


@pytest.mark.parametrize("how", ["read", "readinto"])
def test_the_call_that_delivers_the_last_byte_is_the_one_that_refuses(how: str) -> None:
    """A body of the declared length with the wrong bytes is refused by the very read that ends it."""
    body = b"?" + DATA[1:]
    reader = VerifyingReader(Source(body), _desc())
    with pytest.raises(DigestMismatch):
        if how == "read":
            reader.read(len(DATA))
        else:
            reader.readinto(memoryview(bytearray(len(DATA))))


def test_readinto_fills_the_callers_buffer_from_a_source_that_has_readinto() -> None:
    """No intermediate copy: the source's own `readinto` is used whenever it has one."""

    class IntoOnly(Source):
        def read(self, n: int | None = -1, /) -> bytes:
            if n != 1:  # only the one-byte probe at the end
                raise AssertionError(f"read({n}) where readinto was available")
            return super().read(n)

    reader = VerifyingReader(IntoOnly(DATA, chunk=10_000), _desc())
    buf, got = memoryview(bytearray(8192)), b""
    while n := reader.readinto(buf):
        got += bytes(buf[:n])
    assert got == DATA and reader.verified


# --- O_DIRECT -----------------------------------------------------------------------------------

def _direct_ok(tmp_path: Path) -> bool:
    if not O_DIRECT:
        return False
    probe = tmp_path / "probe"
    with probe.open("wb") as fh:
        try:
            fcntl.fcntl(fh.fileno(), fcntl.F_SETFL, fcntl.fcntl(fh.fileno(), fcntl.F_GETFL) | O_DIRECT)
        except OSError:
            return False
    probe.unlink()
    return True


class Disk:
    """`_DirectWriter._write` with the kernel's O_DIRECT rules (buffer address and length both
    multiples of 4096 while the flag is on), plus chosen faults; records what each write was."""

    def __init__(self, *, limit: int = 1 << 30, fault: str = "", cap: int = 8 << 20) -> None:
        self.limit, self.fault, self.cap = limit, fault, cap
        self.direct_writes = self.refused = self.total = self.calls = 0

    def __call__(self, fd: int, data: memoryview) -> int:
        self.calls += 1
        if self.calls > 2000 or self.total > self.cap:
            raise OSError(errno.EFAULT, "runaway writes")
        direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & O_DIRECT)
        if self.fault == "einval" or (self.fault == "eio-direct" and direct):
            raise OSError(errno.EINVAL if self.fault == "einval" else errno.EIO, "refused")
        if self.fault == "zero":
            return 0
        if direct:
            address = ctypes.addressof(ctypes.c_char.from_buffer(data))
            if address % 4096 or len(data) % 4096:
                self.refused += 1
                raise OSError(errno.EINVAL, "unaligned direct I/O")
            self.direct_writes += 1
        n = os.write(fd, data[: self.limit])
        self.total += n
        return n


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    if not _direct_ok(tmp_path):
        pytest.skip("no O_DIRECT on this filesystem")
    monkeypatch.setattr(dg, "PIPELINE_MIN", 1)
    monkeypatch.setattr(dg, "DIRECT_IO", True)
    yield


def _copy_into_file(path: Path, disk: Disk, monkeypatch: pytest.MonkeyPatch, *, body: bytes = DATA,
                    mode: str = "wb", prefix: bytes = b"", bufsize: int = 5000) -> tuple[int, int, int]:
    """Copy into `path` through `disk`; the count returned, the handle's position, and whether
    the descriptor's flags were back to what they were before."""
    monkeypatch.setattr(dg._DirectWriter, "_write", staticmethod(disk))
    with path.open(mode) as fh:
        fh.write(prefix)  # buffered, not flushed: the copy must flush before it takes the offset
        flags = fcntl.fcntl(fh.fileno(), fcntl.F_GETFL)
        n = VerifyingReader(Source(body, chunk=8192), _desc(body)).copy_to(fh, bufsize=bufsize)
        pos = fh.tell()
        same = fcntl.fcntl(fh.fileno(), fcntl.F_GETFL) == flags
    return n, pos, int(same)


@pytest.mark.usefixtures("direct")
def test_direct_writes_are_aligned_in_address_and_length(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every buffer, the padded last one too, is one the kernel takes with O_DIRECT on."""
    disk, path = Disk(), tmp_path / "blob"
    assert _copy_into_file(path, disk, monkeypatch) == (len(DATA), len(DATA), 1)
    assert path.read_bytes() == DATA
    assert disk.refused == 0 and disk.direct_writes == -(-len(DATA) // 8192)


@pytest.mark.usefixtures("direct")
def test_direct_partial_writes_continue_where_they_stopped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    disk, path = Disk(limit=4096), tmp_path / "blob"
    assert _copy_into_file(path, disk, monkeypatch)[:2] == (len(DATA), len(DATA))
    assert path.read_bytes() == DATA and disk.refused == 0


@pytest.mark.usefixtures("direct")
def test_direct_copy_keeps_the_files_other_flags(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """O_DIRECT is switched off again at the end and nothing else (O_APPEND here) is lost."""
    disk, path = Disk(), tmp_path / "blob"
    assert _copy_into_file(path, disk, monkeypatch, mode="ab") == (len(DATA), len(DATA), 1)
    assert path.read_bytes() == DATA and disk.direct_writes


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize(("prefix", "direct_used"), [(b"p" * 4096, True), (b"p" * 100, False)])
def test_direct_io_only_from_an_aligned_offset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, prefix: bytes,
                                                direct_used: bool) -> None:
    disk, path = Disk(), tmp_path / "blob"
    n, pos, _ = _copy_into_file(path, disk, monkeypatch, prefix=prefix)
    assert (n, pos) == (len(DATA), len(prefix) + len(DATA))
    assert path.read_bytes() == prefix + DATA
    assert bool(disk.direct_writes) is direct_used


@pytest.mark.usefixtures("direct")
def test_a_write_refused_in_both_modes_is_raised_not_retried(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """EINVAL with O_DIRECT falls back to plain writes once; EINVAL again is the disk's answer."""
    disk = Disk(fault="einval")
    with pytest.raises(OSError) as exc:
        _copy_into_file(tmp_path / "blob", disk, monkeypatch)
    assert exc.value.errno == errno.EINVAL and disk.calls == 2


@pytest.mark.usefixtures("direct")
def test_another_error_of_a_direct_write_is_not_papered_over(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    disk = Disk(fault="eio-direct")
    with pytest.raises(OSError) as exc:
        _copy_into_file(tmp_path / "blob", disk, monkeypatch)
    assert exc.value.errno == errno.EIO and disk.calls == 1


@pytest.mark.usefixtures("direct")
def test_a_write_of_zero_bytes_is_an_io_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(OSError) as exc:
        _copy_into_file(tmp_path / "blob", Disk(fault="zero"), monkeypatch)
    assert type(exc.value) is OSError
    assert (exc.value.errno, exc.value.strerror) == (errno.EIO, "write returned 0")


@pytest.mark.usefixtures("direct")
def test_a_failure_mid_copy_leaves_the_file_in_buffered_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The source dies mid-copy: its error surfaces, and O_DIRECT is off again on the handle."""
    cut = ConnectionResetError(errno.ECONNRESET, "connection reset by peer")
    monkeypatch.setattr(dg._DirectWriter, "_write", staticmethod(Disk()))
    with (tmp_path / "blob").open("wb") as fh:
        flags = fcntl.fcntl(fh.fileno(), fcntl.F_GETFL)
        with pytest.raises(ConnectionResetError) as exc:
            reader = VerifyingReader(Source(BIG, chunk=8192, fail_at=100_000, exc=cut), _desc(BIG))
            reader.copy_to(fh, bufsize=8192)
        assert exc.value is cut
        assert fcntl.fcntl(fh.fileno(), fcntl.F_GETFL) == flags


def test_direct_io_switched_off_is_never_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(dg, "PIPELINE_MIN", 1)
    monkeypatch.setattr(dg, "DIRECT_IO", False)
    disk, path = Disk(), tmp_path / "blob"
    assert _copy_into_file(path, disk, monkeypatch) == (len(DATA), len(DATA), 1)
    assert path.read_bytes() == DATA and disk.calls == 0


# --- reading ------------------------------------------------------------------------------------

@pytest.mark.parametrize("has_readinto", [True, False])
def test_readinto_asks_the_source_for_no_more_than_the_declared_size(has_readinto: bool) -> None:
    """Whatever the caller's buffer, the source is asked for the declared bytes and one more."""
    body = DATA[:10_000]
    src = Source(body, tail=b"!")
    raw: Any = src if has_readinto else type("ReadOnly", (), {"read": src.read})()
    reader = VerifyingReader(raw, _desc(body))
    buf = memoryview(bytearray(65536))
    got, seen = b"", list[int]()
    reader.add_progress(seen.append)
    with pytest.raises(SizeMismatch) as exc:
        while n := reader.readinto(buf[: 4096 if has_readinto else 65536]):
            got += bytes(buf[:n])
    assert exc.value.message == "more than the declared 10000 bytes"
    assert got == body[: len(got)] and sum(seen) == len(body) and src.pos == len(body) + 1
    again = Source(body)
    honest_raw: Any = again if has_readinto else type("ReadOnly", (), {"read": again.read})()
    honest = VerifyingReader(honest_raw, _desc(body))
    got = b""
    while n := honest.readinto(buf):
        got += bytes(buf[:n])
    assert got == body and honest.verified
    assert honest.readinto(buf) == 0 and honest.read(10) == b""


def test_a_source_that_returns_none_is_at_eof() -> None:
    class NonBlocking:
        def read(self, n: int = -1, /) -> bytes:
            return b""

        def readinto(self, buf: memoryview) -> None:
            return None

    with pytest.raises(TruncatedBody) as exc:
        VerifyingReader(NonBlocking(), _desc()).readinto(memoryview(bytearray(100)))
    assert exc.value.message == f"got 0 bytes, expected {len(DATA)} (truncated body)"


def test_an_empty_descriptor_is_verified_by_the_first_read() -> None:
    empty = _desc(b"")
    reader = VerifyingReader(Source(b""), empty)
    assert reader.read(10) == b"" and reader.verified
    reader = VerifyingReader(Source(b""), empty)
    assert reader.readinto(memoryview(bytearray(10))) == 0 and reader.verified
    with pytest.raises(SizeMismatch) as exc:
        VerifyingReader(Source(b"x"), empty).read(10)
    assert exc.value.message == "more than the declared 0 bytes"
    with pytest.raises(SizeMismatch) as exc:
        VerifyingReader(Source(b"x"), empty).readinto(memoryview(bytearray(10)))
    assert exc.value.message == "more than the declared 0 bytes"


def test_progress_callbacks_chain_and_close_runs_once() -> None:
    closed: list[int] = []
    first: list[int] = []
    second: list[int] = []
    reader = VerifyingReader(Source(DATA, chunk=9000), _desc(), on_close=lambda: closed.append(1),
                             progress=first.append)
    reader.add_progress(second.append)
    with reader:
        assert reader.read_all() == DATA
    reader.close()
    assert sum(first) == sum(second) == len(DATA) and first == second and closed == [1]


# --- files --------------------------------------------------------------------------------------

def test_file_digest_streams_a_big_file_quietly(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(BIG * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning (e.g. line buffering of a binary file)
        got = file_digest(path)
        got512 = file_digest(path, "sha512")
    assert got == ("sha256:" + hashlib.sha256(BIG * 3).hexdigest(), len(BIG) * 3)
    assert got512 == ("sha512:" + hashlib.sha512(BIG * 3).hexdigest(), len(BIG) * 3)


def test_copy_verified_fsyncs_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    synced: list[bool] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(not (tmp_path / "out").exists())  # before the rename into place
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    copy_verified(VerifyingReader(Source(DATA), _desc()), tmp_path / "out")
    assert synced == []
    (tmp_path / "out").unlink()
    copy_verified(VerifyingReader(Source(DATA), _desc()), tmp_path / "out", fsync=True)
    assert synced == [True] and (tmp_path / "out").read_bytes() == DATA


def test_two_copies_to_one_destination_do_not_share_a_temp_file(tmp_path: Path) -> None:
    """Two pulls of one blob at once (two threads): each streams into its own temp file."""
    dest = tmp_path / "blob"
    gate, started = threading.Event(), threading.Event()

    class Slow(Source):
        def read(self, n: int | None = -1, /) -> bytes:
            if self.pos >= 100_000 and not gate.is_set():
                started.set()
                gate.wait(30)
            return super().read(n)

        readinto = None  # type: ignore[assignment]

    errors: list[BaseException] = []

    def first() -> None:
        try:
            copy_verified(VerifyingReader(Slow(DATA, chunk=50_000), _desc()), dest)
        except BaseException as exc:  # reported below
            errors.append(exc)

    t = threading.Thread(target=first)
    t.start()
    assert started.wait(30)
    copy_verified(VerifyingReader(Source(DATA), _desc()), dest)
    gate.set()
    t.join(30)
    assert errors == [] and dest.read_bytes() == DATA
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blob"]


def test_a_failed_copy_keeps_its_own_error_when_the_temp_file_is_already_gone(tmp_path: Path) -> None:
    dest = tmp_path / "blob"

    class Sweeper(Source):
        """Lies about its bytes, and a cleaner removes stale temp files mid-copy."""

        def read(self, n: int | None = -1, /) -> bytes:
            for p in tmp_path.glob(".*.part"):
                p.unlink()
            return super().read(n)

        readinto = None  # type: ignore[assignment]

    with pytest.raises(DigestMismatch):
        copy_verified(VerifyingReader(Sweeper(b"?" + DATA[1:], chunk=50_000), _desc()), dest)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("first", ["read", "failed"])
def test_copy_verified_refuses_a_reader_that_was_already_used(tmp_path: Path, first: str) -> None:
    """A reader read to its end (or one that already refused) proves nothing about a new copy: no
    empty or partial file is renamed into place as if it were the verified blob."""
    body = DATA if first == "read" else b"?" + DATA[1:]
    reader = VerifyingReader(Source(body), _desc())
    if first == "read":
        assert reader.read_all() == DATA and reader.verified
    else:
        with pytest.raises(DigestMismatch):
            reader.read_all()
    with pytest.raises(SizeMismatch) as exc:
        copy_verified(reader, tmp_path / "blob")
    assert exc.value.message == f"copied 0 of {len(DATA)} bytes from a reader that was already read"
    assert exc.value.where == _desc().digest
    assert list(tmp_path.iterdir()) == []
