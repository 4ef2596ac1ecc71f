"""Base64 helpers: standard encoding out, standard or URL-safe (padded or not) accepted in."""

from __future__ import annotations

import base64
import binascii

from acxoci.attest.errors import MalformedError


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode_lenient(text: str) -> bytes:
    """Decode standard or URL-safe base64, with or without padding; reject anything else."""
    if not isinstance(text, str):
        raise MalformedError("base64 value is not a string")
    s = text.strip().replace("-", "+").replace("_", "/")
    s += "=" * (-len(s) % 4)
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MalformedError(f"invalid base64: {exc}") from exc
