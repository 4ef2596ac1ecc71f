"""The terminal audit and the ledger across crashes, against a real registry (distribution 2.8)
through the fault proxy:

- a process killed after everything was spent, while its terminal audit ran, leaves
  terminal_closeout_failed with the spend booked (never "nothing spent"); the next run redoes the
  closeout only: it executes and writes nothing;
- an audit whose acceptance read-back meets a 5xx storm fails as terminal_closeout_failed and is
  redone; one that finds the tag moved elsewhere refuses DONE (readback_mismatch);
- a process killed after an attempt's remote work and before its spend was booked leaves
  quota_spend_failed: an estimate is booked, and voided when the re-run had to write after all;
- SIGKILL at every effect, and replaying every prefix of a finished journal, never books a
  publish twice and never reaches DONE without the terminal audit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import requests

from acxoci.oci.descriptor import EMPTY_DIGEST, OCI_MANIFEST
from acxoci.oci.target import open_target, push_bytes
from acxoci.release.failures import NO_SPEND_CLASSES
from acxoci.release.interpreter import goal_status, run_goal
from acxoci.release.journal import (
    AttemptEntry,
    CloseoutEntry,
    EffectEntry,
    SpendEntry,
    VoidEntry,
    entry_json,
)
from acxoci.release.plan import load_plan
from acxoci.release.quota import fold_ledger
from acxoci.release.status import project
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.killer import Killer
from tests.harness.release_state import (
    GOAL,
    FakeTime,
    entries,
    net_publishes_by_effect,
    referrer_digests,
    status,
    tags,
)
from tests.harness.releases import ReleaseWorld, kill_chain, make_world, run_forked
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def _world(tmp: Path, vectors: Path, host: str, repo: str = "acx/c") -> ReleaseWorld:
    w = make_world(tmp / "w", vectors, [f"{host}/{repo}"])
    doc = w.plan_doc()
    doc["budget"]["transportRetries"] = 0
    w.write_plan(doc)
    return w


def _writers(w: ReleaseWorld) -> set[str]:
    return {e.effect.id for e in status(w.state).effects if e.effect.writes}


def _assert_published_once(w: ReleaseWorld) -> None:
    """Every write effect's delivery is booked exactly once, net; nothing else books one."""
    net = net_publishes_by_effect(w.state)
    writers = _writers(w)
    assert {e for e, n in net.items() if n} == writers, net
    assert all(net[e] == 1 for e in writers), net


def test_closeout_killed_after_spend_is_terminal_closeout_failed_and_only_the_closeout_is_redone(
        proxied: FaultProxy, tmp_path: Path, vectors_dir: Path) -> None:
    w = _world(tmp_path, vectors_dir, proxied.host)
    began = Killer(1, matches=lambda e: isinstance(e, CloseoutEntry) and e.event == "begin")
    assert run_forked(lambda: run_goal(load_plan(w.plan), root=w.state).exit_code(), began) == -9
    s = goal_status(GOAL, root=w.state)
    assert all(e.state == "done" for e in s.effects)
    assert s.state == "deferred" and s.closeout.state == "interrupted"
    assert s.closeout.failure is not None and s.closeout.failure.cls == "terminal_closeout_failed"
    assert "terminal_closeout_failed" not in NO_SPEND_CLASSES
    spent = s.ledger.net()
    assert spent.publishes == len(_writers(w)) and spent.requests > 0  # never "nothing spent"
    assert s.next_transition.action == "closeout" and s.quota.state == "eligible"
    proxied.log.entries.clear()
    again = run_goal(load_plan(w.plan), root=w.state)
    assert again.exit_code() == 0 and again.executed == 0 and again.writes == 0
    assert not [x for x in proxied.log.entries if x[0] in ("PUT", "POST", "PATCH", "DELETE")]
    assert again.status.ledger.net().publishes == spent.publishes
    _assert_published_once(w)


def _kill_before_closeout(w: ReleaseWorld) -> None:
    last = Killer(1, matches=lambda e: isinstance(e, EffectEntry) and e.effect.startswith("verify:")
                  and e.to == "done")
    assert run_forked(lambda: run_goal(load_plan(w.plan), root=w.state).exit_code(), last) == -9


def test_closeout_meets_a_5xx_storm_fails_then_is_redone(proxied: FaultProxy, tmp_path: Path,
                                                         vectors_dir: Path) -> None:
    w = _world(tmp_path, vectors_dir, proxied.host)
    _kill_before_closeout(w)
    t = FakeTime()
    t.advance(3600)  # the verdict of the verify effect is stale now: the audit judges again
    storm = proxied.add(Rule("*", r"^/v2/.+", "status", times=100_000, status=503))
    report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
    assert report.exit_code() == 6 and report.executed == 0
    s = report.status
    assert s.closeout.state == "failed" and s.closeout.failure is not None
    assert s.closeout.failure.cls == "terminal_closeout_failed"
    assert "host_failure" in s.closeout.failure.message
    assert s.state == "deferred" and s.ledger.net().publishes == len(_writers(w))
    storm.times = 0
    done = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
    assert done.exit_code() == 0 and done.executed == 0
    audit = done.status.closeout.audit or {}
    assert audit["ok"] and all(v["accepted"] and v["checks"] for v in audit["acceptance"])  # judged again


def test_closeout_refuses_done_when_the_published_tag_moved(
        proxied: FaultProxy, distribution_registry: Registry, tmp_path: Path, vectors_dir: Path) -> None:
    w = _world(tmp_path, vectors_dir, proxied.host)
    _kill_before_closeout(w)
    target, _ = open_target(f"{distribution_registry.host}/acx/c")  # someone moves :v1 meanwhile
    empty = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
    other = push_bytes(target, json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": empty,
                                           "layers": []}).encode(), OCI_MANIFEST)
    target.tag(other, "v1")
    t = FakeTime()
    t.advance(3600)
    report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
    assert report.exit_code() == 9 and report.status.state == "blocked", (report.status.closeout,
                                                                           report.status.quota)
    s = report.status
    assert s.closeout.state != "done"
    verify = s.effect(f"verify:agent@{proxied.host}/acx/c")
    assert verify.state == "blocked" and verify.failure is not None
    assert verify.failure.cls == "readback_mismatch", verify.failure.message
    assert "v1" in verify.failure.message


def test_closeout_quota_spend_failed_books_an_estimate_and_never_twice(proxied: FaultProxy, tmp_path: Path,
                                                                        vectors_dir: Path) -> None:
    w = _world(tmp_path, vectors_dir, proxied.host)
    # killed after the config blob's push and before anything about it was journaled
    assert run_forked(lambda: run_goal(load_plan(w.plan), root=w.state).exit_code(),
                      Killer(2, after_work=True)) == -9
    s = goal_status(GOAL, root=w.state)
    blob = f"blob:config:agent@{proxied.host}/acx/c"
    assert [(o.effect, o.booked) for o in s.orphans] == [(blob, False)]
    done = run_goal(load_plan(w.plan), root=w.state)
    assert done.exit_code() == 0
    es = entries(w.state)
    reconciled = [e for e in es if isinstance(e, EffectEntry) and e.failure
                  and e.failure.cls == "quota_spend_failed"]
    assert [e.effect for e in reconciled] == [blob]
    estimate = [e for e in es if isinstance(e, SpendEntry) and e.estimated]
    assert [(e.effect, e.publishes) for e in estimate] == [(blob, 1)]
    assert not [e for e in es if isinstance(e, VoidEntry)]  # the write had landed: the estimate stands
    assert not done.status.effect(blob).wrote or done.status.effect(blob).attempts == 1
    _assert_published_once(w)


def test_closeout_quota_spend_failed_voids_the_estimate_when_the_write_had_not_landed(
        proxied: FaultProxy, tmp_path: Path, vectors_dir: Path) -> None:
    w = _world(tmp_path, vectors_dir, proxied.host)
    proxied.add(Rule("PUT", r"/blobs/uploads/", "reset_body", times=1))  # the first upload is cut
    assert run_forked(lambda: run_goal(load_plan(w.plan), root=w.state).exit_code(),
                      Killer(2, after_work=True)) == -9
    done = run_goal(load_plan(w.plan), root=w.state)
    assert done.exit_code() == 0
    voids = [e for e in entries(w.state) if isinstance(e, VoidEntry)]
    assert len(voids) == 1 and "had not landed" in voids[0].reason
    _assert_published_once(w)


@pytest.mark.parametrize("after_write", [False, True], ids=["after-journal", "between-work-and-journal"])
def test_closeout_sigkill_at_every_effect_never_spends_twice(
        proxied: FaultProxy, distribution_registry: Registry, tmp_path: Path, vectors_dir: Path,
        after_write: bool) -> None:
    w = _world(tmp_path, vectors_dir, proxied.host)
    plan = load_plan(w.plan)
    kills = kill_chain(lambda: run_goal(plan, root=w.state).exit_code(), after_write=after_write)
    s = goal_status(GOAL, root=w.state)
    assert kills == len(s.effects) and s.state == "done" and s.closeout.state == "done"
    _assert_published_once(w)
    subject = str((s.effect(f"verify:agent@{proxied.host}/acx/c").evidence or {})["digest"])
    refs = referrer_digests(distribution_registry, "acx/c", subject)  # raw fallback index: no duplicate
    assert len(refs) == len(set(refs)) == 2  # bundle + envelope
    hexpart = subject.split(":")[1]
    assert tags(distribution_registry, "acx/c") == sorted(["latest", "v1", f"sha256-{hexpart}",
                                                           f"sha256-{hexpart}.att"])
    att = requests.get(f"{distribution_registry.url}/v2/acx/c/manifests/sha256-{hexpart}.att",
                       headers={"Accept": OCI_MANIFEST}, timeout=10).json()
    assert len(att["layers"]) == 1  # the legacy attestation merged once


def test_closeout_replaying_any_journal_prefix_never_spends_twice_nor_skips_the_audit(
        proxied: FaultProxy, tmp_path: Path, vectors_dir: Path) -> None:
    w = _world(tmp_path, vectors_dir, proxied.host)
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 0
    full = entries(w.state)
    instance = project(full).instance
    full_net = fold_ledger(full, instance)
    lines = (w.state / GOAL / "journal.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == len(full)
    done_at = next(i for i, e in enumerate(full) if isinstance(e, CloseoutEntry) and e.event == "done")
    for k in range(1, len(full) + 1):  # every prefix, projected
        prefix = full[:k]
        st = project(prefix)
        assert (st.state == "done") == (k > done_at), k
        ledger = fold_ledger(prefix, instance)
        assert ledger.net().publishes <= full_net.net().publishes
        assert all(ledger.net_of(key).publishes <= 1 for key in ledger.spends)
    # resumed from prefixes a crash leaves behind: right after an attempt began, after its spend,
    # after a closeout began, and a spread of others
    cut = sorted({i + 1 for i, e in enumerate(full) if isinstance(e, AttemptEntry | SpendEntry)
                  and e.effect.startswith(("manifest:", "attest:legacy"))}
                 | {i + 1 for i, e in enumerate(full) if isinstance(e, CloseoutEntry)} | {1, len(full) // 2})
    for k in cut:
        state = tmp_path / f"prefix-{k}"
        shutil.copytree(w.state, state)
        (state / GOAL / "journal.jsonl").write_bytes(b"".join(lines[:k]))
        (state / GOAL / "status.json").unlink(missing_ok=True)
        report = run_goal(load_plan(w.plan), root=state)
        assert report.exit_code() == 0 and report.writes == 0, (k, entry_json(full[k - 1]))
        es = entries(state)
        last_effect = max(i for i, e in enumerate(es) if isinstance(e, EffectEntry))
        closes = [i for i, e in enumerate(es) if isinstance(e, CloseoutEntry) and e.event == "done"]
        assert closes and closes[-1] > last_effect, k  # DONE is the audit, after the last todo
        net = net_publishes_by_effect(state)
        assert all(n <= 1 for n in net.values()), (k, net)  # never twice
        assert sum(net.values()) <= full_net.net().publishes
