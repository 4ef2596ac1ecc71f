"""The ROM manifest's canonical bytes (manifest.canonical_entries): its whole-column fast path
writes exactly what `jcs` writes for the entry objects, for every kind of string and size, and
falls back to `jcs` for anything it does not write itself."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.cartridge.manifest import _checksum_hash, canonical_entries, utf16_key
from attest.canonical import jcs
from attest.errors import MalformedError

# the fast path's own alphabet, the characters JSON escapes, non-ASCII, astral and lone surrogates
_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.sampled_from(['"', "\\", "\x00", "\x1f", "\x7f", "\u00e9", "\u2028", "\U0001f600"]),
    ),
    max_size=12,
)
_ENTRY = st.tuples(_TEXT, _TEXT, _TEXT, st.integers(min_value=0, max_value=2**53 - 1))


def _columns(entries: list[tuple[str, str, str, int]]) -> tuple[list[str], list[str], list[str], list[int]]:
    return [e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries], [e[3] for e in entries]


def _objects(entries: list[tuple[str, str, str, int]]) -> list[dict[str, object]]:
    return [{"sourceRef": r, "oid": o, "canon": c, "sz": z} for r, o, c, z in entries]


@settings(max_examples=400, derandomize=True)
@given(st.lists(_ENTRY, max_size=6))
def test_canonical_entries_equal_jcs_of_the_objects(entries: list[tuple[str, str, str, int]]) -> None:
    assert canonical_entries(*_columns(entries)) == jcs(_objects(entries))


def test_the_fast_path_writes_plain_entries_itself() -> None:
    entries = [
        ("rom/a.md", "sha256:" + "0" * 64, "raw", 0),
        ("meta:acx.x", "sha256:" + "1" * 64, "jcs", 2**53 - 1),
    ]
    assert canonical_entries(*_columns(entries)) == jcs(_objects(entries))
    assert canonical_entries([], [], [], []) == b"[]"


@pytest.mark.parametrize("text", ['a"b', "a\\b", "a\nb", "a\x7fb", "\u00e9", "\U0001f600"])
def test_strings_json_would_escape_or_sort_differently_go_through_jcs(text: str) -> None:
    entries = [(text, "o", "raw", 1)]
    assert canonical_entries(*_columns(entries)) == jcs(_objects(entries))


def test_a_lone_surrogate_is_refused_as_jcs_refuses_it() -> None:
    with pytest.raises(MalformedError):
        jcs(_objects([("\ud800", "o", "raw", 1)]))
    with pytest.raises(MalformedError):
        canonical_entries(["\ud800"], ["o"], ["raw"], [1])


@pytest.mark.parametrize("size", [-1, 2**53, True])
def test_sizes_outside_the_fast_path_go_through_jcs(size: int) -> None:
    entries = [("rom/a", "o", "raw", size)]
    try:
        expected: bytes | type[MalformedError] = jcs(_objects(entries))
    except MalformedError:
        expected = MalformedError
    if expected is MalformedError:
        with pytest.raises(MalformedError):
            canonical_entries(*_columns(entries))
    else:
        assert canonical_entries(*_columns(entries)) == expected


@pytest.mark.parametrize("value", [None, 1, b"x"])
def test_a_value_that_is_no_string_is_left_to_jcs(value: object) -> None:
    columns = ([value], ["o"], ["raw"], [1])
    try:
        want: object = jcs(_objects([(value, "o", "raw", 1)]))  # type: ignore[list-item]
    except MalformedError as exc:
        want = type(exc)
    try:
        got: object = canonical_entries(*columns)  # type: ignore[arg-type]
    except MalformedError as exc:
        got = type(exc)
    assert got == want


_OID = st.one_of(
    st.text(alphabet="0123456789abcdef", min_size=4, max_size=4).map(lambda h: "sha256:" + h),
    _TEXT,  # other lengths, other characters
)


@settings(max_examples=400, derandomize=True)
@given(st.lists(st.tuples(_OID, _TEXT), max_size=6), st.booleans())
def test_the_checksum_lines_hash_as_their_utf16_sorted_join(
    pairs: list[tuple[str, str]], by_oid: bool
) -> None:
    # the column-at-a-time path (oids ASCII, of one length and rising) hashes what sorting the
    # lines themselves by UTF-16 code units and joining them hashes
    if by_oid:
        pairs = sorted(pairs)
    lines = sorted(("  ".join(p) for p in pairs), key=utf16_key)
    want = "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    assert _checksum_hash([o for o, _ in pairs], [r for _, r in pairs]) == want


@pytest.mark.parametrize(
    "pairs",
    [
        [("a", "x"), ("a\x1f", "y")],  # rising oids of two lengths: the line of the longer sorts first
        [("sha256:01", "\U0001f600"), ("sha256:02", "\uffff")],  # one length: the oids decide
        [("sha256:02", "x"), ("sha256:01", "y")],  # not rising: sorted as lines
        [("\u00e9", "x"), ("\u00ea", "y")],  # not ASCII
    ],
)
def test_the_checksum_lines_are_ordered_by_the_whole_line(pairs: list[tuple[str, str]]) -> None:
    lines = sorted(("  ".join(p) for p in pairs), key=utf16_key)
    got = _checksum_hash([o for o, _ in pairs], [r for _, r in pairs])
    assert got == "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
