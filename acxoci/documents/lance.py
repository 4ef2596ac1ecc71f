# ruff: noqa: E501
"""Typed model of the lance memory descriptor (`rom/schema/lance-memory.json`): generated from schemas/acx.lance-memory-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["LanceDescriptorDoc"]


class LanceDescriptorDoc(Struct, frozen=True, kw_only=True):
    """ACX lance memory descriptor, acx.lance-memory/1 (rom/schema/lance-memory.json)"""

    schema_version: str | UnsetType = field(default=UNSET, name="schemaVersion")
    format: str | UnsetType = UNSET
    table: str | UnsetType = UNSET
    partition_by: str | UnsetType = field(default=UNSET, name="partitionBy")
    distance_metric: str | UnsetType = field(default=UNSET, name="distanceMetric")
    embedding_engine: (
        LanceDescriptorDocEmbeddingEngine | UnsetType
    ) = field(default=UNSET, name="embeddingEngine")
    text_template: str | UnsetType = field(default=UNSET, name="textTemplate")
    columns: tuple[LanceDescriptorDocColumnsItem, ...] | UnsetType = UNSET


class LanceDescriptorDocColumnsItem(Struct, frozen=True, kw_only=True):
    """`LanceDescriptorDocColumnsItem`"""

    name: str
    type: str
    nullable: bool | UnsetType = UNSET
    enum: tuple[str, ...] | UnsetType = UNSET
    size_from_engine: bool | UnsetType = field(default=UNSET, name="sizeFromEngine")


class LanceDescriptorDocEmbeddingEngine(Struct, frozen=True, kw_only=True):
    """`LanceDescriptorDocEmbeddingEngine`"""

    id: str | UnsetType = UNSET
    dim: int | UnsetType = UNSET
