"""The schema tokenizer's identifier classes (acxoci/cartridge/schema.py) are written as the ASCII
they exclude; this checks them against the plain range form (identifier start A-Z a-z _ and
U+0080 up to U+10FFFF; then also 0-9 and $) on generated SQL-like text, every boundary included."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.cartridge import schema

_RANGES = re.compile(
    r"""[ \t\n\f\r]+|--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$)"""
    r"""|('(?:[^']|'')*')|("(?:[^"]|"")*")|(`(?:[^`]|``)*`)|(\[[^\]]*\])"""
    r"""|([A-Za-z_\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*)|([0-9][0-9A-Za-z_.]*)|(.)""",
    re.S,
)

# every ASCII character, the first non-ASCII ones, a surrogate and the last code point
_ALPHABET = [chr(c) for c in range(0x80)] + ["\x80", "\xa0", "\xff", "\u0100", "\ud800", "\U0010ffff"]


def _groups(pattern: re.Pattern[str], text: str) -> list[tuple[int, str | None]]:
    return [(m.lastindex or 0, m.group(0)) for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=40))
def test_the_tokenizer_splits_as_the_range_form_does(text: str) -> None:
    assert _groups(schema._TOKEN_RE, text) == _groups(_RANGES, text)


def test_each_ascii_character_is_classed_as_the_range_form_classes_it() -> None:
    for c in _ALPHABET:
        for text in (c, f"a{c}", f"{c}a", f"1{c}"):
            assert _groups(schema._TOKEN_RE, text) == _groups(_RANGES, text), repr(text)


def test_non_ascii_joins_words_and_dollar_continues_them() -> None:
    assert schema.sql_tokens("a\xa0b") == ("A\xa0B",)
    assert schema.sql_tokens("x$1 $y") == ("X$1", "$", "Y")
