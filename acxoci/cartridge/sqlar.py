"""Bounded decoding of SQLite Archive (`sqlar`) entries: raw, zlib or raw DEFLATE (brief §1.2).

Never inflates past the declared `sz` nor past a ceiling, so a DEFLATE bomb costs at most
`sz + 1` bytes of output and stops there.
"""

from __future__ import annotations

import zlib

from acxoci.cartridge.constants import DEFAULT_MAX_ENTRY_BYTES
from acxoci.errors import InvalidInput

_CHUNK = 1 << 20


class BadEntry(InvalidInput):
    """One entry (sqlar row, memory row, JSON column…) of an otherwise readable cartridge is malformed."""


def _inflate(data: bytes, wbits: int, sz: int) -> bytes | None:
    """Inflate `data` expecting exactly `sz` bytes; None if it is not that stream."""
    d = zlib.decompressobj(wbits)
    out = bytearray()
    pending = data
    try:
        while True:
            room = sz + 1 - len(out)
            chunk = d.decompress(pending, min(room, _CHUNK))
            out += chunk
            if len(out) > sz:
                return None  # would inflate past the declared size: a bomb or a lie
            if d.eof:
                break
            pending = d.unconsumed_tail
            if not pending and not chunk:
                return None  # truncated stream
    except zlib.error:
        return None
    if d.unused_data or len(out) != sz:
        return None
    return bytes(out)


def decode_entry(
    name: str, sz: object, data: object, *, where: str, max_bytes: int = DEFAULT_MAX_ENTRY_BYTES
) -> bytes:
    """Return the uncompressed bytes of one sqlar row, or raise BadEntry naming file and entry.

    Raw when `sz == len(data)`; otherwise zlib, then raw DEFLATE (wbits -15).
    """
    details = {"entry": name}
    if isinstance(sz, bool) or not isinstance(sz, int) or sz < 0:
        raise BadEntry(
            f"sqlar entry {name!r}: sz {sz!r} is not a non-negative integer", where=where, details=details
        )
    if sz > max_bytes:
        raise BadEntry(
            f"sqlar entry {name!r}: declared size {sz} exceeds the {max_bytes}-byte limit",
            where=where,
            details=details,
        )
    if data is None:
        if sz == 0:
            return b""
        raise BadEntry(f"sqlar entry {name!r}: no data but sz={sz}", where=where, details=details)
    if not isinstance(data, bytes):
        raise BadEntry(
            f"sqlar entry {name!r}: data is {type(data).__name__}, not a blob", where=where, details=details
        )
    if len(data) == sz:
        return data
    if len(data) > sz:
        raise BadEntry(
            f"sqlar entry {name!r}: {len(data)} stored bytes exceed declared size {sz}",
            where=where,
            details=details,
        )
    for wbits in (15, -15):
        out = _inflate(data, wbits, sz)
        if out is not None:
            return out
    raise BadEntry(
        f"sqlar entry {name!r}: data is neither raw, zlib nor raw DEFLATE of exactly {sz} bytes",
        where=where,
        details=details,
    )
