"""Where users wait on small artifacts: `acx push`, `acx pull` and `acx cp -r` of the shared sample
cartridge (signed, one attestation referrer) between two loopback distribution registries, whole
CLI, against the start-up floor of the libraries such a command needs
(`python -c 'import requests, typer'`), measured in the same rounds (issue 31: each ≤ 1.3×).

The commands run in turn (floor, push, pull, cp -r, floor, ...) so a drifting machine moves them
together; each figure is the median of RUNS rounds. This script prints, it does not fail on them.
Run: `make bench` (or BENCH_ONLY=startup make bench).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness import env  # noqa: E402
from tests.harness.servers import start_distribution  # noqa: E402

ACX = str(Path(sys.executable).with_name("acx"))
RUNS = int(os.environ.get("RUNS", "11"))


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wall(cmd: list[str]) -> float:
    if cmd[1] == "pull":  # a pull refuses nothing here, but starts from an empty place each time
        Path(cmd[-1]).unlink(missing_ok=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0


def main() -> int:
    registry_bin = env.peer("docker-registry")
    work = Path(tempfile.mkdtemp(prefix="acx-bench-startup-"))
    src = start_distribution(registry_bin, work / "src")
    dst = start_distribution(registry_bin, work / "dst")
    try:
        key = work / "k.pem"
        sh(ACX, "key", "generate", "-o", str(key))
        sample = work / "sample.acx"
        shutil.copyfile(env.VECTORS / "sample" / "sample.acx", sample)
        ref = f"{src.host}/bench/sample:v1"
        sh(ACX, "push", str(sample), ref, "--sign", "--key", str(key), "--format", "bundle")
        sides = {
            "floor": [sys.executable, "-c", "import requests, typer"],
            "push": [ACX, "push", str(sample), f"{src.host}/bench/again:v1"],
            "pull": [ACX, "pull", ref, "-o", str(work / "pulled.acx")],
            "cp -r": [ACX, "cp", "-r", ref, f"{dst.host}/bench/sample:v1"],
        }
        for cmd in sides.values():  # warm-up: caches, bytecode, the registries' first requests
            wall(cmd)
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(RUNS):
            for name, cmd in sides.items():
                times[name].append(wall(cmd))
        floor = statistics.median(times["floor"])
        print(f"small artifacts, whole CLI, median of {RUNS} (sample cartridge, 1 referrer):")
        print(f"  floor `python -c 'import requests, typer'`: {floor * 1000:6.0f} ms")
        for name in ("push", "pull", "cp -r"):
            med = statistics.median(times[name])
            print(f"  acx {name:<6} {med * 1000:6.0f} ms  {med / floor:5.2f}x the floor (target <= 1.3x)")
        return 0
    finally:
        for r in (src, dst):
            r.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
