"""Read an agent package directory (the builder's input): manifest.json, the knowledge .md files,
memory-records.json, and optional skills/, harness and policy documents the author supplies."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acxoci.cartridge.constants import ARTIFACT_ID_RE
from acxoci.errors import InvalidInput, NotFound
from attest.canonical import loads_strict
from attest.errors import MalformedError

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


@dataclass(frozen=True)
class AgentPackage:
    """Everything the builder reads from a package directory (no defaults applied yet)."""

    root: Path
    manifest: Mapping[str, Any]
    knowledge: tuple[tuple[str, bytes], ...]
    memory_records: tuple[Mapping[str, Any], ...]
    skills: tuple[tuple[str, bytes], ...] = ()
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
    size = path.stat().st_size
    if size > MAX_PACKAGE_FILE:
        raise InvalidInput(f"file of {size} bytes exceeds the {MAX_PACKAGE_FILE}-byte limit", where=str(path))
    return path.read_bytes()


def _json(path: Path) -> Any:
    try:
        return loads_strict(_read(path))
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc


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
    skills: list[tuple[str, bytes]] = []
    sdir = root / "skills"
    if sdir.is_dir():
        for d in sorted(p for p in sdir.iterdir() if p.is_dir()):
            f = d / "SKILL.md"
            if f.is_file():
                skills.append((d.name, _read(f)))
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
        skills=tuple(skills),
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
