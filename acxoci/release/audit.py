"""The terminal audit (pure): a goal is DONE only when this audit passes, never because its last
effect did. It checks, over the journal's projection and the acceptance verdicts of the published
references:

- todos: every effect is done;
- read-back: every done effect carries what its read-back proved (a receipt alone closes nothing);
- monitors: every mirror and status-list monitor is satisfied by an observation still fresh, and
  every approval is recorded;
- gates: no gate is open and the goal is not paused or stopped;
- successors: every successor a done effect declared is done;
- ledger: every attempt that did remote work has its spend booked, and no entry of another goal
  instance or malformed void was offered;
- acceptance: every published reference is accepted by the one acceptance decision under the
  release's consumer policy (the verdicts come from `providers.accept`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.release.journal import parse_iso
from acxoci.release.monitors import fresh
from acxoci.release.providers import Verdict
from acxoci.release.status import GoalStatus


class Proof(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    """The part of an effect's evidence the audit reads: what its read-back proved (the rest of
    the evidence is the effect's own record)."""

    proof: str | None = None
    skipped: str | None = None
    frozen_objects: int | None = None


def _proof(evidence: dict[str, Any] | None, where: str) -> Proof:
    """The evidence's proof, or none at all when it is not of the expected shape."""
    try:
        return decode_as(evidence or {}, Proof, document=where)
    except DocumentTypeError:
        return Proof()


@dataclass(frozen=True)
class Finding:
    """One audit check: its name, whether it passed, and what it found."""

    check: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class Audit:
    """The terminal audit's findings and the verdicts it judged by."""

    findings: tuple[Finding, ...]
    verdicts: tuple[Verdict, ...]

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    def failed(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": [f.to_json() for f in self.findings],
                "acceptance": [v.to_json() for v in self.verdicts]}


def _finding(check: str, problems: Sequence[str], good: str) -> Finding:
    return Finding(check, not problems, "; ".join(problems[:5]) if problems else good)


def stale_monitors(s: GoalStatus, now: datetime) -> list[str]:
    """Mirror and status-list monitors whose satisfying observation is too old for the audit."""
    out: list[str] = []
    for m in s.monitors:
        if m.spec.kind != "approval" and m.state == "done":
            at = parse_iso(m.satisfied_at, m.effect_id) if m.satisfied_at else None
            if not fresh(at, m.spec, now):
                out.append(m.effect_id)
    return out


def terminal_audit(s: GoalStatus, verdicts: Mapping[str, Sequence[Verdict]], now: datetime) -> Audit:
    """Audit `s` for closeout; `verdicts` maps each verify effect to the verdicts of its published
    references (judged now, or by that effect when still fresh)."""
    states = {e.effect.id: e.state for e in s.effects}
    undone = [f"{e.effect.id} is {e.state}" for e in s.effects if e.state != "done"]
    unproven: list[str] = []
    for e in s.effects:
        if e.state != "done" or e.effect.kind == "monitor":
            continue
        ev = _proof(e.evidence, f"evidence of {e.effect.id}")
        if not (ev.proof or ev.skipped or (e.effect.kind == "prepare" and ev.frozen_objects)):
            unproven.append(f"{e.effect.id} has no read-back evidence")
    monitor_problems = [f"{m.effect_id} is not satisfied" for m in s.monitors if m.state != "done"]
    monitor_problems += [f"{mid}: its observation is older than {s.monitor(mid).spec.freshness_seconds:g}s"
                         for mid in stale_monitors(s, now)]
    monitor_problems += [f"approval {m.spec.target} is not recorded" for m in s.monitors
                         if m.spec.kind == "approval" and m.approved_by is None]
    gate_problems = [f"{g.kind} gate {g.id} is open" for g in s.gates]
    if s.paused is not None:
        gate_problems.append("the goal is paused")
    if s.stop is not None:
        gate_problems.append(f"the goal stopped: {s.stop.cls}")
    declared = [(e.effect.id, succ) for e in s.effects if e.state == "done"
                and e.effect.continuation.mode == "successor" for succ in e.effect.continuation.successors]
    pending_successors = [f"{eid} declared successor {succ}, which is {states.get(succ, 'missing')}"
                          for eid, succ in declared if states.get(succ) != "done"]
    ledger_problems = [f"attempt {o.key} did remote work and its spend is not booked"
                       for o in s.orphans if not o.booked and s.effect(o.effect).effect.registry]
    if s.ledger.foreign:
        ledger_problems.append(f"{s.ledger.foreign} ledger entries belong to another goal instance")
    if s.ledger.rejected:
        ledger_problems.append(f"{s.ledger.rejected} ledger entries were malformed")
    judged: list[Verdict] = []
    refused: list[str] = []
    for e in s.effects:
        if e.effect.kind != "verify":
            continue
        got = list(verdicts.get(e.effect.id, ()))
        if not got:
            refused.append(f"{e.effect.id}: no acceptance verdict")
        judged += got
        refused += [f"{v.reference}: {v.reasons() or 'refused'}" for v in got if not v.accepted]
    findings = (
        _finding("todos", undone, f"all {len(s.effects)} todos done"),
        _finding("read-back", unproven, "every done todo carries its read-back evidence"),
        _finding("monitors", monitor_problems, f"{len(s.monitors)} monitor(s) satisfied and fresh"),
        _finding("gates", gate_problems, "no gate open"),
        _finding("successors", pending_successors, "no successor pending"),
        _finding("ledger", ledger_problems, f"{len(s.ledger.spends)} spend(s) booked, none missing"),
        _finding("acceptance", refused, f"{len(judged)} published reference(s) accepted"),
    )
    return Audit(findings, tuple(judged))
