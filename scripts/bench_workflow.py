"""Benchmark workflow lint + sign + verify on generated 10,000- and 20,000-node workflows.

Pipeline: lint --publish, then sign (the lint already passed, so not repeated), then verify the
signature. Prints each step, the total and the 2x-nodes ratio, in wall-clock and in CPU time
(on a shared machine the CPU time is the stable number).
Targets: total <= 1 s at 10,000 nodes, and 20,000 nodes <= 2.2x the 10,000-node time.
Run: .venv/bin/python scripts/bench_workflow.py [--nodes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.workflow.lint import lint
from acxoci.workflow.sign import sign_workflow
from acxoci.workflow.verify import verify_workflow

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def generate(n: int) -> dict[str, Any]:
    """A publishable workflow with `n` nodes: start, a review loop every 10 tasks, one end."""
    tasks = n - 2
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "event", "event": "start"}]
    edges: list[dict[str, Any]] = []
    prev = "start"
    for i in range(tasks):
        nid = f"step-{i}"
        if i % 10 == 9:
            nodes.append({"id": nid, "type": "gateway", "gateway": "exclusive"})
            edges.append({"from": prev, "to": nid})
            edges.append(
                {
                    "from": nid,
                    "to": f"step-{i - 9}",
                    "when": {"not": {"var": "review.outcome", "op": "eq", "value": "completed"}},
                }
            )
        else:
            nodes.append(
                {
                    "id": nid,
                    "type": "task",
                    "agent": f"agent-{i % 3}",
                    "action": f"Carry out step {i} of the pipeline",
                    "requires": {"capabilities": ["build-dag"], "rac": ["code-wiki"]},
                    "completion": {
                        "type": "verification",
                        "commands": ["lint", "test"],
                        "passIntent": "lint clean, tests green",
                    },
                }
            )
            edges.append({"from": prev, "to": nid})
        prev = nid
    nodes.append({"id": "done", "type": "event", "event": "end"})
    edges.append({"from": prev, "to": "done"})
    return {
        "schemaVersion": "acx.cal/1",
        "id": f"bench-{n}",
        "version": "1.0.0",
        "name": f"Benchmark {n}",
        "description": "A generated workflow used to measure lint, sign and verify time.",
        "license": "Apache-2.0",
        "authors": [{"name": "acxoci bench"}],
        "tags": ["bench"],
        "participants": [
            {
                "alias": f"agent-{k}",
                "bind": "slot",
                "slot": {"role": "devops_engineer", "capabilities": [{"taskType": "build-dag"}]},
            }
            for k in range(3)
        ],
        "rac": [{"id": "code-wiki", "kind": "wiki", "description": "Codebase map.", "required": True}],
        "variables": [{"name": "review", "type": "object"}],
        "limits": {"maxSteps": 10 * n},
        "start": "start",
        "nodes": nodes,
        "edges": edges,
    }


def _timed(clock: Callable[[], float], doc: dict[str, Any], key: PrivateKey) -> dict[str, float]:
    t0 = clock()
    result = lint(doc, publish=True)
    t1 = clock()
    signed = sign_workflow(doc, publisher_id="io.github.bench", key=key, now=NOW, require_publishable=False)
    t2 = clock()
    verdict = verify_workflow(signed, registry=None, now=NOW)
    t3 = clock()
    assert result.ok, [i.text() for i in result.issues[:3]]
    assert verdict.ok and verdict.trust == "portable", verdict.issues
    return {"lint": t1 - t0, "sign": t2 - t1, "verify": t3 - t2, "total": t3 - t0}


def measure(
    sizes: tuple[int, ...], repeat: int, clock: Callable[[], float]
) -> tuple[list[dict[str, float]], list[list[float]]]:
    """Best-of-`repeat` seconds per step (lint --publish, sign, verify) for each size, and every
    round's totals. The sizes are interleaved round by round, so a slow spell on a shared VM
    hits both sizes of that round, not one."""
    docs = [generate(n) for n in sizes]
    key = generate_ed25519()
    runs: list[list[dict[str, float]]] = [[] for _ in sizes]
    for _ in range(repeat):
        for i, doc in enumerate(docs):
            gc.collect()
            runs[i].append(_timed(clock, doc, key))
    best = [min(r, key=lambda x: x["total"]) for r in runs]
    totals = [[r["total"] for r in size_runs] for size_runs in runs]
    return best, totals


def main() -> int:
    """Run both sizes with wall-clock and CPU time, print the numbers; exit 1 if a target is missed."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    ok = True
    for label, clock in (("wall", time.perf_counter), ("cpu", time.process_time)):
        (small, big), (small_t, big_t) = measure((args.nodes, 2 * args.nodes), args.repeat, clock)
        for n, r in ((args.nodes, small), (2 * args.nodes, big)):
            print(
                f"[{label:>4}] {n:>6} nodes: lint --publish {r['lint'] * 1000:6.1f} ms  "
                f"sign {r['sign'] * 1000:6.1f} ms  verify {r['verify'] * 1000:6.1f} ms  "
                f"total {r['total'] * 1000:6.1f} ms"
            )
        # Scaling is judged on the median of the per-round ratios (each round times both sizes
        # back to back); the ratio of the two best-of totals is printed too, for reference.
        ratio = statistics.median(b / a for a, b in zip(small_t, big_t, strict=True))
        best_ratio = big["total"] / small["total"]
        good = small["total"] <= 1.0 and ratio <= 2.2
        ok = ok and good
        print(
            f"[{label:>4}] total at {args.nodes} nodes {small['total']:.3f} s (target <= 1 s); "
            f"2x nodes -> {ratio:.2f}x time, median of {args.repeat} paired rounds "
            f"(best-of ratio {best_ratio:.2f}x; target <= 2.2x): {'PASS' if good else 'MISS'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
