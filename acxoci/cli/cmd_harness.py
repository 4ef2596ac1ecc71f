"""`acx harness negotiate|check`: the SPEC §8.5 boot handshake against a host descriptor, and
validation of a harness requirements document. The cartridge is only ever read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import typer

from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cli.apps import harness_app
from acxoci.cli.output import Markup, emit, say
from acxoci.errors import InvalidInput, NotFound, RefusedByPolicy
from acxoci.fsutil import atomic_write
from acxoci.policy import harness as h
from acxoci.policy.boot import handshake
from acxoci.policy.files import is_cartridge, load_document
from attest.canonical import loads_strict
from attest.errors import MalformedError


def _write_atomic(path: Path, data: bytes) -> None:
    atomic_write(path, data)


@harness_app.command("negotiate")
def negotiate(
    cartridge: Path = typer.Argument(
        ..., help="Cartridge (.acx); it is opened read-only and never modified."
    ),
    host: Path = typer.Option(..., "--host", help="Host descriptor JSON (acx.host.v1)."),
    registry: Path | None = typer.Option(
        None,
        "--trust-registry",
        "--registry",
        help="Trust registry (acx.trust-registry/1) for the signature check.",
    ),
    out: Path | None = typer.Option(None, "-o", "--out", help="Also write the compliance descriptor here."),
) -> None:
    """Verify the cartridge, bind one host tool per role and emit the compliance descriptor, or refuse
    with JSON-RPC -32602 "Unsupported harness" (exit 8) listing every unmet role and scope."""
    if not cartridge.is_file() or not is_cartridge(cartridge):
        raise NotFound(f"not a cartridge file: {cartridge}")
    now = datetime.now(UTC)
    try:
        host_doc = loads_strict(host.read_bytes())
    except FileNotFoundError as exc:
        raise NotFound(f"host descriptor not found: {host}") from exc
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(host)) from exc
    result = handshake(
        cartridge, host_doc, registry=load_trust_registry(registry, now=now) if registry else None, now=now
    )
    descriptor, verdict = result.descriptor, result.verdict
    if out is not None:
        _write_atomic(out, (json.dumps(descriptor.to_json(), indent=2) + "\n").encode("utf-8"))
    data = result.to_json()

    def human() -> None:
        if descriptor.accepted:
            say("harness: [green]ACCEPT[/green]  revision {}  (cartridge {})",
                descriptor.protocol_revision, verdict.trust)
        else:
            say("harness: [red]REFUSE[/red]  -32602 Unsupported harness  (ROM not "
                "activated)")
        for b in descriptor.bindings:
            mark = "ok" if b.satisfied else ("--" if b.tier == "optional" else "XX")
            say("  {} {:<18} -> {}  scopes {}", mark, b.role, str(b.bound_tool), list(b.scopes_granted))
        for u in descriptor.unmet:
            say("  unmet: {}", u)

    emit(data, human)
    raise SystemExit(0 if descriptor.accepted else RefusedByPolicy.exit_code)


@harness_app.command("check")
def check(file: Path = typer.Argument(..., help="A harness-requirements JSON file, or a cartridge.")) -> None:
    """Validate a harness requirements document (acx.harness.v1) rule by rule."""
    loaded = load_document(file, h.ROM_PATH)
    issues = h.validate_harness(loaded.doc)
    valid = not h.errors_only(issues)

    def human() -> None:
        say("harness: {}  ({})", Markup("[green]VALID[/green]") if valid else Markup("[red]INVALID[/red]"),
            loaded.source)
        for i in issues:
            say("  - {}{}", str(i), " (warning)" if i.severity == "warning" else "")

    emit(
        {
            "source": loaded.source,
            "valid": valid,
            "requirementsHash": loaded.digest,
            "issues": [i.to_json() for i in issues],
        },
        human,
    )
    raise SystemExit(0 if valid else 1)


def register(app: typer.Typer) -> None:
    """Commands are added to `harness_app` at import time."""
