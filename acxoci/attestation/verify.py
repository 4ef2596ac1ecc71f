"""`acx verify REF`: find an artifact's attestations (Referrers API / fallback tag and cosign's
`.att` tag), judge each like `cosign verify-attestation --key`, then check that what they attest
(ROM digest, layer digest, workflow digest) matches the pulled content.

Overall verdict (`overall`): pass when the verified attestations meet the requirement (at least
one, of `--type` when given), by the one evidence rule the acceptance decision applies too
(`evidence.missing_evidence`, decision 0043). Rejected means a trusted signer signed something
that does not bind here (a statement about another subject, a content mismatch, a compromised key,
a bundle cosign would refuse) or stored bytes were altered; unverified means no trusted key or
identity verifies it. Both are shown, and neither is evidence nor a veto, as in cosign: whoever
can push to the repository can add either.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from acxoci.attestation.attach import artifact_kind, content_layer, pull_layer
from acxoci.attestation.content import (
    CONTENT_CHECKED,
    ContentCheck,
    cartridge_verdict,
    check_cartridge_content,
    check_graph_content,
    check_workflow_content,
)
from acxoci.attestation.evidence import missing_evidence
from acxoci.attestation.formats import classify_referrer, legacy_layers, legacy_tag
from acxoci.attestation.judge import Judgement, Kind, Sigstore, judge
from acxoci.attestation.provenance import SLSA_PROVENANCE_V1, VerifiedProvenance
from acxoci.attestation.signing import TrustedKey
from acxoci.attestation.sigstore_verify import legacy_material
from acxoci.attestation.statements import (
    CARTRIDGE_PREDICATE_TYPE,
    GRAPH_PREDICATE_TYPE,
    graph_facts,
    workflow_facts,
)
from acxoci.errors import AcxError, AuthError, NotFound, Tampered, TransientError
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.listing import check_attestation_layers
from acxoci.oci.target import Stray, Target, fetch_bytes, fetch_manifest, resolve_manifest

Format = Literal["legacy", "bundle", "envelope"]
MAX_ATTESTATION_BYTES = 16 * 1024 * 1024
MAX_WORKFLOW_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Found:
    """One attestation document located in the target (not yet fetched)."""

    format: Format
    location: str
    manifest: str
    layer: Descriptor


@dataclass(frozen=True)
class AttestationReport:
    """Per-attestation result: where, which format, who signed, which type, verdict, why."""

    format: Format
    location: str
    manifest: str
    judgement: Judgement
    content: dict[str, Any] | None = None
    document: bytes | None = field(default=None, repr=False, compare=False)
    """The document's digest-verified bytes, when it was fetched (install keeps the verified ones)."""

    def to_json(self) -> dict[str, Any]:
        j = self.judgement
        out: dict[str, Any] = {"format": self.format, "location": self.location, "manifest": self.manifest,
                               "verdict": j.verdict, "signerKeyId": j.signer_keyid,
                               "predicateType": j.predicate_type, "reasons": list(j.reasons),
                               "notes": list(j.notes)}
        if j.trust is not None:
            out["trust"] = j.trust
        if j.signer is not None:
            out["signer"] = j.signer.signer_json()
        if self.content is not None:
            out["content"] = self.content
        return out


@dataclass(frozen=True)
class VerifyReport:
    """The overall verdict for one artifact plus every attestation's report."""

    reference: str
    subject: str
    ok: bool
    summary: str
    reasons: tuple[str, ...]
    attestations: tuple[AttestationReport, ...]
    strays: tuple[Stray, ...] = ()
    """Entries a referrer source listed that the one listing left out (listing.py)."""

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "verdict": "verified" if self.ok else "failed", "summary": self.summary,
                "reference": self.reference, "subject": self.subject, "reasons": list(self.reasons),
                "attestations": [a.to_json() for a in self.attestations],
                "strays": [s.to_json() for s in self.strays]}


def find_attestations(target: Target, subject: Descriptor) -> tuple[list[Found], list[str]]:
    """Attestations of `subject`: bundle/envelope referrers of the one listing (every entry's
    subject checked there, listing.py), then the layers of the `.att` tag; more of them than the
    attestation caps allow (listing.check_attestation_layers) is refused, before any is fetched.

    Returns (found, problems); an entry the listing dropped (gone, unreadable, naming another
    subject) is a problem, not a crash.
    """
    found: list[Found] = []
    listing = target.referrer_listing(subject.plain())
    problems = [f"referrer {s.digest} ({s.source}) left out: {s.kind}: {s.reason}" for s in listing.strays]
    for entry in listing.referrers:
        kind, layer = classify_referrer(fetch_manifest(target, entry))  # its verified bytes ride in `data`
        if kind != "other" and layer is not None:
            found.append(Found(kind, f"referrer {entry.digest}", entry.digest, layer))
    tag = legacy_tag(subject.digest)
    try:
        att_desc = resolve_manifest(target, tag)  # one GET: the tag's bytes are read next anyway
        att = fetch_manifest(target, att_desc)
    except NotFound:
        return found, problems
    except (TransientError, AuthError):
        raise
    except AcxError as exc:
        problems.append(f"{tag}: {exc.one_line()}")
        return found, problems
    for i, la in enumerate(legacy_layers(att, where=f"{tag} (manifest {att_desc.digest})")):
        found.append(Found("legacy", f"{tag} layer {i}", att_desc.digest, la.desc))
    judged = {f.layer.digest: f.layer for f in found if f.format != "envelope"}  # each digest read once
    check_attestation_layers(list(judged.values()), where=f"the attestations of {subject.digest}")
    return found, problems


def overall(reports: list[AttestationReport], want_type: str | None,
            problems: list[str] | None = None) -> tuple[bool, str, tuple[str, ...]]:
    """The pure overall decision over per-attestation reports (see the module docstring)."""
    counted = [r for r in reports if r.format != "envelope"]
    rejected = [r for r in counted if r.judgement.verdict == "rejected"]
    verified = [r for r in counted if r.judgement.verdict == "verified"]
    missing = missing_evidence([(r.format, r.judgement.predicate_type or "") for r in verified],
                               types=(want_type,) if want_type is not None else ())
    if not missing:
        note = f"; {len(rejected)} rejected, not counted" if rejected else ""
        return True, f"{len(verified)} attestation(s) verified{note}", ()
    if not counted:
        extra = tuple(problems or ())
        return False, "no attestations found", ("no attestation in the referrers or the .att tag", *extra)
    if want_type is not None and all(r.judgement.verdict == "skipped" for r in counted):
        types = sorted({r.judgement.predicate_type or "?" for r in counted})
        return False, "no attestation of the requested predicate type", (
            f"none of the attestations matched the predicate type {want_type}, found: {', '.join(types)}",)
    reasons = tuple(f"{r.location}: {why}" for r in counted if r.judgement.verdict != "skipped"
                    for why in r.judgement.reasons)
    note = f" ({len(rejected)} rejected)" if rejected else ""
    return False, f"no attestation verified{note}", reasons


class _ContentCache:
    """Pull the subject's content at most once and check predicates against it."""

    def __init__(self, target: Target, subject: Descriptor, tmp: Path, now: datetime) -> None:
        self.target, self.subject, self.tmp, self.now = target, subject, tmp, now
        self._paths: dict[str, Path] = {}

    def publisher(self) -> str | None:
        """The publisher the pulled artifact itself names (cartridge `publisherId`, workflow or
        graph integrity `publisherId`); None for other artifact kinds; "" (nobody) when the content
        cannot be read or does not verify. Transport failures propagate (retryable, not a verdict)."""
        try:
            manifest = fetch_manifest(self.target, self.subject)
            kind = artifact_kind(manifest)
            if kind not in ("cartridge", "workflow", "agent-graph"):
                return None
            layer = content_layer(manifest, kind)
            if kind == "cartridge":
                path = self._paths.get(layer.digest)
                if path is None:
                    path = pull_layer(self.target, layer, pulled_content_path(self.tmp, layer))
                    self._paths[layer.digest] = path
                verdict = cartridge_verdict(path, now=self.now)
                return "" if verdict.rejected else verdict.publisher_id  # "": a tampered file names no one
            data = fetch_bytes(self.target, layer, limit=MAX_WORKFLOW_BYTES)
            if kind == "workflow":
                return workflow_facts(data, layer.digest).publisher_id
            return graph_facts(data, layer.digest).publisher_id
        except (TransientError, AuthError):
            raise
        except AcxError:
            return ""

    def check(self, predicate_type: str, pred: dict[str, Any]) -> ContentCheck:
        try:
            manifest = fetch_manifest(self.target, self.subject)
            kind = {CARTRIDGE_PREDICATE_TYPE: "cartridge", GRAPH_PREDICATE_TYPE: "agent-graph"}.get(
                predicate_type, "workflow"
            )
            if artifact_kind(manifest) != kind:
                return ContentCheck(False, (f"attested as a {kind} but the artifact is not one",), {})
            try:
                layer = content_layer(manifest, kind)
            except AcxError as exc:
                return ContentCheck(False, (exc.message,), {})
            if kind == "workflow":
                data = fetch_bytes(self.target, layer, limit=MAX_WORKFLOW_BYTES)
                return check_workflow_content(pred, data, layer.digest)
            if kind == "agent-graph":
                data = fetch_bytes(self.target, layer, limit=MAX_WORKFLOW_BYTES)
                return check_graph_content(pred, data, layer.digest)
            path = self._paths.get(layer.digest)
            if path is None:
                path = pull_layer(self.target, layer, pulled_content_path(self.tmp, layer))
                self._paths[layer.digest] = path
            return check_cartridge_content(pred, path, layer.digest, now=self.now)
        except Tampered as exc:
            return ContentCheck(False, (f"pulled content is tampered: {exc.one_line()}",), {})
        except AcxError as exc:
            return ContentCheck(False, (f"content could not be checked: {exc.one_line()}",), {})


def judge_found(target: Target, item: Found, keys: list[TrustedKey], *, subject: Descriptor,
                want_type: str | None, now: datetime, sigstore: Sigstore | None = None,
                artifact_publisher: str | None = None) -> tuple[Judgement, bytes | None]:
    """Fetch one attestation document and judge it (fetch failures become verdicts); the verdict
    and the bytes judged."""
    try:
        data = fetch_bytes(target, item.layer, limit=MAX_ATTESTATION_BYTES)
    except Tampered as exc:
        why = f"attestation bytes do not match their digest (tampered): {exc.one_line()}"
        return Judgement("rejected", (why,)), None
    except AcxError as exc:
        return Judgement("unverified", (f"cannot fetch attestation: {exc.one_line()}",)), None
    kind: Kind = "bundle" if item.format == "bundle" else "envelope"
    legacy = legacy_material(item.layer.annotations) if item.format == "legacy" else None
    return judge(data, kind, keys, subject_sha256=subject.digest.removeprefix("sha256:"),
                 want_type=want_type, now=now, sigstore=sigstore, legacy=legacy,
                 artifact_publisher=artifact_publisher), data


def pulled_content_path(workdir: Path, layer: Descriptor) -> Path:
    """Where `verify_artifact(..., workdir=)` leaves a pulled cartridge layer (present only if pulled)."""
    return workdir / f"{layer.digest.replace(':', '-')}.acx"


def verify_artifact(target: Target, subject: Descriptor, keys: list[TrustedKey], *, reference: str,
                    want_type: str | None = None, check_content: bool = True, now: datetime,
                    workdir: Path | None = None, sigstore: Sigstore | None = None,
                    artifact_publisher: str | None = None,
                    found: tuple[list[Found], list[str]] | None = None) -> VerifyReport:
    """Verify every attestation of `subject` and decide overall (see the module docstring).

    With `workdir`, pulled content is kept there (see `pulled_content_path`) for further checks.
    `artifact_publisher`: the artifact's publisher when the caller already verified it (install),
    so its content is not pulled again just to learn it. `found`: what `find_attestations` already
    located for this subject in this call (install keeps it), so the referrers are not looked up twice."""
    items, problems = found if found is not None else find_attestations(target, subject)
    reports: list[AttestationReport] = []
    with tempfile.TemporaryDirectory(prefix="acx-verify-") as tmp:
        cache = _ContentCache(target, subject, workdir if workdir is not None else Path(tmp), now)
        # registry keys vouch only for the artifact's own publisher (read from its content)
        publisher = artifact_publisher
        if publisher is None and check_content and any(k.entry is not None for k in keys):
            publisher = cache.publisher()
        done: dict[tuple[str, str, tuple[tuple[str, str], ...]], AttestationReport] = {}
        for item in items:
            if item.format == "envelope":
                why = ("ACX cartridge envelope (its subject is the ROM digest; it is checked with the "
                       "cartridge, not here)")
                reports.append(AttestationReport(item.format, item.location, item.manifest,
                                                 Judgement("skipped", (why,))))
                continue
            key = (item.format, item.layer.digest, tuple(sorted(item.layer.annotations.items())))
            if key in done:  # the same document listed again: fetched and judged once
                reports.append(replace(done[key], location=item.location, manifest=item.manifest))
                continue
            j, data = judge_found(target, item, keys, subject=subject, want_type=want_type, now=now,
                                  sigstore=sigstore, artifact_publisher=publisher)
            content: dict[str, Any] | None = None
            if (j.verdict == "verified" and check_content and j.statement is not None
                    and j.statement.predicate_type in CONTENT_CHECKED):
                cc = cache.check(j.statement.predicate_type, j.statement.predicate)
                content = {"ok": cc.ok, **cc.facts}
                if not cc.ok:
                    j = j.with_reasons("rejected", cc.reasons)
            done[key] = AttestationReport(item.format, item.location, item.manifest, j, content, data)
            reports.append(done[key])
    ok, summary, reasons = overall(reports, want_type, problems)
    strays = target.referrer_listing(subject.plain()).strays  # a ReadView lists once for both
    return VerifyReport(reference, subject.digest, ok, summary, reasons, tuple(reports), strays)


def provenance_item(location: str, j: Judgement) -> VerifiedProvenance | None:
    """A verified SLSA provenance attestation with its signer's certificate facts (None for any
    other attestation): the input of `provenance.check_provenance`."""
    if j.verdict != "verified" or j.statement is None or j.statement.predicate_type != SLSA_PROVENANCE_V1:
        return None
    fulcio = j.signer.fulcio if j.signer is not None and j.signer.mode == "keyless" else None
    return VerifiedProvenance(location, j.statement.predicate, fulcio)


def verified_provenance(report: VerifyReport) -> list[VerifiedProvenance]:
    """The report's verified SLSA provenance attestations (see `provenance_item`)."""
    items = (provenance_item(a.location, a.judgement) for a in report.attestations)
    return [i for i in items if i is not None]
