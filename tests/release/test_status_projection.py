"""`acx release status` is the projection of the journal: its --json validates against
schemas/output/release-status.schema.json (quota state, monitors, gates, spend, next transition,
goal identity), its human form says the same, and the journal itself is typed: the checked-in
journal schema is the one the entry models generate, every line of a real journal validates
against it, and hostile lines are refused by the schema and by the decoder alike."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acxoci.errors import InvalidInput
from acxoci.release.interpreter import goal_status, run_goal
from acxoci.release.journal import Journal, decode_entry, journal_schema
from acxoci.release.plan import load_plan
from acxoci.release.status import project
from tests.harness.env import REPO
from tests.harness.release_state import GOAL, check_status_json
from tests.harness.releases import acx, make_world

JOURNAL_SCHEMA = REPO / "schemas" / "acx.release-journal-1.schema.json"


def test_status_projection_json_and_human(tmp_path: Path, vectors_dir: Path) -> None:
    layout = tmp_path / "layout"
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{layout}"], extra={"observe": {
        "approvals": [{"id": "go-live", "blocks": ["tag:latest"]}]}})
    (tmp_path / "w" / "CHANGELOG.md").write_text("1.0.0: first\n")
    doc = w.plan_doc()
    doc["goal"].update(vision="the sample agent, installable by every consumer",
                       nonGoals=["never move :latest without go-live"],
                       authority=[{"role": "changelog", "source": "CHANGELOG.md"}])
    doc["acceptance"]["criteria"] = ["a consumer under policy.yaml installs :v1"]
    w.write_plan(doc)
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 9
    res = acx("--json", "release", "status", GOAL, "--state-dir", str(w.state))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    check_status_json(out)
    assert out["quota"]["state"] == "operator_gate"
    assert out["gates"][0]["blocks"] == [f"tag:latest:agent@oci-layout:{layout}"]
    assert out["identity"]["vision"].startswith("the sample agent")
    roles = [a["role"] for a in out["identity"]["authority"]]
    assert roles == ["plan", "policy", "trust-registry", "changelog"]
    assert all(a["digest"].startswith("sha256:") for a in out["identity"]["authority"])
    assert out["nextTransition"]["command"] == f"acx release approve {GOAL} go-live --by NAME"
    assert out["quota"]["spend"]["total"] == {"requests": 0, "bytes": 0, "publishes": 0}  # a layout
    human = acx("release", "status", GOAL, "--state-dir", str(w.state))
    text = human.stdout
    assert text.startswith("BLOCKED release sample-1") or text.startswith("OPEN release sample-1"), text
    for needle in ("vision: the sample agent", "non-goal: never move :latest", "acceptance: a consumer",
                   "authority: plan", "quota: operator_gate", "spent so far: 0 request(s)",
                   "gate approval:go-live (approval)", "next: decide"):
        assert needle in text, (needle, text)


def test_status_projection_the_journal_schema_is_the_models(tmp_path: Path, vectors_dir: Path) -> None:
    checked_in = json.loads(JOURNAL_SCHEMA.read_text())
    assert checked_in == journal_schema(), ("regenerate schemas/acx.release-journal-1.schema.json from "
                                            "acxoci.release.journal.journal_schema()")
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"])
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 0
    validator = jsonschema.Draft202012Validator(checked_in)
    lines = (w.state / GOAL / "journal.jsonl").read_text().splitlines()
    kinds = set()
    for n, line in enumerate(lines, 1):
        obj = json.loads(line)
        validator.validate(obj)
        decode_entry(obj, f"line {n}")
        kinds.add(obj["type"])
    assert {"goal", "run", "effect", "closeout"} <= kinds
    assert len(Journal(w.state / GOAL / "journal.jsonl").entries()) == len(lines)


@pytest.mark.parametrize("line", [
    {"type": "effect", "seq": 2, "at": "x", "effect": "e", "from": "open", "to": "claimed"},  # no fifth state
    {"type": "effect", "seq": "2", "at": "x", "effect": "e", "from": "open", "to": "done"},  # no coercion
    {"type": "spend", "seq": 2, "at": "x", "key": "k", "attemptKey": "a", "instance": "i", "window": "w",
     "registry": "r", "effect": "e", "publishes": True},  # true is no number
    {"type": "stop", "seq": 2, "at": "x", "class": "gate", "reason": "r"},  # only two stop classes
    {"type": "run", "seq": 2, "at": "x", "event": "start", "runner": "r", "sudo": True},  # unknown field
    {"type": "teleport", "seq": 2, "at": "x"},
    {"type": "approval", "seq": 2, "at": "x", "approval": "a", "by": None},
])
def test_status_projection_hostile_lines_are_refused_by_schema_and_models(line: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(journal_schema())
    assert list(validator.iter_errors(line)), line
    with pytest.raises(InvalidInput):
        decode_entry(line, "line 2")


def test_status_projection_refuses_a_journal_line_of_another_shape(tmp_path: Path, vectors_dir: Path) -> None:
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"])
    assert run_goal(load_plan(w.plan), root=w.state).exit_code() == 0
    path = w.state / GOAL / "journal.jsonl"
    instance = goal_status(GOAL, root=w.state).instance
    spend = {"type": "spend", "seq": 99, "at": "x", "key": "k", "attemptKey": "a", "instance": instance,
             "window": "w", "registry": "r", "effect": "e", "requests": -5}
    with path.open("ab") as fh:  # well-formed lines the ledger must not count: a negative spend, another
        fh.write(json.dumps(spend).encode() + b"\n")  # instance's spend
        old = {**spend, "seq": 100, "key": "k2", "instance": "old/1", "requests": 7}
        fh.write(json.dumps(old).encode() + b"\n")
    ledger = goal_status(GOAL, root=w.state).ledger
    assert (ledger.rejected, ledger.foreign, ledger.net().requests) == (1, 1, 0)
    with path.open("ab") as fh:
        fh.write(b'{"type":"effect","seq":101,"at":"x","effect":"prepare:agent","from":"open","to":1}\n')
    bad = acx("release", "status", GOAL, "--state-dir", str(w.state))
    assert bad.returncode == 3 and "line" in bad.stderr and "/to" in bad.stderr


def _mutations(value: Any, rng: random.Random) -> Any:
    """`value` with one leaf somewhere replaced by a hostile one (iteratively, no recursion)."""
    hostile: list[Any] = [None, True, -1, 0, 2**62, 1e308, -1e308, "", "x" * 300, "9999-99-99T99:99:99Z",
                          [], {}, "2026-11-30T12:00:00Z", "open", "done", "blocked", "gate", "\u202e\x1b[2J"]
    doc = json.loads(json.dumps(value))
    node: Any = doc
    for _ in range(rng.randint(1, 4)):
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
            if isinstance(node[key], dict | list) and node[key] and rng.random() < 0.6:
                node = node[key]
                continue
            node[key] = rng.choice(hostile)
            return doc
        if isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if isinstance(node[i], dict | list) and node[i] and rng.random() < 0.6:
                node = node[i]
                continue
            node[i] = rng.choice(hostile)
            return doc
        break
    return doc


def test_status_projection_hostile_journals_never_crash(tmp_path: Path, vectors_dir: Path) -> None:
    """A journal rewritten by hand or by an attacker: every projection either succeeds or is a typed
    InvalidInput naming the journal; never an untyped crash (fixed seed, a few hundred journals)."""
    extra = {"observe": {"approvals": [{"id": "go", "blocks": ["tag:latest"]}]},
             "quota": {"registries": [{"host": "h", "requests": 9}]}}
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{tmp_path / 'layout'}"], extra=extra)
    run_goal(load_plan(w.plan), root=w.state)
    lines = [json.loads(x) for x in (w.state / GOAL / "journal.jsonl").read_text().splitlines()]
    inst, at = lines[0]["instance"], "2026-11-30T12:00:00.000Z"
    lines += [{"type": "spend", "seq": 90, "at": at, "key": "k@h", "attemptKey": "k", "instance": inst,
               "window": at, "registry": "h", "effect": "x", "requests": 3, "publishes": 1,
               "estimated": True},
              {"type": "void", "seq": 91, "at": at, "key": "void:k@h", "voids": "k@h", "instance": inst,
               "reason": "r", "publishes": 1},
              {"type": "signal", "seq": 92, "at": at, "registry": "h", "signal": "throttled", "until": at},
              {"type": "signal", "seq": 93, "at": at, "registry": "h", "signal": "unhealthy", "status": 503},
              {"type": "pause", "seq": 94, "at": at, "by": "ops"},
              {"type": "stop", "seq": 95, "at": at, "class": "repair_required", "reason": "r"},
              {"type": "closeout", "seq": 96, "at": at, "event": "failed", "failure": {"class": "gate"}}]
    rng = random.Random(36)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(300):
        mutated = list(lines)
        i = rng.randrange(len(mutated))
        mutated[i] = _mutations(mutated[i], rng)
        try:
            project([decode_entry(x, f"line {n}") for n, x in enumerate(mutated, 1)], now=now).to_json()
            outcomes["ok"] += 1
        except InvalidInput:
            outcomes["refused"] += 1
    assert outcomes["ok"] and outcomes["refused"], outcomes
