"""Every refusal of the one definition of a cartridge file (acxoci/cartridge/schema.py), compared
whole: class, message, `where` and details. The header's fields each at and past their bounds
(unsigned words with the high bit set too), the schema's kinds, names and statements, each reason
`_explain` gives for a column, and the structure SQLite parsed; all built here, in process."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge import schema
from acxoci.cartridge.schema import DDL, Header, check_schema, parse_header
from acxoci.errors import InvalidInput
from tests.harness.reader_edits import refused


@pytest.fixture
def head(vectors_dir: Path) -> bytes:
    """The sample's 100-byte header (page size 4096, 20 pages, schema format 4, UTF-8)."""
    return (vectors_dir / "sample" / "sample.acx").read_bytes()[:100]


def _with(head: bytes, offset: int, value: bytes) -> bytes:
    return head[:offset] + value + head[offset + len(value) :]


def _word(value: int) -> bytes:
    return struct.pack(">I", value)


SIZE = 20 * 4096


def _bad_header(call: Any, field: str, message: str) -> None:
    refused(call, InvalidInput, f"SQLite header {field}: {message}", where="f.acx", details={"header": field})


def test_the_sample_header_reads_as_its_fields(head: bytes) -> None:
    h = parse_header(head, SIZE, where="f.acx")
    assert h == Header(4096, 20, 0x41435831, 0x01000100, SIZE)
    assert h.to_json() == {
        "applicationId": "0x41435831",
        "userVersion": "0x01000100",
        "specMajor": 1,
        "specMinor": 0,
        "vec0Format": 1,
        "flags": 0,
        "pageSize": 4096,
        "pageCount": 20,
        "fileSize": SIZE,
    }
    counted = parse_header(_with(head, 28, _word(0)), SIZE, where="f.acx")  # no page count: from the size
    assert counted.page_count == 20 and type(counted.page_count) is int


def test_a_short_or_foreign_file_is_not_a_cartridge(head: bytes) -> None:
    refused(
        lambda: parse_header(head[:99], SIZE, where="f.acx"),
        InvalidInput,
        "not an .acx cartridge: 99 bytes is shorter than a SQLite header",
        where="f.acx",
    )
    refused(
        lambda: parse_header(b"SQLite format 4\0" + head[16:], SIZE, where="f.acx"),
        InvalidInput,
        "not an .acx cartridge: not a SQLite database",
        where="f.acx",
    )


@pytest.mark.parametrize("app_id", [0x41435832, 0xC1435831])
def test_the_application_id_is_named(head: bytes, app_id: int) -> None:
    refused(
        lambda: parse_header(_with(head, 68, _word(app_id)), SIZE, where="f.acx"),
        InvalidInput,
        f"not an .acx cartridge: application_id=0x{app_id:08x} (expected 0x41435831)",
        where="f.acx",
        details={"header": "application_id"},
    )


@pytest.mark.parametrize("version", [0x02000100, 0x81000100, 0x00000100])
def test_a_spec_major_other_than_1_is_refused(head: bytes, version: int) -> None:
    refused(
        lambda: parse_header(_with(head, 60, _word(version)), SIZE, where="f.acx"),
        InvalidInput,
        f"unsupported container version: user_version=0x{version:08x} (spec major must be 1)",
        where="f.acx",
        details={"header": "user_version"},
    )


@pytest.mark.parametrize(
    ("raw", "ok"),
    [(512, True), (1, True), (0x8000, True), (256, False), (768, False), (0, False), (513, False)],
)
def test_the_page_size_is_a_power_of_two_from_512_to_65536(head: bytes, raw: int, ok: bool) -> None:
    size = 65536 * 4 if raw in (0, 1) else max(raw, 1) * 4
    bad = _with(head, 16, struct.pack(">H", raw))
    bad = _with(bad, 28, _word(0))
    if ok:
        assert parse_header(bad, size, where="f.acx").page_size == (65536 if raw == 1 else raw)
    else:
        _bad_header(
            lambda: parse_header(bad, size, where="f.acx"),
            "page_size",
            f"{raw} is not a power of two from 512 to 65536",
        )


@pytest.mark.parametrize(
    ("write", "read", "mode"), [(2, 2, "WAL"), (1, 2, "WAL"), (2, 1, "WAL"), (3, 1, "unknown")]
)
def test_only_rollback_journal_mode_is_read(head: bytes, write: int, read: int, mode: str) -> None:
    _bad_header(
        lambda: parse_header(_with(head, 18, bytes([write, read])), SIZE, where="f.acx"),
        "write_version/read_version",
        f"{write}/{read} ({mode} mode); a cartridge is written in rollback-journal mode (1/1)",
    )


@pytest.mark.parametrize(
    ("offset", "value", "field", "message"),
    [
        (20, b"\x08", "reserved_space", "8 reserved bytes per page (expected 0)"),
        (21, b"\x41\x21\x22", "payload_fractions", "412122 (expected 402020)"),
        (44, _word(0), "schema_format", "0 (expected 1..4)"),
        (44, _word(5), "schema_format", "5 (expected 1..4)"),
        (56, _word(2), "text_encoding", "2 (a cartridge is UTF-8, 1)"),
        (56, _word(0x80000001), "text_encoding", "2147483649 (a cartridge is UTF-8, 1)"),
        (52, _word(3), "auto_vacuum", "auto-vacuum is not used by cartridges"),
        (64, _word(1), "auto_vacuum", "auto-vacuum is not used by cartridges"),
        (72, b"\x01", "reserved", "bytes 72..91 must be zero"),
        (91, b"\x01", "reserved", "bytes 72..91 must be zero"),
    ],
)
def test_each_header_field_is_named(head: bytes, offset: int, value: bytes, field: str, message: str) -> None:
    _bad_header(lambda: parse_header(_with(head, offset, value), SIZE, where="f.acx"), field, message)


@pytest.mark.parametrize("schema_format", [1, 4])
def test_schema_formats_1_to_4_are_read(head: bytes, schema_format: int) -> None:
    assert parse_header(_with(head, 44, _word(schema_format)), SIZE, where="f.acx").page_size == 4096


def test_the_bytes_after_the_reserved_ones_are_not_reserved(head: bytes) -> None:
    # bytes 92..95 are the version-valid-for number: any value, when it does not match the counter
    h = parse_header(_with(head, 92, _word(0x01000000)), SIZE, where="f.acx")
    assert h.page_count == 20


def test_a_size_that_is_no_whole_number_of_pages_is_refused(head: bytes) -> None:
    refused(
        lambda: parse_header(head, SIZE + 1, where="f.acx"),
        InvalidInput,
        f"truncated or corrupt: size {SIZE + 1} is not a multiple of page size 4096",
        where="f.acx",
    )


@pytest.mark.parametrize(("counter", "pages"), [(13, 21), (0x80000001, 21), (13, 0x80000000)])
def test_a_file_shorter_than_its_header_says_is_truncated(head: bytes, counter: int, pages: int) -> None:
    bad = _with(_with(_with(head, 24, _word(counter)), 92, _word(counter)), 28, _word(pages))
    refused(
        lambda: parse_header(bad, SIZE, where="f.acx"),
        InvalidInput,
        f"truncated: header says {pages} pages of 4096 bytes but the file has {SIZE} bytes",
        where="f.acx",
    )
    stale = _with(bad, 92, _word(counter - 1))  # the page count is not valid for this change counter
    assert parse_header(stale, SIZE, where="f.acx").page_count == pages


def test_bytes_after_the_database_are_refused(head: bytes) -> None:
    # 19 valid pages in a 20-page file: SQLite reads 19, the last page is in no verdict
    bad = _with(head, 28, _word(19))
    refused(lambda: parse_header(bad, SIZE, where="f.acx"), InvalidInput,
            f"bytes after the database: header says 19 pages of 4096 bytes but the file has {SIZE} bytes",
            where="f.acx")


# ---- the schema -----------------------------------------------------------------------------


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for stmt in DDL:
        conn.execute(stmt)
    return conn


def _file(
    folder: Path, *statements: str, edit: str | None = None, params: tuple[Any, ...] = ()
) -> sqlite3.Connection:
    """A database with the reference DDL, `statements` run and `edit` made to sqlite_master."""
    folder.mkdir(exist_ok=True)
    path = folder / "s.db"
    conn = sqlite3.connect(path)
    for stmt in DDL:
        conn.execute(stmt)
    for stmt in statements:
        conn.execute(stmt)
    if edit is not None:
        conn.execute("PRAGMA writable_schema = 1")
        conn.execute(edit, params)
    conn.commit()
    conn.close()
    return sqlite3.connect(path)


def _bad(message: str, **details: str) -> tuple[str, dict[str, str]]:
    return f"not an acceptable cartridge: {message}", details


@pytest.mark.parametrize(
    ("statements", "message", "details"),
    [
        (
            ("CREATE VIEW v AS SELECT 1",),
            "view 'v' is not allowed in a cartridge",
            {"table": "v", "object": "v"},
        ),
        (
            ("CREATE TRIGGER t AFTER INSERT ON sqlar BEGIN SELECT 1; END",),
            "trigger 't' is not allowed in a cartridge",
            {"table": "sqlar", "object": "t"},
        ),
        (("CREATE TABLE extra (x)",), "unexpected table 'extra'", {"table": "extra"}),
        (("CREATE INDEX i ON sqlar(mode)",), "unexpected index 'i'", {"index": "i"}),
        (
            ("DROP INDEX memory_zone_fp",),
            "index 'memory_zone_fp' of table memory is missing",
            {"table": "memory", "index": "memory_zone_fp"},
        ),
        (
            ("DROP INDEX memory_zone_fp", "CREATE INDEX memory_zone_fp ON memory(zone)"),
            "index 'memory_zone_fp' is not defined as the reference defines it",
            {"index": "memory_zone_fp"},
        ),
    ],
)
def test_each_schema_object_refusal_is_named(
    tmp_path: Path, statements: tuple[str, ...], message: str, details: dict[str, str]
) -> None:
    conn = _file(tmp_path, *statements)
    refused(
        lambda: check_schema(conn, where="s.db"),
        InvalidInput,
        f"not an acceptable cartridge: {message}",
        where="s.db",
        details=details,
    )


def test_missing_tables_are_named_with_the_first(tmp_path: Path) -> None:
    conn = _file(tmp_path, "DROP TABLE objects", "DROP TABLE capabilities")
    refused(
        lambda: check_schema(conn, where="s.db"),
        InvalidInput,
        "not an .acx cartridge: missing table(s) objects, capabilities",
        where="s.db",
        details={"table": "objects"},
    )


def test_sqlite_refuses_a_sqlite_master_it_cannot_parse_before_we_look(tmp_path: Path) -> None:
    # two tables of one name, a name that is not its statement's, an automatic index given a
    # statement: SQLite's own schema load refuses each, and so the open is refused, typed
    for n, edit in enumerate((
        "UPDATE sqlite_master SET name = 'vectors' WHERE name = 'attestations'",
        "UPDATE sqlite_master SET name = 'acx\x01skill' WHERE name = 'acx_skill'",
        "UPDATE sqlite_master SET sql = 'CREATE INDEX sqlite_autoindex_sqlar_1 ON sqlar(name)'"
        " WHERE name = 'sqlite_autoindex_sqlar_1'",
    )):
        conn = _file(tmp_path / str(n), edit=edit)
        with pytest.raises(InvalidInput) as err:
            check_schema(conn, where="s.db")
        assert err.value.message.startswith("not a readable SQLite database: malformed database schema")


def test_more_than_64_schema_objects_are_refused(tmp_path: Path) -> None:
    conn = _file(tmp_path, *(f"CREATE INDEX i{n} ON sqlar(mode)" for n in range(60)))
    refused(
        lambda: check_schema(conn, where="s.db"),
        InvalidInput,
        "not an acceptable cartridge: more than 64 schema objects",
        where="s.db",
    )


def _xinfo(table: str, change: Any = None) -> dict[str, set[tuple[Any, ...]]]:
    rows = [list(r) for r in schema.reference_columns()[table]]
    if change is not None:
        change(rows)
    return {table: {tuple(r) for r in rows}}


@pytest.mark.parametrize(
    ("change", "message", "column"),
    [
        (lambda rows: rows[4].__setitem__(6, 2), "column sqlar.data is a generated column", "data"),
        (lambda rows: rows[4].__setitem__(6, 3), "column sqlar.data is a generated column", "data"),
        (lambda rows: rows[4].__setitem__(6, 1), "column sqlar.data is a hidden column", "data"),
        (
            lambda rows: rows.append([5, "evil", "BLOB", 0, None, 0, 0]),
            "column sqlar.evil is not in the reference schema",
            "evil",
        ),
        (lambda rows: rows.pop(4), "column sqlar.data is missing", "data"),
        (
            lambda rows: rows[3].__setitem__(2, "TEXT"),
            "column sqlar.sz is declared 'TEXT', expected 'INT'",
            "sz",
        ),
        (lambda rows: rows[0].__setitem__(5, 0), "primary key of sqlar differs at column name", "name"),
        (
            lambda rows: rows[1].__setitem__(3, 1),
            "column sqlar.mode has other constraints or default",
            "mode",
        ),
        (
            lambda rows: rows[1].__setitem__(4, "'x'"),
            "column sqlar.mode has other constraints or default",
            "mode",
        ),
    ],
)
def test_explain_names_the_column_that_differs(change: Any, message: str, column: str) -> None:
    err = schema._explain(_xinfo("sqlar", change), "sqlar", "s.db")
    assert (err.message, err.where, err.details) == (
        f"not an acceptable cartridge: {message}",
        "s.db",
        {"table": "sqlar", "column": column},
    )


def test_explain_names_the_order_or_else_the_table() -> None:
    def swap(rows: list[list[Any]]) -> None:
        rows[1][0], rows[2][0] = rows[2][0], rows[1][0]

    err = schema._explain(_xinfo("sqlar", swap), "sqlar", "s.db")
    assert (err.message, err.details) == (
        "not an acceptable cartridge: columns of sqlar are not in the reference order",
        {"table": "sqlar"},
    )
    err = schema._explain(_xinfo("sqlar"), "sqlar", "s.db")
    assert (err.message, err.details) == (
        "not an acceptable cartridge: table sqlar is not defined as the reference defines it",
        {"table": "sqlar"},
    )


def test_a_retyped_column_is_named_from_what_sqlite_parsed(tmp_path: Path) -> None:
    ddl = next(d for d in DDL if d.startswith("CREATE TABLE capabilities"))
    conn = _file(
        tmp_path,
        edit="UPDATE sqlite_master SET sql = ? WHERE name = 'capabilities'",
        params=(ddl.replace("json         TEXT", "json         BLOB"),),
    )
    refused(
        lambda: check_schema(conn, where="s.db"),
        InvalidInput,
        "not an acceptable cartridge: column capabilities.json is declared 'BLOB', expected 'TEXT'",
        where="s.db",
        details={"table": "capabilities", "column": "json"},
    )


def test_a_structure_the_text_hides_is_refused_by_each_pragma(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _db()
    real = schema._structure

    for pragma in ("table_list", "table_xinfo", "index_list", "index_xinfo"):

        def altered(
            c: sqlite3.Connection, pragma: str = pragma
        ) -> dict[str, dict[str, set[tuple[Any, ...]]]]:
            got = real(c)
            extra = (8, "x", "TEXT", 0, None, 0, 0) if pragma == "table_xinfo" else ("x",) * 3
            got[pragma]["signatures"] = got[pragma]["signatures"] | {extra}
            return got

        monkeypatch.setattr(schema, "_structure", altered)
        schema._ACCEPTED.clear()
        if pragma == "table_xinfo":  # a column: `_explain` names it
            message, details = (
                "column signatures.x is not in the reference schema",
                {"table": "signatures", "column": "x"},
            )
        else:
            message, details = (
                f"table signatures is not what the reference's text makes of it ({pragma})",
                {"table": "signatures"},
            )
        refused(
            lambda: check_schema(conn, where="mem"),
            InvalidInput,
            f"not an acceptable cartridge: {message}",
            where="mem",
            details=details,
        )
    schema._ACCEPTED.clear()


def test_an_accepted_schema_is_judged_once_and_the_memory_of_it_stays_bounded(tmp_path: Path) -> None:
    schema._ACCEPTED.clear()
    conns = []
    for n in range(20):  # the same statements with another comment: another key, the same schema
        ddl = next(d for d in DDL if d.startswith("CREATE TABLE sqlar"))
        conns.append(
            _file(
                tmp_path / str(n),
                edit="UPDATE sqlite_master SET sql = ? WHERE name = 'sqlar'",
                params=(ddl + f" -- {n}",),
            )
        )
    for conn in conns:
        assert "sqlar" in check_schema(conn, where="s.db")
        assert 1 <= len(schema._ACCEPTED) <= 16
    first = conns[-1]
    key_count = len(schema._ACCEPTED)
    assert "sqlar" in check_schema(first, where="s.db") and len(schema._ACCEPTED) == key_count
