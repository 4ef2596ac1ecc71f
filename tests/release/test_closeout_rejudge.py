"""The terminal audit says DONE only for what `acx install REF --policy` accepts when the audit runs,
against a real registry (distribution 2.8):

- every published tag is read back at the closeout (its manifest fetched and re-hashed) and held to
  the released digest, however fresh the verify todo's verdict: a tag moved to something install
  refuses while the goal waited on a lagging replica is readback_mismatch, not DONE;
- the verify todo's verdict is reused only while it is fresh under the PLAN's
  `observe.freshnessSeconds`; a verdict stamped in the future (another runner's clock ahead of
  ours) is stale; otherwise the one acceptance decision judges again (here it refuses a key that
  was compromised since)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acxoci.install.vpolicy import load_policy
from acxoci.oci.copy import copy
from acxoci.oci.descriptor import EMPTY_DIGEST, OCI_MANIFEST
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.target import open_target, push_bytes
from acxoci.release.interpreter import run_goal
from acxoci.release.journal import GoalEntry
from acxoci.release.plan import load_plan
from acxoci.release.providers import accept
from tests.harness.release_state import FakeTime, entries, own_trust, published_before_closeout
from tests.harness.releases import make_world
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def _move_tag(host: str, repo: str, tag: str) -> str:
    """Someone points `repo:tag` at another manifest (one no consumer can install); its digest."""
    target, _ = open_target(f"{host}/{repo}")
    empty = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
    other = push_bytes(target, json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": empty,
                                           "layers": []}).encode(), OCI_MANIFEST)
    target.tag(other, tag)
    return other.digest


def test_closeout_reads_back_a_tag_moved_while_the_verdict_was_fresh(
        distribution_registry: Registry, tmp_path: Path, vectors_dir: Path) -> None:
    host = distribution_registry.host
    repo = f"{host}/acx/c"
    w = make_world(tmp_path / "w", vectors_dir, [repo], tags=("v1",), extra={"observe": {
        "mirrors": [{"repository": f"{host}/replica/c", "of": repo}], "intervalSeconds": 1,
        "waitSeconds": 0}})
    t = FakeTime()
    first = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
    assert first.exit_code() == 6 and first.status.quota.state == "waiting"  # the replica lags
    released = str((first.status.effect(f"verify:agent@{repo}").evidence or {})["digest"])

    moved = _move_tag(host, "acx/c", "v1")  # a racing job moves :v1 meanwhile
    src, _ = open_target(repo)
    dst, _ = open_target(f"{host}/replica/c")
    copy(src, dst, released, dst_tag="v1", referrers=False)  # the replica catches up
    t.advance(5)  # the verify todo's verdict is 5 s old: fresh under the default 600 s
    report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)

    assert report.exit_code() == 9 and report.status.state == "blocked", report.status.closeout
    verify = report.status.effect(f"verify:agent@{repo}")
    assert verify.state == "blocked" and verify.failure is not None
    assert verify.failure.cls == "readback_mismatch" and moved in verify.failure.message
    policy = load_policy(w.policy, now=datetime.now(UTC))  # and install refuses the tag too
    assert not accept(f"{repo}:v1", released, policy, remote=RemoteOptions(), now=datetime.now(UTC)).accepted


@pytest.mark.parametrize("judged", ["in-the-future", "older-than-the-plans-freshness", "fresh"])
def test_closeout_judges_again_unless_the_verdict_is_fresh_under_the_plan(
        distribution_registry: Registry, tmp_path: Path, vectors_dir: Path, judged: str) -> None:
    repo = f"{distribution_registry.host}/acx/c"
    w = make_world(tmp_path / "w", vectors_dir, [repo], tags=("v1",),
                   extra={"observe": {"freshnessSeconds": 30}})
    trust = own_trust(w, vectors_dir)
    base = datetime.now(UTC)
    ahead = timedelta(days=2) if judged == "in-the-future" else timedelta(0)
    published_before_closeout(w, FakeTime(base + ahead))  # verify judged (and accepted) at base + ahead

    shutil.copyfile(vectors_dir / "sample" / "trust-compromised.json", trust)  # the key is compromised
    later = timedelta(seconds=10 if judged == "fresh" else 60)
    t = FakeTime(base + later)
    report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)

    if judged == "fresh":  # within 30 s the verdict stands (the plan's freshness is the contract)
        assert report.exit_code() == 0 and report.status.state == "done"
        return
    assert report.exit_code() == 9 and report.status.state == "blocked", report.status.closeout
    verify = report.status.effect(f"verify:agent@{repo}")
    assert verify.state == "blocked" and verify.failure is not None
    assert verify.failure.cls == "validation_failed" and "trust" in verify.failure.message
    opened = entries(w.state)[0]
    assert isinstance(opened, GoalEntry) and opened.freshness_seconds == 30  # the plan's, recorded
