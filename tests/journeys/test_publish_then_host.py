"""User journeys end to end, as the commands a CI job and a host would type, against a real
registry (distribution 2.8) and an on-disk layout: a team generated from a codebase is built,
signed and released (read back by the one acceptance decision), then installed by tag on a host
(cartridges, the workflow staffed from them, the agent graph) and activated; then the world
changes (a key is compromised) and every host-side use judges again: activate refuses, staffing
refuses, `installed verify` reports, the timer command deactivates, uninstall leaves nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

PUBLISHER = "dev.example.team"


def _ok(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out = acx_json(capsys, *args)
    assert code == 0, (args, json.dumps(out)[:3000])
    return out


@pytest.fixture(params=["registry", "layout"])
def base(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the release goes: a distribution registry or an OCI layout."""
    if request.param == "layout":
        return f"oci-layout:{tmp_path / 'published'}"
    registry: Registry = request.getfixturevalue("distribution_registry")
    return f"{registry.host}/acme"


def _team(tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """A publisher key, the team `init --from-code` finds in this repository, built and signed."""
    _ok(capsys, "key", "generate", "-o", str(tmp / "pub.pem"))
    _ok(capsys, "key", "trust", str(tmp / "pub.pub.pem"), "--publisher", PUBLISHER, "--trust-registry",
        str(tmp / "trust.json"), "--not-before", "2026-01-01T00:00:00Z")
    _ok(capsys, "init", "--from-code", str(REPO), "--out", str(tmp / "team"))
    roles = sorted(p.name for p in (tmp / "team" / "agents").iterdir())
    for role in roles:
        _ok(capsys, "cartridge", "build", str(tmp / "team" / "agents" / role), "-o", str(tmp / f"{role}.acx"),
            "--publisher", PUBLISHER, "--key", str(tmp / "pub.pem"))
    _ok(capsys, "workflow", "sign", str(tmp / "team" / "cal" / "from-code.cal.json"), "--publisher",
        PUBLISHER, "--key", str(tmp / "pub.pem"), "-o", str(tmp / "team.cal.json"))
    graph = json.loads((REPO / "examples" / "graph" / "review-team.agent-graph.json").read_text())
    (tmp / "graph.json").write_text(json.dumps(graph))
    _ok(capsys, "graph", "sign", str(tmp / "graph.json"), "--publisher", PUBLISHER, "--key",
        str(tmp / "pub.pem"), "-o", str(tmp / "team.agent-graph.json"))
    versions = {"workflow": json.loads((tmp / "team.cal.json").read_text())["version"],
                "graph": json.loads((tmp / "team.agent-graph.json").read_text())["version"]}
    return {"roles": roles, "versions": versions}


def _plan(tmp: Path, base: str, team: dict[str, Any], *, tag_for: dict[str, str] | None = None) -> Path:
    tags = tag_for or {}
    arts = [{"input": r, "to": [{"repository": f"{base}/agents/{r}", "tags": [tags.get(r, "0.1.0")]}]}
            for r in team["roles"]]
    arts.append({"input": "team", "to": [{"repository": f"{base}/team",
                                          "tags": [team["versions"]["workflow"]]}]})
    arts.append({"input": "graph", "to": [{"repository": f"{base}/graph",
                                           "tags": [team["versions"]["graph"]]}]})
    inputs: dict[str, Any] = {r: {"cartridge": str(tmp / f"{r}.acx")} for r in team["roles"]}
    inputs["team"] = {"workflow": str(tmp / "team.cal.json")}
    inputs["graph"] = {"graph": str(tmp / "team.agent-graph.json")}
    plan = {"schemaVersion": "acx.release-plan/1",
            "goal": {"id": f"team-{len(tags)}", "artifacts": arts,
                     "attestations": {"formats": ["legacy", "bundle"]}},
            "inputs": {"artifacts": inputs, "keys": {"attestation": {"file": str(tmp / "pub.pem")}}},
            "acceptance": {"policy": str(tmp / "policy.yaml")}}
    path = tmp / f"release-{len(tags)}.json"
    path.write_text(json.dumps(plan))
    return path


@pytest.mark.timeout(600)
def test_ci_release_then_host_install_by_tag_then_key_compromise(
        base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ACX_RELEASE_DIR", str(tmp_path / "releases"))
    monkeypatch.chdir(tmp_path)
    team = _team(tmp_path, capsys)
    _ok(capsys, "policy", "init", "-o", str(tmp_path / "policy.yaml"), "--publisher", PUBLISHER,
        "--trust-registry", str(tmp_path / "trust.json"))
    policy = str(tmp_path / "policy.yaml")
    store = str(tmp_path / "store")

    # CI: one release of the whole team; DONE only once every published tag is accepted as install would
    code, done = acx_json(capsys, "release", "run", str(_plan(tmp_path, base, team)))
    assert code == 0 and done["state"] == "done", json.dumps(done.get("runs"))[:3000]

    # the host: the cartridges by their version tags, the workflow staffed from them, the graph
    for role in team["roles"]:
        ref = f"{base}/agents/{role}:0.1.0"
        assert _ok(capsys, "verify", ref, "--policy", policy)["ok"] is True
        out = _ok(capsys, "install", ref, "--policy", policy, "--store", store, "--activate", "claude")
        assert out["status"] == "installed" and out["activation"]["skills"], out
    wf = _ok(capsys, "install", f"{base}/team:{team['versions']['workflow']}", "--policy", policy,
             "--store", store)
    assert wf["status"] == "installed", wf
    assert {c["id"]: c["status"] for c in wf["checks"]}["staffing"] == "pass"
    graph = _ok(capsys, "install", f"{base}/graph:{team['versions']['graph']}", "--policy", policy,
                "--store", store)
    assert graph["status"] == "installed", graph
    assert _ok(capsys, "installed", "verify", "--store", store)["ok"] is True

    # a release to a version tag that is not the signed version is never DONE: it is refused before
    # anything is written, by the version check install makes, and install finds nothing there
    bad = _plan(tmp_path, base, team, tag_for={team["roles"][0]: "2.0.0"})
    code, out = acx_json(capsys, "release", "run", str(bad))
    assert code == 9 and out.get("state") != "done" and out["writes"] == 0, json.dumps(out.get("runs"))[:3000]
    refused = next(e for e in out["effects"] if e["state"] == "blocked")
    assert refused["kind"] == "prepare" and refused["failure"]["class"] == "validation_failed", refused
    assert [c["id"] for c in refused["failure"]["details"]["checks"]] == ["version"], refused
    code, out = acx_json(capsys, "install", f"{base}/agents/{team['roles'][0]}:2.0.0", "--policy", policy,
                         "--store", str(tmp_path / "other-store"))
    assert code == 4 and out["error"]["kind"] == "not_found", out

    # the publisher's key is compromised: every use on the host judges again
    _ok(capsys, "key", "revoke", str(tmp_path / "pub.pub.pem"), "--trust-registry",
        str(tmp_path / "trust.json"), "--reason", "key-compromise", "--revoked-at", "2026-01-01T00:00:00Z")
    code, out = acx_json(capsys, "installed", "verify", "--store", store)
    assert code == 1 and not any(i["ok"] for i in out["items"]), out
    name = f"{PUBLISHER}/{team['roles'][0].replace('_', '-')}"
    code, out = acx_json(capsys, "activate", name, "--host", "codex", "--store", store)
    assert code == 8 and out["error"]["kind"] == "refused_by_policy", out
    code, out = acx_json(capsys, "workflow", "ready", str(tmp_path / "team.cal.json"), "--policy", policy,
                         "--store", store)
    assert code == 1 and not out["ok"], out
    skills = tmp_path / "home" / ".claude" / "skills"
    assert skills.is_dir() and any(skills.iterdir())
    out = _ok(capsys, "installed", "sync", "--store", store)
    assert {s["done"] for s in out["steps"]} == {"deactivated"}, out
    assert not (tmp_path / "home" / ".claude").exists()
    for item in _ok(capsys, "installed", "list", "--store", store)["items"]:
        _ok(capsys, "uninstall", item["name"], "--store", store)
    assert _ok(capsys, "installed", "verify", "--store", store)["orphanedActivations"] == []
