"""Races on the name a cartridge is opened by (acxoci/cartridge/reader.py `open_cartridge`,
decision 0030): the name is opened once, and SQLite reads a private copy made through that
descriptor. So two folders exchanged while the file is read cannot make SQLite read another file
than the one whose header and identity were taken, a FIFO at the name is refused without waiting,
and a file written in place while it is verified gets no accepting verdict. Each race is made
deterministic by doing the attacker's step inside the open itself."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge import reader
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import verify_cartridge, verify_open
from acxoci.errors import InvalidInput
from acxoci.fsutil import file_identity
from tests.harness.cartridges import NOW, SAMPLE, copy_vector


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


def test_folders_exchanged_while_the_file_is_read_do_not_change_what_is_read(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the header is read from d's file; the folders are exchanged while it is copied and back
    # again after: the file's own identity never changes, and SQLite, had it opened the name
    # then, would have read e's tampered file. What is read is the descriptor's file.
    d, e = folders
    path = d / "cart.acx"
    ident = file_identity(path)
    real_copy = reader._copy

    def exchanged(src: int, dst: int, size: int) -> int:
        _exchange(d, e)
        try:
            return real_copy(src, dst, size)
        finally:
            _exchange(d, e)

    monkeypatch.setattr(reader, "_copy", exchanged)
    with open_cartridge(path) as cart:
        assert cart.identity == ident
        v = verify_open(cart, registry=None, now=NOW)
    assert v.trust == "portable", v


def test_folders_exchanged_and_left_so_are_read_as_the_file_then_named(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # exchanged just before the name is opened: e's file is the one read, whole (its verdict is
    # TAMPERED, and its identity is e's file, not the one the name named before)
    d, e = folders
    path = d / "cart.acx"
    e_ident = file_identity(e / "cart.acx")
    real_open = reader._open_file

    def exchange_then_open(p: Path) -> int:
        _exchange(d, e)
        return real_open(p)

    monkeypatch.setattr(reader, "_open_file", exchange_then_open)
    with open_cartridge(path) as cart:
        assert cart.identity == e_ident
        v = verify_open(cart, registry=None, now=NOW)
    assert v.trust == "tampered", v


def test_a_fifo_at_the_name_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "cart.acx"
    os.mkfifo(path)
    t0 = time.monotonic()
    with pytest.raises(InvalidInput) as err:
        open_cartridge(path)
    assert time.monotonic() - t0 < 5
    assert "not a regular file" in str(err.value)


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
        verify_cartridge(path, registry=None, now=NOW)
    assert "the file changed while it was being verified" in str(err.value)


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR, for this test only."""
    folder = tmp_path / "tmp"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(reader.tempfile, "tempdir", None)  # read TMPDIR again
    return folder


def test_the_private_copy_is_the_process_s_own_and_gone_once_sqlite_holds_it(
    folders: tuple[Path, Path], scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d, _ = folders
    seen: list[tuple[Path, int]] = []
    real_connect = reader._connect

    def look(uri: str, *, where: str) -> sqlite3.Connection:
        copy = Path(uri.removeprefix("file://").partition("?")[0])
        seen.append((copy.parent, stat.S_IMODE(os.stat(copy).st_mode)))
        return real_connect(uri, where=where)

    monkeypatch.setattr(reader, "_connect", look)
    with open_cartridge(d / "cart.acx") as cart:
        assert list(scratch.iterdir()) == []  # the name goes once SQLite holds the file
        assert cart.meta()
    assert seen == [(scratch, 0o600)]
    (d / "cart.acx").write_bytes(b"SQLite format 3\0" + b"\0" * 4080)  # refused after the header
    with pytest.raises(InvalidInput):
        open_cartridge(d / "cart.acx")
    assert list(scratch.iterdir()) == []


def test_a_temporary_folder_others_may_replace_files_in_is_refused(
    folders: tuple[Path, Path], scratch: Path
) -> None:
    d, _ = folders
    scratch.chmod(0o777)  # writable by anyone and not sticky: another user could swap the copy
    with pytest.raises(InvalidInput) as err:
        open_cartridge(d / "cart.acx")
    assert err.value.message == (
        "the temporary folder is another user's, or writable by others and not sticky: a private copy"
        " there is not private"
    )
    assert (err.value.where, err.value.hint) == (str(scratch), "set TMPDIR to a folder of your own")
    scratch.chmod(0o1777)  # as /tmp is: only the owner of a file may rename or remove it
    with open_cartridge(d / "cart.acx") as cart:
        assert cart.meta()
    scratch.chmod(0o700)
    if os.getuid() == 0:  # a folder of another user's, even one only they may write, is not ours
        os.chown(scratch, 12345, -1)
        with pytest.raises(InvalidInput):
            open_cartridge(d / "cart.acx")


def test_no_room_for_the_private_copy_is_a_typed_error(folders: tuple[Path, Path]) -> None:
    # a file size limit below the cartridge's: the copy cannot be written (EFBIG), exit 7
    d, _ = folders
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from acxoci.cli.main import main\n"
        "main(['--json', 'cartridge', 'verify', sys.argv[1]])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(d / "cart.acx")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 7, (out.returncode, out.stdout, out.stderr)
    assert '"writeback_failed"' in out.stdout and "private copy" in out.stdout, out.stdout
