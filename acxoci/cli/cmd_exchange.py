"""`acx exchange verify|index|mirror`: the git-based Cartridge Exchange (docs/exchange.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from acxoci.cli.apps import exchange_app
from acxoci.cli.common import exit_with, parse_now
from acxoci.cli.output import Markup, emit, say
from acxoci.exchange.index import INDEX_FILE, Derived, compare, derive, index_bytes
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.oci.target import RemoteOptions
from attest.canonical import loads_strict
from attest.errors import AttestError

MAX_INDEX_BYTES = 64 * 1024 * 1024
DIR_ARG = typer.Argument(..., help="The Exchange folder (the reference's `registry/`).")
NOW_OPT = typer.Option(None, "--now", help="Verify as of this RFC 3339 time (default: now).")
NO_GRAPHS_OPT = typer.Option(
    False,
    "--without-graphs",
    help="Leave Agent Graphs out (graph support is pending) instead of refusing the folder.",
)


def _render_rejected(d: Derived) -> None:
    for r in d.rejected:
        say("  [red]✗[/red] {} \\[{}] {}", r.path, r.type, r.reason)
    for g in d.pending_graphs:
        say("  [yellow]-[/yellow] {} \\[agent-graph] left out: graph support pending", g)


def cmd_verify(
    directory: Path = DIR_ARG, now: str | None = NOW_OPT, without_graphs: bool = NO_GRAPHS_OPT
) -> None:
    """Verify every artifact, re-derive index.json and report every difference from the committed
    one and every coordinate whose bytes changed (exit 1 on any finding)."""
    d = derive(directory, now=parse_now(now), allow_pending_graphs=without_graphs)
    derived = index_bytes(d.index)
    path = directory / INDEX_FILE
    committed_bytes = (
        read_bytes(path, "index.json", limit=MAX_INDEX_BYTES)
        if path.is_file() and not path.is_symlink()
        else None
    )
    diffs: list[str] = []
    changed: list[dict[str, object]] = []
    if committed_bytes is None:
        diffs = ["index.json is missing"]
    elif committed_bytes != derived:
        try:
            committed = loads_strict(committed_bytes)
        except AttestError as exc:
            committed = None
            diffs = [f"index.json is not valid JSON: {exc}"]
        if committed is not None:
            diffs, changed = compare(d.index, committed)
            if not diffs:
                diffs = ["index.json differs in formatting from the derived bytes"]
    ok = d.ok and not diffs and not changed
    data = {
        "ok": ok,
        "folder": str(directory),
        "identical": committed_bytes == derived,
        "rejected": [r.to_json() for r in d.rejected],
        "differences": diffs,
        "changedCoordinates": changed,
        "pendingGraphs": d.pending_graphs,
        "counts": {k: d.index[k] for k in ("count", "workflowCount", "agentGraphCount", "templateCount")},
    }

    def human() -> None:
        head = Markup("[bold green]VERIFIED[/bold green]") if ok else Markup("[bold red]PROBLEMS[/bold red]")
        say("{} {}: {} cartridge(s), {} workflow(s), {} graph(s); index.json {}",
            head, str(directory), d.index['count'], d.index['workflowCount'], d.index['agentGraphCount'],
            'identical' if data['identical'] else 'DIFFERS')
        _render_rejected(d)
        for c in changed:
            say("  [red]✗[/red] {}: bytes changed ({} → {})",
                str(c['path']), c['indexedDigest'], c['digest'])
        for line in diffs[:50]:
            say("  - {}", line)

    emit(data, human)
    if not ok:
        exit_with(1)


def cmd_index(
    directory: Path = DIR_ARG,
    output: Path | None = typer.Option(None, "-o", "--output", help="Write here instead of DIR/index.json."),
    now: str | None = NOW_OPT,
    without_graphs: bool = NO_GRAPHS_OPT,
) -> None:
    """Write index.json the way the reference builder does (nothing is written if any artifact is
    rejected)."""
    d = derive(directory, now=parse_now(now), allow_pending_graphs=without_graphs)
    out = output or directory / INDEX_FILE
    data = {
        "ok": d.ok,
        "written": str(out) if d.ok else None,
        "rejected": [r.to_json() for r in d.rejected],
        "pendingGraphs": d.pending_graphs,
        "counts": {k: d.index[k] for k in ("count", "workflowCount", "agentGraphCount", "templateCount")},
    }
    if d.ok:
        atomic_write(out, index_bytes(d.index))

    def human() -> None:
        if d.ok:
            say("[green]INDEXED[/green] {} cartridge(s), {} workflow(s), {} graph(s), {} "
                "template(s) → {}",
                d.index['count'], d.index['workflowCount'], d.index['agentGraphCount'],
                d.index['templateCount'], str(out))
        else:
            say("[bold red]REJECTED[/bold red] {} registry issue(s); nothing written", len(d.rejected))
        _render_rejected(d)

    emit(data, human)
    if not d.ok:
        exit_with(1)


def cmd_mirror(
    directory: Path = DIR_ARG,
    dest: str = typer.Argument(..., help="REGISTRY/PREFIX or oci-layout:DIR."),
    plain_http: bool = typer.Option(False, "--plain-http", help="Talk HTTP to the registry."),
    now: str | None = NOW_OPT,
    without_graphs: bool = NO_GRAPHS_OPT,
) -> None:
    """Publish every release at DEST/<kind>/<publisher>/<id>:<version> with its attestations and
    lifecycle (a rerun uploads nothing)."""
    from acxoci.exchange.mirror import mirror

    report = mirror(
        directory,
        dest,
        now=parse_now(now),
        without_graphs=without_graphs,
        remote=RemoteOptions(plain_http=True if plain_http else None),
    )

    def human() -> None:
        say("[bold green]MIRRORED[/bold green] {} release(s) → {}: {} blob(s), {} "
            "manifest(s) sent", len(report.items), dest, report.blobs_sent, report.manifests_sent)
        for i in report.items:
            life = "" if i.lifecycle == "active" else f" [{i.lifecycle}]"
            say("  {:9} {} @ {}{}", i.status, i.reference, i.digest, life)
        for g in report.pending_graphs:
            say("  [yellow]-[/yellow] {} left out: graph support pending", g)

    emit(report.to_json(), human)


def register(app: typer.Typer) -> None:
    """Add verify, index and mirror to the `exchange` group."""
    exchange_app.command("verify")(cmd_verify)
    exchange_app.command("index")(cmd_index)
    exchange_app.command("mirror")(cmd_mirror)
