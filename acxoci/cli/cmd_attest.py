"""`acx attest`, `acx verify`, `acx attest-blob`, `acx verify-blob`: cosign-compatible attestations
of OCI artifacts and of plain files (verdict first, short)."""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from acxoci.attestation.attach import attest_artifact, parse_format
from acxoci.attestation.blob import (
    DEFAULT_BLOB_PREDICATE_TYPE,
    BlobVerdict,
    attest_blob,
    file_sha256,
    verify_blob,
)
from acxoci.attestation.content import cartridge_facts
from acxoci.attestation.judge import Kind
from acxoci.attestation.signing import (
    TrustedKey,
    load_private_key_file,
    load_public_key_file,
    password_from_env,
    trust_registry_keys,
)
from acxoci.attestation.statements import CARTRIDGE_PREDICATE_TYPE, parse_predicate_file
from acxoci.attestation.verify import VerifyReport, verify_artifact
from acxoci.cartridge.constants import SQLITE_MAGIC
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cli.output import console, emit
from acxoci.errors import InvalidInput, NotFound, UsageError
from acxoci.oci.reference import parse_reference
from acxoci.oci.target import open_target
from attest.errors import MalformedError
from attest.trust import parse_rfc3339

_VERDICT_COLOR = {"verified": "green", "rejected": "red", "unverified": "yellow", "skipped": "dim",
                  "unsupported": "yellow"}


def _now(value: str | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    try:
        return parse_rfc3339(value, where="--now")
    except MalformedError as exc:
        raise UsageError(str(exc)) from exc


def _exit(code: int) -> None:
    """End a verdict-style command (SystemExit: typer.Exit is swallowed under standalone_mode=False)."""
    raise SystemExit(code)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFound(f"{what} not found", where=str(path)) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {what}: {exc}", where=str(path)) from exc


def _predicate(ptype: str | None, pfile: Path | None) -> tuple[str | None, dict[str, Any] | None]:
    if pfile is None:
        if ptype is not None:
            raise UsageError("--predicate-type needs --predicate FILE")
        return None, None
    if ptype is None:
        raise UsageError("--predicate needs --predicate-type URI")
    return ptype, parse_predicate_file(_read(pfile, "predicate"), where=str(pfile))


def _trusted_keys(key: Path | None, trust_registry: Path | None, now: datetime) -> list[TrustedKey]:
    if (key is None) == (trust_registry is None):
        raise UsageError("give exactly one of --key PUB or --trust-registry FILE")
    if key is not None:
        return [load_public_key_file(key)]
    assert trust_registry is not None
    return trust_registry_keys(load_trust_registry(trust_registry, now=now))



def attest_cmd(
    ref: str = typer.Argument(..., help="host/repo:tag, host/repo@sha256:…, oci-layout:DIR:tag."),
    key: Path = typer.Option(..., "--key", help="Signing key: cosign.key or PKCS#8 PEM (Ed25519 or P-256)."),
    predicate_type: str | None = typer.Option(None, "--predicate-type", help="Attest this predicate type …"),
    predicate: Path | None = typer.Option(None, "--predicate", help="… with this JSON predicate file."),
    fmt: str = typer.Option("both", "--format", help="legacy (.att tag) | bundle (referrer) | both."),
    password_env: str | None = typer.Option(None, "--password-env",
                                            help="Env var with the key password (default COSIGN_PASSWORD)."),
    no_envelope: bool = typer.Option(False, "--no-envelope",
                                     help="Do not attach the cartridge's own DSSE envelope as a referrer."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Attest an OCI artifact so that stock `cosign verify-attestation --key` accepts it."""
    now = _now(now_)
    formats = parse_format(fmt)
    ptype, pred = _predicate(predicate_type, predicate)
    private = load_private_key_file(key, password_from_env(password_env))
    target, parsed = open_target(parse_reference(ref, require_ref=True))
    subject = target.resolve(parsed.reference or "")
    result = attest_artifact(target, subject, parsed.repo_string(), private, formats=formats,
                             predicate_type=ptype, predicate=pred, attach_cartridge_envelope=not no_envelope,
                             now=now)
    data = result.to_json()

    def human() -> None:
        console.print(f"[bold green]ATTESTED[/bold green] {escape(parsed.repo_string())}@{result.subject}")
        console.print(f"  predicate type: {escape(result.predicate_type)}")
        console.print(f"  signer: {escape(result.signer_keyid)}")
        if result.legacy_manifest:
            extra = f" (replaced {result.replaced_layers})" if result.replaced_layers else ""
            console.print(f"  legacy: tag {result.legacy_tag} → {result.legacy_manifest}{extra}")
        if result.bundle_referrer:
            console.print(f"  bundle referrer: {result.bundle_referrer}")
        for d in result.replaced_bundles:
            console.print(f"  replaced older bundle referrer {d}")
        for d in result.kept_bundles:
            console.print(f"  [yellow]could not delete older bundle referrer {d} (registry refused)[/yellow]")
        if result.envelope_referrer:
            console.print(f"  cartridge envelope referrer: {result.envelope_referrer}")

    emit(data, human)


def _render_report(report: VerifyReport) -> None:
    color = "green" if report.ok else "red"
    word = "VERIFIED" if report.ok else "FAILED"
    console.print(f"[bold {color}]{word}[/bold {color}]: {escape(report.summary)} "
                  f"({escape(report.reference)}, subject {report.subject})")
    for why in report.reasons:
        console.print(f"  - {escape(why)}")
    for a in report.attestations:
        j = a.judgement
        c = _VERDICT_COLOR.get(j.verdict, "white")
        console.print(f"  [{c}]{j.verdict}[/{c}] {a.format} {escape(a.location)}: "
                      f"type={escape(j.predicate_type or '?')} signer={escape(j.signer_keyid or '-')}"
                      + (f" trust={j.trust}" if j.trust else ""))
        for why in j.reasons:
            console.print(f"      {escape(why)}")
        for note in j.notes:
            console.print(f"      [dim]note: {escape(note)}[/dim]")


def verify_cmd(
    ref: str = typer.Argument(..., help="The artifact reference (tag or digest)."),
    key: Path | None = typer.Option(None, "--key", help="Public key PEM (cosign.pub, acx key, openssl)."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    type_: str | None = typer.Option(None, "--type", help="Only attestations of this predicate type count."),
    no_content: bool = typer.Option(False, "--no-content",
                                    help="Skip pulling the artifact to check the attested digests."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Verify an artifact's attestations (cosign legacy + bundle) and their binding to the content."""
    now = _now(now_)
    keys = _trusted_keys(key, trust_registry, now)
    target, parsed = open_target(parse_reference(ref, require_ref=True), create=False)
    subject = target.resolve(parsed.reference or "")
    report = verify_artifact(target, subject, keys, reference=str(parsed), want_type=type_,
                             check_content=not no_content, now=now)
    emit(report.to_json(), lambda: _render_report(report))
    _exit(0 if report.ok else 1)


def _is_cartridge(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def attest_blob_cmd(
    file: Path = typer.Argument(..., help="The file to attest."),
    key: Path = typer.Option(..., "--key", help="Signing key: cosign.key or PKCS#8 PEM."),
    type_: str | None = typer.Option(None, "--type", help="Predicate type (default: cartridge for .acx, "
                                     "else cosign's custom type)."),
    predicate: Path | None = typer.Option(None, "--predicate", help="JSON predicate file."),
    bundle: Path | None = typer.Option(None, "--bundle", help="Write a sigstore bundle v0.3 here."),
    output_signature: Path | None = typer.Option(None, "--output-signature", help="Write a DSSE envelope."),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var with the key password."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Attest a file like `cosign attest-blob` (bundle or DSSE envelope, no transparency log)."""
    if (bundle is None) == (output_signature is None):
        raise UsageError("give exactly one of --bundle OUT or --output-signature OUT")
    now = _now(now_)
    private = load_private_key_file(key, password_from_env(password_env))
    if predicate is not None:
        ptype = type_ or DEFAULT_BLOB_PREDICATE_TYPE
        pred = parse_predicate_file(_read(predicate, "predicate"), where=str(predicate))
    elif _is_cartridge(file) and type_ in (None, CARTRIDGE_PREDICATE_TYPE):
        ptype = CARTRIDGE_PREDICATE_TYPE
        pred = cartridge_facts(file, "sha256:" + file_sha256(file), now=now).predicate()
        pred["binding"] = "file"
    else:
        raise UsageError("--predicate FILE is required (only a cartridge gets a default predicate)")
    out = bundle if bundle is not None else output_signature
    assert out is not None
    data = attest_blob(file, private, ptype, pred, as_bundle=bundle is not None)
    _write_atomic(out, data)
    emit({"file": str(file), "digest": "sha256:" + file_sha256(file), "predicateType": ptype,
          "signerKeyId": private.public().keyid(), "format": "bundle" if bundle else "envelope",
          "output": str(out)},
         lambda: console.print(f"[bold green]ATTESTED[/bold green] {escape(str(file))} → {escape(str(out))} "
                               f"({'bundle' if bundle else 'DSSE envelope'}, {escape(ptype)})"))


def _render_blob(v: BlobVerdict) -> None:
    j = v.judgement
    word, color = ("VERIFIED", "green") if v.ok else ("FAILED", "red")
    console.print(f"[bold {color}]{word}[/bold {color}] {escape(v.file)} ({v.kind}, "
                  f"type={escape(j.predicate_type or '?')}, signer={escape(j.signer_keyid or '-')})")
    for why in j.reasons:
        console.print(f"  - {escape(why)}")
    for note in j.notes:
        console.print(f"  [dim]note: {escape(note)}[/dim]")


def verify_blob_cmd(
    file: Path = typer.Argument(..., help="The file the attestation is about."),
    key: Path | None = typer.Option(None, "--key", help="Public key PEM."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    bundle: Path | None = typer.Option(None, "--bundle", help="A sigstore bundle (attest-blob --bundle)."),
    signature: Path | None = typer.Option(None, "--signature", help="A DSSE envelope (--output-signature)."),
    type_: str | None = typer.Option(None, "--type", help="Required predicate type."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Verify a blob attestation like `cosign verify-blob-attestation --key`."""
    if (bundle is None) == (signature is None):
        raise UsageError("give exactly one of --bundle FILE or --signature FILE")
    now = _now(now_)
    keys = _trusted_keys(key, trust_registry, now)
    doc = bundle if bundle is not None else signature
    assert doc is not None
    kind: Kind = "bundle" if bundle is not None else "envelope"
    verdict = verify_blob(file, _read(doc, "attestation"), kind, keys, want_type=type_, now=now)
    emit(verdict.to_json(), lambda: _render_blob(verdict))
    _exit(0 if verdict.ok else 1)


def register(app: typer.Typer) -> None:
    """Add attest / verify / attest-blob / verify-blob to the root app."""
    app.command("attest")(attest_cmd)
    app.command("verify")(verify_cmd)
    app.command("attest-blob")(attest_blob_cmd)
    app.command("verify-blob")(verify_blob_cmd)


__all__ = ["register"]
