"""Quota states driven by real signals against a real registry (distribution 2.8) through the fault
proxy: a 5xx storm (blocked_health, then a probe lets work resume), 429 with Retry-After
(throttled until then), a window budget spent (throttled until the window ends), an open approval
(operator_gate, only the gated tag waits), a write the registry lost (writeback_failed, the
focus waits on it: focus_wait), a goal killed half-way (eligible), a monitor due later (waiting),
and the operator's pause (paused, also in the middle of a run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acxoci.release import interpreter
from acxoci.release.interpreter import operator_entry, run_goal
from acxoci.release.journal import EffectEntry, Entry, PauseEntry, SignalEntry
from acxoci.release.plan import load_plan
from acxoci.release.quota import window_of
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.killer import Killer
from tests.harness.release_state import GOAL, FakeTime, check_status_json, entries, status, tags
from tests.harness.releases import ReleaseWorld, acx, make_world, run_forked
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def _world(tmp: Path, vectors: Path, host: str, **extra: object) -> ReleaseWorld:
    w = make_world(tmp / "w", vectors, [f"{host}/acx/q"], extra=dict(extra) if extra else None)
    doc = w.plan_doc()
    doc["budget"]["transportRetries"] = 0  # one HTTP try per attempt: the plan's budget is the retry loop
    w.write_plan(doc)
    return w


def _run(w: ReleaseWorld, t: FakeTime, **kw: object) -> interpreter.RunReport:
    plan = load_plan(w.plan)
    return run_goal(plan, root=w.state, clock=t.clock, sleep=t.sleep, **kw)  # type: ignore[arg-type]


def test_quota_blocked_health_on_a_5xx_storm_then_a_probe_resumes(proxied: FaultProxy, tmp_path: Path,
                                                                   vectors_dir: Path) -> None:
    storm = proxied.add(Rule("*", r"^/v2/", "status", times=100_000, status=503))
    w, t = _world(tmp_path, vectors_dir, proxied.host), FakeTime()
    first = _run(w, t)
    assert first.exit_code() == 6, first.to_json()["quota"]
    s = first.status
    assert s.quota.state == "blocked_health" and proxied.host in s.quota.reason
    assert s.effect("prepare:agent").state == "done"
    blob = s.effect(f"blob:config:agent@{proxied.host}/acx/q")
    assert blob.state == "deferred" and blob.failure is not None and blob.failure.cls == "host_failure"
    assert blob.attempts == 3  # the plan's budget, then no more requests to a sick registry this run
    assert s.effect(f"blob:content:agent@{proxied.host}/acx/q").attempts == 0
    assert s.next_transition.action == "probe"
    hits = storm.hits

    again = _run(w, t)  # the storm goes on: one probe, nothing else
    assert again.executed == 0 and again.exit_code() == 6
    assert again.status.quota.state == "blocked_health"
    assert storm.hits - hits == 1  # GET /v2/ only
    assert again.status.stop is None and again.status.no_progress_runs == 0  # waiting on health is no failure

    storm.times = 0  # the registry recovers
    done = _run(w, t)
    assert done.exit_code() == 0 and done.status.state == "done"
    signals = [e for e in entries(w.state) if isinstance(e, SignalEntry)]
    assert [x.signal for x in signals][-1] == "healthy" and signals[-1].detail == "GET /v2/ answered"
    check_status_json(done.to_json())


def test_quota_throttled_until_retry_after_and_no_request_before(proxied: FaultProxy, tmp_path: Path,
                                                                 vectors_dir: Path) -> None:
    proxied.add(Rule("PUT", r"/manifests/sha256:", "status", times=1, status=429, retry_after="120"))
    w, t = _world(tmp_path, vectors_dir, proxied.host), FakeTime()
    first = _run(w, t)
    assert first.exit_code() == 6
    s = first.status
    man = s.effect(f"manifest:agent@{proxied.host}/acx/q")
    assert man.state == "deferred" and man.attempts == 1  # not retried against a registry that said when
    assert s.quota.state == "throttled" and "Retry-After" in s.quota.reason
    assert s.quota.until is not None and abs((s.quota.until - t.now).total_seconds() - 120) < 1
    assert s.next_transition.at is not None
    t.advance(110)
    before = len(proxied.log.entries)
    early = _run(w, t)
    assert early.executed == 0 and early.exit_code() == 6 and early.status.quota.state == "throttled"
    assert len(proxied.log.entries) == before  # not one request before Retry-After
    t.advance(11)
    assert status(w.state, now=t.now).quota.state == "eligible"
    done = _run(w, t)
    assert done.exit_code() == 0 and done.status.state == "done"


def test_quota_throttled_by_the_window_budget_then_the_next_window(proxied: FaultProxy, tmp_path: Path,
                                                                   vectors_dir: Path) -> None:
    w, t = _world(tmp_path, vectors_dir, proxied.host), FakeTime()
    doc = w.plan_doc()
    doc["quota"] = {"windowSeconds": 3600, "registries": [{"host": proxied.host, "publishes": 3}]}
    w.write_plan(doc)
    windows = 0
    while True:
        report = _run(w, t)
        s = report.status
        row = next(r for r in s.to_json()["quota"]["registries"] if r["host"] == proxied.host)
        assert row["window"]["spent"]["publishes"] <= 3, row
        if report.exit_code() == 0:
            break
        assert report.exit_code() == 6 and s.quota.state == "throttled", s.quota
        assert "3 publishes" in s.quota.reason and row["window"]["left"]["publishes"] == 0
        assert s.quota.until == window_of(t.now, 3600)[1]
        t.now = s.quota.until  # the window ends
        windows += 1
        assert windows < 6
    assert windows >= 2  # 8 publishes at 3 per window
    assert s.ledger.net(proxied.host).publishes == sum(e.wrote for e in s.effects)


def test_quota_operator_gate_blocks_only_the_gated_tag(proxied: FaultProxy, distribution_registry: Registry,
                                                       tmp_path: Path, vectors_dir: Path) -> None:
    approvals = [{"id": "go-live", "blocks": ["tag:latest"], "note": "after QA"}]
    w, t = _world(tmp_path, vectors_dir, proxied.host, observe={"approvals": approvals}), FakeTime()
    first = _run(w, t)
    assert first.exit_code() == 9
    s = first.status
    assert s.quota.state == "operator_gate" and "go-live" in s.quota.reason
    gate = s.gates[0]
    assert (gate.kind, gate.blocks) == ("approval", (f"tag:latest:agent@{proxied.host}/acx/q",))
    assert s.next_transition.command == "acx release approve sample-1 go-live --by NAME"
    done_ids = {e.effect.id for e in s.effects if e.state == "done"}
    assert {f"tag:v1:agent@{proxied.host}/acx/q", f"attest:bundle:agent@{proxied.host}/acx/q"} <= done_ids
    published = tags(distribution_registry, "acx/q")
    assert "latest" not in published and "v1" in published
    res = acx("--json", "release", "approve", GOAL, "go-live", "--by", "alice", "--state-dir", str(w.state))
    assert res.returncode == 0, res.stderr
    check_status_json(json.loads(res.stdout))
    assert json.loads(res.stdout)["quota"]["state"] == "eligible"
    wrong = acx("release", "approve", GOAL, "nope", "--by", "alice", "--state-dir", str(w.state))
    assert wrong.returncode == 3 and "no approval 'nope'" in wrong.stderr
    done = _run(w, t)
    assert done.exit_code() == 0
    assert "latest" in tags(distribution_registry, "acx/q")
    ev = done.status.effect("approval:go-live").evidence or {}
    assert ev["approvedBy"] == "alice"


def test_quota_focus_wait_on_a_lost_write(proxied: FaultProxy, tmp_path: Path, vectors_dir: Path) -> None:
    """The registry answers 201 to the manifest PUT and keeps nothing: writeback_failed after the
    budget, no delivery booked for it (a 201 is a receipt, the read-back found nothing; its requests
    stay spent); the next todo waits on it."""
    proxied.add(Rule("PUT", r"/manifests/sha256:", "fake_ok", times=1000))
    w, t = _world(tmp_path, vectors_dir, proxied.host), FakeTime()
    report = _run(w, t)
    assert report.exit_code() == 9
    s = report.status
    man_id = f"manifest:agent@{proxied.host}/acx/q"
    man = s.effect(man_id)
    assert man.state == "blocked" and man.failure is not None and man.failure.cls == "writeback_failed"
    assert s.quota.state == "focus_wait" and man_id in s.quota.reason
    assert s.quota.focus == f"tag:v1:agent@{proxied.host}/acx/q"
    assert man.attempts == 3 and (man.receipt or {})["httpWrites"] >= 1  # the registry said 201
    assert s.ledger.net(proxied.host).publishes == 2  # the two blobs; not the lost manifest
    assert sum(sp.publishes for sp in s.ledger.spends.values() if sp.effect == man_id) == 0
    assert sum(sp.requests for sp in s.ledger.spends.values() if sp.effect == man_id) >= 3


def test_quota_eligible_after_a_run_died_half_way(tmp_path: Path, vectors_dir: Path) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"])
    rc = run_forked(lambda: run_goal(load_plan(w.plan), root=w.state).exit_code(), Killer(3))
    assert rc == -9
    s = status(w.state)
    assert s.quota.state == "eligible" and s.next_transition.action == "run"
    assert s.quota.focus is not None and s.effect(s.quota.focus).state == "open"


def test_quota_paused_stops_a_run_before_its_next_todo(tmp_path: Path, vectors_dir: Path) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"])

    class PauseAfterThird:
        seen = 0

        def after_work(self, effect_id: str) -> None:
            return

        def after_entry(self, entry: Entry) -> None:
            if isinstance(entry, EffectEntry):
                self.seen += 1
                if self.seen == 3:  # the operator pauses from another process while the run holds the lease
                    res = acx("release", "pause", GOAL, "--reason", "freeze", "--by", "bob", "--state-dir",
                              str(w.state))
                    assert res.returncode == 0, res.stderr

    interpreter.OBSERVERS.append(PauseAfterThird())
    try:
        report = run_goal(load_plan(w.plan), root=w.state)
    finally:
        interpreter.OBSERVERS.pop()
    assert report.executed == 3 and report.exit_code() == 9
    s = report.status
    assert s.quota.state == "paused" and "bob" in s.quota.reason and "freeze" in s.quota.reason
    assert s.next_transition.command == f"acx release unpause {GOAL}"
    again = run_goal(load_plan(w.plan), root=w.state)
    assert again.executed == 0 and again.exit_code() == 9
    assert operator_entry(GOAL, PauseEntry(by="bob"), root=w.state).paused is not None  # idempotent
    res = acx("release", "unpause", GOAL, "--state-dir", str(w.state))
    assert res.returncode == 0, res.stderr
    done = run_goal(load_plan(w.plan), root=w.state)
    assert done.exit_code() == 0
