"""`make soak` end to end at a tiny scale: a real distribution registry behind the fault proxy,
pull and install under no fault, 5xx, a corrupted body and a full disk; every run is classified
and the closing line has the fixed form (the full campaign is `make soak`)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.harness import env
from tests.harness.env import REPO

pytestmark = pytest.mark.interop


def test_soak_script_classifies_every_run() -> None:
    env.peer("docker-registry")  # skip (or fail in CI) without the registry
    cmd = [sys.executable, "scripts/soak.py", "--runs", "8", "--seed", "5", "--ops", "pull,install",
           "--faults", "none,5xx,corrupt,disk_full"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"soak: 8 runs, 0 corrupt, 0 lost, 0 duplicated, 0 unclassified", last), last
    table = r.stdout
    assert re.search(r"(?m)^install\s+disk_full\s+1\s+0\s+1\s", table), table  # refused, typed, nothing left
