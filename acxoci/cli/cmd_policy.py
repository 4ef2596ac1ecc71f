"""`acx policy check|simulate`: validate a loop + context policy (file or cartridge) and replay a
run trace through the pure loop evaluator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.cli.apps import policy_app
from acxoci.cli.output import Markup, emit, say
from acxoci.errors import InvalidInput
from acxoci.fsutil import read_bytes
from acxoci.policy import harness as harness_mod
from acxoci.policy.evaluator import decode_trace, evaluate
from acxoci.policy.files import load_document
from acxoci.policy.limits import ResourceLimits, effective_limits, load_host_limits
from acxoci.policy.loop_context import ROM_PATH, errors_only, parse_policy, validate_policy


def _scopes(harness_doc: Any) -> dict[str, tuple[str, ...]] | None:
    if harness_doc is None or harness_mod.errors_only(harness_mod.validate_harness(harness_doc)):
        return None
    return harness_mod.parse_harness(harness_doc).scopes_by_role()


@policy_app.command("check")
def check(
    file: Path = typer.Argument(..., help="A loop-context-policy JSON file, or a cartridge (.acx)."),
    host_limits: Path | None = typer.Option(
        None, "--host-limits", help="Host resource-limits.yaml (host wins)."
    ),
) -> None:
    """Validate every rule of the loop + context policy; with --host-limits show the effective limits."""
    loaded = load_document(file, ROM_PATH, with_harness=harness_mod.ROM_PATH)
    issues = validate_policy(loaded.doc, harness_scopes=_scopes(loaded.harness))
    errors = errors_only(issues)
    data: dict[str, Any] = {
        "source": loaded.source,
        "valid": not errors,
        "schemaVersion": loaded.doc.get("schemaVersion") if isinstance(loaded.doc, dict) else None,
        "issues": [i.to_json() for i in issues],
    }
    if host_limits is not None:
        host = load_host_limits(host_limits)
        budget = loaded.doc.get("budget") if isinstance(loaded.doc, dict) and not errors else None
        cart = ResourceLimits.from_json(budget) if isinstance(budget, dict) else None
        data["effectiveLimits"] = effective_limits(host, cart).to_json()

    def human() -> None:
        say("policy: {}  {}  ({})",
            Markup("[green]VALID[/green]") if not errors else Markup("[red]INVALID[/red]"),
            str(data["schemaVersion"]), loaded.source)
        for i in issues:
            say("  - {}: {}", i.severity, str(i))
        eff = data.get("effectiveLimits")
        if eff:
            say("effective limits (host > cartridge):")
            for name, src in sorted(eff["sources"].items()):
                group, _, key = name.partition(".")
                value = eff["limits"].get(group, {}).get(key) if key else eff["limits"].get(group)
                capped = " (cartridge value capped)" if name in eff["capped"] else ""
                say("  {} = {}  {}{}", name, value, f"[{src}]", capped)

    emit(data, human)
    raise SystemExit(0 if not errors else 1)


@policy_app.command("simulate")
def simulate(
    policy: Path = typer.Argument(..., help="A policy JSON file or a cartridge."),
    trace: Path = typer.Argument(..., help='TRACE.json: {"events": [...]} (see acxoci.policy.evaluator).'),
    host_limits: Path | None = typer.Option(None, "--host-limits", help="Host resource-limits.yaml."),
) -> None:
    """Replay a run's events and print the next phase, or the stop action and the report to emit."""
    loaded = load_document(policy, ROM_PATH)
    model = parse_policy(loaded.doc, where=loaded.source)
    try:
        tdoc = loads_strict(read_bytes(trace, "trace"))
    except MalformedError as exc:
        raise InvalidInput(f"cannot read trace: {exc}", where=str(trace)) from exc
    events = decode_trace(tdoc, where=str(trace))
    decision = evaluate(model, events, host_limits=load_host_limits(host_limits) if host_limits else None)
    data = decision.to_json()

    def human() -> None:
        if decision.kind == "continue":
            say("next: [green]{}[/green]  (turn {}/{})",
                decision.next_phase, decision.turns, model.max_turns)
        else:
            say("stop: [yellow]{}[/yellow] -> {}{}  (turn {})",
                decision.condition, decision.action, '' if decision.declared else ' (undeclared; default)',
                decision.turns)
            if decision.report:
                say("report: outcome={} userAttentionRequired={}",
                    decision.report.outcome, decision.report.user_attention_required)
        for n in decision.notes:
            say("  - {}", n)

    emit(data, human)


def register(app: typer.Typer) -> None:
    """Commands are added to `policy_app` at import time."""
