"""The install store, its caches and the judge's inputs are untrusted too (a hostile review of the one
decision): each test builds the hostile state at run time and shows the typed refusal, the
isolation of one broken item from the others, or the same verdict from every caller."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

from acxoci.exchange.lifecycle import push_lifecycle
from acxoci.install.install import install
from acxoci.install.judge import Context, judge_installed, judge_reference
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.level.constants import is_demo_measurement
from acxoci.oci.layout import LayoutStore
from tests.harness.cli import acx_json, run_acx
from tests.harness.installs import NOW, issue_level, registry_entry, trusting_policy, write_registry
from tests.harness.installworlds import LeveledWorld, leveled_world


@pytest.fixture
def world(tmp_path: Path, vectors_dir: Path) -> LeveledWorld:
    return leveled_world(tmp_path, vectors_dir)


def test_an_installed_digest_is_judged_again_not_waved_through(world: LeveledWorld, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    ref = f"oci-layout:{world.layout}:1.0.0"
    policy = load_policy(trusting_policy(world.tmp, world.registry), now=NOW)
    ok = install(ref, policy=policy, store=store, now=NOW)
    assert ok.status == "installed"
    strict = trusting_policy(world.tmp, world.registry, attestations={"formats": ["bundle"]})
    again = install(ref, policy=load_policy(strict, now=NOW), store=store, now=NOW)
    assert again.status == "refused" and [c.id for c in again.failed] == ["attestations"], again.to_json()


def test_only_sha256_content_is_installed_and_every_caller_says_so(world: LeveledWorld,
                                                                    tmp_path: Path) -> None:
    from acxoci.oci.descriptor import Descriptor
    from acxoci.oci.target import push_bytes

    data = world.acx.read_bytes()
    import hashlib

    layer = Descriptor("application/vnd.acx.cartridge.layer.v1+sqlite",
                       "sha512:" + hashlib.sha512(data).hexdigest(), len(data),
                       annotations={"org.opencontainers.image.title": "c.acx"})
    target = LayoutStore(tmp_path / "l512")
    import io

    target.push(layer, io.BytesIO(data))
    empty = Descriptor("application/vnd.oci.empty.v1+json", "sha256:" + hashlib.sha256(b"{}").hexdigest(), 2)
    target.push(empty, io.BytesIO(b"{}"))
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": "application/vnd.acx.cartridge.v1", "config": empty.to_json(),
                "layers": [layer.to_json()]}
    target.tag(push_bytes(target, json.dumps(manifest).encode(), manifest["mediaType"]), "x")
    ref = f"oci-layout:{tmp_path / 'l512'}:x"
    policy = load_policy(trusting_policy(world.tmp, world.registry), now=NOW)
    out = install(ref, policy=policy, store=Store(tmp_path / "s"), now=NOW)
    assert out.status == "refused" and "content-digest" in {c.id for c in out.failed}
    judged = judge_reference(ref, Context(policy, NOW))
    assert [c.status for c in judged.checks] == [c.status for c in out.checks]


def test_a_layout_is_recorded_by_its_absolute_path(world: LeveledWorld, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(world.tmp)
    policy = load_policy(trusting_policy(world.tmp, world.registry), now=NOW)
    out = install("oci-layout:./layout:1.0.0", policy=policy, store=Store(tmp_path / "s"), now=NOW)
    assert out.status == "installed" and out.record is not None
    assert out.record["repository"] == f"oci-layout:{world.layout}"
    monkeypatch.chdir("/")
    assert judge_installed(Store(tmp_path / "s").require(out.name or ""), Context(policy, NOW)).ok


def test_one_broken_cache_or_manifest_does_not_stop_the_others(world: LeveledWorld, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    store = tmp_path / "store"
    pol = trusting_policy(world.tmp, world.registry)
    at = ("--now", (NOW + timedelta(minutes=1)).isoformat())
    for name, host in (("a/one", "claude"), ("b/two", "cursor")):
        code, out = acx_json(capsys, "install", f"oci-layout:{world.layout}:1.0.0", "--policy", str(pol),
                             "--store", str(store), "--name", name, "--activate", host)
        assert code == 0, out
    import os as _os

    cache = Path(_os.environ["XDG_CACHE_HOME"]) / "acxoci" / "status-lists" / "high-water"
    marks = sorted(cache.glob("lifecycle-*.json"))
    assert marks, "the lifecycle mark lives in the status-list cache"
    marks[0].write_text("{not json")  # the one mark both items share: each is reported, none aborts
    manifest = next((store / "activations").glob("a+one@*.json"))
    doc = json.loads(manifest.read_text())
    doc["files"][0]["path"] = "../../escape"
    manifest.write_text(json.dumps(doc))
    code, out = acx_json(capsys, "installed", "verify", "--store", str(store), *at)
    assert code == 1 and len(out["items"]) == 2 and out["unreadableActivations"], out
    assert all("high-water mark" in " ".join(i["problems"]) for i in out["items"]), out
    code, out = acx_json(capsys, "installed", "sync", "--store", str(store), *at)
    assert code == 1, out
    assert [s["done"] for s in out["steps"] if s["name"] == "b/two"] == ["deactivated"], out
    assert not (tmp_path / "home" / ".cursor").exists()


def test_a_fifo_in_the_store_is_refused_not_waited_for(world: LeveledWorld, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    code, out = acx_json(capsys, "install", f"oci-layout:{world.layout}:1.0.0", "--policy",
                         str(trusting_policy(world.tmp, world.registry)), "--store", str(store))
    assert code == 0
    item = next((store / "items").iterdir())
    (item / "manifest.json").unlink()
    os.mkfifo(item / "manifest.json")
    code, out = acx_json(capsys, "installed", "verify", "--store", str(store), "--now", NOW.isoformat())
    assert code == 1 and not out["items"][0]["ok"], out
    (item / "record.json").unlink()
    os.mkfifo(item / "record.json")
    code, out = acx_json(capsys, "installed", "list", "--store", str(store))
    assert code == 0 and out["items"] == [], out


def test_a_dropped_withdrawal_stays_even_behind_a_later_milder_record(world: LeveledWorld) -> None:
    ref = f"oci-layout:{world.layout}:1.0.0"
    policy = load_policy(trusting_policy(world.tmp, world.registry), now=NOW)
    pristine = world.tmp / "pristine"
    import shutil

    shutil.copytree(world.layout, pristine)
    push_lifecycle(LayoutStore(world.layout), world.desc, {"status": "withdrawn", "reason": "malware",
                                                           "recordedAt": "2026-11-29T10:00:00.000Z"}, None)
    assert not judge_reference(ref, Context(policy, NOW)).ok
    shutil.rmtree(world.layout)
    shutil.copytree(pristine, world.layout)
    push_lifecycle(LayoutStore(world.layout), world.desc, {"status": "deprecated", "reason": "old",
                                                           "recordedAt": "2026-11-30T10:00:00.000Z"}, None)
    j = judge_reference(ref, Context(policy, NOW))
    assert [c.id for c in j.failed] == ["lifecycle"] and "withdrawn" in j.failed[0].reason


def test_a_status_list_of_the_same_instant_with_other_bits_is_refused(tmp_path: Path) -> None:
    from acxoci.freshness import HighWater

    hw = HighWater(tmp_path)
    assert hw.status_list("https://x/1", NOW, "sha256:" + "a" * 64) is None
    assert hw.status_list("https://x/1", NOW, "sha256:" + "a" * 64) is None
    assert "cannot be ordered" in (hw.status_list("https://x/1", NOW, "sha256:" + "b" * 64) or "")
    older = hw.status_list("https://x/1", NOW - timedelta(seconds=1), "sha256:" + "c" * 64)
    assert "rollback" in (older or "")
    assert hw.status_list("https://x/1", NOW + timedelta(seconds=1), "sha256:" + "d" * 64) is None


@pytest.mark.parametrize(("solver", "digest", "bench"), [
    ("Reference(33)", None, None), (" reference(competence=1)", None, None),
    (None, "SHA256:019FC517108A721B9BFC83E9A8D61C5011C29894C43A361C35FDACB2C783E900", None),
    (None, None, "ACX-Bench-DAG-DE"),
])
def test_a_demo_measurement_is_one_whatever_its_spelling(solver: str | None, digest: str | None,
                                                         bench: str | None) -> None:
    assert is_demo_measurement(solver, digest, bench)


def test_a_policy_names_its_status_lists_relative_to_itself(world: LeveledWorld, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    level = issue_level(world.tmp, world.acx)
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "lists").mkdir()
    (folder / "lists" / "s.json").write_text(json.dumps(level.status_list))
    reg = write_registry(folder / "trust.json", [registry_entry(world.key, "io.github.example-acx")])
    pol = trusting_policy(folder, reg, level={"minimum": 1, "issuers": [level.credential["issuer"]["id"]],
                                              "issuerRegistries": [str(level.registry)]},
                          revocation={"statusLists": {level.status_list["id"]: "lists/s.json"}})
    for cwd in (folder, Path("/")):
        monkeypatch.chdir(cwd)
        loaded = load_policy(pol, now=NOW)
        assert loaded.status_list_sources[level.status_list["id"]] == str(folder / "lists" / "s.json")


@pytest.mark.parametrize("member, value", [
    ("policy", "not an object"), ("files", {"path": "x"}), ("checks", None), ("seq", "7"),
    ("kind", ["cartridge"]), ("host", []), ("artifactVersion", 2), ("unknownMember", 1),
])
def test_a_record_that_does_not_decode_is_listed_broken_and_judged_failed(
        world: LeveledWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str], member: str,
        value: object) -> None:
    """record.json is ours but a hand can edit it: a wrong type anywhere is read once, by the record's
    model, and every command names it (list and show say broken, verify fails, activate refuses);
    none reads a raw member and crashes (exit 70)."""
    store = Store(tmp_path / "store")
    policy_file = trusting_policy(world.tmp, world.registry)
    ok = install(f"oci-layout:{world.layout}:1.0.0", policy=load_policy(policy_file, now=NOW), store=store,
                 now=NOW)
    assert ok.status == "installed" and ok.path is not None
    record = Path(ok.path) / "record.json"
    doc = json.loads(record.read_text())
    doc[member] = value
    record.write_text(json.dumps(doc))
    [item] = store.list()
    assert item.doc is None and item.problem is not None
    s = str(store.root)
    code, listed = acx_json(capsys, "installed", "list", "--store", s)
    assert code == 0 and listed["items"][0]["problem"], listed
    code, _ = acx_json(capsys, "installed", "show", item.name, "--store", s)
    assert code == 0
    for words in (("installed", "list"), ("installed", "show", item.name)):
        shown = run_acx(capsys, *words, "--store", s)
        assert shown.returncode == 0 and "broken record" in shown.stdout, (shown.stdout, shown.stderr)
    code, verdict = acx_json(capsys, "installed", "verify", "--store", s, "--policy", str(policy_file))
    assert code != 0 and "record.json" in json.dumps(verdict), verdict
    code, err = acx_json(capsys, "activate", item.name, "--skills-dir", str(tmp_path / "skills"),
                         "--store", s, "--policy", str(policy_file))
    assert code not in (0, 70) and not (tmp_path / "skills").exists(), err
    judged = judge_installed(item, Context(load_policy(policy_file, now=NOW), NOW))
    assert not judged.ok


@pytest.mark.parametrize(("field", "value"), [
    ("files", [{"path": 1, "digest": "x"}]), ("files", [{"path": "s/a", "digest": "x", "extra": 1}]),
    ("files", "all"), ("skills", [[]]), ("createdLevels", "3"), ("createdLevels", -1), ("root", 5),
    ("name", None), ("host", ["claude"]), ("activatedAt", {}), ("schemaVersion", "acx.activation/2"),
])
def test_a_manifest_of_the_wrong_type_is_broken_never_a_crash(
    world: LeveledWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    field: str, value: object,
) -> None:
    """Activation manifests are decoded into their model (acx.activation/1): one with a value of the
    wrong type is reported as unreadable by every command that reads it, never exit 70."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    store = tmp_path / "store"
    code, out = acx_json(capsys, "install", f"oci-layout:{world.layout}:1.0.0", "--policy",
                         str(trusting_policy(world.tmp, world.registry)), "--store", str(store), "--name",
                         "a/one", "--activate", "claude")
    assert code == 0, out
    manifest = next((store / "activations").glob("a+one@*.json"))
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), field: value}))
    at = ("--now", (NOW + timedelta(minutes=1)).isoformat())
    for args in (("installed", "list"), ("installed", "show", "a/one"), ("installed", "verify", *at),
                 ("installed", "sync", "--dry-run", *at), ("deactivate", "a/one"), ("uninstall", "a/one")):
        code, out = acx_json(capsys, *args, "--store", str(store))
        assert code != 70 and "internal" not in json.dumps(out), (args, out)
