"""Journal, projection, failure classes and lease, each on its own: a torn last line is ignored and
cut; the projection is a pure replay (four states; ownership never a state); every failure class
gets its own recovery; the lease excludes a live runner and yields to an expired or dead one."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.errors import AuthError, InvalidInput, Tampered, TransientError, WriteBackFailed
from acxoci.oci.errors import RegistryAuthError, RegistryUnavailable, UploadFailed
from acxoci.release.effects import Effect
from acxoci.release.failures import CLASSES, NEXT_ACTION, Failure, classify, decide, fail
from acxoci.release.journal import EffectEntry, GoalEntry, Journal, RunEntry
from acxoci.release.lease import GoalLease, LeaseHeld
from acxoci.release.plan import Budget
from acxoci.release.status import project

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
EFFECTS = [Effect(id="prepare:a", kind="prepare", artifact="a"),
           Effect(id="blob:content:a@r", kind="push_blob", artifact="a", repository="r",
                  params={"role": "content"}, deps=("prepare:a",)),
           Effect(id="tag:v1:a@r", kind="tag", artifact="a", repository="r", params={"tag": "v1"},
                  deps=("blob:content:a@r",)),
           Effect(id="verify:a@r", kind="verify", artifact="a", repository="r", deps=("tag:v1:a@r",))]


def _goal(j: Journal) -> None:
    j.append(GoalEntry(goal="g1", plan_path="/p.yaml", plan_digest="sha256:00",
                       created_at="2026-11-30T12:00:00.000Z", effects=tuple(EFFECTS)), now=T0)


def _eff(j: Journal, eid: str, to: Any, **kw: Any) -> None:
    j.append(EffectEntry(effect=eid, from_="open", to=to, attempt=1, **kw), now=T0)


def test_append_is_ordered_and_a_torn_tail_is_ignored_then_cut(tmp_path: Path) -> None:
    j = Journal(tmp_path / "g" / "journal.jsonl")
    _goal(j)
    _eff(j, "prepare:a", "done", evidence={"materials": {}})
    with j.path.open("ab") as fh:
        fh.write(b'{"seq":3,"type":"effect","effect":"blob:con')  # SIGKILL mid-write
    assert [e.seq for e in j.entries()] == [1, 2]
    _eff(j, "blob:content:a@r", "done")
    assert [e.seq for e in j.entries()] == [1, 2, 3]
    assert j.path.read_bytes().endswith(b"\n") and b"blob:con\"" not in j.path.read_bytes()


def test_corrupt_complete_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.jsonl")
    _goal(j)
    with j.path.open("ab") as fh:
        fh.write(b"not json\n")
    with pytest.raises(InvalidInput, match="line 2"):
        j.entries()


def test_projection_replays_states_receipts_and_next_actions(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.jsonl")
    _goal(j)
    j.append(RunEntry(event="start", runner="ci-1"), now=T0)
    _eff(j, "prepare:a", "done", wrote=False, evidence={"materials": {"x": 1}})
    _eff(j, "blob:content:a@r", "open", failure=Failure("host_failure", "503"))
    _eff(j, "blob:content:a@r", "done", wrote=True, receipt={"action": "pushed"},
         evidence={"proof": "re-hashed"})
    gate = Failure("gate", ":v1 points elsewhere", {"current": "d"})
    _eff(j, "tag:v1:a@r", "blocked", failure=gate)
    j.append(RunEntry(event="end", runner="ci-1", executed=3, writes=1, outcome="blocked"), now=T0)
    st = project(j.entries())
    assert st.state == "blocked" and st.counts() == {"open": 1, "done": 2, "blocked": 1, "deferred": 0}
    blob = st.effect("blob:content:a@r")
    assert (blob.state, blob.attempts, blob.wrote, blob.failure) == ("done", 2, True, None)
    assert blob.receipt == {"action": "pushed"} and blob.evidence == {"proof": "re-hashed"}
    tag = st.effect("tag:v1:a@r")
    assert tag.failure is not None and tag.failure.cls == "gate" and "--allow-retag" in tag.next_action
    assert st.effect("verify:a@r").next_action == "waits for tag:v1:a@r"
    assert st.runs[0].runner == "ci-1" and st.runs[0].executed == 3
    assert {e.state for e in st.effects} <= {"open", "done", "blocked", "deferred"}
    assert project(j.entries()).to_json() == st.to_json()  # pure


def test_projection_refuses_unknown_effects_and_states(tmp_path: Path) -> None:
    j = Journal(tmp_path / "a" / "journal.jsonl")
    _goal(j)
    _eff(j, "prepare:zzz", "done")
    with pytest.raises(InvalidInput, match="unknown effect"):
        project(j.entries())
    k = Journal(tmp_path / "k" / "journal.jsonl")
    _goal(k)
    with k.path.open("ab") as fh:  # ownership is never a state: the typed decoder refuses the line
        fh.write(b'{"type":"effect","seq":2,"at":"x","effect":"prepare:a","from":"open","to":"claimed"}\n')
    with pytest.raises(InvalidInput, match="claimed"):
        project(k.entries())


@pytest.mark.parametrize(("exc", "cls"), [
    (RegistryUnavailable("503 after retries"), "host_failure"),
    (TransientError("reset"), "host_failure"),
    (ConnectionResetError("reset"), "host_failure"),
    (RegistryAuthError("401"), "auth_failure"),
    (AuthError("no key"), "auth_failure"),
    (UploadFailed("did not take"), "writeback_failed"),
    (WriteBackFailed("did not take"), "writeback_failed"),
    (Tampered("rom changed"), "validation_failed"),
    (InvalidInput("bad json"), "validation_failed"),
    (fail("readback_mismatch", "other bytes"), "readback_mismatch"),
    (fail("gate", "tag moves"), "gate"),
])
def test_classify(exc: BaseException, cls: str) -> None:
    assert classify(exc).cls == cls


def test_each_class_has_its_own_recovery() -> None:
    b = Budget(attempts=3, backoff_seconds=0.5, max_backoff_seconds=0.8)
    assert set(NEXT_ACTION) == set(CLASSES)
    host = [decide(Failure("host_failure", ""), n, b) for n in (1, 2, 3)]
    assert [(d.retry, d.state) for d in host] == [(True, "open"), (True, "open"), (False, "deferred")]
    assert [d.delay for d in host[:2]] == [0.5, 0.8]  # doubled, capped
    wb = [decide(Failure("writeback_failed", ""), n, b) for n in (1, 3)]
    assert [(d.retry, d.state) for d in wb] == [(True, "open"), (False, "blocked")]
    for cls in ("auth_failure", "validation_failed", "readback_mismatch", "gate"):
        d = decide(Failure(cls, ""), 1, b)
        assert (d.retry, d.state) == (False, "blocked"), cls


def test_classify_lets_a_bug_surface() -> None:
    with pytest.raises(KeyError):
        classify(KeyError("bug"))


def test_lease_excludes_live_runner_and_yields_to_expired(tmp_path: Path) -> None:
    a = GoalLease(tmp_path, "runner-a", 60)
    b = GoalLease(tmp_path, "runner-b", 60)
    assert a.acquire(T0) is None
    with pytest.raises(LeaseHeld):
        b.acquire(T0 + timedelta(seconds=30))
    a.renew(T0 + timedelta(seconds=30))  # renewal pushes expiry to +90
    with pytest.raises(LeaseHeld):
        b.acquire(T0 + timedelta(seconds=80))
    taken = b.acquire(T0 + timedelta(seconds=91))
    assert taken is not None and taken.runner == "runner-a"
    with pytest.raises(LeaseHeld, match="lost"):
        a.renew(T0 + timedelta(seconds=92))  # a must stop writing at once
    a.release()  # not a's any more: no effect
    cur = b.current()
    assert cur is not None and cur.runner == "runner-b"
    b.release()
    assert b.current() is None


def test_lease_of_a_dead_process_on_this_host_is_taken_over(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(proc.stdout)
    a = GoalLease(tmp_path, "runner-a", 3600)
    a.acquire(T0)
    doc = a.path.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {dead_pid}')
    a.path.write_text(doc)
    took = GoalLease(tmp_path, "runner-b", 60).acquire(T0 + timedelta(seconds=1))
    assert took is not None and took.pid == dead_pid
