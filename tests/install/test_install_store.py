"""The install store: one rename makes an item visible, readers ignore staging/trash/incomplete
folders, the highest seq of a name is current, uninstall, and the lock serializes writers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acxoci.errors import Blocked, NotFound, UsageError
from acxoci.install.store import RECORD, Store, check_name, default_root, list_files, slug
from tests.harness.env import REPO
from tests.harness.seeddocs import install_record

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64


def record(name: str, digest: str, seq: int) -> dict[str, object]:
    """A complete install record (the store refuses one that does not decode) for `name`."""
    return {**install_record(), "name": name, "digest": digest, "contentDigest": digest, "seq": seq}


def install_fake(store: Store, name: str, digest: str, payload: bytes = b"data") -> None:
    with store.transaction() as txn:
        staged = txn.stage()
        (staged / "cartridge.acx").write_bytes(payload)
        assert store.list() == [] or all(i.path != staged for i in store.list())
        rec = record(name, digest, txn.next_seq())
        rec["files"] = list_files(staged)
        txn.commit(staged, rec)


def test_commit_is_the_only_way_in(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    with store.transaction() as txn:
        staged = txn.stage()
        (staged / "cartridge.acx").write_bytes(b"x")
        (staged / RECORD).write_text(json.dumps(record("a/b", D1, 1)))
        assert store.list() == []  # a staged folder with a record is still invisible
        txn.commit(staged, record("a/b", D1, txn.next_seq()))
    items = store.list()
    assert [(i.name, i.digest) for i in items] == [("a/b", D1)]
    assert items[0].path.name == f"{slug('a/b')}@{'1' * 64}"
    assert not any((store.staging_dir).iterdir())


def test_readers_ignore_stale_and_incomplete_folders_and_writers_clean_them(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    install_fake(store, "a", D1)
    (store.staging_dir / "dead").mkdir(parents=True)
    (store.staging_dir / "dead" / "cartridge.acx").write_bytes(b"half")
    (store.items_dir / "broken@" / "x").mkdir(parents=True)  # no record
    (store.items_dir / ".tmp-partial").mkdir()
    mismatch = store.items_dir / f"zzz@{'4' * 64}"
    mismatch.mkdir()
    (mismatch / RECORD).write_text(json.dumps(record("other", D2, 9)))  # folder name does not match
    assert [i.name for i in store.list()] == ["a"]
    install_fake(store, "c", D2)
    assert not (store.staging_dir / "dead").exists()
    assert not (store.items_dir / ".tmp-partial").exists()
    assert [i.name for i in store.list()] == ["a", "c"]


def test_highest_seq_is_current_and_superseded_are_removed(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    install_fake(store, "a", D1, b"one")
    install_fake(store, "a", D2, b"two")
    assert [i.digest for i in store.all_items()] == [D2]
    cur = store.require("a")
    assert (cur.path / "cartridge.acx").read_bytes() == b"two" and cur.seq == 2


def test_leftover_superseded_item_is_ignored(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    install_fake(store, "a", D1)
    old = store.require("a")
    keep = tmp_path / "keep"
    shutil.copytree(old.path, keep)
    install_fake(store, "a", D2)
    keep.rename(old.path)  # as if the cleanup after the rename had been killed
    assert store.require("a").digest == D2
    assert len(store.all_items()) == 2
    install_fake(store, "a", D1)  # reinstalling the older digest replaces the leftover folder
    assert store.require("a").digest == D1
    assert [i.digest for i in store.all_items()] == [D1]


def test_uninstall(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    install_fake(store, "a", D1)
    install_fake(store, "b", D2)
    with store.transaction() as txn:
        removed = txn.uninstall("a")
    assert [i.digest for i in removed] == [D1]
    assert [i.name for i in store.list()] == ["b"]
    with pytest.raises(NotFound), store.transaction() as txn:
        txn.uninstall("a")


def test_names_and_default_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert check_name("io.github.x/agent-1") == "io.github.x/agent-1"
    for bad in ("", "A", "a//b", "../x", "a b", "a+b", "/a"):
        with pytest.raises(UsageError):
            check_name(bad)
    monkeypatch.setenv("ACX_STORE", str(tmp_path / "env-store"))
    assert default_root() == tmp_path / "env-store"
    monkeypatch.delenv("ACX_STORE")
    assert default_root().name == "store" and "acxoci" in str(default_root())


def test_lock_serializes_writers(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    install_fake(store, "a", D1)
    marker = tmp_path / "held"
    holder = textwrap.dedent(f"""
        import sys, time, pathlib
        sys.path.insert(0, {str(REPO)!r})
        from acxoci.install.store import Store
        with Store(pathlib.Path({str(store.root)!r})).transaction():
            pathlib.Path({str(marker)!r}).write_text("x")
            time.sleep(1.5)
    """)
    proc = subprocess.Popen([sys.executable, "-c", holder])
    try:
        deadline = time.monotonic() + 20
        while not marker.exists():
            assert time.monotonic() < deadline, "holder never took the lock"
            time.sleep(0.02)
        with pytest.raises(Blocked), store.transaction(timeout=0.2):
            pass
        start = time.monotonic()
        with store.transaction(timeout=30):
            waited = time.monotonic() - start
        assert waited > 0.3
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == 0
