"""A hostile credential helper (`docker-credential-x` on PATH) cannot eat memory or hang the
command: one that writes 100 MB, writes forever, never exits, or exits leaving a child that
holds its output open, ends in a typed RegistryAuthError naming the helper, within the timeout,
with peak RSS (VmHWM, measured in a child process) far below the output it tried to send."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.env import REPO

SCRIPTS = {
    "huge": "head -c 104857600 /dev/zero",
    "forever": "yes credential",
    "forever-stderr": "yes credential >&2",
    "hangs": "sleep 1000",
    "orphan": "sleep 1000 & echo $! > \"$0.child\"; echo '{\"Username\":\"u\",\"Secret\":\"s\"}'",
}

CHILD = """
import json, sys, time
from acxoci.oci import auth
from acxoci.oci.errors import RegistryAuthError
auth.HELPER_TIMEOUT = 3.0
t0 = time.monotonic()
try:
    auth.load_credential("r.example", sys.argv[1])
    out = {"kind": None}
except RegistryAuthError as exc:
    out = {"kind": exc.kind, "message": exc.message, "where": exc.where}
out["elapsed"] = time.monotonic() - t0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        out["hwm_kb"] = int(line.split()[1])
print(json.dumps(out))
"""


@pytest.mark.parametrize("behaviour", sorted(SCRIPTS))
def test_a_hostile_helper_is_cut_off_typed_and_bounded(tmp_path: Path, behaviour: str) -> None:
    bindir, cfg = tmp_path / "bin", tmp_path / "cfg"
    bindir.mkdir()
    cfg.mkdir()
    helper = bindir / "docker-credential-x"
    helper.write_text(f"#!/bin/sh\ncat >/dev/null\n{SCRIPTS[behaviour]}\n")
    helper.chmod(0o755)
    (cfg / "config.json").write_text(json.dumps({"credHelpers": {"r.example": "x"}}))
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(cfg)], capture_output=True, text=True,
                          env=env, timeout=60, start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["kind"] == "auth_failure", out
    assert "docker-credential-x" in out["message"] and out["where"] == "docker-credential-x"
    assert out["elapsed"] < 3.0 + 2.0, out
    assert out["hwm_kb"] < 150 * 1024, out
    if behaviour in ("hangs", "orphan"):
        assert "timed out" in out["message"]
    else:
        assert "more than 64 KiB" in out["message"]
    if behaviour == "orphan":  # the helper's child holding its stdout was killed with it
        child = int((bindir / "docker-credential-x.child").read_text())
        stat = Path(f"/proc/{child}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_well_behaved_helper_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acxoci.oci.auth import Credential, load_credential

    bindir, cfg = tmp_path / "bin", tmp_path / "cfg"
    bindir.mkdir()
    cfg.mkdir()
    helper = bindir / "docker-credential-x"
    answer = '{"Username":"u-%s","Secret":"s"}'
    helper.write_text(f"#!/bin/sh\nread host\nprintf '{answer}' \"$host\"\n")
    helper.chmod(0o755)
    (cfg / "config.json").write_text(json.dumps({"credHelpers": {"r.example": "x"}}))
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert load_credential("r.example", str(cfg)) == Credential("u-r.example", "s")
