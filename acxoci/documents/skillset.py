# ruff: noqa: E501
"""Typed model of the CAL skillset (`acx.cal-skillset/1`, `rom/cal/skillset.json`): generated from schemas/acx.cal-skillset-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["SkillsetDoc"]


class SkillsetDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX cartridge participation declaration, acx.cal-skillset/1"""

    schema_version: str = field(name="schemaVersion")
    plays: tuple[SkillsetDocPlaysItem, ...]
    references: tuple[SkillsetDocReferencesItem, ...] | UnsetType = UNSET
    processes: tuple[str, ...] | UnsetType = UNSET


class SkillsetDocReferencesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`SkillsetDocReferencesItem`"""

    alias: str
    rom_digest: str = field(name="romDigest")
    role: str | UnsetType = UNSET


class SkillsetDocPlaysItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`SkillsetDocPlaysItem`"""

    role: str
    provides_capabilities: tuple[str, ...] | UnsetType = field(default=UNSET, name="providesCapabilities")
    can_complete: tuple[str, ...] | UnsetType = field(default=UNSET, name="canComplete")
