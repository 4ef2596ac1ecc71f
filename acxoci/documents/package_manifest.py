# ruff: noqa: E501
"""Typed model of the agent package manifest.json (the builder's input): generated from schemas/acx.agent-package-manifest-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["PackageManifestDoc"]


class PackageManifestDoc(Struct, frozen=True, kw_only=True):
    """ACX agent package manifest.json (the input of `acx cartridge build`)"""

    name: str
    role: str
    artifact_id: str | UnsetType = field(default=UNSET, name="artifactId")
    artifact_version: str | UnsetType = field(default=UNSET, name="artifactVersion")
    description: str | UnsetType = UNSET
    license: str | UnsetType = UNSET
    homepage: str | UnsetType = UNSET
    provider: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    exported_at: str | UnsetType = field(default=UNSET, name="exportedAt")
    vector_engine: str | UnsetType = field(default=UNSET, name="vectorEngine")
    origin_instance_id: str | UnsetType = field(default=UNSET, name="originInstanceId")
    tech_stack: tuple[str, ...] | UnsetType = field(default=UNSET, name="techStack")
    authors: tuple[dict[str, Any], ...] | UnsetType = UNSET
    tags: tuple[str, ...] | UnsetType = UNSET
