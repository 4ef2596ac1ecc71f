"""A pure loop evaluator: given a policy and the events of a run so far, say which phase comes
next or which stop condition fired, the action to take and the one report to emit.

Trace format (`acx policy simulate POLICY TRACE.json`), events in order:
  {"type":"phase","phase":"act"}                       one phase finished (one turn)
  {"type":"phase","phase":"verify","passed":false}      a verification attempt
  {"type":"phase","phase":"verify","passed":true,
   "regression":{"heldIn":{"baseline":0.8,"candidate":0.81},"heldOut":{"baseline":0.6,"candidate":0.6}}}
  {"type":"guardrail","kind":"stop|blocked|question|checkpoint|milestone"}
  {"type":"tokens","used":1200}                          budget use since the previous event
  {"type":"condition","when":"completed|pr_ready|needs_input"}
Time is not read; nothing is written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from msgspec import UnsetType

from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.policy_trace import PolicyTraceDoc, PolicyTraceDocEvent
from acxoci.errors import InvalidInput
from acxoci.policy.limits import ResourceLimits, effective_limits
from acxoci.policy.loop_context import LoopContextPolicy
from acxoci.policy.report import OperatorCommandReport

OUTCOME_FOR = {
    "completed": "completed",
    "pr_ready": "handoff",
    "blocked": "blocked",
    "guardrail_stop": "blocked",
    "budget_exhausted": "blocked",
    "needs_input": "needs-input",
    "max_turns": "progressed",
}
SIGNAL_CONDITIONS = {"stop": "guardrail_stop", "blocked": "blocked"}
EXTERNAL_CONDITIONS = frozenset({"completed", "pr_ready", "needs_input", "blocked"})


def _shown(value: str | UnsetType) -> str:
    """An optional string member as shown in messages (absent: `None`)."""
    return "None" if isinstance(value, UnsetType) else value


@dataclass(frozen=True)
class SuiteResult:
    """A suite's score before (baseline) and after (candidate) the change; higher is better."""

    baseline: float
    candidate: float

    @property
    def regressed(self) -> bool:
        return self.candidate < self.baseline


@dataclass(frozen=True)
class Decision:
    """What the host does next. kind `continue` names `next_phase`; kind `stop` names the
    condition, the action and the report (exactly one per terminating condition)."""

    kind: str
    next_phase: str | None
    condition: str | None
    action: str | None
    report: OperatorCommandReport | None
    turns: int
    verify_attempts: int
    tokens_used: int
    events_consumed: int
    declared: bool = True
    resumable: bool = False
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "turns": self.turns,
            "verifyAttempts": self.verify_attempts,
            "tokensUsed": self.tokens_used,
            "eventsConsumed": self.events_consumed,
        }
        if self.kind == "continue":
            out["nextPhase"] = self.next_phase
        else:
            out.update(
                {
                    "condition": self.condition,
                    "action": self.action,
                    "declared": self.declared,
                    "resumable": self.resumable,
                    "report": self.report.to_json() if self.report else None,
                }
            )
        out["notes"] = list(self.notes)
        return out


def regression_accepted(policy: LoopContextPolicy, results: Mapping[str, SuiteResult]) -> tuple[bool, str]:
    """v1.1 acceptance: no regression on held-in AND held-out. A suite the policy names but the run did
    not report fails closed. With no regression block (or both suites null) the check does not apply."""
    reg = policy.verification.regression if policy.verification else None
    if reg is None or (reg.held_in_suite is None and reg.held_out_suite is None):
        return True, "no regression suites declared"
    for key, suite in (("heldIn", reg.held_in_suite), ("heldOut", reg.held_out_suite)):
        if suite is None:
            continue
        r = results.get(key)
        if r is None:
            return False, f"{key} suite {suite!r} has no result"
        if r.regressed:
            return False, f"{key} suite {suite!r} regressed ({r.baseline} -> {r.candidate})"
    return True, "no regression on held-in and held-out"


def decode_trace(doc: Any, *, where: str = "trace") -> tuple[PolicyTraceDocEvent, ...]:
    """A trace (`{"events": [...]}` or a bare array of events) decoded into typed events;
    InvalidInput naming the JSON pointer of a value with the wrong type."""
    if isinstance(doc, list | tuple):
        doc = {"events": list(doc)}
    try:
        return decode_as(doc, PolicyTraceDoc, document=where).events
    except DocumentTypeError as exc:
        raise InvalidInput(str(exc), where=where, details={"pointer": exc.pointer}) from exc


def _report(
    policy: LoopContextPolicy, condition: str, action: str, blockers: list[str], phase: str | None
) -> OperatorCommandReport:
    outcome = "handoff" if action == "handoff" else OUTCOME_FOR[condition]
    return OperatorCommandReport(
        outcome=outcome,
        quality="unknown",
        confidence=0.0,
        blockers=tuple(blockers),
        next_action={
            "stop": "none",
            "handoff": "operator reviews the handoff",
            "await_human": "await operator input",
            "report_continue": f"resume at {phase or 'the start of the cycle'} in a new run",
        }[action],
        recommended_follow_up=None,
        user_attention_required=action in ("handoff", "await_human"),
    )


def evaluate(
    policy: LoopContextPolicy,
    trace: Any,
    *,
    host_limits: ResourceLimits | None = None,
) -> Decision:
    """Replay the events of `trace` (see `decode_trace`) against `policy` and return the next step
    (pure; raises InvalidInput on a malformed or out-of-order trace)."""
    events = decode_trace(trace)
    limits = effective_limits(host_limits, policy.budget).limits
    token_ceiling = limits.get("tokenSpend.dailyPerAgent")
    cycle = policy.cycle
    idx = 0
    turns = attempts = tokens = 0
    notes: list[str] = []
    blockers: list[str] = []
    failure = "verification failed"
    max_attempts = policy.verification.max_attempts if policy.verification else 1
    block_on_failure = policy.verification.block_on_failure if policy.verification else True

    def stop(condition: str, consumed: int) -> Decision:
        action = policy.action_for(condition)
        declared = action is not None
        if action is None:
            action = "stop" if condition == "completed" else "await_human"
            notes.append(f"stop condition {condition!r} is not declared; defaulting to {action}")
        nxt = cycle[idx % len(cycle)]
        return Decision(
            "stop",
            None,
            condition,
            action,
            _report(policy, condition, action, blockers, nxt),
            turns,
            attempts,
            tokens,
            consumed,
            declared,
            action == "report_continue",
            tuple(notes),
        )

    for n, ev in enumerate(events):
        where = f"$.events[{n}]"
        etype = ev.type
        if etype == "phase":
            phase = ev.phase
            expected = cycle[idx % len(cycle)]
            if phase != expected:
                raise InvalidInput(
                    f"phase {_shown(phase)!r} out of order; the policy's cycle expects {expected!r}",
                    where=f"{where}.phase",
                )
            turns += 1
            nxt_idx = idx + 1
            if phase == "verify":
                passed = ev.passed
                if isinstance(passed, UnsetType):
                    raise InvalidInput("a verify phase needs a boolean 'passed'", where=f"{where}.passed")
                attempts += 1
                if passed:
                    raw = {} if isinstance(ev.regression, UnsetType) else ev.regression
                    results = {k: SuiteResult(float(v.baseline), float(v.candidate)) for k, v in raw.items()}
                    ok, why = regression_accepted(policy, results)
                    notes.append(f"turn {turns}: verification passed; {why}")
                    if not ok:
                        passed = False
                        failure = why
                if passed:
                    attempts = 0
                    failure = "verification failed"
                else:
                    if attempts < max_attempts and "act" in cycle:
                        nxt_idx = cycle.index("act")
                        notes.append(
                            f"turn {turns}: verification failed (attempt {attempts}/{max_attempts});"
                            " back to act"
                        )
                    elif attempts >= max_attempts and block_on_failure:
                        blockers.append(f"{failure} ({attempts} attempt(s))")
                        idx = nxt_idx % len(cycle)
                        return stop("blocked", n + 1)
                    else:
                        notes.append(f"turn {turns}: verification failed; blockOnFailure is off, continuing")
                        attempts = 0
            idx = nxt_idx % len(cycle)
            if turns >= policy.max_turns:
                return stop("max_turns", n + 1)
        elif etype == "guardrail":
            kind = _shown(ev.kind)
            if kind in SIGNAL_CONDITIONS:
                blockers.append(f"guardrail signal {kind}")
                return stop(SIGNAL_CONDITIONS[kind], n + 1)
            if policy.signal_kinds and kind not in policy.signal_kinds:
                notes.append(f"signal kind {kind!r} is not in guardrailContract.signalKinds; ignored")
            else:
                notes.append(f"guardrail signal {kind!r} recorded")
        elif etype == "tokens":
            used = ev.used
            if isinstance(used, UnsetType) or used < 0:
                raise InvalidInput("tokens.used must be an integer >= 0", where=f"{where}.used")
            tokens += used
            if token_ceiling is not None and tokens >= token_ceiling:
                blockers.append(f"token budget {token_ceiling} reached ({tokens} used)")
                return stop("budget_exhausted", n + 1)
        elif etype == "condition":
            when = _shown(ev.when)
            if when not in EXTERNAL_CONDITIONS:
                raise InvalidInput(
                    f"condition {when!r} cannot be reported by the run; "
                    f"expected one of {sorted(EXTERNAL_CONDITIONS)}",
                    where=f"{where}.when",
                )
            if when == "blocked":
                blockers.append("run reported blocked")
            return stop(when, n + 1)
        else:
            raise InvalidInput(f"unknown event type {etype!r}", where=f"{where}.type")
    return Decision(
        "continue",
        cycle[idx % len(cycle)],
        None,
        None,
        None,
        turns,
        attempts,
        tokens,
        len(events),
        notes=tuple(notes),
    )
