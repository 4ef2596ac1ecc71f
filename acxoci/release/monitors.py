"""Monitor todos: what an observation means (pure). The providers (providers.py) fetch the facts;
this module decides, per target, whether the fact is there, whether it changed since the last
observation, how many observations in a row it has not (`consecutive_no_change`, counted per
target, never per goal), when to observe next (backoff), and when to escalate.

Built-in monitors:
- `mirror`: at a replica or pull-through cache, every tag of the destination it replicates (or the
  digest itself, when the destination has no tags) resolves to the released digest;
- `status_list`: the list at a URL has `validFrom` at or after T, or the JCS digest D;
- `approval`: an operator recorded the approval (`acx release approve`); only the effects it
  blocks wait for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from acxoci.release.effects import MonitorSpec
from acxoci.release.journal import TargetObservation


@dataclass(frozen=True)
class Seen:
    """One target as a provider saw it: its value (None: absent), whether it satisfies the
    monitor, and the error that kept it from being seen (the value is then None)."""

    target: str
    value: str | None
    ok: bool
    error: str | None = None


def targets_of(spec: MonitorSpec, digest: str | None) -> list[str]:
    """The targets a monitor observes (a mirror's refs need the released digest)."""
    if spec.kind == "mirror":
        if spec.tags:
            return [f"{spec.target}:{t}" for t in spec.tags]
        return [f"{spec.target}@{digest}"] if digest else []
    return [spec.target]


def compare(previous: Mapping[str, TargetObservation], seen: Sequence[Seen]) -> tuple[TargetObservation, ...]:
    """Per target: did the value change since the previous observation, and how many observations
    in a row has the target stayed unsatisfied (`consecutive_no_change`: "still wrong" is no
    progress whichever wrong value it shows, so a flapping replica backs off and escalates like a
    stuck one; a satisfied target counts 0)."""
    out: list[TargetObservation] = []
    for s in seen:
        prev = previous.get(s.target)
        changed = prev is None or prev.value != s.value
        no_change = 0 if (s.ok or prev is None or prev.ok) else prev.no_change + 1
        out.append(TargetObservation(target=s.target, value=s.value, ok=s.ok, changed=changed,
                                     no_change=no_change, error=s.error))
    return tuple(out)


MAX_DELAY = 86400.0


def next_delay(spec: MonitorSpec, no_change: int) -> float:
    """Backoff: the first interval, doubled for each unchanged observation, capped (and never
    beyond a day nor below zero, whatever a journal says)."""
    delay = min(spec.max_interval_seconds, spec.interval_seconds * (2 ** max(0, min(no_change, 30))))
    return float(min(MAX_DELAY, max(0.0, delay)))


@dataclass(frozen=True)
class Judgement:
    """What one observation decides: satisfied, when to observe next, or an escalation."""

    satisfied: bool
    next_at: datetime | None
    escalate: str | None
    why: str


def judge(spec: MonitorSpec, targets: Sequence[TargetObservation], now: datetime) -> Judgement:
    """Satisfied when every target is; otherwise escalate once an unsatisfied target has stayed the
    same `escalate_after` times in a row, or observe again after the backoff."""
    if targets and all(t.ok for t in targets):
        return Judgement(True, None, None, "every target satisfied")
    waiting = [t for t in targets if not t.ok]
    worst = max((t.no_change for t in waiting), default=0)
    if spec.escalate_after and worst >= spec.escalate_after:
        stuck = next(t for t in waiting if t.no_change == worst)
        return Judgement(False, None, spec.escalate,
                         f"{stuck.target} unchanged ({stuck.value or 'absent'}) for {worst} observations")
    soonest = min((t.no_change for t in waiting), default=0)
    nxt = now + timedelta(seconds=next_delay(spec, soonest))
    why = "; ".join(f"{t.target}: {t.value or t.error or 'absent'}" for t in waiting[:3]) or "no target yet"
    return Judgement(False, nxt, None, why)


def fresh_within(at: datetime | None, seconds: float, now: datetime) -> bool:
    """Was something observed or judged at `at` no more than `seconds` before `now`? A time in the
    future (another runner's clock ahead of ours, or a forged record) is never fresh."""
    if at is None:
        return False
    age = (now - at).total_seconds()
    return 0 <= age <= seconds


def fresh(satisfied_at: datetime | None, spec: MonitorSpec, now: datetime) -> bool:
    """Is a satisfying observation still fresh enough for the terminal audit?"""
    return fresh_within(satisfied_at, spec.freshness_seconds, now)
