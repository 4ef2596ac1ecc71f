"""The pure loop evaluator: phase order, verification retries, v1.1 held-in/held-out regression
acceptance, stop conditions, budget and exactly one report per terminating condition."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acxoci.errors import InvalidInput
from acxoci.policy.evaluator import SuiteResult, evaluate, regression_accepted
from acxoci.policy.limits import ResourceLimits
from acxoci.policy.loop_context import LoopContextPolicy, default_policy, parse_policy
from tests.harness.cli import run_acx
from tests.harness.env import REPO

EXAMPLE_POLICY = REPO / "examples" / "agent-package" / "loop-context-policy.json"


def policy(**loop: Any) -> LoopContextPolicy:
    doc = default_policy()
    doc["loop"].update(loop)
    doc["loop"]["verification"]["regression"] = {
        "heldInSuite": "in",
        "heldOutSuite": "out",
        "acceptIf": "no-regression-on-held-in-and-held-out",
    }
    doc["budget"] = {
        "tokenSpend": {"dailyPerProject": 10_000, "dailyPerAgent": 1_000, "dailyGlobal": 100_000},
        "concurrency": {
            "maxCommandsPerStation": 1,
            "maxStationsPerProject": 1,
            "maxGlobalInFlightCommands": 1,
        },
        "timeouts": {"defaultCommandSec": 1, "maxCommandSec": 2},
        "killSwitch": {"enabled": False},
    }
    return parse_policy(doc)


def ph(name: str, **kw: Any) -> dict[str, Any]:
    return {"type": "phase", "phase": name, **kw}


GOOD = {"heldIn": {"baseline": 0.5, "candidate": 0.6}, "heldOut": {"baseline": 0.4, "candidate": 0.4}}
CYCLE = ["plan", "gather_context", "act"]


def test_next_phase_follows_cycle_and_wraps() -> None:
    p = policy()
    assert evaluate(p, []).next_phase == "plan"
    d = evaluate(p, [ph(c) for c in CYCLE])
    assert (d.kind, d.next_phase, d.turns) == ("continue", "verify", 3)
    d = evaluate(p, [*map(ph, CYCLE), ph("verify", passed=True, regression=GOOD), ph("reflect")])
    assert (d.kind, d.next_phase) == ("continue", "plan")


def test_out_of_order_phase_is_rejected_with_path() -> None:
    with pytest.raises(InvalidInput) as exc:
        evaluate(policy(), [ph("plan"), ph("act")])
    assert exc.value.where == "$.events[1].phase"


def test_failed_verification_goes_back_to_act_then_blocks() -> None:
    p = policy()
    d = evaluate(p, [*map(ph, CYCLE), ph("verify", passed=False)])
    assert (d.kind, d.next_phase) == ("continue", "act")
    d = evaluate(
        p,
        [
            *map(ph, CYCLE),
            ph("verify", passed=False),
            ph("act"),
            ph("verify", passed=False),
            ph("act"),
            ph("verify", passed=False),
        ],
    )
    assert (d.kind, d.condition, d.action) == ("stop", "blocked", "await_human")
    assert d.report is not None and d.report.outcome == "blocked" and d.report.user_attention_required


@pytest.mark.parametrize(
    ("results", "ok"),
    [
        ({"heldIn": SuiteResult(0.5, 0.6), "heldOut": SuiteResult(0.4, 0.4)}, True),
        ({"heldIn": SuiteResult(0.5, 0.6), "heldOut": SuiteResult(0.4, 0.39)}, False),
        ({"heldIn": SuiteResult(0.5, 0.49), "heldOut": SuiteResult(0.4, 0.9)}, False),
        ({"heldIn": SuiteResult(0.5, 0.6)}, False),
    ],
)
def test_regression_acceptance_needs_both_suites(results: dict[str, SuiteResult], ok: bool) -> None:
    assert regression_accepted(policy(), results)[0] is ok


def test_regression_on_held_out_counts_as_failed_verification() -> None:
    bad = {"heldIn": {"baseline": 0.5, "candidate": 0.7}, "heldOut": {"baseline": 0.4, "candidate": 0.3}}
    d = evaluate(policy(), [*map(ph, CYCLE), ph("verify", passed=True, regression=bad)])
    assert (d.kind, d.next_phase) == ("continue", "act")
    assert any("heldOut" in n for n in d.notes)


def test_no_suites_declared_means_no_regression_gate() -> None:
    doc = default_policy()
    p = parse_policy(doc)
    d = evaluate(p, [*map(ph, CYCLE), ph("verify", passed=True)])
    assert d.next_phase == "reflect"


@pytest.mark.parametrize(
    ("event", "condition", "action", "outcome"),
    [
        ({"type": "condition", "when": "completed"}, "completed", "stop", "completed"),
        ({"type": "condition", "when": "pr_ready"}, "pr_ready", "handoff", "handoff"),
        ({"type": "condition", "when": "needs_input"}, "needs_input", "await_human", "needs-input"),
        ({"type": "guardrail", "kind": "stop"}, "guardrail_stop", "await_human", "blocked"),
        ({"type": "guardrail", "kind": "blocked"}, "blocked", "await_human", "blocked"),
        ({"type": "tokens", "used": 1_000}, "budget_exhausted", "handoff", "handoff"),
    ],
)
def test_stop_conditions_emit_exactly_one_report(
    event: dict[str, Any], condition: str, action: str, outcome: str
) -> None:
    events = [ph("plan"), event, ph("gather_context"), {"type": "condition", "when": "completed"}]
    d = evaluate(policy(), events)
    assert (d.kind, d.condition, d.action) == ("stop", condition, action)
    assert d.events_consumed == 2  # later events are not evaluated: one report only
    assert d.report is not None and d.report.outcome == outcome
    assert d.report.user_attention_required is (action in ("handoff", "await_human"))
    assert json.loads(json.dumps(d.to_json()))["report"]["outcome"] == outcome


def test_max_turns_reports_and_is_resumable() -> None:
    p = policy(maxTurns=2)
    d = evaluate(p, [ph("plan"), ph("gather_context"), ph("act")])
    assert (d.condition, d.action, d.resumable, d.turns) == ("max_turns", "report_continue", True, 2)
    assert d.report is not None and d.report.outcome == "progressed"


def test_host_limits_tighten_the_budget() -> None:
    d = evaluate(
        policy(),
        [{"type": "tokens", "used": 300}],
        host_limits=ResourceLimits({"tokenSpend.dailyPerAgent": 200}),
    )
    assert d.condition == "budget_exhausted"
    assert evaluate(policy(), [{"type": "tokens", "used": 300}]).kind == "continue"


def test_undeclared_condition_defaults_and_says_so() -> None:
    p = policy(stopConditions=[{"when": "completed", "action": "stop"}])
    d = evaluate(p, [{"type": "condition", "when": "needs_input"}])
    assert (d.action, d.declared) == ("await_human", False)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "nap"},
        {"type": "condition", "when": "max_turns"},
        {"type": "tokens", "used": -1},
        {"type": "phase", "phase": "plan", "x": 1} | {"phase": "verify"},
    ],
)
def test_malformed_events_are_rejected(event: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        evaluate(policy(), [event])


def test_cli_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(
        json.dumps(
            {
                "events": [
                    ph("plan"),
                    ph("gather_context"),
                    ph("act"),
                    {"type": "condition", "when": "pr_ready"},
                ]
            }
        )
    )
    out = run_acx(capsys, "--json", "policy", "simulate", str(EXAMPLE_POLICY), str(trace))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["condition"], data["action"], data["report"]["outcome"]) == (
        "pr_ready",
        "handoff",
        "handoff",
    )
