"""OCI image-layout 1.0 store (`oci-layout`, `index.json`, `blobs/<alg>/<hex>`), readable and
writable interchangeably with `oras --oci-layout`.

Like oras, every pushed manifest gets an `index.json` entry: tagged ones carry
`org.opencontainers.image.ref.name`, the rest (referrers, children) are untagged entries.
Referrers are found by scanning the listed manifests' `subject`. index.json updates are
serialised with a file lock and written atomically; blobs go to a temp file, are verified,
then renamed, so a reader never sees an unproven blob.

A layout is untrusted input, like a registry (docs/decisions/0012):
- every file read is a regular file inside the layout's root (no FIFO, device, directory, or
  symlink leading out), opened without blocking, and bounded by its kind's cap before a byte
  is read (index.json and manifests 4 MiB; a blob must be exactly its descriptor's size);
- reads keep the network's deadline (`RemoteOptions.deadline` plus size / `min_rate`);
- writes never follow a symlink: every folder below the root is opened with O_NOFOLLOW and
  files are created relative to it, so nothing is written outside the root;
- `ref.name` annotations are held to the image-layout grammar; a failure is a typed error."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.errors import DISK_SAID_NO, InvalidInput
from acxoci.fsutil import atomic_write
from acxoci.oci.descriptor import (
    ANNOTATION_REF_NAME,
    MANIFEST_LIMIT,
    MANIFEST_TYPES,
    OCI_INDEX,
    Descriptor,
    is_digest,
    parse_manifest,
    referrer_entry,
)
from acxoci.oci.digest import Readable, VerifyingReader
from acxoci.oci.errors import (
    BlobNotFound,
    DeadlineExceeded,
    DiskFull,
    LimitExceeded,
    MalformedManifest,
    ManifestNotFound,
    ManifestTooLarge,
    SizeMismatch,
    Unsupported,
)
from acxoci.oci.listing import (
    SOURCE_INDEX,
    SOURCE_TAG,
    ReferrerListing,
    Source,
    check_candidates,
    index_entries,
    listed_candidates,
)
from acxoci.oci.reference import fallback_tag, valid_tag
from acxoci.oci.settings import RemoteOptions, active_options

LAYOUT_FILE = "oci-layout"
LAYOUT_VERSION = {"imageLayoutVersion": "1.0.0"}
INDEX_LIMIT = MANIFEST_LIMIT
"""index.json is an image index: the same 4 MiB cap as any index (about 15,000 entries)."""
SCAN_LIMIT = 64 * 1024 * 1024
"""Most manifest bytes one scan of index.json for subjects reads (LimitExceeded past it)."""
LOCK_TIMEOUT = 60.0
MAX_REFERRERS = 1000

# image-layout spec: ref ::= component ("/" component)*; component ::= alphanum (separator alphanum)*
_REF_COMPONENT = r"[A-Za-z0-9]+(?:(?:[-._:@+]|--)[A-Za-z0-9]+)*"
_REF_NAME_RE = re.compile(rf"{_REF_COMPONENT}(?:/{_REF_COMPONENT})*")


def valid_ref_name(name: str) -> bool:
    """True for an `org.opencontainers.image.ref.name` of the image-layout grammar (a tag, or a
    fuller reference such as `library/alpine:3`), at most 255 characters."""
    return len(name) <= 255 and bool(_REF_NAME_RE.fullmatch(name))


class _Timed:
    """A file read under a deadline: each read after `at` (monotonic) is DeadlineExceeded."""

    def __init__(self, fh: Any, at: float, seconds: float, where: str) -> None:
        self._fh, self._at, self._seconds, self._where = fh, at, seconds, where

    def _check(self) -> None:
        if time.monotonic() > self._at:
            raise DeadlineExceeded(f"{self._where} was not read within {round(self._seconds, 1):g}s",
                                   where=self._where, hint="the layout's storage is too slow or stalled")

    def read(self, n: int = -1, /) -> bytes:
        self._check()
        return bytes(self._fh.read(n))

    def readinto(self, buf: memoryview, /) -> int:
        self._check()
        return int(self._fh.readinto(buf) or 0)

    def close(self) -> None:
        self._fh.close()


@contextlib.contextmanager
def _writing(where: str) -> Iterator[None]:
    """A write to the layout whose OS failure is typed: a full disk (or quota, file-size limit,
    read-only filesystem) is DiskFull, anything else (a folder where a file goes, no permission)
    InvalidInput naming the layout."""
    try:
        yield
    except OSError as exc:
        if exc.errno in DISK_SAID_NO:
            raise DiskFull(f"writing failed: {exc.strerror}", where=where,
                           hint="free disk space or raise the file-size limit, then retry") from None
        raise InvalidInput(f"cannot write into the layout: {exc.strerror or exc}", where=where) from None


class LayoutStore:
    """One OCI image layout directory as a Target (see target.py for the contract)."""

    def __init__(self, root: Path, *, create: bool = True, options: RemoteOptions | None = None) -> None:
        self.root = Path(root)
        self._create = create
        self._options = options or active_options()
        self._subjects: tuple[tuple[int, int, int, int], dict[str, list[Descriptor]]] | None = None

    # -- helpers ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"oci-layout:{self.root}"

    def _blob_path(self, digest: str) -> Path:
        if not is_digest(digest):
            raise MalformedManifest(f"invalid digest {digest[:80]!r}", where=self.name)
        alg, _, hexpart = digest.partition(":")
        return self.root / "blobs" / alg / hexpart

    def _deadline(self, size: int) -> float:
        return self._options.deadline + size / max(1, self._options.min_rate)

    def _open(self, path: Path, cap: int | None, what: str) -> tuple[int, int]:
        """Open `path` for reading: (fd, size). FileNotFoundError if absent; InvalidInput if it is
        not a regular file inside the root; ManifestTooLarge past `cap` (nothing read)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                raise FileNotFoundError(str(path)) from None
            raise InvalidInput(f"cannot open the {what}: {exc.strerror}", where=str(path)) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InvalidInput(f"the {what} is not a regular file", where=str(path))
            self._check_inside(fd, path, st, what)
            if cap is not None and st.st_size > cap:
                raise ManifestTooLarge(f"the {what} has {st.st_size} bytes, over the {cap}-byte cap",
                                       where=str(path))
        except BaseException:
            os.close(fd)
            raise
        return fd, st.st_size

    def _check_inside(self, fd: int, path: Path, st: os.stat_result, what: str) -> None:
        """The opened file lies inside the layout's root (a symlink may point within it)."""
        root = os.path.realpath(self.root)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc: the path's resolution, proven to be the same inode
            real = os.path.realpath(path)
            with contextlib.suppress(OSError):
                again = os.stat(real)
                if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
                    real = ""
        if not real or os.path.commonpath([root, real]) != root:
            raise InvalidInput(f"the {what} leads out of the layout (a symlink)", where=str(path))

    def _read_small(self, path: Path, cap: int, what: str) -> bytes:
        """A whole small file (index.json), bounded before reading and under the deadline."""
        fd, size = self._open(path, cap, what)
        seconds = self._deadline(size)
        with os.fdopen(fd, "rb") as fh:
            data = _Timed(fh, time.monotonic() + seconds, seconds, str(path)).read(cap + 1)
        if len(data) > cap:
            raise ManifestTooLarge(f"the {what} grew past the {cap}-byte cap while read", where=str(path))
        return data

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """The index lock: `.index.json.lock` opened without following a symlink (and never
        truncated), held with flock for at most LOCK_TIMEOUT seconds of waiting."""
        path = self.root / ".index.json.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise InvalidInput(f"cannot open the index lock: {exc.strerror}", where=str(path)) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InvalidInput("the index lock is not a regular file", where=str(path))
            give_up = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > give_up:
                        raise DeadlineExceeded("another writer held the layout's index lock too long",
                                               where=str(path)) from None
                    time.sleep(0.01)
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _dir(self, *parts: str) -> Iterator[int]:
        """An fd of the folder root/parts..., each part created if missing and never a symlink."""
        with _writing(str(self.root)):
            fds = [os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        try:
            for part in parts:
                with _writing(str(self.root)), contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fds[-1])
                try:
                    fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                       dir_fd=fds[-1]))
                except OSError as exc:
                    raise InvalidInput(
                        f"{'/'.join(parts)} is not a folder of the layout (a symlink or a file): "
                        f"{exc.strerror}; nothing is written outside the layout", where=str(self.root)
                    ) from None
            yield fds[-1]
        finally:
            for fd in fds:
                os.close(fd)

    def _ensure(self) -> None:
        if (self.root / LAYOUT_FILE).exists():
            return
        if not self._create:
            raise ManifestNotFound("not an OCI layout (no oci-layout file)", where=str(self.root))
        with _writing(str(self.root)):
            self.root.mkdir(parents=True, exist_ok=True)
        with self._dir("blobs", "sha256"):
            pass
        with _writing(str(self.root)):
            atomic_write(self.root / LAYOUT_FILE, json.dumps(LAYOUT_VERSION).encode())
        if not (self.root / "index.json").exists():
            self._write_index({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []})

    def _read_index(self) -> dict[str, Any]:
        path = self.root / "index.json"
        try:
            data = self._read_small(path, INDEX_LIMIT, "index.json")
        except FileNotFoundError:
            if not (self.root / LAYOUT_FILE).exists():
                raise ManifestNotFound("not an OCI layout (no index.json)", where=str(self.root)) from None
            return {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
        try:
            obj = loads_strict(data, max_bytes=INDEX_LIMIT)
        except MalformedError as exc:
            raise MalformedManifest(str(exc), where=str(path)) from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("manifests", []), list):
            raise MalformedManifest("index.json is not an image index", where=str(path))
        obj.setdefault("manifests", [])
        for i, entry in enumerate(obj["manifests"]):
            d = Descriptor.from_json(entry, f"{path}.manifests[{i}]")
            name = d.annotations.get(ANNOTATION_REF_NAME)
            if name is not None and not valid_ref_name(name):
                raise MalformedManifest(f"ref.name {name[:80]!r} is not a reference name",
                                        where=f"{path}.manifests[{i}]")
        return obj

    def _write_index(self, index: dict[str, Any]) -> None:
        data = _index_bytes(index)
        if len(data) > INDEX_LIMIT:
            raise LimitExceeded(f"index.json would pass the {INDEX_LIMIT}-byte cap", where=self.name)
        with _writing(str(self.root / "index.json")):
            atomic_write(self.root / "index.json", data)
        self._subjects = None

    def _update_index(self, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]) -> None:
        """Read-modify-write index.json under the file lock; `change` returns the new list or None."""
        self._ensure()
        with self._lock():
            index = self._read_index()
            new = change(list(index["manifests"]))
            if new is None:
                return
            index["manifests"] = new
            self._write_index(index)

    def entries(self) -> list[Descriptor]:
        """All index.json entries (tagged and untagged)."""
        index = self._read_index()
        return [
            Descriptor.from_json(e, f"index.json.manifests[{i}]") for i, e in enumerate(index["manifests"])
        ]

    def _manifest_bytes(self, desc: Descriptor) -> bytes:
        """A manifest's verified bytes: refused past 4 MiB before anything is opened."""
        if desc.size > MANIFEST_LIMIT:
            raise ManifestTooLarge(f"manifest of {desc.size} bytes exceeds the 4 MiB limit",
                                   where=f"{self.name}@{desc.digest}")
        with self.fetch(desc) as reader:
            return reader.read_all()

    # -- Target ----------------------------------------------------------------------------
    def resolve(self, reference: str) -> Descriptor:
        """Tag (ref.name) or digest → descriptor (from index.json, else from the blob itself)."""
        entries = self.entries()
        if is_digest(reference):
            for e in entries:
                if e.digest == reference:
                    return Descriptor(e.media_type, e.digest, e.size, e.artifact_type, e.annotations)
            try:
                fd, size = self._open(self._blob_path(reference), MANIFEST_LIMIT, "manifest")
            except FileNotFoundError:
                raise ManifestNotFound(
                    "no manifest with this digest in the layout", where=f"{self.name}@{reference}"
                ) from None
            os.close(fd)
            probe = Descriptor("application/octet-stream", reference, size)
            with self.fetch(probe) as reader:
                data = reader.read_all()
            m = parse_manifest(data, where=reference)
            return Descriptor(m.media_type, reference, len(data), m.artifact_type)
        found: Descriptor | None = None
        for e in entries:
            if e.annotations.get(ANNOTATION_REF_NAME) == reference:
                found = e
        if found is None:
            raise ManifestNotFound("tag not found", where=f"{self.name}:{reference}")
        return Descriptor(
            found.media_type,
            found.digest,
            found.size,
            found.artifact_type,
            {k: v for k, v in found.annotations.items() if k != ANNOTATION_REF_NAME},
        )

    def fetch(self, desc: Descriptor) -> VerifyingReader:
        """A verifying reader of the blob: a regular file inside the layout of exactly the
        descriptor's size (checked before reading), read under the deadline."""
        path = self._blob_path(desc.digest)
        where = f"{self.name}@{desc.digest}"
        if desc.media_type in MANIFEST_TYPES and desc.size > MANIFEST_LIMIT:
            raise ManifestTooLarge(f"manifest of {desc.size} bytes exceeds the 4 MiB limit", where=where)
        try:
            fd, size = self._open(path, None, "blob")
        except FileNotFoundError:
            raise BlobNotFound("blob not in the layout", where=where) from None
        if size != desc.size:
            os.close(fd)
            raise SizeMismatch(f"the layout's file has {size} bytes, the descriptor says {desc.size}",
                               where=where)
        fh = os.fdopen(fd, "rb")
        seconds = self._deadline(size)
        timed = _Timed(fh, time.monotonic() + seconds, seconds, where)
        return VerifyingReader(timed, desc, where=where, on_close=fh.close)

    def exists(self, desc: Descriptor) -> bool:
        path = self._blob_path(desc.digest)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == desc.size

    def push(self, desc: Descriptor, content: Readable) -> None:
        """Write the blob via a verified temp file; manifests are also listed in index.json."""
        self._ensure()
        if not self.exists(desc):
            if (
                isinstance(content, VerifyingReader)
                and content.desc.digest == desc.digest
                and content.desc.size == desc.size
            ):
                reader = content  # already verifying this descriptor: hash once, pipelined copy
            else:
                reader = VerifyingReader(content, desc, where=f"{self.name}@{desc.digest}")
            self._write_blob(desc, reader)
        if desc.media_type in MANIFEST_TYPES:
            m = parse_manifest(self._manifest_bytes(desc), media_type=desc.media_type,
                               where=f"{self.name}@{desc.digest}")
            entry = referrer_entry(desc, m).to_json()

            def add(entries: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
                if any(e.get("digest") == desc.digest for e in entries):
                    return None
                return [*entries, entry]

            self._update_index(add)

    def _write_blob(self, desc: Descriptor, reader: VerifyingReader) -> None:
        """Stream into a temp file created inside blobs/<alg>/ (no folder on the way is a
        symlink), then rename it to its digest once the reader proved it."""
        self._blob_path(desc.digest)  # a well-formed digest names the file
        alg, _, hexpart = desc.digest.partition(":")
        where = f"{self.name}@{desc.digest}"
        with self._dir("blobs", alg) as dfd:
            tmp = f".{hexpart[:16]}.{os.getpid()}.{time.monotonic_ns()}.part"
            with _writing(where):
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                             dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb") as fh:
                    reader.copy_to(fh)
                with _writing(where):
                    os.replace(tmp, hexpart, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                raise

    def tag(self, desc: Descriptor, tag: str) -> None:
        """Point `tag` at `desc` (moves it if it pointed elsewhere; the old manifest stays untagged)."""
        if not valid_tag(tag):
            raise MalformedManifest(f"invalid tag {tag[:80]!r}", where=self.name)
        if not self.exists(desc):
            raise ManifestNotFound("cannot tag a manifest that is not in the layout", where=desc.digest)
        m = parse_manifest(self._manifest_bytes(desc), media_type=desc.media_type,
                           where=f"{self.name}@{desc.digest}") if desc.media_type in MANIFEST_TYPES else None
        base = referrer_entry(desc, m).to_json() if m is not None else desc.plain().to_json()

        def retag(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            for e in entries:
                name = (e.get("annotations") or {}).get(ANNOTATION_REF_NAME)
                if name == tag or (name is None and e.get("digest") == desc.digest):
                    continue
                out.append(e)
            tagged = dict(base)
            tagged["annotations"] = {**(base.get("annotations") or {}), ANNOTATION_REF_NAME: tag}
            out.append(tagged)
            listed = {e.get("digest") for e in out}
            for e in entries:  # a manifest that lost its last tag stays listed, untagged
                if e.get("digest") not in listed:
                    ann = {k: v for k, v in (e.get("annotations") or {}).items() if k != ANNOTATION_REF_NAME}
                    kept = {k: v for k, v in e.items() if k != "annotations"}
                    if ann:
                        kept["annotations"] = ann
                    out.append(kept)
                    listed.add(e.get("digest"))
            return out

        self._update_index(retag)

    def tags(self) -> list[str]:
        names = {e.annotations.get(ANNOTATION_REF_NAME) for e in self.entries()}
        return sorted(n for n in names if n)

    def _subject_map(self, entries: list[Descriptor]) -> dict[str, list[Descriptor]]:
        """subject digest → the index.json entries whose manifest names it, from one scan per
        index.json state (its inode, size and times). Each manifest is read within the cap, the
        scan within SCAN_LIMIT bytes; an entry that cannot be read names no subject."""
        try:
            st = os.stat(self.root / "index.json")
            key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            key = (0, 0, 0, 0)
        if self._subjects is not None and self._subjects[0] == key:
            return self._subjects[1]
        out: dict[str, list[Descriptor]] = {}
        seen: set[str] = set()
        spent = 0
        for e in entries:
            if e.media_type not in MANIFEST_TYPES or e.digest in seen or e.size > MANIFEST_LIMIT:
                continue
            seen.add(e.digest)
            spent += e.size
            if spent > SCAN_LIMIT:
                raise LimitExceeded(f"index.json lists more than {SCAN_LIMIT} bytes of manifests",
                                    where=self.name)
            try:
                m = parse_manifest(self._manifest_bytes(e.plain()), media_type=e.media_type,
                                   where=f"{self.name}@{e.digest}")
            except (InvalidInput, BlobNotFound, SizeMismatch):
                continue  # unreadable: not a referrer of anything (a listing claiming it says so)
            if m.subject is not None:
                out.setdefault(m.subject.digest, []).append(e.plain())
        self._subjects = (key, out)
        return out

    def referrer_listing(self, desc: Descriptor) -> ReferrerListing:
        """The one listing (listing.py): the listed manifests whose subject is `desc` (as oras
        lists them), and the entries of a `sha256-<hex>` fallback tag if the layout carries one
        (skopeo copies do), each kept only when its manifest's subject is `desc`."""
        entries = self.entries()
        found: list[tuple[Descriptor, Source]] = [
            (e, SOURCE_INDEX) for e in self._subject_map(entries).get(desc.digest, [])]
        tagged, bad = listed_candidates(self._fallback_entries(desc, entries), SOURCE_TAG,
                                        f"{self.name}:{fallback_tag(desc.digest)}")
        return check_candidates(desc, found + tagged, self._manifest_bytes, where=self.name,
                                max_entries=MAX_REFERRERS, strays=bad)

    def referrers(self, desc: Descriptor, artifact_type: str | None = None) -> list[Descriptor]:
        """The referrers of `desc` (referrer_listing), of `artifact_type` as their manifests say."""
        return self.referrer_listing(desc).of_type(artifact_type)

    def _fallback_entries(self, subject: Descriptor, entries: list[Descriptor]) -> list[Any]:
        """The raw entries of a `sha256-<hex>` tag's index, if the layout has that tag."""
        tag = fallback_tag(subject.digest)
        found = [e for e in entries if e.annotations.get(ANNOTATION_REF_NAME) == tag]
        if not found or not self.exists(found[-1]):
            return []
        where = f"{self.name}:{tag}"
        listed = index_entries(self._manifest_bytes(found[-1].plain()), where)
        if len(listed) > MAX_REFERRERS:
            raise LimitExceeded(f"more than {MAX_REFERRERS} referrers listed", where=where)
        return listed

    def delete(self, desc: Descriptor) -> None:
        """Remove a manifest's index entries and its blob (blobs it references are left)."""
        if desc.media_type not in MANIFEST_TYPES:
            raise Unsupported("only manifests can be deleted from a layout", where=desc.digest)
        self._update_index(lambda entries: [e for e in entries if e.get("digest") != desc.digest])
        self._blob_path(desc.digest)
        alg, _, hexpart = desc.digest.partition(":")
        with self._dir("blobs", alg) as dfd, _writing(self.name), contextlib.suppress(FileNotFoundError):
            os.unlink(hexpart, dir_fd=dfd)


def _index_bytes(index: dict[str, Any]) -> bytes:
    return json.dumps(index, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
