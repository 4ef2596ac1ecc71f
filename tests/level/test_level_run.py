"""Solvers and runs: the reference solver's trajectory, signed in-toto evidence, pluggable solvers."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.canonical import jcs, sha256_digest
from acxoci.attest.dsse import Envelope
from acxoci.attest.intoto import Statement
from acxoci.attest.keys import generate_ed25519
from acxoci.errors import InvalidInput, TransientError, UsageError
from acxoci.level.benchmark import demo_suite
from acxoci.level.run import TRAJECTORY_PREDICATE, run_level
from acxoci.level.solver import (
    ReferenceSolver,
    SolveRequest,
    SubprocessSolver,
    load_solver,
    trajectory_of,
)

ROM_EXAMPLE = "sha256:f479be021b8ea2e55cc6e3e33b95df9d151196548dfc854dedbe578be7120642"


def test_reference_trajectory_matches_reference_evidence(vectors_dir: Path) -> None:
    example = json.loads((vectors_dir / "level" / "level-credential.example.json").read_text())
    ev = example["evidence"][0]
    task = next(t for t in demo_suite().tasks if t.id == "dag-task-001")
    req = SolveRequest("acx-bench-dag-de", "2026.07.1", task, Path("x.acx"), ROM_EXAMPLE)
    traj = trajectory_of(req, ReferenceSolver(33).solve(req))
    assert sha256_digest(jcs(traj)) == ev["acx:digestMultibase"]
    assert json.loads(base64.b64decode(ev["acx:dsseEnvelope"]["payload"])) == traj


def test_run_signs_each_trajectory_as_an_intoto_statement() -> None:
    key = generate_ed25519()
    r = run_level(
        demo_suite(),
        cartridge=Path("c.acx"),
        rom_digest=ROM_EXAMPLE,
        solver=ReferenceSolver(33),
        signer=key,
        draw_count=31,
    )
    assert r.games_played == 31
    g = r.games[0]
    env = Envelope.from_json(g.envelope)
    env.verify(key.public())
    assert env.payload_type == "application/vnd.in-toto+json"
    stmt = Statement.from_bytes(env.payload)
    assert stmt.predicate_type == TRAJECTORY_PREDICATE
    assert stmt.predicate["trajectory"] == g.trajectory
    assert (
        "sha256:" + stmt.subjects[0].digest["sha256"]
        == g.trajectory_digest
        == sha256_digest(jcs(g.trajectory))
    )
    assert stmt.subjects[1].digest["sha256"] == ROM_EXAMPLE.removeprefix("sha256:")
    assert env.payload == jcs(stmt.to_json())


def test_run_rejects_a_bad_rom_digest() -> None:
    with pytest.raises(InvalidInput):
        run_level(
            demo_suite(),
            cartridge=Path("c"),
            rom_digest="sha256:abc",
            solver=ReferenceSolver(),
            signer=generate_ed25519(),
        )


def _python_solver(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "passed": request["task"]["difficulty"] < 30,
        "trajectory": {"tool": "py", "task": request["task"]["id"]},
    }


def test_python_entry_point_solver() -> None:
    slv = load_solver(f"python:{__name__}:_python_solver")
    r = run_level(
        demo_suite(),
        cartridge=Path("c"),
        rom_digest=ROM_EXAMPLE,
        solver=slv,
        signer=generate_ed25519(),
        draw_count=40,
    )
    assert all(g.passed == (g.task.difficulty < 30) for g in r.games)
    assert r.games[0].trajectory["steps"]["tool"] == "py"
    assert slv.name.startswith("python:")


def test_subprocess_solver_protocol(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, sys\n"
        "req = json.load(sys.stdin)\n"
        "assert req['cartridge'].endswith('c.acx') and req['romDigest'].startswith('sha256:')\n"
        "print(json.dumps({'passed': req['task']['difficulty'] % 2 == 0, 'trajectory': ['read', 'write']}))\n"
    )
    slv = load_solver(f"cmd:{sys.executable} {script}")
    assert isinstance(slv, SubprocessSolver)
    r = run_level(
        demo_suite(),
        cartridge=tmp_path / "c.acx",
        rom_digest=ROM_EXAMPLE,
        solver=slv,
        signer=generate_ed25519(),
        draw_count=3,
    )
    assert [g.passed for g in r.games] == [g.task.difficulty % 2 == 0 for g in r.games]
    assert r.games[0].trajectory["steps"] == ["read", "write"]


def test_subprocess_solver_failures(tmp_path: Path) -> None:
    task = demo_suite().tasks[0]
    req = SolveRequest("b", "1", task, tmp_path / "c.acx", ROM_EXAMPLE)
    crash = SubprocessSolver((sys.executable, "-c", "import sys; sys.exit(3)"))
    with pytest.raises(TransientError, match="exited 3"):
        crash.solve(req)
    garbage = SubprocessSolver((sys.executable, "-c", "print('hello')"))
    with pytest.raises(InvalidInput, match="JSON"):
        garbage.solve(req)
    slow = SubprocessSolver((sys.executable, "-c", "import time; time.sleep(5)"), timeout=0.3)
    res = slow.solve(req)
    assert res.passed is False and "timeout" in res.steps["error"]


def test_load_solver_errors() -> None:
    with pytest.raises(UsageError):
        load_solver("magic")
    with pytest.raises(UsageError):
        load_solver("python:no_such_module_xyz:f")
    assert load_solver("reference", competence=24).name == "reference(competence=24)"
