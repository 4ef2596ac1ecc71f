"""Typed models of `acx.cal/1` workflows and `acx.cal-skillset/1` participation declarations.

Lint reads the raw JSON (it must describe broken documents, each rule with its own id); every
other reader decodes the document once into its generated model (`acxoci.documents.cal`, strict:
a wrong type or an unknown member is an InvalidInput naming the JSON pointer) and these frozen
views are built from that model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import UnsetType

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.cal import CalDoc, CalDocLimits, CalDocNode, CalDocParticipant, CalDocRac
from acxoci.documents.skillset import SkillsetDoc
from acxoci.errors import InvalidInput
from acxoci.workflow import calschema

CAL_SCHEMA_VERSION = "acx.cal/1"
SKILLSET_SCHEMA_VERSION = "acx.cal-skillset/1"
SIGNATURE_SCHEMA_VERSION = "acx.workflow-signature/1"
WORKFLOW_MEDIA_TYPE = "application/vnd.acx.workflow.v1+json"
PREDICATE_TYPE = "https://acx.dev/attestation/workflow/v1"

IDENT_RE = re.compile(r"^[a-z][a-z0-9._-]{0,127}$")
VAR_PATH_RE = re.compile(r"^[a-z][a-z0-9._-]{0,255}$")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
PUBLISHER_RE = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*(?:[./][a-z0-9][a-z0-9._-]*)*$"
)
SEMVER_RE = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)
REVERSE_DNS_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$")

# Keys and enums come from schemas/acx.cal-1.schema.json, the one copy (calschema derives them).
TOP_LEVEL_KEYS = calschema.TOP_LEVEL_KEYS
CAREER_TIERS = calschema.CAREER_TIERS
RAC_KINDS = calschema.RAC_KINDS
RAC_CHECK_TYPES = calschema.RAC_CHECK_TYPES
VARIABLE_TYPES = calschema.VARIABLE_TYPES
LIMIT_KEYS = calschema.LIMIT_KEYS
NODE_TYPES = calschema.NODE_TYPES
GATEWAY_KINDS = calschema.GATEWAY_KINDS
EVENT_KINDS = calschema.EVENT_KINDS
TERMINAL_EVENTS = frozenset({"end", "stop"})
SIDE_EFFECTS = calschema.SIDE_EFFECTS
APPROVALS = calschema.APPROVALS
COMPLETION_TYPES = calschema.COMPLETION_TYPES
T = TypeVar("T")


def load_document(path: Path) -> dict[str, Any]:
    """Read a `.cal.json` strictly (UTF-8, no duplicate keys) and require a JSON object."""
    from acxoci.fsutil import read_bytes

    data = read_bytes(path, "workflow file")
    try:
        doc = loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc
    if not isinstance(doc, dict):
        raise InvalidInput("$: the workflow document is not a JSON object", where=str(path))
    if doc.get("schemaVersion") == "acx.agent-graph/1":
        raise InvalidInput(
            "this is an Agent Graph (acx.agent-graph/1), not a workflow",
            where=str(path),
            hint="use `acx graph …`",
        )
    return doc


@dataclass(frozen=True)
class SlotCapability:
    """A capability a slot demands: a taskType and the stack strings its record must list."""

    task_type: str
    stack: tuple[str, ...] = ()


@dataclass(frozen=True)
class MinLevel:
    """The minimum proven level of a slot (either bound may be absent)."""

    career_tier: str | None = None
    acx_level: int | None = None


@dataclass(frozen=True)
class Slot:
    """Constraints a roster cartridge must meet to fill a slot participant."""

    role: str | None = None
    min_level: MinLevel | None = None
    capabilities: tuple[SlotCapability, ...] = ()


@dataclass(frozen=True)
class Participant:
    """A workflow participant, bound by ROM digest (`hash`) or by constraints (`slot`)."""

    alias: str
    bind: str
    required: bool = True
    rom_digest: str | None = None
    cartridge_id: str | None = None
    slot: Slot | None = None


@dataclass(frozen=True)
class RacItem:
    """Required available context: a description of knowledge, never the knowledge itself."""

    id: str
    kind: str
    description: str
    required: bool = True
    check_type: str | None = None
    check_hint: str | None = None


@dataclass(frozen=True)
class Variable:
    """A declared workflow variable that conditions may read."""

    name: str
    type: str
    has_init: bool = False
    init: Any = None


@dataclass(frozen=True)
class Limits:
    """Host-enforced bounds; `max_steps` is mandatory for cyclic graphs."""

    max_steps: int | None = None
    max_duration_ms: int | None = None
    max_parallel: int | None = None


@dataclass(frozen=True)
class Node:
    """A task, gateway or event node (fields that do not apply to the type stay None/empty)."""

    id: str
    type: str
    agent: str | None = None
    action: str | None = None
    requires_skills: tuple[str, ...] = ()
    requires_capabilities: tuple[str, ...] = ()
    requires_rac: tuple[str, ...] = ()
    completion: Mapping[str, Any] | None = None
    side_effects: str = "workspace"
    approval: str = "on-request"
    gateway: str | None = None
    event: str | None = None
    after_ms: int | None = None


@dataclass(frozen=True)
class Edge:
    """A transition; `when` is a closed-grammar condition (None means always)."""

    source: str
    target: str
    when: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Workflow:
    """A parsed `acx.cal/1` document; `raw` keeps the exact JSON for digests and signing."""

    id: str
    schema_version: str
    start: str
    participants: tuple[Participant, ...]
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    rac: tuple[RacItem, ...] = ()
    variables: tuple[Variable, ...] = ()
    limits: Limits = field(default_factory=Limits)
    version: str | None = None
    name: str | None = None
    description: str | None = None
    license: str | None = None
    homepage: str | None = None
    tags: tuple[str, ...] = ()
    authors: tuple[Mapping[str, Any], ...] = ()
    lineage: Mapping[str, Any] | None = None
    extensions: Mapping[str, Any] | None = None
    integrity: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def signed(self) -> bool:
        """True when the document carries an integrity block (not that it verifies)."""
        return self.integrity is not None

    def participant(self, alias: str) -> Participant | None:
        """The participant with this alias, if declared."""
        for p in self.participants:
            if p.alias == alias:
                return p
        return None

    @classmethod
    def from_json(cls, doc: Any, *, where: str = "workflow") -> Workflow:
        """Decode a workflow document into its model (`acx.cal/1` types, closed objects) and build
        the read-side view; InvalidInput naming the JSON pointer when it does not decode."""
        try:
            m = decode_as(doc, CalDoc, document=where)
        except DocumentTypeError as exc:
            raise InvalidInput(str(exc), where=where, details={"pointer": exc.pointer},
                               hint="`acx workflow lint` names every structural problem") from exc
        return cls(
            id=m.id,
            schema_version=m.schema_version,
            start=m.start,
            participants=tuple(_participant(p) for p in m.participants),
            nodes=tuple(_node(n) for n in m.nodes),
            edges=tuple(
                Edge(e.from_, e.to, None if isinstance(e.when, UnsetType) else msgspec.to_builtins(e.when))
                for e in m.edges
            ),
            rac=tuple(_rac(r) for r in _tuple(m.rac)),
            variables=tuple(
                Variable(v.name, v.type, not isinstance(v.init, UnsetType),
                         None if isinstance(v.init, UnsetType) else v.init)
                for v in _tuple(m.variables)
            ),
            limits=_limits(m.limits),
            version=_opt(m.version),
            name=_opt(m.name),
            description=_opt(m.description),
            license=_opt(m.license),
            homepage=_opt(m.homepage),
            tags=_tuple(m.tags),
            authors=tuple(msgspec.to_builtins(a) for a in _tuple(m.authors)),
            lineage=None if isinstance(m.lineage, UnsetType) else msgspec.to_builtins(m.lineage),
            extensions=_opt(m.extensions),
            integrity=None if isinstance(m.integrity, UnsetType) else msgspec.to_builtins(m.integrity),
            raw=doc,
        )


def _opt(value: T | UnsetType) -> T | None:
    return None if isinstance(value, UnsetType) else value


def _participant(p: CalDocParticipant) -> Participant:
    slot = None
    if not isinstance(p.slot, UnsetType):
        ml = p.slot.min_level
        min_level = None if isinstance(ml, UnsetType) else MinLevel(_opt(ml.career_tier), _opt(ml.acx_level))
        caps = tuple(SlotCapability(c.task_type, _tuple(c.stack)) for c in _tuple(p.slot.capabilities))
        slot = Slot(_opt(p.slot.role), min_level, caps)
    return Participant(
        alias=p.alias,
        bind=p.bind,
        required=p.required is not False,
        rom_digest=_opt(p.rom_digest),
        cartridge_id=_opt(p.cartridge_id),
        slot=slot,
    )


def _rac(r: CalDocRac) -> RacItem:
    check = _opt(r.check)
    return RacItem(
        r.id,
        r.kind,
        r.description,
        r.required is not False,
        check.type if check is not None else None,
        _opt(check.hint) if check is not None else None,
    )


def _limits(v: CalDocLimits | UnsetType) -> Limits:
    if isinstance(v, UnsetType):
        return Limits()
    return Limits(_opt(v.max_steps), _opt(v.max_duration_ms), _opt(v.max_parallel))


def _node(n: CalDocNode) -> Node:
    req = _opt(n.requires)
    return Node(
        id=n.id,
        type=n.type,
        agent=_opt(n.agent),
        action=_opt(n.action),
        requires_skills=_tuple(req.skills) if req else (),
        requires_capabilities=_tuple(req.capabilities) if req else (),
        requires_rac=_tuple(req.rac) if req else (),
        completion=None if isinstance(n.completion, UnsetType) else msgspec.to_builtins(n.completion),
        side_effects=_opt(n.side_effects) or "workspace",
        approval=_opt(n.approval) or "on-request",
        gateway=_opt(n.gateway),
        event=_opt(n.event),
        after_ms=_opt(n.after_ms),
    )


# --- acx.cal-skillset/1 ---------------------------------------------------------------------


@dataclass(frozen=True)
class Play:
    """A role a cartridge can fill, the capability taskTypes it provides and skills it completes."""

    role: str
    provides_capabilities: tuple[str, ...] = ()
    can_complete: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkillsetReference:
    """A collaborator this cartridge hands off to, pinned by ROM digest."""

    alias: str
    rom_digest: str
    role: str | None = None


@dataclass(frozen=True)
class CalSkillSet:
    """`acx.cal-skillset/1`: a cartridge's own side of the multi-agent contract (in its ROM)."""

    plays: tuple[Play, ...] = ()
    references: tuple[SkillsetReference, ...] = ()
    processes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON document (keys in schema order)."""
        out: dict[str, Any] = {
            "schemaVersion": SKILLSET_SCHEMA_VERSION,
            "plays": [
                {
                    "role": p.role,
                    "providesCapabilities": list(p.provides_capabilities),
                    "canComplete": list(p.can_complete),
                }
                for p in self.plays
            ],
        }
        refs: list[dict[str, Any]] = []
        for r in self.references:
            entry: dict[str, Any] = {"alias": r.alias, "romDigest": r.rom_digest}
            if r.role is not None:
                entry["role"] = r.role
            refs.append(entry)
        out["references"] = refs
        out["processes"] = list(self.processes)
        return out

    @classmethod
    def from_json(cls, doc: Any) -> CalSkillSet:
        """Decode and check a skillset document; raises InvalidInput naming the field."""
        if not isinstance(doc, dict):
            raise InvalidInput("cal-skillset is not a JSON object")
        if doc.get("schemaVersion") != SKILLSET_SCHEMA_VERSION:
            raise InvalidInput(
                f"cal-skillset schemaVersion is {doc.get('schemaVersion')!r}", where="schemaVersion"
            )
        try:
            m = decode_as(doc, SkillsetDoc, document="cal-skillset")
        except DocumentTypeError as exc:
            raise InvalidInput(str(exc), where=exc.pointer or "/", details={"pointer": exc.pointer}) from exc
        plays = tuple(
            Play(p.role, _tuple(p.provides_capabilities), _tuple(p.can_complete)) for p in m.plays
        )
        refs: list[SkillsetReference] = []
        for i, r in enumerate(_tuple(m.references)):
            if not DIGEST_RE.fullmatch(r.rom_digest):
                why = "reference needs an alias and a sha256 romDigest"
                raise InvalidInput(why, where=f"references[{i}]")
            role = None if isinstance(r.role, UnsetType) else r.role
            refs.append(SkillsetReference(r.alias, r.rom_digest, role))
        return cls(plays, tuple(refs), _tuple(m.processes))


def _tuple(value: tuple[str, ...] | tuple[Any, ...] | UnsetType) -> tuple[Any, ...]:
    return () if isinstance(value, UnsetType) else value


def derive_skillset(
    role: str | None,
    capability_task_types: Iterable[str],
    skill_names: Iterable[str],
    *,
    references: Iterable[SkillsetReference] = (),
    processes: Iterable[str] = (),
) -> CalSkillSet:
    """Derive a cartridge's skillset from its role, capability records and skills (first
    occurrence order, de-duplicated), the way a builder writes `rom/cal/skillset.json`."""
    plays: tuple[Play, ...] = ()
    if role:
        plays = (Play(role, tuple(dict.fromkeys(capability_task_types)), tuple(dict.fromkeys(skill_names))),)
    return CalSkillSet(plays, tuple(references), tuple(processes))


def skillset_differences(stored: CalSkillSet, derived: CalSkillSet) -> list[str]:
    """How a stored skillset departs from the one derived from the cartridge's own tables
    (roles, provided capabilities, completable skills; order-insensitive). Empty when they agree."""
    out: list[str] = []
    got = {p.role: p for p in stored.plays}
    want = {p.role: p for p in derived.plays}
    for role in sorted(set(got) | set(want)):
        if role not in got:
            out.append(f"stored skillset lacks the play for role '{role}'")
            continue
        if role not in want:
            out.append(f"stored skillset claims role '{role}', which the cartridge does not declare")
            continue
        for what, a, b in (
            ("providesCapabilities", got[role].provides_capabilities, want[role].provides_capabilities),
            ("canComplete", got[role].can_complete, want[role].can_complete),
        ):
            extra, missing = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            if extra:
                out.append(f"play '{role}' {what} claims {extra} without backing records")
            if missing:
                out.append(f"play '{role}' {what} omits {missing}")
    return out
