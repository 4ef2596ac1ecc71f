"""`make demo` tells the whole story: run scripts/demo.sh on the embedded layout store and
against a real registry, and check the narrative's key outcomes."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.harness.env import REPO
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def run_demo(tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "DEMO_DIR": str(tmp_path / "demo"), "ACX": str(REPO / ".venv/bin/acx")}
    if not Path(env["ACX"]).exists():
        env["ACX"] = "acx"
    r = subprocess.run(["bash", str(REPO / "scripts/demo.sh"), *args], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=240)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout


def check_story(out: str) -> None:
    """Each verdict word must open a line (after any symbols), so UNVERIFIED, ALREADY INSTALLED or
    NOT REVOKED never count as VERIFIED, INSTALLED or REVOKED."""
    for needle in ("TRUSTED (verified)", "ATTESTED", "ISSUED Lv", "VERIFIED", "INSTALLED", "REVOKED",
                   "ACTIVATED"):
        assert re.search(rf"(?m)^[^\w]*{re.escape(needle)}(?![A-Za-z])", out), needle
    assert "revocation [revoked]" in out  # installed verify judged it again
    assert "skills/review-checklist/SKILL.md is identical to the signed ROM file" in out
    assert "the revoked agent's skills are gone from the scratch HOME" in out


def test_story_needles_are_whole_verdicts() -> None:
    good = ["TRUSTED (verified)", "ATTESTED x", "ISSUED Lv3", "VERIFIED a", "INSTALLED b", "REVOKED c",
            "ACTIVATED d", "revocation [revoked]",
            "skills/review-checklist/SKILL.md is identical to the signed ROM file",
            "the revoked agent's skills are gone from the scratch HOME"]
    check_story("\n".join(good))
    for i, wrong in ((3, "UNVERIFIED a"), (4, "ALREADY INSTALLED b"), (5, "NOT REVOKED c")):
        with pytest.raises(AssertionError):
            check_story("\n".join([*good[:i], wrong, *good[i + 1:]]))


def test_demo_on_layout(tmp_path: Path) -> None:
    out = run_demo(tmp_path)
    check_story(out)
    assert (tmp_path / "demo/store/index.json").exists()
    # activated, then deactivated by `installed sync` once its level was revoked
    assert not (tmp_path / "demo/home/.claude/skills/review-checklist").exists()


def test_demo_against_registry(tmp_path: Path, distribution_registry: Registry) -> None:
    check_story(run_demo(tmp_path, distribution_registry.host))
