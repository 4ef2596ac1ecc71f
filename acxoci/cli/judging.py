"""The host's question at the command line: `acx verify REF --policy P` and `acx push --policy P`
ask the one acceptance decision (acxoci/install/judge.py) exactly as `acx install` would, and
render its checks the same way. A refusal exits 8, like install's."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.markup import escape

from acxoci.cli.output import OPTS, console, err_console

MARK = {"pass": "[green]✓[/green]", "skip": "[dim]-[/dim]", "fail": "[red]✗[/red]",
        "unavailable": "[red]?[/red]"}


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


def render(j: Any, *, header: str = "") -> None:
    """ACCEPTED / REFUSED with every check, as `install` prints them."""
    if j.ok:
        console.print(f"[bold green]ACCEPTED[/bold green] {escape(j.reference)} @ {j.digest}{header}")
    else:
        console.print(f"[bold red]REFUSED[/bold red] {escape(j.reference)} — {len(j.failed)} check(s) "
                      f"failed{header}")
    for c in j.checks:
        kind = f" \\[{escape(c.kind)}]" if c.kind else ""
        console.print(f"  {MARK[c.status]} {c.order}. {c.id}{kind}: {escape(c.reason)}")


@contextlib.contextmanager
def steps(label: str) -> Iterator[Callable[[str], None] | None]:
    """A one-line status on a terminal (stderr) saying what a long judgement or install is doing
    now, with the real names and digests; nothing under --json, -q or when stderr is no terminal."""
    if OPTS.json or OPTS.quiet or not sys.stderr.isatty():
        yield None
        return
    with err_console.status(f"{label}…") as status:

        def note(what: str) -> None:
            status.update(f"{label}: {escape(what)}")

        yield note
