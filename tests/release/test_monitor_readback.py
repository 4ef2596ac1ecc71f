"""A mirror monitor reads the replica back as the primary's read-back does (the manifest fetched and
re-hashed, never a HEAD header alone), and a replica that is still wrong is no progress whichever
wrong digest it shows. A real registry (distribution 2.8) holds the replica; the fault proxy in
front of it makes it answer HEAD with the digest while its GET serves nothing (or other bytes), as
a broken cache or a lying mirror would."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from acxoci.oci.copy import copy
from acxoci.oci.descriptor import EMPTY_DIGEST, OCI_MANIFEST
from acxoci.oci.target import open_target, push_bytes
from acxoci.release.effects import MonitorSpec
from acxoci.release.interpreter import run_goal
from acxoci.release.journal import ObservationEntry, TargetObservation
from acxoci.release.monitors import Seen, compare, judge
from acxoci.release.plan import load_plan
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.release_state import FakeTime, entries
from tests.harness.releases import make_world
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("lie", ["get-404", "get-corrupt"])
def test_monitor_a_mirror_that_only_heads_the_digest_is_not_satisfied(
        distribution_registry: Registry, tmp_path: Path, vectors_dir: Path, lie: str) -> None:
    reg = distribution_registry.host
    with FaultProxy(reg) as mirror:
        repo = f"{reg}/acx/m"
        w = make_world(tmp_path / "w", vectors_dir, [repo], tags=("v1",), extra={"observe": {
            "mirrors": [{"repository": f"{mirror.host}/replica/m", "of": repo}], "intervalSeconds": 1,
            "waitSeconds": 0}})
        t = FakeTime()
        first = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert first.exit_code() == 6  # the replica does not hold it yet
        released = str((first.status.effect(f"verify:agent@{repo}").evidence or {})["digest"])
        src, _ = open_target(repo)
        dst, _ = open_target(f"{reg}/replica/m")
        copy(src, dst, released, dst_tag="v1", referrers=False)  # the replica has it; it serves it...
        action = "status" if lie == "get-404" else "corrupt"
        lying = mirror.add(Rule("GET", r"^/v2/replica/m/manifests/", action, times=100_000, status=404))
        t.advance(5)  # ...to HEAD only (HEAD passes through and names the released digest)
        second = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert second.exit_code() == 6 and second.status.state == "open", second.status.closeout
        m = second.status.monitor(f"monitor:mirror:agent@{mirror.host}/replica/m")
        assert m.state == "open" and not m.targets[0].ok and m.targets[0].value is None
        if lie == "get-corrupt":
            assert m.targets[0].error is not None
        assert lying.hits > 0
        lying.times = 0  # the mirror serves the manifest now
        t.advance(5)
        done = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert done.exit_code() == 0 and done.status.state == "done"


class _Flapping(FakeTime):
    """Each time the run waits, the replica's tag is moved to another wrong manifest."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.target, _ = open_target(f"{host}/replica/m")
        push_bytes(self.target, b"{}", "application/vnd.oci.empty.v1+json")
        self.moves = 0

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.moves += 1
        empty = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
        doc = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": empty, "layers": [],
               "annotations": {"n": str(self.moves)}}
        self.target.tag(push_bytes(self.target, json.dumps(doc).encode(), OCI_MANIFEST), "v1")


def test_monitor_a_replica_wrong_in_a_new_way_each_time_backs_off_and_escalates(
        distribution_registry: Registry, tmp_path: Path, vectors_dir: Path) -> None:
    reg = distribution_registry.host
    repo = f"{reg}/acx/m"
    w = make_world(tmp_path / "w", vectors_dir, [repo], tags=("v1",), extra={"observe": {
        "mirrors": [{"repository": f"{reg}/replica/m", "of": repo}], "intervalSeconds": 1,
        "maxIntervalSeconds": 60, "escalateAfter": 3, "waitSeconds": 20}})
    t = _Flapping(reg)
    report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
    assert report.exit_code() == 9 and report.status.quota.state == "operator_gate", report.status.quota
    obs = [e for e in entries(w.state) if isinstance(e, ObservationEntry)]
    values = [o.targets[0].value for o in obs]
    assert values[0] is None and len(set(values[1:])) == len(values) - 1  # a new wrong digest each time
    assert [o.targets[0].no_change for o in obs] == [0, 1, 2, 3] and obs[-1].escalated == "gate"
    delays = [round((datetime.fromisoformat(str(o.next_at).replace("Z", "+00:00"))
                     - datetime.fromisoformat(o.at.replace("Z", "+00:00"))).total_seconds()) for o in obs[:3]]
    assert delays == [1, 2, 4]  # backed off as for a replica stuck on one wrong digest


def test_monitor_still_wrong_counts_whichever_wrong_value() -> None:
    spec = MonitorSpec(kind="mirror", target="m/r", tags=("v1",), interval_seconds=1, max_interval_seconds=60,
                       escalate_after=3)
    prev: dict[str, TargetObservation] = {}
    counts = []
    for value in (None, "sha256:aa", "sha256:bb", "sha256:cc"):
        (obs,) = compare(prev, [Seen("m/r:v1", value, False)])
        counts.append(obs.no_change)
        prev = {obs.target: obs}
    assert counts == [0, 1, 2, 3]
    assert judge(spec, (obs,), datetime(2026, 1, 1)).escalate == "gate"
    (ok,) = compare(prev, [Seen("m/r:v1", "sha256:dd", True)])
    assert ok.no_change == 0
