"""Helpers for the reader's in-process hostile-file tests (no tests here): a copy of the sample
edited with SQL (CHECK constraints off, so a hostile value reaches the reader), a hand-built
database wrapped with `Cartridge.from_connection` (no schema check, for tables a real file could
only get by page surgery), and one assertion for a typed refusal compared field by field."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge.schema import DDL
from acxoci.errors import AcxError
from tests.harness.cartridges import SAMPLE, copy_vector

ROM_FILE = "rom/knowledge/STYLE.md"
MEMORY_ID = "mem-ge-mnhsl3xg"
CAP = "cap-7073ad41df0a3e62"
SIG_ID = "sig-rom-8ba92c59b173"
SKILL = "rom/skills/expertise-designer/SKILL.md"
ATTESTATION = (
    "INSERT INTO attestations VALUES ('att-1', 'vc-2.0', NULL, 'application/vc+ld+json', '{\"a\":1}',"
    " NULL, '2026-05-01T00:00:00Z')"
)


def edited(
    vectors: Path, tmp: Path, *statements: str, params: tuple[Any, ...] = (), name: str = "c.acx"
) -> Path:
    """A copy of the sample with `statements` applied (CHECK constraints ignored)."""
    path = copy_vector(vectors, SAMPLE, tmp / name)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        for st in statements:
            conn.execute(st, params) if params else conn.execute(st)
        conn.commit()
    finally:
        conn.close()
    return path


def decoded(name: str, sz: int, data: bytes | None, *, max_bytes: int = 1 << 30) -> bytes:
    """One sqlar row's uncompressed bytes, as the reader streams them (sqlar.stream_entry)."""
    from acxoci.cartridge.sqlar import stream_entry

    out = bytearray()

    def sink() -> Callable[[bytes], object]:
        out.clear()
        return out.extend

    chunks = [data] if data else []
    stream_entry(name, sz, len(data or b""), lambda: iter(chunks), sink, where="test", max_bytes=max_bytes)
    return bytes(out)


def scratch(*statements: str, ddl: bool = True) -> sqlite3.Connection:
    """An in-memory database with the reference DDL (or none) and `statements` run."""
    conn = sqlite3.connect(":memory:")
    if ddl:
        for st in DDL:
            conn.execute(st)
    for st in statements:
        conn.execute(st)
    conn.commit()
    return conn


def refused(
    call: Callable[[], object],
    cls: type[AcxError],
    message: str,
    *,
    where: str | None,
    details: dict[str, Any] | None = None,
) -> AcxError:
    """`call()` raises exactly `cls` with this message, location and details."""
    with pytest.raises(cls) as info:
        call()
    err = info.value
    del info
    # the traceback holds the failed call's frames (and any generator they were reading a blob
    # through): drop it now, while the connection is still open, rather than at some later GC
    err.__traceback__ = None
    assert type(err) is cls, type(err)
    assert err.message == message, err.message
    assert err.where == where, err.where
    assert err.details == (details or {}), err.details
    return err


def class_refused(
    call: Callable[[], object], where: Path, table: str, column: str, got: str, expected: str
) -> None:
    """`call()` refuses `table.column` for holding a value of storage class `got` (BadEntry naming
    table and column; `expected` the accepted classes, e.g. "integer or null")."""
    from acxoci.cartridge.sqlar import BadEntry

    article = "an" if got[:1] in "aeiou" else "a"
    refused(
        call,
        BadEntry,
        f"{table}.{column} holds {article} {got} value, expected {expected}",
        where=str(where),
        details={"table": table, "column": column},
    )
