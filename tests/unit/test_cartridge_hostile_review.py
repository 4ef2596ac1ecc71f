"""Hostile review of the cartridge reader after issue 13: files whose b-trees a plain SQLite
reader walks differently from our `NOT INDEXED` scans. Each is built at test time from a copy of
the trusted sample; a plain `sqlite3` query is shown to see other content than what was signed,
and `acx cartridge verify` must not call the file trusted (tests/unit/test_cartridge_hostile.py
holds the contract: never exit 0 or 70, bounded time and memory, file untouched)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from acxoci.workflow.ready import directory_roster, load_roster
from tests.unit.test_cartridge_hostile import assert_refused_verify
from tests.unit.test_cartridge_verify_support import NOW, SAMPLE, copy_vector

ROM_FILE = "rom/knowledge/STYLE.md"


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def _graft_index(conn: sqlite3.Connection, index: str, helper_index: str) -> None:
    """Point `index` at the b-tree of `helper_index` (built from other rows), then forget the
    helper table: the file's index now disagrees with its table, as a hand-edited page would."""
    conn.commit()
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (helper_index,)).fetchone()
    (helper,) = conn.execute("SELECT tbl_name FROM sqlite_master WHERE name = ?", (helper_index,)).fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = ?", (root, index))
    conn.execute("DELETE FROM sqlite_master WHERE tbl_name = ?", (helper,))
    conn.commit()
    conn.close()


def _sqlar_index_points_rom_name_at_save_row(path: Path) -> None:
    """The sqlar name index maps the signed ROM name to the rowid of an unsigned SAVE row."""
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO sqlar VALUES ('save/notes.md', 420, 0, 4, CAST('evil' AS BLOB))")
    rows = dict(conn.execute("SELECT name, rowid FROM sqlar").fetchall())
    swap = {rows["save/notes.md"]: rows[ROM_FILE], rows[ROM_FILE]: rows["save/notes.md"]}
    conn.execute("CREATE TABLE h (name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)")
    for name, rowid in rows.items():
        conn.execute("INSERT INTO h (rowid, name) VALUES (?, ?)", (swap.get(rowid, rowid), name))
    _graft_index(conn, "sqlite_autoindex_sqlar_1", "sqlite_autoindex_h_1")


def _memory_index_calls_save_row_rom(path: Path) -> None:
    """memory_zone_fp lists an unsigned SAVE memory row under zone 'rom' (and the ROM row under 'save')."""
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO memory SELECT 'mem-evil', 'save', artifact_fingerprint, codebase_fingerprint,"
        " '{\"evil\":1}', oid, created_at FROM memory"
    )
    conn.execute(
        "CREATE TABLE h (id TEXT PRIMARY KEY NOT NULL, zone TEXT, artifact_fingerprint TEXT) WITHOUT ROWID"
    )
    conn.execute("CREATE INDEX h_i ON h (zone, artifact_fingerprint)")
    conn.execute(
        "INSERT INTO h SELECT id, CASE zone WHEN 'save' THEN 'rom' ELSE 'save' END, artifact_fingerprint"
        " FROM memory"
    )
    _graft_index(conn, "memory_zone_fp", "h_i")


def test_plain_sqlite_sees_the_grafted_sqlar_index(sample: Path) -> None:
    """The attack is real: an ordinary lookup by name returns the SAVE row's bytes."""
    _sqlar_index_points_rom_name_at_save_row(sample)
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    (data,) = conn.execute("SELECT data FROM sqlar WHERE name = ?", (ROM_FILE,)).fetchone()
    conn.close()
    assert data == b"evil"


def test_plain_sqlite_sees_the_grafted_memory_index(sample: Path) -> None:
    _memory_index_calls_save_row_rom(sample)
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    rows = conn.execute("SELECT id, zone, payload FROM memory WHERE zone = 'rom'").fetchall()
    conn.close()
    assert rows == [("mem-evil", "rom", '{"evil":1}')]


@pytest.mark.parametrize(
    "build", [_sqlar_index_points_rom_name_at_save_row, _memory_index_calls_save_row_rom]
)
def test_index_that_disagrees_with_its_table_is_refused(
    build: Callable[[Path], None], sample: Path, vectors_dir: Path
) -> None:
    build(sample)
    doc = assert_refused_verify(sample, vectors_dir)
    text = str(doc)
    assert "index" in text, doc


@pytest.mark.parametrize(
    "build", [_sqlar_index_points_rom_name_at_save_row, _memory_index_calls_save_row_rom]
)
def test_workflow_ready_refuses_a_disagreeing_index(build: Callable[[Path], None], sample: Path) -> None:
    build(sample)
    [entry] = load_roster(directory_roster(sample.parent), registry=None, now=NOW)
    assert entry.error is not None or (entry.verdict is not None and entry.verdict.rejected), entry
