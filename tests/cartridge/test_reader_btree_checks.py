"""The reader's b-tree consistency checks, in process (the hostile files of
test_btree_walks_disagree.py, built at test time, read by `open_cartridge` here rather than a
measured child): each index agrees with its table's typed scan entry for entry and in strict
order, a table's scan is in key order, every scanned rowid is found again by a seek, and the key
column is unique. Each refusal is compared whole: class, kind, message naming table/index/rowid,
details."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acxoci.cartridge.reader import BadEntry, Cartridge, open_cartridge
from acxoci.cartridge.schema import DDL
from acxoci.errors import InvalidInput
from tests.harness.btree import (
    graft_index,
    memory_index_calls_save_row_rom,
    meta_row_out_of_order,
    sqlar_index_points_rom_name_at_save_row,
    sqlar_separator_lies,
    swap_cells,
)
from tests.harness.cartridges import SAMPLE, copy_vector
from tests.harness.reader_edits import class_refused, edited, refused, scratch

SQLAR_INDEX = "sqlite_autoindex_sqlar_1"
ORDER = "is out of key order (a lookup by key would miss rows a scan sees)"


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def _disagrees(index: str, table: str) -> tuple[str, dict[str, str]]:
    what = "an entry names no row of the table, a row has no entry, or entries are out of order or repeated"
    return f"index {index} disagrees with table {table}: {what}", {"table": table, "index": index}


def test_the_sample_passes_every_check(sample: Path) -> None:
    with open_cartridge(sample) as cart:
        cart.check_tables()
        cart.check_side_tables()
        cart.check_indexes()


@pytest.mark.parametrize(
    ("build", "index", "table"),
    [
        (sqlar_index_points_rom_name_at_save_row, SQLAR_INDEX, "sqlar"),
        (memory_index_calls_save_row_rom, "memory_zone_fp", "memory"),
        (lambda p: swap_cells(p, SQLAR_INDEX), SQLAR_INDEX, "sqlar"),
    ],
    ids=["sqlar-name-to-save-row", "memory-save-row-as-rom", "sqlar-index-cells-swapped"],
)
def test_an_index_that_disagrees_with_its_table_is_refused(
    build: object, index: str, table: str, sample: Path
) -> None:
    assert callable(build)
    build(sample)
    message, details = _disagrees(index, table)
    with open_cartridge(sample) as cart:
        cart.sqlar_infos()  # the table itself reads fine: only the index lies
        refused(cart.check_indexes, BadEntry, message, where=str(sample), details=details)


def _graft_missing_last(path: Path, *, keep: int) -> None:
    """The sqlar name index holds only the first `keep` rows' entries (in name order)."""
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT rowid, name FROM sqlar ORDER BY name").fetchall()[:keep]
    conn.execute("CREATE TABLE h (name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)")
    conn.executemany("INSERT INTO h (rowid, name) VALUES (?, ?)", rows)
    graft_index(conn, SQLAR_INDEX, "sqlite_autoindex_h_1")


def test_a_table_row_without_an_index_entry_is_refused(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    (count,) = conn.execute("SELECT count(*) FROM sqlar").fetchone()
    conn.close()
    _graft_missing_last(sample, keep=count - 1)  # every entry is right, the last row has none
    message, details = _disagrees(SQLAR_INDEX, "sqlar")
    with open_cartridge(sample) as cart:
        refused(cart.check_indexes, BadEntry, message, where=str(sample), details=details)


def test_an_index_with_an_entry_too_many_is_refused(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    rows = conn.execute("SELECT rowid, name FROM sqlar ORDER BY name").fetchall()
    conn.execute("CREATE TABLE h (name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)")
    conn.executemany("INSERT INTO h (rowid, name) VALUES (?, ?)", [*rows, (10_000, "rom/zzz")])
    graft_index(conn, SQLAR_INDEX, "sqlite_autoindex_h_1")
    message, details = _disagrees(SQLAR_INDEX, "sqlar")
    with open_cartridge(sample) as cart:
        refused(cart.check_indexes, BadEntry, message, where=str(sample), details=details)


def test_an_index_over_keys_of_another_class_is_refused_by_the_typed_scan(sample: Path) -> None:
    # the index is compared with the typed scan's rows, so its columns are TEXT by then: a NULL or
    # BLOB key (which an index would hold in record order) is refused before any comparison
    conn = sqlite3.connect(sample)
    conn.execute("INSERT INTO sqlar VALUES (X'726f6d', 420, 0, 1, X'41')")
    conn.commit()
    conn.close()
    with open_cartridge(sample) as cart:
        class_refused(cart.check_indexes, sample, "sqlar", "name", "blob", "text")


def test_repeated_rows_are_refused_before_their_index_entries() -> None:
    # no primary key here (a wrapped connection has no schema check): two identical rows, so the
    # index holds one entry twice and agrees with the table; the key's uniqueness refuses them
    conn = scratch(ddl=False)
    for stmt in DDL:
        if stmt.startswith("CREATE TABLE memory"):
            stmt = stmt.replace("TEXT PRIMARY KEY NOT NULL", "TEXT NOT NULL").replace(") WITHOUT ROWID", ")")
        if stmt.startswith("CREATE INDEX memory_zone_fp"):
            stmt = "CREATE INDEX memory_zone_fp ON memory(zone, artifact_fingerprint, id)"
        conn.execute(stmt)
    row = "('m1', 'rom', 'fp', NULL, '{}', 'o', 'c')"
    conn.execute(f"INSERT INTO memory VALUES ('m0', 'rom', 'fp', NULL, '{{}}', 'o', 'c'), {row}, {row}")
    cart = Cartridge.from_connection(conn, label="mem")
    refused(
        cart.check_indexes,
        BadEntry,
        "memory.id 'm1' appears twice (the key must be unique)",
        where="mem",
        details={"table": "memory", "column": "id"},
    )


def test_an_index_sqlite_would_not_read_as_a_covering_scan_is_refused() -> None:
    conn = scratch(ddl=False)
    for stmt in DDL:
        if stmt.startswith("CREATE INDEX memory_zone_fp"):
            stmt = "CREATE INDEX memory_zone_fp ON memory(zone)"
        conn.execute(stmt)
    cart = Cartridge.from_connection(conn, label="mem")
    refused(
        cart.check_indexes,
        InvalidInput,
        "SQLite would read this cartridge through ['SCAN memory USING INDEX memory_zone_fp'], not"
        " ('SCAN memory USING COVERING INDEX memory_zone_fp',); refusing",
        where="mem",
    )


def test_a_missing_index_or_table_is_typed() -> None:
    conn = scratch(ddl=False)
    for stmt in DDL:
        if not stmt.startswith("CREATE INDEX memory_zone_fp"):
            conn.execute(stmt)
    cart = Cartridge.from_connection(conn, label="mem")
    refused(
        cart.check_indexes,
        InvalidInput,
        "cannot read index memory_zone_fp: no such index: memory_zone_fp",
        where="mem",
    )
    conn2 = scratch(ddl=False)
    for stmt in DDL:
        if not stmt.startswith(("CREATE TABLE capabilities", "CREATE TABLE memory", "CREATE INDEX")):
            conn2.execute(stmt)
    cart2 = Cartridge.from_connection(conn2, label="mem2")
    refused(
        cart2.check_indexes,
        InvalidInput,
        "cannot read cartridge table capabilities: no such table: capabilities",
        where="mem2",
    )


def _missed_seeks(path: Path, table: str) -> list[int]:
    """The rowids a plain NOT INDEXED scan returns that a plain seek by rowid does not find."""
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        out = []
        for (rowid,) in conn.execute(f"SELECT rowid FROM {table} NOT INDEXED").fetchall():
            try:
                found = conn.execute(f"SELECT rowid FROM {table} WHERE rowid = ?", (rowid,)).fetchall()
            except sqlite3.DatabaseError:
                found = []
            if found != [(rowid,)]:
                out.append(rowid)
        return out
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("build", "check"),
    [
        (sqlar_separator_lies, Cartridge.check_indexes),
        # swapped cells are out of order too, which the typed scan finds first: the seek on its own
        (lambda p: swap_cells(p, "sqlar"), lambda c: c._check_rowid_seeks("sqlar")),
    ],
    ids=["separator", "cells"],
)
def test_a_rowid_a_seek_cannot_find_is_refused_and_named(build: object, check: object, sample: Path) -> None:
    assert callable(build) and callable(check)
    build(sample)
    missed = _missed_seeks(sample, "sqlar")
    assert missed
    with open_cartridge(sample) as cart:
        refused(
            lambda: check(cart),
            BadEntry,
            f"table sqlar: a seek for rowid {max(missed)} misses the row a scan returns"
            " (its interior pages disagree with its leaves)",
            where=str(sample),
            details={"table": "sqlar"},
        )


def test_capabilities_rowid_seeks_are_checked_too(sample: Path) -> None:
    # a second rowid table (with a root split, so there is a separator to lie)
    conn = sqlite3.connect(sample)
    conn.executemany(
        "INSERT INTO capabilities VALUES (?, ?, 'sha256:00')", [(f"cap-{i:04}", "x" * 400) for i in range(40)]
    )
    conn.commit()
    conn.close()
    swap_cells(sample, "capabilities")
    missed = _missed_seeks(sample, "capabilities")
    assert missed
    with open_cartridge(sample) as cart:
        refused(
            lambda: cart._check_rowid_seeks("capabilities"),
            BadEntry,
            f"table capabilities: a seek for rowid {max(missed)} misses the row a scan returns"
            " (its interior pages disagree with its leaves)",
            where=str(sample),
            details={"table": "capabilities"},
        )
        refused(cart.check_indexes, BadEntry, f"table capabilities {ORDER}", where=str(sample),
                details={"table": "capabilities"})


@pytest.mark.parametrize(
    ("build", "table", "read"),
    [
        (meta_row_out_of_order, "cartridge", Cartridge.meta),
        (lambda p: swap_cells(p, "sqlar"), "sqlar", Cartridge.sqlar_infos),
        (lambda p: swap_cells(p, "objects"), "objects", Cartridge.objects),
    ],
    ids=["meta-key-edited", "sqlar-cells", "objects-cells"],
)
def test_a_table_out_of_key_order_is_refused(build: object, table: str, read: object, sample: Path) -> None:
    assert callable(build) and callable(read)
    build(sample)
    with open_cartridge(sample) as cart:
        refused(
            lambda: read(cart),
            BadEntry,
            f"table {table} {ORDER}",
            where=str(sample),
            details={"table": table},
        )


@pytest.mark.parametrize(
    ("ddl", "table", "rows", "key", "read"),
    [
        (
            "CREATE TABLE capabilities (id TEXT NOT NULL, json TEXT NOT NULL, content_hash TEXT NOT NULL)",
            "capabilities",
            "('cap-0', '{}', 'h0'), ('cap-a', '{}', 'h1'), ('cap-b', '{}', 'h2'),"
            " ('cap-a', '{\"x\":1}', 'h3')",
            "id",
            Cartridge.capabilities,
        ),
        (
            "CREATE TABLE sqlar (name TEXT, mode INT, mtime INT, sz INT, data BLOB)",
            "sqlar",
            "('rom/0', 420, 0, 1, X'41'), ('rom/a', 420, 0, 1, X'41'), ('rom/a', 420, 1, 2, X'4243')",
            "name",
            Cartridge.sqlar_infos,
        ),
    ],
    ids=["capabilities", "sqlar"],
)
def test_a_repeated_key_is_refused_naming_it(ddl: str, table: str, rows: str, key: str, read: object) -> None:
    assert callable(read)
    conn = scratch(ddl, f"INSERT INTO {table} VALUES {rows}", ddl=False)
    cart = Cartridge.from_connection(conn, label="mem")
    first = "cap-a" if table == "capabilities" else "rom/a"  # the repeated one, not the first row
    refused(
        lambda: read(cart),
        BadEntry,
        f"{table}.{key} {first!r} appears twice (the key must be unique)",
        where="mem",
        details={"table": table, "column": key},
    )


def test_equal_values_outside_the_key_are_fine(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(
        vectors_dir,
        tmp_path,
        "INSERT INTO capabilities VALUES ('cap-a', '{}', 'h'), ('cap-b', '{}', 'h')",
        "INSERT INTO sqlar VALUES ('rom/x1', 420, 0, 1, X'41'), ('rom/x2', 420, 0, 1, X'41')",
    )
    with open_cartridge(p) as cart:
        assert [c.id for c in cart.capabilities()][-2:] == ["cap-a", "cap-b"]
        assert [i.name for i in cart.sqlar_infos()][-2:] == ["rom/x1", "rom/x2"]


def test_side_tables_keys_are_checked(vectors_dir: Path, tmp_path: Path) -> None:
    for table, stmt in (
        ("vectors", "INSERT INTO vectors VALUES (X'41', 'rom', X'00', NULL)"),
        ("attestations", "INSERT INTO attestations VALUES (X'41', 't', NULL, 'm', 'd', NULL, 'c')"),
        ("acx_skill", "UPDATE acx_skill SET sqlar_path = X'41'"),
    ):
        p = edited(vectors_dir, tmp_path, stmt, name=f"{table}.acx")
        key = {"vectors": "memory_id", "attestations": "att_id", "acx_skill": "sqlar_path"}[table]
        with open_cartridge(p) as cart:
            refused(
                cart.check_side_tables,
                BadEntry,
                f"{table}.{key} holds a blob value, expected text",
                where=str(p),
                details={"table": table, "column": key},
            )
    p = edited(vectors_dir, tmp_path, "DROP TABLE vectors", "DROP TABLE attestations", name="absent.acx")
    conn = sqlite3.connect(p)
    conn.execute(
        "INSERT INTO acx_skill (sqlar_path, name, description, content_sha256, resources, schema_version)"
        " VALUES ('rom/b', 'n', 'd', 'h', '[]', 'v')"
    )
    conn.commit()
    conn.close()
    with open_cartridge(p) as cart:
        cart.check_side_tables()  # absent optional tables are skipped; the present one passes
    conn2 = scratch(
        "CREATE TABLE acx_skill (sqlar_path TEXT, name TEXT, description TEXT, license TEXT,"
        " compatibility TEXT, skill_version TEXT, body_tokens INTEGER, content_sha256 TEXT,"
        " resources TEXT, ext TEXT, schema_version TEXT)",
        "INSERT INTO acx_skill VALUES ('rom/a', 'x', 'd', NULL, NULL, NULL, NULL, 'h', '[]', NULL, 'v'),"
        " ('rom/a', 'y', 'd', NULL, NULL, NULL, NULL, 'h', '[]', NULL, 'v')",
        ddl=False,
    )
    refused(
        Cartridge.from_connection(conn2, label="mem").check_side_tables,
        BadEntry,
        "acx_skill.sqlar_path 'rom/a' appears twice (the key must be unique)",
        where="mem",
        details={"table": "acx_skill", "column": "sqlar_path"},
    )


def test_a_view_in_a_tables_place_is_refused_by_the_seek_plan() -> None:
    # a wrapped connection whose sqlar is a view: the index checks skip it (not a table), and the
    # seek check's plan shows the b-tree SQLite would really read
    conn = scratch(ddl=False)
    for stmt in DDL:
        if stmt.startswith("CREATE TABLE sqlar"):
            conn.execute("CREATE TABLE t (name TEXT, mode INT, mtime INT, sz INT, data BLOB)")
            conn.execute("CREATE VIEW sqlar AS SELECT rowid AS rowid, * FROM t")
        else:
            conn.execute(stmt)
    refused(
        Cartridge.from_connection(conn, label="mem").check_indexes,
        InvalidInput,
        "SQLite would read this cartridge through ['SCAN t', 'CORRELATED SCALAR SUBQUERY 1',"
        " 'SEARCH t USING INTEGER PRIMARY KEY (rowid=?)'], not ('SCAN a', 'CORRELATED SCALAR SUBQUERY 1',"
        " 'SEARCH b USING INTEGER PRIMARY KEY (rowid=?)'); refusing",
        where="mem",
    )


def _statements(cart: Cartridge) -> list[str]:
    seen: list[str] = []
    cart.conn.set_trace_callback(seen.append)
    return seen


def test_the_sqlar_index_check_takes_the_table_side_from_the_typed_scan(sample: Path) -> None:
    # the (name, rowid) pairs come from the cached sqlar scan: the table b-tree (every leaf page
    # of a large ROM) is not read a second time for them
    with open_cartridge(sample) as cart:
        seen = _statements(cart)
        cart.check_indexes()
        cart.sqlar_infos()
    sqlar_scans = [s for s in seen if "FROM sqlar NOT INDEXED" in s and "EXPLAIN" not in s]
    assert len(sqlar_scans) == 1 and "typeof(mode)" in sqlar_scans[0], sqlar_scans  # the typed scan


def test_a_refused_sqlar_scan_is_the_index_check_s_refusal(sample: Path) -> None:
    # a row the typed scan refuses (a REAL mode) and an index whose cells are swapped: the index is
    # compared with the typed scan's rows, so the scan's refusal comes first
    conn = sqlite3.connect(sample)
    conn.execute("UPDATE sqlar SET mode = 1.5 WHERE rowid = (SELECT max(rowid) FROM sqlar)")
    conn.commit()
    conn.close()
    swap_cells(sample, SQLAR_INDEX)
    with open_cartridge(sample) as cart:
        class_refused(cart.check_indexes, sample, "sqlar", "mode", "real", "integer")
