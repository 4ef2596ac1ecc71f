"""One judge: a corpus of hostile and honest artifacts, each judged by every caller of the one
acceptance decision (`install`, `judge_reference`, `acx verify REF --policy`, `acx push --policy`
and, for installed items, `installed verify`, `activate` and `installed sync`), must get the same
verdict as `install` gives: the same checks, statuses and failure kinds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.install.install import install
from acxoci.install.judge import Context, judge_installed, judge_reference
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.oci.layout import LayoutStore
from acxoci.workflow.graph import sign_graph
from tests.harness.cartridges import build_example, policy_unknown_schema, skill_table_disagrees
from tests.harness.cli import acx_json
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    attach_level,
    blob_path,
    issue_level,
    level_policy,
    push_cartridge,
    registry_entry,
    revoke,
    trusting_policy,
    write_policy,
    write_registry,
)
from tests.harness.installworlds import LeveledWorld, check_shape, leveled_world


@dataclass
class Case:
    """An artifact in a layout, the policy to judge it under, and what install says."""

    ref: str
    policy: Path
    accepted: bool
    failing: frozenset[str] = frozenset()


@pytest.fixture
def world(tmp_path: Path, vectors_dir: Path) -> LeveledWorld:
    return leveled_world(tmp_path, vectors_dir)


def _ok(w: LeveledWorld) -> Case:
    return Case(f"oci-layout:{w.layout}:1.0.0", level_policy(w.tmp, w.registry, w.level), True)


def _untrusted(w: LeveledWorld) -> Case:
    other = write_registry(w.tmp / "other.json", [registry_entry(generate_ed25519(), PUBLISHER)])
    return Case(f"oci-layout:{w.layout}:1.0.0", trusting_policy(w.tmp, other), False, frozenset({"trust"}))


def _tampered_blob(w: LeveledWorld) -> Case:
    layer = json.loads(blob_path(w.layout, w.desc.digest).read_text())["layers"][0]["digest"]
    blob = blob_path(w.layout, layer)
    data = bytearray(blob.read_bytes())
    data[-1] ^= 1
    blob.write_bytes(bytes(data))
    return Case(f"oci-layout:{w.layout}:1.0.0", trusting_policy(w.tmp, w.registry), False,
                frozenset({"content-digest", "signature", "trust", "policy-budget"}))


def _revoked_key(w: LeveledWorld) -> Case:
    write_registry(w.registry, [registry_entry(w.key, PUBLISHER, status="revoked",
                                               revocationReason="key-compromise",
                                               revokedAt="2026-01-02T00:00:00Z")])
    return Case(f"oci-layout:{w.layout}:1.0.0", trusting_policy(w.tmp, w.registry), False,
                frozenset({"signature", "trust"}))


def _missing_attestation(w: LeveledWorld) -> Case:
    pol = trusting_policy(w.tmp, w.registry, attestations={"formats": ["bundle"]})
    return Case(f"oci-layout:{w.layout}:1.0.0", pol, False, frozenset({"attestations"}))


def _level_too_low(w: LeveledWorld) -> Case:
    return Case(f"oci-layout:{w.layout}:1.0.0", level_policy(w.tmp, w.registry, w.level, "legend"), False,
                frozenset({"level"}))


def _level_revoked(w: LeveledWorld) -> Case:
    revoke(w.level, now=NOW - timedelta(minutes=5))
    return Case(f"oci-layout:{w.layout}:1.0.0", level_policy(w.tmp, w.registry, w.level), False,
                frozenset({"revocation"}))


def _demo_level(w: LeveledWorld) -> Case:
    (w.tmp / "demo").mkdir()
    demo = issue_level(w.tmp / "demo", w.acx, demo=True)
    layout = w.tmp / "demo-layout"
    desc = push_cartridge(layout, w.acx, "1.0.0")
    attach_level(layout, desc, demo.credential)
    return Case(f"oci-layout:{layout}:1.0.0", level_policy(w.tmp / "demo", w.registry, demo), False,
                frozenset({"level"}))


def _verifier_not_accepted(w: LeveledWorld) -> Case:
    pol = trusting_policy(w.tmp, w.registry,
                          level={"minimum": "mid", "issuers": [w.level.credential["issuer"]["id"]],
                                 "issuerRegistries": [str(w.level.registry)],
                                 "verifiers": ["did:web:lab.example"]},
                          revocation={"statusLists": {w.level.status_list["id"]: str(w.level.list_path)}})
    return Case(f"oci-layout:{w.layout}:1.0.0", pol, False, frozenset({"level"}))


def _withdrawn(w: LeveledWorld) -> Case:
    from acxoci.exchange.lifecycle import push_lifecycle

    push_lifecycle(LayoutStore(w.layout), w.desc, {"status": "withdrawn", "reason": "a bad release",
                                                   "recordedAt": "2026-11-29T00:00:00.000Z"}, None)
    return Case(f"oci-layout:{w.layout}:1.0.0", trusting_policy(w.tmp, w.registry), False,
                frozenset({"lifecycle"}))


def _tag_not_version(w: LeveledWorld) -> Case:
    push_cartridge(w.layout, w.acx, "2.0.0")  # a 1.0.0 cartridge under a 2.0.0 tag
    return Case(f"oci-layout:{w.layout}:2.0.0", trusting_policy(w.tmp, w.registry), False,
                frozenset({"version"}))


def _registry_not_allowed(w: LeveledWorld) -> Case:
    pol = trusting_policy(w.tmp, w.registry, registries={"allowed": ["registry.example/*"]})
    return Case(f"oci-layout:{w.layout}:1.0.0", pol, False, frozenset({"registry"}))


def _graph_by_version_tag(w: LeveledWorld) -> Case:
    from acxoci.artifact import push_path
    from acxoci.oci.reference import parse_reference
    from acxoci.oci.target import open_target

    doc = sign_graph(json.loads((w.vectors / "graph/product-delivery.agent-graph.json").read_text()),
                     publisher_id=PUBLISHER, key=w.key, now=NOW)
    path = w.tmp / "g.agent-graph.json"
    path.write_text(json.dumps(doc))
    target, _ = open_target(parse_reference(f"oci-layout:{w.tmp / 'graphs'}:{doc['version']}"))
    push_path(target, path, doc["version"], verify=False, registry=None, now=NOW)
    return Case(f"oci-layout:{w.tmp / 'graphs'}:{doc['version']}", trusting_policy(w.tmp, w.registry), True)


CORPUS: dict[str, Callable[[LeveledWorld], Case]] = {
    "accepted": _ok, "untrusted": _untrusted, "tampered-blob": _tampered_blob, "revoked-key": _revoked_key,
    "missing-attestation": _missing_attestation, "level-too-low": _level_too_low,
    "level-revoked": _level_revoked, "demo-level": _demo_level, "verifier": _verifier_not_accepted,
    "withdrawn": _withdrawn, "tag-not-version": _tag_not_version, "registry": _registry_not_allowed,
    "graph-version-tag": _graph_by_version_tag,
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_caller_agrees_with_install(name: str, world: LeveledWorld,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    case = CORPUS[name](world)
    policy = load_policy(case.policy, now=NOW)
    fresh = Store(world.tmp / f"store-{name}")
    outcome = install(case.ref, policy=policy, store=fresh, now=NOW)
    assert (outcome.status == "installed") == case.accepted, outcome.to_json()
    assert {c.id for c in outcome.failed} == case.failing, [c.to_json() for c in outcome.failed]
    expected = check_shape(outcome.checks)
    judged = judge_reference(case.ref, Context(policy, NOW))
    assert check_shape(judged.checks) == expected
    code, out = acx_json(capsys, "verify", case.ref, "--policy", str(case.policy), "--now", NOW.isoformat())
    assert code == (0 if case.accepted else 8), out
    assert check_shape(out["checks"]) == expected
    assert out["ok"] is case.accepted
    if case.accepted and outcome.name is not None:  # installed: judged again now, nothing changed
        again = judge_installed(fresh.require(outcome.name), Context(policy, NOW, installed=fresh))
        assert check_shape(again.checks) == expected, again.reasons()


# ---- after install: the world changes, and every installed-side caller sees what install sees ----


def _installed(w: LeveledWorld, policy_path: Path, tmp_path: Path) -> tuple[Store, str]:
    store = Store(tmp_path / "store")
    out = install(f"oci-layout:{w.layout}:1.0.0", policy=load_policy(policy_path, now=NOW), store=store,
                  now=NOW)
    assert out.status == "installed" and out.name is not None, out.to_json()
    return store, out.name


CHANGES: dict[str, tuple[Callable[[LeveledWorld], Any], str]] = {
    "key-compromised": (lambda w: write_registry(w.registry, [registry_entry(
        w.key, PUBLISHER, status="revoked", revocationReason="key-compromise",
        revokedAt="2026-01-02T00:00:00Z")]), "trust"),
    "credential-revoked": (lambda w: revoke(w.level, now=NOW + timedelta(minutes=5)), "revocation"),
    "withdrawn": (lambda w: _withdrawn(w), "lifecycle"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_after_install_every_use_judges_again(change: str, world: LeveledWorld, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    w = world
    policy_path = level_policy(w.tmp, w.registry, w.level)
    store, name = _installed(w, policy_path, tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    at = ("--now", (NOW + timedelta(minutes=1)).isoformat())
    code, out = acx_json(capsys, "activate", name, "--host", "claude", "--store", str(store.root), *at)
    assert code == 0, out["error"]["message"]
    apply, failing = CHANGES[change]
    apply(w)
    later = NOW + timedelta(minutes=10)
    at = ("--now", later.isoformat())
    fresh = install(f"oci-layout:{w.layout}:1.0.0", policy=load_policy(policy_path, now=later),
                    store=Store(tmp_path / "fresh"), now=later)
    assert fresh.status == "refused" and failing in {c.id for c in fresh.failed}, fresh.to_json()
    item = store.require(name)
    again = judge_installed(item, Context(load_policy(policy_path, now=later), later, installed=store))
    assert {c.id for c in again.failed} == {c.id for c in fresh.failed}
    # installed verify reports it, activate refuses, sync deactivates
    code, out = acx_json(capsys, "installed", "verify", "--store", str(store.root), *at)
    assert code == 1 and not out["items"][0]["ok"], out
    assert any(p.startswith(failing) for p in out["items"][0]["problems"]), out
    assert any("no longer passes" in p for p in out["items"][0]["activationProblems"]), out
    code, out = acx_json(capsys, "activate", name, "--host", "codex", "--store", str(store.root), *at)
    assert code == 8 and out["error"]["kind"] == "refused_by_policy", out
    assert not (home / ".agents").exists()
    code, out = acx_json(capsys, "installed", "sync", "--dry-run", "--store", str(store.root), *at)
    assert code == 0 and [s["action"] for s in out["steps"]] == ["deactivate"], out
    assert (home / ".claude" / "skills").is_dir() and any((home / ".claude" / "skills").iterdir())
    code, out = acx_json(capsys, "installed", "sync", "--store", str(store.root), *at)
    assert code == 0 and out["steps"][0]["done"] == "deactivated", out
    assert not (home / ".claude").exists()


def test_uninstall_leaves_no_activation_behind(world: LeveledWorld, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    w = world
    store, name = _installed(w, trusting_policy(w.tmp, w.registry), tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for host in ("claude", "cursor"):
        assert acx_json(capsys, "activate", name, "--host", host, "--store", str(store.root))[0] == 0
    code, out = acx_json(capsys, "uninstall", name, "--store", str(store.root))
    assert code == 0 and len(out["deactivated"]) == 2, out
    assert not (tmp_path / "home" / ".claude").exists() and not (tmp_path / "home" / ".cursor").exists()
    code, out = acx_json(capsys, "installed", "verify", "--store", str(store.root))
    assert code == 0 and out["orphanedActivations"] == [], out
    # --keep-activations leaves them, and then they are reported as orphaned
    store2, name2 = _installed(w, trusting_policy(w.tmp, w.registry), tmp_path / "two")
    assert acx_json(capsys, "activate", name2, "--host", "claude", "--store", str(store2.root))[0] == 0
    assert acx_json(capsys, "uninstall", name2, "--keep-activations", "--store", str(store2.root))[0] == 0
    code, out = acx_json(capsys, "installed", "verify", "--store", str(store2.root))
    assert code == 1 and [o["name"] for o in out["orphanedActivations"]] == [name2], out
    code, out = acx_json(capsys, "installed", "sync", "--store", str(store2.root))
    assert code == 0 and out["steps"][0]["reason"].startswith("orphaned"), out
    assert not (tmp_path / "home" / ".claude").exists()


def test_install_activate_is_both_or_neither(world: LeveledWorld, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A same-named user skill folder blocks the activation: nothing is installed either."""
    w = world
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / ".claude" / "skills" / "expertise-designer").mkdir(parents=True)
    (home / ".claude" / "skills" / "expertise-designer" / "SKILL.md").write_text("the user's own")
    store = tmp_path / "store"
    code, out = acx_json(capsys, "install", f"oci-layout:{w.layout}:1.0.0", "--policy",
                         str(trusting_policy(w.tmp, w.registry)), "--store", str(store),
                         "--activate", "claude")
    assert code == 9 and out["error"]["kind"] == "blocked", out
    assert Store(store).list() == []
    assert (home / ".claude" / "skills" / "expertise-designer" / "SKILL.md").read_text() == "the user's own"


def test_push_refuses_a_version_tag_that_is_not_the_signed_version(
        world: LeveledWorld, capsys: pytest.CaptureFixture[str]) -> None:
    layout = world.tmp / "pushed"
    code, out = acx_json(capsys, "push", str(world.acx), f"oci-layout:{layout}:2.0.0")
    assert code == 8 and out["error"]["kind"] == "refused_by_policy", out
    assert "1.0.0" in out["error"]["message"], out
    assert not layout.exists()
    code, out = acx_json(capsys, "push", str(world.acx), f"oci-layout:{layout}:2.0.0", "--allow-tag-mismatch")
    assert code == 0, out
    assert acx_json(capsys, "push", str(world.acx), f"oci-layout:{layout}:latest")[0] == 0


def test_push_policy_says_at_publish_time_what_install_would_refuse(
        world: LeveledWorld, capsys: pytest.CaptureFixture[str]) -> None:
    layout = world.tmp / "pushed"
    good = trusting_policy(world.tmp, world.registry)
    code, out = acx_json(capsys, "push", str(world.acx), f"oci-layout:{layout}:1.0.0", "--policy", str(good))
    assert code == 0 and out["acceptance"]["ok"] is True, out
    needs_bundle = write_policy(world.tmp / "needs.yaml", {
        "publishers": [{"id": PUBLISHER, "trustRegistries": [str(world.registry)]}],
        "attestations": {"formats": ["bundle"]}})
    code, out = acx_json(capsys, "push", str(world.acx), f"oci-layout:{layout}:1.0.0", "--policy",
                         str(needs_bundle))
    assert code == 8 and out["acceptance"]["ok"] is False, out
    assert [c["id"] for c in out["acceptance"]["checks"] if c["status"] == "fail"] == ["attestations"]
    shutil.rmtree(layout)


def test_install_refuses_what_spec_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One set of package checks: a cartridge whose signature holds but whose skill table disagrees
    with its SKILL.md, or whose signed policy has an unknown schemaVersion, is refused by install
    (and `verify --policy`) as `spec`, `check` and `harness negotiate` refuse it."""
    key = generate_ed25519()
    good = build_example(tmp_path, key)
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    pol = trusting_policy(tmp_path, reg)
    hostile = (skill_table_disagrees(good, tmp_path), policy_unknown_schema(good, tmp_path, key))
    for i, bad in enumerate(hostile):
        ref = f"oci-layout:{tmp_path / f'l{i}'}:x"
        push_cartridge(tmp_path / f"l{i}", bad, "x")
        out = install(ref, policy=load_policy(pol, now=NOW), store=Store(tmp_path / f"s{i}"), now=NOW)
        assert out.status == "refused" and [c.id for c in out.failed] == ["policy-budget"], out.to_json()
        code, res = acx_json(capsys, "verify", ref, "--policy", str(pol), "--now", NOW.isoformat())
        assert code == 8 and check_shape(res["checks"]) == check_shape(out.checks), res


def test_install_says_what_it_is_doing_with_names_and_digests(world: LeveledWorld, tmp_path: Path) -> None:
    """The progress line a terminal shows (`acx install` on a TTY) is fed with the real reference,
    digests and install name, stage by stage."""
    notes: list[str] = []
    policy = load_policy(trusting_policy(world.tmp, world.registry), now=NOW)
    out = install(f"oci-layout:{world.layout}:1.0.0", policy=policy, store=Store(tmp_path / "s"), now=NOW,
                  note=notes.append)
    assert out.status == "installed"
    assert notes[0] == f"resolving oci-layout:{world.layout}:1.0.0"
    assert f"pulling {world.desc.digest}" in notes
    assert f"judging cartridge {world.desc.digest}" in notes
    assert notes[-1] == f"installing {out.name} @ {world.desc.digest}"
