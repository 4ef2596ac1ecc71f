"""Hostile review of the faster cartridge verifier (the ROM hashing helper of decision 0025, the
native-text typed scans, the one-statement seek check, the batched index walk). Each file is built
at test time from a copy of the trusted sample; `acx cartridge verify` must meet the contract of
tests/unit/test_cartridge_hostile.py (never exit 0 or 70, bounded time and memory, file untouched)
and must give the verdict the single-process verifier gives."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge import romhash
from acxoci.cartridge.sqlar import decode_entry
from acxoci.cartridge.verify import verify_cartridge
from tests.unit.hostile_btree import corrupt_a_sqlar_leaf
from tests.unit.test_cartridge_hostile import assert_refused_verify
from tests.unit.test_cartridge_verify_support import NOW, SAMPLE, copy_vector

MIN_ROWID = -(2**63)


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def _raw(path: Path) -> Path:
    """Store every sqlar row raw (compression is not signed: the verdict stays trusted)."""
    conn = sqlite3.connect(path)
    for rowid, name, sz, data in conn.execute("SELECT rowid, name, sz, data FROM sqlar").fetchall():
        raw = decode_entry(name, sz, data, where="t")
        conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (raw, rowid))
    conn.commit()
    conn.close()
    return path


def test_a_rom_row_at_the_lowest_rowid_in_a_large_file_is_not_a_crash(
    sample: Path, vectors_dir: Path
) -> None:
    # ~34 MiB of small raw ROM rows: the real threshold, no patching. So many rows that the
    # cost model leaves the verifier no share, and the first one sits at rowid -2**63: the split
    # "first rowid - 1" is not a SQLite integer, and binding it ended in exit 70 (OverflowError)
    blob = os.urandom(8600)
    conn = sqlite3.connect(sample)
    conn.execute(
        "INSERT INTO sqlar(rowid, name, mode, mtime, sz, data) VALUES (?, 'rom/pad/first', 33188, 0, ?, ?)",
        (MIN_ROWID, len(blob), blob),
    )
    conn.executemany(
        "INSERT INTO sqlar(name, mode, mtime, sz, data) VALUES (?, 33188, 0, ?, ?)",
        [(f"rom/pad/{i}", len(blob), blob) for i in range(4000)],
    )
    conn.commit()
    conn.close()
    assert sample.stat().st_size >= romhash.HELPER_MIN_BYTES
    doc = assert_refused_verify(sample, vectors_dir)
    assert doc["trust"] == "tampered", doc  # the padding rows are not covered by the signature


def test_a_signed_rom_starting_at_the_lowest_rowid_verifies_with_the_helper(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rowids are not signed: moving the first ROM row to rowid -2**63 keeps the file valid, and
    # with the helper taking every row (the split below the first) the verdict must not change
    path = _raw(sample)
    conn = sqlite3.connect(path)
    (first,) = conn.execute("SELECT min(rowid) FROM sqlar WHERE name LIKE 'rom/%'").fetchone()
    conn.execute("UPDATE sqlar SET rowid = ? WHERE rowid = ?", (MIN_ROWID, first))
    conn.commit()
    conn.close()
    alone = verify_cartridge(path, registry=None, now=NOW)
    assert alone.trust == "portable", alone
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 0)
    # the helper hashes every row before the verifier looks: they meet at rowid -2**63
    met: list[int | None] = []
    real_hash_up = romhash.RomPass._hash_up

    def after_the_helper(
        self: romhash.RomPass, helper: romhash._Helper
    ) -> tuple[romhash.Digests, int | None]:
        deadline = time.monotonic() + 30
        while not helper._ended() and time.monotonic() < deadline:
            helper.poll()
            time.sleep(0.005)
        mine, stop = real_hash_up(self, helper)
        met.append(stop)
        return mine, stop

    monkeypatch.setattr(romhash.RomPass, "_hash_up", after_the_helper)
    shared = verify_cartridge(path, registry=None, now=NOW)
    assert met == [MIN_ROWID], met
    assert shared.trust == alone.trust and shared.rom_digest == alone.rom_digest, (shared, alone)


def test_the_verdict_on_a_corrupt_file_does_not_depend_on_its_size(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a malformed envelope is a tampered verdict before any ROM row is read; a large file's
    # early ROM pass read sqlar first and turned it into an invalid_input error instead
    conn = sqlite3.connect(sample)
    conn.execute("UPDATE signatures SET envelope = 'not json'")
    conn.commit()
    conn.close()
    corrupt_a_sqlar_leaf(sample)
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 1 << 62)
    small = verify_cartridge(sample, registry=None, now=NOW)
    assert small.trust == "tampered", small
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 0)  # as for a file of 32 MiB and more
    large = verify_cartridge(sample, registry=None, now=NOW)
    assert (large.trust, large.summary, large.issues) == (small.trust, small.summary, small.issues)


def test_the_helper_hashes_the_verified_file_not_one_its_name_leads_to(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite resolves /proc/self/fd/N to a name (readlink) and opens that name: once the verified
    # file is unlinked, the name is "<path> (deleted)", which anyone with write access to the
    # folder can create. There the helper found the signed rows while the verifier read tampered
    # ones of the same length, and the file verified
    path = _raw(sample)
    conn = sqlite3.connect(path)
    rowids = [r for (r,) in conn.execute("SELECT rowid FROM sqlar WHERE name LIKE 'rom/%' ORDER BY rowid")]
    conn.close()
    good = tmp_path / "good.acx"
    good.write_bytes(path.read_bytes())
    target = rowids[-1]
    conn = sqlite3.connect(path)
    (data,) = conn.execute("SELECT data FROM sqlar WHERE rowid = ?", (target,)).fetchone()
    conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (bytes([data[0] ^ 1]) + data[1:], target))
    conn.commit()
    conn.close()
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 0)
    real_popen = romhash.subprocess.Popen
    started: list[Any] = []

    def unlink_then_start(*args: Any, **kwargs: Any) -> Any:
        # the verifier and _spawn hold the file open; its name goes, and a decoy takes its place
        os.unlink(path)
        os.replace(good, f"{path} (deleted)")
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    monkeypatch.setattr(romhash.subprocess, "Popen", unlink_then_start)
    real_hash_up = romhash.RomPass._hash_up

    def after_the_helper(
        self: romhash.RomPass, helper: romhash._Helper
    ) -> tuple[romhash.Digests, int | None]:
        helper.proc.wait(timeout=30)  # the helper has had every chance to send its digests
        return real_hash_up(self, helper)

    monkeypatch.setattr(romhash.RomPass, "_hash_up", after_the_helper)
    v = verify_cartridge(path, registry=None, now=NOW)
    assert started, "the helper did not start"
    assert started[0].returncode == 4, "the helper sent digests of another file"
    assert v.trust == "tampered", v
    assert any("oid mismatch" in i for i in v.issues), v.issues
