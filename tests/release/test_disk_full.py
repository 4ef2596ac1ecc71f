"""A full disk is an environment failure, not a bug: `acx pull` ends in writeback_failed (exit 7) with
no partial file, and a release effect that hits it is deferred (resumable), never blocked."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from acxoci.release.failures import classify, decide
from acxoci.release.plan import Budget
from tests.harness.env import REPO
from tests.harness.releases import acx


def _limit_file_size(limit: int) -> None:  # runs in the child before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_pull_onto_a_full_disk_is_a_typed_writeback_failure(tmp_path: Path, vectors_dir: Path) -> None:
    sample = vectors_dir / "sample" / "sample.acx"
    layout = tmp_path / "layout"
    assert acx("push", str(sample), f"oci-layout:{layout}:v1").returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run(
        [sys.executable, "-c", "from acxoci.cli.main import main; main()", "--json", "pull",
         f"oci-layout:{layout}:v1", "-o", str(out / "s.acx"), "--no-verify"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120,
        preexec_fn=lambda: _limit_file_size(sample.stat().st_size // 2),
    )
    assert r.returncode == 7, r.stdout + r.stderr  # issue 14: disk full is writeback_failed
    assert json.loads(r.stdout)["error"]["kind"] == "writeback_failed"
    assert list(out.iterdir()) == []  # nothing half-written is left


def test_release_defers_a_disk_full_effect_and_blocks_other_os_errors() -> None:
    budget = Budget(attempts=1, backoff_seconds=0.0, max_backoff_seconds=0.0, transport_retries=0)
    for code in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        f = classify(OSError(code, os.strerror(code)))
        assert f.cls == "host_failure" and decide(f, 1, budget).state == "deferred", f
    f = classify(PermissionError(errno.EACCES, "Permission denied"))
    assert f.cls == "validation_failed" and decide(f, 1, budget).state == "blocked"
