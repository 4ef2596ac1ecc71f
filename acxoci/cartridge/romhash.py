"""The ROM hashing pass, shared by two processes that meet in the middle of the ROM.

hashlib and SQLite release the GIL, but the verifier's own per-row Python work holds it, and
threads were measured to gain nothing (docs/decisions/0025). So for a large ROM one helper
process, started before the typed scans, hashes the raw `rom/` rows from the highest rowid down
and streams a record per row as it goes. The verifier does its scans and checks, then hashes
from the lowest rowid up, watching the helper's progress, and stops where the helper has already
been: no cost model, the two simply meet. The helper reads the very file the verifier opened
(its descriptor, through /proc/self/fd, and it checks that the file SQLite opened for that name
is the descriptor's) and is stdlib-only, isolated (`-I -S`). It maps the file (SQLite mmap: no
read call per page) and drops the mapping after every 32 MiB it hashes (on its one connection:
it never opens the file by name again), so what it has mapped stays bounded; the verifier itself
does not map the file (a file truncated under a mapping kills its reader with SIGBUS: for the
helper that only costs time). The helper leaves when its stdin ends (the verifier met it, or
died), and the verifier gives up on a helper that sends nothing for a second once told to stop.

Its digests are keyed by rowid and used only for rows that the verifier's own typed scan
accepted, and only when the row is stored raw (length = sz): exactly what the single-process
pass hashes. They are used only when the helper ended well: a trailer (written after its last
check) counting its records, rowids strictly descending. Any failure (no /proc, spawn error, an
exit before the trailer, torn or surplus output) only means the verifier hashes the rest itself;
it never changes a verdict. Both shares stay as the records written (`Hashed`): the join first
compares them, as bytes, with the records a ROM as its objects state it would give (`expected`),
and decodes them into digests only when that differs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from acxoci.cartridge.order import strictly_falling, strictly_rising
from acxoci.fsutil import FileIdentity, identity_of

# rowid -> (sha256:…, length, sz) of each raw `rom/` row hashed by the pass
Digests = dict[int, tuple[str, int, int]]

HELPER_MIN_BYTES = 32 << 20  # below this a second process costs more than it saves
_RECORD = struct.Struct("<qq32s")  # rowid, length (-1: visited, not hashed; -2: trailer), sha256
_NOT_HASHED, _TRAILER = -1, -2
_WINDOW_BYTES = 32 << 20  # the helper maps the file, and drops the mapping after this much
_POLL_BYTES = 256 << 10  # the verifier looks at the helper's progress this often (bytes hashed)
_DRAIN_SECONDS = 60.0  # how long the verifier waits for a stopped helper's last records
_STALL_SECONDS = 1.0  # ... and for any byte of them: a stopped helper flushes within milliseconds

_ROM_ROW = "typeof(name) = 'text' AND substr(name, 1, 4) = 'rom/'"


def _raw(inline: int) -> str:
    """A row the pass hashes from the row itself: stored raw (length = sz) and small."""
    return f"typeof(data) = 'blob' AND length(data) <= {inline} AND length(data) = sz"


def rom_rows_sql(inline: int, where: str, order: str = "ASC") -> str:
    """The raw-row pass: each small raw `rom/` row's data (else NULL), a full scan of the table
    b-tree in rowid order (`NOT INDEXED`, `+rowid` so a bound never turns into a seek)."""
    return (
        f"SELECT rowid, CASE WHEN {_raw(inline)} THEN data END, sz FROM sqlar NOT INDEXED"
        f" WHERE {_ROM_ROW} AND {where} ORDER BY rowid {order}"
    )


_HELPER = """
import _thread, fcntl, hashlib, os, stat, struct, sys, time
try:
    import _sqlite3 as sqlite3  # the C module alone: its adapters (datetime) are not needed here
except ImportError:
    import sqlite3
fd, inline, window = (int(a) for a in sys.argv[1:4])
sql, below = sys.argv[4:6]
stop = []
def watch():
    # stdin ends when the verifier closes it (it met us) or dies: stop at the next flush, and
    # leave on our own if still here 2 s later (say a read that never returns)
    os.read(0, 1)
    stop.append(1)
    time.sleep(2.0)
    os._exit(3)
_thread.start_new_thread(watch, ())
conn = sqlite3.connect(f"file:/proc/self/fd/{fd}?mode=ro&immutable=1", uri=True)
conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, inline + 1)
for pragma in ("PRAGMA query_only = 1", "PRAGMA trusted_schema = 0", "PRAGMA cell_size_check = 1",
               "PRAGMA mmap_size = 2147483648"):
    conn.execute(pragma)
def same_file():
    # SQLite opened a name (it resolves the /proc link by readlink), not the descriptor: every
    # regular file open, SQLite's included, must be the inherited one (same device and inode)
    mine = os.fstat(fd)
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(name))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
            sys.exit(4)
rows = iter(conn.execute(sql))
row = next(rows, None)
same_file()  # before any record: each one is of the verifier's own file
try:
    fcntl.fcntl(1, fcntl.F_SETPIPE_SZ, 1 << 20)  # room to run ahead while the verifier checks
except OSError:
    pass
out, pack, sha, zero = sys.stdout.buffer, struct.Struct("<qq32s").pack, hashlib.sha256, bytes(32)
buf, pending, mapped, count = bytearray(), 0, 0, 0
while row is not None:
    rowid, data, sz = row
    if data is None:
        buf += pack(rowid, -1, zero)
    else:
        buf += pack(rowid, len(data), sha(data).digest())
        pending += len(data)
        mapped += len(data)
    count += 1
    if pending >= 512 << 10 or len(buf) >= 1 << 16:
        out.write(buf)
        out.flush()
        buf.clear()
        pending = 0
        if stop:  # the verifier closed our stdin: it met us
            break
    if mapped >= window:
        # drop the mapping (a bounded RSS) on the same connection: the file is never opened by
        # its name again, and the scan goes on below the last row with a seek
        rows = None
        conn.execute("PRAGMA mmap_size = 0")
        conn.execute("PRAGMA mmap_size = 2147483648")
        rows = iter(conn.execute(below, (rowid,)))
        mapped = 0
    row = next(rows, None)
same_file()
out.write(buf + pack(count, -2, zero))
out.flush()
os._exit(0)  # no interpreter teardown: the verifier is waiting for this exit
"""


def _hash_rows(conn: sqlite3.Connection, inline: int, where: str, params: tuple[int, ...]) -> bytes:
    """The pass's records of the rows `where` selects, rowids rising (one per `rom/` row)."""
    buf = bytearray()
    sha, pack, zero = hashlib.sha256, _RECORD.pack, bytes(32)
    for rowid, data, _ in conn.execute(rom_rows_sql(inline, where), params):
        # a row visited without hashing it (compressed, large or not a BLOB) has a record too
        buf += pack(rowid, _NOT_HASHED, zero) if data is None else pack(rowid, len(data), sha(data).digest())
    return bytes(buf)


def decode(records: bytes) -> Digests:
    """The digests in a run of records (rows visited without hashing have none)."""
    return {r: ("sha256:" + d.hex(), n, n) for r, n, d in _RECORD.iter_unpack(records) if n != _NOT_HASHED}


def _falling(records: bytes) -> bool:
    """Whether the helper's records are well formed: rowids strictly falling, each length a size
    or "visited, not hashed"."""
    if not records:
        return True
    rowids, lengths, _ = zip(*_RECORD.iter_unpack(records), strict=True)
    return strictly_falling(rowids) and min(lengths) >= _NOT_HASHED


class Expected(NamedTuple):
    """The records a pass gives when each row's digest and length are what its object says: in
    the verifier's order (rowids rising) and in the helper's (falling)."""

    up: bytes
    down: bytes


def expected(rowids: Sequence[int], oids: Sequence[str], sizes: Sequence[int]) -> Expected | None:
    """The records of the rows (rowid, oid, sz, as columns) as a pass that found every row raw,
    with digest oid and length sz, writes them, in rowid order; None when an oid is not `sha256:`
    and 64 lower-case hex digits (no digest is written otherwise), or a value does not fit a
    record."""
    n = len(rowids)
    if not len(oids) == len(sizes) == n:
        raise ValueError("expected: columns of different lengths")
    if not n:
        return Expected(b"", b"")
    if not strictly_rising(rowids):
        order = sorted(range(n), key=rowids.__getitem__)
        rowids, oids, sizes = [rowids[i] for i in order], [oids[i] for i in order], [sizes[i] for i in order]
    # each oid 71 characters (the total alone would let one oid's digits run into the next)
    if set(map(len, oids)) != {71}:
        return None
    text = "".join(oids)
    if any(text[k::71] != c * n for k, c in enumerate("sha256:")):
        return None
    # every 71 characters start with the prefix, which cannot overlap itself: removing it leaves
    # 64 n characters exactly when it occurs nowhere else
    hexes = text.replace("sha256:", "")
    try:
        digests = bytes.fromhex(hexes)
        # upper case or white space is never what the pass writes
        if len(digests) != 32 * n or digests.hex() != hexes:
            return None
        records = list(map(_RECORD.pack, rowids, sizes, [digests[i : i + 32] for i in range(0, 32 * n, 32)]))
    except (ValueError, struct.error):  # not hex at all, or a value no record holds
        return None
    return Expected(b"".join(records), b"".join(reversed(records)))


class Hashed:
    """What one pass hashed: the verifier's records (rowids rising from the lowest `rom/` row)
    and the helper's (falling from the highest; checked for form only when decoded). `matches`
    compares them with what a ROM whose every row is as its object states would give, without
    decoding a digest; `digests` decodes them, hashing here what a malformed helper share left."""

    def __init__(
        self, up: bytes, down: bytes, rehash: Callable[[], bytes] | None = None, stop: int | None = None
    ) -> None:
        # stop: the row where the verifier met the helper's share (the first row above its own)
        self._up, self._down, self._rehash, self._stop = up, down, rehash, stop

    def matches(self, expect: Expected) -> bool:
        """True when every row the pass visited is one of `expect`'s, with its digest and length,
        and between them the two shares cover all of them (they may overlap where they met, and
        leave no row between them unread: the helper's share reaches down to the verifier's stop)."""
        up, down = self._up, self._down
        if down:
            lowest = _RECORD.unpack_from(down, len(down) - _RECORD.size)[0]
            if self._stop is None or lowest > self._stop:
                return False
        return (
            len(up) + len(down) >= len(expect.up)
            and expect.up.startswith(up)
            and expect.down.startswith(down)
        )

    def digests(self) -> Digests:
        """rowid -> (sha256:…, length, sz) of every row hashed (raises sqlite3.Error on a bad file)."""
        down = self._down
        if self._rehash is not None and not _falling(down):
            down, self._down = b"", b""
            self._up += self._rehash()  # the rows at and above where the two met
            self._rehash = None
        out = decode(down)
        out.update(decode(self._up))  # where the shares overlap, the verifier's own digests
        return out


class _Helper:
    """A started helper process hashing the raw `rom/` rows downwards from the highest rowid."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.proc = proc
        self._fd = proc.stdout.fileno()
        os.set_blocking(self._fd, False)
        self._buf = bytearray()
        self._cap: int | None = None
        self.failed = False
        self.frontier = 1 << 64  # the lowest rowid the helper reported (above every rowid)

    def poll(self) -> int:
        """Read what the helper has written so far (never waits); its frontier."""
        if self.failed:
            return self.frontier
        try:
            chunk = os.read(self._fd, 1 << 20)
        except BlockingIOError:
            return self.frontier
        except OSError:
            self._fail()
            return self.frontier
        if chunk:
            self._take(chunk)
        return self.frontier

    def _take(self, chunk: bytes) -> None:
        self._buf += chunk
        if self._cap is not None and len(self._buf) > self._cap:
            self._fail()
            return
        end = len(self._buf) // _RECORD.size * _RECORD.size
        if end:
            rowid, n, _ = _RECORD.unpack_from(self._buf, end - _RECORD.size)
            if n == _TRAILER:  # the trailer counts records; the frontier is the record before it
                if end == _RECORD.size:
                    return
                rowid = _RECORD.unpack_from(self._buf, end - 2 * _RECORD.size)[0]
            self.frontier = min(self.frontier, rowid)

    def _fail(self) -> None:
        """Stop trusting the helper: the verifier hashes everything itself from here."""
        self.failed = True
        self.frontier = 1 << 64
        self._buf.clear()
        self.close()

    def limit(self, rows: int) -> None:
        """At most one record per ROM row plus the trailer (more means a broken helper)."""
        self._cap = (rows + 1) * _RECORD.size
        if len(self._buf) > self._cap:
            self._fail()

    def finish(self) -> bytes | None:
        """Tell the helper to stop, take its last records; those records (without the trailer),
        or None when it failed."""
        if self.failed:
            return None
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # the helper stops at its next flush
        deadline = time.monotonic() + _DRAIN_SECONDS
        while not self.failed:
            left = deadline - time.monotonic()
            # a helper stuck (say in a read that never returns) is given up on: the verifier
            # hashes its rows itself
            if left <= 0 or not select.select([self._fd], [], [], min(left, _STALL_SECONDS))[0]:
                self._fail()
                break
            try:
                chunk = os.read(self._fd, 1 << 20)
            except BlockingIOError:
                continue
            except OSError:
                self._fail()
                break
            if not chunk:
                break
            self._take(chunk)
            if self._ended():
                break
        # the trailer is written after the helper's last check: it is the helper's success, so
        # its exit (slow: unmapping the file) is not waited for
        return None if self.failed or not self._ended() else self._records()

    def _ended(self) -> bool:
        """Whether what was read so far ends with a trailer record."""
        raw = self._buf
        if not raw or len(raw) % _RECORD.size:
            return False
        return bool(_RECORD.unpack_from(raw, len(raw) - _RECORD.size)[1] == _TRAILER)

    def _records(self) -> bytes | None:
        """The records before the trailer, when the trailer counts them (their form is checked
        when they are decoded: `Hashed.digests`)."""
        count, kind, _ = _RECORD.unpack_from(self._buf, len(self._buf) - _RECORD.size)
        body = bytes(self._buf[: -_RECORD.size])
        if kind != _TRAILER or count != len(body) // _RECORD.size:
            return None
        return body

    def close(self) -> None:
        """Kill the helper if it still runs and close its pipes; it is reaped in the background
        (an exiting helper takes milliseconds to unmap the file, which nothing waits for)."""
        proc = self.proc
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.kill()
            threading.Thread(target=proc.wait, name="romhash-reap", daemon=True).start()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


Source = tuple[Path, FileIdentity]  # the opened file and its identity (acxoci/fsutil.py)

# Held by every open of a cartridge file by name in this process (the header read, SQLite's
# open, this module's helper descriptor): `reader._open` compares the process's open files before
# and after SQLite's open, and no other cartridge open may add one in between (decision 0028).
OPEN_LOCK = threading.Lock()


def helper_command(fd: int, inline: int, window: int) -> list[str]:
    """The helper's command line: hash the raw `rom/` rows of the file open as `fd`, downwards,
    dropping its mapping after every `window` bytes."""
    return [
        sys.executable,
        "-I",
        "-S",
        "-c",
        _HELPER,
        str(fd),
        str(inline),
        str(window),
        rom_rows_sql(inline, "1", "DESC"),
        # a seek: the rows below are those the verifier's scan meets (its seek check)
        rom_rows_sql(inline, "rowid < ?", "DESC"),
    ]


def _spawn(source: Source, inline: int) -> _Helper | None:
    """Start the helper on the same file (checked by identity), or None where that cannot be done."""
    path, identity = source
    if not sys.executable or not os.path.isdir("/proc/self/fd"):
        return None
    with OPEN_LOCK:
        return _spawn_locked(path, identity, inline)


def _spawn_locked(path: Path, identity: FileIdentity, inline: int) -> _Helper | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if identity_of(st) != identity:
            return None
        proc = subprocess.Popen(
            helper_command(fd, inline, _WINDOW_BYTES),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            pass_fds=(fd,),
        )
    except OSError:
        return None
    finally:
        os.close(fd)
    return _Helper(proc)


class RomPass:
    """One ROM hashing pass over `conn`: started (helper spawned) at construction, finished by
    `result()`, which hashes upwards until it meets the helper and joins its digests. `close()`
    stops it."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        inline: int,
        source: Source | None,
    ) -> None:
        self._conn, self._inline = conn, inline
        self._helper: _Helper | None = None
        if source is not None and source[1][2] >= HELPER_MIN_BYTES:
            self._helper = _spawn(source, inline)

    def result(self, rows: int | None = None) -> Hashed:
        """The records of every `rom/` row (raises sqlite3.Error on a bad file). `rows`, the number
        of ROM rows when known, bounds what the helper may send."""
        helper, self._helper = self._helper, None
        if helper is None:
            return Hashed(_hash_rows(self._conn, self._inline, "1", ()), b"")
        try:
            if rows is not None:
                helper.limit(rows)
            mine, stop = self._hash_up(helper)
            theirs = helper.finish() if stop is not None else None
        finally:
            helper.close()
        if stop is None:  # the verifier reached the top itself
            return Hashed(mine, b"")
        conn, inline = self._conn, self._inline

        def rest() -> bytes:  # the rows at and above where the two met, hashed here
            return _hash_rows(conn, inline, "+rowid >= ?", (stop,))

        if theirs is None:  # the helper failed
            return Hashed(mine + rest(), b"")
        return Hashed(mine, theirs, rest, stop)  # `rest` again only if its share proves malformed

    def _hash_up(self, helper: _Helper) -> tuple[bytes, int | None]:
        """Hash upwards from the lowest rowid until a row the helper has reached: the records,
        and that row's rowid (None when the verifier hashed every row)."""
        buf = bytearray()
        sha, pack, zero = hashlib.sha256, _RECORD.pack, bytes(32)
        frontier, since = helper.poll(), 0
        for rowid, data, _ in self._conn.execute(rom_rows_sql(self._inline, "1")):
            if since >= _POLL_BYTES:
                frontier, since = helper.poll(), 0
            if rowid >= frontier:
                return bytes(buf), rowid
            if data is not None:
                buf += pack(rowid, len(data), sha(data).digest())
                since += len(data)
            else:
                buf += pack(rowid, _NOT_HASHED, zero)
                since += _POLL_BYTES >> 4
        return bytes(buf), None

    def close(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close()
