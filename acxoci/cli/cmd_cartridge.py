"""`acx cartridge verify|inspect|strip`: the consumer side of cartridges (verdict first, short)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from acxoci.attest.trustdecision import Minimum, SignerFacts, decide
from acxoci.cartridge.constants import DEFAULT_MAX_DECOMPRESSED_BYTES
from acxoci.cartridge.verify import CartridgeVerdict, verify_cartridge
from acxoci.cli.apps import cartridge_app
from acxoci.cli.common import REQUIRE_HELP, required_trust
from acxoci.cli.common import exit_with as _exit
from acxoci.cli.common import load_registry as _registry
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import Markup, emit, say
from acxoci.errors import RefusedByPolicy, UsageError

_COLOR = {
    "trusted": "green",
    "local": "green",
    "portable": "yellow",
    "unverified": "yellow",
    "legacy": "yellow",
    "tampered": "red",
}


def _verdict_exit(v: CartridgeVerdict, require: str | None) -> int:
    """Exit code through the one trust table when a signer was judged, else by the trust label."""
    if v.rejected:
        return 1
    facts = v.extra.get("signerFacts")
    if isinstance(facts, SignerFacts):
        minimum: Minimum = "trusted" if require == "trusted" else "portable" if require else "none"
        return decide(facts, minimum=minimum, command="cartridge verify").exit_code
    if not v.meets(require):
        return RefusedByPolicy.exit_code
    return 0


def _render_verdict(v: CartridgeVerdict, require: str | None, code: int) -> None:
    color = _COLOR.get(v.trust, "white")
    say("[bold {}]{}[/bold {}] ({}): {}", color, v.trust.upper(), color, v.status, v.summary)
    if code and not v.rejected:
        say("[red]refused:[/red] trust {} does not meet --require {}", v.trust, require)
    for issue in v.issues:
        say("  - {}", issue)
    for label, val in (
        ("rom digest", v.rom_digest),
        ("keyid", v.keyid),
        ("publisher", v.publisher_id),
        ("signed at", v.signed_at),
    ):
        if val:
            say("  {}: {}", label, val)


def verify_cmd(
    file: Path = typer.Argument(..., help="The .acx cartridge."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    require: str | None = typer.Option(None, "--require", help="Minimum trust: portable or trusted."),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time (default: now)."),
    max_decompressed: int = typer.Option(
        DEFAULT_MAX_DECOMPRESSED_BYTES,
        "--max-decompressed",
        min=0,
        help="Cap on the bytes inflated from compressed ROM entries, in total.",
    ),
) -> None:
    """Verify a cartridge file: ROM digest, DSSE signature, statement binding and signer trust.

    A file check: it does not look at a registry copy's attestations, level credentials,
    revocation or lifecycle records; `acx verify REF --policy FILE` judges those as `acx install`
    would."""
    if require not in (None, "portable", "trusted"):
        raise UsageError(f"--require must be portable or trusted, not {require!r}")
    at = _now(now)
    registry = _registry(trust_registry, at)
    v = verify_cartridge(file, registry=registry, now=at, max_decompressed=max_decompressed)
    code = _verdict_exit(v, require)
    data = v.to_json() | {"require": require, "exitCode": code}
    emit(data, lambda: _render_verdict(v, require, code))
    _exit(code)


def _render_inspect(d: dict[str, Any]) -> None:
    meta = d["meta"]
    say("[bold]{}[/bold] {}", str(meta.get('acx.agent_name', '?')), str(meta.get('acx.cartridge_id', '')))
    say("  publisher {} · version {} · role {}",
        str(meta.get('acx.publisher_id')), str(meta.get('acx.artifact_version')), str(meta.get('acx.role')))
    say("  rom digest {}", d['romDigest'])
    ro = d["romObjects"]
    kinds = ", ".join(f"{k} {n}" for k, n in ro["byKind"].items())
    say("  ROM objects {} ({}); SAVE objects {}", ro['count'], kinds, d['saveObjects'])
    say("  sqlar rom {}, save {}; memory {}", d["sqlar"]["rom"], d["sqlar"]["save"],
        ", ".join(f"{z} {n}" for z, n in d["memory"].items()))
    say("  skills {}: {}", len(d["skills"]), ", ".join(s["name"] for s in d["skills"]))
    say("  capabilities {}: {}", len(d["capabilities"]),
        ", ".join(f"{c['taskType']}/{c['domain']}" for c in d["capabilities"]))
    for s in d["signatures"]:
        say("  signature {} keyid {} at {}{}", s["sigId"], s["keyid"], s["createdAt"],
            "" if s["publicKeyPresent"] else " (no public key)")
    say("  metadata ({}):", len(meta))
    for k in sorted(meta):
        v = str(meta[k])
        say("    {} = {}", k, v if len(v) <= 200 else v[:200] + '…')
    say("  attestations ({}):{}", len(d["attestations"]), "" if d["attestations"] else " none")
    for a in d["attestations"]:
        extra = "".join(
            f" {k}={a[k]}" for k in ("createdAt", "statusUrl") if a.get(k) is not None
        )
        say("    {} {} {}{}", a['attId'], a['type'], a['mediaType'], extra)
    c = d["consistency"]
    if c["mismatches"] or c["uncovered"]:
        say("  [red]inconsistent:[/red] {} mismatches, {} uncovered (run `acx "
            "cartridge verify`)", len(c['mismatches']), len(c['uncovered']))


def inspect_cmd(file: Path = typer.Argument(..., help="The .acx cartridge.")) -> None:
    """Show meta, ROM objects by kind, skills, capabilities, memory by zone, signatures, attestations."""
    from acxoci.cartridge.inspect import inspect_cartridge  # only this command needs it

    d = inspect_cartridge(file)
    emit(d, lambda: _render_inspect(d))


def strip_cmd(
    file: Path = typer.Argument(..., help="The .acx cartridge."),
    out: Path = typer.Option(..., "-o", "--output", help="Where to write the ROM-only copy."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file: "
                                               "the signer must be trusted in it (see --require)."),
    require: str | None = typer.Option(None, "--require", help=REQUIRE_HELP),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time (default: now)."),
) -> None:
    """Remove the SAVE zone; write the copy only if the ROM digest is equal and the signature re-verifies
    (by a signer that meets --require: exit 8 and nothing written when it does not)."""
    minimum = required_trust(require, trust_registry)
    at = _now(now)
    from acxoci.cartridge.strip import strip_cartridge

    r = strip_cartridge(file, out, now=at, registry=_registry(trust_registry, at), minimum=minimum)
    below = r.equal and not r.verdict_after.rejected and not r.verdict_after.meets(minimum)
    code = 0 if r.ok else RefusedByPolicy.exit_code if below else 1

    def human() -> None:
        word = (Markup("[green]EQUAL[/green] (ROM intact; SAVE removed)") if r.equal
                else Markup("[red]MISMATCH[/red]"))
        say("hash-equality proof: {}", word)
        say("rom hash before strip: {}", r.rom_before)
        say("rom hash after  strip: {}", r.rom_after)
        v = r.verdict_after
        say("signature after strip: {} ({}): {}", v.trust, v.status, v.summary)
        if below:
            say("[red]refused:[/red] trust {} does not meet --require {}", v.trust, minimum)
        if r.output:
            say("wrote: {}", r.output)
        else:
            say("[red]nothing written[/red]")

    emit(r.to_json() | {"require": minimum, "exitCode": code}, human)
    _exit(code)


_REGISTERED = False


def register(app: typer.Typer) -> None:
    """Add verify, inspect and strip to `acx cartridge`."""
    global _REGISTERED
    if _REGISTERED:
        return
    _REGISTERED = True
    cartridge_app.command("verify")(verify_cmd)
    cartridge_app.command("inspect")(inspect_cmd)
    cartridge_app.command("strip")(strip_cmd)
