"""ResourceLimits merge (host always wins, a cartridge never raises a ceiling), the host YAML
loader, and the OperatorCommandReport validator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acxoci.errors import InvalidInput
from acxoci.policy.limits import (
    NUMERIC_FIELDS,
    KillSwitch,
    ResourceLimits,
    effective_limits,
    load_host_limits,
    validate_limits,
)
from acxoci.policy.report import OperatorCommandReport, validate_report
from tests.harness.env import REPO

CART = {
    "tokenSpend": {"dailyPerProject": 5_000_000, "dailyPerAgent": 100, "dailyGlobal": 20_000_000},
    "concurrency": {"maxCommandsPerStation": 2, "maxStationsPerProject": 8, "maxGlobalInFlightCommands": 16},
    "timeouts": {"defaultCommandSec": 900, "maxCommandSec": 3600},
    "killSwitch": {"enabled": False, "reason": None},
}


def test_host_wins_and_cartridge_cannot_raise(tmp_path: Path) -> None:
    host = load_host_limits(REPO / "examples" / "resource-limits.yaml")
    eff = effective_limits(host, ResourceLimits.from_json(CART))
    for name in NUMERIC_FIELDS:
        hv, cv, ev = host.get(name), ResourceLimits.from_json(CART).get(name), eff.limits.get(name)
        assert ev is not None
        if hv is not None:
            assert ev <= hv, name  # never above the host ceiling
        if cv is not None:
            assert ev <= cv or (hv is not None and ev == hv)
    assert eff.limits.get("tokenSpend.dailyPerProject") == 1_000_000
    assert eff.sources["tokenSpend.dailyPerProject"] == "host"
    assert "tokenSpend.dailyPerProject" in eff.capped
    # a stricter cartridge default is kept (it does not raise anything)
    assert eff.limits.get("tokenSpend.dailyPerAgent") == 100
    assert eff.sources["tokenSpend.dailyPerAgent"] == "cartridge"
    # a value the host does not state comes from the cartridge
    assert eff.limits.get("concurrency.maxStationsPerProject") == 8
    # the default timeout is clamped under the effective maximum
    assert eff.limits.get("timeouts.defaultCommandSec") == 900
    assert eff.limits.get("timeouts.maxCommandSec") == 1200


def test_default_timeout_clamped_to_host_max() -> None:
    host = ResourceLimits({"timeouts.maxCommandSec": 300})
    eff = effective_limits(host, ResourceLimits.from_json(CART))
    assert eff.limits.get("timeouts.defaultCommandSec") == 300


def test_kill_switch_cartridge_can_pause_but_not_unpause() -> None:
    host_on = ResourceLimits({}, KillSwitch(True, "incident"))
    cart_off = ResourceLimits.from_json(CART)
    eff = effective_limits(host_on, cart_off)
    assert eff.limits.kill_switch is not None and eff.limits.kill_switch.enabled
    assert eff.limits.kill_switch.reason == "incident"
    cart_on = ResourceLimits({}, KillSwitch(True, "author pause", ("p1",)))
    eff2 = effective_limits(ResourceLimits({}, KillSwitch(False)), cart_on)
    assert eff2.limits.kill_switch is not None and eff2.limits.kill_switch.enabled
    assert eff2.limits.kill_switch.paused_project_ids == ("p1",)


def test_no_host_file_uses_cartridge_defaults() -> None:
    eff = effective_limits(None, ResourceLimits.from_json(CART))
    assert all(src == "cartridge" for k, src in eff.sources.items() if k != "killSwitch")
    assert eff.capped == ()


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        ("tokenSpend:\n  dailyPerAgent: -1\n", "dailyPerAgent"),
        ("tokenSpend:\n  perMinute: 5\n", "perMinute"),
        ("timeouts:\n  defaultCommandSec: 50\n  maxCommandSec: 10\n", "budget.timeouts.order"),
        ("- not a mapping\n", "object"),
        ("tokenSpend: [\n", "YAML"),
    ],
)
def test_bad_host_file_is_refused(tmp_path: Path, yaml_text: str, needle: str) -> None:
    p = tmp_path / "resource-limits.yaml"
    p.write_text(yaml_text)
    with pytest.raises(InvalidInput) as exc:
        load_host_limits(p)
    assert needle in str(exc.value) or needle in str(exc.value.details)


def test_cartridge_budget_requires_all_groups() -> None:
    doc = {k: v for k, v in CART.items() if k != "timeouts"}
    assert [(i.rule, i.path) for i in validate_limits(doc)] == [("budget.timeouts", "$.timeouts")]
    assert validate_limits(doc, host=True) == []


def _report(**kw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "outcome": "completed",
        "quality": "high",
        "confidence": 0.9,
        "artifacts": ["pr#1"],
        "learnings": [],
        "blockers": [],
        "nextAction": "none",
        "recommendedFollowUp": None,
        "userAttentionRequired": False,
    }
    doc.update(kw)
    return doc


def test_report_valid_roundtrip() -> None:
    r = OperatorCommandReport.from_json(_report())
    assert r.to_json() == _report()


@pytest.mark.parametrize(
    ("change", "rule", "path"),
    [
        ({"outcome": "needs_input"}, "report.outcome", "$.outcome"),
        ({"confidence": 1.5}, "report.confidence", "$.confidence"),
        ({"quality": 7}, "report.quality", "$.quality"),
        ({"artifacts": "pr#1"}, "report.artifacts", "$.artifacts"),
        ({"userAttentionRequired": "yes"}, "report.userAttentionRequired", "$.userAttentionRequired"),
        ({"extra": 1}, "report.closed", "$.extra"),
        ({"outcome": "blocked"}, "report.blocked-needs-blockers", "$.blockers"),
    ],
)
def test_report_rules(change: dict[str, Any], rule: str, path: str) -> None:
    issues = validate_report(_report(**change))
    assert (rule, path) in {(i.rule, i.path) for i in issues}, [str(i) for i in issues]
    with pytest.raises(InvalidInput):
        OperatorCommandReport.from_json(_report(**change))


def test_report_missing_key_named() -> None:
    doc = _report()
    del doc["nextAction"]
    assert ("report.nextAction", "$.nextAction") in {(i.rule, i.path) for i in validate_report(doc)}
