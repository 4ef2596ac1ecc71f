"""Run one fuzz target for a time budget with hypothesis and count what came out: inputs, accepted,
refused (a verdict or a typed error), untyped errors (crashes), bent verdicts (the judge said a
changed signed document was trusted), the slowest input and this process's peak RSS.

Hypothesis runs in chunks of examples, each with its own seed derived from the campaign seed, so
a run is reproducible and the time budget is checked between chunks. An untyped error is raised
back into hypothesis, which shrinks it and reports the smallest input; the campaign then goes on
with the next chunk."""

from __future__ import annotations

import re
import resource
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hyp_seed
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.reporting import with_reporter

from tests.fuzz.targets import BY_NAME, Target, get_seeds

CHUNK = 250
KNOWN = ("accepted", "refused", "parsed")


@dataclass
class Stats:
    """What one target's run produced (JSON-serialisable)."""

    target: str
    inputs: int = 0
    accepted: int = 0
    refused: int = 0
    parsed: int = 0
    typed: int = 0
    untyped: int = 0
    bent: int = 0
    slowest_s: float = 0.0  # CPU seconds of the slowest input (the machine's CPU is shared)
    slowest_wall_s: float = 0.0  # wall-clock seconds of the slowest input, waiting included
    slowest_input: str = ""
    peak_rss_mb: float = 0.0
    seconds: float = 0.0
    baseline: str = ""
    failures: list[dict[str, str]] = field(default_factory=list)
    signatures: dict[str, int] = field(default_factory=dict)  # distinct findings → how often seen

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _Found(Exception):
    """Raised into hypothesis for an untyped error or a bent verdict so it shrinks the input."""


def _short(x: Any, limit: int = 240) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def run_target(
    target: Target | str,
    *,
    seconds: float,
    seed: int = 0,
    max_inputs: int | None = None,
    database: Path | None = None,
) -> Stats:
    """Fuzz `target` for `seconds` (or `max_inputs` inputs, whichever comes first)."""
    t = BY_NAME[target] if isinstance(target, str) else target
    s = get_seeds()
    stats = Stats(t.name)
    started = time.monotonic()
    if t.baseline is not None:  # the judge must be live: the unmutated seed is accepted
        stats.baseline = t.run(s, t.baseline(s))
        if stats.baseline != "accepted":
            stats.bent += 1
            stats.failures.append({"kind": "baseline", "detail": f"unmutated seed gave {stats.baseline!r}"})
    strategy = t.strategy(s)
    end = started + seconds
    db = DirectoryBasedExampleDatabase(str(database)) if database is not None else None
    chunk = 0
    while time.monotonic() < end and (max_inputs is None or stats.inputs < max_inputs):
        n = CHUNK if max_inputs is None else max(1, min(CHUNK, max_inputs - stats.inputs))
        state = {"found": False}

        body = _body(t, s, stats, end, state)
        test = given(strategy)(body)
        test = hyp_seed(seed * 100_003 + chunk)(test)
        test = settings(
            max_examples=n,
            deadline=None,
            database=db,
            derandomize=False,
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink] if db else
            [Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            print_blob=False,
        )(test)
        lines: list[str] = []
        try:
            with with_reporter(lines.append):
                test()
        except Exception as exc:  # hypothesis re-raises the shrunk finding
            notes = "\n".join([*lines, *getattr(exc, "__notes__", []), f"{type(exc).__name__}: {exc}"])
            if stats.failures:
                stats.failures[-1]["shrunk"] = notes[-4000:]
        chunk += 1
    stats.seconds = round(time.monotonic() - started, 2)
    stats.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    stats.slowest_s = round(stats.slowest_s, 4)
    stats.slowest_wall_s = round(stats.slowest_wall_s, 4)
    return stats


def _body(t: Target, s: Any, stats: Stats, end: float, state: dict[str, bool]) -> Any:
    """The hypothesis test body for one chunk: count and time each input, raise on a finding."""

    def body(x: Any) -> None:
        if state["found"]:  # shrinking a finding: replay without counting
            _classify(t, s, x, None)
            return
        if time.monotonic() >= end:
            return
        w0, c0 = time.perf_counter(), time.process_time()
        outcome, tb = _classify(t, s, x, stats)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        stats.inputs += 1
        stats.slowest_wall_s = max(stats.slowest_wall_s, wall)
        if cpu > stats.slowest_s:
            stats.slowest_s, stats.slowest_input = cpu, _short(x)
        if outcome in ("untyped", "bent"):
            sig = _signature(outcome, tb)
            seen = stats.signatures.get(sig, 0)
            stats.signatures[sig] = seen + 1
            if seen:  # known finding: counted, not shrunk again, so the campaign keeps its pace
                return
            state["found"] = True
            stats.failures.append({"kind": outcome, "input": _short(x, 2000), "detail": tb})
            _classify(t, s, x, None)  # replay: raises the same error, which hypothesis shrinks
            raise _Found(outcome)  # pragma: no cover - only if the input is not deterministic

    return body


def _signature(outcome: str, detail: str) -> str:
    """What makes two findings the same: the exception and the innermost frame of our code."""
    if outcome == "bent":
        return "bent: " + detail[:80]
    frames = re.findall(r'File "([^"]*/(?:acxoci|attest)/[^"]+)", line (\d+)', detail)
    last = detail.strip().splitlines()[-1] if detail.strip() else ""
    if not frames:  # raised by the target itself (a command that exited 70): its message says what
        return last[:200]
    where = "/".join(frames[-1][0].split("/")[-2:]) + ":" + frames[-1][1]
    return f"{last.split(':', 1)[0]} at {where}"


def _classify(t: Target, s: Any, x: Any, stats: Stats | None) -> tuple[str, str]:
    """Run one input; returns (outcome, traceback-or-complaint) and counts it into `stats`."""
    try:
        outcome = t.run(s, x)
    except t.typed:
        if stats is not None:
            stats.typed += 1
            stats.refused += 1
        return "refused", ""
    except Exception as exc:
        if stats is None:
            raise
        stats.untyped += 1
        return "untyped", "".join(traceback.format_exception(exc))[-4000:]
    if outcome not in KNOWN:
        if stats is None:
            raise _Found(outcome)
        stats.bent += 1
        return "bent", outcome
    if stats is not None:
        setattr(stats, outcome, getattr(stats, outcome) + 1)
    return outcome, ""
