"""Loop + context policy: every rule has a document that breaks it, and the finding names the
rule and the JSON path; plus the v1 reader, unknown versions and the model."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from acxoci.errors import InvalidInput
from acxoci.policy._schema import ERROR, WARNING
from acxoci.policy.loop_context import (
    V1,
    default_policy,
    errors_only,
    parse_policy,
    read_as_v1,
    validate_policy,
)
from tests.harness.env import REPO

Doc = dict[str, Any]


def base() -> Doc:
    doc = default_policy()
    doc["loop"]["subAgents"] = [
        {
            "id": "searcher",
            "description": "Read-only search.",
            "promptRef": "rom/skills/x/SKILL.md",
            "tools": ["acx:search"],
            "contextReturnBudgetTokens": 1500,
            "concurrency": "parallel",
            "mode": "sync",
        }
    ]
    doc["budget"] = {
        "tokenSpend": {"dailyPerProject": 100, "dailyPerAgent": 50, "dailyGlobal": 1000},
        "concurrency": {
            "maxCommandsPerStation": 1,
            "maxStationsPerProject": 2,
            "maxGlobalInFlightCommands": 3,
        },
        "timeouts": {"defaultCommandSec": 60, "maxCommandSec": 120},
        "killSwitch": {"enabled": False, "reason": None},
    }
    return doc


def v1_base() -> Doc:
    doc = read_as_v1(base())
    doc["loop"]["cycle"] = ["gather_context", "act", "verify"]
    return doc


def test_base_documents_are_valid() -> None:
    assert validate_policy(base()) == []
    assert validate_policy(v1_base()) == []
    example = json.loads((REPO / "examples/agent-package/loop-context-policy.json").read_text())
    assert validate_policy(example) == []


def _set(path: str, value: Any) -> Callable[[Doc], None]:
    def f(doc: Doc) -> None:
        node: Any = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        last = keys[-1]
        if value is _DEL:
            del node[int(last) if last.isdigit() else last]
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return f


_DEL = object()

CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    (
        "unknown schemaVersion",
        _set("schemaVersion", "acx.loop-context-policy/2"),
        "schemaVersion.known",
        "$.schemaVersion",
    ),
    ("loop required", _set("loop", _DEL), "loop.closed", "$.loop"),
    ("context required", _set("context", _DEL), "context.closed", "$.context"),
    ("unknown top-level key", _set("strategy", "x"), "policy.closed", "$.strategy"),
    ("maxTurns missing", _set("loop.maxTurns", _DEL), "loop.maxTurns", "$.loop.maxTurns"),
    ("maxTurns < 1", _set("loop.maxTurns", 0), "loop.maxTurns", "$.loop.maxTurns"),
    ("cycle missing", _set("loop.cycle", _DEL), "loop.cycle.vocabulary", "$.loop.cycle"),
    ("cycle unknown phase", _set("loop.cycle.1", "think"), "loop.cycle.vocabulary", "$.loop.cycle[1]"),
    ("cycle empty", _set("loop.cycle", []), "loop.cycle.vocabulary", "$.loop.cycle"),
    (
        "cycle out of order",
        _set("loop.cycle", ["act", "gather_context", "verify"]),
        "loop.cycle.order",
        "$.loop.cycle",
    ),
    (
        "verify omitted, no reason",
        _set("loop.cycle", ["gather_context", "act"]),
        "loop.cycle.verify-or-justify",
        "$.loop.cycle",
    ),
    (
        "passIntent missing",
        _set("loop.verification.passIntent", _DEL),
        "loop.verification.passIntent",
        "$.loop.verification.passIntent",
    ),
    (
        "passIntent is a score",
        _set("loop.verification.passIntent", ">= 0.8"),
        "loop.verification.passIntent",
        "$.loop.verification.passIntent",
    ),
    (
        "maxAttempts < 1",
        _set("loop.verification.maxAttempts", 0),
        "loop.verification.maxAttempts",
        "$.loop.verification.maxAttempts",
    ),
    (
        "scope unknown",
        _set("loop.verification.scope", "some"),
        "loop.verification.scope",
        "$.loop.verification.scope",
    ),
    (
        "regression acceptIf",
        _set("loop.verification.regression.acceptIf", "held-out-only"),
        "loop.verification.regression",
        "$.loop.verification.regression.acceptIf",
    ),
    ("stopConditions empty", _set("loop.stopConditions", []), "loop.stopConditions", "$.loop.stopConditions"),
    (
        "stop when unknown",
        _set("loop.stopConditions.0.when", "done"),
        "loop.stopConditions.when",
        "$.loop.stopConditions[0].when",
    ),
    (
        "stop action unknown",
        _set("loop.stopConditions.0.action", "halt"),
        "loop.stopConditions.action",
        "$.loop.stopConditions[0].action",
    ),
    (
        "stop duplicate",
        _set("loop.stopConditions.1", {"when": "completed", "action": "handoff"}),
        "loop.stopConditions.unique",
        "$.loop.stopConditions[1].when",
    ),
    ("handoff emits", _set("loop.handoff.emits", "Summary"), "loop.handoff.emits", "$.loop.handoff.emits"),
    (
        "handoff window",
        _set("loop.handoff.returnWindows", ["lunch"]),
        "loop.handoff.returnWindows",
        "$.loop.handoff.returnWindows[0]",
    ),
    (
        "handoff missing with await_human",
        _set("loop.handoff", _DEL),
        "loop.handoff.report-required",
        "$.loop.handoff",
    ),
    ("subAgent id", _set("loop.subAgents.0.id", "Bad_Id"), "loop.subAgents.id", "$.loop.subAgents[0].id"),
    (
        "subAgent description too long",
        _set("loop.subAgents.0.description", "x" * 1025),
        "loop.subAgents.description",
        "$.loop.subAgents[0].description",
    ),
    (
        "subAgent tools required",
        _set("loop.subAgents.0.tools", _DEL),
        "loop.subAgents",
        "$.loop.subAgents[0].tools",
    ),
    (
        "subAgent writer in parallel",
        _set("loop.subAgents.0.tools", ["acx:execute"]),
        "loop.subAgents.concurrency",
        "$.loop.subAgents[0].concurrency",
    ),
    (
        "subAgent concurrency unknown",
        _set("loop.subAgents.0.concurrency", "threads"),
        "loop.subAgents.concurrency",
        "$.loop.subAgents[0].concurrency",
    ),
    (
        "subAgent mode unknown",
        _set("loop.subAgents.0.mode", "async"),
        "loop.subAgents.mode",
        "$.loop.subAgents[0].mode",
    ),
    (
        "subAgent duplicate",
        lambda d: d["loop"]["subAgents"].append(copy.deepcopy(d["loop"]["subAgents"][0])),
        "loop.subAgents.unique-id",
        "$.loop.subAgents[1].id",
    ),
    ("retrieval unknown", _set("context.retrieval", "lazy"), "context.retrieval", "$.context.retrieval"),
    ("retrieval missing", _set("context.retrieval", _DEL), "context.retrieval", "$.context.retrieval"),
    (
        "identifier kind",
        _set("context.identifierKinds", ["url"]),
        "context.identifierKinds",
        "$.context.identifierKinds[0]",
    ),
    (
        "compaction category",
        _set("context.compaction.preserve", ["everything"]),
        "context.compaction.categories",
        "$.context.compaction.preserve[0]",
    ),
    (
        "compaction algorithm",
        _set("context.compaction.summarizationAlgorithm", "map-reduce"),
        "context.compaction.intent-only",
        "$.context.compaction.summarizationAlgorithm",
    ),
    (
        "compaction budget missing",
        _set("context.compaction.targetTokenBudget", _DEL),
        "context.compaction.targetTokenBudget",
        "$.context.compaction.targetTokenBudget",
    ),
    (
        "compaction overlap",
        _set("context.compaction.discard", ["user_intent"]),
        "context.compaction.overlap",
        "$.context.compaction",
    ),
    (
        "truncation vendor id",
        _set("context.toolResultTruncation.strategy", "clear_tool_uses_20250919"),
        "context.toolResultTruncation.no-vendor-ids",
        "$.context.toolResultTruncation.strategy",
    ),
    (
        "truncation negative",
        _set("context.toolResultTruncation.keepLastN", -1),
        "context.toolResultTruncation",
        "$.context.toolResultTruncation.keepLastN",
    ),
    (
        "embeddingEngineId missing",
        _set("context.embeddingEngineId", _DEL),
        "context.embeddingEngineId",
        "$.context.embeddingEngineId",
    ),
    (
        "playbook shape",
        _set("context.playbook", {"store": "x"}),
        "context.playbook",
        "$.context.playbook.entryShape",
    ),
    ("rule missing title", _set("rules.0.title", _DEL), "rules.mission-rule", "$.rules[0].title"),
    ("rule category", _set("rules.0.category", "style"), "rules.category", "$.rules[0].category"),
    ("rule severity", _set("rules.0.severity", "fatal"), "rules.severity", "$.rules[0].severity"),
    ("rule duplicate id", _set("rules.1.id", "halt-before-destructive"), "rules.unique-id", "$.rules[1].id"),
    (
        "outcome report",
        _set("guardrailContract.outcomeReport", "Report"),
        "guardrailContract.outcomeReport",
        "$.guardrailContract.outcomeReport",
    ),
    (
        "signal kind",
        _set("guardrailContract.signalKinds", ["panic"]),
        "guardrailContract.signalKinds",
        "$.guardrailContract.signalKinds[0]",
    ),
    (
        "guardrail_stop needs stop signal",
        _set("guardrailContract.signalKinds", ["milestone", "blocked"]),
        "guardrailContract.signal-for-condition",
        "$.guardrailContract.signalKinds",
    ),
    ("budget group missing", _set("budget.killSwitch", _DEL), "budget.killSwitch", "$.budget.killSwitch"),
    (
        "budget negative",
        _set("budget.tokenSpend.dailyGlobal", -5),
        "budget.tokenSpend",
        "$.budget.tokenSpend.dailyGlobal",
    ),
    (
        "budget timeouts order",
        _set("budget.timeouts.defaultCommandSec", 500),
        "budget.timeouts.order",
        "$.budget.timeouts.defaultCommandSec",
    ),
    ("hints not an object", _set("hints", []), "hints.object", "$.hints"),
    (
        "hints alter outcome",
        _set("hints.outcomeReport", "Other"),
        "hints.no-outcome-override",
        "$.hints.outcomeReport",
    ),
    (
        "observability pillar",
        _set("observability.pillars", ["cost"]),
        "observability.pillars",
        "$.observability.pillars[0]",
    ),
]


@pytest.mark.parametrize(("what", "mutate", "rule", "path"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_broken_is_named(what: str, mutate: Callable[[Doc], None], rule: str, path: str) -> None:
    doc = base()
    mutate(doc)
    errs = errors_only(validate_policy(doc))
    assert (rule, path) in {(i.rule, i.path) for i in errs}, [str(i) for i in errs]
    with pytest.raises(InvalidInput) as exc:
        parse_policy(doc)
    assert rule in str(exc.value) and path in str(exc.value)


V1_CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    (
        "v1 plan phase",
        _set("loop.cycle", ["plan", "gather_context", "act", "verify"]),
        "loop.cycle.vocabulary",
        "$.loop.cycle[0]",
    ),
    (
        "v1 observability key",
        _set("observability", {"tracer": "t", "decisionLog": "d", "pillars": []}),
        "policy.closed",
        "$.observability",
    ),
    (
        "v1 regression key",
        _set(
            "loop.verification.regression",
            {"heldInSuite": None, "heldOutSuite": None, "acceptIf": "no-regression-on-held-in-and-held-out"},
        ),
        "loop.verification",
        "$.loop.verification.regression",
    ),
]


@pytest.mark.parametrize(("what", "mutate", "rule", "path"), V1_CASES, ids=[c[0] for c in V1_CASES])
def test_v1_document_cannot_use_v11_vocabulary(
    what: str, mutate: Callable[[Doc], None], rule: str, path: str
) -> None:
    doc = v1_base()
    mutate(doc)
    assert (rule, path) in {(i.rule, i.path) for i in errors_only(validate_policy(doc))}


def test_v1_reader_drops_v11_keys() -> None:
    p = parse_policy(base(), reader=V1)
    assert p.schema_version == V1
    assert p.cycle == ("gather_context", "act", "verify")
    assert p.observability is None and p.context.playbook is None
    assert p.verification is not None and p.verification.regression is None
    assert all(s.mode is None for s in p.sub_agents)
    full = parse_policy(base())
    assert full.cycle[0] == "plan" and full.verification and full.verification.regression


def test_verify_may_be_omitted_when_justified_in_hints() -> None:
    doc = base()
    doc["loop"]["cycle"] = ["gather_context", "act"]
    doc["hints"] = {"verifyOmittedReason": "read-only research agent; nothing to verify"}
    assert errors_only(validate_policy(doc)) == []
    doc["hints"] = {"verifyOmittedReason": "  "}
    assert errors_only(validate_policy(doc))


def test_hints_are_ignorable_and_open() -> None:
    doc = base()
    doc["hints"] = {
        "effort": "high",
        "compactionMechanism": "clear_tool_uses_20250919",
        "kvCachePrefixStable": True,
    }
    assert validate_policy(doc) == []
    assert parse_policy(doc).hints["effort"] == "high"


def test_return_budget_outside_range_is_a_warning() -> None:
    doc = base()
    doc["loop"]["subAgents"][0]["contextReturnBudgetTokens"] = 8000
    issues = validate_policy(doc)
    assert [(i.rule, i.severity) for i in issues] == [("loop.subAgents.contextReturnBudget", WARNING)]
    assert errors_only(issues) == []


def test_subagent_defaults_single_threaded_and_budget() -> None:
    doc = base()
    del doc["loop"]["subAgents"][0]["concurrency"]
    del doc["loop"]["subAgents"][0]["contextReturnBudgetTokens"]
    sa = parse_policy(doc).sub_agents[0]
    assert sa.concurrency == "single_threaded"
    assert 1000 <= sa.context_return_budget_tokens <= 2000


def test_harness_scopes_make_a_custom_tool_read_only() -> None:
    doc = base()
    doc["loop"]["subAgents"][0]["tools"] = ["acx:grep"]
    assert any(i.rule == "loop.subAgents.concurrency" for i in validate_policy(doc))
    assert validate_policy(doc, harness_scopes={"acx:grep": ["search", "fs.read"]}) == []
    assert any(
        i.rule == "loop.subAgents.concurrency"
        for i in validate_policy(doc, harness_scopes={"acx:grep": ["search", "fs.write"]})
    )


def test_not_an_object() -> None:
    assert [i.rule for i in validate_policy([])] == ["policy.object"]
    assert all(i.severity == ERROR for i in validate_policy("x"))


def test_handoff_window_missing_for_condition_is_a_warning() -> None:
    doc = base()
    doc["loop"]["handoff"]["returnWindows"] = ["phase_exit"]
    issues = validate_policy(doc)
    found = {(i.rule, i.path, i.severity) for i in issues}
    assert ("loop.handoff.window-for-condition", "$.loop.stopConditions[1]", WARNING) in found  # pr_ready
    assert ("loop.handoff.window-for-condition", "$.loop.stopConditions[2]", WARNING) in found  # blocked
    assert errors_only(issues) == []
