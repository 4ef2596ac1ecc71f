"""The local install store: installed items appear by ONE atomic rename of a complete staging
folder, so nothing half-installed is ever visible, even after SIGKILL.

Layout (docs/install.md):

    STORE/.lock                      filelock; every writer (install, uninstall) holds it
    STORE/items/<name>@<hex>/        one installed item: its files and record.json
    STORE/staging/<random>/          an install in progress (ignored by readers)
    STORE/trash/<random>/            an item being removed (ignored by readers)

Readers (`list`, `show`) take no lock: they see `items/` only, and for each name the item whose
record has the highest `seq`. Stale staging and trash folders (left by a killed writer) are removed
by the next writer that commits or uninstalls. A refusal removes only what it created.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from filelock import FileLock, Timeout

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.typed import decode_as, opt
from acxoci.documents.install_record import InstallRecordDoc
from acxoci.errors import AcxError, Blocked, InvalidInput, NotFound, RefusedByPolicy, UsageError
from acxoci.fsutil import open_regular, read_bytes
from acxoci.install.semver import is_downgrade

RECORD = "record.json"
RECORD_SCHEMA_FILE = "acx.install-record-1.schema.json"
MAX_RECORD_BYTES = 16 * 1024 * 1024
ENV_STORE = "ACX_STORE"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)*$")
_HEX_RE = re.compile(r"^[0-9a-f]{64}$")
LOCK_TIMEOUT = 600.0


def default_root() -> Path:
    """`$ACX_STORE`, else `<platformdirs user data dir>/acxoci/store`."""
    env = os.environ.get(ENV_STORE)
    if env:
        return Path(env)
    return Path(platformdirs.user_data_dir("acxoci")) / "store"


def check_name(name: str) -> str:
    """An install name: lowercase path segments (`acx/sample`); UsageError otherwise."""
    if not NAME_RE.fullmatch(name) or len(name) > 200:
        raise UsageError(f"invalid install name {name!r}", hint="lowercase letters, digits, . _ - and /")
    return name


def slug(name: str) -> str:
    """The folder-safe form of a name (`/` → `+`, injective because names cannot contain `+`)."""
    return name.replace("/", "+")


def file_digest(path: Path) -> str:
    """`sha256:<hex>` of a regular file, streamed (a FIFO, device or symlink is InvalidInput)."""
    h = hashlib.sha256()
    with open_regular(path, "installed file", nofollow=True) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


MAX_ITEM_FILES = 10_000
MAX_ITEM_DEPTH = 16


def walk_files(folder: Path) -> list[tuple[str, Path]]:
    """Every entry below `folder` as (relative POSIX path, path), iteratively and bounded, never
    following a symlink (a symlink or special file is returned for the caller to refuse)."""
    out: list[tuple[str, Path]] = []
    stack: list[tuple[Path, str, int]] = [(folder, "", 0)]
    while stack:
        d, prefix, depth = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            raise InvalidInput(f"install folder unreadable: {exc.strerror}", where=str(d)) from exc
        for e in entries:
            rel = f"{prefix}{e.name}"
            if e.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_ITEM_DEPTH:
                    raise InvalidInput(f"install folder nested deeper than {MAX_ITEM_DEPTH}", where=e.path)
                stack.append((Path(e.path), rel + "/", depth + 1))
            else:
                out.append((rel, Path(e.path)))
            if len(out) > MAX_ITEM_FILES:
                raise InvalidInput(f"more than {MAX_ITEM_FILES} files in an install folder",
                                   where=str(folder))
    return sorted(out)


def list_files(folder: Path) -> list[dict[str, Any]]:
    """Every regular file under `folder` except the record: relative path, digest, size (sorted)."""
    out: list[dict[str, Any]] = []
    for rel, p in walk_files(folder):
        if p.is_symlink() or not p.is_file():
            raise InvalidInput("symlink or special file in an install folder", where=str(p))
        if rel != RECORD:
            out.append({"path": rel, "digest": file_digest(p), "size": p.stat().st_size})
    return out


def record_files_problems(item: InstalledItem) -> list[str]:
    """Files missing, changed or added since install, against the record's file list (the record
    itself is the reference); a record that does not decode is itself the problem."""
    if item.doc is None:
        return [f"{RECORD}: {item.problem}"]
    recorded = {f.path: f.digest for f in item.doc.files}
    try:
        present = {rel: p for rel, p in walk_files(item.path) if rel != RECORD}
    except InvalidInput as exc:
        return [exc.one_line()]
    problems: list[str] = []
    for rel, want in recorded.items():
        p = present.get(rel)
        if p is None or p.is_symlink() or not p.is_file():
            problems.append(f"{rel}: missing")
            continue
        got = file_digest(p)
        if got != want:
            problems.append(f"{rel}: digest changed (recorded {want}, now {got})")
    problems += [f"{rel}: not in the install record" for rel in present if rel not in recorded]
    return problems


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_json_atomic(path: Path, doc: Any) -> None:
    """Write JSON through a temp file in the same folder, fsync, then os.replace."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fsync_tree(folder: Path) -> None:
    for p in folder.rglob("*"):
        if p.is_file():
            with p.open("rb") as fh:
                os.fsync(fh.fileno())
    for d in [folder, *[p for p in folder.rglob("*") if p.is_dir()]]:
        _fsync_dir(d)


@dataclass(frozen=True)
class InstalledItem:
    """One installed item: its name, the manifest digest it was installed from, its folder, and its
    record as written (`record`, shown verbatim) and decoded (`doc`; None when record.json does not
    decode or breaks its schema, `problem` says why, and every judgement of the item fails)."""

    name: str
    digest: str
    path: Path
    record: dict[str, Any]
    doc: InstallRecordDoc | None
    problem: str | None = None

    @property
    def seq(self) -> int:
        return self.doc.seq if self.doc is not None else 0

    @property
    def kind(self) -> str | None:
        """The recorded kind (cartridge, workflow, agent-graph); None for a record that does not decode."""
        return self.doc.kind if self.doc is not None else None

    def summary(self) -> dict[str, Any]:
        """The short form `installed list` shows."""
        d = self.doc
        if d is None:
            return {"name": self.name, "kind": None, "digest": self.digest, "problem": self.problem}
        return {"name": self.name, "kind": d.kind, "digest": self.digest, "reference": d.reference,
                "installedAt": d.installed_at, "trust": opt(d.trust), "publisherId": opt(d.publisher_id)}


def decode_record(rec: Any) -> InstallRecordDoc:
    """An install record checked against its schema and decoded (InvalidInput naming the first
    problems otherwise)."""
    from acxoci.jsonschemas import schema_errors

    errors = schema_errors(RECORD_SCHEMA_FILE, rec)
    if errors:
        raise InvalidInput("install record is invalid: " + "; ".join(errors[:3]), where=RECORD)
    try:
        return decode_as(rec, InstallRecordDoc, document=RECORD)
    except AttestError as exc:
        raise InvalidInput(str(exc), where=RECORD) from exc


def _read_item(folder: Path) -> InstalledItem | None:
    """The item in `folder`, or None when the folder is not a complete item (no record, or one that
    does not name the folder). A record that names it but does not decode is an item whose `doc`
    is None: it is listed, and judged as failed, never skipped."""
    try:
        data = read_bytes(folder / RECORD, "install record", limit=MAX_RECORD_BYTES, nofollow=True)
        rec = loads_strict(data)
    except (AcxError, AttestError):  # a FIFO, a link, a huge or broken record: not a complete item
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("name"), str) \
            or not isinstance(rec.get("digest"), str):
        return None
    if folder.name != f"{slug(rec['name'])}@{rec['digest'].removeprefix('sha256:')}":
        return None
    try:
        doc: InstallRecordDoc | None = decode_record(rec)
        problem = None
    except InvalidInput as exc:
        doc, problem = None, exc.message
    return InstalledItem(rec["name"], rec["digest"], folder, rec, doc, problem)


class Store:
    """A local install store rooted at `root` (created on the first successful install)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()

    @property
    def items_dir(self) -> Path:
        return self.root / "items"

    @property
    def staging_dir(self) -> Path:
        return self.root / "staging"

    @property
    def trash_dir(self) -> Path:
        return self.root / "trash"

    @property
    def lock_path(self) -> Path:
        return self.root / ".lock"

    # ---- readers (no lock) -------------------------------------------------------------

    def all_items(self) -> list[InstalledItem]:
        """Every complete item folder, including ones superseded but not yet cleaned."""
        if not self.items_dir.is_dir():
            return []
        out = []
        for folder in sorted(self.items_dir.iterdir()):
            if folder.is_dir() and not folder.name.startswith("."):
                item = _read_item(folder)
                if item is not None:
                    out.append(item)
        return out

    def list(self) -> list[InstalledItem]:
        """The current item of every name (highest seq), sorted by name."""
        best: dict[str, InstalledItem] = {}
        for item in self.all_items():
            cur = best.get(item.name)
            if cur is None or item.seq > cur.seq:
                best[item.name] = item
        return [best[k] for k in sorted(best)]

    def get(self, name: str) -> InstalledItem | None:
        """The current item named `name`, or None."""
        for item in self.list():
            if item.name == name:
                return item
        return None

    def require(self, name: str) -> InstalledItem:
        """The current item named `name`, or NotFound."""
        item = self.get(name)
        if item is None:
            raise NotFound(f"nothing is installed under the name {name!r}", where=str(self.root))
        return item

    # ---- writers (under the lock) ------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, timeout: float = LOCK_TIMEOUT) -> Iterator[Transaction]:
        """Take the store lock for one install or uninstall. If the transaction commits nothing,
        everything it created (staging folders, and the store itself when it was new) is removed."""
        created = list(reversed([p for p in [self.root, *self.root.parents] if not p.exists()]))
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"cannot create the install store: {exc}", where=str(self.root)) from exc
        for _ in range(5):
            lock_new = not self.lock_path.exists()
            lock = FileLock(str(self.lock_path))
            try:
                lock.acquire(timeout=timeout)
            except Timeout as exc:
                raise Blocked(f"the store is locked by another install for over {timeout:.0f} s",
                              where=str(self.lock_path)) from exc
            if self.lock_path.exists():  # a writer that changed nothing may have unlinked it
                break
            lock.release()
        else:  # pragma: no cover - needs a pathological race
            raise Blocked("could not take the store lock", where=str(self.lock_path))
        txn = Transaction(self, created_lock=lock_new, created_dirs=created)
        try:
            yield txn
        finally:
            txn._rollback_uncommitted()
            txn._remove_own_traces()  # while still holding the lock, so no waiter keeps a stale inode
            lock.release()
            txn._remove_created_dirs()


class Transaction:
    """The writer's view of a store while it holds the lock."""

    def __init__(self, store: Store, *, created_lock: bool, created_dirs: list[Path]) -> None:
        self.store = store
        self._created_lock = created_lock
        self._created_dirs = created_dirs
        self._staged: list[Path] = []
        self._staging_parent_new = False
        self.changed = False

    def stage(self) -> Path:
        """A fresh, empty staging folder inside the store (same filesystem as items/)."""
        parent = self.store.staging_dir
        if not parent.exists():
            parent.mkdir()
            self._staging_parent_new = True
        path = parent / uuid.uuid4().hex
        path.mkdir()
        self._staged.append(path)
        return path

    def next_seq(self) -> int:
        """One more than the highest seq of any complete item."""
        return 1 + max((i.seq for i in self.store.all_items()), default=0)

    def clean_stale(self) -> list[str]:
        """Remove staging and trash folders left by killed writers (only while holding the lock)."""
        removed = []
        for parent in (self.store.staging_dir, self.store.trash_dir):
            if parent.is_dir():
                for p in parent.iterdir():
                    if p not in self._staged:
                        shutil.rmtree(p, ignore_errors=True)
                        removed.append(p.relative_to(self.store.root).as_posix())
        items = self.store.items_dir
        if items.is_dir():  # leftovers of interrupted os.replace temp files
            for p in items.iterdir():
                if p.name.startswith("."):
                    shutil.rmtree(p, ignore_errors=True)
        return removed

    def _to_trash(self, folder: Path) -> None:
        self.store.trash_dir.mkdir(exist_ok=True)
        dest = self.store.trash_dir / uuid.uuid4().hex
        os.rename(folder, dest)
        shutil.rmtree(dest, ignore_errors=True)

    def commit(self, staged: Path, record: dict[str, Any], *, allow_downgrade: bool = False,
               after_rename: Callable[[InstalledItem], None] | None = None) -> InstalledItem:
        """Write the record into `staged`, fsync, and install it with one rename; then drop the
        superseded items of the same name. The previous item stays current until the rename.
        Refuses to replace a newer `artifactVersion` of the same name unless `allow_downgrade`.
        `after_rename(item)` runs before the superseded items go; if it fails, the new item is
        removed again and the previous one stays current (install --activate: both or neither)."""
        if staged not in self._staged:
            raise UsageError("commit of a folder that was not staged by this transaction")
        doc = decode_record(record)
        name, digest = check_name(doc.name), doc.digest
        hexpart = digest.removeprefix("sha256:")
        if not _HEX_RE.fullmatch(hexpart):
            raise InvalidInput(f"bad digest {digest!r} in the install record")
        current = self.store.get(name)
        old_version = opt(current.doc.artifact_version) if current is not None and current.doc else None
        new_version = opt(doc.artifact_version)
        if not allow_downgrade and is_downgrade(new_version, old_version):
            raise RefusedByPolicy(f"{name} {old_version} is installed; {new_version} is older",
                                  hint="pass --allow-downgrade to install it anyway")
        self.clean_stale()
        write_json_atomic(staged / RECORD, record)
        _fsync_tree(staged)
        self.store.items_dir.mkdir(exist_ok=True)
        final = self.store.items_dir / f"{slug(name)}@{hexpart}"
        if final.exists():  # the same digest left superseded by an interrupted cleanup
            self._to_trash(final)
        os.rename(staged, final)
        _fsync_dir(self.store.items_dir)
        self._staged.remove(staged)
        self.changed = True
        if after_rename is not None:
            try:
                after_rename(InstalledItem(name, digest, final, record, doc))
            except BaseException:  # both or neither: the new item goes, the previous one stays current
                self._to_trash(final)
                raise
        for item in self.store.all_items():
            if item.name == name and item.path != final:
                self._to_trash(item.path)
        return InstalledItem(name, digest, final, record, doc)

    def tidy(self, name: str) -> list[str]:
        """Remove what killed writers left behind (stale staging/trash, superseded folders of `name`);
        nothing visible changes. Used when an install turns out to be a no-op."""
        removed = self.clean_stale()
        current = self.store.get(name)
        for item in self.store.all_items():
            if current is not None and item.name == name and item.path != current.path:
                self._to_trash(item.path)
                removed.append(item.path.name)
        self.changed = self.changed or bool(removed)
        return removed

    def uninstall(self, name: str) -> list[InstalledItem]:
        """Remove every item of `name`: superseded ones first, the current one last, each by a rename
        into trash so no reader sees a partial folder."""
        items = sorted((i for i in self.store.all_items() if i.name == name), key=lambda i: i.seq)
        if not items:
            raise NotFound(f"nothing is installed under the name {name!r}", where=str(self.store.root))
        self.clean_stale()
        for item in items:
            self._to_trash(item.path)
        self.changed = True
        return items

    def discard(self, staged: Path) -> None:
        """Remove a staging folder of this transaction."""
        shutil.rmtree(staged, ignore_errors=True)
        if staged in self._staged:
            self._staged.remove(staged)

    def _rollback_uncommitted(self) -> None:
        for staged in list(self._staged):
            self.discard(staged)
        if self._staging_parent_new and not self.changed:
            with contextlib.suppress(OSError):
                self.store.staging_dir.rmdir()

    def _remove_own_traces(self) -> None:
        """A transaction that changed nothing removes the lock file if it created it."""
        if not self.changed and self._created_lock:
            with contextlib.suppress(OSError):
                self.store.lock_path.unlink()

    def _remove_created_dirs(self) -> None:
        """... and the store folders it created (so a refusal on a new store leaves no trace)."""
        if self.changed:
            return
        for d in reversed(self._created_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()
