"""JSON canonicalisation (RFC 8785 / JCS) and strict JSON parsing.

Everything that is hashed goes through `jcs()`; never through json.dumps.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

from attest.errors import MalformedError

MAX_JSON_BYTES = 64 * 1024 * 1024

# Fast path: for the common document (integers below 2**53, strings without lone surrogates,
# object keys inside the BMP) the stdlib encoder with sorted keys writes exactly the JCS bytes,
# about ten times faster than the pure-Python RFC 8785 encoder. Anything else (floats above
# all, whose ECMAScript form differs from Python's repr) goes to `rfc8785`.
_MAX_SAFE_INT = 2**53
_FAST_ENCODER = json.JSONEncoder(
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



def jcs(value: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON value (fast path when provably equal)."""
    try:
        if fast_path_ok(value):
            return _FAST_ENCODER.encode(value).encode("utf-8")
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise MalformedError(f"value cannot be canonicalised: {exc}") from exc
    except RecursionError as exc:
        raise MalformedError("document is nested too deeply to canonicalise") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_digest(data: bytes) -> str:
    """`sha256:<hex>` of the bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def jcs_digest(value: Any) -> str:
    """`sha256:<hex>` of the JCS form of a JSON value."""
    return sha256_digest(jcs(value))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise MalformedError(f"duplicate JSON key {k!r}")
        out[k] = v
    return out


def _reject_constant(name: str) -> Any:
    raise MalformedError(f"non-standard JSON constant {name}")


def loads_strict(data: bytes | str, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Parse JSON strictly: UTF-8 only, no duplicate keys, no NaN/Infinity, bounded size."""
    if isinstance(data, bytes | bytearray):
        if len(data) > max_bytes:
            raise MalformedError(f"JSON document of {len(data)} bytes exceeds the {max_bytes}-byte limit")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedError(f"JSON is not valid UTF-8 (byte {exc.start})") from exc
    else:
        text = data
        if len(text) > max_bytes:
            raise MalformedError(f"JSON document of {len(text)} characters exceeds the limit")
    if text.startswith("\ufeff"):
        raise MalformedError("JSON starts with a byte-order mark")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except MalformedError:
        raise
    except (json.JSONDecodeError, RecursionError) as exc:
        raise MalformedError(f"invalid JSON: {exc}") from exc
