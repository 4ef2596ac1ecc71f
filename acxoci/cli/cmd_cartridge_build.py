"""`acx cartridge build|sign|spec|skillset`: the producer side of cartridges."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.cartridge.reader import open_cartridge
from acxoci.cli.apps import cartridge_app
from acxoci.cli.common import load_signing_key
from acxoci.cli.output import Markup, emit, say
from acxoci.errors import InvalidInput
from acxoci.fsutil import require_file


@cartridge_app.command("build")
def build(
    pkg_dir: Path = typer.Argument(
        ..., help="Agent package directory (manifest.json, knowledge .md, memory-records.json)."
    ),
    out: Path = typer.Option(..., "-o", "--output", help="Cartridge file to write (.acx)."),
    publisher: str = typer.Option(..., "--publisher", help="Publisher id (reverse DNS, e.g. io.github.you)."),
    key: str = typer.Option(..., "--key", help="Ed25519 signing key: a PKCS#8 PEM file, env://VAR or a "
                            "pkcs11: URI."),
    password_env: str | None = typer.Option(
        None, "--password-env", help="Env var holding the key passphrase."
    ),
    created_at: str | None = typer.Option(
        None, "--now", help="RFC 3339 build and signing time (default: now; fix it for reproducible builds)."
    ),
    include_field_learned: bool = typer.Option(
        False, "--include-field-learned", help="Put field-learned memory in SAVE instead of quarantining it."
    ),
) -> None:
    """Build and sign a cartridge, deterministically for a fixed key and --now."""
    from acxoci.cartridge.build import build_cartridge, check_time  # heavy: only when building

    if created_at is not None:
        check_time(created_at, where="--now")
    result = build_cartridge(
        pkg_dir,
        out,
        publisher=publisher,
        key=load_signing_key(key, password_env),
        created_at=created_at,
        include_field_learned=include_field_learned,
    )
    data = result.to_json()

    def human() -> None:
        say("[green]built[/green] {}", str(out))
        say("cartridge id:  {}", data['cartridgeId'])
        say("rom hash:      {}", data['romDigest'])
        say("keyid:         {}", data['keyId'])
        say("signed at:     {}  ({} ROM objects)", data['signedAt'], data['fileCount'])
        say("field-learned: {}{}", data["fieldLearned"],
            f", {len(result.quarantined)} quarantined" if result.quarantined else "")

    emit(data, human)


@cartridge_app.command("sign")
def sign(
    file: Path = typer.Argument(..., help="Cartridge to re-sign in place."),
    key: str = typer.Option(..., "--key", help="Ed25519 signing key: a PKCS#8 PEM file, env://VAR or a "
                            "pkcs11: URI."),
    password_env: str | None = typer.Option(
        None, "--password-env", help="Env var holding the key passphrase."
    ),
    signed_at: str | None = typer.Option(None, "--now", help="RFC 3339 signing time (default: now)."),
    refresh: bool = typer.Option(False, "--refresh", help="Re-index ROM objects from their sources first."),
) -> None:
    """Re-sign a cartridge (after edits made through the library)."""
    from acxoci.cartridge.build import check_time, format_time
    from acxoci.cartridge.sign import resign_file

    require_file(file, "cartridge")
    when = check_time(signed_at, where="--now") if signed_at else format_time(datetime.now(UTC))
    result = resign_file(file, load_signing_key(key, password_env), signed_at=when, refresh=refresh)
    data = result.to_json()
    emit(
        data,
        lambda: say("[green]signed[/green] {}\nrom hash: {}\nkeyid:    {}\nsignedAt: {}",
                    str(file), data['romDigest'], data['keyId'], data['signedAt']),
    )


@cartridge_app.command("spec")
def spec(file: Path = typer.Argument(..., help="Cartridge to check.")) -> None:
    """Check the package-spec profile, ROM content rules, and the harness and policy documents."""
    from acxoci.cartridge.spec import check_spec

    report = check_spec(file)

    def human() -> None:
        say("validation: {}",
            Markup("[green]CLEAN ✓[/green]") if report.clean else Markup("[red]ISSUES[/red]"))
        engine = json.dumps(report.engine, separators=(",", ":")) if report.engine else "?"
        say("package-spec: {}  engine={}", report.schema_version or '?', engine)
        say("artifacts:")
        for a in report.artifacts:
            star = "*" if a.get("required") else " "
            count = f" ({a['count']})" if "count" in a else ""
            say("  {} {!s:<16}{!s:<28}{}{}", star, a.get('role'), a.get('schema'), a.get('kind'), count)
        for i in report.issues:
            say("  - {}{}", str(i), " (warning)" if i.severity != "error" else "")

    emit(report.to_json(), human)
    raise SystemExit(0 if report.clean else 1)


@cartridge_app.command("skillset")
def skillset(file: Path = typer.Argument(..., help="Cartridge to read.")) -> None:
    """Print the cartridge's CalSkillSet derived from its role, capabilities and skills, and check
    the stored rom/cal/skillset.json against it (exit 1 when they differ)."""
    from acxoci.cartridge.capabilities import read_capability
    from acxoci.cartridge.spec import PATH_SKILLSET
    from acxoci.workflow.model import CalSkillSet, derive_skillset, skillset_differences

    with open_cartridge(file) as cart:
        raw = cart.sqlar_read(PATH_SKILLSET)
        role = cart.meta().get("acx.role")
        task_types: list[str] = []
        for row in cart.capabilities():
            cap = read_capability(row.json)
            if cap is None:
                raise InvalidInput(f"capability {row.id} is not a well-typed acx.capability/1 record "
                                   "(see `acx cartridge spec`)", where=str(file))
            task_types.append(cap.task_type)
        skills = [
            {"path": s.sqlar_path, "name": s.name, "description": s.description, "version": s.skill_version}
            for s in cart.skills()
        ]
    derived = derive_skillset(role, task_types, [str(s["name"]) for s in skills])
    if raw is None:
        differences = [f"{PATH_SKILLSET} is missing"]
        stored_doc: Any = None
    else:
        try:
            stored_doc = loads_strict(raw)
        except MalformedError as exc:
            raise InvalidInput(f"{PATH_SKILLSET} is not JSON: {exc}", where=str(file)) from exc
        differences = skillset_differences(CalSkillSet.from_json(stored_doc), derived)

    def human() -> None:
        word = Markup("[green]CONSISTENT[/green]") if not differences else Markup("[red]DIFFERS[/red]")
        say("skillset {} ({})", word, str(file))
        for play in derived.to_json().get("plays", []):
            say("play {}: provides {}, can complete {}",
                str(play.get('role')), play.get('providesCapabilities'), play.get('canComplete'))
        for s in skills:
            say("  - {}: {}", str(s['name']), str(s['description']))
        for d in differences:
            say("  ✗ {}", d)

    emit(
        {
            "skillset": derived.to_json(),
            "stored": stored_doc,
            "consistent": not differences,
            "differences": differences,
            "skills": skills,
        },
        human,
    )
    if differences:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Commands are added to `cartridge_app` at import time."""
