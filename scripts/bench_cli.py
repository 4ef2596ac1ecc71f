"""Benchmark the commands users wait for, as whole CLI runs, against the reference CLI in the same run.

- `acx cartridge verify` of the shared sample cartridge (start-up included), with the start-up
  floor of what it needs (`python -c 'import typer, rich.console, sqlite3, hashlib'` and Ed25519);
- `acx ls` and `acx workflow ready --cartridges` over folders of 1,000 and 2,000 copies of the
  sample (made in a temporary folder, deleted afterwards), and how the time grows with the count.

Each round times every side once, in turn, so that each ratio compares runs made under the same
conditions (this shared machine's speed drifts from minute to minute); the figures are the best
of the rounds and the median of the rounds' ratios. The reference is timed when ACX_REF_NODE and
ACX_REF_CLI name a Node 22 and its src/cli.mjs (as the opt-in cross-checks do).
Targets (issue 31): verify <= 1.25x the reference; ls and ready <= 0.5x, and 2,000 cartridges
<= 2.2x the time of 1,000.
Usage: .venv/bin/python scripts/bench_cli.py [--runs N] [--roster-runs N] [--counts 1000 2000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ACX_SHARED_DIR", REPO.parent / "shared"))
SAMPLE = SHARED / "vectors" / "sample" / "sample.acx"
WORKFLOW = SHARED / "vectors" / "workflow" / "team.cal.json"
FLOOR = (
    "import typer, rich.console, sqlite3, hashlib\n"
    "from cryptography.hazmat.primitives.asymmetric import ed25519"
)


def _wall(cmd: list[str]) -> float:
    """Wall time of one run (its exit status is a verdict: not checked here)."""
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False)
    return time.perf_counter() - t0


def _rounds(sides: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """`runs` rounds, each timing every side once in turn."""
    out: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(runs):
        for name, cmd in sides.items():
            out[name].append(_wall(cmd))
    return out


def _ratio(times: dict[str, list[float]], a: str, b: str) -> str:
    per_round = statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))
    return f"{min(times[a]) / min(times[b]):.2f}x best-of, {per_round:.2f}x median of rounds"


def _best(times: dict[str, list[float]], name: str) -> str:
    return f"{min(times[name]) * 1000:7.0f} ms (median {statistics.median(times[name]) * 1000:.0f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=11, help="rounds for the single-cartridge verify")
    ap.add_argument("--roster-runs", type=int, default=3, help="rounds for ls and workflow ready")
    ap.add_argument("--counts", type=int, nargs=2, default=[1000, 2000])
    args = ap.parse_args()
    acx = str(Path(sys.executable).parent / "acx")
    node, ref_cli = os.environ.get("ACX_REF_NODE"), os.environ.get("ACX_REF_CLI")
    ref = [node, ref_cli] if node and ref_cli else None

    sides = {"acx": [acx, "cartridge", "verify", str(SAMPLE)], "floor": [sys.executable, "-c", FLOOR]}
    if ref:
        sides["ref"] = [*ref, "verify", str(SAMPLE)]
    t = _rounds(sides, args.runs)
    print(f"cartridge verify sample (whole CLI, best of {args.runs}):")
    print(f"  acx       {_best(t, 'acx')}")
    print(f"  floor     {_best(t, 'floor')}  (python + typer + rich.console + sqlite3 + hashlib + Ed25519)")
    if ref:
        print(f"  reference {_best(t, 'ref')}")
        print(f"  acx/reference: {_ratio(t, 'acx', 'ref')} (target <= 1.25x)")
    else:
        print("  reference: not measured (set ACX_REF_NODE and ACX_REF_CLI)")
    print(f"  acx/floor: {_ratio(t, 'acx', 'floor')}")

    with tempfile.TemporaryDirectory(prefix="acx-bench-cli-") as d:
        folders = {}
        for n in args.counts:
            folder = Path(d) / f"roster{n}"
            folder.mkdir()
            for i in range(n):
                shutil.copyfile(SAMPLE, folder / f"c{i:05d}.acx")
            folders[n] = folder
        for what, acx_args, ref_args in (
            ("ls", ["ls"], ["ls"]),
            ("workflow ready --cartridges", ["workflow", "ready", str(WORKFLOW), "--cartridges"],
             ["workflow", "ready", str(WORKFLOW), "--cartridges"]),
        ):
            sides = {}
            for n, folder in folders.items():
                sides[f"acx{n}"] = [acx, *acx_args, str(folder)]
                if ref:
                    sides[f"ref{n}"] = [*ref, *ref_args, str(folder)]
            t = _rounds(sides, args.roster_runs)
            small, big = args.counts
            print(f"{what} over {small} and {big} copies of the sample (best of {args.roster_runs}):")
            for n in args.counts:
                line = f"  {n:5d}: acx {_best(t, f'acx{n}')}"
                if ref:
                    line += f"  reference {_best(t, f'ref{n}')}"
                    line += f"  acx/reference {_ratio(t, f'acx{n}', f'ref{n}')}"
                print(line + ("  (target <= 0.5x)" if ref else ""))
            print(f"  acx {big}/{small}: {_ratio(t, f'acx{big}', f'acx{small}')} (target <= 2.2x)")
            if ref:
                print(f"  reference {big}/{small}: {_ratio(t, f'ref{big}', f'ref{small}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
