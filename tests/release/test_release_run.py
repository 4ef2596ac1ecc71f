"""The release interpreter end to end on OCI layouts (real files, real cartridge, keys made at run
time): a release reads back and passes the acceptance policy; a rerun writes nothing; SIGKILL at
every effect (after its journal entry, and between its write and its journal entry) then resume
always completes with no duplicated referrers or tags and nothing lost; validation failures block
before any write and are never retried; the gate; the lease; the projection comes from the journal."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from acxoci.errors import Blocked
from acxoci.oci.descriptor import OCI_MANIFEST
from acxoci.oci.layout import LayoutStore
from acxoci.oci.target import push_bytes
from acxoci.release.interpreter import goal_status, resume_goal, run_goal
from acxoci.release.journal import EffectEntry, Journal, RunEntry
from acxoci.release.lease import GoalLease, LeaseHeld
from acxoci.release.plan import load_plan
from acxoci.release.status import project
from tests.harness.releases import ReleaseWorld, acx, assert_release_intact, kill_chain, make_world


def _world(tmp: Path, vectors: Path, **kw: object) -> tuple[ReleaseWorld, Path]:
    layout = tmp / "layout"
    return make_world(tmp, vectors, [f"oci-layout:{layout}"], **kw), layout  # type: ignore[arg-type]


def test_release_reads_back_then_rerun_does_nothing(tmp_path: Path, vectors_dir: Path) -> None:
    w, layout = _world(tmp_path, vectors_dir)
    first = run_goal(load_plan(w.plan), root=w.state)
    assert first.exit_code() == 0 and first.status.state == "done"
    assert first.executed == len(first.status.effects) and first.writes > 0
    verify = first.status.effect(f"verify:agent@oci-layout:{layout}")
    ev = verify.evidence or {}
    assert ev["acceptance"] == "installable"
    assert ev["checks"]["attestations"] == "pass" and ev["checks"]["trust"] == "pass"
    assert_release_intact(layout, ev["digest"])
    before = (layout / "index.json").read_bytes()

    second = run_goal(load_plan(w.plan), root=w.state)
    assert second.executed == 0 and second.writes == 0 and second.exit_code() == 0
    ends = [e for e in Journal(w.state / "sample-1" / "journal.jsonl").entries()
            if isinstance(e, RunEntry) and e.event == "end"]
    assert ends[-1].executed == 0 and ends[-1].writes == 0
    assert (layout / "index.json").read_bytes() == before


@pytest.mark.parametrize("after_write", [False, True], ids=["after-journal", "between-write-and-journal"])
def test_sigkill_at_every_effect_then_resume(tmp_path: Path, vectors_dir: Path, after_write: bool) -> None:
    w, layout = _world(tmp_path, vectors_dir)
    plan = load_plan(w.plan)

    def step() -> int:
        return run_goal(plan, root=w.state).exit_code()

    kills = kill_chain(step, after_write=after_write)
    status = goal_status("sample-1", root=w.state)
    n = len(status.effects)
    assert kills == n, (kills, n)  # one kill at each effect in turn
    assert status.state == "done"
    ev = status.effect(f"verify:agent@oci-layout:{layout}").evidence or {}
    assert ev["acceptance"] == "installable"
    assert_release_intact(layout, ev["digest"])
    if after_write:  # the re-run after a lost journal entry found the write and did not repeat it
        entries = Journal(w.state / "sample-1" / "journal.jsonl").entries()
        done = [e for e in entries if isinstance(e, EffectEntry) and e.to == "done"]
        wrote = [e.effect for e in done if e.wrote and e.effect != "prepare:agent"]
        assert not wrote, wrote


def test_tampered_input_blocks_before_any_write_and_is_not_retried(tmp_path: Path, vectors_dir: Path) -> None:
    w, layout = _world(tmp_path, vectors_dir)
    shutil.copyfile(vectors_dir / "sample" / "tampered" / "rom-data.acx", w.cartridge)
    report = run_goal(load_plan(w.plan), root=w.state)
    assert report.exit_code() == Blocked.exit_code
    prep = report.status.effect("prepare:agent")
    assert prep.state == "blocked" and prep.failure is not None and prep.failure.cls == "validation_failed"
    assert "fix the input" in prep.next_action
    assert not layout.exists(), "nothing may be written for an input that does not verify"
    again = run_goal(load_plan(w.plan), root=w.state)
    assert again.executed == 0 and again.status.effect("prepare:agent").attempts == 1


def test_policy_that_would_refuse_blocks_at_prepare(tmp_path: Path, vectors_dir: Path) -> None:
    w, layout = _world(tmp_path, vectors_dir)
    pol = yaml.safe_load(w.policy.read_text())
    regs = pol["publishers"][0]["trustRegistries"]
    pol["publishers"] = [{"id": "io.github.someone-else", "trustRegistries": regs}]
    w.policy.write_text(yaml.safe_dump(pol))
    report = run_goal(load_plan(w.plan), root=w.state)
    prep = report.status.effect("prepare:agent")
    assert prep.failure is not None and prep.failure.cls == "validation_failed"
    assert "trust" in prep.failure.message
    assert not layout.exists()


def test_gate_on_layout_and_allow_retag(tmp_path: Path, vectors_dir: Path) -> None:
    w, layout = _world(tmp_path, vectors_dir)
    store = LayoutStore(layout, create=True)
    push_bytes(store, b"{}", "application/vnd.oci.empty.v1+json")
    other = push_bytes(store, json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": {
        "mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
        "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}, "layers": []}
    ).encode(), OCI_MANIFEST)
    store.tag(other, "latest")
    gated = run_goal(load_plan(w.plan), root=w.state)
    tag = gated.status.effect(f"tag:latest:agent@oci-layout:{layout}")
    assert tag.state == "blocked" and tag.failure is not None and tag.failure.cls == "gate"
    assert gated.status.effect(f"tag:v1:agent@oci-layout:{layout}").state == "done"  # not the whole goal
    assert gated.exit_code() == Blocked.exit_code
    assert LayoutStore(layout, create=False).resolve("latest").digest == other.digest
    opened = run_goal(load_plan(w.plan), root=w.state, allow_retag=True)
    assert opened.exit_code() == 0
    receipt = opened.status.effect(f"tag:latest:agent@oci-layout:{layout}").receipt or {}
    assert receipt["previous"] == other.digest


def test_changed_plan_is_blocked_for_the_same_goal(tmp_path: Path, vectors_dir: Path) -> None:
    w, _ = _world(tmp_path, vectors_dir)
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 0
    doc = w.plan_doc()
    doc["goal"]["artifacts"][0]["to"][0]["tags"] = ["v2"]
    w.write_plan(doc)
    with pytest.raises(Blocked, match="plan changed"):
        run_goal(load_plan(w.plan), root=w.state)


def test_a_live_lease_keeps_a_second_runner_out_and_an_expired_one_is_taken_over(tmp_path: Path,
                                                                                 vectors_dir: Path) -> None:
    w, _ = _world(tmp_path, vectors_dir)
    folder = w.state / "sample-1"
    now = datetime.now(UTC)
    GoalLease(folder, "runner-a", 600).acquire(now)
    with pytest.raises(LeaseHeld) as info:
        run_goal(load_plan(w.plan), root=w.state, runner="runner-b")
    assert info.value.exit_code == 6
    assert not (folder / "journal.jsonl").exists()
    later = now + timedelta(seconds=601)
    report = run_goal(load_plan(w.plan), root=w.state, runner="runner-b", clock=lambda: later)
    assert report.took_over == "runner-a"


def test_status_is_the_journal_projection_and_cache_is_disposable(tmp_path: Path, vectors_dir: Path) -> None:
    w, layout = _world(tmp_path, vectors_dir)
    run_goal(load_plan(w.plan), root=w.state)
    folder = w.state / "sample-1"
    cached = json.loads((folder / "status.json").read_text())
    (folder / "status.json").unlink()
    (folder / "lease.json").unlink(missing_ok=True)
    shutil.rmtree(layout)  # the registry is not consulted either
    again = goal_status("sample-1", root=w.state).to_json()
    assert again == cached
    assert project(Journal(folder / "journal.jsonl").entries()).to_json() == cached
    res = acx("--json", "release", "status", "sample-1", "--state-dir", str(w.state))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == cached
    human = acx("release", "status", "sample-1", "--state-dir", str(w.state))
    assert human.stdout.startswith("DONE release sample-1")
    # resume re-reads the plan named in the journal
    shutil.rmtree(folder / "objects")
    report = resume_goal("sample-1", root=w.state)
    assert report.executed == 0


def test_release_with_level_credential_and_status_list(tmp_path: Path, vectors_dir: Path) -> None:
    """A cartridge re-signed by a run-time key, a real level credential from the level benchmark,
    its status list published as an OCI artifact; acceptance demands level `mid` and revocation."""
    from tests.harness.installs import (
        PUBLISHER,
        issue_level,
        level_policy,
        make_cartridge,
        registry_entry,
        write_registry,
    )

    w, layout = _world(tmp_path, vectors_dir, formats=())
    key = w.key
    make_cartridge(vectors_dir, w.cartridge, key)
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    now = datetime.now(UTC)
    lv = issue_level(tmp_path, w.cartridge, now=now)
    (tmp_path / "credential.json").write_text(json.dumps(lv.credential))
    level_policy(tmp_path, reg, lv, "mid")
    doc = w.plan_doc()
    doc["goal"]["artifacts"][0]["levelCredential"] = "lvl"
    doc["goal"]["statusList"] = {"input": "s1", "repository": f"oci-layout:{tmp_path / 'status'}"}
    doc["inputs"]["level"] = {"credentials": {"lvl": "credential.json"},
                              "statusLists": {"s1": lv.list_path.name}}
    w.write_plan(doc)
    report = run_goal(load_plan(w.plan), root=w.state)
    assert report.exit_code() == 0, [e.to_json() for e in report.status.effects if e.state != "done"]
    ev = report.status.effect(f"verify:agent@oci-layout:{layout}").evidence or {}
    assert ev["checks"]["level"] == "pass" and ev["checks"]["revocation"] == "pass"
    cred = report.status.effect(f"credential:agent@oci-layout:{layout}")
    assert cred.state == "done" and cred.wrote and (cred.evidence or {})["listed"] == 1
    sl = report.status.effect(f"status-list:s1@oci-layout:{tmp_path / 'status'}")
    assert sl.state == "done" and (sl.evidence or {})["listId"] == lv.status_list["id"]
    from acxoci.level.oci import fetch_status_list

    assert fetch_status_list(f"oci-layout:{tmp_path / 'status'}:status") == lv.status_list
    again = run_goal(load_plan(w.plan), root=w.state)
    assert again.executed == 0 and again.writes == 0


def test_wrong_rom_credential_is_a_validation_failure(tmp_path: Path, vectors_dir: Path) -> None:
    w, layout = _world(tmp_path, vectors_dir)
    cred = json.loads((vectors_dir / "level" / "vc-min.json").read_text())
    (tmp_path / "credential.json").write_text(json.dumps(cred))
    doc = w.plan_doc()
    doc["goal"]["artifacts"][0]["levelCredential"] = "lvl"
    doc["inputs"]["level"] = {"credentials": {"lvl": "credential.json"}}
    w.write_plan(doc)
    report = run_goal(load_plan(w.plan), root=w.state)
    prep = report.status.effect("prepare:agent")
    assert prep.failure is not None and prep.failure.cls == "validation_failed"
    assert "ROM" in prep.failure.message
    assert not layout.exists()


def test_build_recipe_is_built_once_and_released(tmp_path: Path, vectors_dir: Path) -> None:
    """inputs.artifacts.X.build: the cartridge is built (reproducibly) and signed by the prepare
    effect, then released and accepted like a file input."""
    from tests.harness.installs import PUBLISHER, registry_entry, write_registry

    w, layout = _world(tmp_path, vectors_dir, formats=())
    reg = write_registry(tmp_path / "trust.json", [registry_entry(w.key, PUBLISHER)])
    pol = yaml.safe_load(w.policy.read_text())
    pol["publishers"][0]["trustRegistries"] = [str(reg)]
    w.policy.write_text(yaml.safe_dump(pol))
    doc = w.plan_doc()
    doc["inputs"]["artifacts"]["agent"] = {"build": {
        "package": str(vectors_dir / "sample" / "sample-agent-package"), "publisher": PUBLISHER,
        "key": {"file": "keys/attest.pem"}, "createdAt": "2026-11-01T00:00:00Z"}}
    w.write_plan(doc)
    report = run_goal(load_plan(w.plan), root=w.state)
    assert report.exit_code() == 0, [e.to_json() for e in report.status.effects if e.state != "done"]
    prep = report.status.effect("prepare:agent").evidence or {}
    assert prep["built"]["createdAt"] == "2026-11-01T00:00:00Z"
    verify = report.status.effect(f"verify:agent@oci-layout:{layout}").evidence or {}
    assert verify["checks"]["signature"] == "pass" and verify["checks"]["trust"] == "pass"
