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


def jcs(value: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON value."""
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise MalformedError(f"value cannot be canonicalised: {exc}") from exc


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
