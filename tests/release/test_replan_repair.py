"""The control plane stops instead of retrying: two runs in a row without progress (a registry whose
manifest PUT keeps answering 503 while GET /v2/ is fine) stop the goal with repair_required, which
only `--repaired` lifts; a changed plan, or a mirror monitor that escalates to a replan, stops it
with replan_required, which nothing lifts (release the changed plan under a new goal id)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from acxoci.errors import Blocked
from acxoci.release.interpreter import run_goal
from acxoci.release.journal import StopEntry
from acxoci.release.plan import load_plan
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.release_state import GOAL, FakeTime, check_status_json, entries, status
from tests.harness.releases import acx, make_world
from tests.harness.servers import Registry
from tests.release.conftest import cache_of

pytestmark = pytest.mark.interop


def test_replan_repair_two_runs_without_progress_stop_with_repair_required(
        proxied: FaultProxy, tmp_path: Path, vectors_dir: Path) -> None:
    broken = proxied.add(Rule("PUT", r"/manifests/sha256:", "status", times=100_000, status=503))
    w = make_world(tmp_path / "w", vectors_dir, [f"{proxied.host}/acx/r"])
    doc = w.plan_doc()
    doc["budget"]["transportRetries"] = 0
    w.write_plan(doc)
    t = FakeTime()

    def run(**kw: object) -> int:
        return run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep,
                        **kw).exit_code()  # type: ignore[arg-type]

    assert run() == 6  # progress (prepare, blobs), then the manifest is deferred
    assert status(w.state).no_progress_runs == 0
    assert run() == 6  # the probe answers, the manifest fails again: no progress (1)
    assert status(w.state).no_progress_runs == 1 and status(w.state).stop is None
    assert run() == 9  # no progress (2): stop, do not retry
    s = status(w.state)
    assert s.stop is not None and s.stop.cls == "repair_required" and "no progress" in s.stop.reason
    assert s.quota.state == "paused" and s.next_transition.action == "repair_required"
    assert "--repaired" in (s.next_transition.command or "")
    hits = broken.hits
    assert run() == 9 and broken.hits == hits  # stopped: not one more try
    out = acx("--json", "release", "status", GOAL, "--state-dir", str(w.state))
    check_status_json(json.loads(out.stdout))
    assert json.loads(out.stdout)["stop"]["class"] == "repair_required"

    broken.times = 0  # a person repairs the registry and says so
    res = acx("--json", "release", "resume", GOAL, "--state-dir", str(w.state), "--repaired",
              "registry fixed")
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["state"] == "done"


def test_replan_a_changed_plan_stops_the_goal(tmp_path: Path, vectors_dir: Path) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"],
                   extra={"observe": {"approvals": [{"id": "ok", "blocks": ["tag:latest"]}]}})
    original = w.plan.read_bytes()
    first = run_goal(load_plan(w.plan), root=w.state)
    assert first.exit_code() == 9 and first.status.quota.state == "operator_gate"
    doc = w.plan_doc()
    doc["goal"]["artifacts"][0]["to"][0]["tags"] = ["v2"]
    w.write_plan(doc)
    with pytest.raises(Blocked, match="replan_required: the plan changed"):
        run_goal(load_plan(w.plan), root=w.state)
    s = status(w.state)
    assert s.stop is not None and s.stop.cls == "replan_required" and s.state == "blocked"
    assert s.next_transition.command is None and "new goal id" in s.next_transition.why
    w.plan.write_bytes(original)  # putting the old plan back does not revive the route
    again = run_goal(load_plan(w.plan), root=w.state, repaired="I put it back")
    assert again.executed == 0 and again.exit_code() == 9 and again.status.stop is not None
    assert next(e for e in entries(w.state) if isinstance(e, StopEntry)).cls == "replan_required"


def test_replan_a_monitor_that_escalates_to_replan(
        distribution_registry: Registry, pull_through: list[Registry], tmp_path: Path,
        vectors_dir: Path) -> None:
    primary = distribution_registry.host
    with FaultProxy(primary, [Rule("*", r"/manifests/v1$", "status", times=100_000, status=404)]) as link:
        far = cache_of(pull_through, tmp_path / "far", link.host)
        repo = f"{primary}/acx/p"
        w = make_world(tmp_path / "w", vectors_dir, [repo], tags=("v1",), extra={"observe": {
            "mirrors": [{"repository": f"{far.host}/acx/p", "of": repo, "escalate": "replan",
                         "escalateAfter": 1}],
            "intervalSeconds": 1, "waitSeconds": 60}})
        t = FakeTime()
        report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
    assert report.exit_code() == 9
    s = report.status
    assert s.stop is not None and s.stop.cls == "replan_required" and far.host in s.stop.reason
    m = s.monitor(f"monitor:mirror:agent@{far.host}/acx/p")
    assert m.state == "blocked" and m.observations == 2 and m.escalated == "replan"
    failure = s.effect(f"monitor:mirror:agent@{far.host}/acx/p").failure
    assert failure is not None and failure.cls == "replan_required"


def test_replan_validation_failed_writes_nothing_and_is_never_retried(proxied: FaultProxy, tmp_path: Path,
                                                                      vectors_dir: Path) -> None:
    """A tampered input (the real signal: the bytes) blocks `prepare` before one request reaches the
    registry; later runs neither retry it nor count as runs without progress (so it never stops)."""
    w = make_world(tmp_path / "w", vectors_dir, [f"{proxied.host}/acx/v"])
    shutil.copyfile(vectors_dir / "sample" / "tampered" / "rom-data.acx", w.cartridge)
    for _ in range(3):
        report = run_goal(load_plan(w.plan), root=w.state)
        assert report.exit_code() == 9
    s = report.status
    prep = s.effect("prepare:agent")
    assert prep.failure is not None and prep.failure.cls == "validation_failed" and prep.attempts == 1
    assert not proxied.log.entries  # nothing was asked of the registry
    assert s.no_progress_runs == 1  # the first run; the later ones attempted nothing, so they do not count
    assert s.stop is None and s.ledger.net().requests == 0
    assert s.quota.state == "focus_wait" and "prepare:agent" in s.quota.reason
    assert "new goal id" in s.next_transition.why
