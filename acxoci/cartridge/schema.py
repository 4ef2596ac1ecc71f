"""The ONE definition of an acceptable `.acx` file: SQLite header fields, and the exact tables,
columns, declared types, keys and indexes the reference writes (decision 0009; every vector agrees).

The schema is judged twice over: its stored text must be UTF-8 without control or format
characters and token-identical to the reference's, and what SQLite itself parsed from it (PRAGMA
table_list, table_xinfo, index_list, index_xinfo) must equal what SQLite parses from the
reference. Anything else (views, triggers, generated or hidden columns, extra tables, columns or
indexes, a dropped primary key, a rowid table whose text says WITHOUT ROWID) is refused with
InvalidInput naming the header field, table or column, before any row is read. The builder
writes `DDL` from here.
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

__all__ = ["COLUMNS", "DDL", "INDEXES", "KEY_COLUMNS", "OPTIONAL_TABLES", "REQUIRED_TABLES", "TABLES",
           "WITHOUT_ROWID", "Header", "check_schema", "mode_problem", "odd_character", "parse_header",
           "sql_tokens"]

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

#: The key column of each table: TEXT, unique, free of control and format characters.
KEY_COLUMNS: dict[str, str] = {
    "cartridge": "key", "sqlar": "name", "memory": "id", "objects": "oid", "signatures": "sig_id",
    "capabilities": "id", "vectors": "memory_id", "attestations": "att_id", "acx_skill": "sqlar_path",
}

#: Tables whose b-tree is keyed by their TEXT primary key (the others are keyed by rowid).
WITHOUT_ROWID = frozenset({"cartridge", "memory", "objects", "signatures", "attestations"})

#: Every column of every table and the storage classes its values may have: t text, i integer,
#: b blob; `?` also allows NULL. The reference writes each value in its declared class.
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    table: tuple((c.split()[0], c.split()[1]) for c in spec.split(","))
    for table, spec in {
        "cartridge": "key t, value t",
        "sqlar": "name t, mode i, mtime i?, sz i, data b?",
        "memory": "id t, zone t, artifact_fingerprint t, codebase_fingerprint t?, payload t, oid t, "
        "created_at t",
        "vectors": "memory_id t, zone t, embedding b, artifact_fingerprint t?",
        "objects": "oid t, kind t, source_ref t, canon t, zone t, sz i",
        "signatures": "sig_id t, target t, manifest_hash t, envelope t, keyid t, public_key_pem t?, alg t, "
        "created_at t",
        "attestations": "att_id t, type t, subject_oid t?, media_type t, document t, status_url t?, "
        "created_at t",
        "acx_skill": "sqlar_path t, name t, description t, license t?, compatibility t?, skill_version t?, "
        "body_tokens i?, content_sha256 t, resources t, ext t?, schema_version t",
        "capabilities": "id t, json t, content_hash t",
    }.items()
}

#: Every index a cartridge has, with the columns of one entry in key order (ending with the row's
#: identity): the automatic indexes of the rowid tables' TEXT primary keys, and memory_zone_fp.
INDEXES: dict[str, tuple[str, tuple[str, ...]]] = {
    **{f"sqlite_autoindex_{t}_1": (t, (KEY_COLUMNS[t], "rowid")) for t in ("sqlar", "vectors", "acx_skill",
                                                                           "capabilities")},
    "memory_zone_fp": ("memory", ("zone", "artifact_fingerprint", "id")),
}

# SQLite's own classes: only these five characters are space, and every character from U+0080 up
# is an identifier character (so U+00A0 joins the words on either side into one identifier). The
# identifier classes are written as the ASCII they exclude (an identifier starts with A-Z, a-z, _
# or U+0080 and up, and goes on with those, 0-9 and $; tests/cartridge/test_schema_tokens.py).
_ID_START = r"[^\x00-\x40\x5b-\x5e\x60\x7b-\x7f]"
_ID_PART = r"[^\x00-\x23\x25-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"
_TOKEN_RE = re.compile(
    r"""[ \t\n\f\r]+|--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$)"""  # skipped: whitespace, comments
    r"""|('(?:[^']|'')*')|("(?:[^"]|"")*")|(`(?:[^`]|``)*`)|(\[[^\]]*\])"""  # literals / quoted ids
    rf"""|({_ID_START}{_ID_PART}*)|([0-9][0-9A-Za-z_.]*)|(.)""",
    re.S,
)
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ODD = frozenset({"Cc", "Cf", "Cs", "Co"})
_SQL_SPACE = str.maketrans("", "", "\t\n\f\r")


def odd_character(text: str) -> str | None:
    """A character of `text` in Unicode's Cc, Cf, Cs or Co category (control, format, surrogate,
    private use), or None. A NUL ends SQLite's reading of a statement early, and such characters
    look like nothing, or like something else, to a person reading a key."""
    import unicodedata

    return next((c for c in set(text) if unicodedata.category(c) in _ODD), None)


def sql_tokens(sql: str) -> tuple[str, ...]:
    """The token sequence of one SQL statement as SQLite's tokenizer splits it: whitespace and
    comments dropped, bare words upper-cased in ASCII only (SQLite folds no other case), literals
    kept exactly."""
    out: list[str] = []
    for m in _TOKEN_RE.finditer(sql):
        if m.lastindex is not None:
            tok = m.group(m.lastindex)
            out.append(tok.translate(_ASCII_UPPER) if m.lastindex == 5 else tok)
    return tuple(out)


_REF_TOKENS: dict[str, tuple[str, ...]] = {name: sql_tokens(sql) for _, name, sql in _REF}

# What SQLite parsed of each table: its kind and flags, its columns, its indexes and their entries.
_PER_TABLE = "FROM sqlite_master m, pragma_{}(m.name) {} WHERE m.type = 'table'"
_STRUCTURE = (
    ("table_list", "SELECT name, type, ncol, wr, strict FROM pragma_table_list WHERE schema = 'main'"),
    ("table_xinfo", "SELECT m.name, c.* " + _PER_TABLE.format("table_xinfo", "c")),
    ("index_list", "SELECT m.name, i.* " + _PER_TABLE.format("index_list", "i")),
    ("index_xinfo", "SELECT m.name, i.name, x.* FROM sqlite_master m, pragma_index_list(m.name) i,"
                    " pragma_index_xinfo(i.name) x WHERE m.type = 'table'"),
)


def _structure(conn: sqlite3.Connection) -> dict[str, dict[str, set[tuple[Any, ...]]]]:
    """pragma -> table -> its rows, as SQLite reports them for `conn`."""
    out: dict[str, dict[str, set[tuple[Any, ...]]]] = {}
    for pragma, sql in _STRUCTURE:
        rows: dict[str, set[tuple[Any, ...]]] = {}
        for row in conn.execute(sql):
            rows.setdefault(row[0], set()).add(tuple(row[1:]))
        out[pragma] = rows
    return out


@cache
def _reference() -> dict[str, dict[str, set[tuple[Any, ...]]]]:
    """`_structure` of the reference schema (every table), from DDL in a scratch database."""
    conn = sqlite3.connect(":memory:")
    try:
        for stmt in DDL:
            conn.execute(stmt)
        return _structure(conn)
    finally:
        conn.close()


def reference_columns() -> dict[str, tuple[tuple[Any, ...], ...]]:
    """`PRAGMA table_xinfo` rows of every reference table, in column order."""
    xinfo = _reference()["table_xinfo"]
    return {t: tuple(sorted(xinfo[t])) for t in TABLES}


# --- header ---------------------------------------------------------------------------------


class Header(NamedTuple):
    """The SQLite header fields that identify a cartridge."""

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
            "applicationId": f"0x{self.application_id:08x}", "userVersion": f"0x{self.user_version:08x}",
            "specMajor": self.spec_major, "specMinor": self.spec_minor, "vec0Format": self.vec0_format,
            "flags": self.flags, "pageSize": self.page_size, "pageCount": self.page_count,
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
        raise InvalidInput(f"not an .acx cartridge: {len(head)} bytes is shorter than a SQLite header",
                           where=where)
    if not head.startswith(SQLITE_MAGIC):
        raise InvalidInput("not an .acx cartridge: not a SQLite database", where=where)
    (app_id,) = struct.unpack(">I", head[APPLICATION_ID_OFFSET : APPLICATION_ID_OFFSET + 4])
    if app_id != APPLICATION_ID:
        raise InvalidInput(f"not an .acx cartridge: application_id=0x{app_id:08x} (expected "
                           f"0x{APPLICATION_ID:08x})", where=where, details={"header": "application_id"})
    (user_version,) = struct.unpack(">I", head[USER_VERSION_OFFSET : USER_VERSION_OFFSET + 4])
    if (user_version >> 24) & 0xFF != SPEC_MAJOR:
        raise InvalidInput(f"unsupported container version: user_version=0x{user_version:08x} (spec major "
                           f"must be {SPEC_MAJOR})", where=where, details={"header": "user_version"})
    (raw_page,) = struct.unpack(">H", head[16:18])
    page_size = 65536 if raw_page == 1 else raw_page
    if page_size < 512 or page_size & (page_size - 1):
        raise _bad_header("page_size", f"{raw_page} is not a power of two from 512 to 65536", where)
    if head[18] != 1 or head[19] != 1:
        mode = "WAL" if 2 in (head[18], head[19]) else "unknown"
        why = f"{head[18]}/{head[19]} ({mode} mode); a cartridge is written in rollback-journal mode (1/1)"
        raise _bad_header("write_version/read_version", why, where)
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
        raise InvalidInput(f"truncated or corrupt: size {size} is not a multiple of page size {page_size}",
                           where=where)
    (change_counter,) = struct.unpack(">I", head[24:28])
    (page_count,) = struct.unpack(">I", head[28:32])
    (valid_for,) = struct.unpack(">I", head[92:96])
    # where the header's page count is valid, SQLite reads that many pages and no more: bytes after
    # them are in no verdict (and would be copied, published and hashed for nothing)
    if valid_for == change_counter and page_count and page_count * page_size != size:
        what = "truncated" if page_count * page_size > size else "bytes after the database"
        raise InvalidInput(f"{what}: header says {page_count} pages of {page_size} bytes but the file "
                           f"has {size} bytes", where=where)
    return Header(page_size, page_count or size // page_size, app_id, user_version, size)


# --- schema ---------------------------------------------------------------------------------

_MAX_SCHEMA_ROWS = 64
_MAX_SCHEMA_SQL = 64 * 1024
# sqlite_master rows (type, name, tbl_name, sql: all but the root pages) already accepted in this
# process, and their tables: what SQLite parses, and so every check below, is a function of them
_ACCEPTED: dict[tuple[tuple[Any, ...], ...], frozenset[str]] = {}


def _bad(msg: str, where: str, **details: str) -> InvalidInput:
    return InvalidInput(f"not an acceptable cartridge: {msg}", where=where, details=details)


def _text(raw: object, what: str, where: str, *, spaces: bool = False) -> str:
    """`raw` (read as bytes) as UTF-8 text without a control, format, surrogate or private-use
    character (`spaces`: but for SQL's tab, newline, form feed and return)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else None
    except UnicodeDecodeError:
        text = None
    if text is None or odd_character(text.translate(_SQL_SPACE) if spaces else text) is not None:
        raise _bad(f"sqlite_master holds {what} that SQLite may read otherwise (not UTF-8, or a "
                   "control or format character)", where)
    return text


def _explain(got: dict[str, set[tuple[Any, ...]]], table: str, where: str) -> InvalidInput:
    """Why `table` as SQLite parsed it differs from the reference, naming the column when one does."""
    mine = sorted(got.get(table, set()))
    want = reference_columns()[table]
    by_name, names = {r[1]: r for r in mine}, {w[1] for w in want}

    def bad(msg: str, column: Any) -> InvalidInput:
        return _bad(msg, where, table=table, column=str(column))

    for r in mine:
        if r[6] != 0:
            kind = "generated" if r[6] in (2, 3) else "hidden"
            return bad(f"column {table}.{r[1]} is a {kind} column", r[1])
        if r[1] not in names:
            return bad(f"column {table}.{r[1]} is not in the reference schema", r[1])
    for w in want:
        g = by_name.get(w[1])
        if g is None:
            return bad(f"column {table}.{w[1]} is missing", w[1])
        if g[2] != w[2]:
            return bad(f"column {table}.{w[1]} is declared {g[2]!r}, expected {w[2]!r}", w[1])
        if g[5] != w[5]:
            return bad(f"primary key of {table} differs at column {w[1]}", w[1])
        if (g[3], g[4]) != (w[3], w[4]):
            return bad(f"column {table}.{w[1]} has other constraints or default", w[1])
    if [g[1] for g in mine] != [w[1] for w in want]:
        return _bad(f"columns of {table} are not in the reference order", where, table=table)
    return _bad(f"table {table} is not defined as the reference defines it", where, table=table)


def check_schema(conn: sqlite3.Connection, *, where: str) -> frozenset[str]:
    """Compare the schema with the reference's exactly; return the tables present.

    sqlite_master holds only tables and indexes, every name known, the required tables present,
    each statement plain text (`odd_character`) and token-identical to the reference's, and only
    the reference's indexes; then what SQLite parsed (columns, types, keys, WITHOUT ROWID, every index and its
    entries) must be what it parses from the reference. Raises InvalidInput naming the table,
    index or column otherwise.
    """
    try:
        rows = conn.execute(
            "SELECT CAST(type AS BLOB), CAST(name AS BLOB), CAST(tbl_name AS BLOB),"
            f" CASE WHEN length(CAST(sql AS BLOB)) > {_MAX_SCHEMA_SQL} THEN X'00' ELSE CAST(sql AS BLOB) END"
            f" FROM sqlite_master LIMIT {_MAX_SCHEMA_ROWS + 1}"
        ).fetchall()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise InvalidInput(f"not a readable SQLite database: {exc}", where=where) from exc
    if len(rows) > _MAX_SCHEMA_ROWS:
        raise _bad(f"more than {_MAX_SCHEMA_ROWS} schema objects", where)
    key = tuple(rows)
    if key in _ACCEPTED:  # the same statements, byte for byte: SQLite parses them the same way
        return _ACCEPTED[key]
    tables: set[str] = set()
    pending: list[tuple[str, str, str | None]] = []
    for t, n, tbl, sql in rows:
        kind, name, owner = (_text(v, "a name", where) for v in (t, n, tbl))
        text = None if sql is None else _text(sql, f"the statement of {name!r}", where, spaces=True)
        if kind not in ("table", "index"):
            raise _bad(f"{kind} {name!r} is not allowed in a cartridge", where, table=owner, object=name)
        if kind == "table":  # SQLite itself refuses two objects of one name
            if name not in TABLES:
                raise _bad(f"unexpected table {name!r}", where, table=name)
            tables.add(name)
        pending.append((kind, name, text))
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if missing:
        raise InvalidInput(f"not an .acx cartridge: missing table(s) {', '.join(missing)}", where=where,
                           details={"table": missing[0]})
    try:
        got = _structure(conn)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise InvalidInput(f"not a readable SQLite database: {exc}", where=where) from exc
    indexes: set[str] = set()
    for kind, name, text in pending:
        if kind == "table":
            if text is None or sql_tokens(text) != _REF_TOKENS[name]:
                raise _explain(got["table_xinfo"], name, where)
            continue
        if INDEXES.get(name, ("",))[0] not in tables:
            raise _bad(f"unexpected index {name!r}", where, index=name)
        want = _REF_TOKENS.get(name)  # None: an automatic primary-key index has no statement
        if (text is None) != (want is None) or (text is not None and sql_tokens(text) != want):
            raise _bad(f"index {name!r} is not defined as the reference defines it", where, index=name)
        indexes.add(name)
    for name, (owner, _) in INDEXES.items():
        if owner in tables and name not in indexes:
            raise _bad(f"index {name!r} of table {owner} is missing", where, table=owner, index=name)
    for pragma, per_table in _reference().items():
        for table in sorted(tables):
            if got[pragma].get(table, set()) != per_table[table]:
                if pragma == "table_xinfo":
                    raise _explain(got[pragma], table, where)
                why = f"table {table} is not what the reference's text makes of it ({pragma})"
                raise _bad(why, where, table=table)
    if len(_ACCEPTED) >= 16:
        _ACCEPTED.clear()
    _ACCEPTED[key] = frozenset(tables)
    return _ACCEPTED[key]


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
