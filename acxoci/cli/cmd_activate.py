"""`acx activate NAME --host H` and `acx deactivate NAME`: an installed cartridge's skills as Agent
Skills in a host's folder, written only from verified bytes and removed exactly (docs/activate.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from acxoci.cli.output import emit, say
from acxoci.install.activate import ActivationResult, activate, deactivate, skills_root
from acxoci.install.store import Store
from acxoci.oci.settings import active_options

STORE_OPT = typer.Option(None, "--store", envvar="ACX_STORE", help="Install store folder.")
HOST_OPT = typer.Option(None, "--host", help="claude, codex or cursor (where that host reads skills).")
SKILLS_DIR_OPT = typer.Option(None, "--skills-dir", help="Write into this skills folder instead.")
PROJECT_OPT = typer.Option(None, "--project", help="Project scope: the host's folder inside DIR.")


def run_activation(
    store: Store, name: str, host: str | None, skills_dir: Path | None, project: Path | None, force: bool,
    policy: Path | None = None, now: datetime | None = None,
) -> ActivationResult:
    """Resolve the folder, judge the item now and activate."""
    root = skills_root(host, home=Path.home(), project=project, skills_dir=skills_dir)
    return activate(store, name, root, host=host, now=now or datetime.now(UTC), force=force,
                    policy_file=policy, remote=active_options())


def render_activation(res: ActivationResult) -> None:
    say("[bold green]ACTIVATED[/bold green] {} → {} ({} skill(s), {} file(s))",
        res.name, str(res.root), len(res.skills), len(res.files))
    for s in res.skills:
        note = " (replaced a folder of another origin)" if s in res.replaced else ""
        say("  {}/SKILL.md{}", s, note)


def cmd_activate(
    name: str = typer.Argument(..., help="Install name (see `acx installed list`)."),
    host: str | None = HOST_OPT,
    skills_dir: Path | None = SKILLS_DIR_OPT,
    project: Path | None = PROJECT_OPT,
    force: bool = typer.Option(False, "--force", help="Replace skill folders of another origin."),
    policy: Path | None = typer.Option(None, "--policy", help="Judge under this policy (default: the one "
                                       "recorded at install, read as it is now)."),
    store: Path | None = STORE_OPT,
    now: str | None = typer.Option(None, "--now", help="Judge at this RFC 3339 time instead of the clock."),
) -> None:
    """Write an installed cartridge's skills into a host's skills folder, from bytes the one acceptance
    decision accepts NOW (signer, level, revocation, lifecycle), never on the install record's word."""
    from acxoci.cli.common import parse_now

    res = run_activation(Store(store), name, host, skills_dir, project, force, policy, parse_now(now))
    emit(res.to_json(), lambda: render_activation(res))


def cmd_deactivate(
    name: str = typer.Argument(..., help="Install name."),
    host: str | None = HOST_OPT,
    skills_dir: Path | None = SKILLS_DIR_OPT,
    project: Path | None = PROJECT_OPT,
    force: bool = typer.Option(False, "--force", help="Also remove activated files edited since."),
    store: Path | None = STORE_OPT,
) -> None:
    """Remove exactly the files an activation wrote (every activation of NAME unless a folder is named)."""
    root = None
    if host is not None or skills_dir is not None or project is not None:
        root = skills_root(host, home=Path.home(), project=project, skills_dir=skills_dir)
    res = deactivate(Store(store), name, root=root, force=force)

    def human() -> None:
        say("[green]DEACTIVATED[/green] {}: {} file(s) removed from {}", name, len(res.removed),
            ", ".join(res.roots))
        for k in res.kept:
            say("  kept {} (not a regular file)", k)

    emit(res.to_json(), human)


def register(app: typer.Typer) -> None:
    """Add `activate` and `deactivate` to the root app."""
    from acxoci.cli.common import transport_options

    app.command("activate")(transport_options()(cmd_activate))
    app.command("deactivate")(cmd_deactivate)
