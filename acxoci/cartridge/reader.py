"""Read-only access to a `.acx` cartridge (decisions 0009 and 0030).

`open_cartridge` opens the path once, without blocking (a FIFO, socket or device is refused), and
copies the file through that one descriptor into a private folder that only this process can
reach; SQLite opens the copy. Every check therefore reads the bytes of the file whose identity
(`Cartridge.identity`) is reported, and nobody can change them while they are read. The header and
the schema (schema.py) are checked before any row is read. Rows come from one `NOT INDEXED` pass
per table, which checks the storage class of every column and the key: TEXT, unique, free of
control and format characters, and in the order of the table's own b-tree.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sqlite3
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

from acxoci.cartridge.constants import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_ENTRY_BYTES,
    HEADER_SIZE,
    MAX_ENVELOPE_BYTES,
    MAX_VALUE_BYTES,
    ZONE_ROM,
    portable_path_problem,
)
from acxoci.cartridge.schema import (
    COLUMNS,
    INDEXES,
    KEY_COLUMNS,
    OPTIONAL_TABLES,
    REQUIRED_TABLES,
    WITHOUT_ROWID,
    Header,
    check_schema,
    mode_problem,
    odd_character,
    parse_header,
)
from acxoci.cartridge.sqlar import BadEntry, Budget, stream_entry
from acxoci.errors import InvalidInput, NotFound, WriteBackFailed
from acxoci.fsutil import FileIdentity, identity_of

__all__ = ["SIDECAR_SUFFIXES", "AttestationRow", "BadEntry", "CapabilityRow", "Cartridge", "Header",
           "MemoryRow", "ObjectRow", "SignatureRow", "SkillRow", "SqlarInfo", "open_cartridge", "read_header"]


class SqlarInfo(NamedTuple):
    """A sqlar row without its data."""

    name: str
    mode: int
    mtime: int | None
    sz: int
    stored: int
    rowid: int
    zone: str  # the first path segment: rom or save


class ObjectRow(NamedTuple):
    """One `objects` row: an integrity unit."""

    oid: str
    kind: str
    source_ref: str
    canon: str
    zone: str
    sz: int


class MemoryRow(NamedTuple):
    """One `memory` row; `payload` is the raw UTF-8 bytes of the stored JCS text."""

    id: str
    zone: str
    payload: bytes
    oid: str
    created_at: str
    payload_loaded: bool = True
    artifact_fingerprint: str = ""
    codebase_fingerprint: str | None = None


class CapabilityRow(NamedTuple):
    """One `capabilities` row; `json` is the raw UTF-8 bytes of the stored JCS text."""

    id: str
    json: bytes
    content_hash: str


class SignatureRow(NamedTuple):
    """One `signatures` row; `envelope` kept as bytes until parsed strictly."""

    sig_id: str
    target: str
    manifest_hash: str
    envelope: bytes
    keyid: str
    public_key_pem: str | None
    alg: str
    created_at: str


class AttestationRow(NamedTuple):
    """One `attestations` row (unsigned; may be added after signing)."""

    att_id: str
    type: str
    subject_oid: str | None
    media_type: str
    document: bytes
    status_url: str | None
    created_at: str


class SkillRow(NamedTuple):
    """One `acx_skill` row (a derived, unsigned cache)."""

    sqlar_path: str
    name: str
    description: str
    skill_version: str | None
    license: str | None
    content_sha256: str


SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")
MAX_SAFE_SZ = 2**53 - 1
_CHUNK = 1 << 20

# What the one scan of each table reads: the columns its rows are made of, the key, and the rowid
# of a rowid table. Stored JSON and envelopes are read as their bytes (parsed strictly later); the
# memory scan reads no SAVE payload (the "memory+save" scan does), and sqlar data only its length.
_ENVELOPE = MAX_ENVELOPE_BYTES + 1  # read one byte past the limit: the parser refuses it, naming it
_ROM_PAYLOAD = "CASE WHEN zone = 'rom' THEN CAST(payload AS BLOB) END"
_READ: dict[str, tuple[str, ...]] = {
    "cartridge": ("key", "value"),
    "sqlar": ("name", "mode", "mtime", "sz", "ifnull(length(data), 0)", "rowid"),
    "memory": ("id", "zone", _ROM_PAYLOAD, "oid", "created_at", "artifact_fingerprint",
               "codebase_fingerprint"),
    "vectors": ("memory_id", "rowid"),
    "objects": ("oid", "kind", "source_ref", "canon", "zone", "sz"),
    "signatures": ("sig_id", "target", "manifest_hash", f"substr(CAST(envelope AS BLOB), 1, {_ENVELOPE})",
                   "keyid", "public_key_pem", "alg", "created_at"),
    "attestations": ("att_id", "type", "subject_oid", "media_type", "CAST(document AS BLOB)", "status_url",
                     "created_at"),
    "acx_skill": ("sqlar_path", "name", "description", "skill_version", "license", "content_sha256", "rowid"),
    "capabilities": ("id", "CAST(json AS BLOB)", "content_hash", "rowid"),
}
_READ["memory+save"] = tuple("CAST(payload AS BLOB)" if c == _ROM_PAYLOAD else c for c in _READ["memory"])
_CLASS = {"t": "text", "i": "integer", "b": "blob"}


def _open_file(path: Path) -> int:
    """A descriptor of the regular file at `path`. O_NONBLOCK: opening a FIFO would otherwise wait
    for a writer for ever."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise NotFound(f"no such file: {path}", where=where) from exc
    except OSError as exc:  # a directory opens read-only, and is refused below
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=where) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "is a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket or device)"
        raise InvalidInput(f"{what}, not a cartridge", where=where)
    return fd


def read_header(path: Path) -> Header:
    """Read and check the first 100 bytes (schema.parse_header). NotFound if the file is absent."""
    fd = _open_file(path)
    try:
        return parse_header(os.pread(fd, HEADER_SIZE, 0), os.fstat(fd).st_size, where=str(path))
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=str(path)) from exc
    finally:
        os.close(fd)


def check_no_sidecars(path: Path) -> None:
    """Refuse a cartridge with a `-wal`, `-shm` or `-journal` file beside it (decision 0009).

    Every other SQLite reader would apply those pages (and write them into the file on first
    open), so the bytes we verify would not be the content anyone else sees.
    """
    seen: set[str] = set()
    for base in (str(path), str(path.resolve())):
        for suffix in SIDECAR_SUFFIXES:
            side = base + suffix
            if side not in seen and os.path.lexists(side):
                raise InvalidInput(
                    f"a SQLite sidecar {Path(side).name} lies beside the cartridge; other readers would "
                    "apply it, so the file is refused (remove it, or copy the .acx alone)",
                    where=str(path),
                    details={"sidecar": suffix},
                )
            seen.add(side)


def _copy(src: int, dst: int, size: int) -> int:
    """Copy the first `size` bytes of `src` to `dst` (in the kernel on Linux); the bytes copied."""
    done = 0
    while done < size:
        if sys.platform == "linux":
            n = os.sendfile(dst, src, done, size - done)
        else:
            n = os.write(dst, os.pread(src, min(size - done, _CHUNK), done))
        if n == 0:
            break  # the file shrank: the caller sees it changed
        done += n
    return done


def _scratch() -> str:
    """The temporary folder (TMPDIR) the private copies go to, when no one else can replace a file
    there: it is ours or root's, and writable by no one else or sticky (as /tmp is)."""
    folder = tempfile.gettempdir()
    st = os.stat(folder)
    if st.st_uid not in (os.getuid(), 0) or (
        st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX
    ):
        raise InvalidInput(
            "the temporary folder is another user's, or writable by others and not sticky: a private "
            "copy there is not private",
            where=folder,
            hint="set TMPDIR to a folder of your own",
        )
    return folder


def _private_copy(fd: int, st: os.stat_result, head: bytes, where: str) -> sqlite3.Connection:
    """A read-only SQLite connection to a copy of the file behind `fd` (a new file of mode 0600 in
    the temporary folder, `_scratch`); the copy's name is removed as soon as SQLite holds it. The
    copy must be the whole file as it was when `head` was read, else the file changed while read."""
    copy = None
    try:
        out, copy = tempfile.mkstemp(prefix="acx-", suffix=".acx", dir=_scratch())
        try:
            same = _copy(fd, out, st.st_size) == st.st_size and os.pread(out, HEADER_SIZE, 0) == head
        finally:
            os.close(out)
        if not same or identity_of(os.fstat(fd)) != identity_of(st):
            raise InvalidInput("the file changed while it was being read; refusing it", where=where)
        return _connect(Path(copy).as_uri() + "?mode=ro&immutable=1", where=where)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise WriteBackFailed(
                f"cannot make the private copy a cartridge is read from: {exc.strerror or exc}",
                where=tempfile.gettempdir(),
                hint="free space in the temporary folder (TMPDIR) and run it again",
            ) from exc
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=where) from exc
    finally:
        if copy is not None:
            os.unlink(copy)


def _connect(uri: str, *, where: str) -> sqlite3.Connection:
    """A read-only, immutable connection with the value-size limit and safe pragmas."""
    conn = None
    try:
        conn = sqlite3.connect(uri, uri=True)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 1 << 20)
        for pragma in ("PRAGMA query_only = 1", "PRAGMA trusted_schema = 0", "PRAGMA cell_size_check = 1"):
            conn.execute(pragma)
        return conn
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        if conn is not None:
            conn.close()
        raise InvalidInput(f"cannot open as SQLite: {exc}", where=where) from exc


def open_cartridge(
    path: str | os.PathLike[str],
    *,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Cartridge:
    """Check the header and sidecars, copy the file privately, open the copy read-only and compare
    its schema with the one definition (schema.check_schema).

    Raises NotFound or InvalidInput naming the file (and header field, table or column) when it is
    not an acceptable cartridge.
    """
    p = Path(path)
    where = str(p)
    fd = _open_file(p)
    try:
        st = os.fstat(fd)
        head = os.pread(fd, HEADER_SIZE, 0)
        header = parse_header(head, st.st_size, where=where)
        check_no_sidecars(p)
        conn = _private_copy(fd, st, head, where)
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=where) from exc
    finally:
        os.close(fd)
    try:
        tables = check_schema(conn, where=where)
    except BaseException:
        conn.close()
        raise
    return Cartridge(
        conn,
        label=where,
        header=header,
        owns=True,
        max_entry_bytes=max_entry_bytes,
        max_decompressed=max_decompressed,
        tables=tables,
        source=(p.resolve(), identity_of(st)),
    )


# Queries whose plan was seen to be the one required, on a file whose schema check_schema accepted:
# without statistics tables (which that check refuses) SQLite plans from the schema alone, and
# every accepted schema is parsed as the reference's
_PLANNED: set[str] = set()


def _require_plan(conn: sqlite3.Connection, sql: str, *plan: str, where: str, checked: bool = False) -> None:
    """Refuse to run `sql` unless SQLite's plan for it is exactly the steps `plan`: which b-tree a
    query reads is part of what it means, and the planner may pick an index NOT INDEXED forbids."""
    if checked and sql in _PLANNED:
        return
    got = [str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
    if got != list(plan):
        raise InvalidInput(
            f"SQLite would read this cartridge through {got!r}, not {plan!r}; refusing", where=where
        )
    if checked:
        _PLANNED.add(sql)


class Cartridge:
    """A read-only view of one cartridge. Use `open_cartridge(path)` or `Cartridge.from_connection`.

    Every row method is one linear scan of its table (`NOT INDEXED`: the table b-tree itself, never
    an index that could disagree with it). Scans of an opened file are kept: its copy is private.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        label: str,
        header: Header | None = None,
        owns: bool = False,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        tables: frozenset[str] | None = None,
        source: tuple[Path, FileIdentity] | None = None,
    ) -> None:
        self.conn = conn
        self.label = label
        self.header = header
        self.max_entry_bytes = max_entry_bytes
        self.budget = Budget(max_decompressed)
        self._owns = owns
        self._tables = tables
        self._source = source
        self._cache: dict[str, Any] = {}

    @classmethod
    def from_connection(
        cls,
        conn: sqlite3.Connection,
        *,
        label: str = "<connection>",
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> Cartridge:
        """Wrap an open connection (e.g. a builder's writable one); the caller keeps ownership."""
        return cls(conn, label=label, owns=False, max_entry_bytes=max_entry_bytes)

    # -- lifecycle --
    def require_unchanged(self) -> None:
        """Refuse when the name this cartridge was opened by no longer holds the file that was read
        (written in place, replaced or renamed since): what was checked is not what it names."""
        if self._source is None:
            return
        real, identity = self._source
        try:
            same = identity_of(os.stat(real)) == identity
        except OSError:
            same = False  # gone, or no longer readable: not the file that was checked
        if not same:
            raise InvalidInput("the file changed while it was being verified; refusing it", where=self.label)

    @property
    def identity(self) -> FileIdentity | None:
        """The (device, inode, size, mtime, ctime) of the file that was read (None for a wrapped
        connection): compare it with the file a caller goes on to use."""
        return self._source[1] if self._source is not None else None

    def close(self) -> None:
        if self._owns:
            self.conn.close()

    def __enter__(self) -> Cartridge:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- low level --
    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run a read query; SQLite errors (corruption, missing columns) become InvalidInput."""
        try:
            return list(self.conn.execute(sql, params).fetchall())
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read cartridge: {exc}", where=self.label) from exc

    def tables(self) -> frozenset[str]:
        """Names of the tables present."""
        if self._tables is None:
            names = self.query("SELECT name FROM sqlite_master WHERE type='table'")
            self._tables = frozenset(str(r[0]) for r in names)
        return self._tables

    def has_table(self, name: str) -> bool:
        return name in self.tables()

    def check_tables(self) -> None:
        """Raise InvalidInput naming the missing tables."""
        missing = [t for t in REQUIRED_TABLES if t not in self.tables()]
        if missing:
            raise InvalidInput(f"not an .acx cartridge: missing table(s) {', '.join(missing)}",
                               where=self.label)

    def _bad(self, msg: str, **details: str) -> BadEntry:
        return BadEntry(msg, where=self.label, details=details)

    def _rows(self, scan: str) -> list[tuple[Any, ...]]:
        """The rows of one scan of `_READ` (kept for an opened file; a wrapped connection may change)."""
        if self._owns and scan in self._cache:
            rows: list[tuple[Any, ...]] = self._cache[scan]
            return rows
        rows = self._scan(scan.partition("+")[0], _READ[scan])
        if self._owns:
            self._cache[scan] = rows
        return rows

    def _scan(self, table: str, values: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """One pass over `table`'s own b-tree (NOT INDEXED): each row's `values`.

        Every column of every row must hold one of its storage classes (schema.COLUMNS); the key
        (schema.KEY_COLUMNS) must be TEXT without a control, format, surrogate or private-use
        character, unique, and the b-tree's own key (the key of a WITHOUT ROWID table, else the
        rowid) must rise strictly from row to row: out of order, a scan meets rows that every other
        reader's seek misses. Text is read as str (strict UTF-8).
        """
        key = KEY_COLUMNS[table]
        own = values.index(key if table in WITHOUT_ROWID else "rowid")
        allowed = {c: (_CLASS[k[0]], "null")[: len(k)] for c, k in COLUMNS[table]}  # "t?": text or null
        ok = " AND ".join(f"typeof({c}) IN ({', '.join(map(repr, a))})" for c, a in allowed.items())
        said = " || ',' || ".join(f"typeof({c})" for c in allowed)
        sql = f"SELECT CASE WHEN {ok} THEN NULL ELSE {said} END, {', '.join(values)} FROM {table} NOT INDEXED"
        try:
            _require_plan(self.conn, sql, f"SCAN {table}", where=self.label, checked=self._owns)
            rows = self.conn.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if not str(exc).startswith("Could not decode to UTF-8 column '"):
                raise InvalidInput(f"cannot read cartridge table {table}: {exc}", where=self.label) from exc
            column = str(exc).split("'")[1]
            raise self._bad(f"{table}.{column} holds text that is not valid UTF-8", table=table,
                            column=column) from exc
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read cartridge table {table}: {exc}", where=self.label) from exc
        wrong = next((r[0] for r in rows if r[0] is not None), None)
        if wrong is not None:  # the first row at fault, and its first column at fault
            found = zip(allowed, wrong.split(","), strict=True)
            column, typ = next((c, t) for c, t in found if t not in allowed[c])
            raise self._bad(
                f"{table}.{column} holds {'an' if typ[0] in 'aeiou' else 'a'} {typ} value, "
                f"expected {' or '.join(allowed[column])}",
                table=table,
                column=column,
            )
        keys = [r[values.index(key) + 1] for r in rows]
        odd = odd_character("".join(keys))
        if odd is not None:
            bad = next(k for k in keys if odd in k)
            raise self._bad(f"{table}.{key} {bad!r} holds the control or format character {odd!r}",
                            table=table, column=key)
        if len(set(keys)) != len(keys):
            dup = next(k for k, n in Counter(keys).items() if n > 1)
            raise self._bad(f"{table}.{key} {dup!r} appears twice (the key must be unique)", table=table,
                            column=key)
        if any(a[own + 1] >= b[own + 1] for a, b in pairwise(rows)):
            raise self._bad(f"table {table} is out of key order (a lookup by key would miss rows a scan "
                            "sees)", table=table)
        return [r[1:] for r in rows]

    # -- rows --
    def meta(self) -> dict[str, str]:
        """The `cartridge` key/value table."""
        return dict(self._rows("cartridge"))

    def sqlar_infos(self) -> list[SqlarInfo]:
        """Every sqlar row (without data): names portable, modes acceptable (schema.mode_problem)."""
        if self._owns and "sqlar_infos" in self._cache:
            return list(self._cache["sqlar_infos"])
        out: list[SqlarInfo] = []
        for name, mode, mtime, sz, stored, rowid in self._rows("sqlar"):
            problem = portable_path_problem(name)
            if problem is not None:
                raise self._bad(f"sqlar entry {name!r} {problem}", entry=name)
            problem = mode_problem(mode)
            if problem is not None:
                raise self._bad(f"sqlar entry {name!r}: {problem}", entry=name, table="sqlar", column="mode")
            out.append(SqlarInfo(name, mode, mtime, sz, stored, rowid, name.partition("/")[0]))
        if self._owns:
            self._cache["sqlar_infos"] = out
        return list(out)

    def sqlar_info(self, name: str) -> SqlarInfo | None:
        """The scanned row named `name` (never a lookup by SQL: that could pick a shadow row)."""
        index: dict[str, SqlarInfo] | None = self._cache.get("sqlar_index")
        if index is None:
            index = {i.name: i for i in self.sqlar_infos()}
            if self._owns:
                self._cache["sqlar_index"] = index
        return index.get(name)

    def _chunks(self, rowid: int) -> Iterator[bytes]:
        try:
            with self.conn.blobopen("sqlar", "data", rowid, readonly=True) as blob:
                for _ in range(0, len(blob), _CHUNK):
                    yield blob.read(_CHUNK)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read sqlar data: {exc}", where=self.label) from exc

    def sqlar_stream(
        self, info: SqlarInfo, sink_factory: Callable[[], Callable[[bytes], object]]
    ) -> Callable[[bytes], object]:
        """Stream the uncompressed bytes of one scanned row into a fresh sink (bounded; sqlar.py)."""
        if info.stored == 0 and info.sz == 0:
            return sink_factory()
        return stream_entry(
            info.name,
            info.sz,
            info.stored,
            lambda: self._chunks(info.rowid),
            sink_factory,
            where=self.label,
            max_bytes=self.max_entry_bytes,
            budget=self.budget,
        )

    def sqlar_sha256(self, info: SqlarInfo) -> tuple[str, int]:
        """(sha256:…, uncompressed length) of one scanned row, streamed: the length is `sz`, which
        a raw row's stored bytes are and an inflated row's output must be (sqlar.stream_entry)."""
        hashes: list[Any] = []

        def factory() -> Callable[[bytes], object]:
            hashes.append(hashlib.sha256())
            return hashes[-1].update  # type: ignore[no-any-return]

        self.sqlar_stream(info, factory)
        return "sha256:" + hashes[-1].hexdigest(), info.sz

    def sqlar_read(self, name: str) -> bytes | None:
        """The uncompressed bytes of sqlar entry `name`, or None if absent. Bounded (see sqlar.py)."""
        info = self.sqlar_info(name)
        if info is None:
            return None
        if max(info.stored, info.sz) > self.max_entry_bytes:
            raise self._bad(
                f"sqlar entry {name!r}: {max(info.stored, info.sz)} bytes exceed the "
                f"{self.max_entry_bytes}-byte limit",
                entry=name,
            )
        buf = bytearray()

        def factory() -> Callable[[bytes], object]:
            buf.clear()
            return buf.extend

        self.sqlar_stream(info, factory)
        return bytes(buf)

    def objects(self) -> list[ObjectRow]:
        """Every `objects` row (sizes within JSON's safe integers: the manifest is JSON)."""
        out = [ObjectRow(*r) for r in self._rows("objects")]
        for row in out:
            if not 0 <= row.sz <= MAX_SAFE_SZ:
                raise self._bad(
                    f"objects[{row.source_ref}].sz {row.sz} is outside 0..2**53-1",
                    table="objects",
                    column="sz",
                )
        return out

    def memory(self, memory_id: str | None = None, *, save_payloads: bool = True) -> list[MemoryRow]:
        """Every `memory` row, or the one with `memory_id`. With save_payloads=False the SAVE rows'
        payloads are not read at all (payload b"", payload_loaded False)."""
        out = [
            MemoryRow(i, zone, payload or b"", oid, created, payload is not None, afp, cfp)
            for i, zone, payload, oid, created, afp, cfp in self._rows(
                "memory+save" if save_payloads else "memory"
            )
            if memory_id is None or i == memory_id
        ]
        return out

    def capabilities(self, cap_id: str | None = None) -> list[CapabilityRow]:
        """Every `capabilities` row, or the one with `cap_id`."""
        return [CapabilityRow(*r[:3]) for r in self._rows("capabilities") if cap_id is None or r[0] == cap_id]

    def signatures(self) -> list[SignatureRow]:
        """Every `signatures` row, newest `created_at` first (the reference's pick order)."""
        return sorted(
            (SignatureRow(*r) for r in self._rows("signatures")), key=lambda r: r.created_at, reverse=True
        )

    def attestations(self) -> list[AttestationRow]:
        """Every `attestations` row (empty if the table is absent)."""
        return (
            [AttestationRow(*r) for r in self._rows("attestations")] if self.has_table("attestations") else []
        )

    def skills(self) -> list[SkillRow]:
        """The `acx_skill` rows that agree with the signed ROM: the row's sqlar_path is a `rom/`
        SKILL.md whose bytes hash to `content_sha256` and whose frontmatter name is `name`.

        `acx_skill` itself is unsigned; rows that do not match a ROM file are ignored, so no
        decision (workflow ready, inspect, spec) ever rests on an uncovered row.
        """
        if not self.has_table("acx_skill"):
            return []
        from acxoci.cartridge.skills import parse_frontmatter

        out: list[SkillRow] = []
        for r in self._rows("acx_skill"):
            row = SkillRow(*r[:6])
            if not (row.sqlar_path.startswith("rom/skills/") and row.sqlar_path.endswith("/SKILL.md")):
                continue
            data = self.sqlar_read(row.sqlar_path)
            if data is None or hashlib.sha256(data).hexdigest() != row.content_sha256:
                continue
            try:
                fm, _ = parse_frontmatter(data, where=row.sqlar_path)
            except InvalidInput:
                continue
            if fm.get("name") == row.name:
                out.append(row)
        return out

    # -- structure --
    def check_side_tables(self) -> None:
        """One pass over each unsigned side table (vectors, attestations, acx_skill): typed, and
        keyed by a unique TEXT, so no reader of them meets a shadow row the verdict never saw."""
        for table in OPTIONAL_TABLES:
            if self.has_table(table):
                self._rows(table)

    def check_indexes(self) -> None:
        """Every index of the file holds exactly its table's entries, and every rowid a scan of a
        signed rowid table meets is found again by a seek (decision 0009, "B-trees agree").

        Our scans read the table b-trees only, but any other reader's `WHERE name = ?` or
        `WHERE zone = 'rom'` is answered from an index, and a hand-edited index can point a
        signed name at an unsigned row. So each index is walked once (a covering scan: index pages
        only) and compared with its table's scan, sorted: the same entries, each once, ascending.
        """
        for index, (table, columns) in INDEXES.items():
            if self.has_table(table):
                self._check_index(index, table, columns)
        for table in ("sqlar", "capabilities"):
            self._check_rowid_seeks(table)

    def _check_index(self, index: str, table: str, columns: tuple[str, ...]) -> None:
        """The index holds the table's entries: every index column is TEXT by the table's typed
        scan, and SQLite orders TEXT (BINARY) by its UTF-8 bytes, which is Python's order of the
        decoded strings, so the index must read as the table's rows sorted."""
        read = _READ[table]
        at = [read.index(c) for c in columns]
        want = sorted(tuple(r[i] for i in at) for r in self._rows(table))
        sql = f"SELECT {', '.join(columns)} FROM {table} INDEXED BY {index}"
        try:
            _require_plan(
                self.conn,
                sql,
                f"SCAN {table} USING COVERING INDEX {index}",
                where=self.label,
                checked=self._owns,
            )
            entries = self.conn.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if not str(exc).startswith("Could not decode to UTF-8"):
                raise InvalidInput(f"cannot read index {index}: {exc}", where=self.label) from exc
            entries = None
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read index {index}: {exc}", where=self.label) from exc
        if entries != want:
            raise self._bad(
                f"index {index} disagrees with table {table}: an entry names no row of the table, "
                "a row has no entry, or entries are out of order or repeated",
                table=table,
                index=index,
            )

    def _check_rowid_seeks(self, table: str) -> None:
        """Each row a scan meets is found again by a fresh seek on its rowid.

        A rowid b-tree's interior pages hold separator rowids that a scan never reads; a lowered
        one sends every other reader's lookup (`WHERE name = ?` ends in a rowid seek) to the
        wrong leaf. One statement: a reverse scan, each row looked up by a correlated seek. In
        descending order no seek is the b-tree cursor's "next row" shortcut (taken only for the
        current rowid + 1), so every one descends from the root through the separators.
        """
        sql = (
            f"SELECT a.rowid FROM {table} AS a NOT INDEXED WHERE NOT EXISTS"
            f" (SELECT 1 FROM {table} AS b WHERE b.rowid = a.rowid) ORDER BY a.rowid DESC LIMIT 1"
        )
        try:
            _require_plan(
                self.conn,
                sql,
                "SCAN a",
                "CORRELATED SCALAR SUBQUERY 1",
                "SEARCH b USING INTEGER PRIMARY KEY (rowid=?)",
                where=self.label,
                checked=self._owns,
            )
            missed = self.conn.execute(sql).fetchone()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read cartridge table {table}: {exc}", where=self.label) from exc
        if missed is not None:
            raise self._bad(
                f"table {table}: a seek for rowid {missed[0]} misses the row a scan returns "
                "(its interior pages disagree with its leaves)",
                table=table,
            )

    def count(self, table: str, where: str = "", params: tuple[Any, ...] = ()) -> int:
        """Row count of one of the known tables (0 if the table is absent)."""
        if table not in COLUMNS:
            raise ValueError(f"unknown table {table}")
        if not self.has_table(table):
            return 0
        return int(self.query(f"SELECT count(*) FROM {table} NOT INDEXED {where}", params)[0][0])

    def iter_rom_sqlar_names(self) -> Iterator[str]:
        """Names of the `rom/` sqlar rows."""
        for info in self.sqlar_infos():
            if info.zone == ZONE_ROM:
                yield info.name
