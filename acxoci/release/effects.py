"""Typed release effects (the goal's todos) and the pure planner: plan → ordered effect list with
dependencies, continuation and monitors.

An effect is a proposal ("push this blob to that repository"); the interpreter decides whether it
may run (dependencies done, lease held, gate open, quota), runs it idempotently and closes it only
on a read-back. Effect ids are stable strings built from names (never from digests), so a resumed
run finds the same effects in the journal.

Kinds:
- `prepare`             local: build/verify the input, freeze its bytes and signed attestations
- `push_blob`           a config or content blob into a repository
- `push_manifest`       the artifact manifest
- `tag`                 point a tag at the manifest (gated: moving a tag needs `--allow-retag`)
- `attach_attestation`  a signed statement in one format (`legacy` .att tag or `bundle` referrer)
- `attach_envelope`     the cartridge's own DSSE envelope as a referrer
- `attach_credential`   a level credential as a referrer
- `publish_status_list` a status list under its moving tag
- `verify`              read back and judge the release under the acceptance policy (acceptance)
- `monitor`             observe an external fact the release waits for but does not write: a mirror
                        serving the digest, a status list propagated, an operator's approval

Every effect declares its continuation: `successor` (the effects its completion unblocks),
or `no_followup` (nothing follows it: after it the goal enters its terminal audit once nothing
else is pending). An observation that leaves a monitor unsatisfied continues as `active_goal`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from acxoci.errors import InvalidInput
from acxoci.release.plan import Approval, Cadence, ReleasePlan, plain

EffectKind = Literal["prepare", "push_blob", "push_manifest", "tag", "attach_attestation", "attach_envelope",
                     "attach_credential", "publish_status_list", "verify", "monitor"]
KINDS: tuple[EffectKind, ...] = ("prepare", "push_blob", "push_manifest", "tag", "attach_attestation",
                                 "attach_envelope", "attach_credential", "publish_status_list", "verify",
                                 "monitor")
REMOTE_WRITES: frozenset[str] = frozenset(KINDS) - {"prepare", "verify", "monitor"}
MonitorKind = Literal["mirror", "status_list", "approval"]
ContinuationMode = Literal["successor", "active_goal", "no_followup"]


class Continuation(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """What follows an effect: `successor` (these effects), `active_goal` (the goal stays active:
    review the frontier again), `no_followup` (nothing: the goal's terminal audit comes next)."""

    mode: ContinuationMode
    successors: tuple[str, ...] = ()


class MonitorSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True,
                  rename="camel", kw_only=True):
    """A monitor todo: what it observes (`target`: a mirror repository, a status list URL, an
    approval id), what satisfies it, and its cadence (backoff, freshness, escalation)."""

    kind: MonitorKind
    target: str
    of: str | None = None
    tags: tuple[str, ...] = ()
    valid_from: str | None = None
    digest: str | None = None
    interval_seconds: float = 0.0
    max_interval_seconds: float = 0.0
    freshness_seconds: float = 0.0
    escalate_after: int = 0
    escalate: Literal["gate", "replan"] = "gate"


class Effect(msgspec.Struct, frozen=True, forbid_unknown_fields=False, omit_defaults=True, kw_only=True):
    """One typed effect: what, on which artifact and repository, with which parameters, after what,
    and what follows it. (Journals written before continuation existed carry a derived `writes`
    field, which is ignored.)"""

    id: str
    kind: EffectKind
    artifact: str | None = None
    repository: str | None = None
    params: dict[str, str] = {}
    deps: tuple[str, ...] = ()
    continuation: Continuation = Continuation("no_followup")
    monitor: MonitorSpec | None = None

    @property
    def writes(self) -> bool:
        """May this effect write to a registry (as opposed to local work or read-only checks)?"""
        return self.kind in REMOTE_WRITES

    @property
    def registry(self) -> str | None:
        """The registry host this effect talks to (None for local effects and OCI layouts)."""
        where = self.repository
        if self.kind == "monitor" and self.monitor is not None and self.monitor.kind == "mirror":
            where = self.monitor.target
        if where is None or self.kind == "prepare" or where.startswith("oci-layout:"):
            return None
        if self.kind == "monitor" and self.monitor is not None and self.monitor.kind != "mirror":
            return None
        return where.split("/", 1)[0]

    def describe(self) -> str:
        """One human line."""
        p = self.params
        m = self.monitor
        if self.kind == "monitor" and m is not None:
            if m.kind == "mirror":
                return f"observe {self.artifact} at mirror {m.target} (of {m.of})"
            if m.kind == "status_list":
                return f"observe status list {m.target}"
            return f"wait for approval {m.target}"
        what = {
            "prepare": f"prepare {self.artifact} (verify input, freeze bytes, sign attestations)",
            "push_blob": f"push {p.get('role', '')} blob of {self.artifact}",
            "push_manifest": f"push manifest of {self.artifact}",
            "tag": f"tag {self.artifact} as :{p.get('tag', '')}",
            "attach_attestation": f"attach {p.get('format', '')} attestation to {self.artifact}",
            "attach_envelope": f"attach the DSSE envelope of {self.artifact}",
            "attach_credential": f"attach level credential to {self.artifact}",
            "publish_status_list": f"publish status list {self.artifact} as :{p.get('tag', '')}",
            "verify": f"read back and judge {self.artifact} under the acceptance policy",
            "monitor": f"observe {self.artifact}",
        }[self.kind]
        return f"{what} @ {self.repository}" if self.repository else what

    def to_json(self) -> dict[str, Any]:
        """The effect as the journal and `release plan --json` show it (with the derived `writes`)."""
        out: dict[str, Any] = plain(self)
        out["deps"] = list(self.deps)
        out["writes"] = self.writes
        return out


def _monitor(kind: MonitorKind, target: str, cadence: Cadence, **kw: Any) -> MonitorSpec:
    return MonitorSpec(kind=kind, target=target, interval_seconds=cadence.interval_seconds,
                       max_interval_seconds=cadence.max_interval_seconds,
                       freshness_seconds=cadence.freshness_seconds, escalate_after=cadence.escalate_after,
                       escalate=cadence.escalate, **kw)


def selects(selector: str, effect_id: str) -> bool:
    """Does an approval's `blocks` entry select this effect id (the id itself, or a prefix ending
    at a `:` or `@` boundary: `tag:latest` selects `tag:latest:agent@repo`)?"""
    return effect_id == selector or effect_id.startswith((selector + ":", selector + "@"))


def _gate(effects: list[Effect], approvals: Sequence[Approval]) -> list[Effect]:
    """Make every effect an approval selects depend on that approval's monitor (and nothing else)."""
    out: list[Effect] = []
    gates: list[tuple[Approval, str]] = []
    for a in approvals:
        gid = f"approval:{a.id}"
        hits = [e.id for e in effects if any(selects(s, e.id) for s in a.blocks)]
        if not hits:
            raise InvalidInput(f"approval {a.id!r} blocks {list(a.blocks)}, which selects no effect",
                               where="observe.approvals")
        gates.append((a, gid))
        out.append(Effect(id=gid, kind="monitor", artifact=None, params={"note": a.note} if a.note else {},
                          monitor=MonitorSpec(kind="approval", target=a.id, escalate_after=0)))
    for e in effects:
        extra = tuple(gid for a, gid in gates if any(selects(s, e.id) for s in a.blocks))
        out.append(msgspec.structs.replace(e, deps=e.deps + extra) if extra else e)
    return out


def _continue(effects: list[Effect]) -> list[Effect]:
    """Declare every effect's continuation from the dependency graph."""
    dependents: dict[str, list[str]] = {e.id: [] for e in effects}
    for e in effects:
        for d in e.deps:
            dependents[d].append(e.id)
    return [msgspec.structs.replace(e, continuation=Continuation("successor", tuple(dependents[e.id]))
                                    if dependents[e.id] else Continuation("no_followup"))
            for e in effects]


def plan_effects(plan: ReleasePlan) -> list[Effect]:
    """The effects of `plan`, dependencies first (pure: same plan → same list)."""
    # every artifact is prepared (and pre-checked) before anything is written: a goal one of whose
    # inputs the acceptance policy refuses can never close, so it writes nothing at all
    out: list[Effect] = [Effect(id=f"prepare:{rel.input.name}", kind="prepare", artifact=rel.input.name)
                         for rel in plan.releases]
    prepared = tuple(e.id for e in out)
    status_id: str | None = None
    if plan.status_list is not None:
        s = plan.status_list
        status_id = f"status-list:{s.name}@{s.repository}"
        out.append(Effect(id=status_id, kind="publish_status_list", artifact=s.name, repository=s.repository,
                          params={"tag": s.tag}, deps=prepared))
    tag_effects: dict[tuple[str, str], list[str]] = {}
    for rel in plan.releases:
        name = rel.input.name
        for dest in rel.to:
            repo = dest.repository
            at = f"{name}@{repo}"
            blobs = [Effect(id=f"blob:{role}:{at}", kind="push_blob", artifact=name, repository=repo,
                            params={"role": role}, deps=prepared) for role in ("config", "content")]
            out += blobs
            man = Effect(id=f"manifest:{at}", kind="push_manifest", artifact=name, repository=repo,
                         deps=tuple(b.id for b in blobs))
            out.append(man)
            after = [man.id]
            tags: list[str] = []
            for tag in dest.tags:
                eff = Effect(id=f"tag:{tag}:{at}", kind="tag", artifact=name, repository=repo,
                             params={"tag": tag}, deps=(man.id,))
                out.append(eff)
                after.append(eff.id)
                tags.append(eff.id)
            tag_effects[(name, repo)] = tags or [man.id]
            for fmt in plan.formats:
                eff = Effect(id=f"attest:{fmt}:{at}", kind="attach_attestation", artifact=name,
                             repository=repo, params={"format": fmt}, deps=(man.id,))
                out.append(eff)
                after.append(eff.id)
            if plan.envelope and rel.input.artifact_kind == "cartridge":
                eff = Effect(id=f"envelope:{at}", kind="attach_envelope", artifact=name, repository=repo,
                             deps=(man.id,))
                out.append(eff)
                after.append(eff.id)
            if rel.level_credential is not None:
                eff = Effect(id=f"credential:{at}", kind="attach_credential", artifact=name, repository=repo,
                             deps=(man.id,))
                out.append(eff)
                after.append(eff.id)
            if status_id is not None:
                after.append(status_id)
            out.append(Effect(id=f"verify:{at}", kind="verify", artifact=name, repository=repo,
                              params={"tags": ",".join(dest.tags)}, deps=tuple(after)))
    for m in plan.observe.mirrors:
        for rel in plan.releases:
            mirrored = next((d for d in rel.to if d.repository == m.of), None)
            if mirrored is None:
                continue
            name = rel.input.name
            out.append(Effect(id=f"monitor:mirror:{name}@{m.repository}", kind="monitor", artifact=name,
                              deps=tuple(tag_effects[(name, m.of)]),
                              monitor=_monitor("mirror", m.repository, m.cadence, of=m.of,
                                               tags=mirrored.tags)))
    for w in plan.observe.status_lists:
        out.append(Effect(id=f"monitor:status-list:{w.url}", kind="monitor",
                          deps=(status_id,) if status_id is not None else (),
                          monitor=_monitor("status_list", w.url, w.cadence, valid_from=w.valid_from,
                                           digest=w.digest)))
    out = _continue(_gate(out, plan.observe.approvals))
    check_graph(out)
    return out


def check_graph(effects: Sequence[Effect]) -> None:
    """Ids are unique and every dependency names an earlier effect (so the list is a valid order)."""
    seen: set[str] = set()
    for e in effects:
        if e.id in seen:
            raise InvalidInput(f"duplicate effect id {e.id}")
        for d in e.deps:
            if d not in seen:
                raise InvalidInput(f"effect {e.id} depends on {d}, which does not come before it")
        seen.add(e.id)
