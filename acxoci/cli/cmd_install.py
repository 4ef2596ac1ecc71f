"""`acx install`, `acx installed list|show|verify`, `acx uninstall`, `acx policy init`: verify before
install (docs/install.md). A refusal prints every failed check and exits with RefusedByPolicy's code."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import typer

from acxoci.attest.typed import opt
from acxoci.cli.apps import installed_app, policy_app
from acxoci.cli.common import parse_now, refuse_local_file, transport_options
from acxoci.cli.judging import MARK as _MARK
from acxoci.cli.judging import show_checks
from acxoci.cli.output import Markup, emit, say
from acxoci.errors import NotFound, RefusedByPolicy, UsageError
from acxoci.fsutil import atomic_write
from acxoci.install.hostfiles import host_inputs
from acxoci.install.install import ActivateRequest, InstallOutcome, install
from acxoci.install.reverify import verify_installed
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy, policy_from_json, starter_template
from acxoci.oci.settings import active_options
from acxoci.yamldoc import load_yaml

STORE_OPT = typer.Option(None, "--store", envvar="ACX_STORE", help="Install store folder.")
NOW_OPT = typer.Option(None, "--now", help="Judge at this RFC 3339 time instead of the clock.")


def _now() -> datetime:
    return datetime.now(UTC)


def _store(path: Path | None) -> Store:
    return Store(path)


def render_outcome(outcome: InstallOutcome) -> None:
    if outcome.lifecycle is not None:  # deprecated or superseded in the Exchange it came from
        say("[bold yellow]WARNING[/bold yellow] {}", str(outcome.lifecycle.get('message')))
    if outcome.status == "refused":
        failed = outcome.failed
        say("[bold red]REFUSED[/bold red] {} — {} check(s) failed; nothing was "
            "installed", outcome.reference, len(failed))
        show_checks(outcome.checks, accepted=False)
        return
    if outcome.status == "already-installed":
        say("[green]ALREADY INSTALLED[/green] {} @ {} (no change)", outcome.name or '', outcome.digest)
        return
    say("[bold green]INSTALLED[/bold green] {} @ {}", outcome.name or '', outcome.digest)
    show_checks(outcome.checks, accepted=True)
    say("  at {}", outcome.path or '')


def cmd_install(
    ref: str = typer.Argument(..., help="oci-layout:PATH[:tag|@digest] or host/repo[:tag|@digest]."),
    policy: Path | None = typer.Option(None, "--policy", help="Verification policy (YAML/JSON); required "
                                       "(make one with `acx policy init`)."),
    host: Path | None = typer.Option(None, "--host-descriptor", help="Host descriptor (acx.host.v1 JSON)."),
    host_limits: Path | None = typer.Option(None, "--host-limits", help="Host resource-limits.yaml."),
    store: Path | None = STORE_OPT,
    name: str | None = typer.Option(None, "--name", help="Install name (default: publisher/artifact-id)."),
    roster: Path | None = typer.Option(None, "--cartridges", help="A folder of more cartridges to staff a "
                                        "workflow from (scanned for *.acx)."),
    activate: str | None = typer.Option(None, "--activate", help="Also activate its skills for this host "
                                        "(claude, codex, cursor): both or neither; see `acx activate`."),
    allow_downgrade: bool = typer.Option(False, "--allow-downgrade",
                                         help="Replace a newer installed version of the same name."),
) -> None:
    """Pull REF, prove it and install it atomically — or refuse and install nothing.

    Checks, in order: registry, content digest, signature, trust, attestations, level, revocation,
    harness, policy budget (and staffing for a workflow), version (anti-rollback). A refusal lists
    every failed check and
    exits 8; the store is left byte-identical."""
    refuse_local_file(ref, "install")
    if policy is None:
        raise UsageError("acx install needs --policy FILE: the publishers and keys this host trusts",
                         hint="make one with `acx policy init -o policy.yaml --publisher ID "
                              "--trust-registry trust.json`")
    now = _now()
    vpolicy = load_policy(policy, now=now)
    hosts = host_inputs(host, host_limits, roster)
    request = None
    if activate is not None:
        from acxoci.install.activate import skills_root

        request = ActivateRequest(skills_root(activate, home=Path.home()), activate)
    from acxoci.cli.output import status_line

    with status_line("install") as note:
        outcome = install(ref, policy=vpolicy, store=_store(store), now=now, host=hosts,
                          remote=active_options(), name=name, allow_downgrade=allow_downgrade,
                          activate=request, note=note)

    def human() -> None:
        render_outcome(outcome)
        if outcome.activation is not None:
            from acxoci.cli.cmd_activate import render_activation

            render_activation(outcome.activation)

    emit(outcome.to_json(), human)
    if outcome.status == "refused":
        raise typer.Exit(RefusedByPolicy.exit_code)


def cmd_list(store: Path | None = STORE_OPT) -> None:
    """List installed items (only complete installs are ever visible)."""
    items = _store(store).list()
    data = {"store": str(_store(store).root), "items": [i.summary() for i in items]}

    def human() -> None:
        if not items:
            say("nothing installed")
        for i in items:
            if i.doc is None:
                say("{}  [red]broken record[/red]  {}  {}", i.name, i.digest, str(i.problem))
                continue
            say("{}  {}  {}  {}  {}", i.name, i.doc.kind, i.digest, str(opt(i.doc.trust)), i.doc.installed_at)

    emit(data, human)


def cmd_show(name: str = typer.Argument(..., help="Install name."),
             store: Path | None = STORE_OPT) -> None:
    """Show an installed item's install record (and where it is activated)."""
    from acxoci.install.activate import activations

    item = _store(store).require(name)
    acts = [a.summary() for a in activations(_store(store), item.name)]

    def human() -> None:
        r = item.doc
        if r is None:
            say("[bold]{}[/bold] @ {}: [red]broken record[/red]: {}", item.name, item.digest,
                str(item.problem))
            return
        say("[bold]{}[/bold] ({}) @ {}", item.name, r.kind, item.digest)
        say("  from {}, installed {}, trust {}, publisher {}",
            r.reference, r.installed_at, str(opt(r.trust)), str(opt(r.publisher_id)))
        say("  policy {} {}", r.policy.source, r.policy.digest)
        for c in r.checks:
            say("  {} {}. {}: {}", _MARK.get(c.status, '?'), c.order, c.id, c.reason)
        say("  {} file(s) at {}", len(r.files), str(item.path))
        for a in acts:
            say("  activated ({}) in {}: {}", a["host"] or "custom", str(a["root"]),
                ", ".join(str(s) for s in a["skills"] or []))

    emit({"path": str(item.path), "record": item.record, "activations": acts}, human)


def cmd_verify(name: str | None = typer.Argument(None, help="Install name (default: every item)."),
               policy: Path | None = typer.Option(None, "--policy", help="Judge under this policy (default: "
                                                  "the one recorded at install, read as it is now)."),
               store: Path | None = STORE_OPT,
               now_: str | None = NOW_OPT) -> None:
    """Judge installed items NOW (the decision `install` made, with today's trust registries, status
    lists and lifecycle records), and report activations that are orphaned, edited, or of items that
    no longer pass. Exit 1 when anything is out of line.

    Only what is installed: `acx verify REF --policy FILE` judges an artifact before install."""
    from acxoci.install.activate import activation_problems, scan_activations

    now = parse_now(now_)
    st = _store(store)
    items = [st.require(name)] if name else st.list()
    results = [verify_installed(item, policy, now, store=st, remote=active_options()) for item in items]
    by_name = {r.name: r for r in results}
    installed = {i.name: i for i in st.list()}
    activated: dict[str, list[str]] = {}
    acts, unreadable = scan_activations(st)
    for act in acts:
        if name is not None and act.name != name:
            continue
        problems = activation_problems(act, installed.get(act.name))
        verdict = by_name.get(act.name)
        if verdict is not None and not verdict.ok:
            problems.append(f"activated ({act.host or 'custom'}) {act.root}: the item no longer "
                            "passes its policy (`acx installed sync` deactivates it)")
        activated.setdefault(act.name, []).extend(problems)
    orphans = sorted(n for n in activated if n not in installed)
    ok = all(r.ok for r in results) and not any(activated.values()) and not unreadable
    data = {"ok": ok, "items": [{**r.to_json(), "activationProblems": activated.get(r.name, [])}
                                for r in results],
            "orphanedActivations": [{"name": n, "problems": activated[n]} for n in orphans],
            "unreadableActivations": unreadable}

    def human() -> None:
        head = Markup("[bold green]OK[/bold green]") if ok else Markup("[bold red]PROBLEMS[/bold red]")
        say("{} {} installed item(s) judged now", head, len(results))
        for r in results:
            mark = _MARK["pass"] if r.ok and not activated.get(r.name) else _MARK["fail"]
            verdict = "accepted" if r.ok else "REFUSED"
            files = "ok" if r.files_ok else "CHANGED"
            acts = ", activations out of line" if activated.get(r.name) else ""
            say("  {} {} @ {}: {}; files {}, revocation {}{}",
                mark, r.name, r.digest, verdict, files, r.revocation, acts)
            rev = r.judgement.check("revocation") if r.judgement is not None else None
            if rev is not None and rev.status == "pass" and rev.details.get("source") == "cache":
                say("      revocation from a cached status list: {}", rev.reason)  # as --json says
            for prob in [*r.problems, *activated.get(r.name, [])]:
                say("      - {}", prob)
        for u in unreadable:
            say("  {} unreadable activation manifest: {}", _MARK["fail"], u)
        for n in orphans:
            say("  {} {}: activated but no longer installed (orphaned)", _MARK['fail'], n)
            for prob in activated[n]:
                say("      - {}", prob)

    emit(data, human)
    if not ok:
        raise typer.Exit(1)


def cmd_sync(dry_run: bool = typer.Option(False, "--dry-run", help="Say what would change; change nothing."),
             policy: Path | None = typer.Option(None, "--policy", help="Judge under this policy (default: "
                                                "each item's recorded policy, read as it is now)."),
             store: Path | None = STORE_OPT,
             now_: str | None = NOW_OPT) -> None:
    """Deactivate every activation whose item is gone, was replaced, or no longer passes its policy
    now (run it on a timer). Edited files are never removed: such an activation is reported. Exit 1
    when something out of line could not be deactivated."""
    from acxoci.install.sync import sync

    steps = sync(_store(store), parse_now(now_), policy_file=policy, dry_run=dry_run, remote=active_options())
    stuck = [s for s in steps if s.action == "deactivate" and (s.done or "").startswith("failed")]
    data = {"ok": not stuck, "dryRun": dry_run, "steps": [s.to_json() for s in steps]}

    def human() -> None:
        changes = [s for s in steps if s.action == "deactivate"]
        verb = "would deactivate" if dry_run else "deactivated"
        say("{} activation(s) judged; {} {}", len(steps), len(changes), verb if changes else 'to change')
        for s in steps:
            word = "keep" if s.action == "keep" else (verb if not s.done or s.done.startswith("deactivated")
                                                       else "FAILED to deactivate")
            say("  {} in {}: {} — {}", s.name, s.root, word, s.reason)
            if s.done and s.done.startswith("failed"):
                say("      - {}", s.done)

    emit(data, human)
    if stuck:
        raise typer.Exit(1)


def cmd_uninstall(name: str = typer.Argument(..., help="Install name."),
                  keep_activations: bool = typer.Option(False, "--keep-activations",
                                                        help="Leave its activated skills in the hosts' "
                                                        "folders (they are then reported as orphaned)."),
                  store: Path | None = STORE_OPT) -> None:
    """Deactivate an installed item everywhere it is activated, then remove it (atomically: a rename
    out of the store, then deletion). An activated file edited since refuses (nothing is removed)."""
    from acxoci.install.activate import activations, deactivate

    st = _store(store)
    if not st.items_dir.is_dir():
        raise NotFound(f"nothing is installed under the name {name!r}", where=str(st.root))
    st.require(name)
    deactivated: list[str] = []
    if not keep_activations and activations(st, name):
        res = deactivate(st, name)
        deactivated = list(res.roots)
    with st.transaction() as txn:
        removed = txn.uninstall(name)
    data = {"uninstalled": name, "digests": [i.digest for i in removed], "deactivated": deactivated}

    def human() -> None:
        say("[green]UNINSTALLED[/green] {} ({})", name, ', '.join(i.digest for i in removed))
        for root in deactivated:
            say("  deactivated in {}", root)

    emit(data, human)


def _relative_to(path: Path, folder: Path) -> str:
    """`path` as the policy file will name it: relative to the policy's folder when possible."""
    try:
        return os.path.relpath(path.resolve(), folder.resolve())
    except ValueError:  # another drive (Windows): keep it absolute
        return str(path.resolve())


def starter_policy(publishers: list[str], registries: list[str], level: str | None,
                   issuers: list[str], issuer_registries: list[str]) -> str:
    """Pure: the commented starter with the named publishers (each trusting every registry) and an
    optional level floor filled in. Values are JSON scalars, which YAML reads unchanged."""
    text = starter_template()
    if publishers:
        block = ["publishers:"]
        for pid in publishers:
            block += [f"  - id: {json.dumps(pid)}",
                      f"    trustRegistries: [{', '.join(json.dumps(r) for r in registries)}]"]
        text = text.replace("publishers: []\n", "\n".join(block) + "\n", 1)
    if level is not None:
        minimum = int(level) if level.isascii() and level.isdigit() else level
        block = ["level:", f"  minimum: {json.dumps(minimum)}"]
        if issuers:
            block.append(f"  issuers: [{', '.join(json.dumps(i) for i in issuers)}]")
        if issuer_registries:
            block.append(f"  issuerRegistries: [{', '.join(json.dumps(r) for r in issuer_registries)}]")
        text = text.replace("level: {}\n", "\n".join(block) + "\n", 1)
    return text


def cmd_policy_init(
    output: Path = typer.Option(Path("acx-policy.yaml"), "-o", "--output", help="Where to write the policy."),
    publisher: list[str] = typer.Option([], "--publisher", help="Trust this publisher id (repeatable)."),
    trust_registry: list[Path] = typer.Option(
        [], "--trust-registry", help="Trust registry with the publisher's keys (repeatable)."),
    level: str | None = typer.Option(None, "--require-level",
                                     help="Require a proven level (number or tier)."),
    issuer: list[str] = typer.Option([], "--issuer", help="Accepted level issuer DID (repeatable)."),
    issuer_registry: list[Path] = typer.Option(
        [], "--issuers", help="Registry with the level issuers' keys (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a commented verification policy; with --publisher and --trust-registry it trusts that
    publisher's registered keys (checked before writing), otherwise it trusts nobody yet."""
    if output.exists() and not force:
        raise UsageError(f"{output} exists", hint="pass --force to overwrite")
    if bool(publisher) != bool(trust_registry):
        raise UsageError("--publisher and --trust-registry go together",
                         hint="acx policy init --publisher ID --trust-registry trust.json")
    if (issuer or issuer_registry) and level is None:
        raise UsageError("--issuer and --issuers need --require-level")
    if level is not None and not issuer_registry:
        raise UsageError("--require-level needs --issuers FILE (the level issuers' keys)")
    folder = output.parent
    text = starter_policy(publisher, [_relative_to(r, folder) for r in trust_registry], level, issuer,
                          [_relative_to(r, folder) for r in issuer_registry])
    # Fail closed before writing: the document (here with absolute paths, as the folder may not
    # exist yet) must load, schema and every named file, and each publisher must have a key in
    # its registries, or the policy would refuse everything.
    check = starter_policy(publisher, [str(r.resolve()) for r in trust_registry], level, issuer,
                           [str(r.resolve()) for r in issuer_registry])
    pol = policy_from_json(load_yaml(check, what="policy", where=str(output)), base=Path.cwd(), now=_now(),
                           source=str(output))
    for pub in pol.publishers:
        if not any(pub.covers(k.publisher_id) for k in pub.registry.keys):
            raise UsageError(f"no key of publisher {pub.id} in {', '.join(map(str, trust_registry))}",
                             hint=f"acx key trust KEY.pub.pem --publisher {pub.id} --trust-registry REGISTRY")
    atomic_write(output, text.encode("utf-8"), mode=0o644)
    trusted = ", ".join(publisher) or "nobody yet: edit `publishers` before installing anything"
    emit({"written": str(output), "publishers": publisher},
         lambda: say("wrote {} (trusts {})", str(output), trusted))


def register(app: typer.Typer) -> None:
    """Add `install`, `uninstall` to the root app, list/show/verify to `installed`, init to `policy`."""
    app.command("install")(transport_options(layout="ref")(cmd_install))
    app.command("uninstall")(cmd_uninstall)
    installed_app.command("list")(cmd_list)
    installed_app.command("show")(cmd_show)
    installed_app.command("verify")(transport_options()(cmd_verify))
    installed_app.command("sync")(transport_options()(cmd_sync))
    policy_app.command("init")(cmd_policy_init)
