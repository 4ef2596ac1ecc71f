# ruff: noqa: E501
"""Typed model of the stored memory record (a `memory` row's payload): generated from schemas/acx.memory-record-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["MemoryRecordDoc"]


class MemoryRecordDoc(Struct, frozen=True, kw_only=True):
    """ACX memory record (the payload of a `memory` row), acx.memory-record.v1"""

    id: str
    title: str
    summary: str
    source_type: str = field(name="sourceType")
    timestamp: str
    impact: str
    xp_awarded: int = field(name="xpAwarded")
    tags: tuple[str, ...]
    portable: bool
    codebase_fingerprint: str | None = field(name="codebaseFingerprint")
    artifact_fingerprint: str = field(name="artifactFingerprint")
    zone: str
    markdown_path: str | UnsetType = field(default=UNSET, name="markdownPath")
    origin: str | UnsetType = UNSET
    repo_id: str | UnsetType | None = field(default=UNSET, name="repoId")
    project_label: str | UnsetType = field(default=UNSET, name="projectLabel")
    repo_label: str | UnsetType = field(default=UNSET, name="repoLabel")
