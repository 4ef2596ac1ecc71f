"""Writing a generated file set into one folder, and nowhere else: every path is relative and
portable, no existing component of it may be a symlink, each file is written atomically, and a
folder that already holds files is refused unless the caller forces it."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from acxoci.errors import InvalidInput, UsageError
from acxoci.fsutil import atomic_write


def _check_parent_chain(out: Path, rel: str) -> None:
    cur = out
    for seg in rel.split("/")[:-1]:
        cur = cur / seg
        try:
            st = cur.lstat()
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise InvalidInput("refusing to write through a symlink or a file", where=str(cur))


def write_tree(out: Path, files: Mapping[str, bytes], *, force: bool) -> list[str]:
    """Write `files` ({relative POSIX path: bytes}) under `out`; returns the paths written."""
    if out.is_symlink():
        raise InvalidInput("the output folder is a symlink; name a real folder", where=str(out))
    if out.exists() and not out.is_dir():
        raise InvalidInput("the output path exists and is not a folder", where=str(out))
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError(
            f"{out} is not empty",
            hint="name an empty or new folder, or pass --force to overwrite the generated files",
        )
    for rel in files:
        parts = rel.split("/")
        if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InvalidInput(f"generated path {rel!r} is not a relative path", where=str(out))
    out.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        _check_parent_chain(out, rel)
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            raise InvalidInput("refusing to replace a symlink", where=str(target))
        atomic_write(target, data)
    return list(files)


def is_inside(child: Path, parent: Path) -> bool:
    """Is `child` (resolved) `parent` or below it?"""
    c, p = os.path.realpath(child), os.path.realpath(parent)
    return c == p or c.startswith(p.rstrip(os.sep) + os.sep)
