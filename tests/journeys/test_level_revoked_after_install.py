"""Journey: a level credential is revoked after install (issue 28), as the commands a publisher, an
independent level verifier and a host type them (docs/guide.md "Levels"): the verifier seals the
demo benchmark, publishes a status list and issues a level credential for a pushed cartridge; the
host's policy requires that level (`level.allowDemo: true`: the demo benchmark is used) and names
the status list; the cartridge is installed by tag and activated, and a workflow whose slot needs
that level installs with its staffing READY. Then the verifier revokes the credential and
publishes the list: `acx activate` refuses, the workflow's install refuses its staffing (exit 8),
`acx installed verify` reports the revocation, `acx installed sync` deactivates, and uninstall
leaves no activation behind. Against a distribution registry and an OCI layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

PUBLISHER = "dev.example.team"
ISSUER = "did:web:verifier.example"
BENCH = "bench/acx-bench-dag-de@2026.07.1.bench.json"
SLOT_LEVEL = 20  # the workflow's minLevel; the demo solver's default competence proves more


def _ok(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out = acx_json(capsys, *args)
    assert code == 0, (args, json.dumps(out)[:3000])
    return out


@pytest.fixture(params=["registry", "layout"])
def base(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the publisher and the verifier publish: a distribution registry or an OCI layout."""
    if request.param == "layout":
        return f"oci-layout:{tmp_path / 'published'}"
    registry: Registry = request.getfixturevalue("distribution_registry")
    return f"{registry.host}/acme"


def _workflow(tmp: Path) -> Path:
    """A one-slot team: its reviewer must be a `reviewer` cartridge of a proven level."""
    doc = {
        "schemaVersion": "acx.cal/1", "id": "review-gate", "version": "0.1.0",
        "name": "Leveled review gate", "license": "Apache-2.0", "tags": ["code-review", "level"],
        "description": "A change is reviewed by a reviewer whose level an independent verifier proved.",
        "authors": [{"name": "acxoci tests"}],
        "participants": [{"alias": "reviewer", "bind": "slot",
                          "slot": {"role": "reviewer", "minLevel": {"acxLevel": SLOT_LEVEL}}}],
        "limits": {"maxSteps": 4, "maxDurationMs": 600000, "maxParallel": 1},
        "start": "begin",
        "nodes": [{"id": "begin", "type": "event", "event": "start"},
                  {"id": "review", "type": "task", "agent": "reviewer", "action": "Review the change",
                   "sideEffects": "none", "approval": "never",
                   "completion": {"type": "artifact", "produces": "review-notes"}},
                  {"id": "done", "type": "event", "event": "end"}],
        "edges": [{"from": "begin", "to": "review"}, {"from": "review", "to": "done"}],
    }
    path = tmp / "gate.cal.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _failed(out: dict[str, Any]) -> list[str]:
    return [c["id"] for c in out["checks"] if c["status"] in ("fail", "unavailable")]


@pytest.mark.timeout(300)
def test_level_credential_revoked_after_install(base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    agent = f"{base}/agents/reviewer:1.0.0"
    status = f"{base}/status:status"
    team = f"{base}/teams/review-gate:0.1.0"
    store = str(tmp_path / "store")

    # the publisher: a cartridge and a workflow, signed and pushed by their version tags
    _ok(capsys, "key", "generate", "-o", "publisher.pem")
    _ok(capsys, "key", "trust", "publisher.pub.pem", "--publisher", PUBLISHER, "--trust-registry",
        "trust.json", "--not-before", "2026-01-01T00:00:00Z")
    _ok(capsys, "cartridge", "build", str(REPO / "examples" / "agent-package"), "-o", "agent.acx",
        "--publisher", PUBLISHER, "--key", "publisher.pem")
    _ok(capsys, "push", "agent.acx", agent)
    _ok(capsys, "workflow", "sign", str(_workflow(tmp_path)), "--publisher", PUBLISHER, "--key",
        "publisher.pem", "-o", "gate.signed.cal.json")
    _ok(capsys, "push", "gate.signed.cal.json", team)

    # the level verifier (the guide's "Levels" commands): a credential for the pushed cartridge
    _ok(capsys, "level", "bench-init", "-o", "bench", "--demo")
    _ok(capsys, "key", "generate", "-o", "verifier.pem")
    _ok(capsys, "key", "trust", "verifier.pub.pem", "--publisher", "example.verifier", "--trust-registry",
        "issuers.json")
    _ok(capsys, "status-list", "create", "--id", status, "--issuer", ISSUER, "--issuer-key", "verifier.pem",
        "-o", "status.json")
    _ok(capsys, "status-list", "publish", "status.json", status)
    issued = _ok(capsys, "level", "issue", agent, "--bench", BENCH, "--issuer", ISSUER, "--issuer-key",
                 "verifier.pem", "--status-list", "status.json", "-o", "level.vc.json")
    assert issued["level"] >= SLOT_LEVEL, issued

    # the host's policy: the publisher, the level (a demo level, allowed on purpose) and its status list
    _ok(capsys, "policy", "init", "-o", "policy.yaml", "--publisher", PUBLISHER, "--trust-registry",
        "trust.json", "--require-level", str(SLOT_LEVEL), "--issuer", ISSUER, "--issuers", "issuers.json")
    doc = yaml.safe_load((tmp_path / "policy.yaml").read_text())
    doc["level"]["allowDemo"] = True
    doc["revocation"].update({"statusLists": {status: status}, "statusListCache": "status-cache"})
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    policy = str(tmp_path / "policy.yaml")

    # the host: install by tag, activate, and install the team: staffed from the installed cartridge
    out = _ok(capsys, "install", agent, "--policy", policy, "--store", store)
    assert out["status"] == "installed", out
    checks = {c["id"]: c["status"] for c in out["checks"]}
    assert checks["level"] == checks["revocation"] == "pass", out
    name = out["name"]
    assert _ok(capsys, "activate", name, "--host", "claude", "--store", store)["skills"], name
    out = _ok(capsys, "install", team, "--policy", policy, "--store", store)
    assert out["status"] == "installed", out
    assert {c["id"]: c["status"] for c in out["checks"]}["staffing"] == "pass", out
    out = _ok(capsys, "workflow", "ready", "gate.signed.cal.json", "--policy", policy, "--store", store)
    assert out["ok"] is True and out["verdict"] == "READY", out
    assert _ok(capsys, "installed", "verify", "--store", store)["ok"] is True

    # the verifier revokes the credential and publishes the list: every use on the host judges again
    _ok(capsys, "level", "revoke", "level.vc.json", "--status-list", "status.json", "--issuer-key",
        "verifier.pem", "--push", status)
    code, out = acx_json(capsys, "activate", name, "--host", "codex", "--store", store)
    assert code == 8 and out["error"]["kind"] == "refused_by_policy", out
    assert _failed(out["error"]["details"]) == ["revocation"], out
    assert not (tmp_path / "home" / ".agents").exists()
    code, out = acx_json(capsys, "install", team, "--policy", policy, "--store", store)
    assert code == 8 and out["status"] == "refused" and _failed(out) == ["staffing"], out
    code, out = acx_json(capsys, "workflow", "ready", "gate.signed.cal.json", "--policy", policy, "--store",
                         store)
    assert code == 1 and out["ok"] is False and out["verdict"] == "NOT READY", out
    code, out = acx_json(capsys, "installed", "verify", "--store", store)
    assert code == 1, out
    items = {i["name"]: i for i in out["items"]}
    assert items[name]["revocation"] == "revoked" and _failed(items[name]) == ["revocation"], items[name]
    assert any("no longer passes" in p for p in items[name]["activationProblems"]), items[name]
    assert {i: _failed(items[i]) for i in items if i != name} == {f"{PUBLISHER}/review-gate": ["staffing"]}
    skills = tmp_path / "home" / ".claude" / "skills"
    assert skills.is_dir() and any(skills.iterdir())
    out = _ok(capsys, "installed", "sync", "--store", store)
    assert [(s["name"], s["done"]) for s in out["steps"]] == [(name, "deactivated")], out
    assert not (tmp_path / "home" / ".claude").exists()

    # uninstall leaves no activation behind
    for item in _ok(capsys, "installed", "list", "--store", store)["items"]:
        _ok(capsys, "uninstall", item["name"], "--store", store)
    out = _ok(capsys, "installed", "verify", "--store", store)
    assert out["items"] == [] and out["orphanedActivations"] == [], out
    assert not (tmp_path / "home" / ".claude").exists() and not (tmp_path / "home" / ".agents").exists()
