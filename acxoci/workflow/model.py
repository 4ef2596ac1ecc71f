"""Typed models of `acx.cal/1` workflows and `acx.cal-skillset/1` participation declarations.

Lint works on the raw JSON (it must describe broken documents); these frozen models are the
read side used by inspect and ready once a document has been parsed. Parsing is tolerant of
missing optional parts and strict about the shape of what it keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msgspec import UnsetType

from acxoci.documents.skillset import SkillsetDoc
from acxoci.errors import InvalidInput, NotFound
from acxoci.workflow import calschema
from attest.canonical import loads_strict
from attest.errors import MalformedError
from attest.typed import DocumentTypeError, decode_as

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


def load_document(path: Path) -> dict[str, Any]:
    """Read a `.cal.json` strictly (UTF-8, no duplicate keys) and require a JSON object."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFound(f"workflow file not found: {path}") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read workflow file: {exc}", where=str(path)) from exc
    try:
        doc = loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc
    if not isinstance(doc, dict):
        raise InvalidInput("workflow document is not a JSON object", where=str(path))
    if doc.get("schemaVersion") == "acx.agent-graph/1":
        raise InvalidInput(
            "this is an Agent Graph (acx.agent-graph/1), not a workflow",
            where=str(path),
            hint="use `acx graph …`",
        )
    return doc


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _strs(v: Any) -> tuple[str, ...]:
    return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list) else ()


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


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
    def from_json(cls, doc: Mapping[str, Any]) -> Workflow:
        """Build the model from a JSON object; wrong-typed optional parts are dropped (lint
        reports them), a missing id/start/nodes raises InvalidInput."""
        wid = _str(doc.get("id"))
        start = _str(doc.get("start"))
        if wid is None or start is None or not isinstance(doc.get("nodes"), list):
            raise InvalidInput("workflow needs string `id`, string `start` and a `nodes` array")
        return cls(
            id=wid,
            schema_version=_str(doc.get("schemaVersion")) or "",
            start=start,
            participants=tuple(_participant(p) for p in _dicts(doc.get("participants"))),
            nodes=tuple(_node(n) for n in _dicts(doc.get("nodes"))),
            edges=tuple(
                Edge(
                    _str(e.get("from")) or "",
                    _str(e.get("to")) or "",
                    e["when"] if isinstance(e.get("when"), dict) else None,
                )
                for e in _dicts(doc.get("edges"))
            ),
            rac=tuple(_rac(r) for r in _dicts(doc.get("rac"))),
            variables=tuple(
                Variable(_str(v.get("name")) or "", _str(v.get("type")) or "", "init" in v, v.get("init"))
                for v in _dicts(doc.get("variables"))
            ),
            limits=_limits(doc.get("limits")),
            version=_str(doc.get("version")),
            name=_str(doc.get("name")),
            description=_str(doc.get("description")),
            license=_str(doc.get("license")),
            homepage=_str(doc.get("homepage")),
            tags=_strs(doc.get("tags")),
            authors=tuple(_dicts(doc.get("authors"))),
            lineage=doc["lineage"] if isinstance(doc.get("lineage"), dict) else None,
            extensions=doc["extensions"] if isinstance(doc.get("extensions"), dict) else None,
            integrity=doc["integrity"] if isinstance(doc.get("integrity"), dict) else None,
            raw=doc,
        )


def _participant(p: Mapping[str, Any]) -> Participant:
    slot = None
    raw_slot = p.get("slot")
    if isinstance(raw_slot, dict):
        ml = raw_slot.get("minLevel")
        min_level = (
            MinLevel(_str(ml.get("careerTier")), _int(ml.get("acxLevel"))) if isinstance(ml, dict) else None
        )
        caps = tuple(
            SlotCapability(_str(c.get("taskType")) or "", _strs(c.get("stack")))
            for c in _dicts(raw_slot.get("capabilities"))
        )
        slot = Slot(_str(raw_slot.get("role")), min_level, caps)
    return Participant(
        alias=_str(p.get("alias")) or "",
        bind=_str(p.get("bind")) or "",
        required=p.get("required") is not False,
        rom_digest=_str(p.get("romDigest")),
        cartridge_id=_str(p.get("cartridgeId")),
        slot=slot,
    )


def _rac(r: Mapping[str, Any]) -> RacItem:
    check = r.get("check") if isinstance(r.get("check"), dict) else {}
    assert isinstance(check, dict)
    return RacItem(
        _str(r.get("id")) or "",
        _str(r.get("kind")) or "",
        _str(r.get("description")) or "",
        r.get("required") is not False,
        _str(check.get("type")),
        _str(check.get("hint")),
    )


def _limits(v: Any) -> Limits:
    if not isinstance(v, dict):
        return Limits()
    return Limits(_int(v.get("maxSteps")), _int(v.get("maxDurationMs")), _int(v.get("maxParallel")))


def _node(n: Mapping[str, Any]) -> Node:
    req = n.get("requires") if isinstance(n.get("requires"), dict) else {}
    assert isinstance(req, dict)
    return Node(
        id=_str(n.get("id")) or "",
        type=_str(n.get("type")) or "",
        agent=_str(n.get("agent")),
        action=_str(n.get("action")),
        requires_skills=_strs(req.get("skills")),
        requires_capabilities=_strs(req.get("capabilities")),
        requires_rac=_strs(req.get("rac")),
        completion=n["completion"] if isinstance(n.get("completion"), dict) else None,
        side_effects=_str(n.get("sideEffects")) or "workspace",
        approval=_str(n.get("approval")) or "on-request",
        gateway=_str(n.get("gateway")),
        event=_str(n.get("event")),
        after_ms=_int(n.get("afterMs")),
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
