"""Failure classes of release effects and what each one means for recovery (pure).

- host_failure (network, 5xx, 429): retry with backoff within the budget, then `deferred`
  (retry later; CI exit 6);
- writeback_failed (the write did not take): retry the write within the budget, then `blocked`;
- auth_failure (401/403, missing key or credentials): `blocked`, a person must act;
- validation_failed (the input is wrong: tampered, refused by the policy, malformed):
  `blocked`, never retried in this goal;
- readback_mismatch (the registry holds something else): `blocked`, loud;
- gate (a destructive change such as moving a tag): `blocked` until `--allow-retag`.

Retrying every failure the same way is the classic control-plane mistake; each class gets its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from acxoci.errors import DISK_SAID_NO, AcxError, AuthError, TransientError, WriteBackFailed
from acxoci.oci.errors import DiskFull
from acxoci.release.plan import Budget

FailureClass = Literal["host_failure", "auth_failure", "validation_failed", "writeback_failed",
                       "readback_mismatch", "gate"]
State = Literal["open", "done", "blocked", "deferred"]
STATES: tuple[State, ...] = ("open", "done", "blocked", "deferred")
CLASSES: tuple[FailureClass, ...] = ("host_failure", "auth_failure", "validation_failed", "writeback_failed",
                                     "readback_mismatch", "gate")
RETRYABLE: frozenset[FailureClass] = frozenset({"host_failure", "writeback_failed"})
REOPEN_ON_RESUME: frozenset[FailureClass] = frozenset({"host_failure", "writeback_failed", "auth_failure",
                                                       "readback_mismatch", "gate"})
"""Blocked/deferred effects a new run tries again (a person may have acted). validation_failed is
not among them: the goal's inputs are frozen, so the same input fails the same way."""

NEXT_ACTION: dict[FailureClass, str] = {
    "host_failure": "retry later: `acx release resume GOAL` (registry or network was unavailable)",
    "writeback_failed": "check the registry accepts the write, then `acx release resume GOAL`",
    "auth_failure": "fix the credentials or key named in the message, then `acx release resume GOAL`",
    "validation_failed": "fix the input and release it under a new goal id (this goal's inputs are frozen)",
    "readback_mismatch": "investigate: the registry holds something other than what was written",
    "gate": "confirm the tag may move, then `acx release run PLAN --allow-retag`",
}


@dataclass(frozen=True)
class Failure:
    """A classified failure: its class, one line saying what happened, and the facts behind it."""

    cls: FailureClass
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.cls, "message": self.message}
        if self.details:
            out["details"] = dict(self.details)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Failure:
        return cls(obj["class"], str(obj.get("message", "")), dict(obj.get("details") or {}))


class EffectFailed(Exception):
    """Raised inside an effect when its own read-back or gate decides the outcome."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def fail(cls: FailureClass, message: str, **details: Any) -> EffectFailed:
    """Shorthand: `raise fail("gate", "...", current=...)`."""
    return EffectFailed(Failure(cls, message, details))


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


def decide(failure: Failure, attempt: int, budget: Budget) -> Decision:
    """The recovery for `failure` on try `attempt` (1-based) under `budget` (pure)."""
    if failure.cls in RETRYABLE and attempt < budget.attempts:
        return Decision(True, budget.delay(attempt), "open")
    if failure.cls == "host_failure":
        return Decision(False, 0.0, "deferred")
    return Decision(False, 0.0, "blocked")
