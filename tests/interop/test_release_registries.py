"""`acx release` against real registries: distribution 2.8 (referrers tag-schema fallback) and
acx-refreg (Referrers API). The release ends with an acceptance read-back that passes `acx install`'s
checks; a rerun of the finished goal performs no writes (journal AND the wire: a logging proxy
sees no PUT/POST/PATCH/DELETE); a fault proxy's 429/5xx/resets are absorbed within budget; a
permanent 401 ends `blocked` with `auth_failure` without looping; a tag pointing elsewhere is a
`gate` until `--allow-retag`. (SIGKILL at every effect on distribution, with the ledger, is
tests/release/test_closeout_replay.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from acxoci.oci.descriptor import EMPTY_DIGEST, OCI_INDEX, OCI_MANIFEST
from acxoci.oci.reference import fallback_tag
from acxoci.oci.target import open_target, push_bytes
from acxoci.release.interpreter import run_goal
from acxoci.release.journal import Journal, RunEntry
from acxoci.release.plan import load_plan
from tests.harness.faultproxy import FaultProxy, Rule
from tests.harness.releases import acx, make_world
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop
WRITES = ("PUT", "POST", "PATCH", "DELETE")


def _tags(reg_url: str, repo: str) -> list[str]:
    r = requests.get(f"{reg_url}/v2/{repo}/tags/list", timeout=10)
    r.raise_for_status()
    return sorted(r.json().get("tags") or [])


def _referrer_digests(reg: Registry, repo: str, subject: str) -> list[str]:
    """Raw referrer entries, sorted (duplicates NOT folded): the Referrers API, else the fallback
    index. Sorted because ggcr's Referrers API lists them in Go map order, which varies per call."""
    if reg.has_referrers_api:
        r = requests.get(f"{reg.url}/v2/{repo}/referrers/{subject}", headers={"Accept": OCI_INDEX},
                         timeout=10)
    else:
        r = requests.get(f"{reg.url}/v2/{repo}/manifests/{fallback_tag(subject)}",
                         headers={"Accept": OCI_INDEX}, timeout=10)
    r.raise_for_status()
    return sorted(m["digest"] for m in r.json().get("manifests", []))


def _run_counts(state: Path, goal: str) -> list[RunEntry]:
    return [e for e in Journal(state / goal / "journal.jsonl").entries()
            if isinstance(e, RunEntry) and e.event == "end"]


@pytest.mark.parametrize("kind", ["distribution", "refreg"])
def test_release_reads_back_and_rerun_writes_nothing(kind: str, request: pytest.FixtureRequest,
                                                      tmp_path: Path, vectors_dir: Path) -> None:
    reg: Registry = request.getfixturevalue("distribution_registry" if kind == "distribution" else "refreg")
    with FaultProxy(reg.host) as proxy:  # no rules: a wire log of every request
        repo = f"{proxy.host}/acx/sample"
        w = make_world(tmp_path / "w", vectors_dir, [repo])
        first = acx("--json", "release", "run", str(w.plan), "--state-dir", str(w.state))
        assert first.returncode == 0, first.stdout + first.stderr
        out = json.loads(first.stdout)
        assert out["state"] == "done" and out["writes"] > 0
        verify = next(e for e in out["effects"] if e["kind"] == "verify")
        assert verify["evidence"]["acceptance"] == "installable"
        assert verify["evidence"]["checks"]["attestations"] == "pass"
        assert verify["evidence"]["checks"]["signature"] == "pass"
        subject = verify["evidence"]["digest"]
        tags_before = _tags(reg.url, "acx/sample")
        refs_before = _referrer_digests(reg, "acx/sample", subject)
        assert len(refs_before) == len(set(refs_before)) == 2  # bundle + envelope
        proxy.log.entries.clear()

        again = acx("--json", "release", "run", str(w.plan), "--state-dir", str(w.state))
        assert again.returncode == 0, again.stdout + again.stderr
        rerun = json.loads(again.stdout)
        assert rerun["executed"] == 0 and rerun["writes"] == 0
        assert not [e for e in proxy.log.entries if e[0] in WRITES], proxy.log.entries
        assert _run_counts(w.state, "sample-1")[-1].executed == 0
        assert _tags(reg.url, "acx/sample") == tags_before
        assert _referrer_digests(reg, "acx/sample", subject) == refs_before
        assert f"sha256-{subject.split(':')[1]}.att" in tags_before and "v1" in tags_before


def test_fault_proxy_transients_complete_within_budget(distribution_registry: Registry, tmp_path: Path,
                                                       vectors_dir: Path) -> None:
    rules = [Rule("POST", r"/blobs/uploads/", "status", times=2, status=429, retry_after="0"),
             Rule("PUT", r"/blobs/uploads/", "reset_body", times=1),
             Rule("PUT", r"/manifests/", "status", times=2, status=503),
             Rule("HEAD", r"/manifests/v1$", "status", times=3, status=502)]
    with FaultProxy(distribution_registry.host, rules) as proxy:
        w = make_world(tmp_path / "w", vectors_dir, [f"{proxy.host}/acx/faults"])
        report = run_goal(load_plan(w.plan), root=w.state, sleep=lambda s: None)
        left = [e.to_json() for e in report.status.effects if e.state != "done"]
        assert report.status.state == "done", left
        assert report.exit_code() == 0
        assert all(r.hits == r.times for r in proxy.rules), [(r.method, r.path, r.hits) for r in proxy.rules]
        retried = [e for e in report.status.effects if e.attempts > 1]
        assert retried and all(e.state == "done" for e in retried)  # a 3-deep 502 outlasted one try
        total = sum(e.attempts for e in report.status.effects)
        assert total <= len(report.status.effects) * 3  # the plan's budget: 3 tries per effect


def test_permanent_401_blocks_with_auth_failure(distribution_registry_basic: Registry, tmp_path: Path,
                                               vectors_dir: Path) -> None:
    with FaultProxy(distribution_registry_basic.host) as proxy:
        host = proxy.host
        w = make_world(tmp_path / "w", vectors_dir, [f"{host}/acx/auth"],
                       registries=[{"host": host, "usernameEnv": "T_REG_USER", "passwordEnv": "T_REG_PASS"}])
        env = {"T_REG_USER": "acx", "T_REG_PASS": "wrong-password"}
        res = acx("--json", "release", "run", str(w.plan), "--state-dir", str(w.state), env=env)
        assert res.returncode == 5, res.stdout + res.stderr
        out = json.loads(res.stdout)
        blocked = [e for e in out["effects"] if e["state"] == "blocked"]
        assert blocked and all(e["failure"]["class"] == "auth_failure" for e in blocked)
        assert all(e["attempts"] == 1 for e in blocked)  # not retried in a loop
        assert len(proxy.log.entries) < 40, len(proxy.log.entries)
        assert not [e for e in out["effects"] if e["kind"] == "verify" and e["state"] == "done"]
        # the person fixes the credentials; resume completes
        ok = acx("--json", "release", "resume", "sample-1", "--state-dir", str(w.state),
                 env={"T_REG_USER": "acx", "T_REG_PASS": "acx-secret"})
        assert ok.returncode == 0, ok.stdout + ok.stderr


def test_moving_a_tag_is_a_gate_until_allow_retag(distribution_registry: Registry, tmp_path: Path,
                                                  vectors_dir: Path) -> None:
    repo = f"{distribution_registry.host}/acx/gate"
    # someone else's artifact already holds :v1
    target, _ = open_target(repo)
    push_bytes(target, b"{}", "application/vnd.oci.empty.v1+json")
    other = push_bytes(target, json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/vnd.example.other",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2},
        "layers": []}).encode(), OCI_MANIFEST)
    target.tag(other, "v1")
    held = other.digest

    w = make_world(tmp_path / "w", vectors_dir, [repo], tags=("v1",))
    res = acx("--json", "release", "run", str(w.plan), "--state-dir", str(w.state))
    assert res.returncode == 9, res.stdout + res.stderr
    out = json.loads(res.stdout)
    tag = next(e for e in out["effects"] if e["id"] == f"tag:v1:agent@{repo}")
    assert tag["state"] == "blocked" and tag["failure"]["class"] == "gate"
    assert tag["failure"]["details"]["current"] == held
    assert "--allow-retag" in tag["nextAction"]
    verify = next(e for e in out["effects"] if e["kind"] == "verify")
    assert verify["state"] == "open" and verify["nextAction"].startswith("waits for")
    # the tag did not move
    r = requests.head(f"{distribution_registry.url}/v2/acx/gate/manifests/v1",
                      headers={"Accept": "application/vnd.oci.image.manifest.v1+json"}, timeout=10)
    assert r.headers["Docker-Content-Digest"] == held
    again = acx("--json", "release", "run", str(w.plan), "--state-dir", str(w.state))
    assert again.returncode == 9  # still gated: a rerun does not bypass it

    ok = acx("--json", "release", "run", str(w.plan), "--state-dir", str(w.state), "--allow-retag")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    done = json.loads(ok.stdout)
    tag = next(e for e in done["effects"] if e["id"] == f"tag:v1:agent@{repo}")
    assert tag["state"] == "done" and tag["receipt"]["previous"] == held


def test_persistent_5xx_defers_retry_later_then_resume_completes(distribution_registry: Registry,
                                                                 tmp_path: Path, vectors_dir: Path) -> None:
    rule = Rule("PUT", r"/manifests/sha256:", "status", times=1000, status=503)
    with FaultProxy(distribution_registry.host, [rule]) as proxy:
        w = make_world(tmp_path / "w", vectors_dir, [f"{proxy.host}/acx/later"])
        report = run_goal(load_plan(w.plan), root=w.state, sleep=lambda s: None)
        assert report.exit_code() == 6  # TransientError: CI retries later, no person needed
        man = report.status.effect(f"manifest:agent@{proxy.host}/acx/later")
        assert man.state == "deferred" and man.failure is not None and man.failure.cls == "host_failure"
        assert man.attempts == 3  # the plan's budget, not a loop
        assert "retry later" in man.next_action
        hits = rule.hits
        assert hits == 3 * 3  # 3 tries x (1 + 2 transport retries)
        rule.times = 0  # the registry recovers
        again = run_goal(load_plan(w.plan), root=w.state, sleep=lambda s: None)
        assert again.exit_code() == 0 and again.status.state == "done"
