"""`acx release plan|run|resume|status|pause|unpause|approve`: resumable release pipelines
(acxoci.release).

Exit codes of `run`/`resume` let CI tell "retry later" from "a person must act":
0 the goal is done (its terminal audit passed, acceptance read-back included); 6 retry later
(registry/network unavailable or throttled, a monitor still waiting, a closeout to redo, or a live
runner holds the goal's lease); 9 a person must act (a gate or approval, validation, read-back
mismatch, paused, stopped with repair_required or replan_required); 5 blocked on credentials only.
`status` is a read of the journal's projection and exits 0; `pause`, `unpause` and `approve`
append the operator's word to the journal (also while a runner holds the goal)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import typer

from acxoci.cli.apps import release_app
from acxoci.cli.common import transport_options
from acxoci.cli.output import cell, emit, say, show_table, status_line
from acxoci.release.effects import plan_effects
from acxoci.release.interpreter import (
    OBSERVERS,
    RunReport,
    goal_status,
    operator_entry,
    resume_goal,
    run_goal,
)
from acxoci.release.journal import ApprovalEntry, AttemptEntry, EffectEntry, PauseEntry, UnpauseEntry
from acxoci.release.lease import default_runner_id
from acxoci.release.plan import load_plan
from acxoci.release.status import GoalStatus

STATE_STYLE = {"done": "green", "open": "cyan", "blocked": "bold red", "deferred": "yellow"}
QUOTA_STYLE = {"eligible": "green", "waiting": "cyan", "throttled": "yellow", "paused": "yellow",
               "focus_wait": "yellow", "operator_gate": "bold magenta", "blocked_health": "bold red"}
RETAG_HELP = "Allow moving existing tags (the gate)."
RUNNER_HELP = "Runner id for the lease (default host:pid)."
STATE_DIR_HELP = "Folder of goal journals (default: $ACX_RELEASE_DIR or ./.acx-release)."
REPAIRED_HELP = "Say what was repaired: lifts a repair_required stop and starts counting progress afresh."
BY_HELP = "Who says so (default: the runner id)."


def _render_status(status: GoalStatus, headline: str) -> None:
    style = STATE_STYLE.get(status.state, "")
    say("[{}]{}[/{}] {}", style, status.state.upper(), style, headline)
    ident = status.identity
    if ident.vision:
        say("vision: {}", ident.vision)
    for c in ident.criteria:
        say("acceptance: {}", c)
    for n in ident.non_goals:
        say("non-goal: {}", n)
    if ident.authority:
        say("authority: {}", ", ".join(f"{a.role} {a.source}" + (f" ({a.digest[:19]}…)" if a.digest
                                                                  else f" ({a.problem})")
                                       for a in ident.authority))
    q = status.quota
    qs = QUOTA_STYLE.get(q.state, "")
    say("quota: [{}]{}[/{}] — {}", qs, q.state, qs, q.reason)
    spent = status.ledger.net()
    say("spent so far: {} request(s), {} byte(s), {} publish(es)", spent.requests, spent.bytes,
        spent.publishes)
    for m in status.monitors:
        if m.state != "done":
            seen = ", ".join(f"{t.target}={t.value or t.error or 'absent'} (unchanged {t.no_change})"
                             for t in m.targets) or "not observed yet"
            say("monitor {}: {}{}", m.effect_id, seen, f"; next at {m.next_at}" if m.next_at else "")
    for g in status.gates:
        say("gate {} ({}): {} → {}", g.id, g.kind, g.reason, g.action)
    if status.stop is not None:
        say("[bold red]stopped[/bold red]: {}: {}", status.stop.cls, status.stop.reason)
    if status.closeout.failure is not None and status.state != "done":
        say("closeout: {}: {}", status.closeout.failure.cls, status.closeout.failure.message)
    t = status.next_transition
    say("next: {}{} ({}){}", t.action, f" — {t.command}" if t.command else "", t.why,
        f" not before {t.at}" if t.at else "")
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


class _Progress:
    """A run observer (the interpreter's OBSERVERS seam) that tells the status line which effect is
    being worked on and where it ended, by its description and digest."""

    def __init__(self, note: Callable[[str], None], names: Mapping[str, str]) -> None:
        self.note, self.names = note, names

    def after_work(self, effect_id: str) -> None:
        self.note(f"{self.names.get(effect_id, effect_id)}: recording the result")

    def after_entry(self, entry: Any) -> None:
        if isinstance(entry, AttemptEntry):
            self.note(f"{self.names.get(entry.effect, entry.effect)} (attempt {entry.attempt})")
        elif isinstance(entry, EffectEntry):
            evidence = entry.evidence or {}
            digest = evidence.get("digest") or evidence.get("resolves")
            failure = getattr(entry.failure, "cls", None)
            self.note(f"{self.names.get(entry.effect, entry.effect)}: {entry.to}"
                      + (f" {digest}" if isinstance(digest, str) else "")
                      + (f" ({failure})" if failure else ""))


@contextlib.contextmanager
def _progress(goal: str, names: Mapping[str, str]) -> Iterator[None]:
    """The release's progress line on a terminal (quiet otherwise, and under --json or -q)."""
    with status_line(f"release {goal}") as note:
        if note is None:
            yield
            return
        observer = _Progress(note, names)
        OBSERVERS.append(observer)
        try:
            yield
        finally:
            OBSERVERS.remove(observer)


def _finish(report: RunReport) -> None:
    st = report.status
    headline = (f"release {st.goal_id}: this run executed {report.executed} effect(s), "
                f"{report.writes} wrote to a registry")
    emit(report.to_json(), lambda: _render_status(st, headline))
    code = report.exit_code()
    if code:
        raise typer.Exit(code)


def _show(st: GoalStatus, headline: str) -> None:
    emit(st.to_json(), lambda: _render_status(st, headline))


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
                mark = ("write" if e.writes else "local" if e.kind == "prepare"
                        else "watch" if e.kind == "monitor" else "check")
                if e.deps:
                    say("{:3d}. {} {}  [dim]after {}[/dim]", i, f"[{mark}]", e.describe(),
                        ", ".join(str(index[d]) for d in e.deps))
                else:
                    say("{:3d}. {} {}", i, f"[{mark}]", e.describe())

        emit(data, human)

    @release_app.command("run")
    @transport_options(referrers=True)
    def run_cmd(
        file: Path = typer.Argument(..., help="The release plan (acx-release.yaml)."),
        allow_retag: bool = typer.Option(False, "--allow-retag", help=RETAG_HELP),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
        runner: str | None = typer.Option(None, "--runner", help=RUNNER_HELP),
        repaired: str | None = typer.Option(None, "--repaired", help=REPAIRED_HELP),
    ) -> None:
        """Execute the plan's goal, resuming from its journal if it was started before."""
        plan = load_plan(file)
        with _progress(plan.goal_id, {e.id: e.describe() for e in plan_effects(plan)}):
            report = run_goal(plan, root=state_dir, runner=runner, allow_retag=allow_retag, repaired=repaired)
        _finish(report)

    @release_app.command("resume")
    @transport_options(referrers=True)
    def resume_cmd(
        goal: str = typer.Argument(..., help="Goal id (the plan's goal.id)."),
        allow_retag: bool = typer.Option(False, "--allow-retag", help=RETAG_HELP),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
        runner: str | None = typer.Option(None, "--runner", help=RUNNER_HELP),
        repaired: str | None = typer.Option(None, "--repaired", help=REPAIRED_HELP),
    ) -> None:
        """Resume a goal from its journal (reloads the plan it was opened with)."""
        with _progress(goal, {}):
            report = resume_goal(goal, root=state_dir, runner=runner, allow_retag=allow_retag,
                                 repaired=repaired)
        _finish(report)

    @release_app.command("status")
    def status_cmd(
        goal: str = typer.Argument(..., help="Goal id."),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
    ) -> None:
        """The journal's projection: quota state, monitors, gates, spend, next safe transition, and each
        effect's state, receipt, evidence and next action."""
        st = goal_status(goal, root=state_dir)
        _show(st, f"release {st.goal_id}")

    @release_app.command("pause")
    def pause_cmd(
        goal: str = typer.Argument(..., help="Goal id."),
        reason: str | None = typer.Option(None, "--reason", help="Why (shown by status)."),
        by: str | None = typer.Option(None, "--by", help=BY_HELP),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
    ) -> None:
        """Pause the goal: no run does any work (a running one stops before its next todo) until unpause."""
        st = operator_entry(goal, PauseEntry(by=by or default_runner_id(), reason=reason), root=state_dir)
        _show(st, f"release {st.goal_id}: paused")

    @release_app.command("unpause")
    def unpause_cmd(
        goal: str = typer.Argument(..., help="Goal id."),
        reason: str | None = typer.Option(None, "--reason", help="Why (journaled)."),
        by: str | None = typer.Option(None, "--by", help=BY_HELP),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
    ) -> None:
        """Lift a pause (`release resume` then continues the goal)."""
        st = operator_entry(goal, UnpauseEntry(by=by or default_runner_id(), reason=reason), root=state_dir)
        _show(st, f"release {st.goal_id}: unpaused")

    @release_app.command("approve")
    def approve_cmd(
        goal: str = typer.Argument(..., help="Goal id."),
        approval: str = typer.Argument(..., help="The approval's id (observe.approvals[].id)."),
        by: str = typer.Option(..., "--by", help="Who approves (journaled)."),
        note: str | None = typer.Option(None, "--note", help="A note (journaled)."),
        state_dir: Path | None = typer.Option(None, "--state-dir", help=STATE_DIR_HELP),
    ) -> None:
        """Record an approval: the effects it gates may run on the next `release resume`."""
        st = operator_entry(goal, ApprovalEntry(approval=approval, by=by, note=note), root=state_dir)
        _show(st, f"release {st.goal_id}: approval {approval} recorded")
