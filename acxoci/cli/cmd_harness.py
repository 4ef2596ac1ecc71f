"""`acx harness negotiate|lint` and `acx check`: the SPEC §8.5 boot handshake against what a host
offers (a host descriptor, the roles an operator names, or a live MCP server), and validation of
a harness requirements document. The cartridge is only ever read."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import typer

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cli.apps import harness_app
from acxoci.cli.common import REQUIRE_HELP, refuse_below, required_trust
from acxoci.cli.output import Markup, emit, say, say_error
from acxoci.errors import InvalidInput, RefusedByPolicy, UsageError
from acxoci.fsutil import atomic_write, read_bytes, require_file
from acxoci.policy import harness as h
from acxoci.policy.boot import Handshake, HostOffer, handshake
from acxoci.policy.files import is_cartridge, load_document

HOST_OPT = typer.Option(None, "--host-descriptor", help="Host descriptor JSON (acx.host.v1).")
TOOLS_OPT = typer.Option(None, "--tools", help="Comma-separated roles (or tool names) the host provides.")
ALL_TOOLS_OPT = typer.Option(False, "--all-tools", help="The host provides every role the cartridge needs.")
MCP_OPT = typer.Option(
    None, "--mcp-stdio", help="Start this MCP server (split like a shell, run without one) and use its tools."
)
BIND_OPT = typer.Option(None, "--bind", help="ROLE=TOOL: bind a role to an MCP tool (repeatable).")
TIMEOUT_OPT = typer.Option(30.0, "--mcp-timeout", help="Seconds the MCP server has for the whole exchange.")
REGISTRY_OPT = typer.Option(
    None,
    "--trust-registry",
    help="Trust registry (acx.trust-registry/1): the signer must be trusted in it (see --require).",
)
REQUIRE_OPT = typer.Option(None, "--require", help=REQUIRE_HELP)


def _load_host(path: Path) -> h.HostDescriptor:
    try:
        doc = loads_strict(read_bytes(path, "host descriptor"))
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc
    return h.parse_host(doc, where=str(path))


def host_source(
    host: Path | None,
    tools: str | None,
    all_tools: bool,
    mcp_stdio: str | None,
    binds: list[str] | None,
    timeout: float,
) -> Callable[[h.HarnessRequirements], HostOffer]:
    """The one host source the options name (a host file, --tools/--all-tools, or --mcp-stdio)."""
    from acxoci.policy import boot

    if mcp_stdio is not None:
        if tools is not None or all_tools:
            raise UsageError("--mcp-stdio reads the tools from the server; drop --tools/--all-tools")
        if not 0 < timeout <= 600:
            raise UsageError("--mcp-timeout must be between 0 and 600 seconds")
        base = _load_host(host) if host is not None else None
        return boot.mcp_offer(mcp_stdio, binds=boot.parse_binds(binds or []), base=base, timeout=timeout)
    if binds:
        raise UsageError("--bind goes with --mcp-stdio")
    if host is not None:
        if tools is not None or all_tools:
            raise UsageError("give one of --host FILE, --tools ROLE,… / --all-tools, --mcp-stdio CMD")
        return boot.fixed_offer(_load_host(host), f"--host {host}")
    if tools is None and not all_tools:
        raise UsageError(
            "say what the host offers", hint="--host FILE, --tools ROLE,…, --all-tools or --mcp-stdio 'CMD …'"
        )
    roles = [t.strip() for t in (tools or "").split(",") if t.strip()]
    return boot.roles_offer(roles, all_tools=all_tools)


def run_handshake(
    cartridge: Path, source: Callable[[h.HarnessRequirements], HostOffer], registry: Path | None,
    require: str | None = None,
) -> Handshake:
    """The boot handshake; refused (exit 8) when the signer is below `--require` (trusted by
    default with a trust registry)."""
    minimum = required_trust(require, registry)
    require_file(cartridge, "cartridge")
    if not is_cartridge(cartridge):
        raise InvalidInput("not a cartridge file", where=str(cartridge))
    now = datetime.now(UTC)
    trust = load_trust_registry(registry) if registry else None
    result = handshake(cartridge, source, registry=trust, now=now)
    refuse_below(result.verdict.trust, minimum, str(cartridge), result.verdict.summary)
    return result


@harness_app.command("negotiate")
def negotiate(
    cartridge: Path = typer.Argument(
        ..., help="Cartridge (.acx); it is opened read-only and never modified."
    ),
    host: Path | None = HOST_OPT,
    tools: str | None = TOOLS_OPT,
    all_tools: bool = ALL_TOOLS_OPT,
    mcp_stdio: str | None = MCP_OPT,
    bind: list[str] | None = BIND_OPT,
    mcp_timeout: float = TIMEOUT_OPT,
    registry: Path | None = REGISTRY_OPT,
    require: str | None = REQUIRE_OPT,
    out: Path | None = typer.Option(None, "-o", "--output",
                                    help="Also write the compliance descriptor here."),
) -> None:
    """Verify the cartridge, bind one host tool per role and emit the compliance descriptor, or refuse
    with JSON-RPC -32602 "Unsupported harness" (exit 8) listing every unmet role and scope.

    The cartridge file and this host: not a registry copy's attestations, level, revocation or
    lifecycle (`acx verify REF --policy FILE --host-descriptor HOST.json` judges all of it)."""
    result = run_handshake(
        cartridge, host_source(host, tools, all_tools, mcp_stdio, bind, mcp_timeout), registry, require
    )
    descriptor, verdict = result.descriptor, result.verdict
    if out is not None:
        atomic_write(out, (json.dumps(descriptor.to_json(), indent=2) + "\n").encode("utf-8"))

    def human() -> None:
        if descriptor.accepted:
            say("harness: [green]ACCEPT[/green]  revision {}  (cartridge {})",
                descriptor.protocol_revision, verdict.trust)
        else:
            say("harness: [red]REFUSE[/red]  -32602 Unsupported harness  (ROM not "
                "activated)")
        for b in descriptor.bindings:
            mark = "ok" if b.satisfied else ("--" if b.tier == "optional" else "XX")
            say("  {} {:<18} -> {}  scopes {}", mark, b.role, b.bound_tool or "(unbound)",
                list(b.scopes_granted))
        for u in descriptor.unmet:
            say("  unmet: {}", u)
        if result.host.assumed:
            say("  assumed (not stated by the host): {}", ', '.join(result.host.assumed))

    emit(result.to_json(), human)
    raise SystemExit(0 if descriptor.accepted else RefusedByPolicy.exit_code)


def check(
    cartridge: Path = typer.Argument(
        ..., help="Cartridge (.acx); it is opened read-only and never modified."
    ),
    tools: str | None = TOOLS_OPT,
    all_tools: bool = ALL_TOOLS_OPT,
    mcp_stdio: str | None = MCP_OPT,
    bind: list[str] | None = BIND_OPT,
    host: Path | None = HOST_OPT,
    mcp_timeout: float = TIMEOUT_OPT,
    registry: Path | None = REGISTRY_OPT,
    require: str | None = REQUIRE_OPT,
) -> None:
    """Host preflight: can this host boot the cartridge? ACCEPT (exit 0) or REFUSE (exit 8), by the
    same verification, package checks and negotiation as `acx harness negotiate` (so, like it, not a
    registry copy's attestations, level, revocation or lifecycle: `acx verify REF --policy FILE`)."""
    result = run_handshake(
        cartridge, host_source(host, tools, all_tools, mcp_stdio, bind, mcp_timeout), registry, require
    )
    d, req = result.descriptor, result.requirements
    data = {
        "ok": d.accepted,
        "verdict": "ACCEPT" if d.accepted else "REFUSE",
        "unmet": list(d.unmet),
        **result.to_json(),
    }

    def human() -> None:
        say("Harness check — {} (cartridge {})", cartridge.name, result.verdict.trust)
        say("  MCP protocol floor: {}   model: toolUse={} minContext={}",
            req.min_protocol_revision, str(req.tool_use).lower(), req.min_context_window_tokens)
        say("  Required tool roles:")
        for b in d.bindings:
            mark = "✓" if b.satisfied else ("·" if b.tier == "optional" else "✗")
            say("    {} {:<18} -> {}  scopes={}",
                mark, b.role, b.bound_tool or "(unbound)", ','.join(b.scopes_granted))
        if req.external_tools:
            say("  External binaries:")
            have = set(result.host.descriptor.binaries or ())
            for exe, optional in req.external_tools:
                mark = "✓" if exe in have else ("·" if optional else "✗")
                say("    {} {}{}", mark, exe, ' (optional)' if optional else '')
        if result.host.assumed:
            say("  assumed (not stated by the host): {}", ', '.join(result.host.assumed))
        if d.accepted:
            say("\n  verdict: [green]ACCEPT[/green] ✓ — this host can boot the cartridge")
        else:
            say("\n  verdict: [red]REFUSE[/red] ✗ — -32602 Unsupported harness; unmet: {}",
                ", ".join(d.unmet))

    emit(data, human, kind="verdict")
    raise SystemExit(0 if d.accepted else RefusedByPolicy.exit_code)


def _lint(file: Path) -> None:
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
        kind="verdict",
    )
    raise SystemExit(0 if valid else 1)


@harness_app.command("lint")
def lint(file: Path = typer.Argument(..., help="A harness-requirements JSON file, or a cartridge.")) -> None:
    """Validate a harness requirements document (acx.harness.v1) rule by rule."""
    _lint(file)


@harness_app.command("check", hidden=True)
def check_deprecated(
    file: Path = typer.Argument(..., help="A harness-requirements JSON file, or a cartridge."),
) -> None:
    """Deprecated name of `acx harness lint` (kept for one release)."""
    say_error("warning: `acx harness check` is deprecated and will be removed in the "
              "next release; use `acx harness lint` (the host preflight is `acx check`)")
    _lint(file)


def register(app: typer.Typer) -> None:
    """`harness` commands are added to `harness_app` at import time; `check` is top-level."""
    app.command("check")(check)
