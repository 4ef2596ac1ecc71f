"""One goal, one writer: the lease belongs to a per-process nonce, not to a runner's name, and every
journal append checks it, against a real registry (distribution 2.8):

- a second process given the same runner name (`ACX_RELEASE_RUNNER=ci` on two CI jobs) is refused
  while the first holds the goal (exit 6, lease_held, naming the holder);
- a run whose lease was taken over in the middle of a todo (it outlived its expiry) writes not one
  more journal entry: lease_lost (exit 6) naming the new holder; the new holder finishes the goal
  and every publish is booked once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from acxoci.release import interpreter
from acxoci.release.interpreter import run_goal
from acxoci.release.journal import Entry
from acxoci.release.lease import GoalLease, LeaseHeld
from acxoci.release.plan import load_plan
from tests.harness.env import REPO
from tests.harness.release_state import GOAL, FakeTime, entries, net_publishes_by_effect, status
from tests.harness.releases import make_world
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

HOLD = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from acxoci.release.lease import GoalLease
GoalLease(Path(sys.argv[1]), "ci", 600).acquire(datetime.now(UTC))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A live process holding the lease of goal GOAL under runner name `ci` (stopped by PID)."""
    folder = tmp_path / "w" / "state" / GOAL
    folder.mkdir(parents=True, mode=0o700)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield folder, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def test_lease_two_processes_with_one_runner_name_are_two_holders(
        holder: tuple[Path, subprocess.Popen[str]], distribution_registry: Registry, tmp_path: Path,
        vectors_dir: Path) -> None:
    folder, proc = holder
    w = make_world(tmp_path / "w", vectors_dir, [f"{distribution_registry.host}/acx/c"], tags=("v1",))
    with pytest.raises(LeaseHeld) as info:
        run_goal(load_plan(w.plan), root=w.state, runner="ci")
    assert info.value.exit_code == 6 and info.value.kind == "lease_held"
    assert f"pid {proc.pid}" in info.value.message
    assert not (folder / "journal.jsonl").exists()  # nothing was written
    proc.kill()
    proc.wait(timeout=10)
    assert run_goal(load_plan(w.plan), root=w.state, runner="ci").exit_code() == 0  # its holder is gone


class _TakeOver:
    """At the first remote work of the run, runner B takes the goal over (A's lease has expired by
    B's clock), as a second CI job would while A is stuck in a slow transfer."""

    def __init__(self, folder: Path, at: FakeTime) -> None:
        self.folder, self.at = folder, at
        self.journaled: int | None = None

    def after_work(self, effect_id: str) -> None:
        if self.journaled is None:
            GoalLease(self.folder, "B", 60).acquire(self.at.now)
            self.journaled = len(entries(self.folder.parent))

    def after_entry(self, entry: Entry) -> None:
        pass


def test_lease_lost_in_the_middle_of_a_todo_stops_every_append(distribution_registry: Registry,
                                                               tmp_path: Path, vectors_dir: Path) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"{distribution_registry.host}/acx/c"], tags=("v1",))
    t = FakeTime()
    later = FakeTime(t.now + timedelta(seconds=901))  # past A's lease (900 s)
    taker = _TakeOver(w.state / GOAL, later)
    interpreter.OBSERVERS.append(taker)
    try:
        with pytest.raises(LeaseHeld) as info:
            run_goal(load_plan(w.plan), root=w.state, runner="A", clock=t.clock, sleep=t.sleep)
    finally:
        interpreter.OBSERVERS.remove(taker)
    assert info.value.exit_code == 6 and info.value.kind == "lease_lost", info.value
    assert "lease lost to B" in info.value.message
    assert taker.journaled is not None and len(entries(w.state)) == taker.journaled  # not one more line

    later.advance(120)  # B's own lease of 60 s is gone too: B resumes the goal and finishes it
    done = run_goal(load_plan(w.plan), root=w.state, runner="B", clock=later.clock, sleep=later.sleep)
    assert done.exit_code() == 0 and done.took_over == "B"
    writers = {e.effect.id for e in status(w.state).effects if e.effect.writes}
    net = net_publishes_by_effect(w.state)
    assert {e for e, n in net.items() if n} == writers and all(net[e] == 1 for e in writers), net
