"""`acx exchange verify|index|mirror`: the git-based Cartridge Exchange (docs/exchange.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.cli.apps import exchange_app
from acxoci.cli.common import exit_with, parse_now, transport_options
from acxoci.cli.output import Markup, emit, say, status_line
from acxoci.errors import NotFound, UsageError
from acxoci.exchange.index import INDEX_FILE, Derived, compare, derive, index_bytes
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.oci.target import RemoteOptions

REMOTE: Any = None  # filled in by @transport_options
MAX_INDEX_BYTES = 64 * 1024 * 1024
DIR_ARG = typer.Argument(..., help="The Exchange folder (the reference's `registry/`).")
NOW_OPT = typer.Option(None, "--now", help="Verify as of this RFC 3339 time (default: now).")


def _folder(directory: Path) -> Path:
    """The Exchange folder argument: a regular file (a cartridge, say) is a usage mistake named as one."""
    if directory.is_file():
        raise UsageError(f"{directory} is a file; `acx exchange` takes the Exchange folder",
                         hint="to place a signed artifact in one: acx share agent|workflow|graph FILE")
    if not directory.exists():
        raise NotFound(f"no Exchange folder at {directory}", where=str(directory))
    return directory


def _render_rejected(d: Derived) -> None:
    for r in d.rejected:
        say("  [red]✗[/red] {} \\[{}] {}", r.path, r.type, r.reason)
    for g in d.pending_graphs:
        say("  [yellow]-[/yellow] {} \\[agent-graph] left out: graph support pending", g)


def cmd_verify(
    directory: Path = DIR_ARG,
    now: str | None = NOW_OPT,
    trust_registry: Path | None = typer.Option(
        None, "--trust-registry", help="Judge signers against this acx.trust-registry/1 instead of the "
        "folder's own trust-registry.json (a consumer's view of the gate)."),
) -> None:
    """Verify every artifact, re-derive index.json and report every difference from the committed
    one and every coordinate whose bytes changed (exit 1 on any finding).

    The Exchange's gate (path, signature, signer, spec, profile) over files in a folder: it does not
    check attestations, levels or revocation lists; `acx verify REF --policy FILE` judges a
    mirrored release as `acx install` would."""
    at = parse_now(now)
    _folder(directory)
    if trust_registry is not None:
        from acxoci.cli.common import load_registry

        d = derive(directory, now=at, registry=load_registry(trust_registry, at))
    else:
        d = derive(directory, now=at)
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
            diffs = [f"index.json is not valid JSON: {exc}"]
        else:  # any JSON value, `null` too, is compared (and `null` is no index)
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
) -> None:
    """Write index.json the way the reference builder does (nothing is written if any artifact is
    rejected)."""
    d = derive(_folder(directory), now=parse_now(now))
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
    now: str | None = NOW_OPT,
    remote: RemoteOptions = REMOTE,
) -> None:
    """Publish every release at DEST/<kind>/<publisher>/<id>:<version> with its attestations and
    lifecycle (a rerun uploads nothing)."""
    from acxoci.exchange.mirror import mirror

    at = parse_now(now)
    _folder(directory)
    with status_line(f"mirroring {directory} to {dest}") as note:  # a terminal sees each release
        report = mirror(directory, dest, now=at, remote=remote, note=note)

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
    exchange_app.command("mirror")(transport_options(referrers=True, layout="dest")(cmd_mirror))
