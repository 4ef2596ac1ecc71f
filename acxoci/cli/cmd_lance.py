"""`acx lance FILE --output DIR`: verify a cartridge, then write its memory as a LanceDB database
(`acx.lance-memory/1`, table `memories`), vectors re-indexed with local-hash-128 (docs/guide.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from acxoci.cli.output import emit, say
from acxoci.errors import RefusedByPolicy, UsageError


def lance(
    file: Path = typer.Argument(..., help="The cartridge (.acx); read only."),
    out: Path = typer.Option(..., "-o", "--output", help="Folder for the LanceDB database (created)."),
    trust_registry: Path | None = typer.Option(
        None, "--trust-registry", help="Trust registry: the signer must be trusted."
    ),
    policy: Path | None = typer.Option(
        None, "--policy", help="Verification policy: its publishers and minimum trust."
    ),
    force: bool = typer.Option(False, "--force", help="Replace a folder that is not empty."),
) -> None:
    """Verify the cartridge (its signer trusted by the registry or the policy), then materialise its
    signed (ROM) memory as a LanceDB table `memories`; unsigned SAVE-zone rows are left out, stored
    vectors are never trusted, all are re-indexed."""
    from acxoci.cartridge.verify import verify_cartridge
    from acxoci.lance import materialize

    if (trust_registry is None) == (policy is None):
        raise UsageError("give one of --trust-registry FILE or --policy FILE")
    now = datetime.now(UTC)
    minimum = "trusted"
    allowed: list[str] | None = None
    if policy is not None:
        from acxoci.install.vpolicy import load_policy

        vp = load_policy(policy, now=now)
        registry = vp.combined_registry()
        minimum = vp.minimum_trust
        allowed = [p.id for p in vp.publishers]
    else:
        from acxoci.cartridge.trust_file import load_trust_registry

        assert trust_registry is not None
        registry = load_trust_registry(trust_registry)
    verdict = verify_cartridge(file, registry=registry, now=now)
    ok = verdict.trust == "trusted" or (minimum == "portable" and verdict.trust == "portable")
    if policy is not None and ok:
        from acxoci.install.vpolicy import load_policy

        ok = load_policy(policy, now=now).publisher_for(verdict.publisher_id) is not None
    if not ok:
        raise RefusedByPolicy(
            f"cartridge is {verdict.trust}, not trusted by "
            + (f"the policy's publishers {allowed}" if allowed is not None else "the trust registry")
            + f": {verdict.summary}",
            where=str(file),
        )
    result = materialize(file, out, force=force)

    def human() -> None:
        say("LANCE {}: table memories, {} row(s) {}, vectors local-hash-128 (cartridge {})", result.path,
            result.rows, ", ".join(f"{z}={n}" for z, n in sorted(result.zones.items())), verdict.trust)
        if result.foreign_vectors_ignored:
            n = result.foreign_vectors_ignored
            say("  {} stored vector(s) ignored (foreign vectors are never trusted)", n)
        if result.unsigned_rows_left_out:
            n = result.unsigned_rows_left_out
            say("  {} SAVE-zone row(s) left out (not covered by the signature)", n)

    emit({**result.to_json(), "trust": verdict.trust}, human)


def register(app: typer.Typer) -> None:
    app.command("lance")(lance)
