"""Monitor todos against real servers: a release to a registry observed at two pull-through caches
(distribution 2.8 in proxy mode) completes only after the second one, whose link upstream answers
404 for a while (a lagging replica, through the fault proxy), serves the released digest; each
target keeps its own consecutive_no_change, observations back off, and a run waits at most
`observe.waitSeconds` (then it ends waiting, exit 6). A mirror that never catches up escalates to
a gate (operator_gate) and resumes once a person has looked. A status list served over real HTTPS
is watched until its validFrom reaches the threshold."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from acxoci.release.interpreter import run_goal
from acxoci.release.journal import CloseoutEntry, ObservationEntry
from acxoci.release.plan import load_plan
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.release_state import FakeTime, check_status_json, entries
from tests.harness.releases import ReleaseWorld, make_world
from tests.harness.servers import Registry, make_ca_and_cert
from tests.release.conftest import cache_of

pytestmark = pytest.mark.interop


def _mirrored(tmp: Path, vectors: Path, primary: str, mirrors: list[str], **observe: object) -> ReleaseWorld:
    repo = f"{primary}/acx/m"
    return make_world(tmp / "w", vectors, [repo], tags=("v1",), extra={"observe": {
        "mirrors": [{"repository": f"{m}/acx/m", "of": repo} for m in mirrors], "intervalSeconds": 1,
        "maxIntervalSeconds": 30, **observe}})


def _observations(w: ReleaseWorld, mirror: str) -> list[ObservationEntry]:
    return [e for e in entries(w.state)
            if isinstance(e, ObservationEntry) and e.effect.endswith(f"@{mirror}/acx/m")]


def test_monitor_two_mirrors_the_second_lags_and_the_goal_waits_for_it(
        distribution_registry: Registry, pull_through: list[Registry], tmp_path: Path,
        vectors_dir: Path) -> None:
    primary = distribution_registry.host
    with FaultProxy(primary) as link:
        lag = link.add(Rule("*", r"/manifests/v1$", "status", times=100_000, status=404))
        near = cache_of(pull_through, tmp_path / "near", primary)
        far = cache_of(pull_through, tmp_path / "far", link.host)  # its way upstream lags
        w, t = _mirrored(tmp_path, vectors_dir, primary, [near.host, far.host], waitSeconds=2), FakeTime()

        first = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert first.exit_code() == 6, first.status.quota  # waiting: the far mirror has not got it yet
        s = first.status
        assert s.state == "open" and s.closeout.state == "none"
        assert s.monitor(f"monitor:mirror:agent@{near.host}/acx/m").state == "done"
        far_view = s.monitor(f"monitor:mirror:agent@{far.host}/acx/m")
        assert far_view.state == "open" and far_view.targets[0].value is None
        assert s.quota.state == "waiting" and far.host in s.quota.reason
        assert s.next_transition.at == far_view.next_at
        assert [round(x) for x in t.slept] == [1]  # one wait within waitSeconds, then the run ended
        check_status_json(first.to_json())

        t.advance(30)
        second = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert second.exit_code() == 6 and second.status.quota.state == "waiting"  # still lagging
        assert second.executed == 0 and second.status.no_progress_runs == 0  # observing is not failing

        lag.times = 0  # the replica catches up
        t.advance(30)
        report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert report.exit_code() == 0 and report.status.state == "done"

    obs = _observations(w, far.host)
    values = [o.targets[0].value for o in obs]
    assert values[:3] == [None, None, None] and values[-1] == report.status.effect(
        f"verify:agent@{primary}/acx/m").evidence["digest"]  # type: ignore[index]
    assert [o.targets[0].no_change for o in obs[:3]] == [0, 1, 2]  # per target, counted from the first
    assert [o.satisfied for o in obs] == [False, False, False, True]
    delays = [round((datetime.fromisoformat(str(o.next_at).replace("Z", "+00:00"))
                     - datetime.fromisoformat(o.at.replace("Z", "+00:00"))).total_seconds()) for o in obs[:3]]
    assert delays == [1, 2, 4]  # backoff: doubled after each unchanged observation
    near_obs = _observations(w, near.host)
    assert len(near_obs) == 1 and near_obs[0].satisfied
    done_at = next(e.seq for e in entries(w.state) if isinstance(e, CloseoutEntry) and e.event == "done")
    assert obs[-1].seq < done_at  # DONE came only after the far mirror served the digest
    assert not [e for e in entries(w.state) if isinstance(e, CloseoutEntry) and e.seq < obs[-1].seq]


def test_monitor_escalates_to_a_gate_then_resumes_after_a_person_looked(
        distribution_registry: Registry, pull_through: list[Registry], tmp_path: Path,
        vectors_dir: Path) -> None:
    primary = distribution_registry.host
    with FaultProxy(primary) as link:
        stuck = link.add(Rule("*", r"/manifests/v1$", "status", times=100_000, status=404))
        far = cache_of(pull_through, tmp_path / "far", link.host)
        w = _mirrored(tmp_path, vectors_dir, primary, [far.host], escalateAfter=2, waitSeconds=600)
        t = FakeTime()
        report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert report.exit_code() == 9
        s = report.status
        mid = f"monitor:mirror:agent@{far.host}/acx/m"
        m = s.monitor(mid)
        assert m.state == "blocked" and m.escalated == "gate" and m.observations == 3
        assert s.quota.state == "operator_gate" and s.gates[0].kind == "monitor"
        assert s.effect(f"verify:agent@{primary}/acx/m").state == "done"  # only the monitor waits
        assert s.state == "blocked" and s.closeout.state == "none"

        stuck.times = 0  # a person fixed the replication
        done = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
        assert done.exit_code() == 0
        again = done.status.monitor(mid)
        assert again.state == "done" and again.targets[0].no_change == 0


class _Lists(BaseHTTPRequestHandler):
    """Serves `old` for the first `lag` GETs, then `new` (a status list propagating)."""

    old = b""
    new = b""
    lag = 0
    served = 0

    def do_GET(self) -> None:
        cls = type(self)
        body = cls.old if cls.served < cls.lag else cls.new
        cls.served += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def https_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    ca, cert, key = make_ca_and_cert(tmp_path)
    monkeypatch.setenv("ACX_CA_FILE", str(ca))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Lists)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/status/1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_monitor_status_list_valid_from_reaches_the_threshold(https_lists: str, tmp_path: Path,
                                                              vectors_dir: Path) -> None:
    threshold = datetime(2026, 11, 30, tzinfo=UTC)
    _Lists.old = json.dumps({"id": https_lists, "validFrom": "2026-11-01T00:00:00Z"}).encode()
    _Lists.new = json.dumps({"id": https_lists, "validFrom": "2026-11-30T00:00:00Z"}).encode()
    _Lists.lag, _Lists.served = 2, 0
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"], extra={"observe": {
        "statusLists": [{"url": https_lists, "validFrom": threshold.isoformat().replace("+00:00", "Z")}],
        "intervalSeconds": 2, "waitSeconds": 60}})
    t = FakeTime()
    report = run_goal(load_plan(w.plan), root=w.state, clock=t.clock, sleep=t.sleep)
    assert report.exit_code() == 0, report.status.quota
    m = report.status.monitor(f"monitor:status-list:{https_lists}")
    assert m.state == "done" and m.observations == 3
    obs = [e for e in entries(w.state) if isinstance(e, ObservationEntry)]
    assert [o.satisfied for o in obs] == [False, False, True]
    assert obs[0].targets[0].value is not None and "2026-11-01" in obs[0].targets[0].value
    assert obs[1].targets[0].no_change == 1 and [round(x) for x in t.slept] == [2, 4]
