# ruff: noqa: E501
"""Typed model of the exchange status file (`status.json`): generated from schemas/acx.exchange-status-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["ExchangeStatusDoc"]


class ExchangeStatusDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX Exchange lifecycle ledger, acx.registry-status/1 (status.json)"""

    schema_version: str = field(name="schemaVersion")
    updated_at: str = field(name="updatedAt")
    entries: tuple[ExchangeStatusDocEntriesItem, ...]


class ExchangeStatusDocEntriesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeStatusDocEntriesItem`"""

    artifact: ExchangeStatusDocIdentity
    status: str
    reason: str
    recorded_at: str = field(name="recordedAt")
    successor: ExchangeStatusDocIdentity | UnsetType | None = UNSET
    advisory: str | UnsetType | None = UNSET


class ExchangeStatusDocIdentity(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeStatusDocIdentity`"""

    artifact_type: str = field(name="artifactType")
    publisher_id: str = field(name="publisherId")
    id: str
    version: str
    digest: str
