"""`acx init [DIR] --role ROLE`: the files of a fillable agent package that `acx cartridge build`
(and the reference's `export`) accept as they are. Pure: `package_files` returns the bytes; the
caller writes them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from acxoci.authoring.roles import ROLES, Role

#: A fixed date for everything generated, so the same inputs always give the same bytes.
EPOCH = "2026-01-01T00:00:00.000Z"


def _json(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def role_slug(role: str) -> str:
    """`backend_dev` → `backend-dev` (artifact ids and skill names are `[a-z0-9-]`)."""
    return role.replace("_", "-")


def manifest(role: Role, *, name: str, stack: Sequence[str], tasks: Sequence[str]) -> dict[str, Any]:
    """manifest.json: the identity fields both builders read, TODO where the author must write."""
    return {
        "schemaVersion": "1.1",
        "packageVersion": "2.0",
        "exportedAt": EPOCH,
        "exportedFrom": "acx-init",
        "originInstanceId": "acx-init",
        "agentId": f"init-{role.id}",
        "name": name,
        "artifactId": role_slug(role.id),
        "artifactVersion": "0.1.0",
        "description": f"TODO: what this {role.label.lower()} agent is for, in one or two sentences.",
        "license": "Apache-2.0",
        "authors": [{"name": "TODO author"}],
        "tags": [role_slug(role.id), *stack],
        "provider": "anthropic",
        "model": "TODO-model",
        "role": role.id,
        "careerTier": "intern",
        "level": 1,
        "vectorEngine": "local-hash-128",
        "techStack": list(stack),
        "memoryTopics": list(tasks),
    }


def memory_records(role: Role, tasks: Sequence[str]) -> list[dict[str, Any]]:
    """One portable knowledge record per task type: codebase-agnostic lessons to fill in."""
    return [
        {
            "id": f"lesson-{task}",
            "title": f"TODO lesson about {task}",
            "summary": f"TODO: one transferable lesson a {role.label.lower()} learned about {task}; "
            "name no repository, path or customer.",
            "sourceType": "knowledge",
            "repoId": None,
            "timestamp": EPOCH,
            "impact": "positive",
            "xpAwarded": 10,
            "tags": [task],
        }
        for task in tasks
    ]


def skill_md(role: Role, tasks: Sequence[str]) -> bytes:
    """A playbook skill to fill in (`skills/<role>-playbook/SKILL.md`)."""
    name = f"{role_slug(role.id)}-playbook"
    lines = [
        "---",
        f"name: {name}",
        f"description: TODO how a {role.label.lower()} works on {', '.join(tasks)}; when to use it.",
        "license: Apache-2.0",
        "metadata:",
        '  version: "0.1.0"',
        "---",
        "",
        f"# {role.label} playbook",
        "",
        "TODO: the steps, checks and conventions this agent follows. Put longer material in",
        "`REFERENCE.md` or `references/` and helper scripts in `scripts/`: the build packs the",
        "whole folder.",
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def package_files(
    role_id: str,
    *,
    name: str | None = None,
    stack: Sequence[str] = (),
    tasks: Sequence[str] = (),
    reasons: Sequence[str] = (),
) -> dict[str, bytes]:
    """Every file of the package, by path relative to its folder (KeyError for an unknown role)."""
    role = ROLES[role_id]
    tasks = list(tasks) or [role.task]
    title = name or f"TODO {role.label}"
    found = "".join(f"- {r}\n" for r in reasons)
    signals = f"\nGenerated from these signals of a codebase (descriptions only):\n\n{found}" if found else ""
    files = {
        "manifest.json": _json(manifest(role, name=title, stack=stack, tasks=tasks)),
        "memory-records.json": _json(memory_records(role, tasks)),
        "capabilities.json": _json(
            [{"taskType": t, "stack": list(stack), "domain": role.domain} for t in tasks]
        ),
        "IDENTITY.md": (
            f"# {title}\n\nRole: `{role.id}` ({role.label}).\n\n"
            "TODO: who this agent is, how it works, what it refuses to do.\n" + signals
        ).encode("utf-8"),
        "SKILLS.md": (
            "# Skills\n\n" + "".join(f"- {t}\n" for t in tasks) + "".join(f"- {s}\n" for s in stack)
        ).encode("utf-8"),
        f"skills/{role_slug(role.id)}-playbook/SKILL.md": skill_md(role, tasks),
    }
    return dict(sorted(files.items()))
