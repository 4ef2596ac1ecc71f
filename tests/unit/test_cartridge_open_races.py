"""Races on the name a cartridge is opened by (acxoci/cartridge/reader.py `_open`): SQLite opens
the file again by name after its header was read, so whatever the name points at by then is what
SQLite reads. Two folders exchanged around SQLite's open (the file's own identity unchanged) must
be refused, and a FIFO put at the name must not block the open for ever. Each race is made
deterministic here by doing the attacker's step inside the open itself."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge import reader
from acxoci.cartridge.reader import open_cartridge
from acxoci.errors import InvalidInput
from tests.unit.test_cartridge_verify_support import SAMPLE, copy_vector

CHANGED = "the file changed while it was being opened; refusing it"


def _exchange(a: Path, b: Path) -> None:
    """Swap two folders (three renames: what RENAME_EXCHANGE does at once)."""
    tmp = a.with_name(a.name + ".x")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


@pytest.fixture
def folders(vectors_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """d/cart.acx: the sample; e/cart.acx: the sample with one ROM file's bytes changed."""
    d, e = tmp_path / "d", tmp_path / "e"
    d.mkdir()
    e.mkdir()
    copy_vector(vectors_dir, SAMPLE, d / "cart.acx")
    other = copy_vector(vectors_dir, SAMPLE, e / "cart.acx")
    conn = sqlite3.connect(other)
    conn.execute(
        "UPDATE sqlar SET data = zeroblob(length(data)) WHERE name LIKE 'rom/%' AND rowid = "
        "(SELECT min(rowid) FROM sqlar WHERE name LIKE 'rom/%')"
    )
    conn.commit()
    conn.close()
    return d, e


@contextlib.contextmanager
def _around_sqlite_open(
    monkeypatch: pytest.MonkeyPatch, before: Callable[[], None], after: Callable[[], None]
) -> Iterator[None]:
    real = reader._open_sqlite

    def wrapped(uri: str, *, where: str) -> sqlite3.Connection:
        before()
        try:
            return real(uri, where=where)
        finally:
            after()

    monkeypatch.setattr(reader, "_open_sqlite", wrapped)
    yield


def test_folders_exchanged_around_sqlite_s_open_are_refused(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the header is read from d's file; SQLite opens the name while e's file sits there; the
    # folders are swapped back before anything looks at the name again: the path's identity is
    # the header's throughout, only the descriptor SQLite holds tells
    d, e = folders
    swap = _around_sqlite_open(monkeypatch, lambda: _exchange(d, e), lambda: _exchange(d, e))
    with swap, pytest.raises(InvalidInput) as err:
        open_cartridge(d / "cart.acx")
    assert CHANGED in str(err.value)


def test_the_same_exchange_before_the_open_is_refused_by_name(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    d, e = folders
    real_files = reader._open_files
    state = {"done": False}

    def swap_then_list() -> Any:
        # runs just before the name check that precedes SQLite's open: the exchange is seen there
        if not state["done"]:
            state["done"] = True
            _exchange(d, e)
        return real_files()

    monkeypatch.setattr(reader, "_open_files", swap_then_list)
    with pytest.raises(InvalidInput) as err:
        open_cartridge(d / "cart.acx")
    assert CHANGED in str(err.value)


def test_an_open_with_no_race_reads_the_header_s_file(folders: tuple[Path, Path]) -> None:
    d, _ = folders
    with open_cartridge(d / "cart.acx") as cart:
        assert cart.identity is not None
        assert cart.identity[:2] == (os.stat(d / "cart.acx").st_dev, os.stat(d / "cart.acx").st_ino)


def test_a_fifo_put_at_the_name_does_not_block_the_open_for_ever(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    d, _ = folders
    path = d / "cart.acx"
    monkeypatch.setattr(reader, "_OPEN_SECONDS", 0.5)

    def to_fifo() -> None:
        path.rename(d / "moved.acx")
        os.mkfifo(path)

    t0 = time.monotonic()
    with _around_sqlite_open(monkeypatch, to_fifo, lambda: None), pytest.raises(InvalidInput) as err:
        open_cartridge(path)
    assert time.monotonic() - t0 < 5
    assert "did not finish" in str(err.value)
    # release the abandoned open (it waits for a writer)
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)
