"""`acx share agent|workflow|graph FILE`: place a verified artifact in an Exchange folder at its
immutable coordinate, with the agent card and the suggested pull-request body (docs/exchange.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from acxoci.cli.common import parse_now
from acxoci.cli.output import emit, say, show_lines


def share(
    kind: str = typer.Argument(..., help="agent, workflow or graph."),
    file: Path = typer.Argument(..., help="The signed artifact (.acx, .cal.json, .agent-graph.json)."),
    registry: Path | None = typer.Option(
        None, "--registry", help="The Exchange folder (default: ./registry when it holds index.json)."
    ),
    publisher: str | None = typer.Option(
        None, "--publisher", help="Refuse unless this is the signed publisher."
    ),
    slug: str | None = typer.Option(None, "--slug", help="agent: refuse unless this is the ROM-bound id."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Judge and plan; write nothing."),
    force: bool = typer.Option(False, "--force", help="Rewrite an agent card (README.md) that differs."),
    now: str | None = typer.Option(None, "--now", help="Judge as of this RFC 3339 time (default: now)."),
) -> None:
    """Judge the artifact as `exchange verify` would at its coordinate, then copy it there (never
    over other bytes) with the card; print the pull-request body to open."""
    from acxoci.exchange.share import default_registry
    from acxoci.exchange.share import share as do_share

    root = registry if registry is not None else default_registry(Path.cwd())
    plan = do_share(
        kind, file, root, publisher=publisher, slug=slug, dry_run=dry_run, force=force, now=parse_now(now)
    )

    def human() -> None:
        head = "SHARE PLAN" if plan.dry_run else "SHARED"
        say("{} {} {}/{}@{}", head, plan.kind, plan.publisher, plan.id, plan.version)
        say("  artifact:  {}", plan.destination)
        if plan.readme:
            say("  card:      {}", plan.readme)
        say("  changed:   {}", 'yes' if plan.changed else 'no (already current)')
        say("\nSuggested pull-request body:\n")
        show_lines(plan.pr_body)
        say("Next:")
        say("  acx exchange index {}\n  acx exchange verify {}\n  git diff -- {}", root, root, root)

    emit(plan.to_json(), human)


def register(app: typer.Typer) -> None:
    app.command("share")(share)
