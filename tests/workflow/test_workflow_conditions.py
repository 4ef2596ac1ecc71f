"""The closed condition grammar: lint-time type checks and the pure evaluator."""

from __future__ import annotations

from typing import Any

import pytest

from acxoci.workflow.conditions import Context, check, evaluate

VARS = {"review", "attempts", "tags"}
RAC = {"infra-arch"}


def rules(cond: Any) -> set[str]:
    return {i.rule for i in check(cond, "$.edges[0].when", VARS, RAC)}


@pytest.mark.parametrize(
    "cond",
    [
        {"always": True},
        {"var": "review.outcome", "op": "eq", "value": "completed"},
        {"var": "attempts", "op": "lt", "value": 3},
        {"var": "tags", "op": "in", "value": ["a", "b"]},
        {"all": [{"racAvailable": "infra-arch"}, {"not": {"var": "attempts", "op": "ge", "value": 5}}]},
        {"any": [{"always": True}]},
    ],
)
def test_valid_conditions(cond: Any) -> None:
    assert check(cond, "$", VARS, RAC) == []


@pytest.mark.parametrize(
    ("cond", "rule"),
    [
        ({}, "condition-shape"),
        ({"always": True, "not": {"always": True}}, "condition-shape"),
        ({"racAvailable": "infra-arch", "op": "eq"}, "condition-shape"),
        ("review == 1", "condition-shape"),
        ({"always": False}, "condition-always"),
        ({"var": "ghost.x", "op": "eq", "value": 1}, "condition-var"),
        ({"var": "Review", "op": "eq", "value": 1}, "condition-var"),
        ({"var": "review", "op": "matches", "value": 1}, "condition-op"),
        ({"var": "review", "op": "eq"}, "condition-value"),
        ({"var": "review", "op": "in", "value": "abc"}, "condition-value"),
        ({"all": []}, "condition-list"),
        ({"any": {"always": True}}, "condition-list"),
        ({"racAvailable": "nope"}, "condition-rac"),
        ({"not": {"all": [{"any": [{"racAvailable": "nope"}]}]}}, "condition-rac"),
    ],
)
def test_each_bad_condition_names_its_rule(cond: Any, rule: str) -> None:
    assert rule in rules(cond)


def test_issue_paths_point_into_nested_conditions() -> None:
    issues = check({"all": [{"always": True}, {"not": {"racAvailable": "x"}}]}, "$.edges[3].when", VARS, RAC)
    assert [i.path for i in issues] == ["$.edges[3].when.all[1].not.racAvailable"]
    assert issues[0].value == "x"


def test_deep_nesting_does_not_recurse() -> None:
    cond: dict[str, Any] = {"always": True}
    for _ in range(5000):
        cond = {"not": cond}
    assert check(cond, "$", VARS, RAC) == []
    assert evaluate(cond, Context()) is True  # an even number of negations


CTX = Context(
    vars={"review": {"outcome": "completed", "score": 7}, "attempts": 2, "flag": True, "items": [1, 2]},
    rac={"infra-arch": {"available": True}, "code-wiki": {"available": False}},
)


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        (None, True),
        ({"always": True}, True),
        ({"var": "review.outcome", "op": "eq", "value": "completed"}, True),
        ({"var": "review.outcome", "op": "ne", "value": "completed"}, False),
        ({"var": "review.missing", "op": "eq", "value": None}, False),  # undefined !== null
        ({"var": "review.score", "op": "gt", "value": 6.5}, True),
        ({"var": "review.score", "op": "le", "value": 7}, True),
        ({"var": "attempts", "op": "eq", "value": 2.0}, True),  # one JS number type
        ({"var": "flag", "op": "eq", "value": 1}, False),  # strict: boolean !== number
        ({"var": "items", "op": "eq", "value": [1, 2]}, False),  # objects compare by identity
        ({"var": "attempts", "op": "in", "value": [1, 2, 3]}, True),
        ({"var": "attempts", "op": "in", "value": 2}, False),
        ({"var": "items.1", "op": "eq", "value": 2}, True),
        ({"var": "review.outcome", "op": "lt", "value": "d"}, True),  # string comparison
        ({"var": "review.outcome", "op": "lt", "value": 5}, False),  # NaN comparison
        ({"racAvailable": "infra-arch"}, True),
        ({"racAvailable": "code-wiki"}, False),
        ({"racAvailable": "unknown"}, False),
        ({"all": [{"racAvailable": "infra-arch"}, {"var": "attempts", "op": "lt", "value": 3}]}, True),
        ({"all": [{"racAvailable": "infra-arch"}, {"racAvailable": "code-wiki"}]}, False),
        ({"any": [{"racAvailable": "code-wiki"}, {"not": {"racAvailable": "code-wiki"}}]}, True),
        ({"not": {"var": "review.outcome", "op": "eq", "value": "completed"}}, False),
        ({"exists": "review"}, False),  # unknown form
    ],
)
def test_evaluate(cond: Any, expected: bool) -> None:
    assert evaluate(cond, CTX) is expected


def test_evaluation_order_all_before_var() -> None:
    # a malformed mix: `all` is tested first, exactly as the reference does
    assert evaluate({"all": [{"always": True}], "var": "attempts", "op": "eq", "value": 99}, CTX) is True
