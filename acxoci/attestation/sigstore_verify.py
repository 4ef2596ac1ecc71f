"""Sigstore bundle verification through the `sigstore` library (decision 0015).

The library does the cryptography: X.509 path validation against the trusted root's Fulcio CAs,
SCTs, Merkle inclusion proofs, signed checkpoints, signed entry timestamps (SET), RFC 3161
timestamps, certificate validity at the verified time, log-entry consistency and the identity
policy (`sigstore.verify.policy.AnyOf` of our rules). Our code fills exactly four gaps, each
built on library primitives:

1. RFC 3161 timestamps: a trust root's TSA `validFor` is a closed interval; the library treats
   the end as exclusive. `verify_timestamp` (used by `_Verifier._verify_signed_timestamp`)
   repeats its rfc3161-client chain check and compares `start <= genTime <= end`.
2. `intoto` log entries (Rekor v1 `intoto/0.0.1|0.0.2`, written by cosign for attestations):
   the library refuses them. We take the integrated time (authenticated by the SET, which the
   library verifies) and check the entry body against the envelope ourselves
   (`check_intoto_body`: payload hash, signatures, the signing certificate).
3. Key-based bundles (`verificationMaterial.publicKey`, "managed keys"): `sigstore.models.Bundle`
   cannot represent them. The signature is checked with the given key, the log entry with the
   library's `TransparencyLogEntry._verify` (inclusion proof, checkpoint, SET), timestamps with
   gap 1's verifier, and the entry body against the signature and key (`check_key_entry_body`).
   Without an explicit trusted root those parts are reported as present and not verified.
4. cosign 2's keyless `.att` layers (certificate + Rekor SET annotations, no inclusion proof,
   which the library requires): `verify_legacy_keyless` composes the library's steps without it;
   a layer whose time comes from an RFC 3161 timestamp annotation instead (what acx writes for a
   keyless `.att`, decision 0034) takes that time.
5. Keyless bundles with no transparency-log entry, only RFC 3161 timestamps (`--tlog-upload=false`,
   cosign's and sigstore-go's TSA-only mode): `sigstore.models.Bundle` demands exactly one log
   entry. `verify_timestamp_only` composes the same library steps as 4 with the timestamps' times.

Every failure of the library on hostile input becomes a typed verdict, never a crash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import rfc8785
from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from rfc3161_client import TimeStampResponse, VerifierBuilder, decode_timestamp_response
from rfc3161_client import VerificationError as Rfc3161VerificationError
from sigstore import dsse as _sdsse
from sigstore._internal.sct import verify_sct
from sigstore._internal.timestamp import TimestampSource, TimestampVerificationResult
from sigstore._internal.trust import KeyringPurpose
from sigstore._utils import KeyID, read_embedded
from sigstore.errors import VerificationError
from sigstore.hashes import Hashed
from sigstore.models import Bundle, TimestampVerificationData, TransparencyLogEntry, TrustedRoot
from sigstore.verify import Verifier
from sigstore.verify.policy import AnyOf, VerificationPolicy
from sigstore_models.bundle.v1 import TimestampVerificationData as _ModelTsd
from sigstore_models.common.v1 import HashAlgorithm
from sigstore_models.rekor.v1 import TransparencyLogEntry as _ModelEntry
from sigstore_models.trustroot import v1 as _trustroot

from acxoci.attest.b64 import b64decode_lenient
from acxoci.attest.bundle import BUNDLE_V01, MAX_BUNDLE_BYTES, ParsedBundle, parse_bundle
from acxoci.attest.canonical import loads_strict
from acxoci.attest.dsse import Envelope
from acxoci.attest.errors import AttestError, MalformedError, SignatureError
from acxoci.attest.keys import PublicKey
from acxoci.attestation.identity import (
    CertificateFacts,
    FulcioFacts,
    IdentityRule,
    certificate_facts,
    first_match,
    read_certificate,
)
from acxoci.errors import InvalidInput, UsageError
from acxoci.fsutil import read_bytes

# The library logs advice (e.g. "this bundle contains a root CA") as warnings; our verdicts and
# notes say what matters, so keep its log quiet on the command line.
logging.getLogger("sigstore").setLevel(logging.ERROR)
# The library formats CA subjects for its debug log; a CA name with a malformed attribute (the
# loopback Fulcio's ephemeral CA) makes `cryptography` warn on stderr at every verification.
warnings.filterwarnings("ignore", message="Attribute's length must be", category=UserWarning,
                        module="sigstore")

#: The library's private names verification relies on: (object, name), a name set in `__init__`
#: counting; and the `Verifier` methods `_Verifier` overrides (tests/attestation/test_keyless_signer.py
#: checks both against the installed library).
PRIVATE_HOOKS: tuple[tuple[str, str], ...] = (
    ("sigstore.verify.Verifier", "_verify_signed_timestamp"),
    ("sigstore.verify.Verifier", "_establish_time"),
    ("sigstore.verify.Verifier", "_verify_common_signing_cert"),
    ("sigstore.verify.Verifier", "_verify_timestamp_authority"),
    ("sigstore.verify.Verifier", "_verify_chain_at_time"),
    ("sigstore.verify.Verifier", "_trusted_root"),
    ("sigstore.models.Bundle", "_dsse_envelope"),
    ("sigstore.models.Bundle", "_inner"),
    ("sigstore.models.TransparencyLogEntry", "_verify"),
    ("sigstore.models.TransparencyLogEntry", "_inner"),
    ("sigstore.dsse.Envelope", "_from_json"),
    ("sigstore.dsse.Envelope", "_inner"),
    ("sigstore.dsse", "_verify"),
    ("sigstore._internal.sct", "verify_sct"),
    ("sigstore._internal.timestamp", "TimestampVerificationResult"),
    ("sigstore._internal.trust", "KeyringPurpose"),
    ("sigstore._utils", "read_embedded"),
)
OVERRIDDEN = ("_verify_signed_timestamp", "_establish_time", "verify_dsse")
PRODUCTION_TUF = "https://tuf-repo-cdn.sigstore.dev"
STAGING_TUF = "https://tuf-repo-cdn.sigstage.dev"
MAX_TRUSTED_ROOT_BYTES = 4 * 1024 * 1024
MAX_CERTIFICATES = 10
MAX_CERT_BYTES = 32 * 1024
MAX_TLOG_ENTRIES = 4
MAX_PROOF_HASHES = 80
MAX_TIMESTAMPS = 32
Mode = Literal["keyless", "key"]


@dataclass(frozen=True)
class Trust:
    """The trusted root in use, where it came from, and whether the user named it."""

    root: TrustedRoot
    name: str
    explicit: bool


def shipped_root_bytes(instance: Literal["production", "staging"]) -> bytes:
    """The public-good trusted root shipped inside the `sigstore` package (no network)."""
    return read_embedded("trusted_root.json", PRODUCTION_TUF if instance == "production" else STAGING_TUF)


def parse_trusted_root(data: bytes, *, where: str) -> TrustedRoot:
    """A trusted_root.json (strict JSON first, then the library's model and checks)."""
    try:
        loads_strict(data, max_bytes=MAX_TRUSTED_ROOT_BYTES)
        return TrustedRoot(_trustroot.TrustedRoot.from_json(data))
    except Exception as exc:  # the library raises pydantic, ValueError or its own Error
        raise InvalidInput(f"not a usable sigstore trusted root: {_short(exc)}", where=where) from exc


def load_trust(path: Path | None, *, staging: bool) -> Trust:
    """`--trusted-root FILE`, else `--staging`, else the shipped production root (offline)."""
    if path is not None and staging:
        raise UsageError("give at most one of --trusted-root FILE or --staging")
    if path is not None:
        data = read_bytes(path, "trusted root", limit=MAX_TRUSTED_ROOT_BYTES)
        return Trust(parse_trusted_root(data, where=str(path)), f"trusted root {path.name}", True)
    instance: Literal["production", "staging"] = "staging" if staging else "production"
    return Trust(parse_trusted_root(shipped_root_bytes(instance), where=f"shipped {instance} root"),
                 f"public-good {instance} root (shipped)", staging)


def trust_from_config(path: Path) -> Trust:
    """`--trust-config FILE` on a verifying command: the ClientTrustConfig's trusted root."""
    from acxoci.attestation.keyless import trust_config_root_bytes

    return Trust(parse_trusted_root(trust_config_root_bytes(path), where=str(path)),
                 f"trust config {path.name}", True)


@dataclass(frozen=True)
class SigstoreCheck:
    """Outcome of one bundle verification, with the facts an install record keeps."""

    ok: bool
    mode: Mode
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    subject: str | None = None
    issuer: str | None = None
    log_index: int | None = None
    integrated_time: int | None = None
    verified_times: tuple[str, ...] = ()
    payload_type: str | None = None
    payload: bytes | None = field(default=None, repr=False)
    fulcio: FulcioFacts | None = None

    def signer_json(self) -> dict[str, Any]:
        """Who signed and when, as verified (for reports and the install record)."""
        return {"mode": self.mode, "certificateIdentity": self.subject, "certificateIssuer": self.issuer,
                "logIndex": self.log_index, "integratedTime": self.integrated_time,
                "verifiedTimes": list(self.verified_times)}


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def _fail(mode: Mode, why: str, **kw: Any) -> SigstoreCheck:
    return SigstoreCheck(False, mode, (why,), **kw)


# --- bounds on hostile bundles (before any library parser sees them) -------------------------



def _who(facts: CertificateFacts,
         rules: Sequence[IdentityRule]) -> tuple[dict[str, Any], IdentityRule | None]:
    """The certificate's identity as reported (`subject`, `issuer`) and the first rule it meets."""
    who: dict[str, Any] = {"subject": facts.subjects[0] if facts.subjects else None, "issuer": facts.issuer}
    matched = first_match(rules, facts.subjects, facts.issuer)
    if matched is not None and matched.subject is not None:
        who["subject"] = matched.subject
    return who, matched


def _no_match(facts: CertificateFacts, rules: Sequence[IdentityRule]) -> str:
    return (f"certificate identity {', '.join(facts.subjects) or '(none)'} from issuer "
            f"{facts.issuer or '(none)'} matches none of: {'; '.join(r.describe() for r in rules)}")


def _identity(facts: CertificateFacts, rules: Sequence[IdentityRule]) -> dict[str, Any] | SigstoreCheck:
    """The certificate's identity (`subject`, `issuer`) when a rule accepts it, else the failure."""
    who, matched = _who(facts, rules)
    if matched is None:
        return _fail("keyless", _no_match(facts, rules), **who)
    return who


def _bounded_doc(data: bytes) -> dict[str, Any]:
    """Strict JSON with caps on certificates, log entries, proof hashes and timestamps."""
    doc = loads_strict(data, max_bytes=MAX_BUNDLE_BYTES)
    if not isinstance(doc, dict):
        raise MalformedError("bundle is not a JSON object")
    vm = doc.get("verificationMaterial")
    if not isinstance(vm, dict):
        raise MalformedError("bundle has no verificationMaterial object")
    certs: list[Any] = []
    chain = vm.get("x509CertificateChain")
    if isinstance(chain, dict) and isinstance(chain.get("certificates"), list):
        certs = chain["certificates"]
    elif isinstance(vm.get("certificate"), dict):
        certs = [vm["certificate"]]
    if len(certs) > MAX_CERTIFICATES:
        raise MalformedError(f"bundle carries {len(certs)} certificates (at most {MAX_CERTIFICATES})")
    for c in certs:
        raw = c.get("rawBytes") if isinstance(c, dict) else None
        if isinstance(raw, str) and len(raw) > MAX_CERT_BYTES * 4 // 3 + 4:
            raise MalformedError(f"bundle certificate larger than {MAX_CERT_BYTES} bytes")
    entries = vm.get("tlogEntries") or []
    if not isinstance(entries, list) or len(entries) > MAX_TLOG_ENTRIES:
        raise MalformedError(f"bundle tlogEntries is not a list of at most {MAX_TLOG_ENTRIES}")
    for e in entries:
        proof = e.get("inclusionProof") if isinstance(e, dict) else None
        if isinstance(proof, dict) and isinstance(proof.get("hashes"), list) \
                and len(proof["hashes"]) > MAX_PROOF_HASHES:
            raise MalformedError(f"inclusion proof with more than {MAX_PROOF_HASHES} hashes")
    tsd = vm.get("timestampVerificationData")
    if isinstance(tsd, dict) and isinstance(tsd.get("rfc3161Timestamps"), list) \
            and len(tsd["rfc3161Timestamps"]) > MAX_TIMESTAMPS:
        raise MalformedError(f"more than {MAX_TIMESTAMPS} RFC 3161 timestamps")
    return doc


# --- the library verifier, with gaps 1 and 2 filled ------------------------------------------


def _utc(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def verify_timestamp(root: TrustedRoot, timestamp_response: TimeStampResponse,
                     message: bytes) -> TimestampVerificationResult | None:
    """Gap 1: the library's TSA check (rfc3161-client chain and message verification against
    each of the root's timestamp authorities), with `validFor.end` inclusive."""
    for authority in root.get_timestamp_authorities():
        certs = authority.certificates(allow_expired=True)
        if len(certs) < 2:
            continue
        builder = VerifierBuilder().tsa_certificate(certs[0]).add_root_certificate(certs[-1])
        for middle in certs[1:-1]:
            builder = builder.add_intermediate_certificate(middle)
        try:
            builder.build().verify_message(timestamp_response, message)
        except Rfc3161VerificationError:
            continue
        gen = timestamp_response.tst_info.gen_time
        end = authority.validity_period_end
        if authority.validity_period_start <= gen and (not end or gen <= end):
            return TimestampVerificationResult(source=TimestampSource.TIMESTAMP_AUTHORITY, time=gen)
    return None


class _Verifier(Verifier):
    """`sigstore.verify.Verifier` plus a closed TSA validity interval and `intoto` entries."""

    def __init__(self, *, trusted_root: TrustedRoot) -> None:
        super().__init__(trusted_root=trusted_root)
        self.established: list[TimestampVerificationResult] = []

    def _verify_signed_timestamp(self, timestamp_response: TimeStampResponse,
                                 message: bytes) -> TimestampVerificationResult | None:
        """Gap 1: see `verify_timestamp`."""
        return verify_timestamp(self._trusted_root, timestamp_response, message)

    def _establish_time(self, bundle: Bundle) -> list[TimestampVerificationResult]:
        """Gap 2: for `intoto` entries the SET-backed integrated time counts (the SET itself is
        verified by the library's log-entry check); other kinds go to the library unchanged."""
        inner = bundle.log_entry._inner
        if inner.kind_version.kind != "intoto":
            times = super()._establish_time(bundle)
        else:
            times = []
            if bundle.verification_material.timestamp_verification_data:
                if not self._trusted_root.get_timestamp_authorities():
                    raise VerificationError("the bundle has signed timestamps but the trusted root "
                                            "has no timestamp authority")
                times.extend(self._verify_timestamp_authority(bundle))
            if inner.integrated_time and inner.inclusion_promise:
                times.append(TimestampVerificationResult(source=TimestampSource.TRANSPARENCY_SERVICE,
                                                         time=_utc(int(inner.integrated_time))))
        self.established = list(times)
        return times

    def verify_dsse(self, bundle: Bundle, policy: VerificationPolicy) -> tuple[str, bytes]:
        """The library's DSSE verification; for `intoto` entries its common checks, its DSSE
        signature check and our entry-body consistency check (gap 2)."""
        inner = bundle.log_entry._inner
        if inner.kind_version.kind != "intoto":
            return super().verify_dsse(bundle, policy)
        self._verify_common_signing_cert(bundle, policy)
        envelope = bundle._dsse_envelope
        if envelope is None:
            raise VerificationError("an intoto log entry needs a DSSE envelope")
        key = cast(ec.EllipticCurvePublicKey, bundle.signing_certificate.public_key())
        _sdsse._verify(key, envelope)
        env = envelope._inner
        check_intoto_body(bytes(inner.canonicalized_body), str(inner.kind_version.version),
                          bytes(env.payload), [bytes(s.sig) for s in env.signatures],
                          bundle.signing_certificate)
        return str(env.payload_type), bytes(env.payload)


def _body(raw: bytes, kind: str, version: str) -> dict[str, Any]:
    try:
        body = loads_strict(raw)
    except AttestError as exc:
        raise VerificationError(f"log entry body is not JSON: {exc}") from exc
    if not isinstance(body, dict) or body.get("kind") != kind or body.get("apiVersion") != version:
        raise VerificationError(f"log entry body is not {kind}/{version}")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        raise VerificationError("log entry body has no spec")
    return spec


def _sha256_field(obj: Any, want_hex: str, what: str) -> None:
    if not isinstance(obj, dict) or obj.get("algorithm") != "sha256" or obj.get("value") != want_hex:
        raise VerificationError(f"log entry {what} does not match the bundle")


def _b64(value: Any, what: str) -> bytes:
    try:
        return b64decode_lenient(value)
    except MalformedError as exc:
        raise VerificationError(f"log entry {what}: {exc}") from exc


def _b64_twice(value: Any, what: str) -> bytes:
    """intoto/0.0.2 logs the envelope's base64 fields base64-encoded again; anything else cannot
    be the envelope's value, so it is a mismatch."""
    try:
        return b64decode_lenient(b64decode_lenient(value).decode("ascii"))
    except (MalformedError, UnicodeDecodeError) as exc:
        raise VerificationError(f"log entry {what} does not match the bundle (not the envelope's "
                                "base64, base64-encoded)") from exc


def _pem_cert_der(value: Any, what: str) -> bytes:
    try:
        cert = read_certificate(_b64(value, what), pem=True).cert
    except MalformedError as exc:
        raise VerificationError(f"log entry {what} is not a PEM certificate: {exc}") from exc
    return cert.public_bytes(serialization.Encoding.DER)


def check_intoto_body(raw: bytes, version: str, payload: bytes, sigs: list[bytes],
                      cert: x509.Certificate) -> None:
    """Our consistency check of an `intoto/0.0.1|0.0.2` entry body with the bundle: the payload
    hash, (0.0.2) every envelope signature and its verifier, (0.0.1) the signing certificate.
    The envelope hash cannot be recomputed (uncanonicalised JSON) and is not relied on."""
    if version not in ("0.0.1", "0.0.2"):
        raise VerificationError(f"unsupported intoto entry version {version}")
    spec = _body(raw, "intoto", version)
    content = spec.get("content")
    if not isinstance(content, dict):
        raise VerificationError("intoto entry has no content")
    _sha256_field(content.get("payloadHash"), hashlib.sha256(payload).hexdigest(), "payload hash")
    der = cert.public_bytes(serialization.Encoding.DER)
    if version == "0.0.1":
        if _pem_cert_der(spec.get("publicKey"), "publicKey") != der:
            raise VerificationError("intoto entry public key is not the signing certificate")
        return
    envelope = content.get("envelope")
    if not isinstance(envelope, dict) or not isinstance(envelope.get("signatures"), list):
        raise VerificationError("intoto entry has no envelope signatures")
    if "payload" in envelope and _b64_twice(envelope["payload"], "payload") != payload:
        raise VerificationError("intoto entry payload does not match the bundle")
    logged: list[bytes] = []
    for s in envelope["signatures"]:
        if not isinstance(s, dict):
            raise VerificationError("intoto entry signature is not an object")
        if _pem_cert_der(s.get("publicKey"), "signature publicKey") != der:
            raise VerificationError("intoto entry signature verifier is not the signing certificate")
        logged.append(_b64_twice(s.get("sig"), "signature"))
    if sorted(logged) != sorted(sigs):
        raise VerificationError("intoto entry signatures do not match the bundle")


# --- keyless ---------------------------------------------------------------------------------


def _entry_facts(bundle: Bundle) -> tuple[int | None, int | None]:
    inner = bundle.log_entry._inner
    integrated = int(inner.integrated_time) if inner.integrated_time else None
    return int(inner.log_index), integrated


def _times(results: list[TimestampVerificationResult]) -> tuple[str, ...]:
    return tuple(f"{r.time.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} ({r.source.name.lower()})"
                 for r in results)


class _RulePolicy:
    """A `VerificationPolicy` for one IdentityRule (exact or regexp subject and issuer)."""

    def __init__(self, rule: IdentityRule) -> None:
        self.rule = rule

    def verify(self, cert: x509.Certificate) -> None:
        facts = certificate_facts(cert)
        if not self.rule.matches(facts.subjects, facts.issuer):
            raise VerificationError(f"certificate does not match {self.rule.describe()}")


def identity_policy(rules: list[IdentityRule] | tuple[IdentityRule, ...]) -> VerificationPolicy:
    """The library's `AnyOf` over our rules (an empty list matches nothing)."""
    return cast(VerificationPolicy, AnyOf([cast(VerificationPolicy, _RulePolicy(r)) for r in rules]))


def verify_keyless(data: bytes, rules: list[IdentityRule] | tuple[IdentityRule, ...], trust: Trust, *,
                   digest: bytes | None) -> SigstoreCheck:
    """Verify a certificate bundle with the library. `digest` (raw sha256 of the artifact) is
    needed for a messageSignature, which must sign it (and name it in `messageDigest`, if given);
    for DSSE the caller checks the statement subject. The bundle is decoded strictly first
    (`parse_bundle`: one content, one material, a known media type), then routed by what it is."""
    if not rules:
        return _fail("keyless", "keyless bundle: no certificate identity and issuer to check it against "
                     "(give --certificate-identity[-regexp] and --certificate-oidc-issuer[-regexp])")
    try:
        doc = _bounded_doc(data)
        parsed = parse_bundle(doc)
    except AttestError as exc:
        return _fail("keyless", f"malformed sigstore bundle: {exc}")
    if not parsed.keyless:
        return _fail("keyless", "the bundle names a public key, not a certificate: verify it with --key")
    if parsed.message_signature is not None:
        if digest is None:
            return _fail("keyless", "a messageSignature bundle needs the artifact, not only a bundle")
        if parsed.message_digest is not None and parsed.message_digest != ("SHA2_256", digest):
            return _fail("keyless", "the bundle's messageDigest is not the artifact's sha256")
    if not parsed.tlog_entries and parsed.rfc3161_timestamps:
        if parsed.media_type == BUNDLE_V01:
            return _fail("keyless", "a v0.1 bundle needs a transparency-log entry; this one has only "
                         "timestamps")
        return verify_timestamp_only(doc, parsed, rules, trust, digest=digest)
    try:
        bundle = Bundle.from_json(data)
    except Exception as exc:  # hostile input: any library failure is a rejection, typed
        return _fail("keyless", f"malformed sigstore bundle: {_short(exc)}")
    try:
        facts = certificate_facts(bundle.signing_certificate)
    except MalformedError as exc:  # an extension that does not parse: this attestation is unverified
        return _fail("keyless", str(exc))
    who, matched = _who(facts, rules)
    verifier: _Verifier | None = None
    try:
        verifier = _Verifier(trusted_root=trust.root)
        policy = identity_policy(rules)
        ptype: str | None = None
        payload: bytes | None = None
        if parsed.envelope is not None:
            ptype, payload = verifier.verify_dsse(bundle, policy)
        else:
            assert digest is not None  # checked above
            verifier.verify_artifact(Hashed(algorithm=HashAlgorithm.SHA2_256, digest=digest), bundle, policy)
    except Exception as exc:  # VerificationError and whatever hostile input provokes
        why = f"sigstore verification failed ({trust.name}): {_short(exc)}"
        if matched is None:
            why = _no_match(facts, rules)
        return _fail("keyless", why, **who)
    log_index, integrated = _entry_facts(bundle)
    return SigstoreCheck(True, "keyless", (), (f"verified against the {trust.name}",), who["subject"],
                         facts.issuer, log_index, integrated, _times(verifier.established), ptype, payload,
                         facts.fulcio)


# --- key-based (managed keys): gap 3 ---------------------------------------------------------


def _verify_key_sig(key: PublicKey, sig: bytes, *, digest: bytes | None, data: bytes | None) -> None:
    if data is not None:
        key.verify(sig, data)
        return
    if digest is None or isinstance(key.key, ed25519.Ed25519PublicKey):
        raise SignatureError("an Ed25519 messageSignature needs the file itself, not its digest")
    try:
        key.key.verify(sig, digest, ec.ECDSA(Prehashed(hashes.SHA256())))
    except InvalidSignature as exc:
        raise SignatureError("messageSignature does not verify with the given key") from exc
    except ValueError as exc:
        raise SignatureError(f"messageSignature is malformed: {exc}") from exc


def _pem_key_spki(value: Any, what: str) -> bytes:
    try:
        key = serialization.load_pem_public_key(_b64(value, what))
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise VerificationError(f"log entry {what} is not a PEM public key") from exc
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def check_key_entry_body(raw: bytes, kind: str, version: str, *, key: PublicKey, sig: bytes,
                         digest: bytes | None, payload: bytes | None) -> None:
    """Our consistency check of a log entry with a key-based bundle: hashedrekord 0.0.1/0.0.2
    (artifact digest, signature, key) or dsse 0.0.1 (payload hash, signature, key)."""
    spki = key.spki_der()
    if kind == "hashedrekord" and version == "0.0.1":
        spec = _body(raw, kind, version)
        data = spec.get("data")
        if digest is None or not isinstance(data, dict):
            raise VerificationError("hashedrekord entry cannot be matched to the artifact")
        _sha256_field(data.get("hash"), digest.hex(), "artifact hash")
        sigobj = spec.get("signature")
        if not isinstance(sigobj, dict) or _b64(sigobj.get("content"), "signature") != sig:
            raise VerificationError("hashedrekord entry signature does not match the bundle")
        pk = sigobj.get("publicKey")
        if not isinstance(pk, dict) or _pem_key_spki(pk.get("content"), "publicKey") != spki:
            raise VerificationError("hashedrekord entry key is not the given key")
        return
    if kind == "hashedrekord" and version == "0.0.2":
        v2 = _body(raw, kind, version).get("hashedRekordV002")
        if not isinstance(v2, dict):
            raise VerificationError("hashedrekord 0.0.2 entry has no hashedRekordV002")
        data, sigobj = v2.get("data"), v2.get("signature")
        if digest is None or not isinstance(data, dict) or data.get("algorithm") != "SHA2_256" \
                or _b64(data.get("digest"), "digest") != digest:
            raise VerificationError("hashedrekord entry digest does not match the bundle")
        if not isinstance(sigobj, dict) or _b64(sigobj.get("content"), "signature") != sig:
            raise VerificationError("hashedrekord entry signature does not match the bundle")
        ver = sigobj.get("verifier")
        pk = ver.get("publicKey") if isinstance(ver, dict) else None
        if not isinstance(pk, dict) or _b64(pk.get("rawBytes"), "verifier") != spki:
            raise VerificationError("hashedrekord entry key is not the given key")
        return
    if kind == "dsse" and version == "0.0.1":
        spec = _body(raw, kind, version)
        if payload is None:
            raise VerificationError("dsse entry without a DSSE envelope")
        _sha256_field(spec.get("payloadHash"), hashlib.sha256(payload).hexdigest(), "payload hash")
        sigs = spec.get("signatures")
        if not isinstance(sigs, list) or not sigs:
            raise VerificationError("dsse entry has no signatures")
        for s in sigs:
            if not isinstance(s, dict) or _b64(s.get("signature"), "signature") != sig \
                    or _pem_key_spki(s.get("verifier"), "verifier") != spki:
                raise VerificationError("dsse entry signature or verifier does not match the bundle")
        return
    raise VerificationError(f"log entry kind {kind}/{version} is not supported for key-based bundles")


def verify_with_key(data: bytes, key: PublicKey, trust: Trust | None, *, digest: bytes | None,
                    artifact: bytes | None = None) -> SigstoreCheck:
    """Verify a key-based bundle: signature with `key`; with a trust root also its log entries
    and timestamps (gap 3); without one they are noted as present and not verified."""
    try:
        doc = _bounded_doc(data)
        parsed = parse_bundle(doc)
    except AttestError as exc:
        return _fail("key", f"malformed sigstore bundle: {exc}")
    if parsed.keyless:
        return _fail("key", "the bundle identifies its signer by certificate; verify it with "
                     "--certificate-identity and --certificate-oidc-issuer, not --key")
    envelope: Envelope | None = parsed.envelope
    try:
        if envelope is not None:
            if len(envelope.signatures) != 1:
                raise SignatureError("a bundle's DSSE envelope must carry exactly one signature")
            sig = envelope.verify(key, index=None).sig
            payload: bytes | None = envelope.payload
        else:
            if parsed.message_signature is None:
                raise MalformedError("bundle has no signature")
            sig, payload = parsed.message_signature, None
            if parsed.message_digest is not None:
                alg, md = parsed.message_digest
                if alg != "SHA2_256" or (digest is not None and md != digest):
                    raise SignatureError("bundle messageDigest does not match the artifact")
            _verify_key_sig(key, sig, digest=digest, data=artifact)
    except AttestError as exc:
        return _fail("key", str(exc))
    ptype = envelope.payload_type if envelope is not None else None
    vm = doc["verificationMaterial"]
    entries = vm.get("tlogEntries") or []
    tsd = vm.get("timestampVerificationData") or {}
    n_ts = len(tsd.get("rfc3161Timestamps") or []) if isinstance(tsd, dict) else 0
    if trust is None or not trust.explicit:
        notes: list[str] = []
        if entries:
            notes.append(f"{len(entries)} transparency-log entr(y/ies) present and NOT verified "
                         "(give --trusted-root FILE or --staging to verify them)")
        if n_ts:
            notes.append(f"{n_ts} RFC 3161 timestamp(s) present and NOT verified")
        return SigstoreCheck(True, "key", (), tuple(notes), payload_type=ptype, payload=payload)
    try:
        times: list[TimestampVerificationResult] = []
        log_index = integrated = None
        keyring = trust.root.rekor_keyring(KeyringPurpose.VERIFY)
        for raw in entries:
            entry = TransparencyLogEntry(_ModelEntry.model_validate_json(json.dumps(raw)))
            entry._verify(keyring)
            inner = entry._inner
            kind = str(inner.kind_version.kind)
            logged = digest
            if envelope is not None and kind == "hashedrekord":  # Rekor v2 logs the PAE digest
                logged = hashlib.sha256(envelope.pae()).digest()
            check_key_entry_body(bytes(inner.canonicalized_body), kind, str(inner.kind_version.version),
                                 key=key, sig=sig, digest=logged, payload=payload)
            log_index = int(inner.log_index)
            if inner.integrated_time and inner.inclusion_promise:
                integrated = int(inner.integrated_time)
                times.append(TimestampVerificationResult(source=TimestampSource.TRANSPARENCY_SERVICE,
                                                         time=_utc(integrated)))
        if n_ts:
            tsv = TimestampVerificationData(_ModelTsd.model_validate_json(json.dumps(tsd)))
            for tsr in tsv.rfc3161_timestamps:
                got = verify_timestamp(trust.root, tsr, sig)
                if got is not None:
                    times.append(got)
        if (entries or n_ts) and not times:
            raise VerificationError("no verified time: neither a log entry promise nor a timestamp verified")
    except Exception as exc:  # VerificationError and whatever hostile input provokes
        return _fail("key", f"sigstore verification failed ({trust.name}): {_short(exc)}")
    done = (f"log entries and timestamps verified against the {trust.name}",) if entries or n_ts else ()
    return SigstoreCheck(True, "key", (), done, None, None, log_index, integrated, _times(times), ptype,
                         payload)


# --- cosign's legacy keyless `.att` layers: gap 4 ---------------------------------------------

COSIGN_CERTIFICATE = "dev.sigstore.cosign/certificate"
COSIGN_CHAIN = "dev.sigstore.cosign/chain"
COSIGN_BUNDLE = "dev.sigstore.cosign/bundle"
MAX_ANNOTATION = 256 * 1024


COSIGN_RFC3161 = "dev.sigstore.cosign/rfc3161timestamp"


@dataclass(frozen=True)
class LegacyKeyless:
    """The keyless material cosign 2 writes into a `.att` layer's annotations."""

    certificate_pem: str
    chain_pem: str | None
    rekor_bundle: str
    rfc3161_timestamp: str = ""


def legacy_material(annotations: Mapping[str, str]) -> LegacyKeyless | None:
    """The layer's keyless annotations (certificate + Rekor bundle and/or an RFC 3161 timestamp),
    or None for a key-signed layer."""
    cert = annotations.get(COSIGN_CERTIFICATE)
    if not cert:
        return None
    return LegacyKeyless(cert, annotations.get(COSIGN_CHAIN) or None, annotations.get(COSIGN_BUNDLE, ""),
                         annotations.get(COSIGN_RFC3161, ""))


def _check_certificate(facts: CertificateFacts, times: list[TimestampVerificationResult],
                       rules: list[IdentityRule] | tuple[IdentityRule, ...], trust: Trust) -> None:
    """The library's certificate steps at each verified time (gaps 4 and 5): the chain to the
    root's Fulcio CAs (`_verify_chain_at_time`), the SCT (`verify_sct`), Sigstore's key-usage
    profile, the identity policy, and the certificate's validity at every time."""
    if not times:
        raise VerificationError("no verified time: neither a log entry promise nor a timestamp verified")
    cert = facts.cert
    verifier = _Verifier(trusted_root=trust.root)
    chain: list[x509.Certificate] = []
    for when in times:
        chain = verifier._verify_chain_at_time(cert, when)
        if not cert.not_valid_before_utc <= when.time <= cert.not_valid_after_utc:
            raise VerificationError("invalid signing cert: expired at the verified signing time")
    verify_sct(cert, chain, trust.root.ct_keyring(KeyringPurpose.VERIFY))
    if not facts.digital_signature:
        raise VerificationError("key usage is not digital signature")
    if not facts.code_signing:
        raise VerificationError("extended key usage does not contain code signing")
    identity_policy(rules).verify(cert)


def _stamp_times(trust: Trust, stamps: list[bytes], message: bytes) -> list[TimestampVerificationResult]:
    """The RFC 3161 timestamps of `message` that verify against the root's TSAs (gap 1's verifier)."""
    if not trust.root.get_timestamp_authorities():
        raise VerificationError("signed timestamps, but the trusted root has no timestamp authority")
    out: list[TimestampVerificationResult] = []
    for raw in stamps:
        got = verify_timestamp(trust.root, decode_timestamp_response(raw), message)
        if got is None:
            raise VerificationError("an RFC 3161 timestamp does not verify against the trusted root")
        out.append(got)
    return out


def verify_timestamp_only(doc: dict[str, Any], parsed: ParsedBundle,
                          rules: list[IdentityRule] | tuple[IdentityRule, ...], trust: Trust, *,
                          digest: bytes | None) -> SigstoreCheck:
    """Gap 5: a keyless bundle with timestamps and no log entry (`parsed` is `doc` strictly
    decoded). Every timestamp must verify (over the signature), then the certificate at each of
    their times, then the signature: over the DSSE envelope, or over `digest` for a
    messageSignature (which binds the artifact; the caller binds a DSSE statement's subject)."""
    vm = doc["verificationMaterial"]
    try:
        if not parsed.certificates_der:
            raise MalformedError("the bundle carries no certificate")
        facts = read_certificate(parsed.certificates_der[0])
    except MalformedError as exc:  # hostile bundle
        return _fail("keyless", str(exc))
    cert = facts.cert
    who = _identity(facts, rules)
    if isinstance(who, SigstoreCheck):
        return who
    ptype: str | None = None
    payload: bytes | None = None
    try:
        stamps = [_b64(t.get("signedTimestamp"), "timestamp")
                  for t in vm["timestampVerificationData"]["rfc3161Timestamps"]]
        key = cast(ec.EllipticCurvePublicKey, cert.public_key())
        if parsed.envelope is not None:
            envelope = _sdsse.Envelope._from_json(json.dumps(doc["dsseEnvelope"]))
            sig = envelope.signature
            _sdsse._verify(key, envelope)
            ptype, payload = str(envelope._inner.payload_type), bytes(envelope._inner.payload)
        else:
            if parsed.message_signature is None or digest is None:
                raise VerificationError("a messageSignature bundle needs the artifact")
            sig = parsed.message_signature
            key.verify(sig, digest, ec.ECDSA(Prehashed(hashes.SHA256())))
        times = _stamp_times(trust, stamps, sig)
        _check_certificate(facts, times, rules, trust)
    except Exception as exc:  # VerificationError, InvalidSignature, hostile input
        return _fail("keyless", f"sigstore verification failed ({trust.name}): {_short(exc)}", **who)
    return SigstoreCheck(True, "keyless", (), (f"verified against the {trust.name} (signed timestamps, "
                                               "no transparency-log entry)",),
                         who["subject"], who["issuer"], None, None, _times(times), ptype, payload,
                         facts.fulcio)


def _rekor_set(raw: str, trust: Trust) -> tuple[bytes, int, int]:
    """Verify cosign's Rekor bundle (SET over body, integratedTime, logID, logIndex) with the
    trusted root's log keys (the library keyring); returns (body, log index, integrated time)."""
    if len(raw) > MAX_ANNOTATION:
        raise VerificationError("Rekor bundle annotation is too large")
    doc = loads_strict(raw.encode("utf-8"))
    payload = doc.get("Payload") if isinstance(doc, dict) else None
    if not isinstance(payload, dict):
        raise VerificationError("the layer has no Rekor bundle (no transparency-log proof of its time)")
    body_b64, t, index, log_id = (payload.get("body"), payload.get("integratedTime"), payload.get("logIndex"),
                                  payload.get("logID"))
    if not (isinstance(body_b64, str) and isinstance(t, int) and isinstance(index, int)
            and isinstance(log_id, str) and not isinstance(t, bool) and not isinstance(index, bool)):
        raise VerificationError("Rekor bundle payload is malformed")
    try:
        key_id = bytes.fromhex(log_id)
    except ValueError as exc:
        raise VerificationError("Rekor bundle logID is not hex") from exc
    canonical = rfc8785.dumps({"body": body_b64, "integratedTime": t, "logID": log_id, "logIndex": index})
    set_sig = _b64(doc.get("SignedEntryTimestamp"), "SignedEntryTimestamp")
    trust.root.rekor_keyring(KeyringPurpose.VERIFY).verify(key_id=KeyID(key_id), signature=set_sig,
                                                           data=canonical)
    return _b64(body_b64, "body"), index, t


def verify_legacy_keyless(envelope_json: bytes, material: LegacyKeyless,
                          rules: list[IdentityRule] | tuple[IdentityRule, ...],
                          trust: Trust) -> SigstoreCheck:
    """Gap 4: cosign 2's keyless `.att` layer carries a certificate and a Rekor SET but no
    inclusion proof, which `sigstore.models.Bundle` requires. The library's steps are composed
    here without the proof (as cosign verifies these offline): the SET with the log keyring, the
    chain at the SET time and the SCT with the library, the identity with `AnyOf`, the DSSE
    signature with `sigstore.dsse`, and the entry body with `check_intoto_body` / dsse checks."""
    if not rules:
        return _fail("keyless", "keyless .att layer: no certificate identity and issuer to check it against")
    if len(material.certificate_pem) > MAX_ANNOTATION or len(material.chain_pem or "") > MAX_ANNOTATION:
        return _fail("keyless", "malformed certificate annotation: larger than "
                     f"{MAX_ANNOTATION} characters")
    try:
        facts = read_certificate(material.certificate_pem.encode("utf-8"), pem=True)
    except MalformedError as exc:  # hostile annotation
        return _fail("keyless", f"{exc} (the layer's certificate annotation)")
    cert = facts.cert
    who = _identity(facts, rules)
    if isinstance(who, SigstoreCheck):
        return who
    if not material.rekor_bundle and material.rfc3161_timestamp:
        return _legacy_timestamped(envelope_json, material, facts, rules, trust, who)
    try:
        body, log_index, integrated = _rekor_set(material.rekor_bundle, trust)
        when = TimestampVerificationResult(source=TimestampSource.TRANSPARENCY_SERVICE, time=_utc(integrated))
        _check_certificate(facts, [when], rules, trust)
        envelope = _sdsse.Envelope._from_json(envelope_json)
        _sdsse._verify(cast(ec.EllipticCurvePublicKey, cert.public_key()), envelope)
        env = envelope._inner
        head = loads_strict(body)
        kind = head.get("kind") if isinstance(head, dict) else None
        version = str(head.get("apiVersion")) if isinstance(head, dict) else ""
        if kind == "intoto":
            check_intoto_body(body, version, bytes(env.payload), [bytes(s.sig) for s in env.signatures], cert)
        elif kind == "dsse" and version == "0.0.1":
            _check_dsse_cert_body(body, bytes(env.payload), [bytes(s.sig) for s in env.signatures], cert)
        else:
            raise VerificationError(f"log entry kind {kind}/{version} is not an attestation entry")
    except Exception as exc:  # VerificationError and whatever hostile input provokes
        return _fail("keyless", f"sigstore verification failed ({trust.name}): {_short(exc)}", **who)
    return SigstoreCheck(True, "keyless", (), (f"verified against the {trust.name} (Rekor SET, no inclusion "
                                               "proof in a legacy .att layer)",),
                         who["subject"], who["issuer"], log_index, integrated, _times([when]),
                         str(env.payload_type), bytes(env.payload), facts.fulcio)


def _legacy_timestamped(envelope_json: bytes, material: LegacyKeyless, facts: CertificateFacts,
                        rules: list[IdentityRule] | tuple[IdentityRule, ...], trust: Trust,
                        who: dict[str, Any]) -> SigstoreCheck:
    """Gap 4, timestamp variant: the layer's time is its RFC 3161 timestamp over the layer bytes
    (cosign 2's `dev.sigstore.cosign/rfc3161timestamp`), then the certificate and signature."""
    try:
        if len(material.rfc3161_timestamp) > MAX_ANNOTATION:
            raise VerificationError("timestamp annotation is too large")
        doc = loads_strict(material.rfc3161_timestamp.encode("utf-8"))
        raw = _b64(doc.get("SignedRFC3161Timestamp") if isinstance(doc, dict) else None, "timestamp")
        times = _stamp_times(trust, [raw], envelope_json)
        _check_certificate(facts, times, rules, trust)
        envelope = _sdsse.Envelope._from_json(envelope_json)
        _sdsse._verify(cast(ec.EllipticCurvePublicKey, facts.cert.public_key()), envelope)
        env = envelope._inner
    except Exception as exc:  # VerificationError and whatever hostile input provokes
        return _fail("keyless", f"sigstore verification failed ({trust.name}): {_short(exc)}", **who)
    return SigstoreCheck(True, "keyless", (), (f"verified against the {trust.name} (signed timestamp, no "
                                               "transparency-log entry in a legacy .att layer)",),
                         who["subject"], who["issuer"], None, None, _times(times), str(env.payload_type),
                         bytes(env.payload), facts.fulcio)


def _check_dsse_cert_body(raw: bytes, payload: bytes, sigs: list[bytes], cert: x509.Certificate) -> None:
    """A `dsse/0.0.1` entry against the envelope: payload hash, signatures, certificate verifier."""
    spec = _body(raw, "dsse", "0.0.1")
    _sha256_field(spec.get("payloadHash"), hashlib.sha256(payload).hexdigest(), "payload hash")
    logged = spec.get("signatures")
    if not isinstance(logged, list):
        raise VerificationError("dsse entry has no signatures")
    der = cert.public_bytes(serialization.Encoding.DER)
    got: list[bytes] = []
    for s in logged:
        if not isinstance(s, dict) or _pem_cert_der(s.get("verifier"), "verifier") != der:
            raise VerificationError("dsse entry verifier is not the signing certificate")
        got.append(_b64(s.get("signature"), "signature"))
    if sorted(got) != sorted(sigs):
        raise VerificationError("dsse entry signatures do not match the envelope")
