"""`acx ls DIR` (roster overview, verified, read-only) and `acx cal` (= `workflow ready`)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.harness.cli import run_acx


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def test_ls_lists_verified_rows(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    roster = tmp_path / "roster"
    (roster / "team").mkdir(parents=True)
    shutil.copyfile(vectors_dir / "reference" / "ada-ridge.acx", roster / "ada.acx")
    shutil.copyfile(vectors_dir / "sample" / "tampered" / "rom-data.acx", roster / "team" / "bad.acx")
    (roster / "junk.acx").write_bytes(b"not a cartridge at all")
    before = _tree_hash(roster)
    res = run_acx(capsys, "--json", "ls", str(roster))
    assert res.returncode == 0, res.stderr
    rows = {r["file"]: r for r in json.loads(res.stdout)["cartridges"]}
    assert set(rows) == {"ada.acx", "team/bad.acx", "junk.acx"}
    ada = rows["ada.acx"]
    assert ada["id"].startswith("io.github.ridgeworks/ada-ridge@")
    assert (ada["role"], ada["trust"], ada["level"]) == (
        "devops_engineer",
        "portable",
        {"declared": 6, "proven": None},
    )
    assert ada["skills"] == ["expertise-devops-engineer"]
    assert rows["team/bad.acx"]["trust"] == "tampered"
    assert rows["junk.acx"]["trust"] == "unreadable" and rows["junk.acx"]["error"]
    human = run_acx(capsys, "ls", str(roster))
    assert "Ada Ridge" in human.stdout and "3 cartridge(s)" in human.stdout
    assert _tree_hash(roster) == before
    assert run_acx(capsys, "ls", str(tmp_path / "missing")).returncode == 4


def test_cal_is_workflow_ready(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wf = str(vectors_dir / "reference" / "ship-a-feature.cal.json")
    roster = str(vectors_dir / "reference")
    cal = run_acx(capsys, "--json", "cal", wf, "--cartridges", roster)
    ready = run_acx(capsys, "--json", "workflow", "ready", wf, "--cartridges", roster)
    assert cal.returncode == ready.returncode == 1
    assert json.loads(cal.stdout) == json.loads(ready.stdout)
    assert json.loads(cal.stdout)["ok"] is False
