"""Validate a document against one of our JSON Schemas and turn each failure into an Issue
that names the rule (the nearest `x-rule` annotation in the schema) and the JSON path."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from acxoci import jsonschemas
from acxoci.attest.typed import DocumentTypeError, decode_as

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

T = TypeVar("T")

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Issue:
    """One finding: the rule it breaks, where (a `$.a.b[0]` JSON path), why, and how bad."""

    rule: str
    path: str
    message: str
    severity: str = ERROR

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "path": self.path, "message": self.message, "severity": self.severity}

    def __str__(self) -> str:
        return f"[{self.rule}] {self.path}: {self.message}"


def load_schema(name: str) -> dict[str, Any]:
    """Load `schemas/<name>` shipped as package data."""
    return jsonschemas.load_schema(name)


def child_path(path: str, key: str | int) -> str:
    """Extend a `$`-rooted JSON path by one object key or array index."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def pointer_path(pointer: str) -> str:
    """An RFC 6901 pointer (as `DocumentTypeError` names it) as a `$`-rooted JSON path."""
    path = "$"
    for raw in pointer.split("/")[1:] if pointer else []:
        seg = raw.replace("~1", "/").replace("~0", "~")
        path = child_path(path, int(seg)) if seg.isascii() and seg.isdigit() else child_path(path, seg)
    return path


def type_issue(err: DocumentTypeError, rule: str) -> Issue:
    """A document that does not decode into its model, as one Issue at the value's path."""
    message = str(err).removeprefix(f"{err.document}: {err.pointer or '/'}: ")
    return Issue(rule, pointer_path(err.pointer), message)


def decode_issues(doc: Any, model: type[T], *, document: str, rule: str) -> tuple[T | None, list[Issue]]:
    """`doc` decoded into `model` (None and the one type issue when it does not decode)."""
    try:
        return decode_as(doc, model, document=document), []
    except DocumentTypeError as err:
        return None, [type_issue(err, rule)]


def _rule_for(schema: dict[str, Any], schema_path: list[Any], default: str) -> str:
    node: Any = schema
    rule = default
    if isinstance(node, dict) and isinstance(node.get("x-rule"), str):
        rule = node["x-rule"]
    for seg in schema_path:
        try:
            node = node[seg]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, dict) and isinstance(node.get("x-rule"), str):
            rule = node["x-rule"]
    return rule


def _json_path(err: ValidationError) -> str:
    path = "$"
    for seg in err.absolute_path:
        path = child_path(path, seg if isinstance(seg, int) else str(seg))
    return path


def schema_issues(doc: Any, schema_name: str, *, default_rule: str = "schema") -> list[Issue]:
    """All schema violations of `doc`, sorted by path, each named by rule and JSON path."""
    schema = load_schema(schema_name)
    validator = jsonschemas.strict_validator(schema)
    out: list[Issue] = []
    for err in validator.iter_errors(doc):
        out.extend(_to_issues(schema, err, default_rule))
    return sorted(set(out), key=lambda i: (i.path, i.rule, i.message))


def _to_issues(schema: dict[str, Any], err: ValidationError, default_rule: str) -> list[Issue]:
    path = _json_path(err)
    spath = list(err.absolute_schema_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        props = (err.schema.get("properties") or {}) if isinstance(err.schema, dict) else {}
        issues = []
        wanted: Any = err.validator_value
        for key in wanted if isinstance(wanted, list) else []:
            if key in err.instance:
                continue
            sub = props.get(key)
            rule = sub.get("x-rule") if isinstance(sub, dict) and isinstance(sub.get("x-rule"), str) else None
            issues.append(
                Issue(
                    rule or _rule_for(schema, spath[:-1], default_rule),
                    child_path(path, key),
                    f"required key {key!r} is missing",
                )
            )
        return issues
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set((err.schema.get("properties") or {}).keys()) if isinstance(err.schema, dict) else set()
        rule = _rule_for(schema, spath[:-1], default_rule)
        return [
            Issue(rule, child_path(path, k), f"unknown key {k!r} (closed object)")
            for k in err.instance
            if k not in allowed
        ]
    return [Issue(_rule_for(schema, spath, default_rule), path, err.message)]
