"""`acx builder` (the ACX Studio on 127.0.0.1) and `acx exchange site` (a static catalog of an
Exchange folder or a mirrored OCI layout), the two web pages of acx (docs/studio.md)."""

from __future__ import annotations

import errno
import sys
import webbrowser
from pathlib import Path

import typer

from acxoci.cli.apps import exchange_app
from acxoci.cli.common import parse_now
from acxoci.cli.output import Markup, emit, info, say
from acxoci.errors import Blocked, UsageError

DEFAULT_PORT = 8799
LAYOUT = "oci-layout:"


def cmd_builder(
    port: int = typer.Option(DEFAULT_PORT, "--port", min=0, max=65535,
                             help="Port on 127.0.0.1 (0: any free port)."),
    open_browser: bool = typer.Option(False, "--open", help="Open the Studio in the default browser."),
) -> None:
    """Serve the ACX Studio on 127.0.0.1 until Ctrl-C or SIGTERM: edit, lint, remix and export
    workflows and agent graphs in a browser. It never receives a key and never writes anywhere."""
    from acxoci.studio.server import StudioServer, serve

    try:
        server = StudioServer(port)
    except OSError as exc:
        why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used: {exc.strerror or exc}"
        raise Blocked(f"port {port} on 127.0.0.1 {why}", hint="pass --port N (or 0 for any)") from exc
    def announce() -> None:
        emit({"url": server.url, "host": "127.0.0.1", "port": server.port},
             lambda: say("ACX Studio on {} (loopback only; Ctrl-C to stop)", server.url))
        sys.stdout.flush()
        if open_browser:
            webbrowser.open(server.url)

    serve(server, announce)
    info("ACX Studio stopped")


def cmd_site(
    source: str = typer.Argument(..., help="An Exchange folder, or oci-layout:PATH written by "
                                 "`acx exchange mirror`."),
    out: Path = typer.Option(..., "--out", help="The catalog folder to write (new, empty, or an "
                             "earlier catalog)."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry",
                                               help="Judge signers against this acx.trust-registry/1."),
    policy: Path | None = typer.Option(None, "--policy", help="Judge with this verification policy, "
                                       "as `acx install` does."),
    mirror: str | None = typer.Option(None, "--mirror", help="For a folder: where it is mirrored "
                                      "(REGISTRY/PREFIX or oci-layout:DIR); pages show the install command."),
    title: str = typer.Option("ACX catalog", "--title", help="The catalog's title."),
    now: str | None = typer.Option(None, "--now", help="Judge as of this RFC 3339 time (default: now); "
                                   "the same inputs and time give the same files."),
) -> None:
    """Write a static catalog: a page per agent, workflow and graph with acx's verdict at build time,
    and an index with search and filters that needs no server. Exit 0 when written, whatever the
    verdicts."""
    from acxoci.catalog.judges import DecisionJudge, FolderGate, scratch, trust_option
    from acxoci.catalog.model import Judge
    from acxoci.catalog.site import build_site
    from acxoci.catalog.sources import folder_candidates, layout_candidates
    from acxoci.cli.common import load_registry
    from acxoci.install.load import trust_registry_policy
    from acxoci.install.vpolicy import load_policy
    from acxoci.oci.settings import active_options

    if (trust_registry is None) == (policy is None):
        raise UsageError("give exactly one of --trust-registry F or --policy F")
    at = parse_now(now)
    built = at.isoformat().replace("+00:00", "Z")
    option = trust_option(str(trust_registry) if trust_registry else None, str(policy) if policy else None)
    with scratch() as tmp:
        if source.startswith(LAYOUT):
            display = source[len(LAYOUT):]
            if not display:
                raise UsageError("oci-layout: needs a folder")
            # `--trust-registry F` stands for the policy `acx load --trust-registry F` uses
            vpolicy = (load_policy(policy, now=at) if policy
                       else trust_registry_policy(Path(str(trust_registry)), at))
            shown = option if policy else "--policy policy.yaml"
            candidates, findings = layout_candidates(Path(display), display)
            if mirror is not None:
                raise UsageError("--mirror is for an Exchange folder; a layout's pages name the layout")
            # the one acceptance decision, as `acx verify REF --policy` and `acx install` ask it
            judge: Judge = DecisionJudge(vpolicy, shown, at, Path(tmp), active_options())
            basis = f"acx verify REF {shown} (the install decision)"
        else:
            root = Path(source)
            fpolicy = load_policy(policy, now=at) if policy is not None else None
            registry = load_registry(trust_registry, at) if fpolicy is None else fpolicy.combined_registry()
            gate = FolderGate(root, source, at, registry, option, fpolicy, mirror)
            candidates, findings = folder_candidates(root), gate.findings
            judge = gate
            basis = f"acx exchange verify {option}" + (" and the install decision" if fpolicy else "")
        result = build_site(candidates, judge, out=out, title=title, built=built, basis=basis,
                            findings=findings)
    data = {"out": str(result.out), "index": str(result.out / "index.html"), "artifacts": len(result.entries),
            "verified": result.verified, "findings": list(result.findings),
            "entries": [{"kind": e.kind, "location": e.candidate.location, "verdict": e.verdict.word,
                         "verified": e.verdict.verified, "page": e.page} for e in result.entries]}

    def human() -> None:
        say("[bold green]BUILT[/bold green] {}: {} artifact(s), {} verified", result.out / "index.html",
            len(result.entries), result.verified)
        for e in result.entries:
            mark = Markup("[green]✓[/green]") if e.verdict.verified else Markup("[red]✗[/red]")
            say("  {} {:10} {}", mark, e.verdict.word, e.candidate.location)
        for f in result.findings:
            say("  [yellow]-[/yellow] {}", f)

    emit(data, human)


def register(app: typer.Typer) -> None:
    """`builder` at the top level, `site` in the `exchange` group."""
    app.command("builder")(cmd_builder)
    exchange_app.command("site")(cmd_site)
