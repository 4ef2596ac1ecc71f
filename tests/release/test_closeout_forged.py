"""DONE is a passed terminal audit, never one line saying so: the projection holds a `closeout done`
entry to its invariants (every todo done, an audit record that passed every check, a seq and time
that follow the entry before it) and otherwise says the goal is not done, and why. Journals from a
real release to distribution 2.8, with lines appended as a person (or an attacker) editing the
file would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acxoci.release.interpreter import goal_status, run_goal
from acxoci.release.plan import load_plan
from tests.harness.release_state import GOAL, FakeTime, append_line, entries, published_before_closeout
from tests.harness.releases import acx, make_world
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

CHECKS = ("todos", "read-back", "monitors", "gates", "successors", "ledger", "acceptance")  # the audit's
PASSED = {"ok": True, "findings": [{"check": c, "ok": True, "detail": "forged"} for c in CHECKS]}


def test_closeout_forged_on_a_refused_release_is_not_done(distribution_registry: Registry, tmp_path: Path,
                                                          vectors_dir: Path) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"{distribution_registry.host}/acx/c"], tags=("2.0.0",))
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 9  # refused: 2.0.0 of a 1.0.0
    append_line(w.state, {"type": "closeout", "seq": 999, "at": "2099-01-01T00:00:00.000Z", "event": "done",
                          "audit": PASSED})
    s = goal_status(GOAL, root=w.state)
    assert s.state == "blocked" and s.closeout.state == "none"
    assert s.closeout.failure is not None and "not every todo is done" in s.closeout.failure.message
    again = run_goal(load_plan(w.plan), root=w.state)
    assert again.exit_code() == 9 and again.status.state != "done"
    human = acx("release", "status", GOAL, "--state-dir", str(w.state))
    assert human.returncode == 0 and human.stdout.startswith("BLOCKED"), human.stdout
    assert "is not a passed terminal audit" in human.stdout


@pytest.mark.parametrize("defect", ["no-audit", "audit-failed", "checks-missing", "time-goes-back",
                                    "seq-goes-back"])
def test_closeout_forged_after_every_todo_is_done_is_not_done_until_the_audit_runs(
        distribution_registry: Registry, tmp_path: Path, vectors_dir: Path, defect: str) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"{distribution_registry.host}/acx/c"], tags=("v1",))
    t = FakeTime()
    published_before_closeout(w, t)
    last = entries(w.state)[-1]
    line: dict[str, Any] = {"type": "closeout", "seq": last.seq + 1, "at": last.at, "event": "done",
                            "audit": PASSED}
    if defect == "no-audit":
        del line["audit"]
    elif defect == "audit-failed":
        line["audit"] = {**PASSED, "findings": [{**f, "ok": f["check"] != "acceptance"}
                                                for f in PASSED["findings"]]}
    elif defect == "checks-missing":
        line["audit"] = {"ok": True, "findings": []}
    elif defect == "time-goes-back":
        line["at"] = "2020-01-01T00:00:00.000Z"
    else:
        line["seq"] = last.seq
    append_line(w.state, line)
    s = goal_status(GOAL, root=w.state)
    assert s.state != "done" and s.closeout.state == "pending", s.closeout
    assert s.closeout.failure is not None and s.closeout.failure.cls == "terminal_closeout_failed"
    assert s.next_transition.action == "closeout"
    done = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)  # the real audit
    assert done.exit_code() == 0 and done.executed == 0 and done.writes == 0
    assert done.status.closeout.state == "done" and done.status.closeout.failure is None
    assert [f["check"] for f in (done.status.closeout.audit or {})["findings"]] == list(CHECKS)
