"""`acx cartridge verify|inspect|strip`: the consumer side of cartridges (verdict first, short)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from acxoci.cartridge.constants import DEFAULT_MAX_DECOMPRESSED_BYTES
from acxoci.cartridge.verify import CartridgeVerdict, verify_cartridge
from acxoci.cli.apps import cartridge_app
from acxoci.cli.common import exit_with as _exit
from acxoci.cli.common import load_registry as _registry
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import console, emit
from acxoci.errors import RefusedByPolicy, UsageError
from attest.trustdecision import Minimum, SignerFacts, decide

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
    console.print(f"[bold {color}]{v.trust.upper()}[/bold {color}] ({v.status}): {escape(v.summary)}")
    if code and not v.rejected:
        console.print(f"[red]refused:[/red] trust {v.trust} does not meet --require {require}")
    for issue in v.issues:
        console.print(f"  - {escape(issue)}")
    for label, val in (
        ("rom digest", v.rom_digest),
        ("keyid", v.keyid),
        ("publisher", v.publisher_id),
        ("signed at", v.signed_at),
    ):
        if val:
            console.print(f"  {label}: {escape(val)}")


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
    """Verify a cartridge: ROM digest, DSSE signature, statement binding and signer trust."""
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
    console.print(
        f"[bold]{escape(str(meta.get('acx.agent_name', '?')))}[/bold] "
        f"{escape(str(meta.get('acx.cartridge_id', '')))}"
    )
    console.print(
        f"  publisher {escape(str(meta.get('acx.publisher_id')))} · version "
        f"{escape(str(meta.get('acx.artifact_version')))} · role {escape(str(meta.get('acx.role')))}"
    )
    console.print(f"  rom digest {d['romDigest']}")
    ro = d["romObjects"]
    kinds = ", ".join(f"{k} {n}" for k, n in ro["byKind"].items())
    console.print(f"  ROM objects {ro['count']} ({kinds}); SAVE objects {d['saveObjects']}")
    console.print(
        f"  sqlar rom {d['sqlar']['rom']}, save {d['sqlar']['save']}; memory "
        + ", ".join(f"{z} {n}" for z, n in d["memory"].items())
    )
    console.print(f"  skills {len(d['skills'])}: " + ", ".join(escape(s["name"]) for s in d["skills"]))
    console.print(
        f"  capabilities {len(d['capabilities'])}: "
        + ", ".join(escape(f"{c['taskType']}/{c['domain']}") for c in d["capabilities"])
    )
    for s in d["signatures"]:
        console.print(
            f"  signature {escape(s['sigId'])} keyid {escape(s['keyid'])} at {escape(s['createdAt'])}"
            + ("" if s["publicKeyPresent"] else " (no public key)")
        )
    console.print(f"  metadata ({len(meta)}):")
    for k in sorted(meta):
        v = str(meta[k])
        console.print(f"    {escape(k)} = {escape(v if len(v) <= 200 else v[:200] + '…')}")
    console.print(f"  attestations ({len(d['attestations'])}):" + ("" if d["attestations"] else " none"))
    for a in d["attestations"]:
        extra = "".join(
            f" {k}={escape(str(a[k]))}" for k in ("createdAt", "statusUrl") if a.get(k) is not None
        )
        console.print(f"    {escape(a['attId'])} {escape(a['type'])} {escape(a['mediaType'])}{extra}")
    c = d["consistency"]
    if c["mismatches"] or c["uncovered"]:
        console.print(
            f"  [red]inconsistent:[/red] {len(c['mismatches'])} mismatches, "
            f"{len(c['uncovered'])} uncovered (run `acx cartridge verify`)"
        )


def inspect_cmd(file: Path = typer.Argument(..., help="The .acx cartridge.")) -> None:
    """Show meta, ROM objects by kind, skills, capabilities, memory by zone, signatures, attestations."""
    from acxoci.cartridge.inspect import inspect_cartridge  # only this command needs it

    d = inspect_cartridge(file)
    emit(d, lambda: _render_inspect(d))


def strip_cmd(
    file: Path = typer.Argument(..., help="The .acx cartridge."),
    out: Path = typer.Option(..., "-o", "--output", help="Where to write the ROM-only copy."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this RFC 3339 time (default: now)."),
) -> None:
    """Remove the SAVE zone; write the copy only if the ROM digest is equal and the signature re-verifies."""
    at = _now(now)
    from acxoci.cartridge.strip import strip_cartridge

    r = strip_cartridge(file, out, now=at, registry=_registry(trust_registry, at))
    code = 0 if r.ok else 1

    def human() -> None:
        word = "[green]EQUAL[/green] (ROM intact; SAVE removed)" if r.equal else "[red]MISMATCH[/red]"
        console.print(f"hash-equality proof: {word}")
        console.print(f"rom hash before strip: {r.rom_before}")
        console.print(f"rom hash after  strip: {r.rom_after}")
        v = r.verdict_after
        console.print(f"signature after strip: {v.trust} ({v.status}): {escape(v.summary)}")
        console.print(f"wrote: {escape(r.output)}" if r.output else "[red]nothing written[/red]")

    emit(r.to_json(), human)
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
