"""The agent hosts acx activates skills for, and where each reads them (docs/activate.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostFolders:
    """Where a host reads Agent Skills: relative to HOME (user scope) and to a project folder."""

    host: str
    user: str | None
    project: str | None
    source: str


# The folders each host reads (docs/activate.md records where this was found).
HOSTS: dict[str, HostFolders] = {
    "claude": HostFolders(
        "claude",
        ".claude/skills",
        ".claude/skills",
        "Claude Code skills docs: ~/.claude/skills/<skill>/SKILL.md, <project>/.claude/skills",
    ),
    "codex": HostFolders(
        "codex",
        ".agents/skills",
        ".agents/skills",
        "OpenAI Codex skills docs: $HOME/.agents/skills (user), <repo>/.agents/skills (repo)",
    ),
    "cursor": HostFolders(
        "cursor",
        ".cursor/skills",
        ".cursor/skills",
        "Cursor skills docs: ~/.cursor/skills (user), <project>/.cursor/skills (project)",
    ),
}
