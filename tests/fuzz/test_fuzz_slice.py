"""The fixed-seed slice of `make fuzz` that runs in the normal suite: every target, a few dozen
inputs each, the same inputs every run. Each target's unmutated seed must be accepted (so the
judge can see a bent verdict at all), and no input may crash, bend a verdict or take a second.
The full campaign is `make fuzz` (docs/reliability.md)."""

from __future__ import annotations

import pytest

from tests.fuzz.engine import run_target
from tests.fuzz.targets import TARGETS, Target

SLICE_SEED = 20
SLICE_INPUTS = 40


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_fixed_seed_slice(target: Target) -> None:
    want = min(SLICE_INPUTS, target.slice_inputs)
    stats = run_target(target, seconds=60, seed=SLICE_SEED, max_inputs=want)
    assert stats.inputs >= want // 2, stats
    problems = [f for f in stats.failures if f["kind"] != "baseline"]
    assert stats.untyped == 0 and not problems, "\n\n".join(
        f"{f['kind']}: {f.get('input')}\n{f.get('shrunk') or f.get('detail')}" for f in problems
    )
    if target.baseline is not None:
        assert stats.baseline == "accepted", stats.failures
    assert stats.bent == 0, stats.failures
    assert stats.slowest_s < 1.0, (stats.slowest_s, stats.slowest_input)


def test_judge_catches_a_bent_verdict() -> None:
    """The judge is not a no-op: a target whose verifier trusts anything is reported as bent."""
    from tests.fuzz import targets as tg

    def trusting_run(s: object, data: bytes) -> str:
        return tg.run_workflow(s, data) if data == b"" else "accepted although the signed body changed"

    bad = Target("workflow.trust-all", TARGETS[2].strategy, trusting_run)
    stats = run_target(bad, seconds=30, seed=SLICE_SEED, max_inputs=5)
    assert stats.bent >= 1 and stats.failures[0]["kind"] == "bent", stats


def test_campaign_script_prints_the_table_and_the_summary_line() -> None:
    import re
    import subprocess
    import sys

    from tests.harness.env import REPO

    r = subprocess.run([sys.executable, "scripts/fuzz.py", "--seconds", "3", "--seed", "9", "--targets",
                        "image.reference,www-authenticate", "--database", ""], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for name in ("image.reference", "www-authenticate"):
        assert re.search(rf"(?m)^{re.escape(name)}\s+\d+", r.stdout), r.stdout
    last = r.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"fuzz: \d+ inputs, 0 untyped, slowest \d+\.\d{3} s, peak \d+ MB", last), last
