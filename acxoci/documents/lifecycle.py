# ruff: noqa: E501
"""Typed model of the lifecycle record (`acx.lifecycle/1`): generated from schemas/acx.lifecycle-record-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["LifecycleRecordDoc"]


class LifecycleRecordDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX lifecycle record, acx.registry-lifecycle/1"""

    schema_version: str = field(name="schemaVersion")
    artifact: LifecycleRecordDocIdentity | UnsetType = UNSET
    status: str
    reason: str
    recorded_at: str = field(name="recordedAt")
    successor: LifecycleRecordDocIdentity | UnsetType | None = UNSET
    advisory: str | UnsetType | None = UNSET
    successor_path: str | UnsetType = field(default=UNSET, name="successorPath")


class LifecycleRecordDocIdentity(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LifecycleRecordDocIdentity`"""

    artifact_type: str = field(name="artifactType")
    publisher_id: str = field(name="publisherId")
    id: str
    version: str
    digest: str
