"""`make bench`: run every benchmark script (scripts/bench_*.py) in turn and print its report.

Each script measures acx against the peers in the same run where a peer exists, and prints
ratios; none of them is a pass/fail test. Set BENCH_ONLY=name to run one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    only = os.environ.get("BENCH_ONLY")
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not only or only in p.stem)
    if not scripts:
        print("bench: no benchmark scripts found", file=sys.stderr)
        return 1
    # acx is timed as an installed package runs: from compiled bytecode (decision 0027)
    subprocess.call([sys.executable, "-m", "compileall", "-q", "-j", "0",
                     str(HERE.parent / "acxoci")], stdout=subprocess.DEVNULL)
    failed = []
    for script in scripts:
        print(f"\n=== {script.stem} ===", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(script)])
        print(f"--- {script.stem}: exit {rc}, {time.perf_counter() - t0:.1f} s", flush=True)
        if rc != 0:
            failed.append(script.stem)
    if failed:
        print(f"\nbench: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
