"""Quota: the ledger of what a goal spent at each registry, the per-registry budgets, and the quota
state of the goal (pure: decisions over journal entries and an explicit `now`).

The ledger is the journal's `spend` and `void` entries of ONE goal instance. A spend is keyed (the
attempt, observation or probe that made the requests, and the registry), so an event replayed
after a crash never counts twice; a void names the spend it corrects and subtracts from it (never
below zero) without removing it. Entries of another goal instance are refused and counted, never
charged to this one. Windows are fixed, aligned to the Unix epoch, per registry.

The quota state answers "may the next run do work, and if not, why", in this order (the first
whose condition holds):

1. blocked_health: a registry with pending work answered 5xx or could not be reached, and no probe
   has answered since (prerequisite first: nothing waits for budget on a sick registry);
2. operator_gate: a person must decide for pending work (an approval not yet recorded, a tag that
   would move, a monitor escalated to a gate) — only the gated work waits;
3. focus_wait: the goal's focus (its first open todo) waits on a predecessor that is blocked;
4. eligible: something can run now (a todo, a due observation, the terminal audit);
5. waiting: nothing can run now but an observation is scheduled (or there is no ready work);
6. throttled: the work that remains is on a registry that said 429 (until its Retry-After) or whose
   window budget is spent (until the window ends);
7. paused: the operator paused the goal, or it stopped (repair_required / replan_required).

4–6 hold only when the goal is not paused; a stopped goal is paused whatever else holds (compute 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from acxoci.release.journal import Entry, QuotaRecord, SpendEntry, VoidEntry, iso

QuotaState = Literal["blocked_health", "operator_gate", "focus_wait", "eligible", "waiting", "throttled",
                     "paused"]
QUOTA_STATE_ORDER: tuple[QuotaState, ...] = ("blocked_health", "operator_gate", "focus_wait", "eligible",
                                             "waiting", "throttled", "paused")
DEFAULT_WINDOW = 3600.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Amount:
    """Requests, body bytes and publishes (effects that stored something)."""

    requests: int = 0
    bytes: int = 0
    publishes: int = 0

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.requests + other.requests, self.bytes + other.bytes,
                      self.publishes + other.publishes)

    def __sub__(self, other: Amount) -> Amount:
        return Amount(self.requests - other.requests, self.bytes - other.bytes,
                      self.publishes - other.publishes)

    def clamp(self, ceiling: Amount) -> Amount:
        """Each field within [0, ceiling's]."""
        return Amount(max(0, min(self.requests, ceiling.requests)), max(0, min(self.bytes, ceiling.bytes)),
                      max(0, min(self.publishes, ceiling.publishes)))

    def to_json(self) -> dict[str, int]:
        return {"requests": self.requests, "bytes": self.bytes, "publishes": self.publishes}


def window_of(t: datetime, seconds: float) -> tuple[datetime, datetime]:
    """The fixed window (start, end) of `seconds` that holds `t` (aligned to the Unix epoch)."""
    n = math.floor((t - EPOCH).total_seconds() / seconds)
    start = EPOCH + timedelta(seconds=n * seconds)
    return start, start + timedelta(seconds=seconds)


@dataclass(frozen=True)
class Ledger:
    """The net spend of one goal instance: spends by key (first one wins), voids by key."""

    instance: str
    spends: Mapping[str, SpendEntry] = field(default_factory=dict)
    voided: Mapping[str, Amount] = field(default_factory=dict)
    replayed: int = 0
    foreign: int = 0
    rejected: int = 0

    def net_of(self, key: str) -> Amount:
        s = self.spends[key]
        return Amount(s.requests, s.bytes, s.publishes) - self.voided.get(key, Amount())

    def net(self, registry: str | None = None, window: str | None = None) -> Amount:
        """Net spend, optionally of one registry and one window."""
        total = Amount()
        for key, s in self.spends.items():
            if (registry is None or s.registry == registry) and (window is None or s.window == window):
                total = total + self.net_of(key)
        return total

    def registries(self) -> list[str]:
        return sorted({s.registry for s in self.spends.values()})

    def attempt_keys(self) -> set[str]:
        """Every attempt (or observation, probe, audit) that has a booked spend."""
        return {s.attempt_key for s in self.spends.values()}

    def open_estimates(self, effect: str) -> list[SpendEntry]:
        """Estimated spends of an effect whose delivery has not been voided."""
        return [s for k, s in self.spends.items()
                if s.effect == effect and s.estimated and self.net_of(k).publishes > 0]

    def to_json(self) -> dict[str, Any]:
        per: dict[str, dict[str, Any]] = {}
        for reg in self.registries():
            windows = sorted({s.window for s in self.spends.values() if s.registry == reg})
            per[reg] = {"total": self.net(reg).to_json(),
                        "windows": {w: self.net(reg, w).to_json() for w in windows}}
        return {"total": self.net().to_json(), "registries": per, "entries": len(self.spends),
                "voids": len(self.voided), "replayed": self.replayed, "foreign": self.foreign,
                "rejected": self.rejected,
                "estimated": sum(1 for s in self.spends.values() if s.estimated)}


def fold_ledger(entries: Iterable[Entry], instance: str) -> Ledger:
    """The ledger of `instance` from journal entries (pure, idempotent: a replayed key counts once)."""
    spends: dict[str, SpendEntry] = {}
    voided: dict[str, Amount] = {}
    void_keys: set[str] = set()
    replayed = foreign = rejected = 0
    for e in entries:
        if isinstance(e, SpendEntry):
            if e.instance != instance:
                foreign += 1
            elif e.key in spends:
                replayed += 1
            elif min(e.requests, e.bytes, e.publishes) < 0:
                rejected += 1
            else:
                spends[e.key] = e
        elif isinstance(e, VoidEntry):
            if e.instance != instance:
                foreign += 1
            elif e.key in void_keys:
                replayed += 1
            elif e.voids not in spends:
                rejected += 1
            else:
                void_keys.add(e.key)
                s = spends[e.voids]
                have = Amount(s.requests, s.bytes, s.publishes)
                already = voided.get(e.voids, Amount())
                voided[e.voids] = (already + Amount(e.requests, e.bytes, e.publishes)).clamp(have)
    return Ledger(instance, spends, voided, replayed, foreign, rejected)


@dataclass(frozen=True)
class Budget:
    """One registry's budget in the current window and what is left of it."""

    quota: QuotaRecord
    window_start: datetime
    window_end: datetime
    spent: Amount

    def left(self) -> dict[str, int | None]:
        q = self.quota
        return {"requests": None if q.requests is None else q.requests - self.spent.requests,
                "bytes": None if q.bytes is None else q.bytes - self.spent.bytes,
                "publishes": None if q.publishes is None else q.publishes - self.spent.publishes}

    def allows(self, *, writes: bool, bytes_needed: int) -> str | None:
        """None if one more effect fits the window; otherwise what is exhausted."""
        left = self.left()
        if left["requests"] is not None and left["requests"] <= 0:
            return f"{self.quota.requests} requests"
        if left["bytes"] is not None and left["bytes"] < max(1, bytes_needed):
            return f"{self.quota.bytes} bytes"
        if writes and left["publishes"] is not None and left["publishes"] <= 0:
            return f"{self.quota.publishes} publishes"
        return None


def budget(ledger: Ledger, quota: QuotaRecord, now: datetime) -> Budget:
    """The budget of `quota.host` in the window holding `now`."""
    start, end = window_of(now, quota.window_seconds)
    return Budget(quota, start, end, ledger.net(quota.host, iso(start)))


def spend_window(quotas: Sequence[QuotaRecord], registry: str, now: datetime) -> str:
    """The window id (its start) a spend at `now` on `registry` is booked in."""
    q = next((x for x in quotas if x.host == registry), None)
    return iso(window_of(now, q.window_seconds if q else DEFAULT_WINDOW)[0])


# ---- the quota state -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Todo:
    """What the quota decision needs of one effect."""

    id: str
    state: str
    deps: tuple[str, ...]
    registry: str | None
    writes: bool
    failure: str | None = None
    gate: str | None = None          # why a person must decide first (None: not gated)
    not_before: datetime | None = None  # a monitor's next observation
    bytes_needed: int = 0
    monitor: bool = False


@dataclass(frozen=True)
class RegistrySignal:
    """A registry's last health and throttle signals."""

    unhealthy: str | None = None      # why, while no probe has answered since
    unhealthy_at: str | None = None
    throttled_until: datetime | None = None


@dataclass(frozen=True)
class QuotaInputs:
    """Everything the quota state is decided from."""

    todos: Sequence[Todo]
    signals: Mapping[str, RegistrySignal]
    quotas: Sequence[QuotaRecord]
    ledger: Ledger
    now: datetime
    paused: str | None = None
    stopped: str | None = None
    closeout_due: bool = False


@dataclass(frozen=True)
class Blocker:
    """Why one todo cannot run now (state it maps to, a reason, and until when, if known)."""

    state: QuotaState
    reason: str
    until: datetime | None = None


def blocker(t: Todo, done: set[str], q: QuotaInputs) -> Blocker | None:
    """Why todo `t` may not run now, or None if it may (the interpreter's pick uses this too)."""
    if t.state in ("done", "blocked"):
        return Blocker("focus_wait", f"{t.id} is {t.state}")
    if t.registry is not None:
        sig = q.signals.get(t.registry)
        if sig is not None and sig.unhealthy:
            return Blocker("blocked_health", f"{t.registry} is unhealthy ({sig.unhealthy})")
    if t.gate is not None:
        return Blocker("operator_gate", t.gate)
    waits = [d for d in t.deps if d not in done]
    if waits:
        return Blocker("focus_wait", f"{t.id} waits for {waits[0]}")
    if q.stopped:
        return Blocker("paused", q.stopped)
    if q.paused:
        return Blocker("paused", q.paused)
    if t.not_before is not None and t.not_before > q.now:
        return Blocker("waiting", f"{t.id} observes next at {iso(t.not_before)}", t.not_before)
    if t.registry is not None:
        sig = q.signals.get(t.registry)
        if sig is not None and sig.throttled_until is not None and sig.throttled_until > q.now:
            return Blocker("throttled", f"{t.registry} said 429: Retry-After until "
                           f"{iso(sig.throttled_until)}", sig.throttled_until)
        quota = next((x for x in q.quotas if x.host == t.registry), None)
        if quota is not None:
            b = budget(q.ledger, quota, q.now)
            spent = b.allows(writes=t.writes, bytes_needed=t.bytes_needed)
            if spent is not None:
                return Blocker("throttled", f"{t.registry}'s budget of {spent} per window is spent until "
                               f"{iso(b.window_end)}", b.window_end)
    return None


@dataclass(frozen=True)
class QuotaDecision:
    """The goal's quota state, why, the todo it is about, and until when (if known)."""

    state: QuotaState
    reason: str
    focus: str | None = None
    until: datetime | None = None


def decide_state(q: QuotaInputs) -> QuotaDecision:
    """The quota state of a goal (see the module docstring for the order)."""
    done = {t.id for t in q.todos if t.state == "done"}
    pending = [t for t in q.todos if t.state != "done"]
    if q.stopped:
        return QuotaDecision("paused", q.stopped)
    focus = next((t for t in pending if t.state in ("open", "deferred")), None)
    for t in pending:
        sig = q.signals.get(t.registry) if t.registry else None
        if sig is not None and sig.unhealthy:
            return QuotaDecision("blocked_health", f"{t.registry} is unhealthy ({sig.unhealthy}); the next "
                                 "run probes it before any work there", t.id)
    for t in pending:
        if t.gate is not None:
            return QuotaDecision("operator_gate", t.gate, t.id)
        if t.state == "blocked" and t.failure == "gate":
            return QuotaDecision("operator_gate", f"{t.id} is gated: a person must confirm", t.id)
    if focus is not None:
        blocked_dep = next((d for d in focus.deps if d not in done
                            and any(x.id == d and x.state == "blocked" for x in q.todos)), None)
        if blocked_dep is not None:
            return QuotaDecision("focus_wait", f"the focus {focus.id} waits on {blocked_dep}, which is "
                                 "blocked", focus.id)
    elif pending:
        stuck = pending[0]
        return QuotaDecision("focus_wait", f"nothing can be selected: {stuck.id} is blocked"
                             + (f" ({stuck.failure})" if stuck.failure else ""), stuck.id)
    blockers = {t.id: blocker(t, done, q) for t in pending}
    ready = [t for t in pending if blockers[t.id] is None]
    if not q.paused and (ready or q.closeout_due):
        if ready:
            return QuotaDecision("eligible", f"{ready[0].id} can run now", ready[0].id)
        return QuotaDecision("eligible", "every todo is done: the terminal audit can run", None)
    if not q.paused:
        scheduled = [(b.until, tid) for tid, b in blockers.items()
                     if b is not None and b.state == "waiting" and b.until is not None]
        if scheduled:
            until, tid = min(scheduled)
            return QuotaDecision("waiting", f"{tid} observes next at {iso(until)}", tid, until)
        throttled = [(b.until or q.now, tid, b.reason) for tid, b in blockers.items()
                     if b is not None and b.state == "throttled"]
        if throttled:
            until, tid, why = min(throttled)
            return QuotaDecision("throttled", why, tid, until)
        if not pending:
            return QuotaDecision("waiting", "no ready work: the goal is done")
    if q.paused:
        return QuotaDecision("paused", q.paused)
    first = next((b for b in blockers.values() if b is not None), None)
    return QuotaDecision("waiting", f"no ready work ({first.reason})" if first else "no ready work")
