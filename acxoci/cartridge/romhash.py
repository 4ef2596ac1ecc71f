"""The ROM hashing pass, split over two processes so a large ROM is hashed on both cores.

hashlib and SQLite release the GIL, but the verifier's own per-row Python work holds it, and
threads were measured to gain nothing (docs/decisions/0025). So for a large ROM one helper
process, started before the typed scans, hashes the raw `rom/` rows above a split rowid while
the verifier scans, checks and then hashes the rows below it; the split balances the two by a
cost model (per-row Python work against per-byte hashing). The helper reads the very file the
verifier opened (its descriptor, through /proc/self/fd, and it checks that the file SQLite opened
for that name is the descriptor's) and is stdlib-only, isolated (`-I -S`).

Its digests are keyed by rowid and used only for rows that the verifier's own typed scan
accepted, and only when the row is stored raw (length = sz): exactly what the single-process
pass hashes. Any failure of the helper (no /proc, spawn error, non-zero exit, output of the wrong
size) only means those rows are hashed in-process instead; it never changes a verdict.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

from acxoci.fsutil import FileIdentity, identity_of

# rowid -> (sha256:…, length, sz) of each raw `rom/` row hashed by the pass
Digests = dict[int, tuple[str, int, int]]

HELPER_MIN_BYTES = 32 << 20  # below this a second process costs more than it saves
_ROW_SECONDS = 8e-6  # the verifier's Python work per ROM row (scans, index checks, manifest)
_BYTE_SECONDS = 0.9e-9  # reading + sha256 of one stored byte
_START_SECONDS = 0.02  # starting the helper interpreter
_RECORD = struct.Struct("<qq32s")  # rowid, length, sha256


_ROM_ROW = "typeof(name) = 'text' AND substr(name, 1, 4) = 'rom/'"


def _raw(inline: int) -> str:
    """A row the pass hashes from the row itself: stored raw (length = sz) and small."""
    return f"typeof(data) = 'blob' AND length(data) <= {inline} AND length(data) = sz"


def rom_rows_sql(inline: int, where: str) -> str:
    """The raw-row pass: each small raw `rom/` row's data (else NULL), a full scan of the table
    b-tree (`NOT INDEXED`, `+rowid` so a bound never turns into a seek), filtered by `where`."""
    return (
        f"SELECT rowid, CASE WHEN {_raw(inline)} THEN data END, sz FROM sqlar NOT INDEXED"
        f" WHERE {_ROM_ROW} AND {where}"
    )


def _sizes_sql(inline: int) -> str:
    """(rowid, length) of exactly the rows `rom_rows_sql` hashes, for choosing the split."""
    return f"SELECT rowid, length(data) FROM sqlar NOT INDEXED WHERE {_ROM_ROW} AND {_raw(inline)}"


_HELPER = """
import hashlib, os, sqlite3, stat, struct, sys
fd, split, inline, sql = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
conn = sqlite3.connect(f"file:/proc/self/fd/{fd}?mode=ro&immutable=1", uri=True)
conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, inline + 1)
for pragma in ("PRAGMA query_only = 1", "PRAGMA trusted_schema = 0", "PRAGMA cell_size_check = 1"):
    conn.execute(pragma)
out, pack, sha = bytearray(), struct.Struct("<qq32s").pack, hashlib.sha256
for rowid, data, sz in conn.execute(sql, (split,)):
    if data is not None:
        out += pack(rowid, len(data), sha(data).digest())
# SQLite opened a name (it resolves the /proc link by readlink), not the descriptor: every
# regular file open now, SQLite's included, must be the inherited one (same device and inode)
mine = os.fstat(fd)
for name in os.listdir("/proc/self/fd"):
    try:
        st = os.fstat(int(name))
    except OSError:
        continue
    if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
        sys.exit(4)
sys.stdout.buffer.write(out)  # at the end: the verifier reads only once it is done itself
"""


def _hash_rows(conn: sqlite3.Connection, inline: int, where: str, params: tuple[int, ...]) -> Digests:
    out: Digests = {}
    sha = hashlib.sha256
    for rowid, data, sz in conn.execute(rom_rows_sql(inline, where), params):
        if data is not None:
            out[rowid] = ("sha256:" + sha(data).hexdigest(), len(data), sz)
    return out


def _split(rows: list[tuple[int, int]]) -> int | None:
    """The rowid at or below which the verifier hashes (the helper takes the rest), or None when
    the ROM is too small for a helper to pay off."""
    total = sum(n for _, n in rows)
    if total < HELPER_MIN_BYTES:
        return None
    hash_all = total * _BYTE_SECONDS
    share = (_START_SECONDS + hash_all - len(rows) * _ROW_SECONDS) / (2 * hash_all)
    share = min(max(share, 0.0), 0.9)
    budget = share * total
    # the verifier always keeps the first row: the split is a stored rowid, so a bound within
    # SQLite's integers (rowid - 1 below a first rowid of -2**63 is not one)
    split, acc = rows[0]
    for rowid, n in rows[1:]:
        if acc + n > budget:
            break
        acc, split = acc + n, rowid
    return split


class _Helper:
    """A started helper process hashing the raw `rom/` rows with rowid > split (`rows` of them)."""

    def __init__(self, proc: subprocess.Popen[bytes], split: int, rows: int) -> None:
        self.proc, self.split, self.rows = proc, split, rows

    def collect(self) -> Digests | None:
        """Its digests, or None when it failed (the caller then hashes those rows itself)."""
        assert self.proc.stdout is not None
        cap = _RECORD.size * self.rows
        try:
            raw = self.proc.stdout.read(cap + 1)
            if len(raw) > cap:  # more records than rows: stop it rather than drain it
                self.close()
                return None
            code = self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.close()
            return None
        if code != 0 or len(raw) != cap:  # one record for each row of its share, no more, no less
            return None
        out: Digests = {}
        for rowid, n, digest in _RECORD.iter_unpack(raw):
            if rowid <= self.split:
                return None
            out[rowid] = ("sha256:" + digest.hex(), n, n)
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


Source = tuple[Path, FileIdentity]  # the opened file and its identity (acxoci/fsutil.py)


def _spawn(source: Source, split: int, rows: int, inline: int) -> _Helper | None:
    """Start the helper on the same file (checked by identity), or None where that cannot be done."""
    path, identity = source
    if not sys.executable or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if identity_of(st) != identity:
            return None
        proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _HELPER,
                str(fd),
                str(split),
                str(inline),
                rom_rows_sql(inline, "+rowid > ?"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            pass_fds=(fd,),
        )
    except OSError:
        return None
    finally:
        os.close(fd)
    return _Helper(proc, split, rows)


class RomPass:
    """One ROM hashing pass over `conn`: started (helper spawned) at construction, finished by
    `result()`, which hashes the verifier's share and joins the helper's. `close()` stops it."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        inline: int,
        source: Source | None,
    ) -> None:
        self._conn, self._inline = conn, inline
        self._helper: _Helper | None = None
        self._split: int | None = None
        if source is not None and source[1][2] >= HELPER_MIN_BYTES:
            sizes = [
                (int(r), int(n))
                for r, n in conn.execute(_sizes_sql(inline))
            ]
            split = _split(sizes) if sizes else None
            if split is not None:
                share = sum(1 for rowid, _ in sizes if rowid > split)
                self._helper = _spawn(source, split, share, inline) if share else None
                self._split = split if self._helper is not None else None

    def result(self) -> Digests:
        """rowid -> digest of every small raw `rom/` row (raises sqlite3.Error on a bad file)."""
        helper, self._helper = self._helper, None
        if helper is None or self._split is None:
            return _hash_rows(self._conn, self._inline, "1", ())
        try:
            mine = _hash_rows(self._conn, self._inline, "+rowid <= ?", (self._split,))
            theirs = helper.collect()
        finally:
            helper.close()
        if theirs is None:
            theirs = _hash_rows(self._conn, self._inline, "+rowid > ?", (self._split,))
        mine.update(theirs)
        return mine

    def close(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close()
