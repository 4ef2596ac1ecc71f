"""`acx attest`, `acx verify`, `acx attest-blob`, `acx verify-blob`: cosign-compatible attestations
of OCI artifacts and of plain files (verdict first, short)."""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from acxoci.attestation.attach import artifact_kind, attest_artifact, content_layer, parse_format, pull_layer
from acxoci.attestation.blob import (
    DEFAULT_BLOB_PREDICATE_TYPE,
    BlobVerdict,
    attest_blob,
    file_sha256,
    parse_blob_target,
    verify_blob,
)
from acxoci.attestation.content import cartridge_facts
from acxoci.attestation.identity import rule_from_flags
from acxoci.attestation.judge import R_LEVEL_NEEDS_ISSUERS, Kind, Sigstore
from acxoci.attestation.signing import (
    TrustedKey,
    load_public_key_file,
    trust_registry_keys,
)
from acxoci.attestation.sigstore_verify import SigstoreCheck, load_trust
from acxoci.attestation.statements import CARTRIDGE_PREDICATE_TYPE, parse_predicate_file
from acxoci.attestation.verify import VerifyReport, pulled_content_path, verify_artifact
from acxoci.cartridge.constants import SQLITE_MAGIC
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cli.common import exit_with as _exit
from acxoci.cli.common import load_signing_key, refuse_local_file, transport_options
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import console, emit
from acxoci.errors import AcxError, UsageError
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.level.binding import bind_cartridge
from acxoci.level.credential import StatusCheck
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.policy import check_attached, parse_requirement, status_checker
from acxoci.level.status import DEFAULT_MAX_AGE
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.reference import parse_reference
from acxoci.oci.target import ReadView, Target, fetch_manifest, open_target, resolve_manifest
from attest.bundle import MAX_BUNDLE_BYTES
from attest.trust import TrustRegistry

_VERDICT_COLOR = {"verified": "green", "rejected": "red", "unverified": "yellow", "skipped": "dim"}


def _predicate(ptype: str | None, pfile: Path | None) -> tuple[str | None, dict[str, Any] | None]:
    if pfile is None:
        if ptype is not None:
            raise UsageError("--predicate-type needs --predicate FILE")
        return None, None
    if ptype is None:
        raise UsageError("--predicate needs --predicate-type URI")
    return ptype, parse_predicate_file(read_bytes(pfile, "predicate"), where=str(pfile))


def _trusted_keys(key: Path | None, trust_registry: Path | None, now: datetime) -> list[TrustedKey]:
    if (key is None) == (trust_registry is None):
        raise UsageError("give exactly one of --key PUB or --trust-registry FILE (or, for keyless "
                         "signatures, --certificate-identity[-regexp] and "
                         "--certificate-oidc-issuer[-regexp])")
    if key is not None:
        return [load_public_key_file(key)]
    assert trust_registry is not None
    return trust_registry_keys(load_trust_registry(trust_registry, now=now))



def _sigstore(identity: str | None, identity_regexp: str | None, issuer: str | None,
              issuer_regexp: str | None, trusted_root: Path | None, staging: bool) -> Sigstore | None:
    """The keyless context from cosign's identity flags and the trusted-root choice (lazy: the
    shipped root is parsed only when a keyless or tlog check can use it)."""
    rule = rule_from_flags(identity, identity_regexp, issuer, issuer_regexp)
    if rule is None and trusted_root is None and not staging:
        return None
    return Sigstore((rule,) if rule is not None else (), load_trust(trusted_root, staging=staging))


_IDENTITY_HELP = "Keyless: the certificate identity (SAN) must be exactly this."


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
    private = load_signing_key(key, password_env)
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
        _render_signer(j.signer, "      ")
        for why in j.reasons:
            console.print(f"      {escape(why)}")
        for note in j.notes:
            console.print(f"      [dim]note: {escape(note)}[/dim]")


def _level_gate(target: Target, subject: Descriptor, workdir: Path, *, required: int,
                issuers: IssuerRegistry, registry: TrustRegistry | None, now: datetime,
                status_check: StatusCheck | None) -> dict[str, Any]:
    """Bind the artifact's cartridge (reusing the copy `verify_artifact` pulled) and check its
    attached level credentials (revocation included) against `required`; JSON result with `ok`."""
    out: dict[str, Any] = {"required": required, "ok": False, "romDigest": None, "credentials": []}
    try:
        manifest = fetch_manifest(target, subject)
        if artifact_kind(manifest) != "cartridge":
            out["reason"] = "level unverifiable: the artifact is not a cartridge"
            return out
        layer = content_layer(manifest, "cartridge")
        path = pulled_content_path(workdir, layer)
        if not path.exists():
            pull_layer(target, layer, path)
        binding = bind_cartridge(path, now=now, registry=registry)
        check = check_attached(target, subject, binding, issuers=issuers, now=now,
                               status_check=status_check, required=required)
    except AcxError as exc:
        out["reason"] = f"level unverifiable: {exc.one_line()}"
        return out
    best = check.best
    out.update(ok=check.ok, reason=check.reason(), romDigest=binding.rom_digest,
               level=best.level if best is not None and best.ok else None,
               tier=best.tier if best is not None and best.ok else None,
               credentials=[v.to_json() | {"referrer": d} for d, v in check.verdicts])
    return out


def _level_checked(report: VerifyReport) -> VerifyReport:
    """Level attestations (signed by issuers) say where they were checked: the level gate."""
    from dataclasses import replace

    why = "level attestation: its credential is checked with --issuers (see level)"
    return replace(report, attestations=tuple(
        replace(a, judgement=replace(a.judgement, reasons=(why,)))
        if a.judgement.verdict == "skipped" and a.judgement.reasons == (R_LEVEL_NEEDS_ISSUERS,) else a
        for a in report.attestations))


def verify_cmd(
    ref: str = typer.Argument(..., help="The artifact reference (tag or digest)."),
    key: Path | None = typer.Option(None, "--key", help="Public key PEM (cosign.pub, acx key, openssl)."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    identity: str | None = typer.Option(None, "--certificate-identity", help=_IDENTITY_HELP),
    identity_regexp: str | None = typer.Option(None, "--certificate-identity-regexp",
                                               help="Keyless: … or match this regexp (whole value)."),
    issuer: str | None = typer.Option(None, "--certificate-oidc-issuer",
                                      help="Keyless: the OIDC issuer must be exactly this."),
    issuer_regexp: str | None = typer.Option(None, "--certificate-oidc-issuer-regexp",
                                             help="Keyless: … or match this regexp (whole value)."),
    trusted_root: Path | None = typer.Option(None, "--trusted-root", help="Sigstore trusted_root.json "
                                             "(default: the public-good production root, offline)."),
    staging: bool = typer.Option(False, "--staging", help="Use the shipped Sigstore staging root."),
    type_: str | None = typer.Option(None, "--type", help="Only attestations of this predicate type count."),
    no_content: bool = typer.Option(False, "--no-content",
                                    help="Skip pulling the artifact to check the attested digests."),
    require_level: str | None = typer.Option(None, "--require-level",
                                             help="Also require a verified, unrevoked level N or tier."),
    issuers: Path | None = typer.Option(None, "--issuers", help="Level issuer trust registry (with "
                                        "--require-level)."),
    max_status_age: int = typer.Option(int(DEFAULT_MAX_AGE.total_seconds()), "--max-status-age",
                                       help="Seconds after its validFrom that a status list is stale."),
    allow_offline: bool = typer.Option(False, "--allow-offline", help="Accept a cached/stale status list."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Status-list cache directory."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
    policy: Path | None = typer.Option(None, "--policy", help="Judge everything under this verification "
                                       "policy, exactly as `acx install` would (exit 8 when refused)."),
    host: Path | None = typer.Option(None, "--host", help="With --policy: the host descriptor."),
    host_limits: Path | None = typer.Option(None, "--host-limits", help="With --policy: host limits."),
) -> None:
    """May I trust this artifact? With --policy: the artifact's own signature and trust, its
    attestations, level, revocation and lifecycle, judged by the same decision as `acx install`
    (which installs nothing here). Without it, a narrower check: the attestations (cosign legacy +
    bundle) and their binding to the content, not the artifact's own signature; with
    --require-level also its level credential (issuer, ROM binding, revocation)."""
    refuse_local_file(ref, "verify")
    now = _now(now_)
    if policy is not None:
        narrower = [key, trust_registry, identity, identity_regexp, issuer, issuer_regexp, trusted_root,
                    type_, require_level, issuers, cache_dir]
        if any(v is not None for v in narrower) or staging or no_content or allow_offline:
            raise UsageError("--policy judges what the policy says; the other verify flags are a narrower "
                             "check", hint="put keys, identities and the level in the policy file")
        from acxoci.cli.judging import judge_ref, render, verdict_json

        j = judge_ref(ref, policy, host=host, host_limits=host_limits, now=now)
        emit(verdict_json(j, policy), lambda: render(j))
        _exit(0 if j.ok else 8)
        return
    if host is not None or host_limits is not None:
        raise UsageError("--host and --host-limits go with --policy")
    sig = _sigstore(identity, identity_regexp, issuer, issuer_regexp, trusted_root, staging)
    keys: list[TrustedKey] = []
    if key is not None or trust_registry is not None or sig is None or not sig.rules:
        keys = _trusted_keys(key, trust_registry, now)
    required = parse_requirement(require_level) if require_level is not None else None
    if required is not None and issuers is None:
        raise UsageError("--require-level needs --issuers REG (the level issuer trust registry)")
    level_issuers = IssuerRegistry.load(issuers, now=now) if issuers is not None and required is not None \
        else None
    opened, parsed = open_target(parse_reference(ref, require_ref=True), create=False)
    target = ReadView(opened)  # one referrer listing per subject: attestations and level share it
    subject = resolve_manifest(target, parsed.reference or "")  # one GET; the manifest is read next
    with tempfile.TemporaryDirectory(prefix="acx-verify-") as tmp:
        report = verify_artifact(target, subject, keys, reference=str(parsed), want_type=type_,
                                 check_content=not no_content, now=now, workdir=Path(tmp), sigstore=sig)
        level: dict[str, Any] | None = None
        if required is not None and level_issuers is not None:
            check = status_checker(None, issuers=level_issuers, now=now,
                                   max_age=timedelta(seconds=max_status_age), allow_offline=allow_offline,
                                   cache_dir=cache_dir)
            registry = load_trust_registry(trust_registry, now=now) if trust_registry is not None else None
            level = _level_gate(target, subject, Path(tmp), required=required, issuers=level_issuers,
                                registry=registry, now=now, status_check=check)
    ok = report.ok and (level is None or bool(level["ok"]))
    if level is not None:  # the level attestations' credentials were checked by the level gate
        report = _level_checked(report)
    data = report.to_json()
    if level is not None:
        data["attestationsOk"] = report.ok
        data["level"] = level
        data["ok"], data["verdict"] = ok, "verified" if ok else "failed"
        if not level["ok"]:
            data["reasons"] = [*data["reasons"], f"level: {level['reason']}"]

    def human() -> None:
        if report.ok and level is not None and not level["ok"]:
            console.print(f"[bold red]FAILED[/bold red]: level requirement {required} not met: "
                          f"{escape(str(level['reason']))}")
        _render_report(report)
        if level is not None:
            color, word = ("green", "LEVEL OK") if level["ok"] else ("red", "LEVEL FAILED")
            console.print(f"[bold {color}]{word}[/bold {color}] (required {required}): "
                          f"{escape(str(level['reason']))}")

    emit(data, human)
    _exit(0 if ok else 1)


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
    private = load_signing_key(key, password_env)
    if predicate is not None:
        ptype = type_ or DEFAULT_BLOB_PREDICATE_TYPE
        pred = parse_predicate_file(read_bytes(predicate, "predicate"), where=str(predicate))
    elif _is_cartridge(file) and type_ in (None, CARTRIDGE_PREDICATE_TYPE):
        ptype = CARTRIDGE_PREDICATE_TYPE
        pred = cartridge_facts(file, "sha256:" + file_sha256(file), now=now).predicate()
        pred["binding"] = "file"
    else:
        raise UsageError("--predicate FILE is required (only a cartridge gets a default predicate)")
    out = bundle if bundle is not None else output_signature
    assert out is not None
    data = attest_blob(file, private, ptype, pred, as_bundle=bundle is not None)
    atomic_write(out, data)
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
    _render_signer(j.signer, "  ")
    for why in j.reasons:
        console.print(f"  - {escape(why)}")
    for note in j.notes:
        console.print(f"  [dim]note: {escape(note)}[/dim]")


def _render_signer(check: SigstoreCheck | None, indent: str) -> None:
    """Issuer, log index and verified times of a sigstore-verified signer (when there are any)."""
    if check is None or not check.ok:
        return
    if check.issuer is not None:
        console.print(f"{indent}issuer: {escape(check.issuer)}")
    if check.log_index is not None:
        console.print(f"{indent}log index: {check.log_index}")
    for t in check.verified_times:
        console.print(f"{indent}verified time: {escape(t)}")


def verify_blob_cmd(
    file: str = typer.Argument(..., help="The file the bundle is about, or sha256:HEX (its digest)."),
    key: Path | None = typer.Option(None, "--key", help="Public key PEM (key-based bundles)."),
    trust_registry: Path | None = typer.Option(None, "--trust-registry", help="acx.trust-registry/1 file."),
    bundle: Path | None = typer.Option(None, "--bundle", help="A sigstore bundle (cosign, sigstore-python, "
                                       "attest-blob --bundle)."),
    signature: Path | None = typer.Option(None, "--signature", help="A DSSE envelope (--output-signature)."),
    identity: str | None = typer.Option(None, "--certificate-identity", help=_IDENTITY_HELP),
    identity_regexp: str | None = typer.Option(None, "--certificate-identity-regexp",
                                               help="Keyless: … or match this regexp (whole value)."),
    issuer: str | None = typer.Option(None, "--certificate-oidc-issuer",
                                      help="Keyless: the OIDC issuer must be exactly this."),
    issuer_regexp: str | None = typer.Option(None, "--certificate-oidc-issuer-regexp",
                                             help="Keyless: … or match this regexp (whole value)."),
    trusted_root: Path | None = typer.Option(None, "--trusted-root", help="Sigstore trusted_root.json "
                                             "(default: the public-good production root, offline)."),
    staging: bool = typer.Option(False, "--staging", help="Use the shipped Sigstore staging root."),
    type_: str | None = typer.Option(None, "--type", help="Required predicate type."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Verify a blob's sigstore bundle or DSSE envelope like `cosign verify-blob[-attestation]`:
    keyless (identity flags; certificate, log and timestamps through `sigstore`) or with a key."""
    if (bundle is None) == (signature is None):
        raise UsageError("give exactly one of --bundle FILE or --signature FILE")
    now = _now(now_)
    sig = _sigstore(identity, identity_regexp, issuer, issuer_regexp, trusted_root, staging)
    has_rules = sig is not None and bool(sig.rules)
    keys: list[TrustedKey] = []
    if key is not None or trust_registry is not None or not has_rules:
        keys = _trusted_keys(key, trust_registry, now)
    target = parse_blob_target(file)
    doc = bundle if bundle is not None else signature
    assert doc is not None
    kind: Kind = "bundle" if bundle is not None else "envelope"
    verdict = verify_blob(target, read_bytes(doc, "attestation", limit=MAX_BUNDLE_BYTES), kind, keys,
                          want_type=type_, now=now, sigstore=sig)
    emit(verdict.to_json(), lambda: _render_blob(verdict))
    _exit(0 if verdict.ok else 1)


def register(app: typer.Typer) -> None:
    """Add attest / verify / attest-blob / verify-blob to the root app."""
    app.command("attest")(transport_options()(attest_cmd))
    app.command("verify")(transport_options()(verify_cmd))
    app.command("attest-blob")(attest_blob_cmd)
    app.command("verify-blob")(verify_blob_cmd)


__all__ = ["register"]
