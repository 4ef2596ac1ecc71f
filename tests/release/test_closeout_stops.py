"""A terminal audit that fails the same way every run is no progress: after the documented two runs
the goal stops (repair_required) instead of asking CI to retry forever (exit 6); and every new stop
is journaled, also a replan after a repair stop was lifted, so `status` (the projection) shows it.
A real release to distribution 2.8; the failing audit comes from a ledger entry of another goal
instance (what a stale runner of an earlier instance would leave)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acxoci.errors import Blocked
from acxoci.release.interpreter import goal_status, run_goal
from acxoci.release.journal import RunEntry, StopEntry
from acxoci.release.plan import load_plan
from tests.harness.release_state import GOAL, FakeTime, append_line, entries, published_before_closeout
from tests.harness.releases import ReleaseWorld, make_world
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def _foreign_spend(w: ReleaseWorld, host: str) -> None:
    last = entries(w.state)[-1]
    append_line(w.state, {"type": "spend", "seq": last.seq + 1, "at": last.at, "key": "other@x",
                          "attemptKey": "other", "instance": f"{GOAL}/ffffffffffffffff",
                          "window": "2026-01-01T00:00:00.000Z", "registry": host, "effect": "prepare:agent",
                          "requests": 1})


def test_closeout_that_fails_every_run_stops_with_repair_required(
        distribution_registry: Registry, tmp_path: Path, vectors_dir: Path) -> None:
    host = distribution_registry.host
    w = make_world(tmp_path / "w", vectors_dir, [f"{host}/acx/c"], tags=("v1",))
    t = FakeTime()
    published_before_closeout(w, t)
    _foreign_spend(w, host)

    def run(**kw: object) -> int:
        return run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep,
                        **kw).exit_code()  # type: ignore[arg-type]

    assert run() == 6  # the audit failed (ledger): retry later, no progress (1)
    s = goal_status(GOAL, root=w.state)
    assert s.no_progress_runs == 1 and s.stop is None
    assert s.runs[-1].failures and s.runs[-1].failures[0].cls == "terminal_closeout_failed"
    assert run() == 9  # the same failure again: no progress (2), the goal stops
    s = goal_status(GOAL, root=w.state)
    assert s.stop is not None and s.stop.cls == "repair_required", s.stop
    assert "ledger" in s.stop.reason
    n = len(entries(w.state))
    assert run() == 9 and [type(e) for e in entries(w.state)[n:]] == [RunEntry, RunEntry]  # no audit

    # a person says it was repaired (it was not): the stop is lifted, the audit fails again
    assert run(repaired="looked at the ledger") == 6
    assert goal_status(GOAL, root=w.state).stop is None
    # then the plan changes: the new stop is journaled and shown, although a stop was journaled before
    doc = w.plan_doc()
    doc["lease"] = {"ttlSeconds": 300}
    w.write_plan(doc)
    with pytest.raises(Blocked, match="replan_required"):
        run()
    stops = [e.cls for e in entries(w.state) if isinstance(e, StopEntry)]
    assert stops == ["repair_required", "replan_required"]
    s = goal_status(GOAL, root=w.state)
    assert s.stop is not None and s.stop.cls == "replan_required"
    assert s.next_transition.action == "replan_required"
