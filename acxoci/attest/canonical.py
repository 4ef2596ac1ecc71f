"""JSON canonicalisation (RFC 8785 / JCS) and strict JSON parsing.

Everything that is hashed goes through `jcs()`; never through json.dumps.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import rfc8785

from acxoci.attest.errors import MalformedError

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


MAX_JSON_DEPTH = 256
# Integers outside ±(2**53 - 1) read differently in JavaScript (the reference) and cannot be
# written by JCS, so two readers would disagree about a signed document: refused everywhere.
MAX_SAFE_INTEGER = 2**53 - 1
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]", re.ASCII)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise MalformedError(f"duplicate JSON key {k!r}")
        out[k] = v
    return out


def _reject_constant(name: str) -> Any:
    raise MalformedError(f"non-standard JSON constant {name}")


def _parse_int(text: str) -> int:
    digits = len(text) - (text[0] == "-")
    if digits > 16:  # 2**53 has 16 digits: no need to convert a 5,000-digit string to know
        raise MalformedError(f"JSON integer of {digits} digits is outside ±(2**53-1)")
    value = int(text)
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise MalformedError(f"JSON integer {text} is outside ±(2**53-1)")
    return value


def _parse_float(text: str) -> float:
    if len(text) > 400:
        raise MalformedError(f"JSON number of {len(text)} characters is too long")
    value = float(text)
    if not math.isfinite(value):
        raise MalformedError(f"JSON number {text[:40]} is not finite in binary64")
    return value


def _check_tree(value: Any, max_depth: int, check_strings: bool) -> None:
    """Check nesting depth and (when escapes could have made one) lone surrogates.

    Iterative, one iterator per open container: memory is bounded by `max_depth`, not by the
    number of values (a flat list of millions of items costs nothing extra).
    """

    def bad_string(s: str) -> bool:
        return check_strings and _LONE_SURROGATE.search(s) is not None

    def open_container(v: dict[str, Any] | list[Any]) -> Any:
        if type(v) is dict:
            if check_strings and any(bad_string(k) for k in v):
                raise MalformedError("JSON key holds a lone surrogate escape")
            return iter(v.values())
        return iter(v)

    t = type(value)
    if t is str:
        if bad_string(value):
            raise MalformedError("JSON string holds a lone surrogate escape")
        return
    if t is not dict and t is not list:
        return
    stack = [open_container(value)]
    while stack:
        for item in stack[-1]:
            ti = type(item)
            if ti is dict or ti is list:
                if len(stack) >= max_depth:
                    raise MalformedError(f"JSON nests deeper than {max_depth} levels")
                stack.append(open_container(item))
                break
            if ti is str and bad_string(item):
                raise MalformedError("JSON string holds a lone surrogate escape")
        else:
            stack.pop()


def loads_strict(
    data: bytes | bytearray | str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """Parse JSON strictly, the one entry point for every document acxoci reads.

    UTF-8 only, no BOM, bounded size, no duplicate keys, no NaN/Infinity or numbers that overflow
    binary64, integers within ±(2**53-1), no lone surrogate escapes, at most `max_depth` levels.
    Every refusal is a MalformedError (callers map it to invalid_input, or tampered when signed).
    """
    if isinstance(data, bytes | bytearray):
        if len(data) > max_bytes:
            raise MalformedError(f"JSON document of {len(data)} bytes exceeds the {max_bytes}-byte limit")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedError(f"JSON is not valid UTF-8 (byte {exc.start})") from exc
    elif isinstance(data, str):
        text = data
        if len(text) > max_bytes:
            raise MalformedError(f"JSON document of {len(text)} characters exceeds the limit")
        if _LONE_SURROGATE.search(text):
            raise MalformedError("JSON text holds a lone surrogate")
    else:
        raise MalformedError(f"JSON input is {type(data).__name__}, not bytes or text")
    if text.startswith("\ufeff"):
        raise MalformedError("JSON starts with a byte-order mark")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_reject_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except MalformedError:
        raise
    except (json.JSONDecodeError, RecursionError, ValueError, OverflowError) as exc:
        raise MalformedError(f"invalid JSON: {exc}") from exc
    escapes = _SURROGATE_ESCAPE.search(text) is not None
    if escapes or text.count("[") + text.count("{") > max_depth:
        _check_tree(value, max_depth, escapes)
    return value
