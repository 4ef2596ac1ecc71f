"""The ROM hashing pass shared with a helper process (acxoci/cartridge/romhash.py): the helper's
digests are exactly the in-process ones, a tampered row in its share is still caught, and every
way it can fail (bad exit, short or foreign output, a swapped file, an early close) ends in the
verifier hashing those rows itself, never in another verdict.

The helper normally starts only for ROMs of 32 MiB and more; these tests lower the threshold and
pin the split, so the vectors' small sample (its rows stored raw) is shared between both."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acxoci.cartridge import romhash
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.sqlar import decode_entry
from acxoci.cartridge.verify import verify_cartridge
from tests.unit.test_cartridge_verify_support import NOW, SAMPLE, copy_vector


def _raw_sample(vectors_dir: Path, dest: Path) -> Path:
    """The sample with every sqlar row stored raw (compression is not signed: same verdict)."""
    path = copy_vector(vectors_dir, SAMPLE, dest)
    conn = sqlite3.connect(path)
    for rowid, name, sz, data in conn.execute("SELECT rowid, name, sz, data FROM sqlar").fetchall():
        raw = decode_entry(name, sz, data, where="t")
        conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (raw, rowid))
    conn.commit()
    conn.close()
    return path


def _rom_rowids(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [r for (r,) in conn.execute("SELECT rowid FROM sqlar WHERE name LIKE 'rom/%' ORDER BY rowid")]
    finally:
        conn.close()


@pytest.fixture
def raw(vectors_dir: Path, tmp_path: Path) -> Path:
    return _raw_sample(vectors_dir, tmp_path / "raw.acx")


@pytest.fixture
def forced(raw: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Force the helper on, splitting the ROM rows in half; returns the split rowid."""
    rowids = _rom_rowids(raw)
    assert len(rowids) >= 4, rowids
    split = rowids[len(rowids) // 2]
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 0)
    monkeypatch.setattr(romhash, "_split", lambda rows: split)
    return split


def _in_process(path: Path) -> romhash.Digests:
    with open_cartridge(path) as cart:
        return romhash._hash_rows(cart.conn, 1 << 20, "1", ())


def test_helper_digests_equal_the_in_process_ones(raw: Path, forced: int) -> None:
    expected = _in_process(raw)
    assert any(r > forced for r in expected) and any(r <= forced for r in expected)
    with open_cartridge(raw) as cart:
        rom_pass = romhash.RomPass(cart.conn, inline=1 << 20, source=cart._source)
        assert rom_pass._helper is not None, "the helper did not start"
        helper = rom_pass._helper
        got = rom_pass.result()
    assert got == expected
    assert helper.proc.returncode == 0


def test_verdict_is_the_same_with_and_without_the_helper(
    raw: Path, forced: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = verify_cartridge(raw, registry=None, now=NOW)
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 1 << 62)
    alone = verify_cartridge(raw, registry=None, now=NOW)
    assert shared.trust == alone.trust == "portable", (shared, alone)
    assert shared.rom_digest == alone.rom_digest and shared.issues == alone.issues


@pytest.mark.parametrize("side", ["helper", "verifier"])
def test_a_tampered_row_in_either_share_is_caught(raw: Path, forced: int, side: str) -> None:
    rowids = _rom_rowids(raw)
    target = rowids[-1] if side == "helper" else rowids[0]
    assert (target > forced) == (side == "helper")
    conn = sqlite3.connect(raw)
    (data,) = conn.execute("SELECT data FROM sqlar WHERE rowid = ?", (target,)).fetchone()
    evil = bytes([data[0] ^ 1]) + data[1:]  # same length: only the digest can tell
    conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (evil, target))
    conn.commit()
    conn.close()
    v = verify_cartridge(raw, registry=None, now=NOW)
    assert v.trust == "tampered", v
    assert any("oid mismatch" in i for i in v.issues), v.issues


@pytest.mark.parametrize(
    "code",
    [
        "import sys; sys.exit(3)",
        "import sys; sys.stdout.buffer.write(b'x' * 47)",  # not a whole record
        # a record for a row of the verifier's share (rowid 1), with a wrong digest
        "import struct, sys; sys.stdout.buffer.write(struct.pack('<qq32s', 1, 5, bytes(32)))",
        # a record with a wrong digest for every possible row above the split: too many records
        "import struct, sys; sys.stdout.buffer.write(struct.pack('<qq32s', 10**9, 5, bytes(32)) * 100000)",
        "import time; time.sleep(0.2)",  # exits 0 with no output: those rows are hashed again
    ],
    ids=["exit-3", "torn-record", "foreign-rowid", "too-many", "no-output"],
)
def test_a_failing_helper_changes_nothing(
    raw: Path, forced: int, monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    expected = _in_process(raw)
    monkeypatch.setattr(romhash, "_HELPER", code)
    with open_cartridge(raw) as cart:
        rom_pass = romhash.RomPass(cart.conn, inline=1 << 20, source=cart._source)
        assert rom_pass._helper is not None
        got = rom_pass.result()
    assert got == expected
    v = verify_cartridge(raw, registry=None, now=NOW)
    assert v.trust == "portable", v


def test_no_helper_for_a_file_that_changed_since_it_was_opened(raw: Path, forced: int) -> None:
    with open_cartridge(raw) as cart:
        assert cart._source is not None
        path, (dev, ino, size, mtime, ctime) = cart._source
        assert romhash._spawn((path, (dev, ino + 1, size, mtime, ctime)), forced, 10, 1 << 20) is None
        assert romhash._spawn((path, (dev, ino, size + 1, mtime, ctime)), forced, 10, 1 << 20) is None
        assert romhash._spawn((path, (dev, ino, size, mtime, ctime + 1)), forced, 10, 1 << 20) is None


def test_closing_early_stops_the_helper(raw: Path, forced: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(romhash, "_HELPER", "import time; time.sleep(60)")
    cart = open_cartridge(raw)
    cart.begin_rom_hashing()
    early = cart._early
    assert early is not None and early._pass is not None and early._pass._helper is not None
    proc = early._pass._helper.proc
    cart.close()
    assert proc.poll() is not None, "the helper outlived its cartridge"


def test_split_balances_python_work_against_hashing() -> None:
    # 10,000 rows of 21 KB: the verifier keeps only a small share (its Python work is the rest)
    many = [(i, 21_000) for i in range(1, 10_001)]
    split = romhash._split(many)
    assert split is not None and 1_000 < split < 4_000, split
    # a few huge rows: hardly any Python work, so close to half each
    few = [(i, 64 << 20) for i in range(1, 9)]
    assert romhash._split(few) == 4
    # too small to pay for a second interpreter
    assert romhash._split([(1, 1 << 20)]) is None
