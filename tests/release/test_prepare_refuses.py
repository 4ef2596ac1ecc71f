"""A doomed release writes nothing (decision 0006): whatever the acceptance decision can refuse
before a byte is written is decided in `prepare`, by the same checks `acx install` and `acx push`
make (a version tag naming another version, a repository the policy does not allow, a signature or
key the policy does not trust); a plan whose budgets could never be spent, or that gives one tag to
two artifacts, is refused when it is loaded; and a frozen blob is re-hashed before it is uploaded.
Against a real registry (distribution 2.8) behind the fault proxy, which counts every request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from acxoci.attest.keys import generate_ed25519
from acxoci.errors import InvalidInput
from acxoci.release.interpreter import goal_status, run_goal
from acxoci.release.plan import load_plan, plan_from_json
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.release_state import GOAL
from tests.harness.releases import make_world
from tests.harness.servers import Registry

WRITES = ("PUT", "POST", "PATCH", "DELETE")


def _repo_absent(reg: Registry, repo: str) -> bool:
    return requests.get(f"{reg.url}/v2/{repo}/tags/list", timeout=10).status_code == 404


@pytest.mark.interop
@pytest.mark.parametrize("doom", ["tag-of-another-version", "repository-not-allowed",
                                  "attestation-key-untrusted"])
def test_prepare_refuses_what_install_would_before_any_write(
        proxied: FaultProxy, distribution_registry: Registry, tmp_path: Path, vectors_dir: Path,
        doom: str) -> None:
    tags = ("1.0.0", "2.0.0") if doom == "tag-of-another-version" else ("1.0.0",)  # the sample is 1.0.0
    w = make_world(tmp_path / "w", vectors_dir, [f"{proxied.host}/acx/c"], tags=tags)
    if doom == "repository-not-allowed":
        policy = yaml.safe_load(w.policy.read_text())
        policy["registries"] = {"allowed": ["ghcr.io/*"]}
        w.policy.write_text(yaml.safe_dump(policy))
    elif doom == "attestation-key-untrusted":  # the policy trusts another attestation key
        (w.tmp / "keys" / "attest.pub.pem").write_text(generate_ed25519().public().spki_pem())
    report = run_goal(load_plan(w.plan), root=w.state)
    assert report.exit_code() == 9 and report.writes == 0 and report.http_writes == 0
    prepare = report.status.effect("prepare:agent")
    assert prepare.state == "blocked" and prepare.failure is not None
    assert prepare.failure.cls == "validation_failed"
    check = {"tag-of-another-version": "version", "repository-not-allowed": "registry",
             "attestation-key-untrusted": "attestations"}[doom]
    assert [c["id"] for c in prepare.failure.details["checks"]] == [check], prepare.failure
    assert not [e for e in proxied.log.entries if e[0] in WRITES]  # not one write
    assert _repo_absent(distribution_registry, "acx/c")  # the registry holds nothing of it
    assert goal_status(GOAL, root=w.state).ledger.net().publishes == 0


@pytest.mark.interop
def test_prepare_frozen_blob_is_rehashed_before_it_is_uploaded(proxied: FaultProxy, tmp_path: Path,
                                                                vectors_dir: Path) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"{proxied.host}/acx/c"], tags=("v1",))
    doc = w.plan_doc()
    doc["budget"] = {"attempts": 1, "transportRetries": 0}
    w.write_plan(doc)
    down = proxied.add(Rule("POST", r"/blobs/uploads/", "status", times=100_000, status=503))
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 6  # prepared; uploads deferred
    s = goal_status(GOAL, root=w.state)
    content = s.effect("prepare:agent").evidence["materials"]["content"]["digest"]  # type: ignore[index]
    frozen = w.state / GOAL / "objects" / "sha256" / content.split(":")[1]
    data = bytearray(frozen.read_bytes())
    data[-3] ^= 1  # the frozen copy is damaged between runs
    frozen.write_bytes(bytes(data))
    down.times = 0
    proxied.log.entries.clear()
    report = run_goal(load_plan(w.plan), root=w.state)
    blob = report.status.effect(f"blob:content:agent@{proxied.host}/acx/c")
    assert blob.state == "blocked" and blob.failure is not None and blob.failure.cls == "validation_failed"
    assert "no longer matches its digest" in blob.failure.message
    uploads = [e for e in proxied.log.entries if e[0] in WRITES and "/blobs/" in e[1]]
    assert all(content not in e[1] for e in uploads), uploads  # the damaged bytes never left


def _plan(tmp: Path, **change: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schemaVersion": "acx.release-plan/1",
        "goal": {"id": "g", "artifacts": [{"input": "a", "to": [{"repository": "r.example/acx/a",
                                                                  "tags": ["1.0.0"]}]}],
                 "attestations": {"formats": []}},
        "inputs": {"artifacts": {"a": {"cartridge": "a.acx"}, "b": {"cartridge": "b.acx"}}},
        "acceptance": {"policy": "policy.yaml"},
    }
    doc.update(change)
    return doc


@pytest.mark.parametrize("budget", [{"requests": 0}, {"publishes": 0}, {"bytes": 0}])
def test_prepare_plan_with_a_budget_that_can_never_be_spent_is_refused(tmp_path: Path,
                                                                       budget: dict[str, int]) -> None:
    doc = _plan(tmp_path, quota={"registries": [{"host": "r.example", **budget}]})
    with pytest.raises(InvalidInput, match=f"quota.registries\\[0\\].{next(iter(budget))}"):
        plan_from_json(doc, path=tmp_path / "acx-release.yaml")
    doc["quota"]["registries"][0] = {"host": "r.example", **{k: 1 for k in budget}}
    plan_from_json(doc, path=tmp_path / "acx-release.yaml")


def test_prepare_plan_giving_one_tag_to_two_artifacts_is_refused(tmp_path: Path) -> None:
    doc = _plan(tmp_path)
    doc["goal"]["artifacts"].append({"input": "b", "to": [{"repository": "r.example/acx/a",
                                                            "tags": ["1.0.0"]}]})
    with pytest.raises(InvalidInput, match=r"r\.example/acx/a:1\.0\.0 is the tag of both a and b"):
        plan_from_json(doc, path=tmp_path / "acx-release.yaml")
    doc["goal"]["artifacts"][1]["to"][0]["tags"] = ["1.0.1"]  # another tag in the same repository is fine
    plan_from_json(doc, path=tmp_path / "acx-release.yaml")
