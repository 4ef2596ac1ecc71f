"""`acx … | head` : a reader that goes away ends the command quietly (exit 141, nothing on stderr),
never a traceback or `Exception ignored … BrokenPipeError`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.cli import run_acx
from tests.harness.env import REPO


def test_closed_stdout_exits_quietly(
    tmp_path: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    acx = [sys.executable, "-m", "acxoci"]
    shutil.copy(vectors_dir / "sample" / "sample.acx", tmp_path / "c.acx")
    layout = f"oci-layout:{tmp_path / 'l'}"
    for i in range(3):  # in-process: only the runs with a closed stdout need their own process
        assert run_acx(capsys, "-q", "push", str(tmp_path / "c.acx"), f"{layout}:v{i}").returncode == 0
    r, w = os.pipe()
    os.close(r)  # the reader is gone before acx writes
    try:
        for args in (
            ["manifest", "get", f"{layout}:v1"],
            ["--json", "tags", layout],
            ["--json", "tags", f"oci-layout:{tmp_path / 'missing'}"],
        ):  # the error path too
            proc = subprocess.run([*acx, *args], stdout=w, stderr=subprocess.PIPE, env=env, timeout=60)
            assert proc.returncode == 141, (args, proc.stderr)
            assert proc.stderr == b"", (args, proc.stderr)
    finally:
        os.close(w)
