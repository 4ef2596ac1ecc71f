"""The one issue record every workflow check returns: rule id, JSON path, value, message."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from acxoci.workflow.model import REVERSE_DNS_RE

_MISSING = object()


def show(value: Any) -> str:
    """A short JSON rendering of an offending value for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Absent:
    """The marker of a member the document does not have (JSON `null` is a value, not absence)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


def one_of(value: Any, allowed: Collection[str]) -> TypeGuard[str]:
    """True when `value` is one of the `allowed` strings (a value of another JSON type never is,
    and is never looked up: a list or object is no set member)."""
    return isinstance(value, str) and value in allowed


@dataclass(frozen=True)
class Issue:
    """A finding: `rule` is a stable id, `path` a JSONPath like `$.nodes[2].agent`."""

    rule: str
    path: str
    message: str
    value: Any = None
    severity: str = "error"

    def text(self) -> str:
        """One line: `[rule] path: message (value: …)`."""
        return f"[{self.rule}] {self.path}: {self.message} (value: {show(self.value)})"

    def to_json(self) -> dict[str, Any]:
        """JSON form for `--json` output."""
        return {
            "rule": self.rule,
            "path": self.path,
            "message": self.message,
            "value": self.value,
            "severity": self.severity,
            "text": self.text(),
        }


class IssueCollector:
    """The shared start of one lint run over a raw JSON document (workflow or agent graph): the
    document, the issues found so far, and the closed-object check both formats apply."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self.issues: list[Issue] = []

    def add(self, rule: str, path: str, message: str, value: Any = None) -> None:
        self.issues.append(Issue(rule, path, message, None if value is ABSENT else value))

    def closed(self, obj: Any, allowed: frozenset[str], path: str, what: str) -> None:
        """One `unknown-property` issue for each key of `obj` outside `allowed`."""
        for k in obj:
            if k not in allowed:
                self.add("unknown-property", f"{path}.{k}", f"{what} contains an unknown property", k)

    def extensions(self, ext: Any) -> None:
        """`$.extensions`, when present: an object whose keys are reverse-DNS namespaces."""
        if ext is ABSENT:
            return
        if not isinstance(ext, Mapping):
            self.add("extensions", "$.extensions", "extensions must be an object", ext)
            return
        for k in ext:
            if not isinstance(k, str) or not REVERSE_DNS_RE.fullmatch(k):
                self.add(
                    "extension-namespace",
                    f"$.extensions.{k}",
                    "extension namespace must be reverse-DNS (e.g. com.example.tool)",
                    k,
                )
