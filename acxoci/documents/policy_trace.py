# ruff: noqa: E501
"""Typed model of the policy trace (the events `acx policy simulate` replays): generated from schemas/acx.policy-trace-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

__all__ = ["PolicyTraceDoc"]


class PolicyTraceDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A run's events, replayed by `acx policy simulate` against a loop + context policy"""

    events: tuple[PolicyTraceDocEvent, ...]


class PolicyTraceDocEvent(Struct, frozen=True, kw_only=True):
    """`PolicyTraceDocEvent`"""

    type: str
    phase: str | UnsetType = UNSET
    passed: bool | UnsetType = UNSET
    regression: dict[str, PolicyTraceDocSuiteResult] | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    used: int | UnsetType = UNSET
    when: str | UnsetType = UNSET


class PolicyTraceDocSuiteResult(Struct, frozen=True, kw_only=True):
    """`PolicyTraceDocSuiteResult`"""

    baseline: int | float
    candidate: int | float
