"""The status projection of a release goal, computed from the journal ALONE (pure).

Each effect's state (open / done / blocked / deferred), its last receipt and evidence, its failure
class and the next action follow from replaying the journal's entries; nothing else is consulted
(not the lease, not the registry, not a cached file). `status.json` in the goal folder is only a
cached copy of this projection: deleting it and recomputing gives the same answer, and the
interpreter itself decides what to run from this projection, never from the cache."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from acxoci.errors import InvalidInput
from acxoci.release.effects import Effect
from acxoci.release.failures import NEXT_ACTION, Failure, State

GoalState = Literal["open", "done", "blocked", "deferred"]


@dataclass(frozen=True)
class EffectStatus:
    """One effect as the journal tells it."""

    effect: Effect
    state: State
    attempts: int
    wrote: bool
    receipt: dict[str, Any] | None
    evidence: dict[str, Any] | None
    failure: Failure | None
    updated_at: str | None
    next_action: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.effect.id, "kind": self.effect.kind, "description": self.effect.describe(),
                "deps": list(self.effect.deps), "state": self.state, "attempts": self.attempts,
                "wrote": self.wrote, "receipt": self.receipt, "evidence": self.evidence,
                "failure": self.failure.to_json() if self.failure else None, "updatedAt": self.updated_at,
                "nextAction": self.next_action}


@dataclass(frozen=True)
class RunSummary:
    """One run of the goal: who ran it, how many effects it executed and how many remote writes."""

    runner: str
    started_at: str
    ended_at: str | None
    executed: int | None
    writes: int | None
    allow_retag: bool
    outcome: str | None

    def to_json(self) -> dict[str, Any]:
        return {"runner": self.runner, "startedAt": self.started_at, "endedAt": self.ended_at,
                "executed": self.executed, "writes": self.writes, "allowRetag": self.allow_retag,
                "outcome": self.outcome}


@dataclass(frozen=True)
class GoalStatus:
    """The projection of a whole goal."""

    goal_id: str
    plan_path: str
    plan_digest: str
    created_at: str
    state: GoalState
    effects: tuple[EffectStatus, ...]
    runs: tuple[RunSummary, ...]

    def effect(self, effect_id: str) -> EffectStatus:
        for e in self.effects:
            if e.effect.id == effect_id:
                return e
        raise KeyError(effect_id)

    def counts(self) -> dict[str, int]:
        out = {"open": 0, "done": 0, "blocked": 0, "deferred": 0}
        for e in self.effects:
            out[e.state] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"goal": self.goal_id, "state": self.state, "plan": {"path": self.plan_path,
                                                                    "digest": self.plan_digest},
                "createdAt": self.created_at, "counts": self.counts(),
                "effects": [e.to_json() for e in self.effects], "runs": [r.to_json() for r in self.runs]}


def goal_entry(entries: Sequence[dict[str, Any]], where: str = "journal") -> dict[str, Any]:
    """The journal's opening `goal` entry (InvalidInput if the journal does not start with one)."""
    if not entries or entries[0].get("type") != "goal":
        raise InvalidInput("journal does not start with a goal entry", where=where)
    return entries[0]


def _next(e: Effect, state: State, failure: Failure | None, states: dict[str, State], goal: str) -> str:
    if state == "done":
        return "none"
    if failure is not None and state in ("blocked", "deferred"):
        return NEXT_ACTION[failure.cls].replace("GOAL", goal)
    waiting = [d for d in e.deps if states.get(d) != "done"]
    if waiting:
        return f"waits for {waiting[0]}"
    return f"run: `acx release resume {goal}`"


def project(entries: Sequence[dict[str, Any]], where: str = "journal") -> GoalStatus:
    """Replay journal entries into the goal's status (pure)."""
    g = goal_entry(entries, where)
    effects = [Effect.from_json(o) for o in g.get("effects", [])]
    known = {e.id for e in effects}
    state: dict[str, State] = {e.id: "open" for e in effects}
    attempts: dict[str, int] = dict.fromkeys(known, 0)
    wrote: dict[str, bool] = dict.fromkeys(known, False)
    last: dict[str, dict[str, Any]] = {}
    runs: list[dict[str, Any]] = []
    for ent in entries[1:]:
        t = ent.get("type")
        if t == "effect":
            eid = str(ent.get("effect"))
            if eid not in known:
                raise InvalidInput(f"journal entry {ent.get('seq')} names unknown effect {eid}", where=where)
            to = ent.get("to")
            if to not in ("open", "done", "blocked", "deferred"):
                raise InvalidInput(f"journal entry {ent.get('seq')} has bad state {to!r}", where=where)
            state[eid] = to
            if ent.get("attempt") is not None:
                attempts[eid] += 1
            wrote[eid] = wrote[eid] or bool(ent.get("wrote"))
            last[eid] = ent
        elif t == "run" and ent.get("event") == "start":
            runs.append({"runner": str(ent.get("runner")), "startedAt": str(ent.get("at")),
                         "allowRetag": bool(ent.get("allowRetag"))})
        elif t == "run" and ent.get("event") == "end" and runs:
            runs[-1].update(endedAt=ent.get("at"), executed=ent.get("executed"), writes=ent.get("writes"),
                            outcome=ent.get("outcome"))
    views: list[EffectStatus] = []
    for e in effects:
        ent = last.get(e.id, {})
        fobj = ent.get("failure")
        failure = Failure.from_json(fobj) if isinstance(fobj, dict) and state[e.id] != "done" else None
        views.append(EffectStatus(e, state[e.id], attempts[e.id], wrote[e.id], ent.get("receipt"),
                                  ent.get("evidence"), failure, ent.get("at"),
                                  _next(e, state[e.id], failure, state, str(g.get("goal")))))
    states = set(state.values())
    overall: GoalState = ("done" if states <= {"done"} else "blocked" if "blocked" in states
                          else "deferred" if "deferred" in states else "open")
    run_views = tuple(RunSummary(r["runner"], r["startedAt"], r.get("endedAt"), r.get("executed"),
                                 r.get("writes"), r["allowRetag"], r.get("outcome")) for r in runs)
    return GoalStatus(str(g.get("goal")), str(g.get("planPath")), str(g.get("planDigest")),
                      str(g.get("createdAt")), overall, tuple(views), run_views)
