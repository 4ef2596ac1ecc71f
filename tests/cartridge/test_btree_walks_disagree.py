"""Cartridges whose b-trees a plain SQLite reader walks differently from our `NOT INDEXED` scans
(a hostile review of the reader after issue 13). Each is built at test time from a copy of
the trusted sample; a plain `sqlite3` query is shown to see other content than what was signed,
and `acx cartridge verify` must not call the file trusted (tests/cartridge/test_hostile_cartridges.py
holds the contract: never exit 0 or 70, bounded time and memory, file untouched)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from acxoci.cartridge.reader import open_cartridge
from acxoci.errors import InvalidInput
from acxoci.workflow.ready import directory_roster, load_roster
from tests.harness.btree import (
    memory_index_calls_save_row_rom,
    meta_row_out_of_order,
    sqlar_index_points_rom_name_at_save_row,
    sqlar_separator_lies,
    swap_cells,
)
from tests.harness.cartridges import NOW, SAMPLE, assert_refused_verify, copy_vector, measured_acx

ROM_FILE = "rom/knowledge/STYLE.md"


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def test_plain_sqlite_sees_the_grafted_sqlar_index(sample: Path) -> None:
    """The attack is real: an ordinary lookup by name returns the SAVE row's bytes."""
    sqlar_index_points_rom_name_at_save_row(sample)
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    (data,) = conn.execute("SELECT data FROM sqlar WHERE name = ?", (ROM_FILE,)).fetchone()
    conn.close()
    assert data == b"evil"


def test_plain_sqlite_sees_the_grafted_memory_index(sample: Path) -> None:
    memory_index_calls_save_row_rom(sample)
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    rows = conn.execute("SELECT id, zone, payload FROM memory WHERE zone = 'rom'").fetchall()
    conn.close()
    assert rows == [("mem-evil", "rom", '{"evil":1}')]


@pytest.mark.parametrize(
    "build", [sqlar_index_points_rom_name_at_save_row, memory_index_calls_save_row_rom]
)
def test_index_that_disagrees_with_its_table_is_refused(
    build: Callable[[Path], None], sample: Path, vectors_dir: Path
) -> None:
    build(sample)
    doc = assert_refused_verify(sample, vectors_dir)
    text = str(doc)
    assert "index" in text, doc


@pytest.mark.parametrize(
    "build", [sqlar_index_points_rom_name_at_save_row, memory_index_calls_save_row_rom]
)
def test_workflow_ready_refuses_a_disagreeing_index(build: Callable[[Path], None], sample: Path) -> None:
    build(sample)
    [entry] = load_roster(directory_roster(sample.parent), registry=None, now=NOW)
    assert entry.error is not None or (entry.verdict is not None and entry.verdict.rejected), entry


def test_plain_sqlite_misses_an_out_of_order_meta_row(sample: Path) -> None:
    meta_row_out_of_order(sample)
    conn = sqlite3.connect(f"{sample.as_uri()}?mode=ro", uri=True)
    by_key = conn.execute("SELECT value FROM cartridge WHERE key = 'acx.publisher_id'").fetchall()
    scanned = [k for (k,) in conn.execute("SELECT key FROM cartridge NOT INDEXED")]
    conn.close()
    assert by_key == [] and "acx.publisher_id" in scanned


def test_plain_sqlite_misses_an_out_of_order_sqlar_row(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    rows = conn.execute("SELECT rowid, name FROM sqlar ORDER BY rowid").fetchall()
    conn.close()
    swap_cells(sample, "sqlar")
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
        meta_row_out_of_order,
        lambda p: swap_cells(p, "sqlar"),
        lambda p: swap_cells(p, "objects"),
        lambda p: swap_cells(p, "sqlite_autoindex_sqlar_1"),
    ],
    ids=["meta-key-edited", "sqlar-cells", "objects-cells", "sqlar-index-cells"],
)
def test_btree_out_of_key_order_is_refused(
    build: Callable[[Path], None], sample: Path, vectors_dir: Path
) -> None:
    build(sample)
    doc = assert_refused_verify(sample, vectors_dir)
    assert "order" in str(doc), doc


def test_plain_sqlite_cannot_seek_past_a_lying_separator(sample: Path, vectors_dir: Path) -> None:
    sqlar_separator_lies(sample)
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


def test_file_swapped_after_the_header_check_is_never_read(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOCTOU: the header is read from one file, and another (here a WAL-mode copy) is renamed over
    the path once the file was copied: the copy of the header's file is what is read, and the name
    no longer holding it gets no accepting verdict."""
    import acxoci.cartridge.reader as reader
    from acxoci.cartridge.verify import verify_open

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
    with open_cartridge(sample) as cart:
        assert cart.conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        with pytest.raises(InvalidInput, match="changed while"):
            verify_open(cart, registry=None, now=NOW)


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
