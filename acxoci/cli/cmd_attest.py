"""`acx attest`, `acx verify`, `acx attest-blob`, `acx verify-blob`: cosign-compatible attestations
of OCI artifacts and of plain files (verdict first, short)."""

from __future__ import annotations

import json
import re
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import typer

from acxoci.attest.bundle import MAX_BUNDLE_BYTES
from acxoci.attest.trust import TrustRegistry
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
from acxoci.attestation.keyless import KeylessSigner
from acxoci.attestation.provenance import Requirement, check_provenance, signer_workflow_pattern
from acxoci.attestation.provenance import url as provenance_url
from acxoci.attestation.signing import (
    TrustedKey,
    load_public_key_file,
    trust_registry_keys,
)
from acxoci.attestation.sigstore_verify import SigstoreCheck, load_trust, trust_from_config
from acxoci.attestation.statements import CARTRIDGE_PREDICATE_TYPE, parse_predicate_file
from acxoci.attestation.verify import VerifyReport, pulled_content_path, verified_provenance, verify_artifact
from acxoci.cartridge.constants import SQLITE_MAGIC
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cli.common import (
    KEYLESS_KEY_HELP,
    TLOG_HELP,
    TOKEN_HELP,
    TRUST_CONFIG_HELP,
    attestation_signer,
    refuse_local_file,
    transport_options,
)
from acxoci.cli.common import exit_with as _exit
from acxoci.cli.common import parse_now as _now
from acxoci.cli.output import emit, say
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

_VERDICT_COLOR = {"verified": "green", "rejected": "red", "unverified": "yellow", "skipped": "dim"}


def _predicate(ptype: str | None, pfile: Path | None) -> tuple[str | None, dict[str, Any] | None]:
    if pfile is None:
        if ptype is not None:
            raise UsageError("--type needs --predicate FILE")
        return None, None
    if ptype is None:
        raise UsageError("--predicate needs --type URI")
    return ptype, parse_predicate_file(read_bytes(pfile, "predicate"), where=str(pfile))


def _trusted_keys(key: Path | None, trust_registry: Path | None, now: datetime) -> list[TrustedKey]:
    if (key is None) == (trust_registry is None):
        raise UsageError("give exactly one of --key PUB or --trust-registry FILE (or, for keyless "
                         "signatures, --certificate-identity[-regexp] and "
                         "--certificate-oidc-issuer[-regexp])")
    if key is not None:
        return [load_public_key_file(key)]
    assert trust_registry is not None
    return trust_registry_keys(load_trust_registry(trust_registry))



def _sigstore(identity: str | None, identity_regexp: str | None, issuer: str | None,
              issuer_regexp: str | None, trusted_root: Path | None, staging: bool,
              trust_config: Path | None = None) -> Sigstore | None:
    """The keyless context from cosign's identity flags and the trusted-root choice (lazy: the
    shipped root is parsed only when a keyless or tlog check can use it). `--trust-config` names
    a ClientTrustConfig whose trusted root is used (not with --trusted-root or --staging)."""
    rule = rule_from_flags(identity, identity_regexp, issuer, issuer_regexp)
    if trust_config is not None:
        if trusted_root is not None or staging:
            raise UsageError("--trust-config already names the trusted root: drop --trusted-root / --staging")
        return Sigstore((rule,) if rule is not None else (), trust_from_config(trust_config))
    if rule is None and trusted_root is None and not staging:
        return None
    return Sigstore((rule,) if rule is not None else (), load_trust(trusted_root, staging=staging))


GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"


def _provenance_identity(req: Requirement, identity: str | None, identity_regexp: str | None,
                         issuer: str | None, issuer_regexp: str | None
                         ) -> tuple[str | None, str | None, str | None, str | None]:
    """Like `gh attestation verify`: with --repo / --signer-workflow and no identity flag, the
    certificate identity must be a workflow of that repository (or that workflow), and the issuer
    GitHub Actions' unless --certificate-oidc-issuer[-regexp] says otherwise."""
    if req.empty:
        return identity, identity_regexp, issuer, issuer_regexp
    if req.repository is None and req.signer_workflow is None:
        raise UsageError("--source-ref needs --repo or --signer-workflow (whose workflow built it?)")
    if identity is None and identity_regexp is None:
        if req.signer_workflow is not None:
            identity_regexp = signer_workflow_pattern(req.signer_workflow)
        else:
            identity_regexp = re.escape(provenance_url(req.repository or "")) + "/.+"
    if issuer is None and issuer_regexp is None:
        issuer = GITHUB_ACTIONS_ISSUER
    return identity, identity_regexp, issuer, issuer_regexp


_IDENTITY_HELP = "Keyless: the certificate identity (SAN) must be exactly this."


def attest_cmd(
    ref: str = typer.Argument(..., help="host/repo:tag, host/repo@sha256:…, oci-layout:DIR:tag."),
    key: str | None = typer.Option(None, "--key", help=KEYLESS_KEY_HELP),
    predicate_type: str | None = typer.Option(None, "--type", help="Attest this predicate type …"),
    predicate: Path | None = typer.Option(None, "--predicate", help="… with this JSON predicate file."),
    fmt: str | None = typer.Option(None, "--attestation-format", help="legacy (.att tag) | bundle (referrer) "
                                   "| both (default: both with --key, bundle keyless)."),
    replace: bool = typer.Option(False, "--replace", help="Remove your own earlier attestations of this "
                                 "predicate type (others' are never touched)."),
    password_env: str | None = typer.Option(None, "--password-env",
                                            help="Env var with the key password (default COSIGN_PASSWORD)."),
    identity_token_file: Path | None = typer.Option(None, "--identity-token-file", help=TOKEN_HELP),
    trust_config: Path | None = typer.Option(None, "--trust-config", help=TRUST_CONFIG_HELP),
    tlog_upload: str = typer.Option("true", "--tlog-upload", help=TLOG_HELP),
    no_envelope: bool = typer.Option(False, "--no-envelope",
                                     help="Do not attach the cartridge's own DSSE envelope as a referrer."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Attest an OCI artifact so that stock cosign accepts it: with --key (`verify-attestation
    --key`), or keylessly through Sigstore (`--certificate-identity`, `--certificate-oidc-issuer`)."""
    refuse_local_file(ref, "attest")
    now = _now(now_)
    formats = parse_format(fmt, keyless=key is None)
    ptype, pred = _predicate(predicate_type, predicate)
    private = attestation_signer(key, password_env, identity_token_file, trust_config, tlog_upload)
    target, parsed = open_target(parse_reference(ref, require_ref=True))
    subject = target.resolve(parsed.reference or "")
    result = attest_artifact(target, subject, parsed.repo_string(), private, formats=formats,
                             predicate_type=ptype, predicate=pred, attach_cartridge_envelope=not no_envelope,
                             now=now, replace=replace)
    data = result.to_json()

    def human() -> None:
        say("[bold green]ATTESTED[/bold green] {}@{}", parsed.repo_string(), result.subject)
        say("  predicate type: {}", result.predicate_type)
        say("  signer: {}", result.signer_keyid)
        if result.legacy_manifest:
            extra = f" (replaced {result.replaced_layers})" if result.replaced_layers else ""
            say("  legacy: tag {} → {}{}", result.legacy_tag, result.legacy_manifest, extra)
        if result.bundle_referrer:
            say("  bundle referrer: {}", result.bundle_referrer)
        for d in result.replaced_bundles:
            say("  replaced older bundle referrer {}", d)
        for d in result.kept_bundles:
            say("  [yellow]could not delete older bundle referrer {} (registry "
                "refused)[/yellow]", d)
        if result.envelope_referrer:
            say("  cartridge envelope referrer: {}", result.envelope_referrer)

    emit(data, human)


def _render_report(report: VerifyReport) -> None:
    color = "green" if report.ok else "red"
    word = "VERIFIED" if report.ok else "FAILED"
    say("[bold {}]{}[/bold {}]: {} ({}, subject {})",
        color, word, color, report.summary, report.reference, report.subject)
    for why in report.reasons:
        say("  - {}", why)
    for stray in report.strays:
        say("  [yellow]left out[/yellow] {} ({}): {}", stray.digest, stray.source, stray.kind)
    for a in report.attestations:
        j = a.judgement
        c = _VERDICT_COLOR.get(j.verdict, "white")
        say("  [{}]{}[/{}] {} {}: type={} signer={}{}", c, j.verdict, c, a.format, a.location,
            j.predicate_type or "?", j.signer_keyid or "-", f" trust={j.trust}" if j.trust else "")
        _render_signer(j.signer, "      ")
        for why in j.reasons:
            say("      {}", why)
        for note in j.notes:
            say("      [dim]note: {}[/dim]", note)


def _level_gate(target: Target, subject: Descriptor, workdir: Path, *, required: int,
                issuers: IssuerRegistry, registry: TrustRegistry | None, now: datetime,
                status_check: StatusCheck | None, allow_demo: bool) -> dict[str, Any]:
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
                               status_check=status_check, required=required, allow_demo=allow_demo)
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
    trust_config: Path | None = typer.Option(None, "--trust-config", help=TRUST_CONFIG_HELP),
    repo: str | None = typer.Option(None, "--repo", help="Require SLSA provenance built from this "
                                    "repository (OWNER/REPO), in the certificate and the predicate."),
    source_ref: str | None = typer.Option(None, "--source-ref", help="… from this git ref "
                                          "(e.g. refs/heads/main)."),
    signer_workflow: str | None = typer.Option(None, "--signer-workflow", help="… signed by this workflow "
                                               "(OWNER/REPO/.github/workflows/FILE[@REF])."),
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
    allow_demo: bool = typer.Option(False, "--allow-demo-level", help="Count a level measured by the "
                                    "demo solver or benchmark (a policy's level.allowDemo)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Status-list cache directory."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
    policy: Path | None = typer.Option(None, "--policy", help="Judge everything under this verification "
                                       "policy, exactly as `acx install` would (exit 8 when refused)."),
    host: Path | None = typer.Option(None, "--host-descriptor", help="With --policy: the host descriptor."),
    host_limits: Path | None = typer.Option(None, "--host-limits", help="With --policy: host limits."),
    store: Path | None = typer.Option(None, "--store", envvar="ACX_STORE", help="With --policy: the install "
                                      "store a workflow is staffed from (read only; default: install's)."),
    roster: Path | None = typer.Option(None, "--cartridges", help="With --policy: more cartridges for a "
                                       "workflow's staffing (as install's --cartridges)."),
) -> None:
    """May I trust this artifact? With --policy: the artifact's own signature and trust, its
    attestations, level, revocation, lifecycle and provenance, judged by the same decision as
    `acx install` (which installs nothing here). Without it, a narrower check: the attestations
    (cosign legacy + bundle) and their binding to the content, not the artifact's own signature;
    with --require-level also its level credential (issuer, ROM binding, revocation); with --repo,
    --source-ref, --signer-workflow also its SLSA provenance (certificate and predicate)."""
    refuse_local_file(ref, "verify")
    parse_reference(ref, require_ref=True)  # a bad reference is named before any flag is
    now = _now(now_)
    if policy is None and not any((key, trust_registry, identity, identity_regexp, repo, signer_workflow)):
        raise UsageError("say what to trust: --policy FILE judges the artifact as `acx install` would (its "
                         "signature, trust, attestations, level, revocation, lifecycle); --key, "
                         "--trust-registry or --certificate-identity check its attestations only",
                         hint="acx verify REF --policy policy.yaml (make one with `acx policy init`)")
    if policy is not None:
        narrower = [key, trust_registry, identity, identity_regexp, issuer, issuer_regexp, trusted_root,
                    type_, require_level, issuers, cache_dir, trust_config, repo, source_ref, signer_workflow]
        if any(v is not None for v in narrower) or staging or no_content or allow_offline or allow_demo:
            raise UsageError("--policy judges what the policy says; the other verify flags are a narrower "
                             "check", hint="put keys, identities, provenance and the level in the policy")
        from acxoci.cli.judging import judge_ref, render_judgement, verdict_json

        j = judge_ref(ref, policy, host=host, host_limits=host_limits, now=now, store=store, roster=roster)
        emit(verdict_json(j, policy), lambda: render_judgement(j))
        _exit(0 if j.ok else 8)
        return
    if host is not None or host_limits is not None or roster is not None:
        raise UsageError("--host-descriptor, --host-limits and --cartridges go with --policy")
    wanted = Requirement(repo, source_ref, signer_workflow)
    identity, identity_regexp, issuer, issuer_regexp = _provenance_identity(
        wanted, identity, identity_regexp, issuer, issuer_regexp)
    sig = _sigstore(identity, identity_regexp, issuer, issuer_regexp, trusted_root, staging, trust_config)
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
            registry = load_trust_registry(trust_registry) if trust_registry is not None else None
            level = _level_gate(target, subject, Path(tmp), required=required, issuers=level_issuers,
                                registry=registry, now=now, status_check=check, allow_demo=allow_demo)
    prov = None if wanted.empty else check_provenance(wanted, verified_provenance(report))
    ok = report.ok and (level is None or bool(level["ok"])) and (prov is None or prov.ok)
    if level is not None:  # the level attestations' credentials were checked by the level gate
        report = _level_checked(report)
    data = report.to_json()
    if prov is not None:
        data["provenance"] = {"required": wanted.to_json(), **prov.to_json()}
        data["ok"], data["verdict"] = ok, "verified" if ok else "failed"
        if not prov.ok:
            data["reasons"] = [*data["reasons"], *(f"provenance: {r}" for r in prov.reasons)]
    if level is not None:
        data["attestationsOk"] = report.ok
        data["level"] = level
        data["ok"], data["verdict"] = ok, "verified" if ok else "failed"
        if not level["ok"]:
            data["reasons"] = [*data["reasons"], f"level: {level['reason']}"]

    def human() -> None:
        if report.ok and level is not None and not level["ok"]:
            say("[bold red]FAILED[/bold red]: level requirement {} not met: {}",
                required, str(level['reason']))
        if report.ok and prov is not None and not prov.ok:
            say("[bold red]FAILED[/bold red]: the provenance requirement is not met")
        _render_report(report)
        if prov is not None:
            if prov.ok:
                say("[bold green]PROVENANCE OK[/bold green] ({}): {}", json.dumps(wanted.to_json()),
                    prov.matched or "")
            else:
                say("[bold red]PROVENANCE FAILED[/bold red] ({})", json.dumps(wanted.to_json()))
            for why in prov.reasons:
                say("  - {}", why)
        if level is not None:
            color, word = ("green", "LEVEL OK") if level["ok"] else ("red", "LEVEL FAILED")
            say("[bold {}]{}[/bold {}] (required {}): {}",
                color, word, color, required, str(level['reason']))

    emit(data, human)
    _exit(0 if ok else 1)


def _is_cartridge(path: Path) -> bool:
    from acxoci.errors import AcxError
    from acxoci.fsutil import open_regular

    try:
        with open_regular(path, "file") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except AcxError:
        return False


def attest_blob_cmd(
    file: Path = typer.Argument(..., help="The file to attest."),
    key: str | None = typer.Option(None, "--key", help=KEYLESS_KEY_HELP),
    type_: str | None = typer.Option(None, "--type", help="Predicate type (default: cartridge for .acx, "
                                     "else cosign's custom type)."),
    predicate: Path | None = typer.Option(None, "--predicate", help="JSON predicate file."),
    bundle: Path | None = typer.Option(None, "--bundle", help="Write a sigstore bundle v0.3 here."),
    output_signature: Path | None = typer.Option(None, "--output-signature", help="Write a DSSE envelope."),
    password_env: str | None = typer.Option(None, "--password-env", help="Env var with the key password."),
    identity_token_file: Path | None = typer.Option(None, "--identity-token-file", help=TOKEN_HELP),
    trust_config: Path | None = typer.Option(None, "--trust-config", help=TRUST_CONFIG_HELP),
    tlog_upload: str = typer.Option("true", "--tlog-upload", help=TLOG_HELP),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Attest a file like `cosign attest-blob`: with --key a bundle or DSSE envelope and no
    transparency log; keyless a bundle with a Fulcio certificate, log entry and/or timestamps."""
    if (bundle is None) == (output_signature is None):
        raise UsageError("give exactly one of --bundle OUT or --output-signature OUT")
    if key is None and output_signature is not None:
        raise UsageError("a keyless attestation is a sigstore bundle: use --bundle OUT")
    now = _now(now_)
    private = attestation_signer(key, password_env, identity_token_file, trust_config, tlog_upload)
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
    signer = private.label if isinstance(private, KeylessSigner) else private.public().keyid()
    atomic_write(out, data)
    emit({"file": str(file), "digest": "sha256:" + file_sha256(file), "predicateType": ptype,
          "signerKeyId": signer, "format": "bundle" if bundle else "envelope",
          "output": str(out)},
         lambda: say("[bold green]ATTESTED[/bold green] {} → {} ({}, {})",
                     str(file), str(out), 'bundle' if bundle else 'DSSE envelope', ptype))


def _render_blob(v: BlobVerdict) -> None:
    j = v.judgement
    word, color = ("VERIFIED", "green") if v.ok else ("FAILED", "red")
    say("[bold {}]{}[/bold {}] {} ({}, type={}, signer={})",
        color, word, color, v.file, v.kind, j.predicate_type or '?', j.signer_keyid or '-')
    _render_signer(j.signer, "  ")
    for why in j.reasons:
        say("  - {}", why)
    for note in j.notes:
        say("  [dim]note: {}[/dim]", note)


def _render_signer(check: SigstoreCheck | None, indent: str) -> None:
    """Issuer, log index and verified times of a sigstore-verified signer (when there are any)."""
    if check is None or not check.ok:
        return
    if check.issuer is not None:
        say("{}issuer: {}", indent, check.issuer)
    if check.log_index is not None:
        say("{}log index: {}", indent, check.log_index)
    for t in check.verified_times:
        say("{}verified time: {}", indent, t)


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
    trust_config: Path | None = typer.Option(None, "--trust-config", help=TRUST_CONFIG_HELP),
    type_: str | None = typer.Option(None, "--type", help="Required predicate type."),
    now_: str | None = typer.Option(None, "--now", help="RFC 3339 time to use instead of the clock."),
) -> None:
    """Verify a blob's sigstore bundle or DSSE envelope like `cosign verify-blob[-attestation]`:
    keyless (identity flags; certificate, log and timestamps through `sigstore`) or with a key.

    One attestation over one file: not a cartridge's own signature (`acx cartridge verify`) and
    nothing in a registry (`acx verify REF --policy FILE`)."""
    if (bundle is None) == (signature is None):
        raise UsageError("give exactly one of --bundle FILE or --signature FILE")
    now = _now(now_)
    sig = _sigstore(identity, identity_regexp, issuer, issuer_regexp, trusted_root, staging, trust_config)
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
    app.command("attest")(transport_options(referrers=True, layout="ref")(attest_cmd))
    app.command("verify")(transport_options(layout="ref")(verify_cmd))
    app.command("attest-blob")(attest_blob_cmd)
    app.command("verify-blob")(verify_blob_cmd)


__all__ = ["register"]
