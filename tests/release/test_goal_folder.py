"""Every file of a goal folder (`.acx-release/<goal-id>/`: journal, locks, lease, status cache,
frozen objects) is opened without following a symlink, only if it is a regular file, with bounded
reads, in a real folder owned by this user; goal ids on the command line are held to the plan's
goal.id rule; times in a journal are parsed by the one RFC 3339 parser. Whatever is planted there
(a poisoned CI cache of `.acx-release/`) gives a typed error naming the file, never a hang, a crash
(exit 70) or a write outside the folder. Journals come from a real release to an OCI layout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acxoci.errors import AcxError, InvalidInput
from acxoci.release.interpreter import goal_status, operator_entry, run_goal
from acxoci.release.journal import PauseEntry
from acxoci.release.plan import load_plan
from tests.harness.env import REPO
from tests.harness.release_state import GOAL, append_line
from tests.harness.releases import ReleaseWorld, acx, make_world

OUTSIDE = b'{"auths":{"ghcr.io":{"auth":"c2VjcmV0"}}}'  # a file outside, without a final newline


@pytest.fixture
def world(tmp_path: Path, vectors_dir: Path) -> ReleaseWorld:
    """A plan releasing the sample cartridge to an OCI layout (no registry needed to open a goal)."""
    return make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"], tags=("v1",))


@pytest.fixture
def finished(world: ReleaseWorld) -> ReleaseWorld:
    assert run_goal(load_plan(world.plan), root=world.state).exit_code() == 0
    return world


def _outside(tmp: Path) -> Path:
    out = tmp / "outside.json"
    out.write_bytes(OUTSIDE)
    return out


def _cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from acxoci.cli.main import main; main()", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def _kind(res: subprocess.CompletedProcess[str]) -> str:
    return str(json.loads(res.stdout)["error"]["kind"])


@pytest.mark.parametrize("command", ["run", "status", "pause"])
def test_goal_folder_symlinked_journal_is_refused_and_its_target_untouched(
        world: ReleaseWorld, tmp_path: Path, command: str) -> None:
    outside = _outside(tmp_path)
    folder = world.state / GOAL
    folder.mkdir(parents=True, mode=0o700)
    (folder / "journal.jsonl").symlink_to(outside)
    with pytest.raises(InvalidInput, match="symbolic link") as info:
        if command == "run":
            run_goal(load_plan(world.plan), root=world.state)
        elif command == "status":
            goal_status(GOAL, root=world.state)
        else:
            operator_entry(GOAL, PauseEntry(by="me"), root=world.state)
    assert "journal.jsonl" in str(info.value.where)
    assert outside.read_bytes() == OUTSIDE


@pytest.mark.parametrize("name", ["journal.jsonl", "lease.json"])
def test_goal_folder_fifo_gives_a_typed_error_at_once(finished: ReleaseWorld, name: str) -> None:
    folder = finished.state / GOAL
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    state = str(finished.state)
    commands = (("release", "status", GOAL), ("release", "pause", GOAL),
                ("release", "run", str(finished.plan)))
    for args in commands:
        if name == "lease.json" and args[1] != "run":
            continue  # status and pause never read the lease
        res = _cli("--json", *args, "--state-dir", state)  # a hang would time out here
        assert res.returncode == 3 and _kind(res) == "invalid_input", (args, res.stdout, res.stderr)
        assert "not a regular file" in res.stdout


@pytest.mark.parametrize("lock", [".journal.lock", ".lease.lock"])
def test_goal_folder_symlinked_lock_is_refused_not_a_crash(finished: ReleaseWorld, tmp_path: Path,
                                                           lock: str) -> None:
    outside = _outside(tmp_path)
    folder = finished.state / GOAL
    (folder / lock).unlink(missing_ok=True)
    (folder / lock).symlink_to(outside)
    cmd = ("release", "pause", GOAL) if lock == ".journal.lock" else ("release", "run", str(finished.plan))
    res = acx("--json", *cmd, "--state-dir", str(finished.state))
    assert res.returncode == 3 and _kind(res) == "invalid_input", res.stdout + res.stderr
    assert lock in json.loads(res.stdout)["error"]["where"]
    assert outside.read_bytes() == OUTSIDE


def test_goal_folder_predictable_temporary_names_are_never_written_through(finished: ReleaseWorld,
                                                                            tmp_path: Path) -> None:
    folder = finished.state / GOAL
    planted = {}
    for name in ("status.json", f".status.json.{os.getpid()}.tmp", f".lease.json.{os.getpid()}.tmp"):
        target = tmp_path / f"target-{len(planted)}"
        target.write_bytes(OUTSIDE)
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(target)
        planted[name] = target
    assert run_goal(load_plan(finished.plan), root=finished.state).exit_code() == 0  # lease + status cache
    goal_status(GOAL, root=finished.state)
    assert all(t.read_bytes() == OUTSIDE for t in planted.values())
    assert not (folder / "status.json").is_symlink()  # the cache replaced the link, never followed it


def test_goal_folder_itself_must_be_a_real_folder_of_this_user(finished: ReleaseWorld,
                                                                tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(finished.state / GOAL), elsewhere)
    (elsewhere / "status.json").unlink()
    (finished.state / GOAL).symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InvalidInput, match="real folder"):
        goal_status(GOAL, root=finished.state)
    assert not (elsewhere / "status.json").exists()  # nothing was written through the link
    (finished.state / GOAL).unlink()
    shutil.move(str(elsewhere), finished.state / GOAL)
    if os.geteuid() != 0:
        return  # only root can give the folder to another user
    os.chown(finished.state / GOAL, 65534, 65534)
    with pytest.raises(InvalidInput, match="belongs to user 65534"):
        goal_status(GOAL, root=finished.state)


def test_goal_folder_objects_folder_led_outside_is_refused(world: ReleaseWorld, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere-objects"
    elsewhere.mkdir()
    folder = world.state / GOAL
    folder.mkdir(parents=True, mode=0o700)
    (folder / "objects").symlink_to(elsewhere, target_is_directory=True)
    report = run_goal(load_plan(world.plan), root=world.state)
    prepare = report.status.effect("prepare:agent")
    assert report.exit_code() == 9 and prepare.state == "blocked" and prepare.failure is not None
    assert "objects" in prepare.failure.message or "objects" in str(prepare.failure.details)
    assert not any(elsewhere.rglob("*"))  # nothing frozen outside the goal folder


@pytest.mark.parametrize("args", [("status",), ("pause",), ("unpause",), ("approve", "go", "--by", "x"),
                                  ("resume",)])
def test_goal_folder_goal_ids_on_the_command_line_are_goal_ids(finished: ReleaseWorld, tmp_path: Path,
                                                                args: tuple[str, ...]) -> None:
    elsewhere = tmp_path / "elsewhere" / "goal"
    elsewhere.parent.mkdir()
    shutil.copytree(finished.state / GOAL, elsewhere)
    (elsewhere / "status.json").unlink()
    journal = (elsewhere / "journal.jsonl").read_bytes()
    state = tmp_path / "state"
    state.mkdir()
    for goal in ("../elsewhere/goal", str(elsewhere)):
        res = acx("--json", "release", args[0], goal, *args[1:], "--state-dir", str(state))
        assert res.returncode == 2 and _kind(res) == "usage", res.stdout + res.stderr
        assert "not a goal id" in res.stdout
    assert (elsewhere / "journal.jsonl").read_bytes() == journal and not (elsewhere / "status.json").exists()


@pytest.mark.parametrize("until", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00",
                                   "9500-01-01T00:00:00Z"])
def test_goal_folder_times_out_of_range_are_a_typed_error(finished: ReleaseWorld, until: str) -> None:
    last = json.loads((finished.state / GOAL / "journal.jsonl").read_bytes().splitlines()[-1])
    append_line(finished.state, {"type": "signal", "seq": last["seq"] + 1, "at": last["at"],
                                 "registry": "registry.example", "signal": "throttled", "until": until})
    res = acx("--json", "release", "status", GOAL, "--state-dir", str(finished.state))
    assert res.returncode == 3 and _kind(res) == "invalid_input", res.stdout + res.stderr
    assert until in res.stdout and "until" in res.stdout
    with pytest.raises(AcxError):
        goal_status(GOAL, root=finished.state)
