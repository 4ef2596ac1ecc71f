"""Fuzz the reader with malformed files (flipped bytes, truncation, garbage after a valid header):
only typed AcxErrors or a verdict come out, never another exception, and never a hang; and a
verdict that accepts the file (portable or trusted) is judged: the signed ROM, read back with
plain sqlite3, must be the sample's. The full campaign is `make fuzz`."""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acxoci.cartridge.inspect import inspect_cartridge
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import AcxError
from tests.fuzz.seeds import rom_view
from tests.harness import env
from tests.harness.cartridges import NOW, SAMPLE

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _sample_bytes() -> bytes:
    return (env.vectors() / SAMPLE).read_bytes()


_SAMPLE_ROM: list[object] = []


def _sample_rom() -> object:
    if not _SAMPLE_ROM:
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "s.acx"
            p.write_bytes(_sample_bytes())
            _SAMPLE_ROM.append(rom_view(p))
    return _SAMPLE_ROM[0]


def _exercise(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.acx"
        p.write_bytes(data)
        try:
            verdict = verify_cartridge(p, registry=None, now=NOW)
        except AcxError as exc:
            assert exc.where is not None and str(p) in exc.where, exc
        else:
            if not verdict.rejected and verdict.trust in ("portable", "trusted"):
                assert rom_view(p) == _sample_rom(), f"accepted ({verdict.trust}) with a changed ROM"
        try:
            inspect_cartridge(p)
        except AcxError as exc:
            assert exc.where is not None and str(p) in exc.where, exc
        assert p.read_bytes() == data  # nothing written


def test_the_judge_accepts_the_intact_sample_and_sees_a_changed_rom() -> None:
    _exercise(_sample_bytes())
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.acx"
        p.write_bytes(_sample_bytes())
        with closing(sqlite3.connect(p)) as conn, conn:
            conn.execute("UPDATE sqlar SET data = x'00' WHERE name = (SELECT min(name) FROM sqlar "
                         "WHERE name LIKE 'rom/%')")
        assert rom_view(p) != _sample_rom()


@pytest.mark.timeout(120)
@SETTINGS
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=12))
def test_flipped_bytes(flips: list[tuple[int, int]]) -> None:
    b = bytearray(_sample_bytes())
    for pos, x in flips:
        i = 100 + pos % (len(b) - 100)  # keep the header valid so SQLite itself gets the garbage
        b[i] ^= x
    _exercise(bytes(b))


@pytest.mark.timeout(120)
@SETTINGS
@given(cut=st.integers(0, 81920), tail=st.binary(max_size=64))
def test_truncated_or_extended(cut: int, tail: bytes) -> None:
    _exercise(_sample_bytes()[:cut] + tail)


@pytest.mark.timeout(120)
@SETTINGS
@given(body=st.binary(min_size=0, max_size=9000), page_exp=st.integers(9, 16))
def test_garbage_after_valid_header(body: bytes, page_exp: int) -> None:
    head = bytearray(_sample_bytes()[:100])
    page = 1 << page_exp
    head[16:18] = (1 if page == 65536 else page).to_bytes(2, "big")
    data = bytes(head) + body
    _exercise(data + b"\0" * (-len(data) % page))
