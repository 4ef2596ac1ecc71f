"""`acx release plan|run|resume|status`: resumable release pipelines (acxoci.release).

Exit codes of `run`/`resume` let CI tell "retry later" from "a person must act":
0 the goal is done (read back and accepted); 6 retry later (registry/network unavailable, or a
live runner holds the goal's lease); 9 blocked (gate, validation, read-back mismatch); 5 blocked on
credentials only. `status` is a read of the journal's projection and exits 0."""

from __future__ import annotations

from pathlib import Path

import typer

from acxoci.cli.apps import release_app
from acxoci.cli.common import transport_options
from acxoci.cli.output import cell, emit, say, show_table
from acxoci.release.effects import plan_effects
from acxoci.release.interpreter import RunReport, goal_status, resume_goal, run_goal
from acxoci.release.plan import load_plan
from acxoci.release.status import GoalStatus

STATE_STYLE = {"done": "green", "open": "cyan", "blocked": "bold red", "deferred": "yellow"}
RETAG_HELP = "Allow moving existing tags (the gate)."
RUNNER_HELP = "Runner id for the lease (default host:pid)."
STATE_DIR_HELP = "Folder of goal journals (default: $ACX_RELEASE_DIR or ./.acx-release)."


def _render_status(status: GoalStatus, headline: str) -> None:
    style = STATE_STYLE.get(status.state, "")
    say("[{}]{}[/{}] {}", style, status.state.upper(), style, headline)
    counts = status.counts()
    say("{}", ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    rows = []
    for e in status.effects:
        if e.state == "done":
            ev = e.evidence or {}
            note = str(ev.get("proof") or ev.get("acceptance") or ev.get("skipped") or "")
        else:
            note = (f"{e.failure.cls}: {e.failure.message} → " if e.failure else "") + e.next_action
        s = STATE_STYLE.get(e.state, "")
        rows.append([cell("[{}]{}[/{}]", s, e.state, s), e.effect.describe(), str(e.attempts), note])
    show_table(("state", "effect", "tries", "evidence / next action"), rows)


def _finish(report: RunReport) -> None:
    st = report.status
    headline = (f"release {st.goal_id}: this run executed {report.executed} effect(s), "
                f"{report.writes} wrote to a registry")
    emit(report.to_json(), lambda: _render_status(st, headline))
    code = report.exit_code()
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the release commands to the `release` group."""

    @release_app.command("plan")
    def plan_cmd(file: Path = typer.Argument(..., help="The release plan (acx-release.yaml).")) -> None:
        """Print the typed effects the plan would execute, in order, with dependencies. Changes nothing."""
        plan = load_plan(file)
        effects = plan_effects(plan)
        data = {"goal": plan.goal_id, "planDigest": plan.digest, "policy": str(plan.policy),
                "effects": [e.to_json() | {"description": e.describe()} for e in effects]}

        def human() -> None:
            say("[bold]goal {}[/bold]: {} effects (acceptance policy {})",
                plan.goal_id, len(effects), str(plan.policy))
            index = {e.id: i for i, e in enumerate(effects, 1)}
            for i, e in enumerate(effects, 1):
                mark = "write" if e.writes else "local" if e.kind == "prepare" else "check"
                deps = f"  [dim]after {', '.join(str(index[d]) for d in e.deps)}[/dim]" if e.deps else ""
                say("{:3d}. {} {}{}", i, f'[{mark}]', e.describe(), deps)

        emit(data, human)

    @release_app.command("run")
    @transport_options()
    def run_cmd(
        file: Path = typer.Argument(..., help="The release plan (acx-release.yaml)."),
        allow_retag: bool = typer.Option(False, "--allow-retag", help=RETAG_HELP),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
        runner: str | None = typer.Option(None, "--runner", help=RUNNER_HELP),
    ) -> None:
        """Execute the plan's goal, resuming from its journal if it was started before."""
        _finish(run_goal(load_plan(file), root=state_dir, runner=runner, allow_retag=allow_retag))

    @release_app.command("resume")
    @transport_options()
    def resume_cmd(
        goal: str = typer.Argument(..., help="Goal id (the plan's goal.id)."),
        allow_retag: bool = typer.Option(False, "--allow-retag", help=RETAG_HELP),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
        runner: str | None = typer.Option(None, "--runner", help=RUNNER_HELP),
    ) -> None:
        """Resume a goal from its journal (reloads the plan it was opened with)."""
        _finish(resume_goal(goal, root=state_dir, runner=runner, allow_retag=allow_retag))

    @release_app.command("status")
    def status_cmd(
        goal: str = typer.Argument(..., help="Goal id."),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
    ) -> None:
        """Each effect's state, receipt, evidence and next action: a projection of the journal alone."""
        st = goal_status(goal, root=state_dir)
        emit(st.to_json(), lambda: _render_status(st, f"release {st.goal_id}"))
