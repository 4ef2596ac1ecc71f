"""The ONE definition of an acceptable `.acx` file: SQLite header fields, and the exact tables,
columns, declared types, keys and indexes the reference writes (brief §1; every vector agrees).

Anything else (views, triggers, generated or hidden columns, extra tables/columns/indexes, a
dropped primary key, a WAL-mode or non-UTF-8 header) is refused with InvalidInput naming the
header field, table or column, before any row is read. The builder writes `DDL` from here.
"""

from __future__ import annotations

import re
import sqlite3
import struct
from functools import cache
from typing import Any, NamedTuple

from acxoci.cartridge.constants import (
    APPLICATION_ID,
    APPLICATION_ID_OFFSET,
    HEADER_SIZE,
    SPEC_MAJOR,
    SQLITE_MAGIC,
    USER_VERSION_OFFSET,
)
from acxoci.errors import InvalidInput

__all__ = [
    "DDL",
    "KEY_COLUMNS",
    "OPTIONAL_TABLES",
    "REQUIRED_TABLES",
    "TABLES",
    "WITHOUT_ROWID",
    "Header",
    "check_mode",
    "check_schema",
    "index_entry_columns",
    "parse_header",
    "reference_columns",
    "sql_tokens",
]

# The reference's statements, verbatim (comments included) as its `export` leaves them in
# sqlite_master. Comparison is token by token, so whitespace and comments do not matter.
_REF: tuple[tuple[str, str, str], ...] = (
    (
        "table",
        "cartridge",
        "CREATE TABLE cartridge (\n  key   TEXT PRIMARY KEY NOT NULL,\n"
        "  value TEXT NOT NULL\n) WITHOUT ROWID",
    ),
    (
        "table",
        "sqlar",
        "CREATE TABLE sqlar (\n  name TEXT PRIMARY KEY,\n  mode INT, mtime INT,\n  sz   INT,\n  data BLOB\n)",
    ),
    (
        "table",
        "memory",
        "CREATE TABLE memory (\n  id                   TEXT PRIMARY KEY NOT NULL,\n"
        "  zone                 TEXT NOT NULL CHECK (zone IN ('rom','save')),\n"
        "  artifact_fingerprint TEXT NOT NULL,\n  codebase_fingerprint TEXT,\n"
        "  payload              TEXT NOT NULL,\n  oid                  TEXT NOT NULL,\n"
        "  created_at           TEXT NOT NULL\n) WITHOUT ROWID",
    ),
    ("index", "memory_zone_fp", "CREATE INDEX memory_zone_fp ON memory(zone, artifact_fingerprint)"),
    (
        "table",
        "vectors",
        "CREATE TABLE vectors (\n  memory_id            TEXT PRIMARY KEY,\n"
        "  zone                 TEXT NOT NULL,\n  embedding            BLOB NOT NULL,\n"
        "  artifact_fingerprint TEXT\n)",
    ),
    (
        "table",
        "objects",
        "CREATE TABLE objects (\n  oid        TEXT PRIMARY KEY NOT NULL,\n"
        "  kind       TEXT NOT NULL CHECK (kind IN ('sqlar','memory','cartridge','skill','attestation')),\n"
        "  source_ref TEXT NOT NULL,\n  canon      TEXT NOT NULL,\n"
        "  zone       TEXT NOT NULL CHECK (zone IN ('rom','save')),\n  sz         INTEGER NOT NULL\n"
        ") WITHOUT ROWID",
    ),
    (
        "table",
        "signatures",
        "CREATE TABLE signatures (\n  sig_id         TEXT PRIMARY KEY NOT NULL,\n"
        "  target         TEXT NOT NULL DEFAULT 'rom-manifest',\n  manifest_hash  TEXT NOT NULL,\n"
        "  envelope       TEXT NOT NULL,           -- clean DSSE {payloadType,payload,signatures}\n"
        "  keyid          TEXT NOT NULL,\n"
        "  public_key_pem TEXT,                    -- SPKI PEM held OUT of the envelope"
        " (self-contained verify)\n"
        "  alg            TEXT NOT NULL DEFAULT 'ed25519',\n  created_at     TEXT NOT NULL\n) WITHOUT ROWID",
    ),
    (
        "table",
        "attestations",
        "CREATE TABLE attestations (\n  att_id      TEXT PRIMARY KEY NOT NULL,\n"
        "  type        TEXT NOT NULL,\n  subject_oid TEXT,\n  media_type  TEXT NOT NULL,\n"
        "  document    TEXT NOT NULL,\n  status_url  TEXT,\n  created_at  TEXT NOT NULL\n) WITHOUT ROWID",
    ),
    (
        "table",
        "acx_skill",
        "CREATE TABLE acx_skill (\n"
        "  sqlar_path     TEXT PRIMARY KEY,   -- authoritative identity (SPEC §5.3); the SKILL.md path\n"
        "  name           TEXT NOT NULL,      -- frontmatter name (may collide across dirs)\n"
        "  description    TEXT NOT NULL,\n  license        TEXT, compatibility TEXT, skill_version TEXT,\n"
        "  body_tokens    INTEGER,\n  content_sha256 TEXT NOT NULL,\n  resources      TEXT NOT NULL,\n"
        "  ext            TEXT,\n  schema_version TEXT NOT NULL\n)",
    ),
    (
        "table",
        "capabilities",
        "CREATE TABLE capabilities (\n  id           TEXT PRIMARY KEY NOT NULL,\n"
        "  json         TEXT NOT NULL,\n  content_hash TEXT NOT NULL\n)",
    ),
)

#: The statements a cartridge is created with, in order (the builder runs these).
DDL: tuple[str, ...] = tuple(sql for _, _, sql in _REF)

REQUIRED_TABLES = ("cartridge", "sqlar", "memory", "objects", "signatures", "capabilities")
OPTIONAL_TABLES = ("vectors", "attestations", "acx_skill")
TABLES = REQUIRED_TABLES + OPTIONAL_TABLES

#: The key column of each table: it must hold TEXT (typeof) and be unique over one scan.
KEY_COLUMNS: dict[str, str] = {
    "cartridge": "key",
    "sqlar": "name",
    "memory": "id",
    "objects": "oid",
    "signatures": "sig_id",
    "capabilities": "id",
    "vectors": "memory_id",
    "attestations": "att_id",
    "acx_skill": "sqlar_path",
}

# Rowid tables with a TEXT PRIMARY KEY get one automatic unique index (sql IS NULL).
_AUTO_INDEXES = {f"sqlite_autoindex_{t}_1": t for t in ("sqlar", "vectors", "acx_skill", "capabilities")}
_INDEXES = {name: "memory" for kind, name, _ in _REF if kind == "index"}

# SQLite's own classes: only these five characters are space, and every character from U+0080 up
# is an identifier character (so U+00A0 joins the words on either side into one identifier). The
# identifier classes are written as the ASCII they exclude (an identifier starts with A-Z, a-z, _
# or U+0080 and up, and goes on with those, 0-9 and $): the same sets as the ranges up to
# U+10FFFF, which cost the regex compiler 6 ms at every start (tests/unit/test_schema_tokens.py).
_ID_START = r"[^\x00-\x40\x5b-\x5e\x60\x7b-\x7f]"
_ID_PART = r"[^\x00-\x23\x25-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"
_TOKEN_RE = re.compile(
    r"""[ \t\n\f\r]+|--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$)"""  # skipped: whitespace, comments
    r"""|('(?:[^']|'')*')|("(?:[^"]|"")*")|(`(?:[^`]|``)*`)|(\[[^\]]*\])"""  # literals / quoted ids
    rf"""|({_ID_START}{_ID_PART}*)|([0-9][0-9A-Za-z_.]*)|(.)""",
    re.S,
)
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def sql_tokens(sql: str) -> tuple[str, ...]:
    """The token sequence of one SQL statement as SQLite's tokenizer splits it: whitespace and
    comments dropped, bare words upper-cased in ASCII only (SQLite folds no other case), literals
    kept exactly."""
    out: list[str] = []
    for m in _TOKEN_RE.finditer(sql):
        if m.lastindex is None:
            continue
        tok = m.group(m.lastindex)
        out.append(tok.translate(_ASCII_UPPER) if m.lastindex == 5 else tok)
    return tuple(out)


_REF_TOKENS: dict[str, tuple[str, ...]] = {name: sql_tokens(sql) for _, name, sql in _REF}


#: Tables whose b-tree is keyed by their TEXT primary key (the others are keyed by rowid).
WITHOUT_ROWID: frozenset[str] = frozenset(
    name for kind, name, _ in _REF if kind == "table" and _REF_TOKENS[name][-2:] == ("WITHOUT", "ROWID")
)


@cache
def reference_columns() -> dict[str, tuple[tuple[Any, ...], ...]]:
    """`PRAGMA table_xinfo` of every reference table (derived from DDL in a scratch database)."""
    conn = sqlite3.connect(":memory:")
    try:
        for stmt in DDL:
            conn.execute(stmt)
        return {t: tuple(tuple(r) for r in conn.execute(f"PRAGMA table_xinfo({t})")) for t in TABLES}
    finally:
        conn.close()


@cache
def index_entry_columns() -> dict[str, tuple[str, tuple[str, ...]]]:
    """index -> (table, the columns of one index entry in key order, ending with the row's identity:
    `rowid`, or the primary key of a WITHOUT ROWID table), from `PRAGMA index_xinfo` of the
    reference. Every one of them compares BINARY and ascending (checked here), so an entry's order
    is the record order `Cartridge.check_indexes` rebuilds."""
    conn = sqlite3.connect(":memory:")
    try:
        for stmt in DDL:
            conn.execute(stmt)
        out: dict[str, tuple[str, tuple[str, ...]]] = {}
        for name, table in (*_AUTO_INDEXES.items(), *_INDEXES.items()):
            cols: list[str] = []
            for _seq, cid, col, desc, coll, _key in conn.execute(f"PRAGMA index_xinfo({name})"):
                if desc or (cid >= 0 and coll != "BINARY"):
                    raise AssertionError(f"reference index {name} is not BINARY ascending")
                cols.append("rowid" if cid < 0 else str(col))
            out[name] = (table, tuple(cols))
        return out
    finally:
        conn.close()


# --- header ---------------------------------------------------------------------------------


class Header(NamedTuple):
    """The SQLite header fields that identify a cartridge (a NamedTuple, not a dataclass: this
    module is read before `acx cartridge verify` starts its hashing, and dataclasses costs 8 ms)."""

    page_size: int
    page_count: int
    application_id: int
    user_version: int
    file_size: int

    @property
    def spec_major(self) -> int:
        return (self.user_version >> 24) & 0xFF

    @property
    def spec_minor(self) -> int:
        return (self.user_version >> 16) & 0xFF

    @property
    def vec0_format(self) -> int:
        return (self.user_version >> 8) & 0xFF

    @property
    def flags(self) -> int:
        return self.user_version & 0xFF

    def to_json(self) -> dict[str, Any]:
        return {
            "applicationId": f"0x{self.application_id:08x}",
            "userVersion": f"0x{self.user_version:08x}",
            "specMajor": self.spec_major,
            "specMinor": self.spec_minor,
            "vec0Format": self.vec0_format,
            "flags": self.flags,
            "pageSize": self.page_size,
            "pageCount": self.page_count,
            "fileSize": self.file_size,
        }


def _bad_header(field: str, msg: str, where: str) -> InvalidInput:
    return InvalidInput(f"SQLite header {field}: {msg}", where=where, details={"header": field})


def parse_header(head: bytes, size: int, *, where: str) -> Header:
    """Check the 100-byte SQLite header as the reference writes it and return its fields.

    Rollback journal only (read/write versions 1: a WAL header means sidecar pages may hold
    the real content), UTF-8, no reserved bytes, no auto-vacuum, power-of-two page size.
    """
    if len(head) < HEADER_SIZE:
        raise InvalidInput(
            f"not an .acx cartridge: {len(head)} bytes is shorter than a SQLite header", where=where
        )
    if not head.startswith(SQLITE_MAGIC):
        raise InvalidInput("not an .acx cartridge: not a SQLite database", where=where)
    (app_id,) = struct.unpack(">I", head[APPLICATION_ID_OFFSET : APPLICATION_ID_OFFSET + 4])
    if app_id != APPLICATION_ID:
        raise InvalidInput(
            f"not an .acx cartridge: application_id=0x{app_id:08x} (expected 0x{APPLICATION_ID:08x})",
            where=where,
            details={"header": "application_id"},
        )
    (user_version,) = struct.unpack(">I", head[USER_VERSION_OFFSET : USER_VERSION_OFFSET + 4])
    if (user_version >> 24) & 0xFF != SPEC_MAJOR:
        raise InvalidInput(
            f"unsupported container version: user_version=0x{user_version:08x} "
            f"(spec major must be {SPEC_MAJOR})",
            where=where,
            details={"header": "user_version"},
        )
    (raw_page,) = struct.unpack(">H", head[16:18])
    page_size = 65536 if raw_page == 1 else raw_page
    if page_size < 512 or page_size & (page_size - 1):
        raise _bad_header("page_size", f"{raw_page} is not a power of two from 512 to 65536", where)
    if head[18] != 1 or head[19] != 1:
        mode = "WAL" if 2 in (head[18], head[19]) else "unknown"
        raise _bad_header(
            "write_version/read_version",
            f"{head[18]}/{head[19]} ({mode} mode); a cartridge is written in rollback-journal mode (1/1)",
            where,
        )
    if head[20] != 0:
        raise _bad_header("reserved_space", f"{head[20]} reserved bytes per page (expected 0)", where)
    if head[21:24] != b"\x40\x20\x20":
        raise _bad_header("payload_fractions", f"{head[21:24].hex()} (expected 402020)", where)
    (schema_format,) = struct.unpack(">I", head[44:48])
    if not 1 <= schema_format <= 4:
        raise _bad_header("schema_format", f"{schema_format} (expected 1..4)", where)
    (encoding,) = struct.unpack(">I", head[56:60])
    if encoding != 1:
        raise _bad_header("text_encoding", f"{encoding} (a cartridge is UTF-8, 1)", where)
    (vacuum_root,) = struct.unpack(">I", head[52:56])
    (incremental,) = struct.unpack(">I", head[64:68])
    if vacuum_root or incremental:
        raise _bad_header("auto_vacuum", "auto-vacuum is not used by cartridges", where)
    if any(head[72:92]):
        raise _bad_header("reserved", "bytes 72..91 must be zero", where)
    if size % page_size:
        raise InvalidInput(
            f"truncated or corrupt: size {size} is not a multiple of page size {page_size}", where=where
        )
    (change_counter,) = struct.unpack(">I", head[24:28])
    (page_count,) = struct.unpack(">I", head[28:32])
    (valid_for,) = struct.unpack(">I", head[92:96])
    if valid_for == change_counter and page_count and page_count * page_size > size:
        raise InvalidInput(
            f"truncated: header says {page_count} pages of {page_size} bytes but the file has {size} bytes",
            where=where,
        )
    return Header(page_size, page_count or size // page_size, app_id, user_version, size)


# --- schema ---------------------------------------------------------------------------------

_MAX_SCHEMA_ROWS = 64
_MAX_SCHEMA_SQL = 64 * 1024


def _bad(msg: str, where: str, **details: str) -> InvalidInput:
    return InvalidInput(f"not an acceptable cartridge: {msg}", where=where, details=details)


def _name(raw: object, where: str) -> str:
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise _bad("sqlite_master holds a name that is not UTF-8 text", where)


def _explain_table(conn: sqlite3.Connection, table: str, where: str) -> InvalidInput:
    """Why table `table`'s DDL differs from the reference, naming the column when one differs."""
    try:
        got = [tuple(r) for r in conn.execute(f'PRAGMA table_xinfo("{table}")')]
    except sqlite3.Error:
        got = []
    want = reference_columns()[table]
    by_name = {r[1]: r for r in got}
    for r in got:
        if r[6] != 0:
            kind = "generated" if r[6] in (2, 3) else "hidden"
            return _bad(f"column {table}.{r[1]} is a {kind} column", where, table=table, column=str(r[1]))
    for r in got:
        if r[1] not in {w[1] for w in want}:
            return _bad(
                f"column {table}.{r[1]} is not in the reference schema", where, table=table, column=str(r[1])
            )
    for w in want:
        g = by_name.get(w[1])
        if g is None:
            return _bad(f"column {table}.{w[1]} is missing", where, table=table, column=str(w[1]))
        if g[2] != w[2]:
            return _bad(
                f"column {table}.{w[1]} is declared {g[2]!r}, expected {w[2]!r}",
                where,
                table=table,
                column=str(w[1]),
            )
        if g[5] != w[5]:
            return _bad(
                f"primary key of {table} differs at column {w[1]}", where, table=table, column=str(w[1])
            )
        if (g[3], g[4]) != (w[3], w[4]):
            return _bad(
                f"column {table}.{w[1]} has other constraints or default",
                where,
                table=table,
                column=str(w[1]),
            )
    if [g[1] for g in got] != [w[1] for w in want]:
        return _bad(f"columns of {table} are not in the reference order", where, table=table)
    return _bad(f"table {table} is not defined as the reference defines it", where, table=table)


def check_schema(conn: sqlite3.Connection, *, where: str) -> frozenset[str]:
    """Compare sqlite_master with the reference exactly; return the tables present.

    Only tables and indexes; every table known, required ones present, each CREATE statement
    token-identical to the reference; only the reference's indexes. Raises InvalidInput naming
    the table, index or column otherwise.
    """
    try:
        rows = conn.execute(
            "SELECT CAST(type AS BLOB), CAST(name AS BLOB), CAST(tbl_name AS BLOB),"
            f" CASE WHEN length(CAST(sql AS BLOB)) > {_MAX_SCHEMA_SQL} THEN X'00' ELSE CAST(sql AS BLOB) END"
            f" FROM sqlite_master LIMIT {_MAX_SCHEMA_ROWS + 1}"
        ).fetchall()
    except sqlite3.Error as exc:
        raise InvalidInput(f"not a readable SQLite database: {exc}", where=where) from exc
    if len(rows) > _MAX_SCHEMA_ROWS:
        raise _bad(f"more than {_MAX_SCHEMA_ROWS} schema objects", where)
    tables: set[str] = set()
    pending: list[tuple[str, str, str | None]] = []
    for t, n, tbl, sql in rows:
        kind, name, owner = _name(t, where), _name(n, where), _name(tbl, where)
        text = None if sql is None else sql.decode("utf-8", "replace")
        if kind not in ("table", "index"):
            raise _bad(f"{kind} {name!r} is not allowed in a cartridge", where, table=owner, object=name)
        if kind == "table":
            if name not in TABLES:
                raise _bad(f"unexpected table {name!r}", where, table=name)
            if name in tables:
                raise _bad(f"table {name!r} is defined twice", where, table=name)
            tables.add(name)
        pending.append((kind, name, text))
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if missing:
        raise InvalidInput(
            f"not an .acx cartridge: missing table(s) {', '.join(missing)}",
            where=where,
            details={"table": missing[0]},
        )
    indexes: set[str] = set()
    for kind, name, text in pending:
        if kind == "table":
            if text is None or sql_tokens(text) != _REF_TOKENS[name]:
                raise _explain_table(conn, name, where)
            continue
        parent = _AUTO_INDEXES.get(name) or _INDEXES.get(name)
        if parent is None or parent not in tables:
            raise _bad(f"unexpected index {name!r}", where, index=name)
        if name in _AUTO_INDEXES:
            if text is not None:
                raise _bad(f"index {name!r} is not the automatic primary-key index", where, index=name)
        elif text is None or sql_tokens(text) != _REF_TOKENS[name]:
            raise _bad(f"index {name!r} is not defined as the reference defines it", where, index=name)
        indexes.add(name)
    for name, owner in (*_AUTO_INDEXES.items(), *_INDEXES.items()):
        if owner in tables and name not in indexes:
            raise _bad(f"index {name!r} of table {owner} is missing", where, table=owner, index=name)
    return frozenset(tables)


# --- sqlar modes ----------------------------------------------------------------------------

S_IFMT = 0o170000
S_IFREG = 0o100000


def mode_problem(mode: object) -> str | None:
    """Why a sqlar `mode` is unacceptable, or None: an integer, a regular file (or no type bits,
    as the reference writes 420), no setuid/setgid/sticky, no group/other write."""
    if isinstance(mode, bool) or not isinstance(mode, int):
        return f"mode {mode!r} is not an integer"
    if mode < 0 or mode & ~(S_IFMT | 0o7777):
        return f"mode {mode:#o} has bits outside a file mode"
    ftype = mode & S_IFMT
    if ftype not in (0, S_IFREG):
        what = {0o120000: "a symlink", 0o040000: "a directory"}.get(ftype, "not a regular file")
        return f"mode {mode:#o} is {what}"
    if mode & 0o7000:
        return f"mode {mode:#o} has setuid/setgid/sticky bits"
    if mode & 0o022:
        return f"mode {mode:#o} is group/other writable"
    return None


def check_mode(name: str, mode: object, *, where: str) -> None:
    """Raise InvalidInput naming the entry when its mode is unacceptable (see `mode_problem`)."""
    problem = mode_problem(mode)
    if problem is not None:
        raise InvalidInput(
            f"sqlar entry {name!r}: {problem}", where=where, details={"entry": name, "column": "sqlar.mode"}
        )
