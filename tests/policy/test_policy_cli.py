"""`acx policy check` on a file and on a cartridge (with host limits), and `acx harness check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.cli import run_acx
from tests.harness.env import REPO

EXAMPLE_POLICY = REPO / "examples" / "agent-package" / "loop-context-policy.json"


def test_policy_check_file_and_cartridge(
    tmp_path: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = run_acx(
        capsys,
        "--json",
        "policy",
        "check",
        str(EXAMPLE_POLICY),
        "--host-limits",
        str(REPO / "examples" / "resource-limits.yaml"),
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    data = json.loads(ok.stdout)
    assert data["ok"] is True  # the verdict shape (docs/cli.md): ok, not valid
    eff = data["effectiveLimits"]
    assert (
        eff["limits"]["tokenSpend"]["dailyPerAgent"] == 250000 and "tokenSpend.dailyPerAgent" in eff["capped"]
    )
    ref = run_acx(capsys, "--json", "policy", "check", str(vectors_dir / "sample" / "sample.acx"))
    assert ref.returncode == 0 and json.loads(ref.stdout)["source"].endswith(
        "rom/policy/loop-context-policy.json"
    )
    bad = tmp_path / "p.json"
    doc = json.loads(EXAMPLE_POLICY.read_text())
    doc["schemaVersion"] = "acx.loop-context-policy/9"
    bad.write_text(json.dumps(doc))
    res = run_acx(capsys, "--json", "policy", "check", str(bad))
    assert res.returncode == 1
    issue = json.loads(res.stdout)["issues"][0]
    assert (issue["rule"], issue["path"]) == ("schemaVersion.known", "$.schemaVersion")
    human = run_acx(capsys, "policy", "check", str(bad))
    assert "INVALID" in human.stdout and "schemaVersion.known" in human.stdout


def test_harness_check(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_acx(capsys, "--json", "harness", "check", str(vectors_dir / "sample" / "sample.acx"))
    assert res.returncode == 0
    out = json.loads(res.stdout)
    assert out["ok"] is True
    assert {(i["rule"], i["severity"]) for i in out["issues"]} == {
        ("harness.legacy.externalTools", "warning"),
        ("harness.legacy.filesystem", "warning"),
        ("harness.legacy.network", "warning"),
    }
