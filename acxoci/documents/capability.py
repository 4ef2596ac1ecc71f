# ruff: noqa: E501
"""Typed model of the capability record (`acx.capability/1`, a `capabilities` row): generated from schemas/acx.capability-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["CapabilityDoc"]


class CapabilityDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX capability record, acx.capability/1"""

    schema_version: str = field(name="schemaVersion")
    id: str
    task_type: str = field(name="taskType")
    stack: tuple[str, ...]
    domain: str
    proficiency: CapabilityDocProficiency
    evidence_refs: tuple[CapabilityDocEvidenceRefsItem, ...] = field(name="evidenceRefs")
    sample_count: int = field(name="sampleCount")
    last_demonstrated_at: str = field(name="lastDemonstratedAt")
    license: str | UnsetType = UNSET
    created_at: str = field(name="createdAt")
    updated_at: str = field(name="updatedAt")


class CapabilityDocEvidenceRefsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CapabilityDocEvidenceRefsItem`"""

    kind: str
    ref: str


class CapabilityDocProficiency(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CapabilityDocProficiency`"""

    scale: str
    mu: int | float
    sigma: int | float
    score: int | float
    confidence: int | float
    verified: bool
