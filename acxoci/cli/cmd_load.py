"""`acx load FILE --host H`: verify, install and activate a local cartridge in one step, by the same
decision and activation code as `acx install --activate` (docs/install.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from acxoci.cli.common import parse_now
from acxoci.cli.output import emit, say
from acxoci.errors import RefusedByPolicy, UsageError
from acxoci.fsutil import require_file


def load_cmd(
    file: Path = typer.Argument(..., help="The .acx cartridge file."),
    host: str | None = typer.Option(None, "--host", help="claude, codex or cursor (where it reads skills)."),
    skills_dir: Path | None = typer.Option(None, "--skills-dir", help="Write into this skills folder."),
    policy: Path | None = typer.Option(None, "--policy", help="Verification policy (as for `acx install`)."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="Trust the publishers this "
                                               "acx.trust-registry/1 file lists (instead of --policy)."),
    print_only: bool = typer.Option(False, "--dry-run", help="Judge and show what would happen; write "
                                    "nothing."),
    name: str | None = typer.Option(None, "--name", help="Install name (default: publisher/artifact-id)."),
    force: bool = typer.Option(False, "--force", help="Replace skill folders of another origin."),
    store: Path | None = typer.Option(None, "--store", envvar="ACX_STORE", help="Install store folder."),
    now: str | None = typer.Option(None, "--now", help="Judge at this RFC 3339 time instead of the clock."),
) -> None:
    """Try a local cartridge in a host in one step: judge it as `acx install` would, install it into
    the store and activate its skills, both or neither (`installed verify` and `installed sync` see
    it). With --dry-run, show the verdict and where the skills would go, and write nothing."""
    from acxoci.cli.judging import render_judgement
    from acxoci.install.activate import skills_root
    from acxoci.install.load import load, policy_for, preview
    from acxoci.install.store import Store
    from acxoci.install.vpolicy import load_policy

    require_file(file, "cartridge")
    if host is None and skills_dir is None:
        raise UsageError("name a host (--host claude|codex|cursor) or a folder (--skills-dir DIR)")
    from acxoci.artifact import detect_kind

    if detect_kind(file) != "cartridge":
        raise UsageError(f"{file} is a {detect_kind(file)}; acx load takes a cartridge (.acx)",
                         hint="install a workflow or graph from a registry with `acx install REF`")
    at = parse_now(now)
    st = Store(store)
    root = skills_root(host, home=Path.home(), skills_dir=skills_dir)
    if print_only:
        if policy is not None and trust_registry is not None:
            raise UsageError("give --policy FILE or --trust-registry FILE, not both")
        if policy is None and trust_registry is None:
            raise UsageError("acx load needs --policy FILE or --trust-registry FILE: whom you trust")
        from acxoci.install.load import trust_registry_policy

        if policy is not None:
            pol = load_policy(policy, now=at)
        else:
            assert trust_registry is not None
            pol = trust_registry_policy(trust_registry, at)
        card = preview(file, pol, root, at)

        def show() -> None:
            render_judgement(card.judgement, header=" (preview: nothing was written)")
            say("  would activate {} skill(s) into {}: {}", len(card.skills), str(root),
                ", ".join(card.skills))

        emit(card.to_json(), show)
        if not card.judgement.ok:
            raise typer.Exit(RefusedByPolicy.exit_code)
        return
    pol_path = policy_for(st, policy, trust_registry, at)
    outcome = load(file, policy=pol_path, store=st, root=root, host=host, now=at, name=name, force=force)

    def human() -> None:
        from acxoci.cli.cmd_activate import render_activation
        from acxoci.cli.cmd_install import render_outcome

        render_outcome(outcome)
        if outcome.activation is not None:
            render_activation(outcome.activation)

    emit(outcome.to_json(), human)
    if outcome.status == "refused":
        raise typer.Exit(RefusedByPolicy.exit_code)


def register(app: typer.Typer) -> None:
    """Add `acx load`."""
    app.command("load")(load_cmd)
