"""Bounded decoding of SQLite Archive (`sqlar`) entries: raw, zlib or raw DEFLATE (brief §1.2).

Never inflates past the declared `sz` nor past a ceiling, so a DEFLATE bomb costs at most
`sz + 1` bytes of output and stops there. `stream_entry` does the same over a chunk source
(a `blobopen` reader), so an entry is hashed without ever being held in memory, and charges
every inflated byte to one `Budget` shared by the whole cartridge.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable

from acxoci.cartridge.constants import DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_ENTRY_BYTES
from acxoci.errors import InvalidInput

_CHUNK = 1 << 20


class BadEntry(InvalidInput):
    """One entry (sqlar row, memory row, JSON column…) of an otherwise readable cartridge is malformed."""


class Budget:
    """Total bytes that may be inflated while reading one cartridge (a DEFLATE bomb spread over
    many entries stops here). Raise it with `--max-decompressed`."""

    def __init__(self, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> None:
        self.limit = limit
        self.used = 0

    def charge(self, n: int, *, name: str, where: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise BadEntry(
                f"sqlar entry {name!r}: more than {self.limit} bytes decompressed in total "
                "(raise the cap with --max-decompressed)",
                where=where,
                details={"entry": name, "limit": self.limit},
            )


def _inflate_stream(
    chunks: Iterable[bytes],
    wbits: int,
    sz: int,
    sink: Callable[[bytes], object],
    budget: Budget | None,
    *,
    name: str,
    where: str,
) -> bool:
    """Inflate a chunked stream into `sink`, expecting exactly `sz` bytes; False if it is not that
    stream (bad data, truncated, trailing bytes, or more output than `sz`). The chunk source is
    closed on the way out, so a `blobopen` reader left half read is released at once, while its
    connection is open, not whenever it is collected."""
    d = zlib.decompressobj(wbits)
    produced = 0
    it = iter(chunks)
    try:
        for data in it:
            pending = data
            while pending:
                out = d.decompress(pending, min(sz + 1 - produced, _CHUNK) or 1)
                produced += len(out)
                if budget is not None:
                    budget.charge(len(out), name=name, where=where)
                if produced > sz:
                    return False  # would inflate past the declared size: a bomb or a lie
                if out:
                    sink(out)
                if d.eof:
                    if d.unused_data or d.unconsumed_tail:
                        return False
                    break
                pending = d.unconsumed_tail
            if d.eof:
                break
        if not d.eof:
            return False  # truncated stream
        for rest in it:  # anything after the end of the stream
            if rest:
                return False
    except zlib.error:
        return False
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    return produced == sz


def _check_sizes(name: str, sz: object, stored: int, *, where: str, max_bytes: int) -> int:
    details = {"entry": name}
    if isinstance(sz, bool) or not isinstance(sz, int) or sz < 0:
        raise BadEntry(
            f"sqlar entry {name!r}: sz {sz!r} is not a non-negative integer", where=where, details=details
        )
    if sz > max_bytes and stored != sz:
        raise BadEntry(
            f"sqlar entry {name!r}: declared size {sz} exceeds the {max_bytes}-byte limit",
            where=where,
            details=details,
        )
    if stored > sz:
        raise BadEntry(
            f"sqlar entry {name!r}: {stored} stored bytes exceed declared size {sz}",
            where=where,
            details=details,
        )
    return sz


def stream_entry(
    name: str,
    sz: object,
    stored: int,
    open_chunks: Callable[[], Iterable[bytes]],
    sink_factory: Callable[[], Callable[[bytes], object]],
    *,
    where: str,
    max_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    budget: Budget | None = None,
) -> Callable[[bytes], object]:
    """Feed the uncompressed bytes of one sqlar row to a fresh sink and return that sink.

    `open_chunks()` yields the stored bytes (called again for the raw-DEFLATE retry); raw when
    `sz == stored` (no size cap: the bytes are in the file already), otherwise zlib, then raw
    DEFLATE, each bounded by `sz`, `max_bytes` and the shared `budget`.
    """
    size = _check_sizes(name, sz, stored, where=where, max_bytes=max_bytes)
    if stored == size:
        sink = sink_factory()
        for chunk in open_chunks():
            sink(chunk)
        return sink
    if stored == 0:
        raise BadEntry(f"sqlar entry {name!r}: no data but sz={size}", where=where, details={"entry": name})
    for wbits in (15, -15):
        sink = sink_factory()
        if _inflate_stream(open_chunks(), wbits, size, sink, budget, name=name, where=where):
            return sink
    raise BadEntry(
        f"sqlar entry {name!r}: data is neither raw, zlib nor raw DEFLATE of exactly {size} bytes",
        where=where,
        details={"entry": name},
    )
