"""Read an agent package directory (the builder's input): manifest.json, the knowledge .md files,
memory-records.json, and optional skills/, harness and policy documents the author supplies.

A skill is its whole folder (`skills/<name>/SKILL.md` plus `scripts/`, `references/`, `assets/`,
`REFERENCE.md`, ...), as Claude Code and the agentskills.io runtimes load it: every file is read,
or the package is refused naming the file that cannot be packed (a symlink, a special file, a
non-portable name, a case-insensitive collision, a folder past the bounds)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.cartridge.constants import ARTIFACT_ID_RE, PATH_SEGMENT_RE
from acxoci.documents.package_manifest import PackageManifestDoc
from acxoci.errors import InvalidInput, NotFound
from acxoci.fsutil import read_bytes

KNOWLEDGE_FILES = (
    "IDENTITY",
    "SKILLS",
    "MEMORY",
    "CAREER",
    "EQUIPMENT",
    "LEARNING_PATH",
    "EXCHANGE",
    "STYLE",
)
SEMVER_RE = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
MAX_PACKAGE_FILE = 16 * 1024 * 1024
#: Optional documents an author may supply instead of acxoci's defaults.
HARNESS_FILE = "harness-requirements.json"
POLICY_FILE = "loop-context-policy.json"
CAPABILITIES_FILE = "capabilities.json"
SKILL_FILE = "SKILL.md"
#: Bounds on the skill folders, the same as activation's (acxoci/install/activate.py), so a build
#: never writes skills a host refuses to activate: files, bytes, path segments below skills/.
MAX_SKILL_FILES = 2000
MAX_SKILL_BYTES = 64 * 1024 * 1024
MAX_SKILL_DEPTH = 16


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill folder: its path inside the folder, bytes, and whether it is executable."""

    rel: str
    data: bytes
    executable: bool = False


@dataclass(frozen=True)
class SkillFolder:
    """A skill folder: its name, SKILL.md, and every other file in it (sorted by path)."""

    name: str
    skill_md: bytes
    resources: tuple[SkillFile, ...] = ()


@dataclass(frozen=True)
class AgentPackage:
    """Everything the builder reads from a package directory (no defaults applied yet)."""

    root: Path
    manifest: Mapping[str, Any]
    knowledge: tuple[tuple[str, bytes], ...]
    memory_records: tuple[Mapping[str, Any], ...]
    skills: tuple[SkillFolder, ...] = ()
    harness: bytes | None = None
    policy: bytes | None = None
    capabilities: tuple[Mapping[str, Any], ...] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def text(self, key: str, default: str = "") -> str:
        """A string field of manifest.json (or `default`)."""
        v = self.manifest.get(key)
        return v if isinstance(v, str) else default

    @property
    def artifact_id(self) -> str:
        return self.text("artifactId") or slug(self.text("name", "agent"))

    @property
    def artifact_version(self) -> str:
        return self.text("artifactVersion", "1.0.0")


def slug(text: str) -> str:
    """Lowercase `[a-z0-9-]` slug (used for artifact ids and role-named skill directories)."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "agent"


def _read(path: Path) -> bytes:
    if path.is_symlink():
        raise InvalidInput("symbolic links are not read from an agent package", where=str(path))
    return read_bytes(path, "agent package file", limit=MAX_PACKAGE_FILE, nofollow=True)


def _json(path: Path) -> Any:
    try:
        return loads_strict(_read(path))
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc


def _skill_entry_problem(path: Path, st: os.stat_result) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link (not packed: replace it with the file)"
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return "is not a regular file or folder"
    if not PATH_SEGMENT_RE.fullmatch(path.name):
        return f"name {path.name!r} is not portable ([A-Za-z0-9][A-Za-z0-9._-]{{0,127}}): rename or remove it"
    return None


def read_skills(sdir: Path) -> tuple[SkillFolder, ...]:
    """Every skill folder under `sdir`, whole: an iterative, bounded walk that never follows a
    symlink. InvalidInput names the first file that cannot be packed."""
    if sdir.is_symlink():
        raise InvalidInput("symbolic links are not read from an agent package", where=str(sdir))
    if not sdir.is_dir():
        return ()
    out: list[SkillFolder] = []
    count = total = entries = 0
    folded: dict[str, str] = {}
    for top in sorted(sdir.iterdir(), key=lambda p: p.name):
        st = top.lstat()
        problem = _skill_entry_problem(top, st)
        if problem is None and not stat.S_ISDIR(st.st_mode):
            problem = "is a file directly under skills/ (a skill is a folder with a SKILL.md)"
        if problem is not None:
            raise InvalidInput(f"skill entry {problem}", where=str(top))
        files: list[SkillFile] = []
        stack: list[tuple[Path, tuple[str, ...]]] = [(top, ())]
        while stack:
            folder, parts = stack.pop()
            for entry in sorted(folder.iterdir(), key=lambda p: p.name):
                st = entry.lstat()
                problem = _skill_entry_problem(entry, st)
                if problem is not None:
                    raise InvalidInput(f"skill entry {problem}", where=str(entry))
                rel = (*parts, entry.name)
                entries += 1
                if len(rel) + 1 > MAX_SKILL_DEPTH or entries > 2 * MAX_SKILL_FILES:
                    raise InvalidInput(
                        f"skill folders deeper than {MAX_SKILL_DEPTH} levels or with more than "
                        f"{2 * MAX_SKILL_FILES} entries are not packed",
                        where=str(entry),
                    )
                key = "/".join((top.name, *rel)).casefold()
                if key in folded:
                    raise InvalidInput(
                        f"skill entry collides with {folded[key]!r} on a case-insensitive file system",
                        where=str(entry),
                    )
                folded[key] = str(entry)
                if stat.S_ISDIR(st.st_mode):
                    stack.append((entry, rel))
                    continue
                count += 1
                total += st.st_size
                if count > MAX_SKILL_FILES or total > MAX_SKILL_BYTES:
                    raise InvalidInput(
                        f"the skills exceed {MAX_SKILL_FILES} files or {MAX_SKILL_BYTES} bytes",
                        where=str(entry),
                    )
                files.append(SkillFile("/".join(rel), _read(entry), bool(st.st_mode & 0o111)))
        by_rel = {f.rel: f for f in files}
        skill_md = by_rel.pop(SKILL_FILE, None)
        if skill_md is None:
            raise InvalidInput(f"skill folder has no {SKILL_FILE}", where=str(top))
        out.append(SkillFolder(top.name, skill_md.data, tuple(sorted(by_rel.values(), key=lambda f: f.rel))))
    return tuple(out)


def read_package(root: Path) -> AgentPackage:
    """Read and check a package directory; raises NotFound / InvalidInput naming the file and field."""
    if not root.is_dir():
        raise NotFound(f"agent package directory not found: {root}")
    mpath = root / "manifest.json"
    if not mpath.is_file():
        raise InvalidInput("agent package has no manifest.json", where=str(root))
    manifest = _json(mpath)
    if not isinstance(manifest, dict):
        raise InvalidInput("manifest.json is not a JSON object", where=str(mpath))
    try:  # the members the builder reads have their types (a wrong one is named, never defaulted)
        decode_as(manifest, PackageManifestDoc, document="manifest.json")
    except DocumentTypeError as exc:
        raise InvalidInput(str(exc), where=str(mpath), details={"pointer": exc.pointer}) from exc
    for key in ("name", "role"):
        if not isinstance(manifest.get(key), str) or not manifest[key].strip():
            raise InvalidInput(
                f"manifest.json field {key!r} must be a non-empty string", where=f"{mpath}#{key}"
            )
    pkg_notes: list[str] = []
    knowledge = tuple((n, _read(root / f"{n}.md")) for n in KNOWLEDGE_FILES if (root / f"{n}.md").is_file())
    records: list[Mapping[str, Any]] = []
    rpath = root / "memory-records.json"
    if rpath.is_file():
        doc = _json(rpath)
        if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
            raise InvalidInput("memory-records.json must be an array of objects", where=str(rpath))
        records = doc
    else:
        pkg_notes.append("no memory-records.json: empty memory baseline")
    skills = read_skills(root / "skills")
    caps = None
    cpath = root / CAPABILITIES_FILE
    if cpath.is_file():
        cdoc = _json(cpath)
        if not isinstance(cdoc, list) or not all(isinstance(c, dict) for c in cdoc):
            raise InvalidInput("capabilities.json must be an array of objects", where=str(cpath))
        caps = tuple(cdoc)
    pkg = AgentPackage(
        root=root,
        manifest=manifest,
        knowledge=knowledge,
        memory_records=tuple(records),
        skills=skills,
        harness=_read(root / HARNESS_FILE) if (root / HARNESS_FILE).is_file() else None,
        policy=_read(root / POLICY_FILE) if (root / POLICY_FILE).is_file() else None,
        capabilities=caps,
        notes=tuple(pkg_notes),
    )
    if not ARTIFACT_ID_RE.fullmatch(pkg.artifact_id):
        raise InvalidInput(
            f"artifactId {pkg.artifact_id!r} must match {ARTIFACT_ID_RE.pattern}", where=f"{mpath}#artifactId"
        )
    if not SEMVER_RE.fullmatch(pkg.artifact_version):
        raise InvalidInput(
            f"artifactVersion {pkg.artifact_version!r} is not SemVer 2.0.0", where=f"{mpath}#artifactVersion"
        )
    return pkg
