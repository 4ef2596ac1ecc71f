"""`acx install`, `acx installed list|show|verify`, `acx uninstall`, `acx policy init`: verify before
install (docs/install.md). A refusal prints every failed check and exits with RefusedByPolicy's code."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.markup import escape

from acxoci.cli.apps import installed_app, policy_app
from acxoci.cli.common import transport_options
from acxoci.cli.output import console, emit
from acxoci.errors import InvalidInput, NotFound, RefusedByPolicy, UsageError
from acxoci.install.install import HostInputs, InstallOutcome, install
from acxoci.install.reverify import verify_item
from acxoci.install.store import Store
from acxoci.install.vpolicy import BUILTIN, load_policy, starter_template
from acxoci.oci.settings import active_options
from attest.canonical import loads_strict, sha256_digest
from attest.errors import AttestError

_MARK = {"pass": "[green]✓[/green]", "skip": "[dim]-[/dim]", "fail": "[red]✗[/red]",
         "unavailable": "[red]?[/red]"}


STORE_OPT = typer.Option(None, "--store", envvar="ACX_STORE", help="Install store folder.")


def _now() -> datetime:
    return datetime.now(UTC)


def _store(path: Path | None) -> Store:
    return Store(path)


def _host_inputs(host: Path | None, host_limits: Path | None, roster: Path | None) -> HostInputs:
    """Read the host descriptor and resource limits (bad files are InvalidInput/NotFound, not refusals)."""
    descriptor = d_digest = l_digest = None
    limits = None
    if host is not None:
        try:
            data = host.read_bytes()
        except FileNotFoundError as exc:
            raise NotFound(f"host descriptor not found: {host}") from exc
        try:
            descriptor = loads_strict(data)
        except AttestError as exc:
            raise InvalidInput(f"host descriptor is not valid JSON: {exc}", where=str(host)) from exc
        if not isinstance(descriptor, dict):
            raise InvalidInput("host descriptor is not a JSON object", where=str(host))
        from acxoci.policy.harness import parse_host

        parse_host(descriptor, where=str(host))
        d_digest = sha256_digest(data)
    if host_limits is not None:
        from acxoci.policy.limits import load_host_limits

        limits = load_host_limits(host_limits)
        l_digest = sha256_digest(host_limits.read_bytes())
    return HostInputs(descriptor, str(host.resolve()) if host else None, d_digest, limits,
                      str(host_limits.resolve()) if host_limits else None, l_digest, roster)


def _render(outcome: InstallOutcome) -> None:
    if outcome.status == "refused":
        failed = outcome.failed
        console.print(f"[bold red]REFUSED[/bold red] {escape(outcome.reference)} — {len(failed)} check(s) "
                      "failed; nothing was installed")
        for c in failed:
            console.print(f"  {_MARK[c.status]} {c.order}. {c.id} \\[{escape(c.kind or '')}]: "
                          f"{escape(c.reason)}")
        return
    if outcome.status == "already-installed":
        console.print(f"[green]ALREADY INSTALLED[/green] {escape(outcome.name or '')} @ {outcome.digest} "
                      "(no change)")
        return
    console.print(f"[bold green]INSTALLED[/bold green] {escape(outcome.name or '')} @ {outcome.digest}")
    for c in outcome.checks:
        console.print(f"  {_MARK[c.status]} {c.order}. {c.id}: {escape(c.reason)}")
    console.print(f"  at {escape(outcome.path or '')}")


def cmd_install(
    ref: str = typer.Argument(..., help="oci-layout:PATH[:tag|@digest] or host/repo[:tag|@digest]."),
    policy: Path | None = typer.Option(None, "--policy", help="Verification policy (YAML/JSON)."),
    host: Path | None = typer.Option(None, "--host", help="Host descriptor (acx.host.v1 JSON)."),
    host_limits: Path | None = typer.Option(None, "--host-limits", help="Host resource-limits.yaml."),
    store: Path | None = STORE_OPT,
    name: str | None = typer.Option(None, "--name", help="Install name (default: publisher/artifact-id)."),
    roster: Path | None = typer.Option(None, "--roster", help="More cartridges for a workflow's ready."),
) -> None:
    """Pull REF, prove it and install it atomically — or refuse and install nothing.

    Checks, in order: registry, content digest, signature, trust, attestations, level, revocation,
    harness, policy budget (and staffing for a workflow). A refusal lists every failed check and
    exits 8; the store is left byte-identical."""
    now = _now()
    vpolicy = load_policy(policy, now=now)
    hosts = _host_inputs(host, host_limits, roster)
    outcome = install(ref, policy=vpolicy, store=_store(store), now=now, host=hosts,
                      remote=active_options(), name=name)
    emit(outcome.to_json(), lambda: _render(outcome))
    if outcome.status == "refused":
        raise typer.Exit(RefusedByPolicy.exit_code)


def cmd_list(store: Path | None = STORE_OPT) -> None:
    """List installed items (only complete installs are ever visible)."""
    items = _store(store).list()
    data = {"store": str(_store(store).root), "items": [i.summary() for i in items]}

    def human() -> None:
        if not items:
            console.print("nothing installed")
        for i in items:
            s = i.summary()
            console.print(f"{escape(i.name)}  {s['kind']}  {i.digest}  {s['trust']}  {s['installedAt']}")

    emit(data, human)


def cmd_show(name: str = typer.Argument(..., help="Install name."),
             store: Path | None = STORE_OPT) -> None:
    """Show an installed item's install record."""
    item = _store(store).require(name)

    def human() -> None:
        r = item.record
        console.print(f"[bold]{escape(item.name)}[/bold] ({r.get('kind')}) @ {item.digest}")
        console.print(f"  from {escape(str(r.get('reference')))}, installed {r.get('installedAt')}, "
                      f"trust {r.get('trust')}, publisher {escape(str(r.get('publisherId')))}")
        console.print(f"  policy {escape(str(r.get('policy', {}).get('source')))} "
                      f"{r.get('policy', {}).get('digest')}")
        for c in r.get("checks", []):
            console.print(f"  {_MARK.get(c.get('status'), '?')} {c.get('order')}. {c.get('id')}: "
                          f"{escape(str(c.get('reason')))}")
        console.print(f"  {len(r.get('files', []))} file(s) at {escape(str(item.path))}")

    emit({"path": str(item.path), "record": item.record}, human)


def cmd_verify(name: str | None = typer.Argument(None, help="Install name (default: every item)."),
               policy: Path | None = typer.Option(None, "--policy", help="Policy for revocation (default: "
                                                  "the one recorded at install, if it still exists)."),
               store: Path | None = STORE_OPT) -> None:
    """Re-check installed files against their record and re-check revocation now."""
    now = _now()
    st = _store(store)
    items = [st.require(name)] if name else st.list()
    results = []
    for item in items:
        src = policy
        recorded = item.record.get("policy", {}).get("source")
        if src is None and isinstance(recorded, str) and recorded != BUILTIN and Path(recorded).is_file():
            src = Path(recorded)
        results.append(verify_item(item, load_policy(src, now=now), now))
    ok = all(r.ok for r in results)
    data = {"ok": ok, "items": [r.to_json() for r in results]}

    def human() -> None:
        head = "[bold green]OK[/bold green]" if ok else "[bold red]PROBLEMS[/bold red]"
        console.print(f"{head} {len(results)} installed item(s) checked")
        for r in results:
            mark = _MARK["pass"] if r.ok else _MARK["fail"]
            files = "ok" if r.files_ok else "CHANGED"
            console.print(f"  {mark} {escape(r.name)} @ {r.digest}: files {files}, revocation {r.revocation}")
            for p in r.problems:
                console.print(f"      - {escape(p)}")

    emit(data, human)
    if not ok:
        raise typer.Exit(1)


def cmd_uninstall(name: str = typer.Argument(..., help="Install name."),
                  store: Path | None = STORE_OPT) -> None:
    """Remove an installed item (atomically: a rename out of the store, then deletion)."""
    st = _store(store)
    if not st.items_dir.is_dir():
        raise NotFound(f"nothing is installed under the name {name!r}", where=str(st.root))
    with st.transaction() as txn:
        removed = txn.uninstall(name)
    data = {"uninstalled": name, "digests": [i.digest for i in removed]}
    emit(data, lambda: console.print(f"[green]UNINSTALLED[/green] {escape(name)} "
                                     f"({', '.join(i.digest for i in removed)})"))


def cmd_policy_init(output: Path = typer.Option(Path("acx-policy.yaml"), "-o", "--output",
                                                help="Where to write the starter policy."),
                    force: bool = typer.Option(False, "--force", help="Overwrite an existing file.")) -> None:
    """Write a commented starter verification policy (it validates; it trusts nobody yet)."""
    if output.exists() and not force:
        raise UsageError(f"{output} exists", hint="pass --force to overwrite")
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(starter_template(), encoding="utf-8")
    tmp.replace(output)
    emit({"written": str(output)}, lambda: console.print(f"wrote {escape(str(output))} (edit `publishers` "
                                                         "before installing anything)"))


def register(app: typer.Typer) -> None:
    """Add `install`, `uninstall` to the root app, list/show/verify to `installed`, init to `policy`."""
    app.command("install")(transport_options()(cmd_install))
    app.command("uninstall")(cmd_uninstall)
    installed_app.command("list")(cmd_list)
    installed_app.command("show")(cmd_show)
    installed_app.command("verify")(transport_options()(cmd_verify))
    policy_app.command("init")(cmd_policy_init)
