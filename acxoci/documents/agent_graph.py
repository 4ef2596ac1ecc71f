# ruff: noqa: E501
"""Typed model of the agent graph (`acx.agent-graph/1`): generated from schemas/acx.agent-graph-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["AgentGraphDoc"]


class AgentGraphDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX Agent Graph, acx.agent-graph/1"""

    schema_version: str = field(name="schemaVersion")
    id: str
    version: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    license: str | UnsetType = UNSET
    homepage: str | UnsetType = UNSET
    authors: tuple[AgentGraphDocAuthorsItem, ...] | UnsetType = UNSET
    tags: tuple[str, ...] | UnsetType = UNSET
    lineage: AgentGraphDocLineage | UnsetType = UNSET
    actors: tuple[AgentGraphDocActor, ...]
    knowledge: tuple[AgentGraphDocKnowledge, ...]
    routes: tuple[AgentGraphDocRoute, ...]
    loops: tuple[AgentGraphDocLoop, ...] | UnsetType = UNSET
    convergence: tuple[AgentGraphDocConvergence, ...] | UnsetType = UNSET
    limits: AgentGraphDocLimits | UnsetType = UNSET
    extensions: dict[str, Any] | UnsetType = UNSET
    integrity: AgentGraphDocIntegrity | UnsetType = UNSET


class AgentGraphDocIntegrity(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocIntegrity`"""

    schema_version: str = field(name="schemaVersion")
    digest: str
    publisher_id: str = field(name="publisherId")
    keyid: str
    public_key_pem: str = field(name="publicKeyPem")
    signed_at: str = field(name="signedAt")
    envelope: AgentGraphDocIntegrityEnvelope


class AgentGraphDocIntegrityEnvelope(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocIntegrityEnvelope`"""

    payload_type: str = field(name="payloadType")
    payload: str
    signatures: tuple[AgentGraphDocIntegrityEnvelopeSignaturesItem, ...]


class AgentGraphDocIntegrityEnvelopeSignaturesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocIntegrityEnvelopeSignaturesItem`"""

    keyid: str
    sig: str


class AgentGraphDocLimits(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocLimits`"""

    max_propagation_hops: int | UnsetType = field(default=UNSET, name="maxPropagationHops")
    max_fanout: int | UnsetType = field(default=UNSET, name="maxFanout")


class AgentGraphDocConvergence(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocConvergence`"""

    id: str
    description: str
    inputs: tuple[AgentGraphDocConvergenceInputsItem, ...]
    steward: str
    contributors: tuple[str, ...] | UnsetType = UNSET
    policy: AgentGraphDocConvergencePolicy
    outputs: tuple[str, ...]
    trigger: str
    failure_mode: str | UnsetType = field(default=UNSET, name="failureMode")
    limits: AgentGraphDocConvergenceLimits | UnsetType = UNSET


class AgentGraphDocConvergenceLimits(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocConvergenceLimits`"""

    max_wait_ms: int | UnsetType = field(default=UNSET, name="maxWaitMs")
    max_rounds: int | UnsetType = field(default=UNSET, name="maxRounds")


class AgentGraphDocConvergencePolicy(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocConvergencePolicy`"""

    mode: str
    description: str


class AgentGraphDocConvergenceInputsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocConvergenceInputsItem`"""

    loop: str
    knowledge: tuple[str, ...]


class AgentGraphDocLoop(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocLoop`"""

    id: str
    kind: str
    description: str
    workflow_ref: AgentGraphDocLoopWorkflowRef | UnsetType = field(default=UNSET, name="workflowRef")
    actor_bindings: (
        tuple[AgentGraphDocLoopActorBindingsItem, ...] | UnsetType
    ) = field(default=UNSET, name="actorBindings")
    imports: tuple[str, ...] | UnsetType = UNSET
    exports: tuple[str, ...] | UnsetType = UNSET


class AgentGraphDocLoopActorBindingsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocLoopActorBindingsItem`"""

    actor: str
    participants: tuple[str, ...]


class AgentGraphDocLoopWorkflowRef(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocLoopWorkflowRef`"""

    publisher_id: str = field(name="publisherId")
    id: str
    version: str
    digest: str


class AgentGraphDocRoute(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocRoute`"""

    id: str
    from_: str = field(name="from")
    to: tuple[str, ...]
    intent: str
    relationship: str | UnsetType = UNSET
    obligation: str
    authority: str | UnsetType = UNSET
    purpose: str
    success: str | UnsetType = UNSET
    carries: tuple[str, ...]
    returns: tuple[str, ...] | UnsetType = UNSET
    triggers: tuple[AgentGraphDocTrigger, ...] | UnsetType = UNSET
    cadence: AgentGraphDocRouteCadence | UnsetType = UNSET
    delivery: str | UnsetType = UNSET
    acknowledgement: str | UnsetType = UNSET
    medium: str | UnsetType = UNSET
    weight: int | float | UnsetType = UNSET
    expects: AgentGraphDocRouteExpects | UnsetType = UNSET


class AgentGraphDocRouteExpects(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocRouteExpects`"""

    via: str
    within_ms: int | UnsetType = field(default=UNSET, name="withinMs")
    description: str | UnsetType = UNSET


class AgentGraphDocRouteCadence(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocRouteCadence`"""

    mode: str
    description: str
    interval_ms: int | UnsetType = field(default=UNSET, name="intervalMs")


class AgentGraphDocTrigger(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocTrigger`"""

    type: str
    events: tuple[str, ...] | UnsetType = UNSET
    description: str | UnsetType = UNSET
    every_ms: int | UnsetType = field(default=UNSET, name="everyMs")


class AgentGraphDocKnowledge(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocKnowledge`"""

    id: str
    kind: str
    name: str | UnsetType = UNSET
    description: str
    stewards: tuple[str, ...]
    audience: tuple[str, ...] | UnsetType = UNSET
    durability: str | UnsetType = UNSET
    sensitivity: str | UnsetType = UNSET
    freshness: AgentGraphDocKnowledgeFreshness | UnsetType = UNSET
    locator: AgentGraphDocKnowledgeLocator | UnsetType = UNSET


class AgentGraphDocKnowledgeLocator(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocKnowledgeLocator`"""

    type: str
    description: str


class AgentGraphDocKnowledgeFreshness(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocKnowledgeFreshness`"""

    mode: str
    description: str
    max_age_ms: int | UnsetType = field(default=UNSET, name="maxAgeMs")


class AgentGraphDocActor(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocActor`"""

    id: str
    kind: str
    name: str | UnsetType = UNSET
    description: str
    selector: AgentGraphDocActorSelector | UnsetType = UNSET
    cardinality: AgentGraphDocActorCardinality | UnsetType = UNSET
    responsibilities: tuple[str, ...] | UnsetType = UNSET


class AgentGraphDocActorCardinality(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocActorCardinality`"""

    min: int | UnsetType = UNSET
    max: int | UnsetType = UNSET


class AgentGraphDocActorSelector(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocActorSelector`"""

    roles: tuple[str, ...] | UnsetType = UNSET
    capabilities: tuple[str, ...] | UnsetType = UNSET
    tags: tuple[str, ...] | UnsetType = UNSET
    description: str | UnsetType = UNSET


class AgentGraphDocLineage(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocLineage`"""

    parents: tuple[AgentGraphDocLineageParentsItem, ...]
    note: str | UnsetType = UNSET


class AgentGraphDocLineageParentsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocLineageParentsItem`"""

    artifact_type: str = field(name="artifactType")
    publisher_id: str = field(name="publisherId")
    id: str
    version: str | UnsetType = UNSET
    digest: str
    relation: str
    source: str | UnsetType = UNSET


class AgentGraphDocAuthorsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`AgentGraphDocAuthorsItem`"""

    name: str
    url: str | UnsetType = UNSET
