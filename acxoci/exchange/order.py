"""Orderings the reference's index uses, so `exchange index` sorts exactly as it does: a locale
collation key (the CLDR root order for the ASCII text registry names are made of) and SemVer
precedence."""

from __future__ import annotations

import functools
import re

from acxoci.exchange.status import SEMVER_RE

# CLDR root collation, ASCII subset: whitespace and punctuation/symbols first (in this order),
# then digits, then letters case-insensitively; at a tie lowercase sorts before uppercase.
_PUNCT = "\t\n\x0b\x0c\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_RANK = {c: i for i, c in enumerate(_PUNCT)}
_DIGIT_BASE = len(_PUNCT)
_LETTER_BASE = _DIGIT_BASE + 10


def _primary(c: str) -> int:
    if c in _RANK:
        return _RANK[c]
    if "0" <= c <= "9":
        return _DIGIT_BASE + ord(c) - 48
    lo = c.lower()
    if "a" <= lo <= "z":
        return _LETTER_BASE + ord(lo) - 97
    return _LETTER_BASE + 26 + ord(c)  # beyond ASCII: code point order after the letters


def locale_key(s: str) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """A sort key approximating `String.prototype.localeCompare` (ICU root) for ASCII text."""
    return (tuple(_primary(c) for c in s), tuple(1 if c.isupper() else 0 for c in s), s)


def locale_cmp(a: str, b: str) -> int:
    ka, kb = locale_key(a), locale_key(b)
    return (ka > kb) - (ka < kb)


def _prerelease(v: str) -> list[str] | None:
    m = SEMVER_RE.fullmatch(v)
    assert m is not None
    return m.group(4).split(".") if m.group(4) is not None else None


def semver_cmp(a: str, b: str) -> int:
    """SemVer 2 precedence (build metadata ignored); ValueError for an invalid version."""
    ma, mb = SEMVER_RE.fullmatch(a), SEMVER_RE.fullmatch(b)
    if ma is None or mb is None:
        raise ValueError(f"cannot compare invalid SemVer {a if ma is None else b!r}")
    for i in (1, 2, 3):
        d = int(ma.group(i)) - int(mb.group(i))
        if d:
            return 1 if d > 0 else -1
    pa, pb = _prerelease(a), _prerelease(b)
    if pa is None or pb is None:
        return 0 if pa is pb else (1 if pa is None else -1)
    for x, y in zip(pa, pb, strict=False):
        if x == y:
            continue
        xn, yn = bool(re.fullmatch(r"[0-9]+", x)), bool(re.fullmatch(r"[0-9]+", y))
        if xn and yn:
            return 1 if int(x) > int(y) else -1
        if xn != yn:
            return -1 if xn else 1
        return locale_cmp(x, y)
    return (len(pa) > len(pb)) - (len(pa) < len(pb))


semver_key = functools.cmp_to_key(semver_cmp)
