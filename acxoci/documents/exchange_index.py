# ruff: noqa: E501
"""Typed model of the exchange index (`index.json` of an Exchange folder): generated from schemas/acx.exchange-index-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["ExchangeIndexDoc"]


class ExchangeIndexDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX Exchange index, acx.registry-index/1 (index.json)"""

    schema_version: str = field(name="schemaVersion")
    generated_at: str = field(name="generatedAt")
    artifact_count: int = field(name="artifactCount")
    count: int
    cartridges: tuple[ExchangeIndexDocCartridge, ...]
    workflow_count: int = field(name="workflowCount")
    workflows: tuple[ExchangeIndexDocWorkflow, ...]
    agent_graph_count: int = field(name="agentGraphCount")
    agent_graphs: tuple[ExchangeIndexDocAgentGraph, ...] = field(name="agentGraphs")
    template_count: int = field(name="templateCount")
    templates: tuple[ExchangeIndexDocTemplate, ...]


class ExchangeIndexDocTemplate(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocTemplate`"""

    id: str | UnsetType = UNSET
    version: Any = UNSET
    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    license: str | UnsetType = UNSET
    tags: tuple[str, ...] | UnsetType = UNSET
    publisher: str | UnsetType = UNSET
    path: str | UnsetType = UNSET
    file_count: int | UnsetType = field(default=UNSET, name="fileCount")
    files: tuple[str, ...] | UnsetType = UNSET
    signed: bool | UnsetType = UNSET
    trust: str | UnsetType = UNSET
    trust_status: str | UnsetType = field(default=UNSET, name="trustStatus")


class ExchangeIndexDocAgentGraph(Struct, frozen=True, kw_only=True):
    """An accepted agent graph's card (its members follow the graph support that derived it)."""

    path: str
    id: Any
    version: Any
    publisher: str | None
    digest: str
    registry_status: ExchangeIndexDocRegistryStatus | UnsetType = field(default=UNSET, name="registryStatus")
    latest: bool | UnsetType = UNSET


class ExchangeIndexDocWorkflow(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocWorkflow`"""

    path: str
    id: Any
    version: Any
    name: Any = UNSET
    description: Any = UNSET
    license: Any = UNSET
    tags: Any = UNSET
    publisher: str | None
    trust: str | UnsetType = UNSET
    trust_status: str | UnsetType = field(default=UNSET, name="trustStatus")
    digest: str
    participants: tuple[ExchangeIndexDocWorkflowParticipantsItem, ...] | UnsetType = UNSET
    participant_count: int | UnsetType = field(default=UNSET, name="participantCount")
    node_count: int | UnsetType = field(default=UNSET, name="nodeCount")
    capabilities: tuple[str, ...] | UnsetType = UNSET
    lineage: tuple[ExchangeIndexDocLineageRef, ...] | UnsetType = UNSET
    publishable: bool | UnsetType = UNSET
    signed: bool | UnsetType = UNSET
    registry_status: ExchangeIndexDocRegistryStatus | UnsetType = field(default=UNSET, name="registryStatus")
    latest: bool | UnsetType = UNSET


class ExchangeIndexDocLineageRef(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocLineageRef`"""

    artifact_type: Any = field(default=UNSET, name="artifactType")
    publisher_id: Any = field(default=UNSET, name="publisherId")
    id: Any = UNSET
    version: Any = UNSET
    digest: Any = UNSET
    relation: Any = UNSET
    source: Any = UNSET


class ExchangeIndexDocWorkflowParticipantsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocWorkflowParticipantsItem`"""

    alias: Any = UNSET
    bind: Any = UNSET
    role: Any = UNSET
    rom_digest: Any = field(default=UNSET, name="romDigest")


class ExchangeIndexDocCartridge(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocCartridge`"""

    id: str
    slug: str | UnsetType = UNSET
    path: str
    name: str | UnsetType = UNSET
    publisher: str
    role: str | UnsetType = UNSET
    provider: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    version: str
    description: str | UnsetType = UNSET
    license: str | UnsetType | None = UNSET
    authors: tuple[Any, ...] | UnsetType = UNSET
    tags: tuple[Any, ...] | UnsetType = UNSET
    homepage: str | UnsetType | None = UNSET
    trust: str | UnsetType = UNSET
    trust_status: str | UnsetType = field(default=UNSET, name="trustStatus")
    spec_clean: bool | UnsetType = field(default=UNSET, name="specClean")
    rom_hash: str | UnsetType = field(default=UNSET, name="romHash")
    digest: str
    bytes: int | UnsetType = UNSET
    capabilities: tuple[ExchangeIndexDocCapabilityCard, ...] | UnsetType = UNSET
    level: Any = UNSET
    level_claim: ExchangeIndexDocCartridgeLevelClaim | UnsetType = field(default=UNSET, name="levelClaim")
    registry_status: ExchangeIndexDocRegistryStatus | UnsetType = field(default=UNSET, name="registryStatus")
    latest: bool | UnsetType = UNSET


class ExchangeIndexDocRegistryStatus(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocRegistryStatus`"""

    status: str
    reason: str | None
    recorded_at: str | None = field(name="recordedAt")
    successor: ExchangeIndexDocRegistryStatusSuccessor | None
    advisory: str | None


class ExchangeIndexDocRegistryStatusSuccessor(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocRegistryStatusSuccessor`"""

    artifact_type: str = field(name="artifactType")
    publisher_id: str = field(name="publisherId")
    id: str
    version: str
    digest: str


class ExchangeIndexDocCartridgeLevelClaim(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocCartridgeLevelClaim`"""

    acx_level: int | float | None = field(name="acxLevel")
    career_tier: str | None = field(name="careerTier")
    verification_state: str = field(name="verificationState")


class ExchangeIndexDocCapabilityCard(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ExchangeIndexDocCapabilityCard`"""

    task_type: Any = field(name="taskType")
    stack: tuple[Any, ...]
    domain: Any
    claimed_verified: bool = field(name="claimedVerified")
    verified: bool
    verification_state: str = field(name="verificationState")
