"""The ROM manifest's checksum lines (manifest._checksum_hash): `oid  sourceRef` per ROM object,
sorted by UTF-16 code units as the reference sorts them, joined by newlines, hashed."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.cartridge.manifest import _checksum_hash, utf16_key
from acxoci.cartridge.reader import ObjectRow

_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.sampled_from(["\x1f", "\u00e9", "\uffff", "\U0001f600"]),
    ),
    max_size=12,
)


def _rows(pairs: list[tuple[str, str]]) -> list[ObjectRow]:
    return [ObjectRow(oid, "sqlar", ref, "raw", "rom", 1) for oid, ref in pairs]


def _want(pairs: list[tuple[str, str]]) -> str:
    lines = sorted(("  ".join(p) for p in pairs), key=utf16_key)
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@settings(max_examples=200, derandomize=True)
@given(st.lists(st.tuples(_TEXT, _TEXT), max_size=6))
def test_the_checksum_lines_hash_as_their_utf16_sorted_join(pairs: list[tuple[str, str]]) -> None:
    assert _checksum_hash(_rows(pairs)) == _want(pairs)


@pytest.mark.parametrize(
    "pairs",
    [
        [("a", "x"), ("a\x1f", "y")],  # the line of the longer oid sorts first ("\x1f" < " ")
        [("s", "\U0001f600"), ("s", "\uffff")],  # astral sorts below U+FFFF in UTF-16
        [("sha256:02", "x"), ("sha256:01", "y")],
    ],
)
def test_the_checksum_lines_are_ordered_by_the_whole_line(pairs: list[tuple[str, str]]) -> None:
    assert _checksum_hash(_rows(pairs)) == _want(pairs)
    assert _checksum_hash([]) == "sha256:" + hashlib.sha256(b"").hexdigest()
