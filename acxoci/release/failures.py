"""Failure classes of a release goal and what each one means for recovery (pure).

Effect failures (an effect's own attempt ended this way):

- host_failure (network, 5xx, 429): retry with backoff within the budget, then `deferred`
  (retry later; CI exit 6); a 5xx or a connection failure marks the registry unhealthy
  (quota state blocked_health until a probe answers), a 429 throttles it until its Retry-After;
- writeback_failed (the write did not take): retry the write within the budget, then `blocked`;
- auth_failure (401/403, missing key or credentials): `blocked`, a person must act;
- validation_failed (the input is wrong: tampered, refused by the policy, malformed):
  `blocked`, never retried in this goal;
- readback_mismatch (the registry holds something else): `blocked`, loud;
- gate (a destructive change such as moving a tag): `blocked` until `--allow-retag`.

Goal failures (the control plane itself):

- quota_spend_failed: an attempt's remote work happened but its spend was never booked (the
  process died in between): the next run books an estimate, re-observes idempotently, and voids
  the estimate's delivery if the re-observation shows the write did not land; the effect is never
  re-written blindly;
- terminal_closeout_failed: every effect was written back and spent, but the terminal audit did
  not finish: only the closeout is redone; what was spent stays spent (never "nothing spent");
- repair_required: two runs in a row made no progress on an environment failure (the registry,
  the credentials, the goal folder): the goal stops until a person repairs and says so
  (`--repaired`);
- replan_required: the route is no longer valid (the plan changed, a monitor escalated to a
  replan, two runs without progress on a route failure): the goal stops; release a new plan
  under a new goal id.

Retrying every failure the same way is the classic control-plane mistake; each class gets its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from acxoci.errors import DISK_SAID_NO, AcxError, AuthError, TransientError, WriteBackFailed
from acxoci.oci.errors import DiskFull
from acxoci.release.plan import Budget, plain

FailureClass = Literal["host_failure", "auth_failure", "validation_failed", "writeback_failed",
                       "readback_mismatch", "gate", "quota_spend_failed", "terminal_closeout_failed",
                       "repair_required", "replan_required"]
StopClass = Literal["repair_required", "replan_required"]
State = Literal["open", "done", "blocked", "deferred"]
STATES: tuple[State, ...] = ("open", "done", "blocked", "deferred")
EFFECT_CLASSES: tuple[FailureClass, ...] = ("host_failure", "auth_failure", "validation_failed",
                                            "writeback_failed", "readback_mismatch", "gate")
GOAL_CLASSES: tuple[FailureClass, ...] = ("quota_spend_failed", "terminal_closeout_failed",
                                          "repair_required", "replan_required")
CLASSES: tuple[FailureClass, ...] = EFFECT_CLASSES + GOAL_CLASSES
RETRYABLE: frozenset[FailureClass] = frozenset({"host_failure", "writeback_failed"})
REOPEN_ON_RESUME: frozenset[FailureClass] = frozenset({"host_failure", "writeback_failed", "auth_failure",
                                                       "readback_mismatch", "gate", "quota_spend_failed"})
"""Blocked/deferred effects a new run tries again (a person may have acted). validation_failed is
not among them: the goal's inputs are frozen, so the same input fails the same way."""

NO_SPEND_CLASSES: frozenset[FailureClass] = frozenset({"validation_failed"})
"""Outcomes that may leave nothing spent (decided locally before any registry request). Never
quota_spend_failed or terminal_closeout_failed: both come AFTER remote work, so a caller that took
them for "nothing spent" would retry and spend twice."""

ROUTE_CLASSES: frozenset[FailureClass] = frozenset({"validation_failed", "replan_required"})
"""Failures that say the route is wrong (a stop after them is replan_required); every other
failure without progress is the environment's (repair_required)."""

NEXT_ACTION: dict[FailureClass, str] = {
    "host_failure": "retry later: `acx release resume GOAL` (registry or network was unavailable)",
    "writeback_failed": "check the registry accepts the write, then `acx release resume GOAL`",
    "auth_failure": "fix the credentials or key named in the message, then `acx release resume GOAL`",
    "validation_failed": "fix the input and release it under a new goal id (this goal's inputs are frozen)",
    "readback_mismatch": "investigate: the registry holds something other than what was written",
    "gate": "confirm the tag may move, then `acx release run PLAN --allow-retag`",
    "quota_spend_failed": "`acx release resume GOAL` books the spend and re-observes (nothing is re-written "
                          "blindly)",
    "terminal_closeout_failed": "`acx release resume GOAL` redoes the terminal audit only (everything was "
                                "spent already)",
    "repair_required": "repair what the message names, then `acx release resume GOAL --repaired \"WHAT\"`",
    "replan_required": "write the changed plan under a new goal id (this goal's route is no longer valid)",
}


class Failure(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A classified failure: its class, one line saying what happened, and the facts behind it."""

    cls: FailureClass = msgspec.field(name="class")
    message: str = ""
    details: dict[str, Any] = {}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = plain(self)
        return out


class EffectFailed(Exception):
    """Raised inside an effect when its own read-back or gate decides the outcome."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def fail(cls: FailureClass, message: str, **details: Any) -> EffectFailed:
    """Shorthand: `raise fail("gate", "...", current=...)`."""
    return EffectFailed(Failure(cls, message, dict(details)))


def classify(exc: BaseException) -> Failure:
    """Map an exception raised while executing an effect to its failure class."""
    if isinstance(exc, EffectFailed):
        return exc.failure
    if isinstance(exc, AcxError):
        details: dict[str, Any] = {"kind": exc.kind}
        if exc.where:
            details["where"] = exc.where
        msg = exc.one_line()
        if isinstance(exc, AuthError):
            return Failure("auth_failure", msg, details)
        if isinstance(exc, TransientError):
            return Failure("host_failure", msg, details)
        if isinstance(exc, DiskFull):  # a disk that said no: resumable once space is freed
            return Failure("host_failure", msg, details)
        if isinstance(exc, WriteBackFailed):
            return Failure("writeback_failed", msg, details)
        # VerificationFailed, InvalidInput, RefusedByPolicy, UsageError, NotFound, Blocked, ...:
        # the input (or the plan) is wrong; retrying the same input gives the same answer
        return Failure("validation_failed", msg, details)
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return Failure("host_failure", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, OSError) and exc.errno in DISK_SAID_NO:  # disk full: resumable once freed
        return Failure("host_failure", f"{type(exc).__name__}: {exc}", {"kind": "os_error"})
    if isinstance(exc, OSError):
        return Failure("validation_failed", f"{type(exc).__name__}: {exc}", {"kind": "os_error"})
    raise exc  # a bug is not a release outcome: let it surface


@dataclass(frozen=True)
class Decision:
    """What to do after a failure at try `attempt`: retry after `delay`, or settle in `state`."""

    retry: bool
    delay: float
    state: State


def decide(failure: Failure, attempt: int, budget: Budget, *, throttled: bool = False) -> Decision:
    """The recovery for `failure` on try `attempt` (1-based) under `budget` (pure). A throttled
    registry (429 with Retry-After) is not retried in this run: retrying would spend the budget
    against a registry that said when to come back."""
    if failure.cls in RETRYABLE and attempt < budget.attempts and not throttled:
        return Decision(True, budget.delay(attempt), "open")
    if failure.cls == "host_failure":
        return Decision(False, 0.0, "deferred")
    return Decision(False, 0.0, "blocked")


def stop_class(failures: list[Failure]) -> StopClass:
    """The stop a goal takes after two runs without progress that ended in `failures`: the route's
    fault (replan_required) or the environment's (repair_required)."""
    return "replan_required" if any(f.cls in ROUTE_CLASSES for f in failures) else "repair_required"
