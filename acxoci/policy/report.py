"""OperatorCommandReport: the loop's one terminal outcome (SPEC names the fields; our schema
`operator-command-report.schema.json` fixes their types)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acxoci.errors import InvalidInput
from acxoci.policy._schema import Issue, schema_issues

SCHEMA = "operator-command-report.schema.json"
OUTCOMES = ("progressed", "completed", "blocked", "handoff", "needs-input")


@dataclass(frozen=True)
class OperatorCommandReport:
    """The report a terminating handoff / await_human (and any stop) emits exactly once."""

    outcome: str
    quality: str = "unknown"
    confidence: float = 0.0
    artifacts: tuple[str, ...] = ()
    learnings: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    next_action: str = ""
    recommended_follow_up: str | None = None
    user_attention_required: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "quality": self.quality,
            "confidence": self.confidence,
            "artifacts": list(self.artifacts),
            "learnings": list(self.learnings),
            "blockers": list(self.blockers),
            "nextAction": self.next_action,
            "recommendedFollowUp": self.recommended_follow_up,
            "userAttentionRequired": self.user_attention_required,
        }

    @classmethod
    def from_json(cls, doc: Any, *, where: str = "OperatorCommandReport") -> OperatorCommandReport:
        """Validate and parse; raises InvalidInput naming each rule and JSON path."""
        issues = validate_report(doc)
        if issues:
            raise InvalidInput(
                "invalid OperatorCommandReport: " + "; ".join(map(str, issues)),
                where=where,
                details={"issues": [i.to_json() for i in issues]},
            )
        assert isinstance(doc, Mapping)
        return cls(
            doc["outcome"],
            doc["quality"],
            float(doc["confidence"]),
            tuple(doc["artifacts"]),
            tuple(doc["learnings"]),
            tuple(doc["blockers"]),
            doc["nextAction"],
            doc["recommendedFollowUp"],
            doc["userAttentionRequired"],
        )


def validate_report(doc: Any) -> list[Issue]:
    """Schema findings for a report document (rule + JSON path each)."""
    issues = schema_issues(doc, SCHEMA, default_rule="report.schema")
    if isinstance(doc, Mapping) and doc.get("outcome") in ("blocked",) and doc.get("blockers") == []:
        issues.append(
            Issue(
                "report.blocked-needs-blockers",
                "$.blockers",
                "a blocked outcome must name at least one blocker",
            )
        )
    return issues
