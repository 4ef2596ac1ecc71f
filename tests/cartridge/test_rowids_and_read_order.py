"""The cartridge verifier's rowids and reading order (the typed scans, the one-statement seek
check), from a hostile review. Each file is built at test time from a copy of the trusted sample;
`acx cartridge verify` must meet the contract of tests/cartridge/test_hostile_cartridges.py (never exit 0
or 70, bounded time and memory, file untouched)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from acxoci.cartridge.verify import verify_cartridge
from tests.harness.btree import corrupt_a_sqlar_leaf
from tests.harness.cartridges import NOW, SAMPLE, assert_refused_verify, copy_vector
from tests.harness.reader_edits import decoded

MIN_ROWID = -(2**63)


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def _raw(path: Path) -> Path:
    """Store every sqlar row raw (compression is not signed: the verdict stays trusted)."""
    conn = sqlite3.connect(path)
    for rowid, name, sz, data in conn.execute("SELECT rowid, name, sz, data FROM sqlar").fetchall():
        raw = decoded(name, sz, data)
        conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (raw, rowid))
    conn.commit()
    conn.close()
    return path


def test_a_rom_row_at_the_lowest_rowid_is_not_a_crash(sample: Path, vectors_dir: Path) -> None:
    # the first ROM row sits at rowid -2**63: "rowid - 1" is not a SQLite integer (binding it once
    # ended in exit 70, OverflowError)
    blob = os.urandom(8600)
    conn = sqlite3.connect(sample)
    conn.execute(
        "INSERT INTO sqlar(rowid, name, mode, mtime, sz, data) VALUES (?, 'rom/pad/first', 33188, 0, ?, ?)",
        (MIN_ROWID, len(blob), blob),
    )
    conn.executemany(
        "INSERT INTO sqlar(name, mode, mtime, sz, data) VALUES (?, 33188, 0, ?, ?)",
        [(f"rom/pad/{i}", len(blob), blob) for i in range(40)],
    )
    conn.commit()
    conn.close()
    doc = assert_refused_verify(sample, vectors_dir)
    assert doc["trust"] == "tampered", doc  # the padding rows are not covered by the signature


def test_a_signed_rom_starting_at_the_lowest_rowid_still_verifies(sample: Path) -> None:
    # rowids are not signed: moving the first ROM row to rowid -2**63 keeps the file valid
    path = _raw(sample)
    conn = sqlite3.connect(path)
    (first,) = conn.execute("SELECT min(rowid) FROM sqlar WHERE name LIKE 'rom/%'").fetchone()
    conn.execute("UPDATE sqlar SET rowid = ? WHERE rowid = ?", (MIN_ROWID, first))
    conn.commit()
    conn.close()
    v = verify_cartridge(path, registry=None, now=NOW)
    assert v.trust == "portable", v


def test_a_malformed_envelope_is_tampered_before_a_corrupt_rom_is_read(sample: Path) -> None:
    # a malformed envelope is a tampered verdict whatever the ROM holds: the corrupt sqlar leaf
    # (unreadable, an invalid_input error alone) comes after it in the reference's order
    conn = sqlite3.connect(sample)
    conn.execute("UPDATE signatures SET envelope = 'not json'")
    conn.commit()
    conn.close()
    corrupt_a_sqlar_leaf(sample)
    v = verify_cartridge(sample, registry=None, now=NOW)
    assert v.trust == "tampered", v
    assert v.summary == "Malformed DSSE envelope.", v
