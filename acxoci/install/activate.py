"""Activation: materialise an installed cartridge's `rom/skills/**` as Agent Skills in a host's
skills folder, from the install record's verified bytes only, and undo exactly that.

Order of work (docs/activate.md):

1. the item's files are re-hashed against its install record (a tampered store file refuses);
   the cartridge is copied out of the store while hashing, and only that copy is read;
2. the copy's ROM is re-verified and must be the ROM recorded at install (same digest, same key);
3. every `rom/skills/` entry is checked by `plan_skill_files` (pure): portable relative path, no
   `..`, no absolute path, no NUL/backslash/drive letter, a regular-file mode (never a symlink),
   covered by a ROM object whose oid is the entry's bytes, bounded count and size;
4. the files are written into a hidden staging folder inside the skills folder (same filesystem),
   fsynced, and each skill folder is moved into place with one rename; a folder already there that
   this activation did not write is never replaced without `force`;
5. a manifest of every written file (path, digest, size, mode) goes into the store
   (`STORE/activations/`), so `deactivate` removes exactly those files and nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UnsetType

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.typed import DocumentTypeError, decode_as, opt
from acxoci.documents.activation import ActivationDoc, ActivationDocFilesItem
from acxoci.errors import AcxError, Blocked, InvalidInput, NotFound, RefusedByPolicy, Tampered, UsageError
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.install.hosts import HOSTS
from acxoci.install.store import InstalledItem, Store, Transaction, file_digest, slug, write_json_atomic
from acxoci.oci.target import RemoteOptions

ACTIVATION_SCHEMA = "acx.activation/1"
ACTIVATION_SCHEMA_FILE = "acx.activation-1.schema.json"
SKILLS_PREFIX = "rom/skills/"
SKILL_FILE = "SKILL.md"
CARTRIDGE_FILE = "cartridge.acx"
MAX_FILES = 2000
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 16
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
STAGING_PREFIX = ".acx-staging-"
OLD_PREFIX = ".acx-old-"
_SEGMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SKILL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def skills_root(
    host: str | None, *, home: Path, project: Path | None = None, skills_dir: Path | None = None
) -> Path:
    """The absolute skills folder for `host` (user scope under `home`, or project scope), or
    `skills_dir` when given. A host without a skills folder for the scope is refused."""
    if skills_dir is not None:
        if project is not None:
            raise UsageError("--skills-dir and --project exclude each other")
        return Path(os.path.abspath(skills_dir))
    if host is None:
        raise UsageError("name a host (--host claude|codex|cursor) or a folder (--skills-dir DIR)")
    folders = HOSTS.get(host)
    if folders is None:
        raise UsageError(f"unknown host {host!r}", hint="claude, codex or cursor; or --skills-dir DIR")
    rel = folders.project if project is not None else folders.user
    if rel is None:
        scope = "project" if project is not None else "user"
        raise UsageError(
            f"host {host!r} has no {scope}-scope skills folder",
            hint="pass --skills-dir DIR if you know where it reads skills",
        )
    base = project if project is not None else home
    return Path(os.path.abspath(base)) / rel


# ---- pure: which files an activation writes ----------------------------------------------------


@dataclass(frozen=True)
class SkillFile:
    """One file to write: its path relative to the skills folder, bytes, and permission bits."""

    path: str
    data: bytes
    mode: int

    @property
    def skill(self) -> str:
        return self.path.split("/", 1)[0]

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


def path_problem(rel: str) -> str | None:
    """Why `rel` (a path under the skills folder) is unsafe to write, or None."""
    if not rel:
        return "empty path"
    if "\x00" in rel:
        return "contains NUL"
    if "\\" in rel:
        return "contains a backslash"
    if rel.startswith("/") or re.match(r"^[A-Za-z]:", rel):
        return "is absolute"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel):
        return "contains a control character"
    segments = rel.split("/")
    if len(segments) < 2:
        return "is not inside a skill folder (<skill>/<file>)"
    if len(segments) > MAX_DEPTH:
        return f"is deeper than {MAX_DEPTH} segments"
    for s in segments:
        if s in ("", ".", ".."):
            return "contains an empty, '.' or '..' segment"
        if ":" in s:
            return "contains a ':' (drive letter or stream name)"
        if not _SEGMENT_RE.fullmatch(s):
            return f"segment {s!r} is not portable ([A-Za-z0-9][A-Za-z0-9._-]{{0,127}})"
    if not _SKILL_NAME_RE.fullmatch(segments[0]):
        return f"skill name {segments[0]!r} is not portable"
    return None


def _file_mode(mode: int | None, name: str) -> int | None:
    """Permission bits to write for a sqlar mode; None for a directory entry; refuse others."""
    if mode is None:
        return 0o644
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFDIR:
        return None
    if kind not in (0, stat.S_IFREG):
        what = "a symlink" if kind == stat.S_IFLNK else f"not a regular file (type {kind:o})"
        raise InvalidInput(f"skill entry {name!r} is {what}; refusing to activate", where=name)
    return 0o755 if mode & 0o111 else 0o644


def plan_skill_files(
    entries: Iterable[tuple[str, int | None, bytes]], rom_oids: dict[str, str]
) -> list[SkillFile]:
    """From `(sqlar name, mode, bytes)` entries, the skill files to write, every one checked:
    safe path, regular file, covered by a ROM object with the same bytes, each skill has a
    SKILL.md, no two paths equal ignoring case, bounded count and size. InvalidInput otherwise."""
    out: list[SkillFile] = []
    total = 0
    seen: dict[str, str] = {}
    for name, mode, data in entries:
        if not name.startswith(SKILLS_PREFIX):
            continue
        rel = name[len(SKILLS_PREFIX) :]
        bits = _file_mode(mode, name)
        if bits is None:
            continue
        problem = path_problem(rel)
        if problem is not None:
            raise InvalidInput(f"skill entry {name!r} {problem}; refusing to activate", where=name)
        want = rom_oids.get(name)
        got = "sha256:" + hashlib.sha256(data).hexdigest()
        if want is None:
            raise Tampered(
                f"skill entry {name!r} is not covered by the signed ROM; refusing to activate", where=name
            )
        if want != got:
            raise Tampered(f"skill entry {name!r} differs from its ROM object", where=name)
        folded = rel.casefold()
        if folded in seen:
            raise InvalidInput(
                f"skill entries {seen[folded]!r} and {rel!r} collide on a case-insensitive file system",
                where=name,
            )
        seen[folded] = rel
        total += len(data)
        if len(out) >= MAX_FILES or total > MAX_TOTAL_BYTES:
            raise InvalidInput(f"the skills exceed {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes", where=name)
        out.append(SkillFile(rel, data, bits))
    paths = {f.path for f in out}
    for f in out:  # a file must not also be the folder of another file
        parts = f.path.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in paths:
                raise InvalidInput(f"skill entry {f.path!r} sits below a file", where=f.path)
    skills = sorted({f.skill for f in out})
    for s in skills:
        if f"{s}/{SKILL_FILE}" not in paths:
            raise InvalidInput(f"skill folder {s!r} has no {SKILL_FILE}", where=SKILLS_PREFIX + s)
    return sorted(out, key=lambda f: f.path)


# ---- the store side: manifests -----------------------------------------------------------------


def activations_dir(store: Store) -> Path:
    return store.root / "activations"


def manifest_path(store: Store, name: str, root: Path) -> Path:
    """One manifest per (install name, skills folder)."""
    key = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return activations_dir(store) / f"{slug(name)}@{key}.json"


def decode_manifest(raw: Any) -> ActivationDoc:
    """An activation manifest checked against its schema, decoded into its model, and its paths
    re-checked (a corrupt manifest cannot point outside its skills folder); InvalidInput listing
    the first problems otherwise."""
    from acxoci.jsonschemas import schema_errors

    errors = schema_errors(ACTIVATION_SCHEMA_FILE, raw)
    if errors:
        raise InvalidInput("activation manifest invalid: " + "; ".join(errors[:5]))
    doc = decode_as(raw, ActivationDoc, document="activation manifest")
    problems = [] if os.path.isabs(doc.root) else ["root is not an absolute path"]
    bad = [s for s in doc.skills if not _SKILL_NAME_RE.fullmatch(s)]
    if bad:
        problems.append(f"skills[] invalid: {bad[0][:80]!r}")
    problems += [f"files[] path {f.path[:200]!r} unsafe or outside its skills" for f in doc.files
                 if path_problem(f.path) is not None or f.path.split("/", 1)[0] not in doc.skills]
    if problems:
        raise InvalidInput("activation manifest invalid: " + "; ".join(problems[:5]))
    return doc


@dataclass(frozen=True)
class Activation:
    """A manifest of one activation read from the store, decoded into its model."""

    path: Path
    doc: ActivationDoc

    @property
    def name(self) -> str:
        return self.doc.name

    @property
    def root(self) -> Path:
        return Path(self.doc.root)

    @property
    def skills(self) -> list[str]:
        return list(self.doc.skills)

    @property
    def files(self) -> list[ActivationDocFilesItem]:
        return list(self.doc.files)

    @property
    def host(self) -> str | None:
        return opt(self.doc.host)

    @property
    def digest(self) -> str | None:
        return opt(self.doc.digest)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "host": self.host,
            "root": self.doc.root,
            "digest": self.digest,
            "skills": self.skills,
            "fileCount": len(self.files),
            "activatedAt": opt(self.doc.activated_at),
        }


def read_activation(path: Path) -> Activation:
    """Parse and check one manifest (paths re-checked, so a corrupt manifest cannot point outside
    its skills folder)."""
    from acxoci.fsutil import read_bytes

    data = read_bytes(path, "activation manifest", limit=MAX_MANIFEST_BYTES, nofollow=True)
    try:
        doc = loads_strict(data)
    except AttestError as exc:
        raise InvalidInput(f"activation manifest is not valid JSON: {exc}", where=str(path)) from exc
    try:
        return Activation(path, decode_manifest(doc))
    except InvalidInput as exc:
        raise InvalidInput(exc.message, where=str(path)) from exc
    except DocumentTypeError as exc:
        raise InvalidInput(f"activation manifest invalid: {exc}", where=str(path)) from exc


def _manifest_files(store: Store, name: str | None) -> list[Path]:
    folder = activations_dir(store)
    if not folder.is_dir():
        return []
    prefix = f"{slug(name)}@" if name is not None else ""
    return [p for p in sorted(folder.iterdir())[:MAX_FILES]
            if p.suffix == ".json" and not p.name.startswith(".") and p.name.startswith(prefix)]


def activations(store: Store, name: str | None = None) -> list[Activation]:
    """Every activation manifest (of `name`: only its own files are read), sorted by path; a bad
    manifest raises InvalidInput naming it."""
    out = [read_activation(p) for p in _manifest_files(store, name)]
    return [a for a in out if name is None or a.name == name]


def scan_activations(store: Store) -> tuple[list[Activation], list[str]]:
    """Every readable activation manifest, and one problem line for each that is not (a bad
    manifest of one item never stops the others from being judged or deactivated)."""
    good: list[Activation] = []
    bad: list[str] = []
    for p in _manifest_files(store, None):
        try:
            good.append(read_activation(p))
        except AcxError as exc:
            bad.append(f"{p.name}: {exc.one_line()}")
    return good, bad


# ---- I/O: reading the verified bytes -----------------------------------------------------------


def _copy_verified(src: Path, dest: Path, want: str) -> None:
    """Copy `src` to `dest` hashing as it goes; Tampered unless the copy hashes to `want`."""
    h = hashlib.sha256()
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(src, flags)
    except OSError as exc:
        raise Tampered(f"installed cartridge unreadable: {exc.strerror}", where=str(src)) from exc
    with os.fdopen(fd, "rb") as fh, dest.open("wb") as out:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise Tampered("installed cartridge is not a regular file", where=str(src))
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            out.write(chunk)
    if "sha256:" + h.hexdigest() != want:
        raise Tampered(
            "installed cartridge differs from its install record; refusing to activate",
            where=str(src),
            hint="uninstall and install it again",
        )


def read_judged_skills(item: InstalledItem, store: Store, now: datetime, *, policy_file: Path | None = None,
                       remote: RemoteOptions | None = None) -> list[SkillFile]:
    """The skill files of an installed cartridge, read only from a private copy of its bytes, proven
    equal to the record and accepted NOW by the one acceptance decision (signer under today's trust
    registries, level not revoked, release not withdrawn): a record is never proof."""
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.install.reverify import policy_now, verify_item

    if item.doc is None:
        raise Tampered(f"install record does not decode: {item.problem}", where=str(item.path))
    if item.doc.kind != "cartridge":
        raise UsageError(f"{item.name} is a {item.doc.kind}, not a cartridge: it has no skills")
    recorded = {f.path: f.digest for f in item.doc.files}
    want = recorded.get(CARTRIDGE_FILE)
    if want is None or want != opt(item.doc.content_digest):
        raise Tampered("install record does not pin the cartridge bytes", where=str(item.path))
    policy = policy_now(item, policy_file, now)
    with tempfile.TemporaryDirectory(prefix="acx-activate-") as tmp:
        copy = Path(tmp) / CARTRIDGE_FILE
        _copy_verified(item.path / CARTRIDGE_FILE, copy, want)
        verdict = verify_item(item, policy, now, store=store, remote=remote, content=copy)
        if not verdict.files_ok:
            raise Tampered("installed item changed since install: " + "; ".join(verdict.problems[:5]),
                           where=str(item.path), hint="uninstall and install it again")
        if not verdict.ok:
            raise RefusedByPolicy(f"{item.name} is not accepted by its policy now: "
                                  + "; ".join(verdict.problems[:5]) + "; refusing to activate",
                                  where=str(item.path), hint="`acx installed verify` shows every check",
                                  details={"checks": verdict.to_json().get("checks", [])})
        with open_cartridge(copy) as cart:
            rom = {o.source_ref: o.oid for o in cart.objects() if o.zone == "rom" and o.kind == "sqlar"}
            infos = [i for i in cart.sqlar_infos() if i.name.startswith(SKILLS_PREFIX)]
            if len(infos) > MAX_FILES:
                raise InvalidInput(f"more than {MAX_FILES} skill entries", where=str(item.path))
            entries = []
            for info in infos:
                data = cart.sqlar_read(info.name) if stat.S_IFMT(info.mode or 0) != stat.S_IFDIR else b""
                entries.append((info.name, info.mode, data or b""))
    return plan_skill_files(entries, rom)


# ---- I/O: writing into the host folder ---------------------------------------------------------


def _lexists(p: Path) -> bool:
    return os.path.lexists(p)


def _missing_levels(root: Path) -> int:
    """How many folders, from `root` upwards, do not exist yet (what mkdir -p will create)."""
    n, p = 0, root
    while not _lexists(p) and p.parent != p and n < 64:
        n, p = n + 1, p.parent
    return n


def _check_root(root: Path) -> None:
    """The skills folder must be a real directory (or not exist yet)."""
    if _lexists(root):
        st = os.lstat(root)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise InvalidInput("the skills folder is a symlink or not a folder; refusing", where=str(root))


def _write_file(path: Path, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, mode)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


LEFTOVER_AGE = 3600.0


def _clean_leftovers(root: Path) -> None:
    """Remove staging and replaced folders an interrupted activation left in `root` (only ours, by
    prefix, and only when older than an hour, so a concurrent activation is never disturbed)."""
    import time

    try:
        entries = list(os.scandir(root))[:MAX_FILES]
    except OSError:
        return
    for e in entries:
        if e.name.startswith((STAGING_PREFIX, OLD_PREFIX)) and e.is_dir(follow_symlinks=False):
            with contextlib.suppress(OSError):
                if time.time() - e.stat(follow_symlinks=False).st_mtime > LEFTOVER_AGE:
                    shutil.rmtree(e.path, ignore_errors=True)


def _remove_tree(path: Path) -> None:
    """Remove a folder or a file/symlink (never following a symlink)."""
    if os.path.islink(path) or not os.path.isdir(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class ActivationResult:
    """What an activation wrote."""

    name: str
    host: str | None
    root: Path
    skills: tuple[str, ...]
    files: tuple[dict[str, Any], ...]
    replaced: tuple[str, ...]
    manifest: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "host": self.host,
            "root": str(self.root),
            "skills": list(self.skills),
            "files": list(self.files),
            "replaced": list(self.replaced),
            "manifest": str(self.manifest),
        }


def _iso(now: datetime) -> str:
    return now.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def activate(
    store: Store, name: str, root: Path, *, host: str | None, now: datetime, force: bool = False,
    policy_file: Path | None = None, remote: RemoteOptions | None = None,
) -> ActivationResult:
    """Write `name`'s skills into `root` (see the module docstring); Blocked when a skill folder of
    another origin is in the way and `force` is not set. A file-system failure is InvalidInput."""
    try:
        with store.transaction() as txn:
            return activate_in(txn, store.require(name), root, host=host, now=now, force=force,
                               policy_file=policy_file, remote=remote)
    except OSError as exc:
        raise InvalidInput(
            f"cannot write the skills folder: {exc.strerror or exc}", where=str(exc.filename or root)
        ) from exc


def activate_in(
    txn: Transaction, item: InstalledItem, root: Path, *, host: str | None, now: datetime, force: bool,
    policy_file: Path | None = None, remote: RemoteOptions | None = None,
) -> ActivationResult:
    """`activate` inside a store transaction the caller holds (install --activate holds its own)."""
    store, name = txn.store, item.name
    files = read_judged_skills(item, store, now, policy_file=policy_file, remote=remote)
    if not files:
        raise NotFound(f"{name} has no skills (no rom/skills/<skill>/SKILL.md)", where=str(item.path))
    _check_root(root)
    mpath = manifest_path(store, name, root)
    previous = read_activation(mpath) if mpath.exists() else None
    ours = set(previous.skills) if previous is not None else set()
    skills = sorted({f.skill for f in files})
    dirty = _dirty_skills(previous) if previous is not None else set()
    in_the_way = [s for s in skills if _lexists(root / s) and (s not in ours or s in dirty)]
    if in_the_way and not force:
        raise Blocked(
            f"skill folder(s) of another origin exist: {', '.join(in_the_way)}",
            where=str(root),
            hint="remove them, or pass --force to replace them",
        )
    created = _missing_levels(root)
    if previous is not None:
        created = max(created, _levels(previous))
    root.mkdir(parents=True, exist_ok=True)
    _check_root(root)
    _clean_leftovers(root)
    written = tuple(
        {"path": f.path, "digest": f.digest, "size": len(f.data), "mode": f"{f.mode:o}"} for f in files
    )
    doc = {
        "schemaVersion": ACTIVATION_SCHEMA,
        "name": name,
        "digest": item.digest,
        "romDigest": opt(item.doc.rom_digest) if item.doc is not None else None,
        "host": host,
        "root": str(root),
        "skills": skills,
        "files": list(written),
        "createdLevels": created,
        "activatedAt": _iso(now),
    }
    previous_bytes = (read_bytes(mpath, "activation manifest", limit=MAX_MANIFEST_BYTES, nofollow=True)
                      if mpath.exists() else None)
    staging = root / f"{STAGING_PREFIX}{uuid.uuid4().hex}"
    staging.mkdir(mode=0o700)
    done: list[tuple[str, Path | None]] = []
    try:
        for f in files:
            dest = staging.joinpath(*f.path.split("/"))
            dest.parent.mkdir(parents=True, exist_ok=True)
            _write_file(dest, f.data, f.mode)
        for d in [staging, *sorted(p for p in staging.rglob("*") if p.is_dir())]:
            os.chmod(d, 0o755)
            _fsync_dir(d)
        # the manifest first: whenever a written file is visible, the store says so
        activations_dir(store).mkdir(exist_ok=True)
        write_json_atomic(mpath, doc)
        txn.changed = True
        for s in skills:
            final = root / s
            old: Path | None = None
            if _lexists(final):
                old = root / f"{OLD_PREFIX}{uuid.uuid4().hex}"
                os.rename(final, old)
            os.rename(staging / s, final)
            done.append((s, old))
        _fsync_dir(root)
    except BaseException:
        for s, old in reversed(done):  # put back what was there before
            _remove_tree(root / s)
            if old is not None:
                os.rename(old, root / s)
        shutil.rmtree(staging, ignore_errors=True)
        if previous_bytes is None:
            mpath.unlink(missing_ok=True)
        else:
            atomic_write(mpath, previous_bytes)
        raise
    shutil.rmtree(staging, ignore_errors=True)
    for _s, old in done:
        if old is not None:
            _remove_tree(old)
    if previous is not None:  # skills this name wrote before and no longer has
        gone = [s for s in previous.skills if s not in skills]
        _remove_recorded(previous, only=set(gone), force=False)
    replaced = tuple(s for s in in_the_way)
    return ActivationResult(name, host, root, tuple(skills), written, replaced, mpath)


# ---- deactivation and checking -----------------------------------------------------------------


def file_state(root: Path, entry: ActivationDocFilesItem) -> str:
    """`ok`, `missing`, `changed` or `not-a-file` for one recorded file (symlinks never followed)."""
    p = root.joinpath(*entry.path.split("/"))
    parent = root
    for seg in entry.path.split("/")[:-1]:
        parent = parent / seg
        if os.path.islink(parent):
            return "not-a-file"
    if not _lexists(p):
        return "missing"
    st = os.lstat(p)
    if not stat.S_ISREG(st.st_mode):
        return "not-a-file"
    return "ok" if file_digest(p) == entry.digest else "changed"


def _file_issues(act: Activation) -> list[tuple[str, str]]:
    """(skill, problem) for every recorded file missing or edited and every file added since."""
    out: list[tuple[str, str]] = []
    recorded = set()
    for entry in act.files:
        recorded.add(entry.path)
        state = file_state(act.root, entry)
        if state != "ok":
            out.append((entry.path.split("/", 1)[0], f"{entry.path}: {state}"))
    for s in act.skills:
        folder = act.root / s
        if os.path.islink(folder) or not folder.is_dir():
            continue
        for count, p in enumerate(sorted(_walk(folder))):
            if count >= MAX_FILES:
                out.append((s, f"{s}: more than {MAX_FILES} entries"))
                break
            rel = p.relative_to(act.root).as_posix()
            if rel not in recorded and (p.is_symlink() or not p.is_dir()):
                out.append((s, f"{rel}: not written by the activation"))
    return out


def _dirty_skills(act: Activation) -> set[str]:
    """Skills of an earlier activation whose folder was edited or added to since (not ours any more)."""
    return {skill for skill, _ in _file_issues(act)}


def activation_problems(act: Activation, item: InstalledItem | None) -> list[str]:
    """Activated files missing, edited, replaced or added since activation, and an activation of
    another digest than the one installed now."""
    where = f"activated ({act.host or 'custom'}) {act.root}"
    problems: list[str] = []
    if item is None:
        problems.append(f"{where}: the item is no longer installed")
    elif act.digest != item.digest:
        problems.append(f"{where}: activated from {act.digest}, installed is {item.digest}")
    problems += [f"{where}/{msg}" for _skill, msg in _file_issues(act)]
    return problems


def _walk(folder: Path) -> Iterable[Path]:
    """Every entry below `folder`, iteratively, never following symlinks, depth-capped."""
    stack = [(folder, 0)]
    seen = 0
    while stack:
        d, depth = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            seen += 1
            if seen > MAX_FILES + 1:
                return
            p = Path(e.path)
            yield p
            if e.is_dir(follow_symlinks=False) and depth < MAX_DEPTH:
                stack.append((p, depth + 1))


def _no_link_below(root: Path, rel: str) -> bool:
    """True when no component of `rel` under `root` (nor `root`) is a symlink."""
    p = root
    if os.path.islink(p):
        return False
    for seg in rel.split("/"):
        p = p / seg
        if os.path.islink(p):
            return False
    return True


def _remove_recorded(act: Activation, *, only: set[str] | None, force: bool) -> tuple[list[str], list[str]]:
    """Remove the recorded files (of the skills in `only`, if given) that are unchanged (or all
    regular ones with `force`), then the folders left empty. Returns (removed, kept)."""
    removed: list[str] = []
    kept: list[str] = []
    for entry in act.files:
        rel = entry.path
        if only is not None and rel.split("/", 1)[0] not in only:
            continue
        state = file_state(act.root, entry)
        if state == "ok" or (force and state == "changed"):
            os.unlink(act.root.joinpath(*rel.split("/")))
            removed.append(rel)
        elif state != "missing":
            kept.append(rel)
    dirs = set()
    for entry in act.files:
        parts = entry.path.split("/")
        if only is not None and parts[0] not in only:
            continue
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    for d in sorted(dirs, key=lambda x: x.count("/"), reverse=True):
        p = act.root.joinpath(*d.split("/"))
        if _no_link_below(act.root, d) and os.path.isdir(p):
            with contextlib.suppress(OSError):
                p.rmdir()  # only when empty: files we did not write stay, and so does their folder
    return removed, kept


@dataclass(frozen=True)
class DeactivationResult:
    """What a deactivation removed (and, with --force, what it removed despite edits)."""

    name: str
    roots: tuple[str, ...]
    removed: tuple[str, ...]
    kept: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "roots": list(self.roots),
            "removed": list(self.removed),
            "kept": list(self.kept),
        }


def deactivate(
    store: Store, name: str, *, root: Path | None = None, force: bool = False
) -> DeactivationResult:
    """Remove exactly the files `name`'s activations wrote (in `root` only, when given). An edited
    or replaced file refuses (Blocked, nothing removed) unless `force`; files the activation did not
    write are never removed."""
    try:
        return _deactivate(store, name, root=root, force=force)
    except OSError as exc:
        raise InvalidInput(
            f"cannot remove activated files: {exc.strerror or exc}", where=str(exc.filename or store.root)
        ) from exc


def _deactivate(store: Store, name: str, *, root: Path | None, force: bool) -> DeactivationResult:
    with store.transaction() as txn:
        acts = [a for a in activations(store, name) if root is None or a.root == root]
        for a in acts:
            _check_root(a.root)  # a skills folder swapped for a symlink is not followed
        if not acts:
            raise NotFound(
                f"{name} is not activated" + (f" in {root}" if root else ""), where=str(store.root)
            )
        if not force:
            dirty = [
                f"{a.root}/{e.path}: {s}"
                for a in acts
                for e in a.files
                if (s := file_state(a.root, e)) in ("changed", "not-a-file")
            ]
            if dirty:
                raise Blocked(
                    "activated files were changed since activation: " + "; ".join(dirty[:5]),
                    hint="inspect them; --force removes the edited files too",
                )
        removed: list[str] = []
        kept: list[str] = []
        for a in acts:
            r, k = _remove_recorded(a, only=None, force=force)
            removed += [f"{a.root}/{x}" for x in r]
            kept += [f"{a.root}/{x}" for x in k]
            levels = _levels(a)
            sharing = [o for o in scan_activations(store)[0] if o.root == a.root and o.path != a.path]
            if sharing:  # another activation still uses the folder: it inherits what acx created
                heir = sharing[0]
                if _levels(heir) < levels:
                    write_json_atomic(heir.path, {**msgspec.to_builtins(heir.doc), "createdLevels": levels})
                levels = 0
            p = a.root
            for _ in range(levels):
                if os.path.islink(p) or not os.path.isdir(p):
                    break
                try:
                    p.rmdir()  # the folders this activation created, each only when empty
                except OSError:
                    break
                p = p.parent
            a.path.unlink()
        txn.changed = True
        return DeactivationResult(name, tuple(str(a.root) for a in acts), tuple(removed), tuple(kept))


def _levels(act: Activation) -> int:
    """How many folders, from the skills folder up, the activation created (at most 64)."""
    levels = act.doc.created_levels
    return 0 if isinstance(levels, UnsetType) else min(max(levels, 0), 64)

