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
from acxoci.fsutil import file_identity
from tests.unit.test_cartridge_verify_support import NOW, SAMPLE, copy_vector

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


def test_a_file_written_in_place_while_it_is_verified_gets_no_verdict(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the checks read the file as it was; a write during them (its ctime moves) means the name
    # no longer holds what was checked
    from acxoci.cartridge import manifest, verify

    d, _ = folders
    path = d / "cart.acx"
    real = manifest.compute_rom_manifest

    def touched(cart: Any, **kw: Any) -> Any:
        out = real(cart, **kw)
        os.utime(path, ns=(1, 1))
        return out

    monkeypatch.setattr(verify, "compute_rom_manifest", touched)
    with pytest.raises(InvalidInput) as err:
        verify.verify_cartridge(path, registry=None, now=NOW)
    assert "the file changed while it was being verified" in str(err.value)


@pytest.mark.parametrize("opener", ["header", "helper"])
def test_other_opens_of_a_cartridge_file_wait_for_an_open_s_window(
    opener: str, folders: tuple[Path, Path]
) -> None:
    # a descriptor opened by another thread inside `_open`'s window could pass for SQLite's
    # (the header read and the helper's descriptor open by name too): they take the same lock
    import threading

    from acxoci.cartridge import romhash

    d, _ = folders
    path = d / "cart.acx"
    ident = file_identity(path)
    done = threading.Event()

    def run() -> None:
        if opener == "header":
            reader._read_header(path)
        else:
            helper = romhash._spawn((path.resolve(), ident), 1 << 20)
            if helper is not None:
                helper.close()
        done.set()

    with romhash.OPEN_LOCK:
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        assert not done.wait(0.3), f"the {opener} open did not wait for the lock"
    assert done.wait(10)


def test_a_descriptor_of_the_header_s_inode_opened_elsewhere_in_the_window_does_not_pass(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the folders are exchanged around SQLite's open while some other code of the process opens a
    # hard link of the file the header came from: a descriptor of the header's inode does appear
    # in the window, but SQLite's own is another file's, so the open is still refused
    d, e = folders
    os.link(d / "cart.acx", tmp_path / "link.acx")
    held: list[int] = []

    def exchange_and_open_link() -> None:
        _exchange(d, e)
        held.append(os.open(tmp_path / "link.acx", os.O_RDONLY))

    try:
        swap = _around_sqlite_open(monkeypatch, exchange_and_open_link, lambda: _exchange(d, e))
        with swap, pytest.raises(InvalidInput) as err:
            open_cartridge(d / "cart.acx")
    finally:
        for fd in held:
            os.close(fd)
    assert CHANGED in str(err.value)


def test_an_unrelated_file_opened_in_the_window_costs_a_retry_not_a_refusal(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    d, _ = folders
    (tmp_path / "other.txt").write_text("x")
    held: list[int] = []

    def open_other_once() -> None:
        if not held:
            held.append(os.open(tmp_path / "other.txt", os.O_RDONLY))

    try:
        with (
            _around_sqlite_open(monkeypatch, open_other_once, lambda: None),
            open_cartridge(d / "cart.acx") as cart,
        ):
            assert cart.meta()
    finally:
        for fd in held:
            os.close(fd)
    assert len(held) == 1
