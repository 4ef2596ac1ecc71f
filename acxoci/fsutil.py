"""Filesystem helpers shared by every layer: atomic writes (temp file in the same folder,
fsync, rename), so a crash never leaves a half-written file under the final name."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from acxoci.errors import InvalidInput, NotFound


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write `data` to `path` atomically with the given permission bits."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def read_bytes(path: Path, what: str, *, limit: int | None = None) -> bytes:
    """The bytes of `path`; NotFound or InvalidInput naming the file (and `what` it should be)
    instead of a bare OSError, and InvalidInput when the file exceeds `limit` bytes."""
    try:
        with Path(path).open("rb") as fh:
            data = fh.read() if limit is None else fh.read(limit + 1)
    except FileNotFoundError as exc:
        raise NotFound(f"{what} not found", where=str(path)) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {what}: {exc.strerror or exc}", where=str(path)) from exc
    if limit is not None and len(data) > limit:
        raise InvalidInput(f"{what} exceeds {limit} bytes", where=str(path))
    return data
