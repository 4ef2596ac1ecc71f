"""The ROM hashing pass shared with a helper process (acxoci/cartridge/romhash.py): the helper's
digests are exactly the in-process ones, a tampered row in either share is still caught, and every
way it can fail (bad exit, torn, surplus or disordered output, no trailer, death part way, a
swapped file, an early close) ends in the verifier hashing those rows itself, never in another
verdict.

The helper normally starts only for ROMs of 32 MiB and more; these tests lower the threshold, and
pace the helper where the test needs the two processes to meet part way through the vectors'
small sample (its rows stored raw)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
def forced(raw: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Force the helper on (the sample is far below 32 MiB); returns the ROM rowids."""
    rowids = _rom_rowids(raw)
    assert len(rowids) >= 4, rowids
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 0)
    return rowids


def _in_process(path: Path) -> romhash.Digests:
    with open_cartridge(path) as cart:
        return romhash.decode(romhash._hash_rows(cart.conn, 1 << 20, "1", ()))


def _finished(helper: romhash._Helper) -> romhash.Digests | None:
    """The helper's digests once told to stop (None when it failed)."""
    records = helper.finish()
    return None if records is None else romhash.Hashed(b"", records).digests()


def _started(cart: Any) -> tuple[romhash.RomPass, romhash._Helper]:
    """A hashing pass over `cart` with its helper running (the tests force it on)."""
    rom_pass = romhash.RomPass(cart.conn, inline=1 << 20, source=cart._source)
    helper = rom_pass._helper
    assert helper is not None, "the helper did not start"
    return rom_pass, helper


def _wait_below(helper: romhash._Helper, rowid: int) -> None:
    """Wait until the helper reports a row at or below `rowid` (it has hashed down to there)."""
    deadline = time.monotonic() + 30
    while helper.poll() > rowid:
        assert time.monotonic() < deadline, "the helper sent nothing"
        time.sleep(0.005)


def _wait_until_done(helper: romhash._Helper) -> None:
    """Let the helper hash every row before the verifier starts (it then meets it at once)."""
    deadline = time.monotonic() + 30
    while not helper._ended():
        assert time.monotonic() < deadline, "the helper did not finish"
        helper.poll()
        time.sleep(0.005)


def _slow_helper(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The real helper, pausing after each row: the verifier meets it part way."""
    code = romhash._HELPER.replace(
        "    row = next(rows, None)\n",
        f"    row = next(rows, None)\n    __import__('time').sleep({seconds})\n",
    )
    code = code.replace("if pending >= 512 << 10 or len(buf) >= 1 << 16:", "if True:")  # a record at a time
    assert code.count("__import__('time').sleep(") == 1 and "if True:" in code
    monkeypatch.setattr(romhash, "_HELPER", code)


def test_helper_digests_equal_the_in_process_ones_when_it_hashes_every_row(
    raw: Path, forced: list[int]
) -> None:
    expected = _in_process(raw)
    with open_cartridge(raw) as cart:
        rom_pass, helper = _started(cart)
        _wait_until_done(helper)
        mine, stop = rom_pass._hash_up(helper)
        assert mine == b"" and stop == forced[0]  # it met the helper at the lowest row
        assert _finished(helper) == expected


def test_the_two_meet_in_the_middle_and_together_equal_the_in_process_digests(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _in_process(raw)
    _slow_helper(monkeypatch, 0.05)
    with open_cartridge(raw) as cart:
        rom_pass, helper = _started(cart)
        _wait_below(helper, forced[-2])
        hashed = rom_pass.result(rows=len(forced))
    assert hashed.digests() == expected
    assert 0 < len(hashed._down) < len(hashed._up) + len(hashed._down), "both did a share"


def test_a_helper_that_drops_its_mapping_after_every_row_sends_the_same_digests(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _in_process(raw)
    monkeypatch.setattr(romhash, "_WINDOW_BYTES", 1)  # the mapping dropped after each row
    with open_cartridge(raw) as cart:
        _pass, helper = _started(cart)
        _wait_until_done(helper)
        assert _finished(helper) == expected


def test_the_helper_s_memory_stays_bounded_as_the_rom_grows(tmp_path: Path) -> None:
    # 96 MiB of raw ROM rows: mapped whole, the helper's resident set would hold all of them; it
    # drops its mapping every _WINDOW_BYTES (32 MiB), so its peak stays far below
    path = tmp_path / "big.sqlar"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sqlar(name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)")
    blob = os.urandom(1 << 20)
    conn.executemany(
        "INSERT INTO sqlar VALUES (?, 420, 0, ?, ?)", [(f"rom/f{i}", len(blob), blob) for i in range(96)]
    )
    conn.commit()
    conn.close()

    # the helper's own peak, as its parent's RUSAGE_CHILDREN sees it (a fresh parent each time)
    code = (
        "import json, os, subprocess, sys, resource\n"
        "from acxoci.cartridge.romhash import helper_command\n"
        "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "p = subprocess.Popen(helper_command(fd, 1 << 20, int(sys.argv[2])), stdin=subprocess.PIPE,"
        " stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=(fd,))\n"
        "out = p.stdout.read()  # stdin stays open: the helper runs to the end\n"
        "p.wait(timeout=60)\n"
        "assert p.returncode == 0 and len(out) == 97 * 48, (p.returncode, len(out))\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )

    def peak(window: int) -> int:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        done = subprocess.run(
            [sys.executable, "-c", code, str(path), str(window)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return int(done.stdout)

    whole = peak(1 << 40)
    bounded = peak(romhash._WINDOW_BYTES)
    assert whole > 100 << 10, f"mapped whole, the helper should have held ~96 MiB: {whole} KiB"
    assert bounded < 72 << 10, (
        f"the helper held {bounded} KiB with a {romhash._WINDOW_BYTES >> 20} MiB window"
    )


def test_verdict_is_the_same_with_and_without_the_helper(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = verify_cartridge(raw, registry=None, now=NOW)
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 1 << 62)
    alone = verify_cartridge(raw, registry=None, now=NOW)
    assert shared.trust == alone.trust == "portable", (shared, alone)
    assert shared.rom_digest == alone.rom_digest and shared.issues == alone.issues


@pytest.mark.parametrize("side", ["helper", "verifier"])
def test_a_tampered_row_in_either_share_is_caught(
    raw: Path, forced: list[int], side: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = forced[-1] if side == "helper" else forced[0]
    conn = sqlite3.connect(raw)
    (data,) = conn.execute("SELECT data FROM sqlar WHERE rowid = ?", (target,)).fetchone()
    evil = bytes([data[0] ^ 1]) + data[1:]  # same length: only the digest can tell
    conn.execute("UPDATE sqlar SET data = ? WHERE rowid = ?", (evil, target))
    conn.commit()
    conn.close()
    _slow_helper(monkeypatch, 0.05)  # the top row is the helper's, the bottom one the verifier's
    v = verify_cartridge(raw, registry=None, now=NOW)
    assert v.trust == "tampered", v
    assert any("oid mismatch" in i for i in v.issues), v.issues


_RECORD = "struct.pack('<qq32s', {rowid}, {n}, bytes(32))"


@pytest.mark.parametrize(
    "code",
    [
        "import sys; sys.exit(3)",
        "import sys; sys.stdout.buffer.write(b'x' * 47)",  # not a whole record
        # a record claiming every row with a wrong digest, and no trailer
        "import struct, sys; sys.stdout.buffer.write(" + _RECORD.format(rowid=1, n=5) + ")",
        # ... with a trailer counting it, but exiting 3 before the verifier asks it to stop
        "import struct, sys; sys.stdout.buffer.write("
        + _RECORD.format(rowid=10**9, n=5)
        + " + "
        + _RECORD.format(rowid=1, n=-2)
        + "); sys.stdout.flush(); sys.exit(3)",
        # a trailer whose count is wrong
        "import struct, sys; sys.stdout.buffer.write("
        + _RECORD.format(rowid=10**9, n=5)
        + " + "
        + _RECORD.format(rowid=2, n=-2)
        + ")",
        # rowids rising, not falling
        "import struct, sys; sys.stdout.buffer.write("
        + _RECORD.format(rowid=1, n=5)
        + " + "
        + _RECORD.format(rowid=10**9, n=5)
        + " + "
        + _RECORD.format(rowid=2, n=-2)
        + ")",
        # a length that is no size
        "import struct, sys; sys.stdout.buffer.write("
        + _RECORD.format(rowid=10**9, n=-7)
        + " + "
        + _RECORD.format(rowid=1, n=-2)
        + ")",
        # more records than the file has rows
        "import struct, sys; sys.stdout.buffer.write(" + _RECORD.format(rowid=10**9, n=5) + " * 100000)",
        "import time; time.sleep(0.2)",  # exits 0 with no output: the verifier hashes every row
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",  # dies at once
    ],
    ids=[
        "exit-3",
        "torn-record",
        "no-trailer",
        "exit-3-after-trailer",
        "wrong-count",
        "rising-rowids",
        "bad-length",
        "too-many",
        "no-output",
        "killed",
    ],
)
def test_a_failing_helper_changes_nothing(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    expected = _in_process(raw)
    monkeypatch.setattr(romhash, "_HELPER", code)
    with open_cartridge(raw) as cart:
        rom_pass, _ = _started(cart)
        time.sleep(0.3)  # whatever it writes is there before the verifier looks
        got = rom_pass.result(rows=len(forced)).digests()
    assert got == expected
    v = verify_cartridge(raw, registry=None, now=NOW)
    assert v.trust == "portable", v


def test_a_helper_killed_part_way_leaves_the_rest_to_the_verifier(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real helper, killed after its first record: what it sent before is dropped too
    expected = _in_process(raw)
    _slow_helper(monkeypatch, 0.05)
    with open_cartridge(raw) as cart:
        rom_pass, helper = _started(cart)
        _wait_below(helper, forced[-1])
        helper.proc.kill()
        helper.proc.wait(timeout=10)
        got = rom_pass.result(rows=len(forced)).digests()
    assert got == expected


def test_no_helper_for_a_file_that_changed_since_it_was_opened(raw: Path, forced: list[int]) -> None:
    with open_cartridge(raw) as cart:
        assert cart._source is not None
        path, (dev, ino, size, mtime, ctime) = cart._source
        assert romhash._spawn((path, (dev, ino + 1, size, mtime, ctime)), 1 << 20) is None
        assert romhash._spawn((path, (dev, ino, size + 1, mtime, ctime)), 1 << 20) is None
        assert romhash._spawn((path, (dev, ino, size, mtime, ctime + 1)), 1 << 20) is None
        helper = romhash._spawn((path, (dev, ino, size, mtime, ctime)), 1 << 20)
        assert helper is not None  # the same identity: it starts
        helper.close()


def test_a_helper_whose_sqlite_opened_another_file_sends_nothing(
    raw: Path, forced: list[int], tmp_path: Path
) -> None:
    # the helper checks, before its first record, that every regular file it holds is the
    # inherited descriptor's: an inherited stray file (here its stderr) makes it exit 4
    with open_cartridge(raw) as cart:
        assert cart._source is not None
        path, _ = cart._source
        fd = os.open(path, os.O_RDONLY)
        try:
            with open(tmp_path / "stray", "wb") as stray:
                proc = subprocess.run(
                    romhash.helper_command(fd, 1 << 20, 1 << 20),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stray,
                    pass_fds=(fd,),
                    timeout=30,
                )
        finally:
            os.close(fd)
    assert proc.returncode == 4 and proc.stdout == b""


def test_closing_early_stops_the_helper(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(romhash, "_HELPER", "import time; time.sleep(60)")
    cart = open_cartridge(raw)
    cart.begin_rom_hashing()
    early = cart._early
    assert early is not None and early._pass is not None and early._pass._helper is not None
    proc = early._pass._helper.proc
    cart.close()
    assert proc.wait(timeout=10) < 0, "the helper outlived its cartridge"


def test_a_helper_never_opens_the_file_by_name_again(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # after its first record the file is unlinked and a FIFO is put where /proc/self/fd/N now
    # points ("<path> (deleted)"): a helper that opened that name again would block in the open;
    # this one drops its mapping after every row on its one connection and ends with a trailer
    expected = _in_process(raw)
    _slow_helper(monkeypatch, 0.02)
    monkeypatch.setattr(romhash, "_WINDOW_BYTES", 1)
    ended: list[bytes | None] = []
    finish = romhash._Helper.finish

    def recorded(self: romhash._Helper) -> bytes | None:
        ended.append(finish(self))
        return ended[-1]

    monkeypatch.setattr(romhash._Helper, "finish", recorded)
    with open_cartridge(raw) as cart:
        rom_pass, helper = _started(cart)
        _wait_below(helper, forced[-1])
        raw.unlink()
        fifo = Path(f"{raw} (deleted)")
        os.mkfifo(fifo)
        try:
            _wait_until_done(helper)
            t0 = time.monotonic()
            got = rom_pass.result(rows=len(forced)).digests()
            assert time.monotonic() - t0 < romhash._STALL_SECONDS
        finally:
            fifo.unlink()
    assert got == expected
    assert ended and ended[0] is not None, "the helper did not end with its trailer"


def test_a_helper_that_stalls_after_being_told_to_stop_is_given_up_on(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # one record for the top row, then silence (alive, never a trailer): the verifier hashes up to
    # it, asks it to stop, waits a second for more, and hashes the rest itself
    expected = _in_process(raw)
    top = forced[-1]
    monkeypatch.setattr(
        romhash,
        "_HELPER",
        "import struct, sys, time; sys.stdout.buffer.write("
        + _RECORD.format(rowid=top, n=5)
        + "); sys.stdout.flush(); time.sleep(60)",
    )
    with open_cartridge(raw) as cart:
        rom_pass, helper = _started(cart)
        _wait_below(helper, top)
        t0 = time.monotonic()
        got = rom_pass.result(rows=len(forced)).digests()
        took = time.monotonic() - t0
    assert got == expected
    assert took < romhash._STALL_SECONDS + 5, f"waited {took:.1f} s for a stalled helper"


def test_a_helper_outlives_a_verifier_that_dies_by_at_most_seconds(raw: Path, tmp_path: Path) -> None:
    # a verifier killed without any cleanup (here os._exit; SIGTERM is the same) leaves its helper
    # with an ended stdin: the helper leaves by itself, even when busy elsewhere
    code = (
        "import os, sys, time\n"
        "from acxoci.cartridge import romhash\n"
        "from acxoci.cartridge.reader import open_cartridge\n"
        "romhash.HELPER_MIN_BYTES = 0\n"
        "romhash._HELPER = romhash._HELPER.replace('    row = next(rows, None)\\n',"
        " '    row = next(rows, None)\\n    __import__(\"time\").sleep(30)\\n')\n"
        "cart = open_cartridge(sys.argv[1])\n"
        "p = romhash.RomPass(cart.conn, inline=1 << 20, source=cart._source)\n"
        "print(p._helper.proc.pid, flush=True)\n"
        "time.sleep(0.5)\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", code, str(raw)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid):
        assert time.monotonic() < deadline, "the helper outlived its verifier"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:", 1)[1].split("\n", 1)[0].lower()
    except (OSError, IndexError):
        return "zombie"


def _expect(rows: list[tuple[int, str, int]]) -> romhash.Expected | None:
    """romhash.expected of (rowid, oid, sz) rows."""
    rowids, oids, sizes = ([r[k] for r in rows] for k in range(3))
    return romhash.expected(rowids, oids, sizes)


def _stated(path: Path) -> list[tuple[int, str, int]]:
    """(rowid, oid, sz) of every `rom/` row as its object states it, rowids rising."""
    with open_cartridge(path) as cart:
        by_ref = {o.source_ref: o for o in cart.objects()}
        return [
            (i.rowid, by_ref[i.name].oid, by_ref[i.name].sz) for i in cart.sqlar_infos() if i.zone == "rom"
        ]


def test_a_pass_over_a_rom_as_stated_matches_with_and_without_the_helper(
    raw: Path, forced: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _stated(raw)
    expect = _expect(rows)
    assert expect is not None and len(expect.up) == len(rows) * 48
    with open_cartridge(raw) as cart:  # the helper does every row
        rom_pass, helper = _started(cart)
        _wait_until_done(helper)
        assert rom_pass.result(rows=len(rows)).matches(expect)
    _slow_helper(monkeypatch, 0.05)
    with open_cartridge(raw) as cart:  # the two meet part way
        rom_pass, helper = _started(cart)
        _wait_below(helper, forced[-2])
        hashed = rom_pass.result(rows=len(rows))
        assert hashed._up and hashed._down and hashed.matches(expect)
    monkeypatch.setattr(romhash, "HELPER_MIN_BYTES", 1 << 62)
    with open_cartridge(raw) as cart:  # the verifier alone
        assert romhash.RomPass(cart.conn, inline=1 << 20, source=None).result().matches(expect)


def _flip(oid: str) -> str:
    return oid[:-1] + ("0" if oid[-1] != "0" else "1")


@pytest.mark.parametrize(
    "change",
    [
        "digest-of-the-lowest-row",
        "digest-of-the-highest-row",
        "size",
        "a-row-left-out",
        "a-row-added",
        "rowid",
        "upper-case-oid",
        "oid-with-white-space",
        "other-algorithm",
        "digits-run-into-the-next-oid",
    ],
)
def test_no_other_statement_of_the_rom_matches_the_pass(raw: Path, forced: list[int], change: str) -> None:
    # the one-comparison path may only say yes when each row's digest, length and rowid is what
    # is stated, for every `rom/` row: any other statement falls to the row-by-row join
    rows = _stated(raw)
    low, high = rows[0], rows[-1]
    changed = {
        "digest-of-the-lowest-row": [(low[0], _flip(low[1]), low[2]), *rows[1:]],
        "digest-of-the-highest-row": [*rows[:-1], (high[0], _flip(high[1]), high[2])],
        "size": [(low[0], low[1], low[2] + 1), *rows[1:]],
        "a-row-left-out": rows[1:],
        "a-row-added": [*rows, (high[0] + 1, high[1], high[2])],
        "rowid": [(low[0] - 1, low[1], low[2]), *rows[1:]],
        "upper-case-oid": [(low[0], "sha256:" + low[1][7:].upper(), low[2]), *rows[1:]],
        "oid-with-white-space": [(low[0], low[1][:-2] + " " + low[1][-1], low[2]), *rows[1:]],
        "other-algorithm": [(low[0], "sha512:" + low[1][7:], low[2]), *rows[1:]],
        # the lowest oid one digit short, the next one carrying that digit before its prefix: the
        # joined text is the stated one, each oid is not
        "digits-run-into-the-next-oid": [
            (low[0], low[1][:-1], low[2]),
            (rows[1][0], low[1][-1] + rows[1][1], rows[1][2]),
            *rows[2:],
        ],
    }[change]
    expect = _expect(changed)
    with open_cartridge(raw) as cart:
        for source in (cart._source, None):  # with the helper, and without
            hashed = romhash.RomPass(cart.conn, inline=1 << 20, source=source).result(rows=len(rows))
            assert expect is None or not hashed.matches(expect)
            assert hashed.matches(_expect(rows))  # type: ignore[arg-type]


def test_a_malformed_helper_share_is_rehashed_when_decoded(raw: Path, forced: list[int]) -> None:
    # records that match nothing and rise: decoding drops them and hashes those rows here
    expected = _in_process(raw)
    top, bottom = forced[-1], forced[0]
    pack = romhash._RECORD.pack
    rising = pack(bottom, 5, bytes(32)) + pack(top, 5, bytes(32))
    with open_cartridge(raw) as cart:
        up = romhash._hash_rows(cart.conn, 1 << 20, "+rowid < ?", (top,))
        hashed = romhash.Hashed(
            up, rising, lambda: romhash._hash_rows(cart.conn, 1 << 20, "+rowid >= ?", (top,))
        )
        assert not hashed.matches(_expect(_stated(raw)))  # type: ignore[arg-type]
        assert hashed.digests() == expected


def test_shares_that_leave_a_row_unread_between_them_do_not_match(raw: Path, forced: list[int]) -> None:
    # a row no object names (here the second lowest, left out of the statement) could only hide
    # between the two shares; the helper's share must reach down to where the verifier stopped
    rows = _stated(raw)
    stated = [rows[0], *rows[2:]]
    expect = _expect(stated)
    assert expect is not None
    up, down = expect.up[:48], expect.down[: 48 * (len(stated) - 1)]
    assert romhash.Hashed(up, down, stop=rows[2][0]).matches(expect)  # they meet: rows[1] is not there
    assert not romhash.Hashed(up, down, stop=rows[1][0]).matches(expect)  # the verifier stopped below
    assert not romhash.Hashed(up, down).matches(expect)  # a helper share with no stop


def test_expected_records_are_in_rowid_order_whatever_order_the_rows_come_in(raw: Path) -> None:
    rows = _stated(raw)
    assert _expect(rows[::-1]) == _expect(rows) == _expect(rows[1:] + rows[:1])
    with pytest.raises(ValueError):
        romhash.expected([1, 2], ["sha256:" + "0" * 64], [1, 2])
