"""Continuation and the terminal audit: every todo declares what follows it (successor /
no_followup; an observation that leaves a monitor unsatisfied continues as active_goal), and a goal
is DONE only when its terminal audit passes — never because its last effect did. The audit is
checked on its own against hostile projections (a successor declared and never done, a spend
missing for remote work, a stale monitor, a refused verdict)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from acxoci.release.audit import terminal_audit
from acxoci.release.effects import Continuation, Effect, plan_effects
from acxoci.release.interpreter import run_goal
from acxoci.release.journal import (
    AttemptEntry,
    CloseoutEntry,
    EffectEntry,
    GoalEntry,
    Journal,
    ObservationEntry,
    TargetObservation,
)
from acxoci.release.plan import load_plan
from acxoci.release.providers import Verdict
from acxoci.release.status import project
from tests.harness.release_state import GOAL, entries, status
from tests.harness.releases import make_world

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_continuation_is_declared_on_every_todo(tmp_path: Path, vectors_dir: Path) -> None:
    repo = "127.0.0.1:5000/acx/a"
    w = make_world(tmp_path / "w", vectors_dir, [repo], extra={"observe": {
        "mirrors": [{"repository": "127.0.0.1:5001/acx/a", "of": repo}],
        "approvals": [{"id": "go", "blocks": ["tag:latest"]}]}})
    effects = plan_effects(load_plan(w.plan))
    by_id = {e.id: e for e in effects}
    for e in effects:
        dependents = tuple(d.id for d in effects if e.id in d.deps)
        if dependents:
            assert e.continuation == Continuation("successor", dependents), e.id
        else:
            assert e.continuation == Continuation("no_followup"), e.id
    assert by_id["prepare:agent"].continuation.successors == (f"blob:config:agent@{repo}",
                                                              f"blob:content:agent@{repo}")
    assert by_id["approval:go"].continuation.successors == (f"tag:latest:agent@{repo}",)
    mirror = by_id["monitor:mirror:agent@127.0.0.1:5001/acx/a"]
    assert mirror.deps == (f"tag:v1:agent@{repo}", f"tag:latest:agent@{repo}")
    leaves = {e.id for e in effects if e.continuation.mode == "no_followup"}
    assert leaves == {f"verify:agent@{repo}", mirror.id}


def test_continuation_done_is_the_audit_not_the_last_effect(tmp_path: Path, vectors_dir: Path) -> None:
    layout = tmp_path / "layout"
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{layout}"])
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 0
    lines = (w.state / GOAL / "journal.jsonl").read_bytes().splitlines(keepends=True)
    es = entries(w.state)
    first_close = next(i for i, e in enumerate(es) if isinstance(e, CloseoutEntry))
    cut = tmp_path / "cut"
    shutil.copytree(w.state, cut)
    (cut / GOAL / "journal.jsonl").write_bytes(b"".join(lines[:first_close]))  # every effect done, no audit
    s = status(cut)
    assert all(e.state == "done" for e in s.effects)
    assert s.state == "open" and s.closeout.state == "pending"
    assert s.quota.state == "eligible" and s.next_transition.action == "closeout"
    done = [e for e in entries(cut) if isinstance(e, EffectEntry) and e.to == "done"]
    assert all(e.continuation is not None for e in done)
    report = run_goal(load_plan(w.plan), root=cut)
    assert report.exit_code() == 0 and report.executed == 0 and report.writes == 0
    audit = report.status.closeout.audit or {}
    assert [f["check"] for f in audit["findings"]] == ["todos", "read-back", "monitors", "gates",
                                                        "successors", "ledger", "acceptance"]
    assert all(f["ok"] for f in audit["findings"])
    assert report.status.runs[-1].progress is not None and report.status.runs[-1].progress.closeout


def _journal(tmp: Path, effects: list[Effect]) -> Journal:
    j = Journal(tmp / "journal.jsonl")
    j.append(GoalEntry(goal="g", plan_path="/p", plan_digest="sha256:00",
                       created_at="2026-11-30T12:00:00.000Z", instance="g/1", effects=tuple(effects)), now=T0)
    return j


def _done(j: Journal, eid: str, **kw: object) -> None:
    j.append(EffectEntry(effect=eid, from_="open", to="done", attempt=1,
                         evidence={"proof": "read back"}, **kw), now=T0)  # type: ignore[arg-type]


def _ok(eid: str) -> dict[str, list[Verdict]]:
    return {eid: [Verdict("r:v1", "sha256:00", True, "sha256:pol")]}


def test_continuation_audit_refuses_a_successor_never_done(tmp_path: Path) -> None:
    a = Effect(id="tag:v1:x@r", kind="tag", artifact="x", repository="r",
               continuation=Continuation("successor", ("verify:x@r",)))
    v = Effect(id="verify:x@r", kind="verify", artifact="x", repository="r", deps=(a.id,))
    j = _journal(tmp_path, [a, v])
    _done(j, a.id)
    s = project(j.entries())
    audit = terminal_audit(s, _ok(v.id), T0)
    failed = {f.check: f.detail for f in audit.failed()}
    assert set(failed) == {"todos", "successors"} and "verify:x@r" in failed["successors"]
    _done(j, v.id)
    assert terminal_audit(project(j.entries()), _ok(v.id), T0).ok


def test_continuation_audit_refuses_unbooked_remote_work_and_a_refused_verdict(tmp_path: Path) -> None:
    b = Effect(id="blob:config:x@reg.example/r", kind="push_blob", artifact="x", repository="reg.example/r")
    v = Effect(id="verify:x@reg.example/r", kind="verify", artifact="x", repository="reg.example/r",
               deps=(b.id,))
    j = _journal(tmp_path, [b, v])
    j.append(AttemptEntry(effect=b.id, attempt=1, key="g/1:blob#1"), now=T0)  # it died after this
    j.append(EffectEntry(effect=b.id, from_="open", to="done", attempt=2, evidence={"proof": "x"}), now=T0)
    _done(j, v.id)
    no = ({"id": "trust", "reason": "no"},)
    refused = {v.id: [Verdict("reg.example/r:v1", "sha256:00", False, "p", failed=no)]}
    audit = terminal_audit(project(j.entries()), refused, T0)
    failed = {f.check: f.detail for f in audit.failed()}
    assert set(failed) == {"ledger", "acceptance"}
    assert "g/1:blob#1" in failed["ledger"] and "trust: no" in failed["acceptance"]


def test_continuation_unsatisfied_observation_keeps_the_goal_active_and_stale_ones_fail_the_audit(
        tmp_path: Path) -> None:
    from acxoci.release.effects import MonitorSpec

    m = Effect(id="monitor:mirror:x@m/r", kind="monitor", artifact="x", monitor=MonitorSpec(
        kind="mirror", target="m/r", of="r", tags=("v1",), interval_seconds=1, max_interval_seconds=8,
        freshness_seconds=60, escalate_after=5))
    j = _journal(tmp_path, [m])
    miss = TargetObservation(target="m/r:v1", value=None, ok=False, changed=True, no_change=0)
    later = "2026-11-30T12:00:01.000Z"
    j.append(ObservationEntry(effect=m.id, targets=(miss,), satisfied=False, next_at=later,
                              continuation=Continuation("active_goal")), now=T0)
    s = project(j.entries(), now=T0)
    assert s.state == "open" and s.quota.state == "waiting"
    assert s.monitor(m.id).next_at == "2026-11-30T12:00:01.000Z"
    hit = TargetObservation(target="m/r:v1", value="sha256:00", ok=True, changed=True, no_change=0)
    j.append(ObservationEntry(effect=m.id, targets=(hit,), satisfied=True), now=T0)
    j.append(EffectEntry(effect=m.id, from_="open", to="done", evidence={"proof": "observed"}), now=T0)
    assert terminal_audit(project(j.entries(), now=T0), {}, T0 + timedelta(seconds=30)).ok
    stale = terminal_audit(project(j.entries(), now=T0), {}, T0 + timedelta(seconds=61))
    assert [f.check for f in stale.failed()] == ["monitors"] and "older than 60s" in stale.failed()[0].detail
