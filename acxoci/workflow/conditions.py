"""The closed condition grammar of workflow edges: `always | var | all | any | not | racAvailable`.

`check()` type-checks a condition against the declared variables and RAC ids (lint time);
`evaluate()` is a small pure interpreter over explicit context. There is no expression language
and nothing is ever evaluated as code. Both walk the tree iteratively (no recursion limit).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from acxoci.workflow.issues import Issue, one_of
from acxoci.workflow.model import VAR_PATH_RE

FORMS = ("always", "var", "all", "any", "not", "racAvailable")
OPS = frozenset({"eq", "ne", "lt", "gt", "le", "ge", "in"})
_VAR_KEYS = frozenset({"var", "op", "value"})


def check(cond: Any, path: str, variables: Collection[str], rac_ids: Collection[str]) -> list[Issue]:
    """Type-check one `when` condition; returns every issue found (empty when valid)."""
    issues: list[Issue] = []
    stack: list[tuple[Any, str]] = [(cond, path)]
    while stack:
        c, p = stack.pop()
        if not isinstance(c, dict):
            issues.append(
                Issue("condition-shape", p, "a condition must be an object with exactly one form", c)
            )
            continue
        forms = [k for k in FORMS if k in c]
        if len(forms) != 1:
            issues.append(
                Issue(
                    "condition-shape",
                    p,
                    f"a condition needs exactly one of {', '.join(FORMS)}; found {forms or 'none'}",
                    sorted(c),
                )
            )
            continue
        form = forms[0]
        allowed = _VAR_KEYS if form == "var" else {form}
        extra = sorted(set(c) - allowed)
        if extra:
            issues.append(Issue("condition-shape", p, f"the {form} form takes no other keys", extra))
        if form == "always":
            if c["always"] is not True:
                issues.append(Issue("condition-always", f"{p}.always", "`always` must be true", c["always"]))
        elif form == "var":
            _check_var(c, p, variables, issues)
        elif form in ("all", "any"):
            items = c[form]
            if not isinstance(items, list) or not items:
                issues.append(
                    Issue("condition-list", f"{p}.{form}", f"`{form}` needs a non-empty array", items)
                )
                continue
            for i in range(len(items) - 1, -1, -1):
                stack.append((items[i], f"{p}.{form}[{i}]"))
        elif form == "not":
            stack.append((c["not"], f"{p}.not"))
        else:
            rid = c["racAvailable"]
            if not isinstance(rid, str) or rid not in rac_ids:
                issues.append(
                    Issue(
                        "condition-rac",
                        f"{p}.racAvailable",
                        "racAvailable names a RAC id that is not declared",
                        rid,
                    )
                )
    return issues


def _check_var(c: Mapping[str, Any], p: str, variables: Collection[str], issues: list[Issue]) -> None:
    var = c["var"]
    if not isinstance(var, str) or not VAR_PATH_RE.fullmatch(var):
        issues.append(
            Issue(
                "condition-var",
                f"{p}.var",
                "var must be a dotted path matching ^[a-z][a-z0-9._-]{0,255}$",
                var,
            )
        )
    else:
        root = var.split(".", 1)[0]
        if root not in variables:
            issues.append(Issue("condition-var", f"{p}.var", f"var reads undeclared variable '{root}'", var))
    if not one_of(c.get("op"), OPS):
        issues.append(
            Issue("condition-op", f"{p}.op", f"op must be one of {', '.join(sorted(OPS))}", c.get("op"))
        )
    if "value" not in c:
        issues.append(Issue("condition-value", p, "a comparison needs a `value`", None))
    elif c.get("op") == "in" and not isinstance(c["value"], list):
        issues.append(
            Issue("condition-value", f"{p}.value", "the `in` operator needs an array value", c["value"])
        )


# --- evaluation -------------------------------------------------------------------------------


class _Undefined:
    """JavaScript `undefined`: what a var path yields when it does not resolve."""

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Any = _Undefined()


@dataclass(frozen=True)
class Context:
    """What conditions may read: declared variables and RAC availability (`{id: {available}}`)."""

    vars: Mapping[str, Any] = field(default_factory=dict)
    rac: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def resolve(path: str, variables: Mapping[str, Any]) -> Any:
    """Walk a dotted path over the variables (array segments by index); UNDEFINED when absent."""
    cur: Any = variables
    for seg in path.split("."):
        if isinstance(cur, Mapping) and seg in cur:
            cur = cur[seg]
        elif isinstance(cur, list) and seg.isascii() and seg.isdigit() and int(seg) < len(cur):
            cur = cur[int(seg)]
        else:
            return UNDEFINED
    return cur


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def strict_equal(a: Any, b: Any) -> bool:
    """JavaScript `===` on JSON values: objects and arrays are never equal (identity)."""
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    return bool(a == b)


def _to_number(v: Any) -> float:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if _is_num(v):
        return float(v)
    if v is None:
        return 0.0
    if isinstance(v, str):
        s = v.strip()
        if not s:
            return 0.0
        try:
            return float(s)
        except ValueError:
            return math.nan
    return math.nan


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def compare(a: Any, b: Any, op: str) -> bool:
    """JavaScript relational comparison for lt/gt/le/ge (strings by UTF-16 units, else numbers)."""
    if isinstance(a, str) and isinstance(b, str):
        x: Any = _utf16(a)
        y: Any = _utf16(b)
    else:
        if isinstance(a, dict | list) or isinstance(b, dict | list):
            return False  # objects coerce to NaN-ish strings; never ordered in JSON data
        x, y = _to_number(a), _to_number(b)
        if math.isnan(x) or math.isnan(y):
            return False
    if op == "lt":
        return bool(x < y)
    if op == "gt":
        return bool(x > y)
    if op == "le":
        return bool(x <= y)
    return bool(x >= y)


def _eval_var(c: Mapping[str, Any], ctx: Context) -> bool:
    var = c.get("var")
    actual = resolve(var, ctx.vars) if isinstance(var, str) else UNDEFINED
    op = c.get("op")
    expected = c.get("value", UNDEFINED)
    if op == "eq":
        return strict_equal(actual, expected)
    if op == "ne":
        return not strict_equal(actual, expected)
    if op in ("lt", "gt", "le", "ge"):
        return compare(actual, expected, str(op))
    if op == "in":
        return isinstance(expected, list) and any(strict_equal(actual, v) for v in expected)
    return False


def evaluate(cond: Mapping[str, Any] | None, ctx: Context) -> bool:
    """Evaluate a condition: missing or `always` is true; forms are tried in the order all, any,
    not, racAvailable, var; an unknown form is false. Iterative post-order evaluation."""
    # Each frame: (condition, state); results are pushed on `values`.
    todo: list[tuple[Any, int]] = [(cond, 0)]
    values: list[Any] = []  # booleans, plus child-count markers
    while todo:
        c, state = todo.pop()
        if state == 0:
            if c is None or (isinstance(c, Mapping) and c.get("always")):
                values.append(True)
                continue
            if not isinstance(c, Mapping):
                values.append(False)
                continue
            if isinstance(c.get("all"), list) or isinstance(c.get("any"), list):
                key = "all" if isinstance(c.get("all"), list) else "any"
                items = c[key]
                todo.append((c, 1 if key == "all" else 2))
                todo.append((len(items), -1))  # marker carrying the child count
                for item in reversed(items):
                    todo.append((item if isinstance(item, Mapping) else {}, 0))
                continue
            if "not" in c and isinstance(c["not"], Mapping):
                todo.append((c, 3))
                todo.append((c["not"], 0))
                continue
            if "racAvailable" in c:
                entry = ctx.rac.get(c["racAvailable"]) if isinstance(c["racAvailable"], str) else None
                values.append(bool(entry.get("available")) if isinstance(entry, Mapping) else False)
                continue
            if "var" in c:
                values.append(_eval_var(c, ctx))
                continue
            values.append(False)
        elif state == -1:
            values.append(c)  # child count marker, consumed by the parent frame
        elif state in (1, 2):
            count = int(values.pop())
            children = values[len(values) - count :] if count else []
            del values[len(values) - count :]
            values.append(all(children) if state == 1 else any(children))
        else:
            values.append(not values.pop())
    return bool(values[-1]) if values else False
