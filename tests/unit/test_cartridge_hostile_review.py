"""Hostile review of the cartridge reader after issue 13: files whose b-trees a plain SQLite
reader walks differently from our `NOT INDEXED` scans. Each is built at test time from a copy of
the trusted sample; a plain `sqlite3` query is shown to see other content than what was signed,
and `acx cartridge verify` must not call the file trusted (tests/unit/test_cartridge_hostile.py
holds the contract: never exit 0 or 70, bounded time and memory, file untouched)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.sqlar import decode_entry
from acxoci.errors import InvalidInput
from acxoci.workflow.ready import directory_roster, load_roster
from tests.unit.test_cartridge_hostile import assert_refused_verify, measured_acx
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


def _meta_row_out_of_order(path: Path) -> None:
    """The signed `acx.publisher_id` row sits at the end of the cartridge b-tree (a key edited in
    place): a scan still meets it, but a seek by key, as any `WHERE key = ?` does, never finds it."""
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO cartridge SELECT 'zcx.publisher_id', value FROM cartridge WHERE key = 'acx.publisher_id'"
    )
    conn.execute("DELETE FROM cartridge WHERE key = 'acx.publisher_id'")
    conn.commit()
    conn.close()
    data = path.read_bytes()
    assert data.count(b"zcx.publisher_id") == 1
    path.write_bytes(data.replace(b"zcx.publisher_id", b"acx.publisher_id"))


def _swap_cells(path: Path, table: str) -> None:
    """Swap the first two cell pointers of the first leaf page of `table`: its rows are then out of
    key order, so a seek (by rowid or key) misses rows that a scan returns."""
    conn = sqlite3.connect(path)
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    page = root
    while True:
        base = (page - 1) * page_size
        head = base + (100 if page == 1 else 0)
        kind = data[head]
        if kind in (0x0D, 0x0A):  # table or index leaf
            break
        ptr = int.from_bytes(data[head + 12 : head + 14], "big")
        cell = base + ptr
        page = int.from_bytes(data[cell : cell + 4], "big")  # left child of the first cell
    count = int.from_bytes(data[head + 3 : head + 5], "big")
    assert count >= 2, count
    a, b = head + 8, head + 10
    data[a : a + 2], data[b : b + 2] = data[b : b + 2], data[a : a + 2]
    path.write_bytes(bytes(data))


def test_plain_sqlite_misses_an_out_of_order_meta_row(sample: Path) -> None:
    _meta_row_out_of_order(sample)
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    by_key = conn.execute("SELECT value FROM cartridge WHERE key = 'acx.publisher_id'").fetchall()
    scanned = [k for (k,) in conn.execute("SELECT key FROM cartridge NOT INDEXED")]
    conn.close()
    assert by_key == [] and "acx.publisher_id" in scanned


def test_plain_sqlite_misses_an_out_of_order_sqlar_row(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    rows = conn.execute("SELECT rowid, name FROM sqlar ORDER BY rowid").fetchall()
    conn.close()
    _swap_cells(sample, "sqlar")
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    failures = 0
    for rowid, _name in rows:
        try:
            if not conn.execute("SELECT 1 FROM sqlar WHERE rowid = ?", (rowid,)).fetchall():
                failures += 1
        except sqlite3.DatabaseError:
            failures += 1
    conn.close()
    assert failures, "no rowid seek missed"


@pytest.mark.parametrize(
    "build",
    [
        _meta_row_out_of_order,
        lambda p: _swap_cells(p, "sqlar"),
        lambda p: _swap_cells(p, "objects"),
        lambda p: _swap_cells(p, "sqlite_autoindex_sqlar_1"),
    ],
    ids=["meta-key-edited", "sqlar-cells", "objects-cells", "sqlar-index-cells"],
)
def test_btree_out_of_key_order_is_refused(
    build: Callable[[Path], None], sample: Path, vectors_dir: Path
) -> None:
    build(sample)
    doc = assert_refused_verify(sample, vectors_dir)
    assert "order" in str(doc), doc


def _sqlar_separator_lies(path: Path) -> None:
    """Every sqlar row stored raw (compression is not signed), then the root page's separator rowid
    lowered: scans still see every row, but a seek by rowid (what every `WHERE name = ?` ends in)
    lands in the wrong leaf."""
    conn = sqlite3.connect(path)
    for rowid, name, sz, data in conn.execute("SELECT rowid, name, sz, data FROM sqlar").fetchall():
        raw = decode_entry(name, sz, data, where="test")
        conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (raw, rowid))
    conn.commit()
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sqlar'").fetchone()
    (first,) = conn.execute("SELECT min(rowid) FROM sqlar").fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    base = (root - 1) * page_size
    assert data[base] == 0x05, "sqlar root is not an interior page"
    cell = base + int.from_bytes(data[base + 12 : base + 14], "big")
    assert data[cell + 4] < 0x80 and data[cell + 4] > first  # a one-byte varint rowid
    data[cell + 4] = first
    path.write_bytes(bytes(data))


def test_plain_sqlite_cannot_seek_past_a_lying_separator(sample: Path, vectors_dir: Path) -> None:
    _sqlar_separator_lies(sample)
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    with pytest.raises(sqlite3.DatabaseError):
        for (name,) in conn.execute("SELECT name FROM sqlar NOT INDEXED").fetchall():
            conn.execute("SELECT data FROM sqlar WHERE name = ?", (name,)).fetchall()
    conn.close()
    doc = assert_refused_verify(sample, vectors_dir)
    assert "seek" in str(doc), doc


def _rewrite_ddl(path: Path, table: str, old: str, new: str) -> None:
    conn = sqlite3.connect(path)
    (ddl,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    assert old in ddl
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (ddl.replace(old, new), table))
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    ("table", "old", "new"),
    [
        # SQLite's tokenizer takes U+00A0 as an identifier character, not as a space: the type
        # becomes 'TEXT NOT\xa0NULL' and the NOT NULL constraint is gone
        ("capabilities", "json         TEXT NOT NULL", "json         TEXT NOT\u00a0NULL"),
        # SQLite folds ASCII case only: 'artifact_\ufb01ngerprint' is another column, even though
        # Python's str.upper() turns U+FB01 into 'FI'
        ("memory", "artifact_fingerprint TEXT", "artifact_\ufb01ngerprint TEXT"),
    ],
    ids=["nbsp-space", "ligature-identifier"],
)
def test_ddl_that_sqlite_parses_otherwise_is_refused(
    table: str, old: str, new: str, sample: Path, vectors_dir: Path
) -> None:
    _rewrite_ddl(sample, table, old, new)
    doc = assert_refused_verify(sample, vectors_dir)
    assert doc["error"]["kind"] == "invalid_input", doc


def test_fifo_is_refused_without_waiting(tmp_path: Path, vectors_dir: Path) -> None:
    """A FIFO named like a cartridge: opening it to read the header would block for ever."""
    fifo = tmp_path / "x.acx"
    os.mkfifo(fifo)
    code, doc, _, _ = measured_acx(
        "cartridge",
        "verify",
        str(fifo),
        "--trust-registry",
        str(vectors_dir / "sample" / "trust-active.json"),
    )
    assert code not in (0, 70) and doc["error"]["kind"] == "invalid_input", doc
    assert "regular file" in doc["error"]["message"], doc


def test_device_behind_a_symlink_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "z.acx"
    link.symlink_to("/dev/zero")
    with pytest.raises(InvalidInput, match="regular file"):
        open_cartridge(link)


def test_file_swapped_between_header_check_and_open_is_refused(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOCTOU: the header is read from one file, and another (here a WAL-mode copy) is renamed over
    the path before SQLite opens it; the open must notice that it holds another file."""
    import acxoci.cartridge.reader as reader

    other = tmp_path / "other.acx"
    other.write_bytes(sample.read_bytes())
    with open(other, "r+b") as fh:
        fh.seek(18)
        fh.write(b"\x02\x02")
    real_connect = reader._connect

    def swap_then_connect(uri: str, *, where: str) -> sqlite3.Connection:
        os.replace(other, sample)
        return real_connect(uri, where=where)

    monkeypatch.setattr(reader, "_connect", swap_then_connect)
    with pytest.raises(InvalidInput, match="changed while"):
        open_cartridge(sample).close()


def test_index_check_is_flat_in_memory_over_many_save_rows(sample: Path, vectors_dir: Path) -> None:
    """100,000 unsigned SAVE memory rows: the index check streams both sides (no table in memory)
    and the file still verifies."""
    conn = sqlite3.connect(sample)
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)"
        " INSERT INTO memory SELECT 'save-' || i, 'save', hex(randomblob(16)), NULL, '{}', 'sha256:00', 't'"
        " FROM n"
    )
    conn.commit()
    conn.close()
    code, doc, seconds, rss = measured_acx(
        "cartridge",
        "verify",
        str(sample),
        "--trust-registry",
        str(vectors_dir / "sample" / "trust-active.json"),
    )
    assert (code, doc["trust"]) == (0, "trusted"), doc
    assert rss < 150 * 1024 and seconds < 5.0, (rss, seconds)
