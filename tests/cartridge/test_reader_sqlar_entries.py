"""sqlar entries, in process: each refusal of `stream_entry` compared whole, the exact bytes of
every stored form (raw, zlib, raw DEFLATE; one chunk, many, output larger than a read), what a
DEFLATE bomb costs the shared budget (sz + 1 bytes, no more), and the reader's use of them:
`sqlar_read`/`sqlar_sha256` on a real file."""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge.constants import DEFAULT_MAX_DECOMPRESSED_BYTES
from acxoci.cartridge.reader import BadEntry, SqlarInfo, open_cartridge
from acxoci.cartridge.sqlar import Budget, stream_entry
from acxoci.errors import InvalidInput
from tests.harness.reader_edits import ROM_FILE, decoded, edited, refused

TEXT = bytes(range(256)) * 8  # 2,048 bytes


def _deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def _gzip(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


class Sinks:
    """A sink factory that remembers every sink it made (one per decoding attempt)."""

    def __init__(self) -> None:
        self.made: list[bytearray] = []

    def __call__(self) -> Callable[[bytes], object]:
        buf = bytearray()
        self.made.append(buf)
        return buf.extend


def _stream(
    sz: object,
    chunks: list[bytes],
    *,
    stored: int | None = None,
    budget: Budget | None = None,
    max_bytes: int = 1 << 30,
) -> tuple[bytes, Sinks]:
    sinks = Sinks()
    n = sum(map(len, chunks)) if stored is None else stored
    sink = stream_entry(
        "rom/e", sz, n, lambda: iter(chunks), sinks, where="f.acx", max_bytes=max_bytes, budget=budget
    )
    assert sinks.made and sink.__self__ is sinks.made[-1]  # type: ignore[attr-defined]
    return bytes(sinks.made[-1]), sinks


def _refused_stream(message: str, sz: object, chunks: list[bytes], **kw: Any) -> None:
    refused(
        lambda: _stream(sz, chunks, **kw),
        BadEntry,
        f"sqlar entry 'rom/e': {message}",
        where="f.acx",
        details={"entry": "rom/e"},
    )


@pytest.mark.parametrize(
    ("form", "data"),
    [("raw", TEXT), ("zlib", zlib.compress(TEXT)), ("deflate", _deflate(TEXT))],
)
def test_every_stored_form_gives_the_bytes(form: str, data: bytes) -> None:
    one, sinks = _stream(len(TEXT), [data])
    assert one == TEXT
    # a fresh sink per attempt: raw DEFLATE is tried after zlib failed, never appended to it
    assert len(sinks.made) == (2 if form == "deflate" else 1)
    by_byte, _ = _stream(len(TEXT), [data[i : i + 1] for i in range(len(data))])
    assert by_byte == TEXT
    uneven, _ = _stream(len(TEXT), [data[:5], b"", data[5:9], data[9:]])
    assert uneven == TEXT


def test_output_larger_than_one_read_is_inflated_in_pieces() -> None:
    big = (TEXT * 700)[: (3 << 20) + 7]  # more than 1 MiB of output from one small input chunk
    for data in (zlib.compress(big), _deflate(big)):
        budget = Budget(len(big))
        out, _ = _stream(len(big), [data], budget=budget)
        assert out == big
        assert budget.used == len(big)


def test_empty_entries() -> None:
    assert _stream(0, [])[0] == b""


@pytest.mark.parametrize("form", ["zlib", "deflate"])
def test_a_bomb_costs_the_budget_sz_plus_one_bytes(form: str) -> None:
    bomb = zlib.compress(bytes(10**6)) if form == "zlib" else _deflate(bytes(10**6))
    budget = Budget(10**9)
    _refused_stream(
        "data is neither raw, zlib nor raw DEFLATE of exactly 1000 bytes", 1000, [bomb], budget=budget
    )
    assert budget.used == 1001


def test_the_budget_stops_a_stream_at_its_limit() -> None:
    z = zlib.compress(TEXT)
    exact = Budget(len(TEXT))
    assert _stream(len(TEXT), [z], budget=exact)[0] == TEXT and exact.used == len(TEXT)
    short = Budget(len(TEXT) - 1)
    refused(
        lambda: _stream(len(TEXT), [z], budget=short),
        BadEntry,
        f"sqlar entry 'rom/e': more than {len(TEXT) - 1} bytes decompressed in total (raise the cap with"
        " --max-decompressed)",
        where="f.acx",
        details={"entry": "rom/e", "limit": len(TEXT) - 1},
    )
    fresh = Budget()
    assert (fresh.limit, fresh.used) == (DEFAULT_MAX_DECOMPRESSED_BYTES, 0)
    raw = Budget(1)
    assert _stream(len(TEXT), [TEXT], budget=raw)[0] == TEXT and raw.used == 0  # raw bytes inflate nothing


@pytest.mark.parametrize(
    ("sz", "chunks", "why"),
    [
        (len(TEXT) + 1, [zlib.compress(TEXT)], "short of sz"),
        (len(TEXT) - 1, [zlib.compress(TEXT)], "past sz"),
        (len(TEXT), [zlib.compress(TEXT) + b"!"], "trailing bytes in the last chunk"),
        (len(TEXT), [zlib.compress(TEXT), b"!"], "a trailing chunk"),
        (len(TEXT), [_deflate(TEXT) + b"!!"], "trailing bytes after raw DEFLATE"),
        (len(TEXT), [zlib.compress(TEXT)[:-4]], "truncated (no checksum)"),
        (len(TEXT), [_deflate(TEXT)[:-3]], "truncated raw DEFLATE"),
        (len(TEXT), [_gzip(TEXT)], "gzip is not a sqlar form"),
        (len(TEXT), [b"\x00" * 40], "garbage"),
    ],
)
def test_what_is_not_exactly_sz_is_refused(sz: int, chunks: list[bytes], why: str) -> None:
    _refused_stream(f"data is neither raw, zlib nor raw DEFLATE of exactly {sz} bytes", sz, chunks)


def test_an_empty_trailing_chunk_is_fine() -> None:
    assert _stream(len(TEXT), [zlib.compress(TEXT), b""])[0] == TEXT


@pytest.mark.parametrize("sz", [-1, True, False, "4", 4.0, None])
def test_sz_must_be_a_non_negative_integer(sz: object) -> None:
    message = f"sz {sz!r} is not a non-negative integer"
    _refused_stream(message, sz, [b"abcd"])


def test_size_limits_and_their_boundaries() -> None:
    z = zlib.compress(b"x" * 1001)
    _refused_stream("declared size 1001 exceeds the 1000-byte limit", 1001, [z], max_bytes=1000)
    assert _stream(1000, [zlib.compress(b"x" * 1000)], max_bytes=1000)[0] == b"x" * 1000
    assert _stream(1001, [b"y" * 1001], max_bytes=1000)[0] == b"y" * 1001  # raw: in the file already
    _refused_stream("5 stored bytes exceed declared size 4", 4, [b"abcde"])
    _refused_stream("1 stored bytes exceed declared size 0", 0, [b"a"])
    _refused_stream("no data but sz=4", 4, [])
    _refused_stream("6 stored bytes exceed declared size 5", 5, [b"abcdef"])


# -- the reader's use of them, on a real file --

BIG = bytes(range(251)) * 4200  # 1,054,200 bytes: above the 1 MiB a raw row is hashed inline


def _forms(vectors: Path, tmp: Path) -> Path:
    return edited(
        vectors,
        tmp,
        "INSERT INTO sqlar VALUES ('rom/f/raw', 420, 0, 2048, ?1), ('rom/f/z', 420, 0, 2048, ?2),"
        " ('rom/f/d', 420, 0, 2048, ?3), ('rom/f/empty', 420, 0, 0, NULL), ('rom/f/blank', 420, 0, 0, X''),"
        " ('rom/f/big', 420, 0, ?5, ?4), ('save/f/raw', 420, 0, 2048, ?1)",
        params=(TEXT, zlib.compress(TEXT), _deflate(TEXT), BIG, len(BIG)),
    )


def _decoded(path: Path) -> dict[int, tuple[str, bytes, int]]:
    """rowid -> (name, uncompressed bytes, sz) by a plain read and a decode of its own."""
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT rowid, name, sz, data FROM sqlar").fetchall()
    finally:
        conn.close()
    return {r: (n, decoded(n, sz, d), sz) for r, n, sz, d in rows}


def test_rom_digests_are_the_uncompressed_bytes(vectors_dir: Path, tmp_path: Path) -> None:
    p = _forms(vectors_dir, tmp_path)
    want = {
        r: ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
        for r, (n, data, _) in _decoded(p).items()
        if n.startswith("rom/")
    }
    with open_cartridge(p) as cart:
        got = {i.rowid: cart.sqlar_sha256(i) for i in cart.sqlar_infos() if i.zone == "rom"}
        assert got == want
        for info in cart.sqlar_infos():
            name, data, _ = _decoded(p)[info.rowid]
            assert cart.sqlar_sha256(info) == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data)), name
            assert cart.sqlar_read(name) == data


def test_sqlar_read_refusals_on_a_file(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(
        vectors_dir,
        tmp_path,
        "INSERT INTO sqlar VALUES ('rom/x/nodata', 420, 0, 5, NULL), ('rom/x/toolong', 420, 0, 0, X'41'),"
        " ('rom/x/edge', 420, 0, 394, zeroblob(394))",
    )
    with open_cartridge(p, max_entry_bytes=394) as cart:
        refused(
            lambda: cart.sqlar_read("rom/x/nodata"),
            BadEntry,
            "sqlar entry 'rom/x/nodata': no data but sz=5",
            where=str(p),
            details={"entry": "rom/x/nodata"},
        )
        refused(
            lambda: cart.sqlar_read("rom/x/toolong"),
            BadEntry,
            "sqlar entry 'rom/x/toolong': 1 stored bytes exceed declared size 0",
            where=str(p),
            details={"entry": "rom/x/toolong"},
        )
        assert cart.sqlar_read("rom/x/edge") == bytes(394)  # exactly at the limit
        assert len(cart.sqlar_read(ROM_FILE) or b"") == 394
    with open_cartridge(p, max_entry_bytes=393) as cart:
        for name, size in (("rom/x/edge", 394), (ROM_FILE, 394)):  # raw, then compressed (263 stored)
            refused(
                functools.partial(cart.sqlar_read, name),
                BadEntry,
                f"sqlar entry {name!r}: {size} bytes exceed the 393-byte limit",
                where=str(p),
                details={"entry": name},
            )


def test_a_row_that_cannot_be_read_is_typed(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(vectors_dir, tmp_path)
    with open_cartridge(p) as cart:
        refused(
            lambda: cart.sqlar_sha256(SqlarInfo("rom/gone", 420, 0, 5, 5, 99_999, "rom")),
            InvalidInput,
            "cannot read sqlar data: no such rowid: 99999",
            where=str(p),
        )


def test_a_bomb_past_one_read_still_costs_sz_plus_one() -> None:
    sz = (1 << 20) + 10  # the first read gives 1 MiB, the second may give only 11 bytes more
    bomb = zlib.compress(bytes(3 << 20))
    budget = Budget(10**9)
    _refused_stream(
        f"data is neither raw, zlib nor raw DEFLATE of exactly {sz} bytes", sz, [bomb], budget=budget
    )
    assert budget.used == sz + 1


def test_the_entry_limit_applies_when_hashing_too(vectors_dir: Path, tmp_path: Path) -> None:
    p = edited(vectors_dir, tmp_path)
    with open_cartridge(p, max_entry_bytes=100) as cart:
        info = cart.sqlar_info(ROM_FILE)
        assert info is not None and info.stored < info.sz
        refused(
            lambda: cart.sqlar_sha256(info),
            BadEntry,
            f"sqlar entry {ROM_FILE!r}: declared size 394 exceeds the 100-byte limit",
            where=str(p),
            details={"entry": ROM_FILE},
        )


def test_a_chunk_source_is_closed_when_the_budget_stops_it() -> None:
    # a blobopen reader left half read must be released while its connection is open, even
    # while the refusal (and its traceback, which holds the reading frames) is still alive
    data = zlib.compress(bytes(50_000))
    closed: list[str] = []

    def chunks() -> Iterator[bytes]:
        try:
            yield data[:100]
            yield data[100:]
        finally:
            closed.append("closed")

    with pytest.raises(BadEntry, match="more than 1000 bytes decompressed in total") as info:
        stream_entry("rom/e", 50_000, len(data), chunks, Sinks(), where="f.acx", budget=Budget(1000))
    assert info.value.details == {"entry": "rom/e", "limit": 1000}
    assert closed == ["closed"]
    # chunk sources without close() (any iterable) are fine
    assert _stream(len(TEXT), [zlib.compress(TEXT)])[0] == TEXT
