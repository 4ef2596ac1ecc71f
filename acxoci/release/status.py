"""The status projection of a release goal, computed from the journal ALONE (pure).

Each effect's state (open / done / blocked / deferred), its last receipt and evidence, its failure
class and next action; each monitor's targets and schedule; the open gates; the ledger (spend so
far); the registries' health and throttle signals; the quota state; the terminal audit; and the
next safe transition and why: all follow from replaying the journal's typed entries and an
explicit `now` (by default the time of the last entry); nothing else is consulted (not the lease,
not the registry, not a cached file). `status.json` in the goal folder is only a cached copy of
this projection, and the interpreter itself decides what to run from this projection."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.errors import InvalidInput
from acxoci.release.effects import Effect, MonitorSpec, check_graph
from acxoci.release.failures import NEXT_ACTION, Failure, State
from acxoci.release.journal import (
    AUDIT_CHECKS,
    ApprovalEntry,
    AttemptEntry,
    AuditRecord,
    CloseoutEntry,
    EffectEntry,
    Entry,
    GoalEntry,
    GoalIdentity,
    ObservationEntry,
    PauseEntry,
    Progress,
    QuotaRecord,
    RepairEntry,
    RunEntry,
    SignalEntry,
    StopEntry,
    TargetObservation,
    UnpauseEntry,
    iso,
    parse_iso,
)
from acxoci.release.plan import plain
from acxoci.release.quota import (
    Ledger,
    QuotaDecision,
    QuotaInputs,
    RegistrySignal,
    Todo,
    budget,
    decide_state,
    fold_ledger,
)

GoalState = Literal["open", "done", "blocked", "deferred"]
CloseoutState = Literal["none", "pending", "interrupted", "failed", "done"]


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
    done_at: str | None = None
    last_attempt: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.effect.id, "kind": self.effect.kind, "description": self.effect.describe(),
                "deps": list(self.effect.deps), "continuation": plain(self.effect.continuation),
                "state": self.state, "attempts": self.attempts, "wrote": self.wrote, "receipt": self.receipt,
                "evidence": self.evidence, "failure": self.failure.to_json() if self.failure else None,
                "updatedAt": self.updated_at, "nextAction": self.next_action}


@dataclass(frozen=True)
class MonitorStatus:
    """A monitor todo: its targets as last observed, how often, and when next."""

    effect_id: str
    spec: MonitorSpec
    state: State
    targets: tuple[TargetObservation, ...]
    observations: int
    last_at: str | None
    next_at: str | None
    satisfied_at: str | None
    escalated: str | None
    approved_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.effect_id, "kind": self.spec.kind, "target": self.spec.target, "state": self.state,
                "satisfied": self.state == "done", "observations": self.observations,
                "lastObservedAt": self.last_at,
                "nextObservationAt": self.next_at, "satisfiedAt": self.satisfied_at,
                "freshnessSeconds": self.spec.freshness_seconds, "escalateAfter": self.spec.escalate_after,
                "escalate": self.spec.escalate, "escalated": self.escalated, "approvedBy": self.approved_by,
                "targets": [{"target": t.target, "value": t.value, "ok": t.ok, "changed": t.changed,
                             "noChange": t.no_change, "error": t.error} for t in self.targets]}


@dataclass(frozen=True)
class Gate:
    """A decision a person owes: what kind, what it blocks (and only that), why."""

    id: str
    kind: Literal["approval", "retag", "monitor"]
    blocks: tuple[str, ...]
    reason: str
    action: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "blocks": list(self.blocks), "reason": self.reason,
                "action": self.action}


@dataclass(frozen=True)
class RunSummary:
    """One run of the goal: who ran it, what it attempted, wrote and achieved."""

    runner: str
    started_at: str
    ended_at: str | None
    executed: int | None
    writes: int | None
    allow_retag: bool
    outcome: str | None
    attempted: int | None = None
    progress: Progress | None = None
    failures: tuple[Failure, ...] = ()

    @property
    def without_progress(self) -> bool:
        """It tried effects, resolved nothing, and met a failure that is not a person's gate."""
        progressed = self.progress is not None and self.progress.any
        return (self.ended_at is not None and bool(self.attempted) and not progressed
                and any(f.cls != "gate" for f in self.failures))

    def to_json(self) -> dict[str, Any]:
        return {"runner": self.runner, "startedAt": self.started_at, "endedAt": self.ended_at,
                "executed": self.executed, "writes": self.writes, "allowRetag": self.allow_retag,
                "outcome": self.outcome, "attempted": self.attempted,
                "progress": plain(self.progress) if self.progress else None,
                "failures": [f.to_json() for f in self.failures]}


@dataclass(frozen=True)
class Orphan:
    """An attempt that began remote work and never journaled its outcome (the process died)."""

    effect: str
    attempt: int
    key: str
    booked: bool  # its spend reached the ledger before the crash


@dataclass(frozen=True)
class Closeout:
    """The terminal audit: not due, due (pending), interrupted, failed, or done."""

    state: CloseoutState
    at: str | None = None
    audit: dict[str, Any] | None = None
    failure: Failure | None = None

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "at": self.at, "audit": self.audit,
                "failure": self.failure.to_json() if self.failure else None}


@dataclass(frozen=True)
class Transition:
    """The next safe transition: what to do, the command, why, and not before when."""

    action: str
    command: str | None
    why: str
    at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "command": self.command, "why": self.why, "at": self.at}


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
    instance: str = ""
    identity: GoalIdentity = field(default_factory=GoalIdentity)
    monitors: tuple[MonitorStatus, ...] = ()
    gates: tuple[Gate, ...] = ()
    ledger: Ledger = field(default_factory=lambda: Ledger(""))
    signals: dict[str, RegistrySignal] = field(default_factory=dict)
    quotas: tuple[QuotaRecord, ...] = ()
    quota: QuotaDecision = field(default_factory=lambda: QuotaDecision("waiting", ""))
    paused: PauseEntry | None = None
    stop: StopEntry | None = None
    closeout: Closeout = field(default_factory=lambda: Closeout("none"))
    orphans: tuple[Orphan, ...] = ()
    no_progress_runs: int = 0
    approvals: dict[str, ApprovalEntry] = field(default_factory=dict)
    next_transition: Transition = field(default_factory=lambda: Transition("none", None, ""))
    wait_seconds: float = 0.0
    freshness_seconds: float = 600.0
    now: datetime | None = None
    todos: tuple[Todo, ...] = ()

    def effect(self, effect_id: str) -> EffectStatus:
        for e in self.effects:
            if e.effect.id == effect_id:
                return e
        raise KeyError(effect_id)

    def monitor(self, effect_id: str) -> MonitorStatus:
        for m in self.monitors:
            if m.effect_id == effect_id:
                return m
        raise KeyError(effect_id)

    def counts(self) -> dict[str, int]:
        out = {"open": 0, "done": 0, "blocked": 0, "deferred": 0}
        for e in self.effects:
            out[e.state] += 1
        return out

    def quota_json(self) -> dict[str, Any]:
        regs = sorted({e.effect.registry for e in self.effects if e.effect.registry}
                      | set(self.ledger.registries()) | {q.host for q in self.quotas})
        rows: list[dict[str, Any]] = []
        for reg in regs:
            sig = self.signals.get(reg, RegistrySignal())
            row: dict[str, Any] = {"host": reg, "health": "unhealthy" if sig.unhealthy else "ok",
                                   "unhealthy": sig.unhealthy,
                                   "throttledUntil": (iso(sig.throttled_until) if sig.throttled_until
                                                      else None),
                                   "spent": self.ledger.net(reg).to_json()}
            q = next((x for x in self.quotas if x.host == reg), None)
            if q is not None and self.now is not None:
                b = budget(self.ledger, q, self.now)
                row["window"] = {"start": iso(b.window_start), "end": iso(b.window_end),
                                 "seconds": q.window_seconds, "spent": b.spent.to_json(), "left": b.left()}
                row["budget"] = {"requests": q.requests, "bytes": q.bytes, "publishes": q.publishes}
            rows.append(row)
        d = self.quota
        return {"state": d.state, "reason": d.reason, "focus": d.focus,
                "until": iso(d.until) if d.until else None,
                "paused": self.paused is not None, "registries": rows, "spend": self.ledger.to_json()}

    def to_json(self) -> dict[str, Any]:
        return {"goal": self.goal_id, "instance": self.instance, "state": self.state,
                "plan": {"path": self.plan_path, "digest": self.plan_digest}, "createdAt": self.created_at,
                "identity": plain(self.identity), "quota": self.quota_json(),
                "monitors": [m.to_json() for m in self.monitors],
                "gates": [g.to_json() for g in self.gates],
                "closeout": self.closeout.to_json(),
                "stop": plain(self.stop) if self.stop else None,
                "paused": plain(self.paused) if self.paused else None,
                "noProgressRuns": self.no_progress_runs,
                "nextTransition": self.next_transition.to_json(),
                "counts": self.counts(), "effects": [e.to_json() for e in self.effects],
                "runs": [r.to_json() for r in self.runs]}


def goal_entry(entries: Sequence[Entry], where: str = "journal") -> GoalEntry:
    """The journal's opening `goal` entry (InvalidInput if the journal does not start with one)."""
    if not entries or not isinstance(entries[0], GoalEntry):
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
    if e.kind == "monitor" and e.monitor is not None and e.monitor.kind == "approval":
        return f"approve: `acx release approve {goal} {e.monitor.target} --by NAME`"
    return f"run: `acx release resume {goal}`"


@dataclass
class _Replay:
    """Mutable state of one replay (local to `project`)."""

    state: dict[str, State]
    attempts: dict[str, int]
    wrote: dict[str, bool]
    last: dict[str, EffectEntry] = field(default_factory=dict)
    done_at: dict[str, str] = field(default_factory=dict)
    started: dict[tuple[str, int], AttemptEntry] = field(default_factory=dict)
    max_attempt: dict[str, int] = field(default_factory=dict)
    finished: set[tuple[str, int]] = field(default_factory=set)
    observations: dict[str, list[ObservationEntry]] = field(default_factory=dict)
    baseline: dict[str, int] = field(default_factory=dict)
    signals: dict[str, RegistrySignal] = field(default_factory=dict)
    approvals: dict[str, ApprovalEntry] = field(default_factory=dict)
    runs: list[RunSummary] = field(default_factory=list)
    paused: PauseEntry | None = None
    stop: StopEntry | None = None
    repaired_at: int = 0
    closeouts: list[tuple[int, CloseoutEntry, Entry]] = field(default_factory=list)
    last_change: int = 0


def _replay(g: GoalEntry, entries: Sequence[Entry], where: str) -> _Replay:
    known = {e.id: e for e in g.effects}
    r = _Replay({e.id: "open" for e in g.effects}, dict.fromkeys(known, 0), dict.fromkeys(known, False))

    def check(eid: str, seq: int) -> None:
        if eid not in known:
            raise InvalidInput(f"journal entry {seq} names unknown effect {eid}", where=where)

    for i, ent in enumerate(entries[1:], start=1):
        if isinstance(ent, GoalEntry):
            raise InvalidInput(f"journal entry {ent.seq} opens a second goal", where=where)
        if isinstance(ent, EffectEntry):
            check(ent.effect, ent.seq)
            if ent.to == "open" and r.state[ent.effect] == "blocked":
                r.baseline[ent.effect] = len(r.observations.get(ent.effect, []))  # a person reopened it
            r.state[ent.effect] = ent.to
            if ent.attempt is not None:
                r.attempts[ent.effect] += 1
                r.finished.add((ent.effect, ent.attempt))
                r.max_attempt[ent.effect] = max(r.max_attempt.get(ent.effect, 0), ent.attempt)
            r.wrote[ent.effect] = r.wrote[ent.effect] or ent.wrote
            r.last[ent.effect] = ent
            if ent.to == "done":
                r.done_at[ent.effect] = ent.at
            r.last_change = i
        elif isinstance(ent, AttemptEntry):
            check(ent.effect, ent.seq)
            r.started[(ent.effect, ent.attempt)] = ent
            r.max_attempt[ent.effect] = max(r.max_attempt.get(ent.effect, 0), ent.attempt)
        elif isinstance(ent, ObservationEntry):
            check(ent.effect, ent.seq)
            if known[ent.effect].monitor is None:
                raise InvalidInput(f"journal entry {ent.seq} observes {ent.effect}, which is no monitor",
                                   where=where)
            r.observations.setdefault(ent.effect, []).append(ent)
        elif isinstance(ent, SignalEntry):
            cur = r.signals.get(ent.registry, RegistrySignal())
            if ent.signal == "unhealthy":
                cur = RegistrySignal(ent.detail or f"HTTP {ent.status}", ent.at, cur.throttled_until)
            elif ent.signal == "healthy":
                cur = RegistrySignal(None, None, cur.throttled_until)
            else:
                until = parse_iso(ent.until, f"{where}: entry {ent.seq}.until") if ent.until else None
                cur = RegistrySignal(cur.unhealthy, cur.unhealthy_at, until)
            r.signals[ent.registry] = cur
        elif isinstance(ent, ApprovalEntry):
            r.approvals.setdefault(ent.approval, ent)
        elif isinstance(ent, PauseEntry):
            r.paused = ent
        elif isinstance(ent, UnpauseEntry):
            r.paused = None
        elif isinstance(ent, StopEntry):
            # the first stop holds, but replan_required (final: nothing lifts it) outranks a repair stop
            if r.stop is None or (ent.cls == "replan_required" and r.stop.cls != "replan_required"):
                r.stop = ent
        elif isinstance(ent, RepairEntry):
            if r.stop is not None and r.stop.cls == "repair_required":
                r.stop = None
            r.repaired_at = len(r.runs)
        elif isinstance(ent, CloseoutEntry):
            r.closeouts.append((i, ent, entries[i - 1]))
        elif isinstance(ent, RunEntry) and ent.event == "start":
            r.runs.append(RunSummary(ent.runner, ent.at, None, None, None, ent.allow_retag, None))
        elif isinstance(ent, RunEntry) and ent.event == "end" and r.runs:
            last = r.runs[-1]
            r.runs[-1] = RunSummary(last.runner, last.started_at, ent.at, ent.executed, ent.writes,
                                    last.allow_retag, ent.outcome, ent.attempted, ent.progress, ent.failures)
    return r


def closeout_problem(entry: CloseoutEntry, previous: Entry, all_done: bool, where: str) -> str | None:
    """Why a `closeout done` entry is not a passed terminal audit (None: it is one): every todo is
    done, its audit decodes as an audit that passed every check, and it follows the entry before it
    (a greater `seq`, an `at` not earlier). A line appended by hand is not DONE."""
    if not all_done:
        return "not every todo is done"
    if entry.seq <= previous.seq:
        return f"its seq {entry.seq} does not follow {previous.seq}"
    try:
        if parse_iso(entry.at, where) < parse_iso(previous.at, where):
            return f"its time {entry.at} is earlier than the entry before it ({previous.at})"
    except InvalidInput as exc:
        return exc.message
    try:
        audit = decode_as(entry.audit, AuditRecord, document=f"{where}: closeout {entry.seq}")
    except DocumentTypeError as exc:
        return f"it carries no audit record ({exc})"
    checks = [f.check for f in audit.findings]
    if sorted(checks) != sorted(AUDIT_CHECKS):
        return f"its audit made the checks {checks}, not {list(AUDIT_CHECKS)}"
    failed = [f.check for f in audit.findings if not f.ok]
    if not audit.ok or failed:
        return f"its audit did not pass ({', '.join(failed) or 'not ok'})"
    return None


def _closeout(r: _Replay, all_done: bool, where: str) -> Closeout:
    if r.closeouts:
        i, last, before = r.closeouts[-1]
        if last.event == "done" and i > r.last_change:
            problem = closeout_problem(last, before, all_done, where)
            if problem is None:
                return Closeout("done", last.at, last.audit)
            return Closeout("pending" if all_done else "none", last.at, None, Failure(
                "terminal_closeout_failed", f"journal entry {last.seq} says the goal closed, but it is not "
                f"a passed terminal audit: {problem}; the goal is not done"))
        if last.event == "begin":
            return Closeout("interrupted", last.at, None, Failure(
                "terminal_closeout_failed", "the terminal audit began and never finished (the process "
                "died after everything was spent): only the closeout is redone"))
        if last.event == "failed" and i > r.last_change:
            return Closeout("failed", last.at, last.audit, last.failure)
    return Closeout("pending") if all_done else Closeout("none")


def _monitor_view(e: Effect, r: _Replay) -> MonitorStatus:
    assert e.monitor is not None
    obs = r.observations.get(e.id, [])
    last = obs[-1] if obs else None
    current = obs[r.baseline.get(e.id, 0):]
    esc = current[-1].escalated if current and r.state[e.id] == "blocked" else None
    approved = r.approvals.get(e.monitor.target) if e.monitor.kind == "approval" else None
    return MonitorStatus(e.id, e.monitor, r.state[e.id], current[-1].targets if current else (),
                         len(obs), last.at if last else None,
                         current[-1].next_at if current and r.state[e.id] != "done" else None,
                         r.done_at.get(e.id), esc, approved.by if approved else None)


def previous_targets(status: GoalStatus, effect_id: str) -> dict[str, TargetObservation]:
    """The targets of a monitor's last observation since a person last reopened it."""
    return {t.target: t for t in status.monitor(effect_id).targets}


def project(entries: Sequence[Entry], where: str = "journal", *, now: datetime | None = None) -> GoalStatus:
    """Replay journal entries into the goal's status (pure; `now` defaults to the last entry's time)."""
    g = goal_entry(entries, where)
    effects = list(g.effects)
    check_graph(effects)
    for q in g.quota:
        if not 1 <= q.window_seconds <= 366 * 86400:
            raise InvalidInput(f"quota window of {q.host} is {q.window_seconds} s", where=where)
        if any(n is not None and n < 1 for n in (q.requests, q.bytes, q.publishes)):
            raise InvalidInput(f"quota of {q.host} has a budget below 1 (it could never be spent)",
                               where=where)
    r = _replay(g, entries, where)
    instance = g.instance or f"{g.goal}@{g.created_at}"
    when = now or parse_iso(entries[-1].at or g.created_at, where)
    ledger = fold_ledger(entries, instance)
    failures: dict[str, Failure | None] = {}
    views: list[EffectStatus] = []
    for e in effects:
        ent = r.last.get(e.id)
        failure = ent.failure if ent is not None and r.state[e.id] != "done" else None
        failures[e.id] = failure
        views.append(EffectStatus(e, r.state[e.id], r.attempts[e.id], r.wrote[e.id],
                                  ent.receipt if ent else None, ent.evidence if ent else None, failure,
                                  ent.at if ent else None, _next(e, r.state[e.id], failure, r.state, g.goal),
                                  r.done_at.get(e.id), r.max_attempt.get(e.id, 0)))
    monitors = tuple(_monitor_view(e, r) for e in effects if e.monitor is not None)
    by_monitor = {m.effect_id: m for m in monitors}
    all_done = all(s == "done" for s in r.state.values())
    closeout = _closeout(r, all_done, where)
    booked = ledger.attempt_keys()
    orphans = tuple(Orphan(eid, n, a.key, a.key in booked) for (eid, n), a in r.started.items()
                    if (eid, n) not in r.finished)
    todos: list[Todo] = []
    gates: list[Gate] = []
    dependents = {e.id: [d.id for d in effects if e.id in d.deps] for e in effects}
    for e in effects:
        gate: str | None = None
        not_before = None
        m = by_monitor.get(e.id)
        if m is not None and e.monitor is not None and r.state[e.id] != "done":
            if e.monitor.kind == "approval" and m.approved_by is None:
                gate = (f"approval {e.monitor.target} is not recorded: "
                        f"`acx release approve {g.goal} {e.monitor.target} --by NAME`")
                gates.append(Gate(e.id, "approval", tuple(dependents[e.id]),
                                  f"approval {e.monitor.target} is not recorded",
                                  f"acx release approve {g.goal} {e.monitor.target} --by NAME"))
            if m.escalated == "gate":
                why = failures[e.id]
                gates.append(Gate(e.id, "monitor", tuple(dependents[e.id]) or (e.id,),
                                  why.message if why is not None else "monitor escalated",
                                  f"look at {e.monitor.target}, then acx release resume {g.goal}"))
            if m.next_at:
                not_before = parse_iso(m.next_at, f"{where}: {e.id}.nextAt")
        f = failures[e.id]
        if f is not None and f.cls == "gate" and m is None:
            gates.append(Gate(e.id, "retag", (e.id,), f.message,
                              f"acx release run {g.plan_path} --allow-retag"))
        todos.append(Todo(e.id, r.state[e.id], e.deps, e.registry, e.writes, f.cls if f else None, gate,
                          not_before, monitor=e.monitor is not None))
    paused = None
    if r.paused is not None:
        paused = f"paused by {r.paused.by or 'the operator'}"
        paused += f": {r.paused.reason}" if r.paused.reason else ""
    stopped = f"stopped: {r.stop.cls}: {r.stop.reason}" if r.stop else None
    decision = decide_state(QuotaInputs(todos, r.signals, g.quota, ledger, when, paused, stopped,
                                        closeout_due=all_done and closeout.state != "done"))
    no_progress = 0
    for run in reversed(r.runs[r.repaired_at:]):
        if run.progress is not None and run.progress.any:
            break
        if run.without_progress:
            no_progress += 1
    states = set(r.state.values())
    overall: GoalState
    if closeout.state == "done":
        overall = "done"
    elif r.stop is not None or "blocked" in states:
        overall = "blocked"
    elif "deferred" in states or closeout.state in ("interrupted", "failed"):
        overall = "deferred"
    else:
        overall = "open"
    status = GoalStatus(g.goal, g.plan_path, g.plan_digest, g.created_at, overall, tuple(views),
                        tuple(r.runs), instance, g.identity, monitors, tuple(gates), ledger, r.signals,
                        g.quota, decision, r.paused, r.stop, closeout, orphans, no_progress, r.approvals,
                        wait_seconds=g.wait_seconds, freshness_seconds=g.freshness_seconds, now=when,
                        todos=tuple(todos))
    return _with_transition(status)


def _with_transition(s: GoalStatus) -> GoalStatus:
    from dataclasses import replace

    return replace(s, next_transition=next_transition(s))


def next_transition(s: GoalStatus) -> Transition:
    """The next safe transition and why (pure over the projection)."""
    goal = s.goal_id
    resume = f"acx release resume {goal}"
    d = s.quota
    if s.state == "done":
        return Transition("none", None, "the terminal audit passed: the goal is done")
    if s.stop is not None:
        cmd = f'{resume} --repaired "WHAT WAS FIXED"' if s.stop.cls == "repair_required" else None
        recovery = NEXT_ACTION[s.stop.cls].replace("GOAL", goal)
        return Transition(s.stop.cls, cmd, f"{s.stop.reason}; {recovery}")
    if d.state == "blocked_health":
        return Transition("probe", resume, d.reason)
    if d.state == "operator_gate":
        gate = next((gt for gt in s.gates if gt.id == d.focus), s.gates[0] if s.gates else None)
        return Transition("decide", gate.action if gate else None,
                          d.reason + (" (only the gated work waits; the rest runs)" if gate else ""))
    if d.state == "focus_wait":
        blocked = next((e for e in s.effects if e.state == "blocked"), None)
        if blocked is not None and blocked.failure is not None:
            return Transition(blocked.failure.cls, None, f"{d.reason}: {blocked.next_action}")
        return Transition("wait", None, d.reason)
    if d.state == "eligible":
        if s.closeout.state in ("interrupted", "failed"):
            return Transition("closeout", resume, "terminal_closeout_failed: redo the terminal audit only "
                              "(everything was spent already)")
        if d.focus is None:
            return Transition("closeout", resume, d.reason)
        return Transition("run", resume, d.reason)
    if d.state in ("waiting", "throttled"):
        at = iso(d.until) if d.until else None
        return Transition("wait", resume if at else None, d.reason, at)
    return Transition("unpause", f"acx release unpause {goal}", d.reason)
