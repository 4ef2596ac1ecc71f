"""The release plan model and the pure planner: schema and cross-reference errors name the field;
plan → effects is deterministic with dependencies first; `acx release plan` changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.typed import decode_as
from acxoci.errors import AuthError, InvalidInput
from acxoci.release.effects import Effect, check_graph, plan_effects
from acxoci.release.plan import KeyRef, load_plan
from tests.harness.releases import acx, make_world


def _plan(tmp: Path, vectors: Path, mutate: Any = None, **kw: Any) -> Path:
    w = make_world(tmp, vectors, ["127.0.0.1:5000/acx/a", "oci-layout:out/layout"], **kw)
    if mutate is not None:
        doc = w.plan_doc()
        mutate(doc)
        w.write_plan(doc)
    return w.plan


def test_effects_are_pure_ordered_and_typed(tmp_path: Path, vectors_dir: Path) -> None:
    plan = load_plan(_plan(tmp_path, vectors_dir))
    first, second = plan_effects(plan), plan_effects(plan)
    assert first == second
    check_graph(first)
    ids = [e.id for e in first]
    assert ids[0] == "prepare:agent"
    kinds = {e.kind for e in first}
    assert kinds == {"prepare", "push_blob", "push_manifest", "tag", "attach_attestation", "attach_envelope",
                     "verify"}
    for repo in ("127.0.0.1:5000/acx/a", "oci-layout:out/layout"):
        verify = next(e for e in first if e.id == f"verify:agent@{repo}")
        want = {f"manifest:agent@{repo}", f"tag:v1:agent@{repo}", f"tag:latest:agent@{repo}",
                f"attest:legacy:agent@{repo}", f"attest:bundle:agent@{repo}", f"envelope:agent@{repo}"}
        assert set(verify.deps) == want
        assert ids.index(f"verify:agent@{repo}") > max(ids.index(d) for d in verify.deps)
    assert [decode_as(e.to_json(), Effect, document="effect") for e in first] == first  # journal round trip
    assert not next(e for e in first if e.kind == "verify").writes
    assert next(e for e in first if e.kind == "tag").writes


def test_digest_binds_the_document(tmp_path: Path, vectors_dir: Path) -> None:
    a = load_plan(_plan(tmp_path / "a", vectors_dir))
    b = load_plan(_plan(tmp_path / "b", vectors_dir, tags=("v2",)))
    assert a.digest != b.digest and a.digest.startswith("sha256:")


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda d: d.pop("acceptance"), "acceptance"),
    (lambda d: d["goal"]["artifacts"][0]["to"][0].update(tags=["bad tag"]), "tags"),
    (lambda d: d["goal"].update(id="../escape"), "goal.id"),
    (lambda d: d["inputs"]["keys"].update(attestation={"pem": "inline"}), "attestation"),
    (lambda d: d["goal"]["artifacts"][0].update(input="nope"), "nope"),
    (lambda d: d["goal"]["artifacts"][0]["to"][0].update(repository="127.0.0.1:5000/acx/a:v1"),
     "tag or digest"),
    (lambda d: d["goal"]["artifacts"][0].update(levelCredential="lvl"), "lvl"),
    (lambda d: d["inputs"].pop("keys"), "inputs.keys.attestation"),
    (lambda d: d["goal"].update(statusList={"input": "s", "repository": "127.0.0.1:5000/st"}), "statusLists"),
    (lambda d: d.update(observe={"mirrors": [{"repository": "m.example/a", "of": "other.example/a"}]}),
     "not a destination"),
    (lambda d: d.update(observe={"mirrors": [{"repository": "127.0.0.1:5000/acx/a",
                                              "of": "127.0.0.1:5000/acx/a"}]}), "does not push to"),
    (lambda d: d.update(observe={"statusLists": [{"url": "https://s.example/1", "validFrom": "later"}]}),
     "statusLists[0].validFrom"),
    (lambda d: d.update(observe={"statusLists": [{"url": "https://s.example/1"}]}), "validFrom or digest"),
    (lambda d: d.update(observe={"intervalSeconds": 0}), "intervalSeconds"),
    (lambda d: d.update(quota={"registries": [{"host": "h"}, {"host": "h"}]}), "listed twice"),
    (lambda d: d.update(quota={"registries": [{"host": "h", "publishes": -1}]}), "publishes"),
    (lambda d: d["goal"].update(nonGoals="one"), "nonGoals"),
])
def test_bad_plans_name_the_field(tmp_path: Path, vectors_dir: Path, mutate: Any, needle: str) -> None:
    path = _plan(tmp_path, vectors_dir, mutate)
    with pytest.raises(InvalidInput) as info:
        load_plan(path)
    assert needle in info.value.one_line(), info.value.one_line()


def test_an_approval_must_select_an_effect(tmp_path: Path, vectors_dir: Path) -> None:
    approvals = [{"id": "x", "blocks": ["tag:v9"]}]
    path = _plan(tmp_path, vectors_dir, lambda d: d.update(observe={"approvals": approvals}))
    with pytest.raises(InvalidInput, match="selects no effect"):
        plan_effects(load_plan(path))


def test_key_by_env_reference(tmp_path: Path, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = make_world(tmp_path, vectors_dir, ["oci-layout:x"])
    ref = KeyRef(env="T_ACX_RELEASE_KEY")
    with pytest.raises(AuthError, match="T_ACX_RELEASE_KEY"):
        ref.load()
    monkeypatch.setenv("T_ACX_RELEASE_KEY", (w.tmp / "keys" / "attest.pem").read_text())
    assert ref.load().public().keyid() == w.key.public().keyid()
    with pytest.raises(AuthError, match="NO_SUCH_PW"):
        KeyRef(file=w.tmp / "keys" / "attest.pem", password_env="NO_SUCH_PW").load()


def test_registry_credentials_come_from_env(tmp_path: Path, vectors_dir: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    w = make_world(tmp_path, vectors_dir, ["reg.example:5000/acx/a"],
                   registries=[{"host": "reg.example:5000", "usernameEnv": "T_U", "passwordEnv": "T_P"}])
    plan = load_plan(w.plan)
    with pytest.raises(AuthError, match="T_U"):
        plan.remote_options("reg.example:5000/acx/a")
    monkeypatch.setenv("T_U", "me")
    monkeypatch.setenv("T_P", "pw")
    opts = plan.remote_options("reg.example:5000/acx/a")
    assert (opts.username, opts.password, opts.max_retries) == ("me", "pw", 2)
    assert plan.remote_options("other.example/acx/a").username is None


def test_cli_plan_prints_effects_and_changes_nothing(tmp_path: Path, vectors_dir: Path) -> None:
    path = _plan(tmp_path, vectors_dir)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    res = acx("--json", "release", "plan", str(path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["goal"] == "sample-1" and len(out["effects"]) == len(plan_effects(load_plan(path)))
    assert out["effects"][0]["id"] == "prepare:agent"
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no .acx-release, no layout
