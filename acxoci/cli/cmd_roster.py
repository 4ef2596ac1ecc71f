"""`acx ls DIR`: a roster overview of the cartridges in a folder (id, role, trust, level, skills),
each verified, never modified. The level shown is the publisher's declared one (not proven)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from acxoci.cli.common import load_registry as _registry
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import emit, say
from acxoci.errors import InvalidInput, NotFound
from acxoci.workflow.ready import RosterCartridge, directory_roster, load_roster_entry

#: More cartridges than this in one folder is refused rather than verified one by one for minutes.
MAX_LS_ENTRIES = 10_000


def _row(c: RosterCartridge) -> dict[str, Any]:
    v = c.verdict
    level: int | None = None
    declared = c.declared_level
    if declared is not None and declared.isascii() and declared.isdigit() and len(declared) <= 6:
        level = int(declared)
    return {
        "file": c.source,
        "id": c.cartridge_id,
        "name": c.agent_name,
        "role": c.role,
        "trust": v.trust if v is not None else "unreadable",
        "status": v.status if v is not None else "invalid",
        "level": {"declared": level, "proven": None},
        "skills": list(c.skills),
        "error": c.error,
    }


def ls_cmd(
    folder: Path = typer.Argument(Path("."), help="Folder scanned recursively for *.acx."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    now: str | None = typer.Option(None, "--now", help="Evaluate trust at this time (RFC 3339)."),
) -> None:
    """Roster overview: every cartridge's id, role, trust, declared level and skills."""
    if not folder.is_dir():
        raise NotFound(f"no such folder: {folder}")
    at = _now(now)
    registry = _registry(trust_registry, at)
    found = directory_roster(folder)
    if len(found) > MAX_LS_ENTRIES:
        raise InvalidInput(
            f"{len(found)} cartridges (at most {MAX_LS_ENTRIES} are listed)", where=str(folder)
        )
    rows = [_row(load_roster_entry(src, path, registry=registry, now=at)) for src, path in found]

    def human() -> None:
        say("{:<28} {:<20} {:<10} {:<12} SKILLS", 'AGENT', 'ROLE', 'TRUST', 'LEVEL')
        for r in rows:
            name = r["name"] or r["file"]
            lv = f"Lv.{r['level']['declared']} decl." if r["level"]["declared"] is not None else "—"
            skills = ", ".join(r["skills"]) or "—"
            say("{:<28.28} {:<20.20} {:<10} {:<12} {}",
                str(name), str(r["role"] or "—"), r["trust"], lv, skills)
            say("  {}", str(r['id'] or r['error'] or '—'))
        say("{} cartridge(s) in {}", len(rows), str(folder))

    emit({"folder": str(folder), "cartridges": rows}, human)


def register(app: typer.Typer) -> None:
    """Add `acx ls` (alias `acx list`)."""
    app.command("ls")(ls_cmd)
    app.command("list", hidden=True)(ls_cmd)
