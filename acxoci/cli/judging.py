"""The host's question at the command line: `acx verify REF --policy P` and `acx push --policy P`
ask the one acceptance decision (acxoci/install/judge.py) exactly as `acx install` would, and
render its checks the same way. A refusal exits 8, like install's."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.cli.output import Markup, say

MARK = {"pass": Markup("[green]✓[/green]"), "skip": Markup("[dim]-[/dim]"), "fail": Markup("[red]✗[/red]"),
        "unavailable": Markup("[red]?[/red]")}


def judge_ref(ref: str, policy: Path, *, host: Path | None = None, host_limits: Path | None = None,
              now: datetime | None = None) -> Any:
    """`ref` judged under the policy file, writing nothing (a scratch folder aside)."""
    from acxoci.install.hostfiles import host_inputs
    from acxoci.install.judge import Context, judge_reference
    from acxoci.install.vpolicy import load_policy
    from acxoci.oci.settings import active_options

    at = now or datetime.now(UTC)
    ctx = Context(load_policy(policy, now=at), at, host_inputs(host, host_limits, None),
                  remote=active_options())
    return judge_reference(ref, ctx)


def verdict_json(j: Any, policy: Path) -> dict[str, Any]:
    """The `verdict` output shape of a judgement (ok, verdict, reasons, checks)."""
    return {**j.to_json(), "policy": str(policy), "summary": ("accepted" if j.ok else "refused")
            + f" under {policy}"}


def render_judgement(j: Any, *, header: str = "") -> None:
    """ACCEPTED / REFUSED with every check, as `install` prints them (`header`: plain text after
    the verdict line, shown escaped like any value)."""
    if j.ok:
        say("[bold green]ACCEPTED[/bold green] {} @ {}{}", j.reference, j.digest, header)
    else:
        say("[bold red]REFUSED[/bold red] {} — {} check(s) failed{}", j.reference, len(j.failed), header)
    for c in j.checks:
        kind = f" [{c.kind}]" if c.kind else ""
        say("  {} {}. {}{}: {}", MARK[c.status], c.order, c.id, kind, c.reason)
