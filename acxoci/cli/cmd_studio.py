"""`acx builder` (the ACX Studio on 127.0.0.1) and `acx exchange site` (a static catalog of an
Exchange folder or a mirrored OCI layout), the two web pages of acx (docs/studio.md)."""

from __future__ import annotations

import errno
import sys
import webbrowser

import typer
from rich.markup import escape

from acxoci.cli.output import console, emit, info
from acxoci.errors import Blocked

DEFAULT_PORT = 8799


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
        if exc.errno == errno.EADDRINUSE:
            raise Blocked(f"port {port} on 127.0.0.1 is in use", hint="pass --port N (or 0 for any)") from exc
        raise
    emit({"url": server.url, "host": "127.0.0.1", "port": server.port},
         lambda: console.print(f"ACX Studio on {escape(server.url)} (loopback only; Ctrl-C to stop)"))
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(server.url)
    serve(server)
    info("ACX Studio stopped")


def register(app: typer.Typer) -> None:
    """`builder` at the top level."""
    app.command("builder")(cmd_builder)
