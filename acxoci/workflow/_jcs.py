"""Fast RFC 8785 (JCS) for workflow documents, with `attest.canonical.jcs` as the fallback.

For the common document (integer numbers below 2**53, strings without lone surrogates, object
keys inside the BMP) the stdlib encoder with sorted keys produces exactly the JCS bytes, and is
about ten times faster than the pure-Python encoder; anything else goes to the real encoder.
"""

from __future__ import annotations

import json
from typing import Any

from attest.canonical import jcs as _slow_jcs
from attest.canonical import sha256_digest
from attest.errors import MalformedError

_MAX_SAFE_INT = 2**53
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False, check_circular=False
)


def _plain_string(s: str, *, key: bool) -> bool:
    """True when `s` serialises identically under JSON.stringify and Python's encoder."""
    if s.isascii():
        return True
    for ch in s:
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF:  # lone surrogate: JS escapes it, Python cannot encode it
            return False
        if key and o > 0xFFFF:  # key sorting differs (UTF-16 code units vs code points)
            return False
    return True


def fast_path_ok(value: Any) -> bool:
    """Whether `value` is inside the subset where the stdlib encoder equals JCS (iterative walk)."""
    stack: list[Any] = [value]
    pop = stack.pop
    extend = stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is str:
            if not v.isascii() and not _plain_string(v, key=False):
                return False
        elif t is dict:
            for k in v:
                if type(k) is not str or (not k.isascii() and not _plain_string(k, key=True)):
                    return False
            extend(v.values())
        elif t is list:
            extend(v)
        elif t is int:
            if not -_MAX_SAFE_INT < v < _MAX_SAFE_INT:
                return False
        elif v is None or t is bool:
            continue
        else:  # floats, subclasses and anything else: the real encoder decides
            return False
    return True


def canonical(value: Any) -> bytes:
    """JCS bytes of a JSON value (fast when possible, identical output either way)."""
    try:
        if fast_path_ok(value):
            return _ENCODER.encode(value).encode("utf-8")
        return _slow_jcs(value)
    except RecursionError as exc:
        raise MalformedError("document is nested too deeply to canonicalise") from exc


def canonical_digest(value: Any) -> str:
    """`sha256:<hex>` of the JCS bytes."""
    return sha256_digest(canonical(value))
