"""Concurrent writers, as separate `acx` processes started together: two installs of the same and
of different artifacts into one store, two `release run` of one goal (the lease race), and a
`resume` while another runner holds the lease. Each outcome is checked: the store holds exactly
the complete items, nothing half-written, and `installed verify` passes; the release has each tag
and referrer once, and the runner that lost the race says so with a typed exit (6, lease_held)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import yaml

from acxoci.release.lease import GoalLease
from tests.harness.env import REPO
from tests.harness.releases import PUBLISHER, ReleaseWorld, acx, assert_release_intact, make_world

ROUNDS = 2  # each race is run more than once: process start-up jitter changes who wins


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", "from acxoci.cli.main import main; main()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _together(*commands: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """Start every command at once, then wait for all: (exit code, stdout, stderr) each."""
    procs = [_spawn(*c) for c in commands]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=180)
        out.append((p.returncode, so, se))
    return out


def _install_world(tmp: Path, vectors: Path) -> tuple[Path, Path]:
    """A layout holding two artifacts of one trusted publisher (the sample, tag v1, and its
    strip-to-ROM copy, tag v2: the same signed ROM in different files) and a policy for them."""
    layout = tmp / "layout"
    for src, tag in (("sample.acx", "v1"), ("sample.stripped.acx", "v2")):
        cart = tmp / src
        shutil.copyfile(vectors / "sample" / src, cart)
        r = acx("push", str(cart), f"oci-layout:{layout}:{tag}")
        assert r.returncode == 0, r.stdout + r.stderr
    policy = tmp / "policy.yaml"
    policy.write_text(yaml.safe_dump({
        "schemaVersion": "acx.verification-policy/1",
        "publishers": [{"id": PUBLISHER, "trustRegistries": [str(vectors / "sample" / "trust-active.json")]}],
    }))
    return layout, policy


def _store_is_whole(store: Path, names: set[str]) -> None:
    """Exactly one complete item per name, no staging leftovers, and `installed verify` passes."""
    r = acx("--json", "installed", "list", "--store", str(store))
    assert r.returncode == 0, r.stdout + r.stderr
    listed = json.loads(r.stdout)
    items = listed["items"] if isinstance(listed, dict) else listed
    assert sorted(i["name"] for i in items) == sorted(names), items
    staging = [p for p in store.rglob("*") if "staging" in p.parts and p.is_file()]
    assert not staging, staging
    v = acx("installed", "verify", "--store", str(store))
    assert v.returncode == 0, v.stdout + v.stderr


def test_two_installs_of_the_same_artifact_into_one_store(tmp_path: Path, vectors_dir: Path) -> None:
    layout, policy = _install_world(tmp_path, vectors_dir)
    for i in range(ROUNDS):
        store = tmp_path / f"store-{i}"
        cmd = ("--json", "install", f"oci-layout:{layout}:v1", "--policy", str(policy), "--store", str(store),
               "--name", "agent")
        results = _together(cmd, cmd)
        assert [rc for rc, _, _ in results] == [0, 0], results
        docs = [json.loads(so) for _, so, _ in results]
        digests = {d.get("digest") for d in docs}
        assert len(digests) == 1, docs  # both report the one artifact
        _store_is_whole(store, {"agent"})
        items = [p for p in (store / "items").iterdir() if (p / "record.json").exists()]
        assert len(items) == 1, items  # installed once, not twice


def test_two_installs_of_different_artifacts_into_one_store(tmp_path: Path, vectors_dir: Path) -> None:
    layout, policy = _install_world(tmp_path, vectors_dir)
    for i in range(ROUNDS):
        store = tmp_path / f"store-{i}"
        results = _together(
            ("--json", "install", f"oci-layout:{layout}:v1", "--policy", str(policy), "--store", str(store),
             "--name", "one"),
            ("--json", "install", f"oci-layout:{layout}:v2", "--policy", str(policy), "--store", str(store),
             "--name", "two"),
        )
        assert [rc for rc, _, _ in results] == [0, 0], results
        a, b = (json.loads(so) for _, so, _ in results)
        assert a["digest"] != b["digest"], (a, b)
        _store_is_whole(store, {"one", "two"})


def _release_world(tmp: Path, vectors: Path) -> tuple[ReleaseWorld, Path]:
    layout = tmp / "layout"
    return make_world(tmp, vectors, [f"oci-layout:{layout}"]), layout


def test_two_release_runs_of_one_goal_race_for_the_lease(tmp_path: Path, vectors_dir: Path) -> None:
    for i in range(ROUNDS):
        w, layout = _release_world(tmp_path / f"r{i}", vectors_dir)
        cmd = ("--json", "release", "run", str(w.plan), "--state-dir", str(w.state))
        results = _together(cmd, cmd)
        codes = sorted(rc for rc, _, _ in results)
        assert codes in ([0, 0], [0, 6]), results  # the loser waits its turn or is told lease_held
        for rc, so, _ in results:
            if rc == 6:
                assert json.loads(so)["error"]["kind"] == "lease_held", so
        done = [json.loads(so) for rc, so, _ in results if rc == 0]
        writers = [d for d in done if d["writes"] > 0]
        assert len(writers) == 1, done  # the goal was published once
        verify = next(e for e in writers[0]["effects"] if e["kind"] == "verify")
        assert_release_intact(layout, verify["evidence"]["digest"])
        again = acx("--json", "release", "run", str(w.plan), "--state-dir", str(w.state))
        assert again.returncode == 0 and json.loads(again.stdout)["writes"] == 0, again.stdout


def test_resume_while_another_runner_holds_the_lease(tmp_path: Path, vectors_dir: Path) -> None:
    w, layout = _release_world(tmp_path, vectors_dir)
    state: Path = w.state
    hook = REPO / "tests" / "harness" / "killhook"  # a run observer that SIGKILLs the child
    killed = subprocess.run(
        [sys.executable, "-c", "from acxoci.cli.main import main; main()", "release", "run",
         str(w.plan), "--state-dir", str(state)],
        env={**os.environ, "PYTHONPATH": f"{hook}:{REPO}", "ACX_TEST_KILL_AFTER": "2"}, capture_output=True,
        text=True, timeout=120)
    assert killed.returncode == -9, killed.stdout + killed.stderr  # a run died half-way
    folder = state / "sample-1"
    journal = (folder / "journal.jsonl").read_bytes()
    holder = GoalLease(folder, "runner-a", 600)
    assert holder.acquire(datetime.now(UTC)) is not None or holder.current() is not None
    blocked = _together(("--json", "release", "resume", "sample-1", "--state-dir", str(state)))[0]
    assert blocked[0] == 6 and json.loads(blocked[1])["error"]["kind"] == "lease_held", blocked
    assert (folder / "journal.jsonl").read_bytes() == journal  # the blocked resume wrote nothing
    holder.release()
    done = acx("--json", "release", "resume", "sample-1", "--state-dir", str(state))
    assert done.returncode == 0, done.stdout + done.stderr
    verify = next(e for e in json.loads(done.stdout)["effects"] if e["kind"] == "verify")
    assert_release_intact(layout, verify["evidence"]["digest"])
