# ruff: noqa: E501
"""Typed model of the activation manifest (`acx.activation/1`, what one activation wrote into a skills folder): generated from schemas/acx.activation-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["ActivationDoc"]


class ActivationDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """acxoci activation manifest, acx.activation/1"""

    schema_version: str = field(name="schemaVersion")
    name: str
    digest: str | UnsetType | None = UNSET
    rom_digest: str | UnsetType | None = field(default=UNSET, name="romDigest")
    host: str | UnsetType | None = UNSET
    root: str
    skills: tuple[str, ...]
    files: tuple[ActivationDocFilesItem, ...]
    created_levels: int | UnsetType = field(default=UNSET, name="createdLevels")
    activated_at: str | UnsetType = field(default=UNSET, name="activatedAt")


class ActivationDocFilesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ActivationDocFilesItem`"""

    path: str
    digest: str
    size: int | UnsetType = UNSET
    mode: str | UnsetType = UNSET
