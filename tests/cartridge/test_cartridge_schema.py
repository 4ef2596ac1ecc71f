"""The one definition of an acceptable cartridge file (acxoci/cartridge/schema.py): it agrees with
every vector cartridge, the builder writes it, and each header field it checks is named."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acxoci.cartridge import build
from acxoci.cartridge.reader import check_no_sidecars, open_cartridge, read_header
from acxoci.cartridge.schema import DDL, check_schema, mode_problem, sql_tokens
from acxoci.errors import InvalidInput
from tests.harness.cartridges import SAMPLE, copy_vector


def test_every_vector_cartridge_has_the_schema(vectors_dir: Path) -> None:
    files = sorted(vectors_dir.rglob("*.acx"))
    assert len(files) >= 10
    for f in files:
        with open_cartridge(f) as cart:
            assert {"cartridge", "sqlar", "memory", "objects", "signatures"} <= cart.tables()


def test_builder_writes_the_one_definition() -> None:
    assert build.DDL == DDL
    conn = sqlite3.connect(":memory:")
    for stmt in DDL:
        conn.execute(stmt)
    assert "capabilities" in check_schema(conn, where="mem")


def test_tokens_ignore_layout_and_comments_only() -> None:
    assert sql_tokens("CREATE TABLE a (x TEXT, -- c\n y INT)") == sql_tokens("create table a(x text,y int)")
    assert sql_tokens("CHECK (z IN ('rom'))") != sql_tokens("CHECK (z IN ('ROM'))")


@pytest.mark.parametrize(
    ("offset", "value", "field"),
    [
        (18, b"\x02", "write_version"),
        (19, b"\x02", "read_version"),
        (20, b"\x08", "reserved_space"),
        (56, b"\x00\x00\x00\x03", "text_encoding"),
        (52, b"\x00\x00\x00\x05", "auto_vacuum"),
        (16, b"\x03\x00", "page_size"),
        (80, b"\x01", "reserved"),
    ],
)
def test_header_fields_are_checked_and_named(
    vectors_dir: Path, tmp_path: Path, offset: int, value: bytes, field: str
) -> None:
    p = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    with open(p, "r+b") as fh:
        fh.seek(offset)
        fh.write(value)
    with pytest.raises(InvalidInput) as info:
        read_header(p)
    assert field in str(info.value)


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_sidecars_are_refused(vectors_dir: Path, tmp_path: Path, suffix: str) -> None:
    p = copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")
    check_no_sidecars(p)
    Path(str(p) + suffix).write_bytes(b"")
    with pytest.raises(InvalidInput) as info:
        open_cartridge(p)
    assert suffix in str(info.value)


@pytest.mark.parametrize(
    ("mode", "ok"),
    [
        (420, True),
        (0o100644, True),
        (0o100755, True),
        (0o120777, False),
        (0o104755, False),
        (0o102755, False),
        (0o101644, False),
        (0o040755, False),
        (0o100666, False),
        (None, False),
        (-1, False),
    ],
)
def test_modes(mode: int | None, ok: bool) -> None:
    assert (mode_problem(mode) is None) == ok
