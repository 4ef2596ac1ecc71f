"""ResourceLimits (the policy `budget`, and the host's `resource-limits.yaml`) and the merge rule:
the host always wins and a cartridge can never raise a host ceiling."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msgspec import UnsetType

from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.host_limits import HostLimitsDoc
from acxoci.documents.loop_policy import LoopPolicyDocBudget
from acxoci.documents.resource_limits import ResourceLimitsDoc
from acxoci.errors import InvalidInput, parse_problem
from acxoci.fsutil import read_bytes
from acxoci.jsonschemas import strict_validator
from acxoci.policy._schema import Issue, load_schema, pointer_path, schema_issues

GROUPS: dict[str, tuple[str, ...]] = {
    "tokenSpend": ("dailyPerProject", "dailyPerAgent", "dailyGlobal"),
    "concurrency": ("maxCommandsPerStation", "maxStationsPerProject", "maxGlobalInFlightCommands"),
    "timeouts": ("defaultCommandSec", "maxCommandSec"),
}
NUMERIC_FIELDS: tuple[str, ...] = tuple(f"{g}.{k}" for g, ks in GROUPS.items() for k in ks)
SCHEMA = "resource-limits.schema.json"
#: The decoded shapes a budget comes in (a policy's inline budget, the schema's, a host file's).
Budget = ResourceLimitsDoc | HostLimitsDoc | LoopPolicyDocBudget


@dataclass(frozen=True)
class KillSwitch:
    """Pause everything (enabled) or named projects/stations."""

    enabled: bool = False
    reason: str | None = None
    paused_project_ids: tuple[str, ...] = ()
    paused_station_ids: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"enabled": self.enabled, "reason": self.reason}
        if self.paused_project_ids:
            out["pausedProjectIds"] = list(self.paused_project_ids)
        if self.paused_station_ids:
            out["pausedStationIds"] = list(self.paused_station_ids)
        return out


@dataclass(frozen=True)
class ResourceLimits:
    """Token spend, concurrency, timeouts (flat `group.field` -> int) and the kill switch.
    A host file may leave any value out (`None` = no ceiling stated)."""

    numbers: Mapping[str, int] = field(default_factory=dict)
    kill_switch: KillSwitch | None = None

    def get(self, name: str) -> int | None:
        """A numeric limit by dotted name, e.g. `tokenSpend.dailyPerAgent`."""
        return self.numbers.get(name)

    @classmethod
    def from_json(cls, doc: Any, *, where: str = "resource limits") -> ResourceLimits:
        """Decode a budget or host-limits document (every member optional) and build the limits;
        InvalidInput naming the JSON pointer when a value has the wrong type."""
        try:
            return cls.from_model(decode_as(doc, HostLimitsDoc, document=where))
        except DocumentTypeError as exc:
            raise InvalidInput(str(exc), where=where, details={"pointer": exc.pointer}) from exc

    @classmethod
    def from_model(cls, doc: Budget) -> ResourceLimits:
        """Build from a decoded budget (a policy's, a `resource-limits` document or a host file)."""
        nums: dict[str, int] = {}

        def put(name: str, value: int | UnsetType) -> None:
            if not isinstance(value, UnsetType):
                nums[name] = value

        ts, cc, to = doc.token_spend, doc.concurrency, doc.timeouts
        if not isinstance(ts, UnsetType):
            put("tokenSpend.dailyPerProject", ts.daily_per_project)
            put("tokenSpend.dailyPerAgent", ts.daily_per_agent)
            put("tokenSpend.dailyGlobal", ts.daily_global)
        if not isinstance(cc, UnsetType):
            put("concurrency.maxCommandsPerStation", cc.max_commands_per_station)
            put("concurrency.maxStationsPerProject", cc.max_stations_per_project)
            put("concurrency.maxGlobalInFlightCommands", cc.max_global_in_flight_commands)
        if not isinstance(to, UnsetType):
            put("timeouts.defaultCommandSec", to.default_command_sec)
            put("timeouts.maxCommandSec", to.max_command_sec)
        ks = doc.kill_switch
        kill = None
        if not isinstance(ks, UnsetType):
            kill = KillSwitch(
                ks.enabled is True,
                None if isinstance(ks.reason, UnsetType) else ks.reason,
                () if isinstance(ks.paused_project_ids, UnsetType) else ks.paused_project_ids,
                () if isinstance(ks.paused_station_ids, UnsetType) else ks.paused_station_ids,
            )
        return cls(nums, kill)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in NUMERIC_FIELDS:
            if name in self.numbers:
                group, key = name.split(".")
                out.setdefault(group, {})[key] = self.numbers[name]
        if self.kill_switch is not None:
            out["killSwitch"] = self.kill_switch.to_json()
        return out


def _relaxed(schema: Any) -> Any:
    """The host-file variant of the schema: every group and value optional (closed objects stay)."""
    if isinstance(schema, dict):
        return {k: _relaxed(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [_relaxed(v) for v in schema]
    return schema


def validate_limits(doc: Any, *, host: bool = False) -> list[Issue]:
    """Schema findings for a cartridge budget (all groups required) or a host file (all optional),
    the type finding when it does not decode, and the timeouts order."""
    if not host:
        issues = schema_issues(doc, SCHEMA, default_rule="budget.resource-limits")
    else:
        v = strict_validator(_relaxed(copy.deepcopy(load_schema(SCHEMA))))
        issues = [
            Issue(
                "host-limits.schema",
                "$" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in e.absolute_path),
                e.message,
            )
            for e in v.iter_errors(doc)
        ]
    try:
        model: Budget = (decode_as(doc, HostLimitsDoc, document="host resource limits") if host
                         else decode_as(doc, ResourceLimitsDoc, document="budget"))
    except DocumentTypeError as exc:
        return issues or [Issue("host-limits.schema" if host else "budget.resource-limits",
                                pointer_path(exc.pointer), str(exc))]
    to = model.timeouts
    if not isinstance(to, UnsetType):
        d, m = to.default_command_sec, to.max_command_sec
        if isinstance(d, int) and isinstance(m, int) and d > m:
            issues.append(
                Issue(
                    "budget.timeouts.order",
                    "$.timeouts.defaultCommandSec",
                    f"defaultCommandSec {d} exceeds maxCommandSec {m}",
                )
            )
    return issues


def load_host_limits(path: Path) -> ResourceLimits:
    """Read a host `resource-limits.yaml` (same shape as `budget`, every value optional)."""
    from acxoci.yamldoc import load_yaml

    try:
        text = read_bytes(path, "host limits file", limit=1 << 20).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not valid YAML: {parse_problem(exc)}", where=str(path)) from exc
    doc = load_yaml(text, what="host limits file", where=str(path))
    if doc is None:
        doc = {}
    if isinstance(doc, Mapping) and isinstance(doc.get("resourceLimits"), Mapping):
        doc = doc["resourceLimits"]
    issues = validate_limits(doc, host=True)
    if issues:
        raise InvalidInput(
            "host resource limits are invalid: " + "; ".join(map(str, issues)),
            where=str(path),
            details={"issues": [i.to_json() for i in issues]},
        )
    return ResourceLimits.from_json(doc, where=str(path))


@dataclass(frozen=True)
class EffectiveLimits:
    """The limits a run enforces, where each value came from, and which cartridge values were capped."""

    limits: ResourceLimits
    sources: Mapping[str, str]
    capped: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"limits": self.limits.to_json(), "sources": dict(self.sources), "capped": list(self.capped)}


def effective_limits(host: ResourceLimits | None, cartridge: ResourceLimits | None) -> EffectiveLimits:
    """Merge host over cartridge. Every number is a ceiling: the result is the host value, or the
    cartridge default when it is stricter (lower); a cartridge value above the host's is capped.
    With no host value, the cartridge default applies. The kill switch is on if either side turns it
    on (a cartridge can ask to pause, never un-pause), paused ids are the union, the host's reason first."""
    h = host or ResourceLimits()
    c = cartridge or ResourceLimits()
    nums: dict[str, int] = {}
    sources: dict[str, str] = {}
    capped: list[str] = []
    for name in NUMERIC_FIELDS:
        hv, cv = h.get(name), c.get(name)
        if hv is not None and cv is not None:
            if cv > hv:
                capped.append(name)
            nums[name], sources[name] = (cv, "cartridge") if cv < hv else (hv, "host")
        elif hv is not None:
            nums[name], sources[name] = hv, "host"
        elif cv is not None:
            nums[name], sources[name] = cv, "cartridge"
    d, m = nums.get("timeouts.defaultCommandSec"), nums.get("timeouts.maxCommandSec")
    if d is not None and m is not None and d > m:
        nums["timeouts.defaultCommandSec"] = m
        sources["timeouts.defaultCommandSec"] = sources["timeouts.maxCommandSec"]
    kill = None
    if h.kill_switch or c.kill_switch:
        hk, ck = h.kill_switch or KillSwitch(), c.kill_switch or KillSwitch()
        kill = KillSwitch(
            enabled=hk.enabled or ck.enabled,
            reason=hk.reason if hk.enabled or hk.reason else ck.reason,
            paused_project_ids=tuple(sorted(set(hk.paused_project_ids) | set(ck.paused_project_ids))),
            paused_station_ids=tuple(sorted(set(hk.paused_station_ids) | set(ck.paused_station_ids))),
        )
        sources["killSwitch"] = "host" if h.kill_switch and (hk.enabled or not ck.enabled) else "cartridge"
    return EffectiveLimits(ResourceLimits(nums, kill), sources, tuple(capped))
