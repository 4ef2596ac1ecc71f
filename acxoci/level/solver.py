"""The solver protocol: something that attempts one benchmark task with a cartridge and says
pass/fail plus a trajectory. Built in: the reference's deterministic demo solver. Pluggable: a
Python entry point (`python:module:function`) or a subprocess command (`cmd:argv…`), so a production
verifier can plug in a sandboxed agent without changing anything else.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from acxoci.attest.canonical import loads_strict
from acxoci.errors import InvalidInput, TransientError, UsageError
from acxoci.level.benchmark import Task

REFERENCE_SALT: Final = "acx-benchmark-v1"
MAX_SOLVER_OUTPUT: Final = 4 * 1024 * 1024


@dataclass(frozen=True)
class SolveRequest:
    """What a solver gets: the task, the benchmark it belongs to, and the cartridge (path + ROM digest)."""

    benchmark_id: str
    benchmark_version: str
    task: Task
    cartridge: Path
    rom_digest: str

    def to_json(self) -> dict[str, Any]:
        """The request as sent to a subprocess solver on stdin."""
        return {"benchmark": self.benchmark_id, "version": self.benchmark_version,
                "task": self.task.to_json(), "cartridge": str(self.cartridge), "romDigest": self.rom_digest}


@dataclass(frozen=True)
class SolveResult:
    """pass/fail plus whatever trajectory detail the solver recorded (may be empty)."""

    passed: bool
    steps: Any = field(default=None)


class Solver(Protocol):
    """Anything with a name that can attempt one task."""

    @property
    def name(self) -> str:
        """A stable, human-readable solver identifier (goes into the evidence)."""
        ...

    def solve(self, request: SolveRequest) -> SolveResult:
        """Attempt the task; raise an AcxError only if the solver itself is broken."""
        ...


def trajectory_of(request: SolveRequest, result: SolveResult) -> dict[str, Any]:
    """The evidence trajectory: the reference's `{benchmark, difficulty, passed, romDigest, task,
    version}`, plus `steps` when the solver recorded any."""
    traj: dict[str, Any] = {
        "benchmark": request.benchmark_id,
        "difficulty": request.task.to_json()["difficulty"],
        "passed": result.passed,
        "romDigest": request.rom_digest,
        "task": request.task.id,
        "version": request.benchmark_version,
    }
    if result.steps is not None:
        traj["steps"] = result.steps
    return traj


@dataclass(frozen=True)
class ReferenceSolver:
    """The reference's deterministic demo solver: pass iff u < 1/(1+e^(−0.6(competence−difficulty)))."""

    competence: float = 33.0

    @property
    def name(self) -> str:
        """`reference(competence=N)`."""
        c = int(self.competence) if float(self.competence).is_integer() else self.competence
        return f"reference(competence={c})"

    def solve(self, request: SolveRequest) -> SolveResult:
        """u = int(sha256(romDigest|id|acx-benchmark-v1)[:13], 16) / 2^52."""
        h = hashlib.sha256(f"{request.rom_digest}|{request.task.id}|{REFERENCE_SALT}".encode()).hexdigest()
        u = int(h[:13], 16) / 2 ** 52
        p = 1.0 / (1.0 + math.exp(-0.6 * (self.competence - request.task.difficulty)))
        return SolveResult(u < p)


@dataclass(frozen=True)
class CallableSolver:
    """A Python callable `f(request: dict) -> {"passed": bool, "trajectory"?: any}` (or a SolveResult)."""

    func: Callable[[dict[str, Any]], Any]
    label: str

    @property
    def name(self) -> str:
        """`python:<module:function>`."""
        return f"python:{self.label}"

    def solve(self, request: SolveRequest) -> SolveResult:
        """Call the function and parse what it returns."""
        out = self.func(request.to_json())
        if isinstance(out, SolveResult):
            return out
        return _parse_output(out, self.name)


@dataclass(frozen=True)
class SubprocessSolver:
    """A command that reads the request JSON on stdin and writes `{"passed", "trajectory"?}` on stdout.

    A timeout counts as a failed game; a crash or unreadable output aborts the run."""

    argv: tuple[str, ...]
    timeout: float = 600.0

    @property
    def name(self) -> str:
        """`cmd:<argv>`."""
        return "cmd:" + shlex.join(self.argv)

    def solve(self, request: SolveRequest) -> SolveResult:
        """Run the command once for this task."""
        try:
            proc = subprocess.run(list(self.argv), input=json.dumps(request.to_json()).encode(),
                                  capture_output=True, timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired:
            return SolveResult(False, {"error": f"timeout after {self.timeout}s"})
        except OSError as exc:
            raise TransientError(f"solver {self.name} could not start: {exc}") from exc
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip()[-300:]
            raise TransientError(f"solver {self.name} exited {proc.returncode} on {request.task.id}: {tail}")
        if len(proc.stdout) > MAX_SOLVER_OUTPUT:
            raise InvalidInput(f"solver {self.name} wrote more than {MAX_SOLVER_OUTPUT} bytes")
        try:
            doc = loads_strict(proc.stdout)
        except ValueError as exc:
            raise InvalidInput(f"solver {self.name} did not print JSON for {request.task.id}: {exc}") from exc
        return _parse_output(doc, self.name)


def _parse_output(doc: Any, name: str) -> SolveResult:
    if not isinstance(doc, dict) or not isinstance(doc.get("passed"), bool):
        raise InvalidInput(f"solver {name} must return an object with a boolean 'passed'")
    return SolveResult(doc["passed"], doc.get("trajectory"))


def load_solver(spec: str, *, competence: float = 33.0, timeout: float = 600.0) -> Solver:
    """`reference` | `python:module:function` | `cmd:<command line>` → a Solver."""
    if spec == "reference":
        return ReferenceSolver(competence)
    if spec.startswith("python:"):
        target = spec[len("python:"):]
        mod_name, _, func_name = target.partition(":")
        if not mod_name or not func_name:
            raise UsageError(f"solver {spec!r}: expected python:module:function")
        try:
            func = getattr(importlib.import_module(mod_name), func_name)
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"solver {spec!r} cannot be loaded: {exc}") from exc
        if not callable(func):
            raise UsageError(f"solver {spec!r} is not callable")
        return CallableSolver(func, target)
    if spec.startswith("cmd:"):
        argv = tuple(shlex.split(spec[len("cmd:"):]))
        if not argv:
            raise UsageError("solver 'cmd:' needs a command")
        return SubprocessSolver(argv, timeout)
    raise UsageError(f"unknown solver {spec!r}", hint="use reference, python:module:function or cmd:COMMAND")
