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
              now: datetime | None = None, store: Path | None = None, roster: Path | None = None) -> Any:
    """`ref` judged under the policy file as `acx install` would (`install.hostfiles.judge_under`)."""
    from acxoci.install.hostfiles import judge_under
    from acxoci.oci.settings import active_options

    return judge_under(ref, policy, host=host, host_limits=host_limits, store=store, roster=roster,
                       now=now or datetime.now(UTC), remote=active_options())


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
    show_checks(j.checks, accepted=j.ok)


def show_checks(checks: Any, *, accepted: bool) -> None:
    """The one way checks are shown: every check of an accepting decision, the failed ones of a
    refusal (each with its kind); `--json` always has them all."""
    for c in checks if accepted else [c for c in checks if c.failed]:
        kind = f" [{c.kind}]" if c.kind else ""
        say("  {} {}. {}{}: {}", MARK[c.status], c.order, c.id, kind, c.reason)
