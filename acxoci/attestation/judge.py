"""Per-attestation judgement, shared by `acx verify` and `acx verify-blob`: parse the DSSE
envelope or bundle, check the signature against trusted keys (or, for a keyless bundle, the
certificate, transparency log and timestamps against a Sigstore trusted root with an identity
policy, through the `sigstore` library), then the payload type, the predicate type and the
statement subject, the way cosign does (plus ACX trust). No I/O beyond the trusted root in hand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from acxoci.attest.bundle import check_cosign_keyids, parse_bundle
from acxoci.attest.canonical import loads_strict
from acxoci.attest.dsse import INTOTO_PAYLOAD_TYPE, Envelope
from acxoci.attest.errors import AttestError, MalformedError, SignatureError
from acxoci.attest.intoto import Statement
from acxoci.attest.trust import TrustKey, format_rfc3339, judge_signer
from acxoci.attest.trustdecision import R_UNKNOWN, decide
from acxoci.attestation.identity import IdentityRule
from acxoci.attestation.signing import TrustedKey, verify_with_keys
from acxoci.attestation.sigstore_verify import (
    LegacyKeyless,
    SigstoreCheck,
    Trust,
    verify_keyless,
    verify_legacy_keyless,
    verify_with_key,
)

LEVEL_PREDICATE_TYPE = "https://acx.dev/attestation/level/v1"
R_LEVEL_NEEDS_ISSUERS = "level attestation not checked: needs --issuers (the level issuer trust registry)"

Verdict = Literal["verified", "rejected", "unverified", "skipped"]
Kind = Literal["envelope", "bundle"]


@dataclass(frozen=True)
class Sigstore:
    """What keyless verification needs: the acceptable identities and the trusted root."""

    rules: tuple[IdentityRule, ...]
    trust: Trust


@dataclass(frozen=True)
class Judgement:
    """One attestation's verdict and why; `statement` is set once the signature verified."""

    verdict: Verdict
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    signer_keyid: str | None = None
    predicate_type: str | None = None
    statement: Statement | None = None
    trust: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    signer: SigstoreCheck | None = None

    def with_reasons(self, verdict: Verdict, reasons: tuple[str, ...]) -> Judgement:
        """A copy with a new verdict and extra reasons (content checks run after the pure part)."""
        return replace(self, verdict=verdict, reasons=self.reasons + reasons)


def _unsigned_statement(env: Envelope) -> Statement | None:
    try:
        return Statement.from_bytes(env.payload)
    except AttestError:
        return None


def _keyless(data: bytes, sig: Sigstore | None, notes: list[str],
             legacy: LegacyKeyless | None = None) -> Judgement | tuple[Envelope, SigstoreCheck]:
    """Verify a certificate bundle (or a legacy keyless `.att` layer) through `sigstore`; its
    verified envelope and signer, or the verdict."""
    if sig is None or not sig.rules:
        what = "keyless .att layer" if legacy is not None else "keyless bundle (certificate)"
        return Judgement("unverified", (f"{what}: no identity policy was given, so no signer can be "
                                        "trusted (--certificate-identity[-regexp] and "
                                        "--certificate-oidc-issuer[-regexp])",))
    check = (verify_keyless(data, sig.rules, sig.trust, digest=None) if legacy is None
             else verify_legacy_keyless(data, legacy, sig.rules, sig.trust))
    who = f"keyless:{check.subject}" if check.subject else None
    if not check.ok:
        return Judgement("unverified", check.reasons, signer_keyid=who, signer=check)
    if check.payload is None:
        return Judgement("unverified", ("bundle carries a messageSignature, not an attestation",))
    notes.extend(check.notes)
    return Envelope(check.payload_type or "", check.payload, ()), check


def judge(data: bytes, kind: Kind, keys: list[TrustedKey], *, subject_sha256: str,
          want_type: str | None, now: datetime, sigstore: Sigstore | None = None,
          legacy: LegacyKeyless | None = None, artifact_publisher: str | None = None) -> Judgement:
    """Judge one attestation document (`envelope` = DSSE JSON, `bundle` = sigstore bundle).

    `subject_sha256` is the bare hex the statement subject must carry. Verdicts: verified;
    rejected (a trusted signer signed something that does not bind: wrong subject, compromised
    key, cosign-incompatible bundle, invalid log entry); unverified (no trusted key or identity
    verifies, or malformed); skipped (another predicate type). Keyless bundles are verified with
    `sigstore` (identity rules + trusted root); without rules they are unverified.
    `artifact_publisher` (read from the attested content) is the publisher a registry key must be
    tied to: another registry publisher's key attests nothing about it, whatever its predicate says.
    """
    notes: list[str] = []
    keyless: SigstoreCheck | None = None
    try:
        if kind == "bundle":
            bundle = parse_bundle(data)
            if bundle.keyless:
                got = _keyless(data, sigstore, notes)
                if isinstance(got, Judgement):
                    return got
                env, keyless = got
            elif bundle.envelope is None:
                return Judgement("unverified", ("bundle carries a messageSignature, not an attestation",))
            else:
                env = bundle.envelope
        elif legacy is not None:  # cosign 2 keyless `.att` layer: certificate + Rekor SET annotations
            got = _keyless(data, sigstore, notes, legacy)
            if isinstance(got, Judgement):
                return got
            env, keyless = got
        else:
            env = Envelope.from_json(loads_strict(data))
    except AttestError as exc:
        return Judgement("unverified", (f"malformed {kind}: {exc}",))
    peek = _unsigned_statement(env)
    peek_type = peek.predicate_type if peek else None
    if want_type is not None and peek_type is not None and peek_type != want_type:
        return Judgement("skipped", (f"predicate type {peek_type}, not {want_type}",),
                         predicate_type=peek_type)
    tk: TrustedKey | None = None
    if keyless is not None:
        base = Judgement("verified", (), tuple(notes), f"keyless:{keyless.subject}", peek_type,
                         signer=keyless)
    else:
        try:
            tk, _sig = verify_with_keys(env, keys)
        except SignatureError as exc:
            if peek_type == LEVEL_PREDICATE_TYPE:  # signed by a level issuer, not by the publisher
                return Judgement("skipped", (R_LEVEL_NEEDS_ISSUERS,), predicate_type=peek_type)
            if keys and all(k.entry is not None for k in keys):  # one fact, one text (decision table)
                return Judgement("unverified", (R_UNKNOWN,), predicate_type=peek_type)
            return Judgement("unverified", (str(exc),), predicate_type=peek_type)
        base = Judgement("verified", (), tuple(notes), tk.keyid, peek_type)
    if kind == "bundle" and tk is not None:
        if (bundle.public_key_hint is not None and bundle.public_key_hint != tk.key.sigstore_hint()):
            notes.append("publicKey.hint does not match the verifying key (unauthenticated hint, ignored)")
            base = replace(base, notes=tuple(notes))
        try:
            check_cosign_keyids(env)
        except MalformedError as exc:
            return base.with_reasons("rejected", (str(exc),))
        if bundle.tlog_entries or bundle.rfc3161_timestamps:
            trust = sigstore.trust if sigstore is not None else None
            logged = verify_with_key(data, tk.key, trust, digest=None)
            base = replace(base, notes=base.notes + logged.notes, signer=logged if logged.ok else None)
            if not logged.ok:
                return base.with_reasons("rejected", logged.reasons)
    if env.payload_type != INTOTO_PAYLOAD_TYPE:
        why = f"payloadType {env.payload_type!r} is not {INTOTO_PAYLOAD_TYPE}"
        return base.with_reasons("rejected", (why,))
    try:
        stmt = Statement.from_bytes(env.payload)
    except AttestError as exc:
        return base.with_reasons("rejected", (f"signed payload is not an in-toto statement: {exc}",))
    base = replace(base, statement=stmt, predicate_type=stmt.predicate_type)
    if want_type is not None and stmt.predicate_type != want_type:
        why = f"predicate type {stmt.predicate_type}, not {want_type}"
        return replace(base, verdict="skipped", reasons=(why,))
    if not any(s.digest.get("sha256") == subject_sha256 for s in stmt.subjects):
        found = ", ".join(f"sha256:{s.digest.get('sha256')}" for s in stmt.subjects)
        why = f"statement subject ({found}) does not match the manifest digest sha256:{subject_sha256}"
        return base.with_reasons("rejected", (why,))
    if tk is not None and tk.entry is not None:
        return judge_registry_key(base, tk.entry, stmt.predicate, now=now,
                                  artifact_publisher=artifact_publisher)
    return base


def judge_registry_key(base: Judgement, entry: TrustKey, predicate: Mapping[str, Any], *,
                       now: datetime, artifact_publisher: str | None = None) -> Judgement:
    """Apply the trust table to a verified signature by a trust-registry key: rejected unless the
    table says trusted. The publisher judged is the artifact's own (`artifact_publisher`, read
    from the pulled content) when known, else the predicate's `publisherId` claim, else the key's
    own publisher (a messageSignature or a cosign/SLSA predicate); `signedAt` absent means judged
    at `now`; the independent time is only what the `sigstore` library verified for `base.signer`."""
    publisher = artifact_publisher if artifact_publisher is not None else predicate.get("publisherId")
    if not isinstance(publisher, str):
        publisher = entry.publisher_id
    signed_at = predicate.get("signedAt") if "signedAt" in predicate else format_rfc3339(now)
    j = judge_signer(entry, signed_publisher=str(publisher), signed_at=str(signed_at), now=now,
                     independent_time=earliest_verified_time(base.signer))
    base = replace(base, trust=j.trust)
    assert j.facts is not None
    d = decide(j.facts, minimum="trusted", command="verify")
    if not d.accepted:  # a registry key vouches only when the table says trusted
        return base.with_reasons("rejected", (d.reason,))
    if j.facts.status in ("expired", "superseded", "retired"):  # say which time earned the trust
        base = replace(base, notes=(*base.notes, d.reason))
    return base


def earliest_verified_time(check: Any) -> datetime | None:
    """The earliest time the `sigstore` library verified for a key-based bundle (a Rekor
    integrated time under its promise, an RFC 3161 timestamp): the signature existed by then.
    That is the independent time of decision 0014; never the self-asserted `signedAt`. None when
    nothing was verified (no log entry, or no trusted root named)."""
    times = getattr(check, "verified_times", ()) if getattr(check, "ok", False) else ()
    out: list[datetime] = []
    for text in times:
        try:
            out.append(datetime.strptime(str(text)[:20], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC))
        except ValueError:
            continue
    return min(out) if out else None
