"""Typed model of the workflow (`acx.cal/1`): generated from schemas/acx.cal-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["CalDoc"]


class CalDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX workflow (Conditional Agentic Loop), acx.cal/1"""

    schema_version: str = field(name="schemaVersion")
    id: str
    version: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    license: str | UnsetType = UNSET
    homepage: str | UnsetType = UNSET
    authors: tuple[CalDocAuthorsItem, ...] | UnsetType = UNSET
    tags: tuple[str, ...] | UnsetType = UNSET
    lineage: CalDocLineage | UnsetType = UNSET
    participants: tuple[CalDocParticipant, ...]
    rac: tuple[CalDocRac, ...] | UnsetType = UNSET
    variables: tuple[CalDocVariablesItem, ...] | UnsetType = UNSET
    limits: CalDocLimits | UnsetType = UNSET
    start: str
    nodes: tuple[CalDocNode, ...]
    edges: tuple[CalDocEdgesItem, ...]
    extensions: dict[str, Any] | UnsetType = UNSET
    integrity: CalDocIntegrity | UnsetType = UNSET


class CalDocIntegrity(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocIntegrity`"""

    schema_version: str = field(name="schemaVersion")
    digest: str
    publisher_id: str = field(name="publisherId")
    keyid: str
    public_key_pem: str = field(name="publicKeyPem")
    signed_at: str = field(name="signedAt")
    envelope: CalDocIntegrityEnvelope


class CalDocIntegrityEnvelope(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocIntegrityEnvelope`"""

    payload_type: str = field(name="payloadType")
    payload: str
    signatures: tuple[CalDocIntegrityEnvelopeSignaturesItem, ...]


class CalDocIntegrityEnvelopeSignaturesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocIntegrityEnvelopeSignaturesItem`"""

    keyid: str
    sig: str


class CalDocEdgesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocEdgesItem`"""

    from_: str = field(name="from")
    to: str
    when: CalDocCondition | UnsetType = UNSET


class CalDocCondition(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocCondition`"""

    always: bool | UnsetType = UNSET
    var: str | UnsetType = UNSET
    op: str | UnsetType = UNSET
    value: Any = UNSET
    all: tuple[CalDocCondition, ...] | UnsetType = UNSET
    any: tuple[CalDocCondition, ...] | UnsetType = UNSET
    not_: CalDocCondition | UnsetType = field(default=UNSET, name="not")
    rac_available: str | UnsetType = field(default=UNSET, name="racAvailable")


class CalDocNode(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocNode`"""

    id: str
    type: str
    agent: str | UnsetType = UNSET
    action: str | UnsetType = UNSET
    requires: CalDocNodeRequires | UnsetType = UNSET
    completion: CalDocCompletion | UnsetType = UNSET
    side_effects: str | UnsetType = field(default=UNSET, name="sideEffects")
    approval: str | UnsetType = UNSET
    budget: dict[str, Any] | UnsetType = UNSET
    guardrails: tuple[str, ...] | UnsetType = UNSET
    gateway: str | UnsetType = UNSET
    event: str | UnsetType = UNSET
    after_ms: int | UnsetType = field(default=UNSET, name="afterMs")


class CalDocCompletion(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocCompletion`"""

    type: str
    scripts: tuple[str, ...] | UnsetType = UNSET
    commands: tuple[str, ...] | UnsetType = UNSET
    pass_intent: str | UnsetType = field(default=UNSET, name="passIntent")
    kind: str | UnsetType = UNSET
    produces: str | UnsetType = UNSET


class CalDocNodeRequires(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocNodeRequires`"""

    skills: tuple[str, ...] | UnsetType = UNSET
    capabilities: tuple[str, ...] | UnsetType = UNSET
    rac: tuple[str, ...] | UnsetType = UNSET


class CalDocLimits(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocLimits`"""

    max_steps: int | UnsetType = field(default=UNSET, name="maxSteps")
    max_duration_ms: int | UnsetType = field(default=UNSET, name="maxDurationMs")
    max_parallel: int | UnsetType = field(default=UNSET, name="maxParallel")


class CalDocVariablesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocVariablesItem`"""

    name: str
    type: str
    init: Any = UNSET


class CalDocRac(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocRac`"""

    id: str
    kind: str
    description: str
    required: bool | UnsetType = UNSET
    check: CalDocRacCheck | UnsetType = UNSET
    okf: dict[str, Any] | UnsetType = UNSET


class CalDocRacCheck(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocRacCheck`"""

    type: str
    hint: str | UnsetType = UNSET


class CalDocParticipant(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocParticipant`"""

    alias: str
    bind: str
    rom_digest: str | UnsetType = field(default=UNSET, name="romDigest")
    cartridge_id: str | UnsetType = field(default=UNSET, name="cartridgeId")
    slot: CalDocParticipantSlot | UnsetType = UNSET
    required: bool | UnsetType = UNSET


class CalDocParticipantSlot(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocParticipantSlot`"""

    role: str | UnsetType = UNSET
    min_level: CalDocParticipantSlotMinLevel | UnsetType = field(default=UNSET, name="minLevel")
    capabilities: tuple[CalDocParticipantSlotCapabilitiesItem, ...] | UnsetType = UNSET


class CalDocParticipantSlotCapabilitiesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocParticipantSlotCapabilitiesItem`"""

    task_type: str = field(name="taskType")
    stack: tuple[str, ...] | UnsetType = UNSET


class CalDocParticipantSlotMinLevel(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocParticipantSlotMinLevel`"""

    career_tier: str | UnsetType = field(default=UNSET, name="careerTier")
    acx_level: int | UnsetType = field(default=UNSET, name="acxLevel")


class CalDocLineage(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocLineage`"""

    parents: tuple[CalDocLineageParentsItem, ...]
    note: str | UnsetType = UNSET


class CalDocLineageParentsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocLineageParentsItem`"""

    artifact_type: str = field(name="artifactType")
    publisher_id: str = field(name="publisherId")
    id: str
    version: str | UnsetType = UNSET
    digest: str
    relation: str
    source: str | UnsetType = UNSET


class CalDocAuthorsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`CalDocAuthorsItem`"""

    name: str
    url: str | UnsetType = UNSET
