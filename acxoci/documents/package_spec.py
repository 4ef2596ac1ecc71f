# ruff: noqa: E501
"""Typed model of the package spec (`acx.package-spec/1`, `rom/package-spec.json`): generated from schemas/acx.package-spec-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["PackageSpecDoc"]


class PackageSpecDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX package spec, acx.package-spec/1 (rom/package-spec.json)"""

    schema_version: str = field(name="schemaVersion")
    cartridge_id: str = field(name="cartridgeId")
    spec_version: str = field(name="specVersion")
    embedding_engine: PackageSpecDocEmbeddingEngine = field(name="embeddingEngine")
    artifacts: tuple[PackageSpecDocArtifactsItem, ...]


class PackageSpecDocArtifactsItem(Struct, frozen=True, kw_only=True):
    """`PackageSpecDocArtifactsItem`"""

    role: str
    kind: str | UnsetType = UNSET
    schema: str | UnsetType = UNSET
    required: bool | UnsetType = UNSET
    table: str | UnsetType = UNSET
    media_type: str | UnsetType = field(default=UNSET, name="mediaType")
    count: int | UnsetType = UNSET
    path: str | UnsetType = UNSET
    signed: bool | UnsetType = UNSET
    reindex_on_import: bool | UnsetType = field(default=UNSET, name="reindexOnImport")
    descriptor: str | UnsetType = UNSET


class PackageSpecDocEmbeddingEngine(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`PackageSpecDocEmbeddingEngine`"""

    id: str
    dim: int
