"""The quota kernel on its own (pure): the ledger counts a replayed spend once, a void corrects a
spend without going below zero or removing it, another goal instance's entries are never charged,
windows are aligned; the quota state follows its documented order whatever else holds; each
failure class has its recovery and the no-spend classes exclude what comes after a spend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from acxoci.release.failures import CLASSES, NEXT_ACTION, NO_SPEND_CLASSES, Failure, decide, stop_class
from acxoci.release.journal import Entry, QuotaRecord, SpendEntry, VoidEntry
from acxoci.release.plan import Budget
from acxoci.release.quota import (
    QUOTA_STATE_ORDER,
    Amount,
    Ledger,
    QuotaInputs,
    RegistrySignal,
    Todo,
    budget,
    decide_state,
    fold_ledger,
    window_of,
)

T0 = datetime(2026, 11, 30, 12, 30, tzinfo=UTC)
W = "2026-11-30T12:00:00.000Z"


def _spend(key: str, instance: str = "g/1", requests: int = 0, bytes: int = 0,
           publishes: int = 0) -> SpendEntry:
    return SpendEntry(key=key, attempt_key=key.split("@")[0], instance=instance, window=W, registry="reg",
                      effect="blob", requests=requests, bytes=bytes, publishes=publishes)


def test_quota_ledger_replayed_spend_counts_once_and_void_corrects() -> None:
    s = _spend("a#1@reg", requests=5, bytes=100, publishes=1)
    entries: list[Entry] = [s, s, _spend("a#2@reg", requests=2),
               VoidEntry(key="void:a#1@reg", voids="a#1@reg", instance="g/1", reason="lost", publishes=1),
               VoidEntry(key="void:a#1@reg", voids="a#1@reg", instance="g/1", reason="lost", publishes=1),
               VoidEntry(key="void:x", voids="a#1@reg", instance="g/1", reason="again", publishes=5,
                         bytes=500),
               VoidEntry(key="void:none", voids="nothing", instance="g/1", reason="?", requests=1),
               _spend("b#1@reg", instance="g/0", requests=99, publishes=9),
               _spend("c#1@reg", requests=-1)]
    ledger = fold_ledger(entries, "g/1")
    assert ledger.net() == Amount(7, 0, 0)  # the voids never go below zero; requests stay spent
    assert (ledger.replayed, ledger.foreign, ledger.rejected) == (2, 1, 2)
    assert set(ledger.spends) == {"a#1@reg", "a#2@reg"}  # a void removes nothing
    assert fold_ledger(entries + entries, "g/1").net() == ledger.net()  # replaying the whole journal too


def test_quota_windows_are_aligned_and_budgets_say_what_is_spent() -> None:
    start, end = window_of(T0, 3600)
    assert (start, end) == (datetime(2026, 11, 30, 12, tzinfo=UTC), datetime(2026, 11, 30, 13, tzinfo=UTC))
    q = QuotaRecord(host="reg", window_seconds=3600, requests=10, bytes=1000, publishes=1)
    ledger = fold_ledger([_spend("a#1@reg", requests=4, bytes=900, publishes=1)], "g/1")
    b = budget(ledger, q, T0)
    assert b.left() == {"requests": 6, "bytes": 100, "publishes": 0}
    assert b.allows(writes=True, bytes_needed=0) == "1 publishes"
    assert b.allows(writes=False, bytes_needed=50) is None
    assert b.allows(writes=False, bytes_needed=200) == "1000 bytes"
    assert budget(ledger, q, T0 + timedelta(hours=1)).left()["publishes"] == 1  # the next window


def _inputs(todos: list[Todo], **kw: object) -> QuotaInputs:
    signals = kw.pop("signals", {})
    return QuotaInputs(todos, signals, (), Ledger("g/1"), T0, **kw)  # type: ignore[arg-type]


READY = Todo("tag:v1", "open", (), "reg", True)
GATED = Todo("approval:go", "open", (), None, False, gate="approval go is not recorded")
SICK = {"reg": RegistrySignal(unhealthy="HTTP 503")}
SLOW = {"reg": RegistrySignal(throttled_until=T0 + timedelta(seconds=60))}
LATER = Todo("monitor:m", "open", (), "mirror", False, not_before=T0 + timedelta(seconds=5), monitor=True)


@pytest.mark.parametrize(("todos", "kw", "state"), [
    ([READY, GATED], {"signals": SICK}, "blocked_health"),        # health first, before any gate
    ([READY, GATED], {"paused": "paused by ops"}, "operator_gate"),  # a gate is a person's, paused or not
    ([Todo("a", "blocked", (), "reg", True, failure="writeback_failed"),
      Todo("b", "open", ("a",), "reg", True)], {}, "focus_wait"),
    ([READY, LATER], {}, "eligible"),
    ([LATER], {}, "waiting"),
    ([READY], {"signals": SLOW}, "throttled"),
    ([READY], {"paused": "paused by ops"}, "paused"),
    ([READY], {"stopped": "stopped: repair_required"}, "paused"),   # a stop is compute 0
    ([READY, GATED], {"stopped": "stopped", "signals": SICK}, "paused"),
    ([], {}, "waiting"),  # done: no ready work
])
def test_quota_state_order(todos: list[Todo], kw: dict[str, object], state: str) -> None:
    assert decide_state(_inputs(todos, **kw)).state == state
    assert state in QUOTA_STATE_ORDER


def test_quota_state_throttled_by_budget_until_the_window_ends() -> None:
    q = QuotaRecord(host="reg", window_seconds=3600, publishes=1)
    ledger = fold_ledger([_spend("a#1@reg", publishes=1)], "g/1")
    d = decide_state(QuotaInputs([READY], {}, (q,), ledger, T0))
    assert d.state == "throttled" and d.until == datetime(2026, 11, 30, 13, tzinfo=UTC)
    reading = Todo("verify", "open", (), "reg", False)  # a read needs no publish
    assert decide_state(QuotaInputs([reading], {}, (q,), ledger, T0)).state == "eligible"


def test_quota_failure_classes_each_have_their_recovery() -> None:
    assert len(CLASSES) == 10 and set(NEXT_ACTION) == set(CLASSES)
    assert {"quota_spend_failed", "terminal_closeout_failed"}.isdisjoint(NO_SPEND_CLASSES)
    b = Budget(attempts=3)
    assert decide(Failure("host_failure", ""), 1, b).retry
    assert not decide(Failure("host_failure", ""), 1, b, throttled=True).retry  # a 429 said when to come back
    assert decide(Failure("host_failure", ""), 1, b, throttled=True).state == "deferred"
    assert stop_class([Failure("host_failure", "")]) == "repair_required"
    route = [Failure("writeback_failed", ""), Failure("validation_failed", "")]
    assert stop_class(route) == "replan_required"
