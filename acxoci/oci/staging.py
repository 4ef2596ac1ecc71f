"""A blob fetched into a staging file that survives an interrupted run: the next fetch of the
same digest into the same folder hashes the bytes already there and continues with a Range
request, so a pull cut off mid-blob (Ctrl-C, a stalled or vanished registry) does not start
again from zero. The staging file is proven only as a whole: the final digest covers the old
prefix and the new bytes alike; on any lie (digest, size) it is removed.

Kept after a failure only when the failure is transient (host_failure) or an interrupt and some
bytes arrived (a caller running several blobs may widen this with `keep`, e.g. for a transfer
cancelled because another blob failed transiently); removed in every other case. A staging file
that already holds the whole blob (an earlier run fetched it, then another blob failed) is
hashed once more and, when it proves the digest, used without a request."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acxoci.errors import TransientError
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.digest import DISK_FULL_ERRNOS, VerifyingReader, new_hasher
from acxoci.oci.errors import DiskFull, SizeMismatch, TruncatedBody
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.target import Target

HASH_BUFFER = 4 * 1024 * 1024


def staging_path(directory: Path, desc: Descriptor) -> Path:
    """Where the blob `desc` is staged inside `directory` (a hidden, digest-named file)."""
    alg, _, hexpart = desc.digest.partition(":")
    return directory / f".acx-{alg}-{hexpart[:32]}.partial"


def _prefix_hash(path: Path, desc: Descriptor, have: int) -> object:
    h = new_hasher(desc.digest)
    buf = memoryview(bytearray(HASH_BUFFER))
    left = have
    with path.open("rb", buffering=0) as fh:
        while left > 0:
            n = fh.readinto(buf[: min(len(buf), left)])
            if not n:
                break
            h.update(buf[:n])
            left -= n
    return h


def _open_own(path: Path) -> int:
    """Open (or create) the staging file, or -1 when the name is a symlink, a hard link, or not a
    regular file: writing through it would truncate or change a file outside the folder."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno in DISK_FULL_ERRNOS:
            raise
        return -1
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        return -1
    os.set_blocking(fd, True)
    return fd


def resumable(exc: BaseException) -> bool:
    """Failures after which a partial staging file is kept for the next run to resume."""
    return isinstance(exc, TransientError | KeyboardInterrupt)


def fetch_staged(
    target: Target,
    desc: Descriptor,
    path: Path,
    progress: Callable[[int], None] | None = None,
    keep: Callable[[BaseException], bool] = resumable,
) -> Path:
    """Make a staging file hold exactly the verified bytes of `desc` and return its path: `path`
    itself, resuming a partial left there by an earlier run (registry targets), or — when another
    process holds `path` — a fresh unique file beside it (no resume). After a failure the partial
    file stays only when `keep(failure)` says so."""
    fd = _open_own(path)
    try:
        if fd < 0:
            raise OSError("not a staging file of ours")
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another pull of this blob is running, or the name is not ours: a fresh file
        if fd >= 0:
            os.close(fd)
        fd, name = tempfile.mkstemp(prefix=path.name + ".", dir=str(path.parent))
        path = Path(name)
    fh = os.fdopen(fd, "r+b")
    have = os.fstat(fd).st_size
    reader: VerifyingReader
    ok = kept = False
    try:
        if have == desc.size and desc.size > 0:  # a whole blob from an earlier run: prove it again
            h: Any = _prefix_hash(path, desc, have)
            if f"{desc.digest.split(':', 1)[0]}:{h.hexdigest()}" == desc.digest:
                if progress is not None:
                    progress(have)
                ok = True
                return path
        resumed: VerifyingReader | None = None
        if 0 < have < desc.size and isinstance(target, RegistryTarget):
            with contextlib.suppress(TruncatedBody):  # the registry cannot serve a Range: start over
                resumed = target.fetch_from(desc, have, _prefix_hash(path, desc, have))
        if resumed is None:
            have = 0
        reader = resumed if resumed is not None else target.fetch(desc)
        with reader:
            fh.seek(have)
            fh.truncate(have)
            written = reader.copy_to(fh, progress=progress)
            if not reader.verified or have + written != desc.size:
                # fail closed: a reader read elsewhere proves bytes this file does not hold
                raise SizeMismatch(f"staged {have + written} of {desc.size} bytes of {desc.digest}",
                                   where=str(path))
        fh.flush()
        ok = True
        return path
    except OSError as exc:
        if exc.errno in DISK_FULL_ERRNOS:
            raise DiskFull("writing failed: no space left", where=str(path)) from None
        kept = keep(exc)
        raise
    except BaseException as exc:
        kept = keep(exc)  # the next fetch resumes from here
        raise
    finally:
        if not ok and not (kept and os.fstat(fd).st_size > 0):
            path.unlink(missing_ok=True)
        fh.close()  # also releases the lock
