"""The private copy and the scans over it, in process: the copy's own refusals compared whole
(an unreadable file, a full disk), the copy made without `sendfile` where there is none, SQLite's
refusals of what it cannot open, and the work an opened cartridge does once: one scan per table,
each query's plan checked once per process, a schema judged once."""

from __future__ import annotations

import errno
import sqlite3
import sys
from pathlib import Path

import pytest

from acxoci.cartridge import reader, schema
from acxoci.cartridge.reader import BadEntry, open_cartridge
from acxoci.cartridge.verify import verify_open
from acxoci.errors import InvalidInput, WriteBackFailed
from tests.harness.btree import graft_index
from tests.harness.cartridges import NOW, SAMPLE, copy_vector
from tests.harness.reader_edits import refused


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def test_the_copy_without_sendfile_is_the_same_bytes(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # more than one 1 MiB read: every piece lands at its offset
    conn = sqlite3.connect(sample)
    conn.execute("INSERT INTO sqlar VALUES ('save/big.bin', 420, 0, 3000000, randomblob(3000000))")
    conn.commit()
    conn.close()
    monkeypatch.setattr(sys, "platform", "darwin")
    copies: list[bytes] = []
    real_connect = reader._connect

    def keep(uri: str, *, where: str) -> sqlite3.Connection:
        copies.append(Path(uri.removeprefix("file://").partition("?")[0]).read_bytes())
        return real_connect(uri, where=where)

    monkeypatch.setattr(reader, "_connect", keep)
    with open_cartridge(sample) as cart:
        assert verify_open(cart, registry=None, now=NOW).trust == "portable"
    assert copies == [sample.read_bytes()]


@pytest.mark.parametrize(
    ("error", "cls", "message", "hint"),
    [
        (errno.EIO, InvalidInput, "cannot read: Input/output error", None),
        (
            errno.ENOSPC,
            WriteBackFailed,
            "cannot make the private copy a cartridge is read from: No space left on device",
            "free space in the temporary folder (TMPDIR) and run it again",
        ),
        (
            errno.EDQUOT,
            WriteBackFailed,
            "cannot make the private copy a cartridge is read from: Disk quota exceeded",
            "free space in the temporary folder (TMPDIR) and run it again",
        ),
    ],
)
def test_a_copy_that_fails_is_a_typed_refusal(
    sample: Path,
    monkeypatch: pytest.MonkeyPatch,
    error: int,
    cls: type[InvalidInput],
    message: str,
    hint: str | None,
) -> None:
    import os
    import tempfile

    def failing(src: int, dst: int, size: int) -> int:
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(reader, "_copy", failing)
    where = tempfile.gettempdir() if cls is WriteBackFailed else str(sample)
    err = refused(lambda: open_cartridge(sample), cls, message, where=where)
    assert err.hint == hint


def test_what_sqlite_cannot_open_is_refused_naming_the_file(tmp_path: Path) -> None:
    refused(
        lambda: reader._connect(f"file:{tmp_path}/no/such/dir/x.acx?mode=ro", where="w"),
        InvalidInput,
        "cannot open as SQLite: unable to open database file",
        where="w",
    )


class _Counting(sqlite3.Connection):
    """A real connection that counts the query plans asked of it."""

    plans = 0

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
        if sql.startswith("EXPLAIN QUERY PLAN"):
            _Counting.plans += 1
        return super().execute(sql, *args)  # type: ignore[arg-type]


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> type[_Counting]:
    real = sqlite3.connect
    monkeypatch.setattr(reader.sqlite3, "connect", lambda *a, **k: real(*a, factory=_Counting, **k))
    _Counting.plans = 0
    return _Counting


def test_a_second_cartridge_asks_for_no_plan_and_judges_no_schema(
    sample: Path,
    vectors_dir: Path,
    tmp_path: Path,
    counting: type[_Counting],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with open_cartridge(sample) as first:
        verify_open(first, registry=None, now=NOW)
    assert reader._PLANNED and schema._ACCEPTED
    counting.plans = 0
    judged: list[object] = []
    real = schema._structure
    monkeypatch.setattr(schema, "_structure", lambda c: judged.append(c) or real(c))
    with open_cartridge(copy_vector(vectors_dir, SAMPLE, tmp_path / "d.acx")) as cart:
        assert verify_open(cart, registry=None, now=NOW).trust == "portable"
        seen: list[str] = []
        cart.conn.set_trace_callback(seen.append)
        assert cart.sqlar_infos() and cart.sqlar_info("rom/knowledge/STYLE.md") and cart.meta()
    assert (counting.plans, judged, seen) == (0, [], [])  # every scan was kept, too


def test_a_wrapped_connection_checks_its_plans_every_time(sample: Path, counting: type[_Counting]) -> None:
    conn = sqlite3.connect(sample)
    cart = reader.Cartridge.from_connection(conn, label="mem")
    cart.meta()
    cart.meta()
    assert counting.plans == 2
    conn.close()


def test_an_index_entry_that_is_not_utf8_disagrees_with_its_table(sample: Path) -> None:
    conn = sqlite3.connect(sample)
    rows = conn.execute("SELECT rowid, name FROM sqlar ORDER BY name").fetchall()
    conn.execute("CREATE TABLE h (name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)")
    conn.executemany("INSERT INTO h (rowid, name) VALUES (?, ?)", rows[:-1])
    conn.execute("INSERT INTO h (rowid, name) VALUES (?, CAST(X'726f6dff' AS TEXT))", (rows[-1][0],))
    graft_index(conn, "sqlite_autoindex_sqlar_1", "sqlite_autoindex_h_1")
    with open_cartridge(sample) as cart:
        refused(
            cart.check_indexes,
            BadEntry,
            "index sqlite_autoindex_sqlar_1 disagrees with table sqlar: an entry names no row of the table, a"
            " row has no entry, or entries are out of order or repeated",
            where=str(sample),
            details={"table": "sqlar", "index": "sqlite_autoindex_sqlar_1"},
        )
