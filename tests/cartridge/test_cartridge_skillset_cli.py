"""`acx cartridge skillset`: derives the CalSkillSet from the cartridge's own tables and checks
the stored rom/cal/skillset.json against it."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

from tests.harness.env import REPO


def acx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, cwd=REPO)


def test_reference_cartridges_are_consistent(vectors_dir: Path) -> None:
    for name in ("reference/ada-ridge.acx", "reference/rex-calder.acx", "sample/sample.acx"):
        r = acx("--json", "cartridge", "skillset", str(vectors_dir / name))
        assert r.returncode == 0, r.stdout
        doc = json.loads(r.stdout)
        assert doc["consistent"] and doc["skillset"]["schemaVersion"] == "acx.cal-skillset/1"


def test_a_stored_skillset_claiming_another_role_differs(vectors_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "c.acx"
    shutil.copyfile(vectors_dir / "sample/sample.acx", copy)
    con = sqlite3.connect(copy)
    raw, size = con.execute("SELECT data, sz FROM sqlar WHERE name='rom/cal/skillset.json'").fetchone()
    if size != len(raw):  # the reference stores raw DEFLATE
        raw = zlib.decompress(raw, -15)
    stored = json.loads(raw)
    stored["plays"][0]["role"] = "impostor"
    data = json.dumps(stored).encode()
    con.execute("UPDATE sqlar SET data=?, sz=? WHERE name='rom/cal/skillset.json'", (data, len(data)))
    con.commit()
    con.close()
    r = acx("--json", "cartridge", "skillset", str(copy))
    assert r.returncode == 1
    diffs = json.loads(r.stdout)["differences"]
    assert any("impostor" in d for d in diffs) and any("designer" in d for d in diffs)
