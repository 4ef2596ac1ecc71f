"""`acx init [DIR] --role ROLE` and `acx init --from-code DIR --output DIR`: scaffold a fillable
agent package, or an agent set, a workflow and RAC derived from a codebase (docs/guide.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from acxoci.authoring.roles import DEFAULT_ROLE, ROLES
from acxoci.cli.output import emit, say
from acxoci.errors import UsageError


def init(
    directory: Path | None = typer.Argument(
        None, help="Folder to create (default: ./new-agent-package; with --from-code: the output folder)."
    ),
    role: str = typer.Option(DEFAULT_ROLE, "--role", help="Role id: " + ", ".join(sorted(ROLES)) + "."),
    name: str | None = typer.Option(None, "--name", help="Agent name (default: 'TODO <class>')."),
    from_code: Path | None = typer.Option(
        None, "--from-code", help="Analyse this codebase and generate an agent set instead."
    ),
    out: Path | None = typer.Option(
        None, "-o", "--output", help="Output folder for --from-code (default: ./agent-set)."
    ),
    force: bool = typer.Option(False, "--force", help="Write into a folder that is not empty."),
) -> None:
    """Scaffold a fillable agent package that `acx cartridge build` accepts as is, or (--from-code)
    generate one package per role a codebase calls for, a workflow wiring them and its RAC."""
    from acxoci.authoring.write import is_inside, write_tree

    if from_code is None:
        if out is not None:
            raise UsageError("--output goes with --from-code", hint="acx init DIR --role ROLE")
        if role not in ROLES:
            raise UsageError(f"unknown role {role!r}", hint="one of: " + ", ".join(sorted(ROLES)))
        from acxoci.authoring.scaffold import package_files

        target = directory or Path("new-agent-package")
        written = write_tree(target, package_files(role, name=name), force=force)
        data = {"folder": str(target), "role": role, "files": written}

        def human() -> None:
            say("SCAFFOLDED {} ({}, {} files)", str(target), role, len(written))
            say("Fill in manifest.json, memory-records.json and the skill, then:")
            say("  acx cartridge build {} -o agent.acx --publisher ID --key KEY", str(target))

        emit(data, human)
        return
    if directory is not None and out is not None:
        raise UsageError("give the output folder once: --output DIR or DIR")
    from acxoci.authoring.detect import detect
    from acxoci.authoring.generate import WORKFLOW_PATH, agent_set_files
    from acxoci.authoring.walk import walk

    dest = out or directory or Path("agent-set")
    inside = is_inside(dest, from_code)
    analysis = detect(walk(from_code, exclude=dest if inside else None))
    written = write_tree(dest, agent_set_files(analysis), force=force)
    data = {"codebase": str(from_code), "folder": str(dest), **analysis.to_json(), "files": written}

    def human_set() -> None:
        say("ANALYSED {} ({} files) → {}", str(from_code), analysis.files_seen, str(dest))
        for f in analysis.roles:
            say("  • {:<16} caps={}  ({})", f.role, ','.join(f.tasks), '; '.join(f.reasons))
        say("Required Available Context (descriptions only):")
        for r in analysis.rac:
            say("  □ {:<16} \\[{}] {}", r.id, r.kind, r.description)
        if analysis.truncated:
            say("[yellow]stopped early: {}[/yellow]", analysis.truncated)
        for path in analysis.unreadable[:20]:
            say("[yellow]not read[/yellow]: {}", path)
        if len(analysis.unreadable) > 20:
            say("[yellow]not read[/yellow]: … and {} more (--json lists them all)",
                len(analysis.unreadable) - 20)
        say("Next: fill agents/<role>/, then acx workflow lint {} --publish", str(dest / WORKFLOW_PATH))

    emit(data, human_set)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
