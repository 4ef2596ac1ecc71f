"""Read-only access to a `.acx` cartridge: header and schema checked (acxoci/cartridge/schema.py)
before any row is read, then typed rows from one linear pass per table: key columns must be TEXT
(typeof) and unique, text read as bytes and decoded strictly, sqlar data streamed (`blobopen`).

The file is opened with `mode=ro&immutable=1` and refused while a `-wal`, `-shm` or `-journal`
sidecar exists (docs/decisions/0009), so what is read is exactly the file's own bytes and no
journal, lock or write ever touches it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import sqlite3
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

from acxoci.cartridge.constants import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_ENTRY_BYTES,
    HEADER_SIZE,
    MAX_ENVELOPE_BYTES,
    MAX_PATH_BYTES,
    MAX_VALUE_BYTES,
    PORTABLE_RE,
    ZONE_ROM,
    ZONE_SAVE,
    portable_path_problem,
)
from acxoci.cartridge.order import strictly_rising
from acxoci.cartridge.romhash import OPEN_LOCK, Expected, Hashed, RomPass
from acxoci.cartridge.schema import (
    KEY_COLUMNS,
    OPTIONAL_TABLES,
    REQUIRED_TABLES,
    WITHOUT_ROWID,
    Header,
    check_schema,
    index_entry_columns,
    mode_problem,
    parse_header,
    reference_columns,
)
from acxoci.cartridge.sqlar import BadEntry, Budget, stream_entry
from acxoci.errors import InvalidInput, NotFound
from acxoci.fsutil import FileIdentity, identity_of

__all__ = [
    "SIDECAR_SUFFIXES",
    "AttestationRow",
    "BadEntry",
    "CapabilityRow",
    "Cartridge",
    "Header",
    "MemoryRow",
    "ObjectRow",
    "SignatureRow",
    "SkillRow",
    "SqlarInfo",
    "open_cartridge",
    "read_header",
]


class SqlarInfo(NamedTuple):
    """A sqlar row without its data (a tuple: one is made per row of a large ROM, cheaply)."""

    name: str
    mode: int | None
    mtime: int | None
    sz: int
    stored: int
    rowid: int
    zone: str  # the first path segment: rom or save


class ObjectRow(NamedTuple):
    """One `objects` row: an integrity unit (a tuple, like SqlarInfo)."""

    oid: str
    kind: str
    source_ref: str
    canon: str
    zone: str
    sz: int


# NamedTuple._make without its Python frame or length check, for rows built from whole scanned
# columns (each of the tuple's length by construction): one per row of a large ROM
_NEW_SQLAR_INFO = functools.partial(tuple.__new__, SqlarInfo)
_NEW_OBJECT_ROW = functools.partial(tuple.__new__, ObjectRow)


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
_CHUNK = 1 << 20
_BATCH = 4096  # rows per fetch in the index walks (bounded memory, few calls)
_INLINE = 1 << 20  # raw sqlar rows up to this size are hashed from the scanned row itself
_NAME_PATTERNS = ("rom/skills/", "/SKILL.md")

# Text columns whose consumers want the stored bytes (JSON parsed strictly later): never decoded.
_RAW_TEXT = frozenset({("memory", "payload"), ("capabilities", "json"), ("attestations", "document")})


class _NotUtf8(Exception):
    """A text value did not decode: the scan is repeated reading text as bytes."""


# Column kinds of the typed scans: text, nullable text, integer, nullable integer, blob or NULL.
_Spec = tuple[tuple[str, str], ...]


def read_header(path: Path) -> Header:
    """Read and check the first 100 bytes (schema.parse_header). NotFound if the file is absent."""
    return _read_header(path)[0]


def _read_header(path: Path) -> tuple[Header, FileIdentity]:
    """The checked header and the identity (fsutil.FileIdentity) of the file it came from."""
    where = str(path)
    with OPEN_LOCK:  # its descriptor must not appear inside another open's window (`_open`)
        return _read_header_locked(path, where)


def _read_header_locked(path: Path, where: str) -> tuple[Header, FileIdentity]:
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer for ever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise NotFound(f"no such file: {path}", where=where) from exc
    except IsADirectoryError as exc:
        raise InvalidInput("is a directory, not a cartridge", where=where) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=where) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InvalidInput("is a directory, not a cartridge", where=where)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidInput("not a regular file (a FIFO, socket or device), not a cartridge", where=where)
        head = os.pread(fd, HEADER_SIZE, 0)
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=where) from exc
    finally:
        os.close(fd)
    return parse_header(head, st.st_size, where=where), identity_of(st)


def check_no_sidecars(path: Path) -> None:
    """Refuse a cartridge with a `-wal`, `-shm` or `-journal` file beside it (decision 0009).

    Every other SQLite reader would apply those pages (and write them into the file on first
    open), so the bytes we verify would not be the content anyone else sees.
    """
    seen: set[str] = set()
    for base in (str(path), str(path.resolve())):
        for suffix in SIDECAR_SUFFIXES:
            side = base + suffix
            if side in seen:
                continue
            seen.add(side)
            if os.path.lexists(side):
                raise InvalidInput(
                    f"a SQLite sidecar {Path(side).name} lies beside the cartridge; other readers would "
                    "apply it, so the file is refused (remove it, or copy the .acx alone)",
                    where=str(path),
                    details={"sidecar": suffix},
                )


def _text(value: object, where: str, what: str) -> str:
    """Decode a column read as bytes (CAST AS BLOB) as strict UTF-8."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadEntry(
                f"{what} is not valid UTF-8 (byte {exc.start})", where=where, details={"entry": what}
            ) from exc
    raise BadEntry(f"{what} is {type(value).__name__}, expected text", where=where, details={"entry": what})


def _opt_text(value: object, where: str, what: str) -> str | None:
    return None if value is None else _text(value, where, what)


def _blob(value: object, where: str, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    raise BadEntry(f"{what} is {type(value).__name__}, expected text", where=where, details={"entry": what})


MAX_SAFE_SZ = 2**53 - 1

_SQL_TYPE = {
    "t": ("text",),
    "t?": ("text", "null"),
    "i": ("integer",),
    "i?": ("integer", "null"),
    "b?": ("blob", "null"),
}
# the Python type sqlite3 returns for each storage class (the reader's connections keep the
# default text factory and set no converters)
_SQL_NAME: dict[type, str] = {str: "text", int: "integer", float: "real", bytes: "blob", type(None): "null"}
_PY_TYPE = {k: frozenset(t for t, n in _SQL_NAME.items() if n in names) for k, names in _SQL_TYPE.items()}


class RomHashing:
    """A started ROM hashing pass (romhash.RomPass). `digest(info)` waits for it once, then gives
    the digest of one scanned row: from the pass when it hashed that row, else streamed now
    (compressed or large rows, under the decompression budget). `close()` stops it early."""

    def __init__(self, rom_pass: RomPass, cart: Cartridge) -> None:
        self._pass: RomPass | None = rom_pass
        self._hashed: Hashed | None = None
        self._inline: dict[int, tuple[str, int, int]] | None = None
        self._cart = cart

    def all_match(self, expect: Expected | None) -> bool:
        """Whether the pass found exactly the `rom/` rows of `expect` (romhash.expected: every one
        of the file), each stored raw with the digest and length stated: one comparison of what
        the pass wrote, no digest decoded (waits for the pass once). False (or no `expect`)
        leaves the caller to `digests`, which tells which row differs."""
        hashed = self._result()
        return expect is not None and hashed.matches(expect)

    def digests(self) -> dict[int, tuple[str, int, int]]:
        """rowid -> (sha256:…, length, sz) of the rows the pass hashed (waits for it once). Use
        one only for a scanned row stored raw (length = sz = stored): `digest` does the rest."""
        if self._inline is None:
            hashed = self._result()
            try:
                self._inline = hashed.digests()
            except sqlite3.Error as exc:
                label = self._cart.label
                raise InvalidInput(f"cannot read cartridge table sqlar: {exc}", where=label) from exc
        return self._inline

    def _result(self) -> Hashed:
        if self._hashed is None:
            rom_pass, self._pass = self._pass, None
            if rom_pass is None:
                raise InvalidInput("the ROM hashing pass failed or was closed", where=self._cart.label)
            try:
                # the typed scan's row count bounds what the helper may send
                self._hashed = rom_pass.result(rows=len(self._cart.sqlar_infos()))
            except sqlite3.Error as exc:
                label = self._cart.label
                raise InvalidInput(f"cannot read cartridge table sqlar: {exc}", where=label) from exc
            finally:
                rom_pass.close()
        return self._hashed

    def digest(self, info: SqlarInfo) -> tuple[str, int]:
        """(sha256:…, uncompressed size) of one row that the typed sqlar scan accepted."""
        got = self.digests().get(info.rowid)
        if got is not None and got[1] == info.sz == info.stored == got[2]:
            return got[0], got[1]
        return self._cart.sqlar_sha256(info)

    def close(self) -> None:
        rom_pass, self._pass = self._pass, None
        if rom_pass is not None:
            rom_pass.close()


_CLASS_RANK = {"null": 0, "integer": 1, "real": 1, "text": 2, "blob": 3}


def _record_order(entry: tuple[Any, ...]) -> tuple[Any, ...]:
    """SQLite's record order for (typeof, value) pairs under BINARY collation: NULL < numbers
    (by value) < text (by UTF-8 bytes) < blobs (by bytes), column by column."""
    out: list[Any] = []
    for i in range(0, len(entry), 2):
        typ, value = entry[i], entry[i + 1]
        out.append((_CLASS_RANK.get(str(typ), 4), b"" if value is None else value))
    return tuple(out)


def _require_plan(
    conn: sqlite3.Connection, sql: str, *plan: str, where: str, params: tuple[Any, ...] = ()
) -> None:
    """Refuse to run `sql` unless SQLite's plan for it is exactly the steps `plan`: which b-tree a
    query reads is part of what it means, and the planner may pick an index NOT INDEXED forbids."""
    got = [str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    if got != list(plan):
        raise InvalidInput(
            f"SQLite would read this cartridge through {got!r}, not {plan!r}; refusing", where=where
        )


_OPEN_SECONDS = 30.0  # SQLite opens by name: a FIFO swapped in would block its open for ever


def _open_sqlite(uri: str, *, where: str) -> sqlite3.Connection:
    """sqlite3.connect, bounded: SQLite's own open of the name has no O_NONBLOCK, so a FIFO put
    at the path after its header was read would block it until a writer came. The open runs in
    a daemon thread; past _OPEN_SECONDS the cartridge is refused and the thread abandoned."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["conn"] = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=run, name="acx-sqlite-open", daemon=True)
    worker.start()
    worker.join(_OPEN_SECONDS)
    if worker.is_alive():
        raise InvalidInput(
            f"opening the file did not finish in {_OPEN_SECONDS:.0f} s (was it replaced by a FIFO?)",
            where=where,
        )
    if "error" in box:
        raise box["error"]
    conn: sqlite3.Connection = box["conn"]
    return conn


def _open_files() -> frozenset[tuple[int, int, int]] | None:
    """(descriptor, device, inode) of every regular file this process has open; None where
    /proc/self/fd does not exist."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    out: set[tuple[int, int, int]] = set()
    for name in names:
        try:
            st = os.fstat(int(name))
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            out.add((int(name), st.st_dev, st.st_ino))
    return frozenset(out)


def _connect(uri: str, *, where: str) -> sqlite3.Connection:
    """A read-only, immutable connection with the value-size limit and safe pragmas."""
    try:
        conn = _open_sqlite(uri, where=where)
    except sqlite3.Error as exc:
        raise InvalidInput(f"cannot open as SQLite: {exc}", where=where) from exc
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 1 << 20)
        for pragma in ("PRAGMA query_only = 1", "PRAGMA trusted_schema = 0", "PRAGMA cell_size_check = 1"):
            conn.execute(pragma)
    except sqlite3.Error as exc:
        conn.close()
        raise InvalidInput(f"not a readable SQLite database: {exc}", where=where) from exc
    return conn


class Cartridge:
    """A read-only view of one cartridge. Use `open_cartridge(path)` or `Cartridge.from_connection`.

    Every row method is one linear scan of its table (`NOT INDEXED`: the table b-tree itself, never
    an index that could disagree with it), checking each column's storage class and the key's
    uniqueness as it goes. Scans of an opened file are cached (the file is immutable).
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
        self._tables: frozenset[str] | None = tables
        self._source = source
        self._early: RomHashing | None = None
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
        """Refuse when the file this cartridge was opened from is no longer the one opened (written
        in place, replaced or renamed since): what was checked would not be what the name holds."""
        if self._source is None:
            return
        real, identity = self._source
        try:
            same = identity_of(os.stat(real)) == identity
        except OSError:
            same = False  # gone, or no longer readable: not the file that was checked
        if not same:
            raise InvalidInput("the file changed while it was being verified; refusing it", where=self.label)

    def close(self) -> None:
        early, self._early = self._early, None
        if early is not None:
            early.close()
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

    @property
    def identity(self) -> FileIdentity | None:
        """The (device, inode, size, mtime, ctime) of the opened file, checked at open (None for a
        wrapped connection): compare it with the file a caller goes on to use."""
        return self._source[1] if self._source is not None else None

    def tables(self) -> frozenset[str]:
        """Names of the tables present."""
        if self._tables is None:
            rows = self.query("SELECT CAST(name AS BLOB) FROM sqlite_master WHERE type='table'")
            self._tables = frozenset(_text(r[0], self.label, "sqlite_master.name") for r in rows)
        return self._tables

    def has_table(self, name: str) -> bool:
        return name in self.tables()

    def check_tables(self) -> None:
        """Raise InvalidInput naming the missing tables."""
        missing = [t for t in REQUIRED_TABLES if t not in self.tables()]
        if missing:
            raise InvalidInput(
                f"not an .acx cartridge: missing table(s) {', '.join(missing)}", where=self.label
            )

    def _cached(self, key: str, make: Callable[[], Any]) -> Any:
        if not self._owns:
            return make()
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _scan(self, table: str, spec: _Spec, *, exprs: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
        """One pass over `table`: each row's values in `spec` order, checked against the column kind.

        The key column (schema.KEY_COLUMNS) must be TEXT and unique, and the b-tree's own key (the
        TEXT primary key of a WITHOUT ROWID table, else the rowid) must rise strictly from row to
        row: out of order, a scan meets rows that every other reader's seek misses. `exprs` may
        replace a column's value expression (its storage class is still checked) so big values are
        never loaded when not needed.

        Text is read as str, which sqlite3 decodes as strict UTF-8; when a value does not decode,
        the pass is repeated reading text as bytes (CAST AS BLOB) so the consumer's strict decode
        names the entry at fault. Columns in _RAW_TEXT are always read as bytes.
        """
        return self._scan_typed(table, spec, exprs=exprs)[0]

    def _scan_typed(
        self, table: str, spec: _Spec, *, exprs: dict[str, str] | None = None, columns: bool = False
    ) -> tuple[list[tuple[Any, ...]], bool]:
        """`_scan`, and whether text was read natively (then every checked TEXT value is a str).
        With columns=True, one tuple per column of `spec` instead of one per row ([] for no rows)."""
        try:
            return self._scan_pass(table, spec, exprs or {}, native=True, columns=columns), True
        except _NotUtf8:
            return self._scan_pass(table, spec, exprs or {}, native=False, columns=columns), False

    def _scan_pass(
        self, table: str, spec: _Spec, exprs: dict[str, str], *, native: bool, columns: bool = False
    ) -> list[tuple[Any, ...]]:
        key = KEY_COLUMNS[table]
        names = [name for name, _ in spec]

        def value(name: str, kind: str) -> str:
            if name in exprs:
                return exprs[name]
            if kind[0] == "t" and (not native or (table, name) in _RAW_TEXT):
                return f"CAST({name} AS BLOB)"
            if not native and name != "rowid":
                # text that does not decode may sit in a column of another kind: read as bytes
                # too, so that typeof() names it instead of the decoder failing the whole scan
                return f"CASE WHEN typeof({name}) = 'text' THEN CAST({name} AS BLOB) ELSE {name} END"
            return name

        values = [value(name, kind) for name, kind in spec]
        # a value read as itself has its storage class in its Python type (sqlite3 maps each class
        # to one type: no converters are set), checked on whole columns below; a value read
        # through an expression or a cast is checked by typeof() in SQL
        in_sql = [values[i] != name for i, (name, _) in enumerate(spec)]
        # the b-tree's own key: a rowid table's rowid, else the TEXT primary key, whose value as
        # read (a str, or bytes when read as bytes) orders as SQLite's BINARY order once the type
        # check has passed; read once when the spec has it, else as an extra column
        own = key if table in WITHOUT_ROWID else "rowid"
        at = names.index(own) + 2 if own in names and own not in exprs else None
        sql_checked = [(name, kind) for (name, kind), s in zip(spec, in_sql, strict=True) if s]
        ok = " AND ".join(
            f"typeof({name}) IN ({', '.join(repr(t) for t in _SQL_TYPE[kind])})" for name, kind in sql_checked
        )
        types = " || ',' || ".join(f"typeof({name})" for name in names)
        order = None if at is not None else f"CAST({key} AS BLOB)" if table in WITHOUT_ROWID else "rowid"
        check = f"CASE WHEN {ok} THEN NULL ELSE {types} END" if ok else None
        # a lead column that would be NULL in every row is not read (its column is made below)
        lead = [c for c in (check, order) if c is not None]
        sql = f"SELECT {', '.join(lead + values)} FROM {table} NOT INDEXED"
        try:
            _require_plan(self.conn, sql, f"SCAN {table}", where=self.label)
            rows = self.conn.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if native and str(exc).startswith("Could not decode to UTF-8"):
                raise _NotUtf8 from exc
            raise InvalidInput(f"cannot read cartridge table {table}: {exc}", where=self.label) from exc
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read cartridge table {table}: {exc}", where=self.label) from exc
        if not rows:
            return []
        cols = list(zip(*rows, strict=True))
        for i, c in enumerate((check, order)):
            if c is None:
                cols.insert(i, (None,) * len(rows))
        del rows
        self._check_types(table, spec, in_sql, cols)
        ordered = cols[1] if at is None else cols[at]
        # strictly rising: unique and in order in one pass (then a key that is the b-tree's own
        # needs no set of its own)
        rising = strictly_rising(ordered)
        if key in names:
            keys = cols[names.index(key) + 2]
            if not (rising and keys is ordered) and len(set(keys)) != len(keys):
                seen: set[Any] = set()
                for value_ in keys:
                    if value_ in seen:
                        raise BadEntry(
                            f"{table}.{key} {value_!r} appears twice (the key must be unique)",
                            where=self.label,
                            details={"table": table, "column": key},
                        )
                    seen.add(value_)
        if not rising:
            raise BadEntry(
                f"table {table} is out of key order (a lookup by key would miss rows a scan sees)",
                where=self.label,
                details={"table": table},
            )
        return cols[2:] if columns else list(zip(*cols[2:], strict=True))

    def _check_types(self, table: str, spec: _Spec, in_sql: list[bool], cols: list[tuple[Any, ...]]) -> None:
        """BadEntry naming the first row's first column whose storage class its kind refuses:
        cols[0] is the SQL check (NULL, else every column's typeof), cols[2:] the values."""
        said_col = cols[0]
        first = None
        if said_col.count(None) != len(said_col):
            first = next(r for r, t in enumerate(said_col) if t is not None)
        for i, (_, kind) in enumerate(spec):
            if in_sql[i]:
                continue
            allowed = _PY_TYPE[kind]
            col = cols[i + 2]
            if not set(map(type, col)) <= allowed:
                row = next(r for r, v in enumerate(col) if type(v) not in allowed)
                first = row if first is None else min(first, row)
        if first is None:
            return
        said = said_col[first]  # None when this row's SQL-checked columns are all acceptable
        for i, (name, kind) in enumerate(spec):
            if in_sql[i]:
                if said is None:
                    continue
                typ = str(said).split(",")[i]
            else:
                typ = _SQL_NAME.get(type(cols[i + 2][first]), type(cols[i + 2][first]).__name__)
            if typ not in _SQL_TYPE[kind]:
                raise BadEntry(
                    f"{table}.{name} holds {'an' if typ[:1] in 'aeiou' else 'a'} {typ} value, "
                    f"expected {' or '.join(_SQL_TYPE[kind])}",
                    where=self.label,
                    details={"table": table, "column": name},
                )

    # -- rows --
    def meta(self) -> dict[str, str]:
        """The `cartridge` key/value table; non-text or non-UTF-8 values raise BadEntry naming the key."""
        return dict(self._cached("meta", self._meta))

    def _meta(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in self._scan("cartridge", (("key", "t"), ("value", "t?"))):
            key = _text(k, self.label, "cartridge.key")
            if v is None:
                raise BadEntry(
                    f"meta {key!r} is NULL", where=self.label, details={"entry": f"cartridge:{key}"}
                )
            out[key] = _text(v, self.label, f"cartridge:{key}")
        return out

    def sqlar_infos(self) -> list[SqlarInfo]:
        """Every sqlar row (without data): TEXT unique names checked against the portable-path
        rule, integer sizes, acceptable file modes (schema.mode_problem), BLOB data."""
        return list(self._cached("sqlar", self._sqlar_infos))

    def _sqlar_infos(self) -> list[SqlarInfo]:
        cols, native = self._scan_typed(
            "sqlar",
            (("name", "t"), ("mode", "i"), ("mtime", "i?"), ("sz", "i"), ("data", "b?"), ("rowid", "i")),
            exprs={"data": "ifnull(length(data), 0)"},
            columns=True,
        )
        if native and cols:
            # whole columns at once: every name portable (so ASCII: its length is its size in
            # bytes), every distinct mode acceptable; else the row loop below names the first fault
            names = cols[0]
            fullmatch = PORTABLE_RE.fullmatch
            if (
                max(map(len, names)) <= MAX_PATH_BYTES
                and all(map(fullmatch, names))
                and not any(map(mode_problem, set(cols[1])))
            ):
                # a portable name is `rom/…` or `save/…`: its fourth character tells which (the
                # zone is then one shared string, not a new one per row)
                zones = [ZONE_ROM if n[3] == "/" else ZONE_SAVE for n in names]
                return list(map(_NEW_SQLAR_INFO, zip(*cols, zones, strict=True)))
        rows = list(zip(*cols, strict=True))
        out: list[SqlarInfo] = []
        modes: dict[int, str | None] = {}  # the scan checked every storage class: ints are ints
        for n, mode, mtime, sz, stored, rowid in rows:
            name = self._sqlar_name(n)
            if mode in modes:
                problem = modes[mode]
            else:
                problem = modes[mode] = mode_problem(mode)
            if problem is not None:
                raise BadEntry(
                    f"sqlar entry {name!r}: {problem}",
                    where=self.label,
                    details={"entry": name, "table": "sqlar", "column": "mode"},
                )
            out.append(SqlarInfo(name, mode, mtime, sz, stored, rowid, name.partition("/")[0]))
        return out

    def _sqlar_name(self, raw: object) -> str:
        if type(raw) is str and portable_path_problem(raw) is None:
            return raw  # portable names have no NUL, control or non-ASCII character
        if isinstance(raw, bytes) and b"\x00" in raw:
            raise BadEntry(
                f"sqlar entry {raw!r} contains NUL", where=self.label, details={"entry": repr(raw)}
            )
        name = _text(raw, self.label, "sqlar.name")
        problem = portable_path_problem(name)
        if problem is not None:
            raise BadEntry(f"sqlar entry {name!r} {problem}", where=self.label, details={"entry": name})
        return name

    def sqlar_info(self, name: str) -> SqlarInfo | None:
        """The scanned row named `name` (never a lookup by SQL: that could pick a shadow row)."""
        index: dict[str, SqlarInfo] = self._cached(
            "sqlar_index", lambda: {i.name: i for i in self.sqlar_infos()}
        )
        return index.get(name)

    def _chunks(self, rowid: int) -> Iterator[bytes]:
        try:
            with self.conn.blobopen("sqlar", "data", rowid, readonly=True) as blob:
                while chunk := blob.read(_CHUNK):
                    yield chunk
        except sqlite3.Error as exc:
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
        """(sha256:…, uncompressed length) of one scanned row, streamed."""
        state: dict[str, Any] = {}

        def factory() -> Callable[[bytes], object]:
            h = hashlib.sha256()
            state["h"], state["n"] = h, 0

            def sink(b: bytes) -> None:
                h.update(b)
                state["n"] += len(b)

            return sink

        self.sqlar_stream(info, factory)
        if "h" not in state:
            factory()
        return "sha256:" + state["h"].hexdigest(), int(state["n"])

    def start_rom_hashing(self) -> RomHashing:
        """The ROM hashing pass; `RomHashing.digest(info)` gives the digest of one row accepted by
        the typed scan (`sqlar_infos`), joined by rowid.

        Small raw `rom/` rows are hashed from the row itself in one `NOT INDEXED` pass, which for
        a large opened file is shared with a helper process (romhash.py); rows it did not hash
        (compressed or large) are streamed when asked for, under the decompression budget. A pass
        begun early by `begin_rom_hashing` is handed out first, so its helper ran meanwhile.
        """
        early, self._early = self._early, None
        if early is not None:
            return early
        try:
            rom_pass = RomPass(self.conn, inline=_INLINE, source=self._source)
        except sqlite3.Error as exc:
            raise InvalidInput(f"cannot read cartridge table sqlar: {exc}", where=self.label) from exc
        return RomHashing(rom_pass, self)

    def begin_rom_hashing(self) -> None:
        """Start the ROM hashing pass now (its helper hashes while the caller scans and checks);
        the next `start_rom_hashing` returns it. Call `close()` to stop it if unused."""
        if self._early is None:
            # a file the pass cannot read is left for the caller's own first read of sqlar to
            # refuse, at the step it would without the early start (the verdict is not the size's)
            with contextlib.suppress(InvalidInput):
                self._early = self.start_rom_hashing()

    def rom_sqlar_digests(self) -> dict[int, tuple[str, int]]:
        """rowid -> (sha256:…, uncompressed size) of every scanned `rom/` row (see start_rom_hashing)."""
        hashing = self.start_rom_hashing()
        try:
            return {i.rowid: hashing.digest(i) for i in self.sqlar_infos() if i.zone == ZONE_ROM}
        finally:
            hashing.close()

    def sqlar_read(self, name: str) -> bytes | None:
        """The uncompressed bytes of sqlar entry `name`, or None if absent. Bounded (see sqlar.py)."""
        info = self.sqlar_info(name)
        if info is None:
            return None
        if info.stored > self.max_entry_bytes or info.sz > self.max_entry_bytes:
            raise BadEntry(
                f"sqlar entry {name!r}: {max(info.stored, info.sz)} bytes exceed the "
                f"{self.max_entry_bytes}-byte limit",
                where=self.label,
                details={"entry": name},
            )
        buf = bytearray()

        def factory() -> Callable[[bytes], object]:
            buf.clear()
            return buf.extend

        self.sqlar_stream(info, factory)
        return bytes(buf)

    def objects(self) -> list[ObjectRow]:
        """Every `objects` row."""
        return list(self._cached("objects", self._objects))

    def _objects(self) -> list[ObjectRow]:
        cols, native = self._scan_typed(
            "objects",
            (("oid", "t"), ("kind", "t"), ("source_ref", "t"), ("canon", "t"), ("zone", "t"), ("sz", "i")),
            columns=True,
        )
        if native and cols:
            # read natively, every column is a str (sz an int): only the size range is left, and
            # it is checked for the whole column at once (else the row loop names the first fault)
            sizes = cols[5]
            if min(sizes) >= 0 and max(sizes) <= MAX_SAFE_SZ:
                return list(map(_NEW_OBJECT_ROW, zip(*cols, strict=True)))
        rows = list(zip(*cols, strict=True))
        out: list[ObjectRow] = []
        intern = sys.intern
        label = self.label
        for oid, kind, ref, canon, zone, size in rows:
            source_ref = ref if type(ref) is str else _text(ref, label, "objects.source_ref")
            if not 0 <= size <= MAX_SAFE_SZ:  # the manifest is JSON: sz must be a safe integer
                raise BadEntry(
                    f"objects[{source_ref}].sz {size} is outside 0..2**53-1",
                    where=label,
                    details={"table": "objects", "column": "sz"},
                )
            if not (type(oid) is str and type(kind) is str and type(canon) is str and type(zone) is str):
                w = f"objects[{source_ref}]"
                oid, kind = _text(oid, label, f"{w}.oid"), _text(kind, label, f"{w}.kind")
                canon, zone = _text(canon, label, f"{w}.canon"), _text(zone, label, f"{w}.zone")
            out.append(ObjectRow(oid, intern(kind), source_ref, intern(canon), intern(zone), size))
        return out

    def memory(self, memory_id: str | None = None, *, save_payloads: bool = True) -> list[MemoryRow]:
        """Every `memory` row, or the one with `memory_id`. With save_payloads=False the SAVE rows'
        payloads are not read at all (payload b"", payload_loaded False)."""
        rows: list[MemoryRow] = self._cached(f"memory:{save_payloads}", lambda: self._memory(save_payloads))
        if memory_id is not None:
            return [r for r in rows if r.id == memory_id]
        return list(rows)

    def _memory(self, save_payloads: bool) -> list[MemoryRow]:
        exprs = (
            None if save_payloads else {"payload": "CASE WHEN zone = 'rom' THEN CAST(payload AS BLOB) END"}
        )
        out: list[MemoryRow] = []
        for mid, zone, payload, oid, created, afp, cfp in self._scan(
            "memory",
            (
                ("id", "t"),
                ("zone", "t"),
                ("payload", "t"),
                ("oid", "t"),
                ("created_at", "t"),
                ("artifact_fingerprint", "t"),
                ("codebase_fingerprint", "t?"),
            ),
            exprs=exprs,
        ):
            i = _text(mid, self.label, "memory.id")
            w = f"memory:{i}"
            z = _text(zone, self.label, f"{w}.zone")
            loaded = payload is not None
            out.append(
                MemoryRow(
                    i,
                    z,
                    _blob(payload, self.label, w) if loaded else b"",
                    _text(oid, self.label, f"{w}.oid"),
                    _text(created, self.label, f"{w}.created_at"),
                    loaded,
                    _text(afp, self.label, f"{w}.artifact_fingerprint"),
                    _opt_text(cfp, self.label, f"{w}.codebase_fingerprint"),
                )
            )
        return out

    def capabilities(self, cap_id: str | None = None) -> list[CapabilityRow]:
        """Every `capabilities` row, or the one with `cap_id`."""
        rows: list[CapabilityRow] = self._cached("capabilities", self._capabilities)
        if cap_id is not None:
            return [r for r in rows if r.id == cap_id]
        return list(rows)

    def _capabilities(self) -> list[CapabilityRow]:
        out: list[CapabilityRow] = []
        for cid, js, ch in self._scan("capabilities", (("id", "t"), ("json", "t"), ("content_hash", "t"))):
            i = _text(cid, self.label, "capabilities.id")
            w = f"capability:{i}"
            out.append(CapabilityRow(i, _blob(js, self.label, w), _text(ch, self.label, f"{w}.content_hash")))
        return out

    def signatures(self) -> list[SignatureRow]:
        """Every `signatures` row, newest `created_at` first (the reference's pick order)."""
        out: list[SignatureRow] = []
        for sid, target, mh, env, keyid, pem, alg, created in self._scan(
            "signatures",
            (
                ("sig_id", "t"),
                ("target", "t"),
                ("manifest_hash", "t"),
                ("envelope", "t"),
                ("keyid", "t"),
                ("public_key_pem", "t?"),
                ("alg", "t"),
                ("created_at", "t"),
            ),
            exprs={"envelope": f"substr(CAST(envelope AS BLOB), 1, {MAX_ENVELOPE_BYTES + 1})"},
        ):
            i = _text(sid, self.label, "signatures.sig_id")
            w = f"signatures[{i}]"
            out.append(
                SignatureRow(
                    i,
                    _text(target, self.label, f"{w}.target"),
                    _text(mh, self.label, f"{w}.manifest_hash"),
                    _blob(env, self.label, w),
                    _text(keyid, self.label, f"{w}.keyid"),
                    _opt_text(pem, self.label, f"{w}.public_key_pem"),
                    _text(alg, self.label, f"{w}.alg"),
                    _text(created, self.label, f"{w}.created_at"),
                )
            )
        out.sort(key=lambda r: r.created_at.encode("utf-8"), reverse=True)
        return out

    def attestations(self) -> list[AttestationRow]:
        """Every `attestations` row (empty if the table is absent)."""
        if not self.has_table("attestations"):
            return []
        out: list[AttestationRow] = []
        for aid, typ, subj, mt, doc, url, created in self._scan(
            "attestations",
            (
                ("att_id", "t"),
                ("type", "t"),
                ("subject_oid", "t?"),
                ("media_type", "t"),
                ("document", "t"),
                ("status_url", "t?"),
                ("created_at", "t"),
            ),
        ):
            i = _text(aid, self.label, "attestations.att_id")
            w = f"attestations[{i}]"
            out.append(
                AttestationRow(
                    i,
                    _text(typ, self.label, f"{w}.type"),
                    _opt_text(subj, self.label, f"{w}.subject_oid"),
                    _text(mt, self.label, f"{w}.media_type"),
                    _blob(doc, self.label, w),
                    _opt_text(url, self.label, f"{w}.status_url"),
                    _text(created, self.label, f"{w}.created_at"),
                )
            )
        return out

    def skills(self) -> list[SkillRow]:
        """The `acx_skill` rows that agree with the signed ROM: the row's sqlar_path is a `rom/`
        SKILL.md whose bytes hash to `content_sha256` and whose frontmatter name is `name`.

        `acx_skill` itself is unsigned; rows that do not match a ROM file are ignored, so no
        decision (workflow ready, inspect, spec) ever rests on an uncovered row.
        """
        return list(self._cached("skills", self._skills))

    def _skills(self) -> list[SkillRow]:
        if not self.has_table("acx_skill"):
            return []
        from acxoci.cartridge.skills import parse_frontmatter

        out: list[SkillRow] = []
        for path, name, desc, ver, lic, sha in self._scan(
            "acx_skill",
            (
                ("sqlar_path", "t?"),
                ("name", "t"),
                ("description", "t"),
                ("skill_version", "t?"),
                ("license", "t?"),
                ("content_sha256", "t"),
            ),
        ):
            if path is None:
                continue
            p = _text(path, self.label, "acx_skill.sqlar_path")
            w = f"acx_skill[{p}]"
            row = SkillRow(
                p,
                _text(name, self.label, f"{w}.name"),
                _text(desc, self.label, f"{w}.description"),
                _opt_text(ver, self.label, f"{w}.skill_version"),
                _opt_text(lic, self.label, f"{w}.license"),
                _text(sha, self.label, f"{w}.content_sha256"),
            )
            if not (p.startswith(_NAME_PATTERNS[0]) and p.endswith(_NAME_PATTERNS[1])):
                continue
            data = self.sqlar_read(p)
            if data is None or hashlib.sha256(data).hexdigest() != row.content_sha256:
                continue
            try:
                fm, _ = parse_frontmatter(data, where=p)
            except InvalidInput:
                continue
            if fm.get("name") != row.name:
                continue
            out.append(row)
        return out

    def check_side_tables(self) -> None:
        """One pass over the key of each unsigned side table (vectors, attestations, acx_skill):
        TEXT and unique, so no reader of them meets a shadow row the verdict never saw."""
        for table in OPTIONAL_TABLES:
            if self.has_table(table):
                for _ in self._scan(table, ((KEY_COLUMNS[table], "t"),)):
                    pass

    def check_indexes(self) -> None:
        """Every index of the file holds exactly its table's entries, in strict key order.

        Our scans read the table b-trees only, but any other reader's `WHERE name = ?` or
        `WHERE zone = 'rom'` is answered from an index, and a hand-edited index can point a
        signed name at an unsigned row. So each index is walked once (a covering scan: index pages
        only) and compared with one pass over its table: same entries, each once, ascending.
        Strict order makes every seek land where a scan would, so no lookup can miss or swap a row.
        """
        for index, (table, cols) in index_entry_columns().items():
            if self.has_table(table):
                self._check_index(index, table, cols)
        for table in REQUIRED_TABLES:
            if table not in WITHOUT_ROWID:
                self._check_rowid_seeks(table)

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
            )
            missed = self.conn.execute(sql).fetchone()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read cartridge table {table}: {exc}", where=self.label) from exc
        if missed is not None:
            raise BadEntry(
                f"table {table}: a seek for rowid {missed[0]} misses the row a scan returns "
                "(its interior pages disagree with its leaves)",
                where=self.label,
                details={"table": table},
            )

    def _check_index(self, index: str, table: str, cols: tuple[str, ...]) -> None:
        if cols == (KEY_COLUMNS[table], "rowid") and self._check_text_key_index(index, table, cols[0]):
            return
        values = ", ".join(
            f"typeof({c}), CASE WHEN typeof({c}) = 'text' THEN CAST({c} AS BLOB) ELSE {c} END" for c in cols
        )

        def bad(msg: str) -> BadEntry:
            return BadEntry(
                f"index {index} disagrees with table {table}: {msg}",
                where=self.label,
                details={"table": table, "index": index},
            )

        # NOT INDEXED does not stop a covering scan of a WITHOUT ROWID table's secondary index
        # (SQLite 3.40), so the table side also reads a column the index lacks, and both plans
        # are checked: the table b-tree (sorted by SQLite into index order, spilling to a temp
        # file rather than memory) on one side, the index alone on the other; then one merge.
        other = next(c[1] for c in reference_columns()[table] if c[1] not in cols)
        # unary + keeps each value and its order but stops the planner sorting through the index
        order = ", ".join("+" + c for c in cols)
        by_table = f"SELECT {values}, typeof({other}) FROM {table} NOT INDEXED ORDER BY {order}"
        by_index = f"SELECT {values} FROM {table} INDEXED BY {index}"
        try:
            _require_plan(
                self.conn, by_table, f"SCAN {table}", "USE TEMP B-TREE FOR ORDER BY", where=self.label
            )
            _require_plan(self.conn, by_index, f"SCAN {table} USING COVERING INDEX {index}", where=self.label)
            rows = self.conn.execute(by_table)
            entries = self.conn.execute(by_index)
            last: tuple[Any, ...] | None = None  # the previous entry, across batches
            while batch := entries.fetchmany(_BATCH):
                table_rows = rows.fetchmany(len(batch))
                if [r[:-1] for r in table_rows] != batch:
                    raise bad("an entry names no row of the table, or a row has no entry")
                for entry in batch:
                    # same storage classes column by column: plain tuple order is record order
                    if last is not None and (
                        entry <= last
                        if entry[0::2] == last[0::2]
                        else _record_order(entry) <= _record_order(last)
                    ):
                        raise bad("entries are out of order or repeated")
                    last = entry
            if rows.fetchone() is not None:
                raise bad("a row of the table has no entry")
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read index {index}: {exc}", where=self.label) from exc

    def _scanned_keys(self, table: str) -> list[tuple[str, int]] | None:
        """The (key, rowid) pairs of `table` from its cached typed scan, when it has one and the
        scan accepts the table (then every key is a unique TEXT str): the same pairs a scan of
        the two columns reads, without reading the table b-tree again (for sqlar, every leaf
        page of a large ROM). None leaves the caller to its own scan; a refusal is left to the
        row method, whose error is raised again where it always was."""
        if table != "sqlar" or not self._owns:
            return None
        try:
            return [(i.name, i.rowid) for i in self.sqlar_infos()]
        except InvalidInput:
            return None

    def _check_text_key_index(self, index: str, table: str, key: str) -> bool:
        """The automatic index of a TEXT primary key, when every key is TEXT: True when it holds
        exactly the table's (key, rowid) entries in strict order; False to leave the file to the
        general check (a key of another class, or text that does not decode).

        Read natively, TEXT is a str and any other class another Python type, so a value of
        another class is never equal. SQLite orders TEXT (BINARY) by its UTF-8 bytes, which is
        Python's order of the decoded strings, so the index must read as the sorted table rows."""
        by_table = f"SELECT {key}, rowid FROM {table} NOT INDEXED"
        by_index = f"SELECT {key}, rowid FROM {table} INDEXED BY {index}"
        try:
            _require_plan(self.conn, by_index, f"SCAN {table} USING COVERING INDEX {index}", where=self.label)
            rows = self._scanned_keys(table)
            scanned = rows is not None  # then every key is a unique str and every rowid unique
            if rows is None:
                _require_plan(self.conn, by_table, f"SCAN {table}", where=self.label)
                rows = self.conn.execute(by_table).fetchall()
                if set(map(type, (k for k, _ in rows))) - {str}:
                    return False
            entries = self.conn.execute(by_index).fetchall()
        except sqlite3.OperationalError as exc:
            if str(exc).startswith("Could not decode to UTF-8"):
                return False
            raise InvalidInput(f"cannot read index {index}: {exc}", where=self.label) from exc
        except sqlite3.Error as exc:
            raise InvalidInput(f"cannot read index {index}: {exc}", where=self.label) from exc
        rows.sort()
        if entries != rows:
            what = (
                "a row of the table has no entry"
                if entries == rows[: len(entries)]
                else "an entry names no row of the table, or a row has no entry"
            )
            raise BadEntry(
                f"index {index} disagrees with table {table}: {what}",
                where=self.label,
                details={"table": table, "index": index},
            )
        if not scanned and len(set(rows)) != len(rows):
            raise BadEntry(
                f"index {index} disagrees with table {table}: entries are out of order or repeated",
                where=self.label,
                details={"table": table, "index": index},
            )
        return True

    def count(self, table: str, where: str = "", params: tuple[Any, ...] = ()) -> int:
        """Row count of one of the known tables (0 if the table is absent)."""
        if table not in REQUIRED_TABLES + OPTIONAL_TABLES:
            raise ValueError(f"unknown table {table}")
        if not self.has_table(table):
            return 0
        rows = self.query(f"SELECT count(*) FROM {table} NOT INDEXED {where}", params)
        return int(rows[0][0])

    def iter_rom_sqlar_names(self) -> Iterator[str]:
        """Names of the `rom/` sqlar rows."""
        for info in self.sqlar_infos():
            if info.zone == ZONE_ROM:
                yield info.name


# Cartridges opened early (`open_early`), by resolved path: (limits, cartridge).
_EARLY: dict[Path, tuple[tuple[int, int], Cartridge]] = {}
_EARLY_OK = True  # tests turn early opens off to compare


def open_early(
    path: str | os.PathLike[str],
    *,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> None:
    """Open a cartridge a command is about to verify and start its ROM hashing pass now, so the
    hashing runs while the command loads the rest of the program (acxoci/cli/entry.py).

    Never raises: a path that cannot be opened is left for the command's own open to refuse. The
    next `open_cartridge` of the same file, with the same limits and an unchanged identity, takes
    this one; anything not taken is closed at exit."""
    try:
        cart = _open(Path(path), max_entry_bytes=max_entry_bytes, max_decompressed=max_decompressed)
    except Exception:
        return
    if cart._source is None or not _EARLY_OK:
        cart.close()
        return
    with contextlib.suppress(Exception):
        real, _ = cart._source
        cart.begin_rom_hashing()
        stale = _EARLY.pop(real, None)
        _EARLY[real] = ((max_entry_bytes, max_decompressed), cart)
        if stale is not None:
            stale[1].close()
        if len(_EARLY) == 1:
            atexit.register(_close_early)


def _close_early() -> None:
    while _EARLY:
        _, (_, cart) = _EARLY.popitem()
        cart.close()


def _take_early(p: Path, limits: tuple[int, int]) -> Cartridge | None:
    """The cartridge `open_early` opened for `p`, if its file is still the one it checked: the
    same identity (a write, rename or swap changes it) and still no sidecar beside it."""
    if not _EARLY:
        return None
    try:
        real = p.resolve()
    except OSError:
        return None
    early = _EARLY.pop(real, None)
    if early is None:
        return None
    opened_with, cart = early
    try:
        same = opened_with == limits
        cart.require_unchanged()  # the file it opened (a write, rename or swap changes it)
        check_no_sidecars(p)
    except (OSError, InvalidInput):
        same = False
    if not same:
        cart.close()
        return None
    cart.label = str(p)
    return cart


def open_cartridge(
    path: str | os.PathLike[str],
    *,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Cartridge:
    """Check the header and sidecars, open the file read-only and immutable, and compare its schema
    with the one definition (schema.check_schema).

    Raises NotFound or InvalidInput naming the file (and header field, table or column) when it is
    not an acceptable cartridge.
    """
    p = Path(path)
    early = _take_early(p, (max_entry_bytes, max_decompressed))
    if early is not None:
        return early
    return _open(p, max_entry_bytes=max_entry_bytes, max_decompressed=max_decompressed)


def _identity_at(real: Path, p: Path) -> FileIdentity:
    """The identity of the file the name `real` names now."""
    try:
        return identity_of(os.stat(real))
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=str(p)) from exc


_OPEN_ATTEMPTS = 3


def _connect_checked(
    real: Path, identity: FileIdentity, p: Path, changed: InvalidInput
) -> sqlite3.Connection:
    """SQLite's connection to `real`, proved to be of the header's inode (see `_open`)."""
    want = (identity[0], identity[1])
    for _ in range(_OPEN_ATTEMPTS):
        with OPEN_LOCK:
            before = _open_files()
            if _identity_at(real, p) != identity:
                raise changed
            conn = _connect(real.as_uri() + "?mode=ro&immutable=1", where=str(p))
            after = _open_files() if before is not None else None
        if before is None or after is None:
            return conn  # no /proc: the checks by name are all there is (decision 0028)
        opened = {(dev, ino) for _, dev, ino in after - before}
        if opened == {want}:
            return conn
        conn.close()
    raise changed


def _open(p: Path, *, max_entry_bytes: int, max_decompressed: int) -> Cartridge:
    """`open_cartridge` itself: every check, every time."""
    header, identity = _read_header(p)
    check_no_sidecars(p)
    real = p.resolve()
    changed = InvalidInput("the file changed while it was being opened; refusing it", where=str(p))
    # SQLite opens the file again by name. The header, the sidecar check and SQLite's open must
    # all be of one file: a rename, a retargeted symlink or two folders exchanged in between
    # (which leaves the file's own identity as it was) would skip the header checks. So the
    # name is checked just before SQLite opens it, and the descriptor SQLite opened must be the
    # header's inode: every regular file opened in that window must be it (OPEN_LOCK keeps
    # acx's own cartridge opens out of the window; another thread's unrelated open in it only
    # costs a retry, a wrong file SQLite opened fails every time).
    conn = _connect_checked(real, identity, p, changed)
    try:
        tables = check_schema(conn, where=str(p))
        if _identity_at(real, p) != identity:
            raise changed
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        conn.close()
        raise InvalidInput(f"not a readable SQLite database: {exc}", where=str(p)) from exc
    except BaseException:
        conn.close()
        raise
    return Cartridge(
        conn,
        label=str(p),
        header=header,
        owns=True,
        max_entry_bytes=max_entry_bytes,
        max_decompressed=max_decompressed,
        tables=tables,
        source=(real, identity),
    )
