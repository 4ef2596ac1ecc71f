"""A FIFO (or any non-regular file) handed to any command that reads a file is a typed refusal
naming it (exit 3), never a hang on an open or a read that never ends, and never `not found`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.harness.env import REPO

REF = "127.0.0.1:9/acx/none:1.0.0"
TYPE = "https://example.test/predicate/v1"

#: argv per reader; `F` is the FIFO, `J` an empty JSON object, `K`/`P` a private/public key,
#: `B` a bundle made by attest-blob.
CASES = [
    "workflow verify F", "workflow lint F", "workflow inspect F", "graph verify F", "graph lint F",
    "graph inspect F", "cartridge verify F", "cartridge inspect F", "cartridge spec F",
    "cartridge sign F --key K", "push F " + REF, "cp --from-list F", "verify " + REF + " --policy F",
    "install " + REF + " --policy F", "verify-blob F --key P --bundle B",
    "verify-blob J --key F --bundle B", "attest-blob F --key K --bundle O --predicate J --type " + TYPE,
    "attest-blob J --key K --bundle O --predicate F --type " + TYPE, "attest " + REF + " --key F",
    "level verify J --issuers F", "policy simulate F J", "harness lint F", "load F --host claude",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("special")
    os.mkfifo(d / "fifo")
    (d / "j.json").write_text("{}")
    acx = [sys.executable, "-m", "acxoci"]
    subprocess.run([*acx, "key", "generate", "-o", str(d / "k")], check=True, capture_output=True, cwd=d)
    subprocess.run([*acx, "attest-blob", str(d / "j.json"), "--key", str(d / "k"), "--bundle", str(d / "b"),
                    "--predicate", str(d / "j.json"), "--type", TYPE], check=True, capture_output=True, cwd=d)
    return {"F": str(d / "fifo"), "J": str(d / "j.json"), "K": str(d / "k"), "P": str(d / "k.pub.pem"),
            "B": str(d / "b"), "O": str(d / "out")}


@pytest.mark.parametrize("case", CASES)
def test_a_fifo_is_refused_typed_and_never_read(files: dict[str, str], case: str) -> None:
    argv = [files.get(word, word) for word in case.split()]
    r = subprocess.run([sys.executable, "-m", "acxoci", *argv], capture_output=True, text=True, cwd=REPO,
                       timeout=60, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    assert r.returncode == 3, r.stdout + r.stderr
    assert files["F"] in r.stderr and "not a regular file" in r.stderr, r.stderr
