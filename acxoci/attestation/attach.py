"""Attest an OCI artifact through a Target: build the statement (cartridge, workflow or any
predicate), sign it (with a key, or keylessly through `sigstore`), and write it as cosign's legacy
`.att` tag and/or a sigstore bundle referrer (with a key the default is both, so cosign 2.5 and 3.x
verify with no extra flags; keyless the default is the bundle, as cosign 3 writes it), plus the
cartridge's own DSSE envelope as a referrer.

Attestations are additive, as in cosign: a new one is appended to the `.att` manifest and added as
a referrer; another signer's attestation is never touched. Replacing your own is opt-in
(`replace=True`, cosign's `--replace`): `.att` layers and bundle referrers of the same predicate
type *by the same signer* (a signature that verifies with the key; for keyless, the same certificate
identity and issuer) are removed (bundle referrers best effort: a registry that refuses DELETE
keeps them, and verification judges every one). The cartridge-envelope referrer is deterministic,
so it is written once.
"""

from __future__ import annotations

import io
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from acxoci.attest.bundle import parse_bundle
from acxoci.attest.canonical import loads_strict, sha256_digest
from acxoci.attest.dsse import Envelope
from acxoci.attest.errors import AttestError
from acxoci.attest.intoto import Statement
from acxoci.attest.keys import PrivateKey
from acxoci.attestation.content import cartridge_facts, embedded_envelope
from acxoci.attestation.formats import (
    Blob,
    BuiltManifest,
    LegacyLayer,
    build_bundle_referrer,
    build_envelope_referrer,
    build_legacy_manifest,
    classify_referrer,
    legacy_layer,
    legacy_layers,
    legacy_tag,
)
from acxoci.attestation.identity import CertificateFacts, read_certificate
from acxoci.attestation.keyless import KeylessSignature, KeylessSigner
from acxoci.attestation.signing import bundle_bytes, envelope_bytes, sign_statement
from acxoci.attestation.statements import (
    cartridge_statement,
    graph_facts,
    graph_statement,
    oci_statement,
    workflow_facts,
    workflow_statement,
)
from acxoci.cartridge.constants import ARTIFACT_TYPE_CARTRIDGE
from acxoci.errors import AcxError, InvalidInput, NotFound, UsageError
from acxoci.oci.descriptor import Descriptor, Manifest
from acxoci.oci.digest import copy_verified
from acxoci.oci.scheduler import DEFAULT_PUSH_CONCURRENCY, BlobScheduler
from acxoci.oci.target import Target, fetch_bytes, fetch_manifest

COSIGN_CERTIFICATE = "dev.sigstore.cosign/certificate"
COSIGN_RFC3161 = "dev.sigstore.cosign/rfc3161timestamp"
FormatChoice = Literal["legacy", "bundle", "both"]
#: What signs an attestation: a private key (file, env://, PKCS#11) or a keyless signer.
AttestationSigner = PrivateKey | KeylessSigner


def parse_format(value: str | None, *, keyless: bool = False) -> FormatChoice:
    """`legacy`, `bundle` or `both` (the `--attestation-format` option), else a usage error; unset means both
    with a key and the bundle keylessly (cosign 3's choice; the `.att` layout only on request)."""
    if value is None:
        return "bundle" if keyless else "both"
    if value == "legacy":
        return "legacy"
    if value == "bundle":
        return "bundle"
    if value == "both":
        return "both"
    raise UsageError(f"--attestation-format must be legacy, bundle or both, not {value!r}")
CARTRIDGE_LAYER_PREFIX = "application/vnd.acx.cartridge.layer"
WORKFLOW_MARK = "application/vnd.acx.workflow"
GRAPH_MARK = "application/vnd.acx.agent-graph"
MAX_WORKFLOW_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class AttestResult:
    """What one attest wrote: the subject, the signer, and each object's digest."""

    subject: str
    repository: str
    predicate_type: str
    signer_keyid: str
    statement_digest: str
    legacy_tag: str | None = None
    legacy_manifest: str | None = None
    replaced_layers: int = 0
    bundle_referrer: str | None = None
    replaced_bundles: tuple[str, ...] = ()
    kept_bundles: tuple[str, ...] = ()
    envelope_referrer: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "repository": self.repository, "predicateType": self.predicate_type,
                "signerKeyId": self.signer_keyid, "statementDigest": self.statement_digest,
                "legacy": None if self.legacy_manifest is None else {
                    "tag": self.legacy_tag, "manifest": self.legacy_manifest,
                    "replacedLayers": self.replaced_layers},
                "bundleReferrer": self.bundle_referrer, "replacedBundles": list(self.replaced_bundles),
                "keptBundles": list(self.kept_bundles), "envelopeReferrer": self.envelope_referrer}


def _rfc3339(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _push_blob(target: Target, blob: Blob) -> None:
    if not target.exists(blob.desc):
        target.push(blob.desc, io.BytesIO(blob.data))


def _push_manifest(target: Target, built: BuiltManifest,
                   concurrency: int = DEFAULT_PUSH_CONCURRENCY) -> Descriptor:
    """The blobs `concurrency` at a time (the one blob scheduler), then the manifest."""
    with BlobScheduler(concurrency) as sched:
        for b in built.blobs:
            sched.submit(_push_blob, target, b)
    _push_blob(target, built.manifest)
    return built.manifest.desc


def artifact_kind(manifest: Manifest) -> Literal["cartridge", "workflow", "agent-graph", "other"]:
    """What the subject manifest holds, by artifactType or layer media type."""
    at = manifest.artifact_type or ""
    types = [la.media_type for la in manifest.layers]
    if at == ARTIFACT_TYPE_CARTRIDGE or any(t.startswith(CARTRIDGE_LAYER_PREFIX) for t in types):
        return "cartridge"
    if WORKFLOW_MARK in at or any(WORKFLOW_MARK in t for t in types):
        return "workflow"
    if GRAPH_MARK in at or any(GRAPH_MARK in t for t in types):
        return "agent-graph"
    return "other"


def content_layer(manifest: Manifest, kind: str, digest: str | None = None) -> Descriptor:
    """The layer carrying the cartridge/workflow (by digest if given, else by media type)."""
    if digest is not None:
        for la in manifest.layers:
            if la.digest == digest:
                return la
        raise InvalidInput(f"the manifest has no layer {digest}")
    mark = {"cartridge": CARTRIDGE_LAYER_PREFIX, "agent-graph": GRAPH_MARK}.get(kind, WORKFLOW_MARK)
    hits = [la for la in manifest.layers if mark in la.media_type]
    if not hits and len(manifest.layers) == 1:
        hits = list(manifest.layers)
    if len(hits) != 1:
        raise InvalidInput(f"cannot tell which layer holds the {kind} ({len(hits)} candidates)")
    return hits[0]


def pull_layer(target: Target, layer: Descriptor, dest: Path) -> Path:
    """Download a layer to `dest` (digest and size verified before the file appears)."""
    with target.fetch(layer) as reader:
        copy_verified(reader, dest)
    return dest


@dataclass(frozen=True)
class SignedStatement:
    """One statement signed for the formats asked: the documents and who signed."""

    signer: str
    legacy: bytes | None
    legacy_keyless: dict[str, str] | None
    bundle: bytes | None
    keyless: KeylessSignature | None = None


def sign_for_formats(statement: Statement, signer: AttestationSigner,
                     formats: FormatChoice) -> SignedStatement:
    """Sign `statement` once per format with a key (the `.att` envelope keeps the keyid, the bundle
    must not), or once keylessly (both formats carry that one signature)."""
    want_legacy, want_bundle = formats in ("legacy", "both"), formats in ("bundle", "both")
    if isinstance(signer, KeylessSigner):
        sig = signer.sign(statement, legacy=want_legacy)
        annotations = None
        if want_legacy:
            annotations = {COSIGN_CERTIFICATE: sig.certificate_pem}
            if sig.rfc3161_timestamp is not None:
                annotations[COSIGN_RFC3161] = sig.rfc3161_timestamp
        return SignedStatement(f"keyless:{sig.identity}", sig.envelope if want_legacy else None, annotations,
                       sig.bundle if want_bundle else None, sig)
    pub = signer.public()
    legacy = envelope_bytes(sign_statement(statement, signer, keyid=pub.keyid())) if want_legacy else None
    bundle = bundle_bytes(sign_statement(statement, signer, keyid=None), pub) if want_bundle else None
    return SignedStatement(pub.keyid(), legacy, None, bundle)


def write_attestation(target: Target, subject: Descriptor, statement: Statement, key: AttestationSigner, *,
                      formats: FormatChoice = "both", now: datetime, replace: bool = False,
                      concurrency: int = DEFAULT_PUSH_CONCURRENCY) -> AttestResult:
    """Sign `statement` and add it in the chosen formats as attestations of `subject`; with
    `replace`, the signer's own earlier ones of the same predicate type go (module docstring)."""
    name = statement.subjects[0].name if statement.subjects else ""
    signed = sign_for_formats(statement, key, formats)
    legacy_fields: dict[str, Any] = {}
    if signed.legacy is not None:
        tag = legacy_tag(subject.digest)
        keep: list[LegacyLayer] = []
        replaced = 0
        try:
            old = fetch_manifest(target, target.resolve(tag))
            for la in legacy_layers(old):
                if replace and la.predicate_type == statement.predicate_type \
                        and _own_legacy_layer(target, la, key, signed):
                    replaced += 1
                else:
                    keep.append(la)
        except NotFound:
            pass
        new_layer, data = legacy_layer(signed.legacy, statement.predicate_type, signed.legacy_keyless)
        nd = new_layer.desc
        _push_blob(target, Blob(Descriptor(nd.media_type, nd.digest, nd.size), data))
        layers = [*(la for la in keep if la.desc.digest != nd.digest), new_layer]
        desc = _push_manifest(target, build_legacy_manifest(layers), concurrency)
        target.tag(desc, tag)
        legacy_fields = {"legacy_tag": tag, "legacy_manifest": desc.digest, "replaced_layers": replaced}
    bundle_fields: dict[str, Any] = {}
    if signed.bundle is not None:
        built = build_bundle_referrer(signed.bundle, subject.plain(), statement.predicate_type,
                                      created=_rfc3339(now))
        new = _push_manifest(target, built, concurrency)
        gone: tuple[str, ...] = ()
        kept: tuple[str, ...] = ()
        if replace:
            gone, kept = _replace_old_bundles(target, subject, new.digest, statement.predicate_type,
                                              key, signed)
        bundle_fields = {"bundle_referrer": new.digest, "replaced_bundles": gone, "kept_bundles": kept}
    return AttestResult(subject.digest, name, statement.predicate_type, signed.signer,
                        sha256_digest(statement.canonical_bytes()), **bundle_fields, **legacy_fields)


def _same_keyless_signer(cert: CertificateFacts, signed: SignedStatement) -> bool:
    """The certificate names the signer of `signed` (same identity, same issuer)."""
    ks = signed.keyless
    return ks is not None and ks.identity in cert.subjects and cert.issuer == ks.issuer


def _own_legacy_layer(target: Target, layer: LegacyLayer, key: AttestationSigner,
                      signed: SignedStatement) -> bool:
    """True if the `.att` layer was signed by this signer (key: the signature verifies; keyless:
    its certificate annotation names the same identity and issuer)."""
    try:
        if isinstance(key, KeylessSigner):
            pem = layer.desc.annotations.get(COSIGN_CERTIFICATE, "")
            return bool(pem) and _same_keyless_signer(read_certificate(pem.encode("utf-8"), pem=True), signed)
        env = Envelope.from_json(loads_strict(fetch_bytes(target, layer.desc, limit=MAX_WORKFLOW_BYTES)))
        env.verify(key.public(), index=None)
        return True
    except (AcxError, AttestError, ValueError):
        return False


def _same_signer_same_type(data: bytes, predicate_type: str, key: AttestationSigner,
                           signed: SignedStatement) -> bool:
    """True if `data` is a bundle by this signer whose statement has `predicate_type`."""
    try:
        bundle = parse_bundle(data)
        if bundle.envelope is None:
            return False
        if isinstance(key, KeylessSigner):
            if not bundle.keyless or not bundle.certificates_der:
                return False
            if not _same_keyless_signer(read_certificate(bundle.certificates_der[0]), signed):
                return False
        else:
            if bundle.keyless:
                return False
            bundle.envelope.verify(key.public(), index=None)
        return Statement.from_bytes(bundle.envelope.payload).predicate_type == predicate_type
    except (AttestError, ValueError):
        return False


def _replace_old_bundles(target: Target, subject: Descriptor, new_digest: str, predicate_type: str,
                         key: AttestationSigner,
                         signed: SignedStatement) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Delete earlier bundle referrers of the same type by the same signer; (deleted, kept)."""
    deleted: list[str] = []
    kept: list[str] = []
    for entry in target.referrers(subject.plain()):
        if entry.digest == new_digest:
            continue
        try:
            manifest = fetch_manifest(target, entry)
            kind, layer = classify_referrer(manifest)
            if kind != "bundle" or layer is None:
                continue
            if not _same_signer_same_type(fetch_bytes(target, layer), predicate_type, key, signed):
                continue
        except AcxError:
            continue
        try:
            target.delete(entry.plain())
            deleted.append(entry.digest)
        except AcxError:
            kept.append(entry.digest)
    return tuple(deleted), tuple(kept)


def attach_envelope(target: Target, subject: Descriptor, envelope: bytes,
                    concurrency: int = DEFAULT_PUSH_CONCURRENCY) -> str:
    """Attach a DSSE envelope (the cartridge's own) as a referrer; returns its manifest digest.
    No timestamp annotation, so attaching the same envelope again writes nothing new."""
    built = build_envelope_referrer(envelope, subject.plain())
    return _push_manifest(target, built, concurrency).digest


def attest_artifact(target: Target, subject: Descriptor, repository: str, key: AttestationSigner, *,
                    formats: FormatChoice = "both", predicate_type: str | None = None,
                    predicate: dict[str, Any] | None = None, attach_cartridge_envelope: bool = True,
                    now: datetime, replace: bool = False,
                    concurrency: int = DEFAULT_PUSH_CONCURRENCY) -> AttestResult:
    """Attest the artifact `subject` (a manifest in `target`), named `repository` in the statement.

    With `predicate_type`/`predicate` the statement carries that predicate; otherwise a cartridge
    gets the cartridge predicate (pulled and verified first) and a workflow the workflow predicate.
    """
    if (predicate_type is None) != (predicate is None):
        raise UsageError("--predicate-type and --predicate go together")
    manifest = fetch_manifest(target, subject)
    kind = artifact_kind(manifest)
    if predicate_type is not None and predicate is not None:
        stmt = oci_statement(subject.digest, repository, predicate_type, predicate)
        return write_attestation(target, subject, stmt, key, formats=formats, now=now,
                                 replace=replace, concurrency=concurrency)
    if kind == "cartridge":
        layer = content_layer(manifest, kind)
        with tempfile.TemporaryDirectory(prefix="acx-attest-") as tmp:
            path = pull_layer(target, layer, Path(tmp) / "cartridge.acx")
            facts = cartridge_facts(path, layer.digest, now=now)
            env = embedded_envelope(path)
        stmt = cartridge_statement(subject.digest, repository, facts)
        result = write_attestation(target, subject, stmt, key, formats=formats, now=now,
                                 replace=replace, concurrency=concurrency)
        if attach_cartridge_envelope and env is not None:
            digest = attach_envelope(target, subject, env, concurrency)
            result = AttestResult(**{**result.__dict__, "envelope_referrer": digest})
        return result
    if kind == "workflow":
        layer = content_layer(manifest, kind)
        data = fetch_bytes(target, layer, limit=MAX_WORKFLOW_BYTES)
        stmt = workflow_statement(subject.digest, repository, workflow_facts(data, layer.digest))
        return write_attestation(target, subject, stmt, key, formats=formats, now=now,
                                 replace=replace, concurrency=concurrency)
    if kind == "agent-graph":
        layer = content_layer(manifest, kind)
        data = fetch_bytes(target, layer, limit=MAX_WORKFLOW_BYTES)
        stmt = graph_statement(subject.digest, repository, graph_facts(data, layer.digest))
        return write_attestation(target, subject, stmt, key, formats=formats, now=now,
                                 replace=replace, concurrency=concurrency)
    raise UsageError(f"{subject.digest} is not a cartridge, workflow or agent graph artifact "
                     f"(artifactType {manifest.artifact_type or 'none'}); "
                     "pass --predicate-type and --predicate")


def attest_after_push(target: Target, manifest: Descriptor, repository: str, key: AttestationSigner, *,
                      now: datetime, formats: FormatChoice = "both",
                      concurrency: int = DEFAULT_PUSH_CONCURRENCY) -> AttestResult:
    """`acx push --sign --key K`: attest the manifest just pushed (cartridge or workflow), dual-write
    by default, and attach the cartridge's DSSE envelope as a referrer."""
    return attest_artifact(target, manifest, repository, key, formats=formats, now=now,
                           concurrency=concurrency)
