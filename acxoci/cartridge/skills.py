"""Skills: SKILL.md files with YAML frontmatter (name, description, license, compatibility,
metadata.version) under `rom/skills/<name>/`, and the derived `acx_skill` index rows."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acxoci.errors import InvalidInput
from acxoci.yamldoc import load_yaml

SCHEMA_VERSION = "acx.skill/1"
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_FM_RE = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n?(.*)\Z", re.S)


@dataclass(frozen=True)
class Skill:
    """One skill ready to store: its sqlar path, bytes and index fields."""

    path: str
    data: bytes
    name: str
    description: str
    license: str | None
    compatibility: str | None
    version: str | None
    body_tokens: int
    #: The L3 inventory (SPEC §5.5): `{path: "skills/<name>/<file>", bytes, sha256}` per other file.
    resources: tuple[Mapping[str, Any], ...] = ()

    def index_row(self) -> tuple[Any, ...]:
        """The `acx_skill` row: (sqlar_path, name, description, license, compatibility, skill_version,
        body_tokens, content_sha256, resources, ext, schema_version)."""
        return (
            self.path,
            self.name,
            self.description,
            self.license,
            self.compatibility,
            self.version,
            self.body_tokens,
            hashlib.sha256(self.data).hexdigest(),
            json.dumps([dict(r) for r in self.resources], separators=(",", ":")),
            None,
            SCHEMA_VERSION,
        )


def parse_frontmatter(data: bytes, *, where: str) -> tuple[Mapping[str, Any], str]:
    """Split a SKILL.md into (frontmatter mapping, body); raise InvalidInput if it has none."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"SKILL.md is not UTF-8 (byte {exc.start})", where=where) from exc
    m = _FM_RE.match(text)
    if not m:
        raise InvalidInput("SKILL.md has no '---' YAML frontmatter", where=where)
    fm = load_yaml(m.group(1), what="SKILL.md frontmatter", where=where)
    if not isinstance(fm, dict):
        raise InvalidInput("SKILL.md frontmatter is not a mapping", where=where)
    return fm, m.group(2)


def estimate_tokens(text: str) -> int:
    """A model-independent token estimate: one token per 4 characters, rounded up."""
    return (len(text) + 3) // 4


def load_skill(dir_name: str, data: bytes) -> Skill:
    """Check a SKILL.md (name matches its directory, description present) and index it."""
    where = f"skills/{dir_name}/SKILL.md"
    fm, body = parse_frontmatter(data, where=where)
    name, desc = fm.get("name"), fm.get("description")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or len(name) > MAX_NAME:
        raise InvalidInput(
            f"frontmatter name {name!r} must match {NAME_RE.pattern} (max {MAX_NAME})", where=f"{where}#name"
        )
    if name != dir_name:
        raise InvalidInput(
            f"frontmatter name {name!r} differs from its directory {dir_name!r}", where=f"{where}#name"
        )
    if not isinstance(desc, str) or not desc.strip() or len(desc) > MAX_DESCRIPTION:
        raise InvalidInput(
            f"description must be 1-{MAX_DESCRIPTION} characters", where=f"{where}#description"
        )
    meta = fm.get("metadata") if isinstance(fm.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    version = meta.get("version")
    lic, comp = fm.get("license"), fm.get("compatibility")
    return Skill(
        f"rom/skills/{name}/SKILL.md",
        data,
        name,
        desc,
        lic if isinstance(lic, str) else None,
        comp if isinstance(comp, str) else None,
        str(version) if version is not None else None,
        estimate_tokens(body),
    )


def expertise_skill(
    agent_name: str, role: str, stack: Sequence[str], purls: Sequence[str], *, license_id: str, version: str
) -> Skill:
    """The generated `expertise-<role>` skill that describes the agent's demonstrated domain."""
    role_slug = re.sub(r"[^a-z0-9]+", "-", role.lower()).strip("-") or "agent"
    name = f"expertise-{role_slug}"[:MAX_NAME].rstrip("-")
    topics = ", ".join(stack) if stack else "its recorded work"
    desc = f"Expertise of a {role} agent in {topics}. Use for tasks in that area."
    lines = [
        "---",
        f"name: {name}",
        f"description: {json.dumps(desc, ensure_ascii=False)}",
        f"license: {json.dumps(license_id)}",
        "metadata:",
        f"  version: {json.dumps(version)}",
        "---",
        "",
        f"# {agent_name}: {role}",
        "",
        "Portable expertise carried by this cartridge; it names no codebase.",
        "",
        "## When to use",
        desc,
        "",
        "## Stack",
    ]
    lines += [f"- {s} ({p})" for s, p in zip(stack, purls, strict=True)] or ["- (none declared)"]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    return load_skill(name, data)
