"""Filesystem helpers shared by every layer: atomic writes (temp file in the same folder,
fsync, rename), so a crash never leaves a half-written file under the final name; and file
identities, so what was verified is provably the file that is then pushed or copied."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from acxoci.errors import InvalidInput, NotFound

# (device, inode, size, mtime, ctime): a rename or swap changes the inode, and any write, link
# or rename of the inode itself changes its ctime, which no unprivileged user can set back
FileIdentity = tuple[int, int, int, int, int]


def identity_of(st: os.stat_result) -> FileIdentity:
    """The identity of a stat result (see FileIdentity)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def file_identity(path: Path) -> FileIdentity:
    """The identity of the file at `path` (NotFound when it is absent)."""
    try:
        return identity_of(os.stat(path))
    except FileNotFoundError as exc:
        raise NotFound(f"no such file: {path}", where=str(path)) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror or exc}", where=str(path)) from exc


def require_unchanged(path: Path, identity: FileIdentity, *, doing: str) -> None:
    """Refuse when the file at `path` is no longer the one whose identity was taken (replaced,
    renamed, written or relinked since): the bytes checked would not be the bytes used."""
    if file_identity(path) != identity:
        raise InvalidInput(
            f"the file changed while {doing}; refusing it (nothing was published from it)",
            where=str(path),
        )


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write `data` to `path` atomically with the given permission bits."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here, not at the top: `acx cartridge verify` reads fsutil before it starts

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


def require_real_folders(root: Path, rel: str, what: str = "folder") -> None:
    """Every folder from `root` down to `rel`'s parent that exists is a real folder (no symlink, no
    file standing in the way), so a write below `root` cannot be led outside it. InvalidInput."""
    if root.is_symlink():
        raise InvalidInput(f"the {what} must not be a symlink", where=str(root))
    cur = root
    for seg in rel.split("/")[:-1]:
        cur = cur / seg
        try:
            st = cur.lstat()
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise InvalidInput(f"a symlink or file stands where a {what} should be", where=str(cur))


def require_own_folder(path: Path, what: str = "folder") -> None:
    """`path` is a real folder (not a symlink, not a file) owned by the user running us, so what we
    keep in it cannot be led elsewhere or planted by another user. NotFound or InvalidInput."""
    try:
        st = os.lstat(path)
    except FileNotFoundError as exc:
        raise NotFound(f"the {what} does not exist", where=str(path)) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot inspect the {what}: {exc.strerror or exc}", where=str(path)) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise InvalidInput(f"the {what} must be a real folder (a symlink or file stands there)",
                           where=str(path))
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise InvalidInput(f"the {what} belongs to user {st.st_uid}, not to this user ({os.geteuid()})",
                           where=str(path))


DEFAULT_READ_LIMIT = 64 * 1024 * 1024


def require_file(path: Path, what: str = "file") -> None:
    """NotFound when nothing is at `path`, InvalidInput when it is not a regular file (a folder,
    FIFO, socket or device): the check before a path is handed to a library that opens it itself."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError as exc:
        raise NotFound(f"{what} not found", where=str(path)) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {what}: {exc.strerror or exc}", where=str(path)) from exc
    if not stat.S_ISREG(mode):
        raise InvalidInput(f"{what} is not a regular file", where=str(path))


def open_regular(path: Path, what: str, *, nofollow: bool = False, append: bool = False) -> BinaryIO:
    """`path` opened for reading, refusing anything but a regular file before a byte is read: a
    FIFO, device or socket would block or never end (opened non-blocking, so opening cannot hang);
    with `nofollow`, a symlink is refused too. With `append`, it is opened unbuffered for reading
    and appending, created (0644) when absent. NotFound or InvalidInput naming the file."""
    flags = os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= (os.O_RDWR | os.O_APPEND | os.O_CREAT) if append else os.O_RDONLY
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError as exc:
        raise NotFound(f"{what} not found", where=str(path)) from exc
    except OSError as exc:
        if nofollow and exc.errno == errno.ELOOP:
            raise InvalidInput(f"{what} is a symbolic link (refused: it is not followed)",
                               where=str(path)) from exc
        raise InvalidInput(f"cannot {'write' if append else 'read'} {what}: {exc.strerror or exc}",
                           where=str(path)) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidInput(f"{what} is not a regular file", where=str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "a+b", buffering=0) if append else os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, what: str, *, limit: int | None = None, nofollow: bool = False) -> bytes:
    """The bytes of a regular file `path` (`open_regular`), at most `limit` bytes (default 64 MiB):
    more is InvalidInput naming the file; never a bare OSError."""
    cap = DEFAULT_READ_LIMIT if limit is None else limit
    with open_regular(Path(path), what, nofollow=nofollow) as fh:
        try:
            data = fh.read(cap + 1)
        except OSError as exc:
            raise InvalidInput(f"cannot read {what}: {exc.strerror or exc}", where=str(path)) from exc
    if len(data) > cap:
        raise InvalidInput(f"{what} exceeds {cap} bytes", where=str(path))
    return data


#: Bounds of a folder walk (roster folders, skill folders): deeper or larger trees are refused.
WALK_MAX_DEPTH = 32
WALK_MAX_ENTRIES = 100_000


def walk_files(
    root: Path, *, suffix: str = "", max_depth: int = WALK_MAX_DEPTH, max_entries: int = WALK_MAX_ENTRIES
) -> list[Path]:
    """The regular files below `root` whose name ends with `suffix`, in sorted path order. The walk
    is iterative (no recursion on the folder's depth), never follows a symlink, and refuses
    (InvalidInput naming the folder) a tree nested deeper than `max_depth` levels or holding more
    than `max_entries` entries, instead of walking without end."""
    out: list[Path] = []
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    seen = 0
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise InvalidInput(f"cannot list the folder: {exc.strerror or exc}", where=str(folder)) from exc
        seen += len(entries)
        if seen > max_entries:
            raise InvalidInput(f"more than {max_entries} entries below the folder", where=str(root))
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if depth + 1 > max_depth:
                    raise InvalidInput(f"folders nest deeper than {max_depth} levels", where=e.path)
                stack.append((Path(e.path), depth + 1))
            elif e.name.endswith(suffix) and e.is_file(follow_symlinks=False):
                out.append(Path(e.path))
    return sorted(out)
