"""Fuzz the reader with malformed files (flipped bytes, truncation, garbage after a valid header):
only typed AcxErrors or a verdict come out, never another exception, and never a hang."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acxoci.cartridge.inspect import inspect_cartridge
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import AcxError
from tests.harness import env
from tests.unit.test_cartridge_verify_support import NOW, SAMPLE

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _sample_bytes() -> bytes:
    return (env.vectors() / SAMPLE).read_bytes()


def _exercise(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.acx"
        p.write_bytes(data)
        for fn in (lambda: verify_cartridge(p, registry=None, now=NOW), lambda: inspect_cartridge(p)):
            try:
                fn()
            except AcxError as exc:
                assert exc.where is not None and str(p) in exc.where, exc
        assert p.read_bytes() == data  # nothing written


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
