"""Page- and schema-level edits that make a hostile cartridge from a copy of the sample, shared by
the measured hostile-file tests (tests/cartridge/test_btree_walks_disagree.py and
test_rowids_and_read_order.py) and the in-process reader tests (tests/cartridge/test_reader_*.py).
Each works on a writable copy, never on a vector."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.harness.reader_edits import decoded

ROM_FILE = "rom/knowledge/STYLE.md"


def graft_index(conn: sqlite3.Connection, index: str, helper_index: str) -> None:
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


def sqlar_index_points_rom_name_at_save_row(path: Path) -> None:
    """The sqlar name index maps the signed ROM name to the rowid of an unsigned SAVE row."""
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO sqlar VALUES ('save/notes.md', 420, 0, 4, CAST('evil' AS BLOB))")
    rows = dict(conn.execute("SELECT name, rowid FROM sqlar").fetchall())
    swap = {rows["save/notes.md"]: rows[ROM_FILE], rows[ROM_FILE]: rows["save/notes.md"]}
    conn.execute("CREATE TABLE h (name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)")
    for name, rowid in rows.items():
        conn.execute("INSERT INTO h (rowid, name) VALUES (?, ?)", (swap.get(rowid, rowid), name))
    graft_index(conn, "sqlite_autoindex_sqlar_1", "sqlite_autoindex_h_1")


def memory_index_calls_save_row_rom(path: Path) -> None:
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
    graft_index(conn, "memory_zone_fp", "h_i")


def meta_row_out_of_order(path: Path) -> None:
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


def swap_cells(path: Path, table: str) -> None:
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


def sqlar_separator_lies(path: Path) -> None:
    """Every sqlar row stored raw (compression is not signed), then the root page's separator rowid
    lowered: scans still see every row, but a seek by rowid (what every `WHERE name = ?` ends in)
    lands in the wrong leaf."""
    conn = sqlite3.connect(path)
    for rowid, name, sz, data in conn.execute("SELECT rowid, name, sz, data FROM sqlar").fetchall():
        raw = decoded(name, sz, data)
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


def corrupt_a_sqlar_leaf(path: Path) -> None:
    """An absurd cell count on the first leaf of sqlar: any read of that table fails, while the
    tables read before it (signatures) are intact."""
    conn = sqlite3.connect(path)
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sqlar'").fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    base = (root - 1) * page_size
    assert data[base] == 0x05, "sqlar root is not an interior page"
    cell = base + int.from_bytes(data[base + 12 : base + 14], "big")
    leaf = (int.from_bytes(data[cell : cell + 4], "big") - 1) * page_size
    assert data[leaf] == 0x0D, "not a table leaf"
    data[leaf + 3 : leaf + 5] = (5000).to_bytes(2, "big")
    path.write_bytes(bytes(data))
