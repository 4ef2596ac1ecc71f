"""`make fuzz`: the fuzzing campaign over every parser and decision entry point (tests/fuzz).

Each target runs in its own worker process (so its peak RSS is its own), `--jobs` at a time, for
a share of `--seconds` proportional to its weight. Prints one row per target and ends with
exactly `fuzz: <inputs> inputs, <untyped> untyped, slowest <seconds> s, peak <MB> MB`.
Exits 1 when any input crashed (untyped), bent a verdict, or took 1 s or more of CPU (the
machine is shared, so wall-clock time, also shown, includes waiting for a core). Found examples go
to `.fuzz/examples` (hypothesis's database, git-ignored) and the full report to `.fuzz/report.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SLOW_LIMIT_S = 1.0
STARTUP_S = 2.5  # interpreter + imports + seeds, per worker


def _worker(args: argparse.Namespace) -> int:
    from tests.fuzz.engine import run_target

    stats = run_target(args.worker, seconds=args.seconds, seed=args.seed,
                       max_inputs=args.max_inputs, database=Path(args.database) if args.database else None)
    Path(args.out).write_text(json.dumps(stats.to_json()))
    return 0


def _property_worker(kinds: list[str], out: Path) -> int:
    """Run the exhaustive property on `kinds` (tests/fuzz/property.py) and write the per-kind rows."""
    from tests.fuzz import property as prop
    from tests.fuzz import resign

    e = resign.make_env()
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        variants = runs = 0
        crashes: list[str] = []
        unnamed: list[str] = []
        slowest = 0.0
        t0 = time.monotonic()
        for case in prop.cases(e, (kind,)):
            o = prop.check(e, case)
            variants, runs, slowest = variants + 1, runs + o.runs, max(slowest, o.seconds)
            crashes += o.crashes
            unnamed += o.unnamed
        rows.append({"kind": kind, "variants": variants, "runs": runs, "crashes": crashes, "unnamed": unnamed,
                     "slowest_s": round(slowest, 3), "seconds": round(time.monotonic() - t0, 1)})
        out.write_text(json.dumps(rows))
    return 0


def run_property(jobs: int, only: list[str]) -> int:
    """`--property`: every variant of every document kind (issue 29's "Done when"), kinds spread
    over `jobs` worker processes. Prints one row per kind and ends with
    `property: <variants> variants, <runs> runs, <crashes> crashes, <unnamed> unnamed`."""
    from tests.fuzz import resign

    kinds = [k.name for k in resign.kinds() if not only or k.name in only]
    out_dir = Path(tempfile.mkdtemp(prefix="acx-fuzz-property-"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = []
    for n in range(min(jobs, len(kinds))):
        out = out_dir / f"{n}.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--property-worker", ",".join(kinds[n::jobs]),
               "--out", str(out)]
        procs.append((subprocess.Popen(cmd, cwd=REPO, env=env), out))
    rows: list[dict[str, Any]] = []
    failed = False
    for proc, out in procs:
        failed |= proc.wait() != 0
        if out.exists():
            rows += json.loads(out.read_text())
    rows.sort(key=lambda r: kinds.index(r["kind"]))
    print(f"{'kind':<32} {'variants':>8} {'runs':>7} {'crashes':>7} {'unnamed':>7} {'slowest s':>9} "
          f"{'time s':>8}")
    for r in rows:
        print(f"{r['kind']:<32} {r['variants']:>8} {r['runs']:>7} {len(r['crashes']):>7} "
              f"{len(r['unnamed']):>7} {r['slowest_s']:>9.3f} {r['seconds']:>8}")
    for f in [f for r in rows for f in (*r["crashes"], *r["unnamed"])][:40]:
        print(f"  {f}")
    report = REPO / ".fuzz" / "property.json"
    report.parent.mkdir(exist_ok=True)
    report.write_text(json.dumps(rows, indent=1))
    crashes = sum(len(r["crashes"]) for r in rows)
    unnamed = sum(len(r["unnamed"]) for r in rows)
    print(f"property: {sum(r['variants'] for r in rows)} variants, {sum(r['runs'] for r in rows)} runs, "
          f"{crashes} crashes, {unnamed} unnamed")
    return 0 if not (failed or crashes or unnamed or len(rows) != len(kinds)) else 1


def _budgets(names: list[str], total: float, jobs: int) -> dict[str, float]:
    from tests.fuzz.targets import BY_NAME

    weights = {n: BY_NAME[n].weight for n in names}
    pool = max(1.0, total * jobs - STARTUP_S * len(names))
    return {n: max(1.0, pool * w / sum(weights.values())) for n, w in weights.items()}


def _table(rows: list[dict[str, object]]) -> str:
    cols = ("target", "inputs", "accepted", "refused", "typed", "untyped", "bent", "slowest_s",
            "slowest_wall_s", "peak_rss_mb", "seconds")
    head = ("target", "inputs", "accepted", "refused", "typed err", "untyped", "bent", "slowest cpu s",
            "(wall s)", "peak MB", "time s")
    cells = [head] + [tuple(str(r.get(c, "")) for c in cols) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    lines = []
    for i, c in enumerate(cells):
        lines.append("  ".join(v.ljust(widths[j]) if j == 0 else v.rjust(widths[j]) for j, v in enumerate(c)))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS") or 600))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FUZZ_JOBS") or 2))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED") or 0),
                    help="campaign seed (0 = derived from the clock); printed so a run can be repeated")
    ap.add_argument("--targets", default="", help="comma-separated subset (default: all; with --property: "
                    "document kinds)")
    ap.add_argument("--max-inputs", type=int, default=None, help="per target cap")
    ap.add_argument("--database", default=str(REPO / ".fuzz" / "examples"),
                    help="hypothesis example database ('' for none)")
    ap.add_argument("--min-inputs", type=int, default=0, help="fail when fewer inputs ran in all")
    ap.add_argument("--property", action="store_true",
                    help="run issue 29's property exhaustively instead of the timed campaign")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--property-worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return _worker(args)
    if args.property_worker:
        return _property_worker(args.property_worker.split(","), Path(args.out))
    if args.property:
        return run_property(args.jobs, [n for n in args.targets.split(",") if n])

    from tests.fuzz.targets import TARGETS

    names = [n for n in args.targets.split(",") if n] or [t.name for t in TARGETS]
    seed = args.seed or int(time.time()) % 1_000_000
    budgets = _budgets(names, args.seconds, args.jobs)
    print(f"fuzz: seed {seed}, {len(names)} targets, {args.seconds:g} s on {args.jobs} worker(s)", flush=True)
    out_dir = Path(tempfile.mkdtemp(prefix="acx-fuzz-run-"))
    pending = sorted(names, key=lambda n: -budgets[n])
    running: list[tuple[str, subprocess.Popen[bytes], Path, float]] = []
    rows: list[dict[str, object]] = []
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    while pending or running:
        while pending and len(running) < args.jobs:
            name = pending.pop(0)
            out = out_dir / f"{name}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--out", str(out),
                   "--seconds", f"{budgets[name]:.1f}", "--seed", str(seed), "--database", args.database]
            if args.max_inputs:
                cmd += ["--max-inputs", str(args.max_inputs)]
            running.append((name, subprocess.Popen(cmd, cwd=REPO, env=env), out, time.monotonic()))
        time.sleep(0.2)
        for item in list(running):
            name, proc, out, t0 = item
            if proc.poll() is None:
                if time.monotonic() - t0 > budgets[name] + 120:  # a hung worker is a finding too
                    proc.kill()
                    proc.wait()
                else:
                    continue
            running.remove(item)
            if proc.returncode == 0 and out.exists():
                rows.append(json.loads(out.read_text()))
            else:
                rows.append({"target": name, "inputs": 0, "untyped": 1, "bent": 0, "slowest_s": 0.0,
                             "peak_rss_mb": 0.0, "failures": [{"kind": "worker", "detail":
                                                               f"worker exited {proc.returncode}"}]})
            r = rows[-1]
            print(f"  {name}: {r['inputs']} inputs, {r['untyped']} untyped, {r['bent']} bent", flush=True)
    rows.sort(key=lambda r: names.index(str(r["target"])))
    print()
    print(_table(rows))
    for r in rows:
        for sig, n in dict(r.get("signatures", {})).items():  # type: ignore[call-overload]
            print(f"[{r['target']}] {n} x {sig}")
    for r in rows:
        for f in r.get("failures", [])[:3]:  # type: ignore[union-attr]
            print(f"\n[{r['target']}] {f.get('kind')}: {f.get('input', '')[:500]}")
            print(str(f.get("shrunk") or f.get("detail", ""))[-1500:])
    report = REPO / ".fuzz" / "report.json"
    report.parent.mkdir(exist_ok=True)
    report.write_text(json.dumps({"seed": seed, "seconds": args.seconds, "targets": rows}, indent=1))
    inputs = sum(int(r["inputs"]) for r in rows)  # type: ignore[call-overload]
    untyped = sum(int(r["untyped"]) for r in rows)  # type: ignore[call-overload]
    bent = sum(int(r["bent"]) for r in rows)  # type: ignore[call-overload]
    slowest = max(float(r["slowest_s"]) for r in rows)  # type: ignore[arg-type]
    peak = max(float(r["peak_rss_mb"]) for r in rows)  # type: ignore[arg-type]
    print(f"\nbent verdicts: {bent}; report: .fuzz/report.json")
    idle = [str(r["target"]) for r in rows if not r["inputs"]]
    if idle:  # a target that ran nothing proved nothing: its share was too short, or it cannot start
        print(f"no input ran for {', '.join(idle)} (give more --seconds)")
    print(f"fuzz: {inputs} inputs, {untyped} untyped, slowest {slowest:.3f} s, peak {peak:.0f} MB")
    ok = untyped == 0 and bent == 0 and slowest < SLOW_LIMIT_S and inputs >= args.min_inputs and not idle
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
