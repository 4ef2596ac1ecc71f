"""Property tests: random valid workflow graphs lint clean; breaking one rule is always caught;
signing any valid graph verifies and any single-value edit is detected."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acxoci.attest.keys import generate_ed25519
from acxoci.workflow.lint import lint
from acxoci.workflow.sign import sign_workflow
from acxoci.workflow.verify import verify_workflow

Doc = dict[str, Any]
NOW = datetime(2026, 11, 30, tzinfo=UTC)
KEY = generate_ed25519()


def _cond(draw: st.DrawFn) -> Doc:
    kind = draw(st.sampled_from(["var", "rac", "not", "all", "any"]))
    leaf_var = {
        "var": "state.phase",
        "op": draw(st.sampled_from(["eq", "ne", "lt", "ge"])),
        "value": draw(st.integers(0, 5)),
    }
    leaf_rac = {"racAvailable": "context"}
    if kind == "var":
        return leaf_var
    if kind == "rac":
        return leaf_rac
    if kind == "not":
        return {"not": leaf_var}
    return {kind: [leaf_var, leaf_rac]}


@st.composite
def valid_workflows(draw: st.DrawFn) -> Doc:
    """A random valid graph: start → hub gateway → shuffled tasks/gateways → end, plus extra
    gateway edges (back edges make cycles, then maxSteps is set) and conditional task branches."""
    n_tasks = draw(st.integers(1, 25))
    n_gw = draw(st.integers(0, 8))
    aliases = [f"agent{i}" for i in range(draw(st.integers(1, 3)))]
    middle: list[Doc] = [
        {
            "id": f"t{i}",
            "type": "task",
            "agent": draw(st.sampled_from(aliases)),
            "requires": {"rac": ["context"]} if draw(st.booleans()) else {},
            "completion": draw(
                st.sampled_from(
                    [
                        {"type": "artifact", "produces": "doc"},
                        {"type": "guardrail", "kind": "milestone"},
                        {"type": "verification", "commands": ["test"], "passIntent": "tests pass"},
                        {"type": "skill-scripts", "scripts": ["run.sh"]},
                    ]
                )
            ),
        }
        for i in range(n_tasks)
    ]
    middle += [
        {
            "id": f"g{i}",
            "type": "gateway",
            "gateway": draw(st.sampled_from(["exclusive", "parallel", "inclusive"])),
        }
        for i in range(n_gw)
    ]
    middle = draw(st.permutations(middle))
    order = ["s", "hub", *[m["id"] for m in middle], "e"]
    edges: list[Doc] = [{"from": a, "to": b} for a, b in itertools.pairwise(order)]
    pos = {nid: i for i, nid in enumerate(order)}
    cyclic = False
    for m in middle:
        if m["type"] == "gateway":
            for target in draw(st.lists(st.sampled_from(order[2:]), max_size=2, unique=True)):
                if target == order[pos[m["id"]] + 1]:
                    continue
                edges.append({"from": m["id"], "to": target})
                cyclic = cyclic or pos[target] <= pos[m["id"]]
        elif draw(st.booleans()) and draw(st.booleans()):
            target = draw(st.sampled_from(order[2:]))
            nxt = order[pos[m["id"]] + 1]
            if target == nxt:
                continue
            first = next(e for e in edges if e["from"] == m["id"] and e["to"] == nxt and "when" not in e)
            first["when"] = _cond(draw)
            edges.append({"from": m["id"], "to": target, "when": {"not": first["when"]}})
            cyclic = cyclic or pos[target] <= pos[m["id"]]
    doc: Doc = {
        "schemaVersion": "acx.cal/1",
        "id": "random-team",
        "version": "1.0.0",
        "name": "Random team",
        "description": "A randomly generated but structurally valid workflow graph.",
        "license": "Apache-2.0",
        "authors": [{"name": "property test"}],
        "tags": ["generated"],
        "participants": [{"alias": a, "bind": "slot", "slot": {"role": "engineer"}} for a in aliases],
        "rac": [{"id": "context", "kind": "wiki", "description": "Project overview.", "required": True}],
        "variables": [{"name": "state", "type": "object"}],
        "start": "s",
        "nodes": [
            {"id": "s", "type": "event", "event": "start"},
            {"id": "hub", "type": "gateway", "gateway": "exclusive"},
            *middle,
            {"id": "e", "type": "event", "event": draw(st.sampled_from(["end", "stop"]))},
        ],
        "edges": draw(st.permutations(edges)),
    }
    if cyclic or draw(st.booleans()):
        doc["limits"] = {"maxSteps": draw(st.integers(1, 1000))}
    return doc


def _first_task(d: Doc) -> Doc:
    return next(n for n in d["nodes"] if n["type"] == "task")


def _set_limits_none(d: Doc) -> None:
    d.pop("limits", None)
    d["edges"].append({"from": "hub", "to": "hub"})


BREAKERS: dict[str, Callable[[Doc], None]] = {
    "unreachable": lambda d: d["nodes"].append({"id": "orphan", "type": "event", "event": "end"}),
    "no-path-to-end": lambda d: (
        d["nodes"].append({"id": "trap", "type": "gateway", "gateway": "exclusive"}),
        d["edges"].extend([{"from": "hub", "to": "trap"}, {"from": "trap", "to": "trap"}]),
    ),
    "dead-end": lambda d: (
        d["nodes"].append({"id": "stuck", "type": "gateway", "gateway": "parallel"}),
        d["edges"].append({"from": "hub", "to": "stuck"}),
    ),
    "terminal-outgoing": lambda d: d["edges"].append({"from": "e", "to": "hub"}),
    "unconditional-branch": lambda d: (
        d["edges"].append({"from": _first_task(d)["id"], "to": "e"}),
        d["edges"].append({"from": _first_task(d)["id"], "to": "hub"}),
    ),
    "cycle-needs-max-steps": _set_limits_none,
    "unknown-agent": lambda d: _first_task(d).update(agent="ghost"),
    "duplicate-node": lambda d: d["nodes"].append(copy.deepcopy(d["nodes"][-1])),
    "duplicate-edge": lambda d: d["edges"].append(copy.deepcopy(d["edges"][0])),
    "edge-unknown-node": lambda d: d["edges"].append({"from": "hub", "to": "nowhere"}),
    "condition-var": lambda d: d["edges"].append(
        {"from": "hub", "to": "e", "when": {"var": "undeclared", "op": "eq", "value": 1}}
    ),
    "condition-rac": lambda d: d["edges"].append(
        {"from": "hub", "to": "e", "when": {"racAvailable": "nope"}}
    ),
    "start-event": lambda d: (
        d["nodes"].append({"id": "s2", "type": "event", "event": "start"}),
        d["edges"].append({"from": "s2", "to": "hub"}),
    ),
    "no-terminal": lambda d: d["nodes"][-1].update(event="handoff"),
    "rac-content": lambda d: d["rac"][0].update(content="the whole wiki"),
    "unknown-rac": lambda d: _first_task(d).update(requires={"rac": ["missing"]}),
    "completion-missing": lambda d: _first_task(d).pop("completion"),
    "start": lambda d: d.update(start="ghost-start"),
}

PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROFILE
@given(valid_workflows())
def test_random_valid_graphs_pass(doc: Doc) -> None:
    result = lint(doc, publish=True)
    assert result.ok, [i.text() for i in result.issues]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_workflows(), st.sampled_from(sorted(BREAKERS)))
def test_breaking_one_rule_is_caught(doc: Doc, rule: str) -> None:
    broken = copy.deepcopy(doc)
    BREAKERS[rule](broken)
    result = lint(broken)
    assert not result.ok
    assert rule in result.rules(), (rule, [i.text() for i in result.issues])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_workflows(), st.data())
def test_signed_graphs_verify_and_any_edit_is_detected(doc: Doc, data: st.DataObject) -> None:
    signed = sign_workflow(doc, publisher_id="io.github.prop", key=KEY, now=NOW)
    assert verify_workflow(signed, registry=None, now=NOW).trust == "portable"
    edited = copy.deepcopy(signed)
    node = data.draw(st.sampled_from(edited["nodes"]))
    node["id"] = node["id"] + "x"
    assert verify_workflow(edited, registry=None, now=NOW).trust == "tampered"
