"""Sigstore bundle v0.3: build (key-based, DSSE) and strict parse; key-based verification.

A key-based bundle is what cosign writes with `--key` and no transparency log:
`verificationMaterial.publicKey.hint` = base64(sha256(SPKI DER)) and a `dsseEnvelope` whose
signatures carry no `keyid` (cosign rejects any other keyid). The shape is validated with the
`sigstore_models` pydantic models (docs/decisions/0001-sigstore-models.md). Certificates,
transparency-log entries and timestamps are parsed here only to be reported; they are verified
through the `sigstore` library in `acxoci.attestation.sigstore_verify` (decision 0015).
"""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import dataclass
from typing import Any, Final, Literal

import pydantic
from sigstore_models.bundle.v1 import Bundle as _ModelBundle
from sigstore_models.bundle.v1 import VerificationMaterial as _ModelMaterial
from sigstore_models.common.v1 import PublicKeyIdentifier as _ModelKeyId
from sigstore_models.intoto import Envelope as _ModelEnvelope
from sigstore_models.intoto import Signature as _ModelSignature

from acxoci.attest.b64 import b64decode_lenient
from acxoci.attest.canonical import loads_strict
from acxoci.attest.dsse import Envelope, Signature
from acxoci.attest.errors import AttestError, MalformedError, SignatureError
from acxoci.attest.keys import PublicKey

BUNDLE_V03: Final = "application/vnd.dev.sigstore.bundle.v0.3+json"
BUNDLE_V03_ALT = "application/vnd.dev.sigstore.bundle+json;version=0.3"
BUNDLE_V01: Final = "application/vnd.dev.sigstore.bundle+json;version=0.1"
BUNDLE_MEDIA_TYPES = (
    BUNDLE_V03,
    BUNDLE_V03_ALT,
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    BUNDLE_V01,
)
MAX_BUNDLE_BYTES = 16 * 1024 * 1024

Material = Literal["public-key", "certificate", "certificate-chain"]


class KeylessBundle(AttestError):
    """The bundle is keyless (Fulcio certificate): verifying it needs a trusted root, not a key."""


@dataclass(frozen=True)
class ParsedBundle:
    """A strictly parsed sigstore bundle, reduced to what a key-based verifier needs."""

    media_type: str
    material: Material
    public_key_hint: str | None
    certificates_der: tuple[bytes, ...]
    tlog_entries: int
    rfc3161_timestamps: int
    envelope: Envelope | None
    message_signature: bytes | None
    message_digest: tuple[str, bytes] | None

    @property
    def keyless(self) -> bool:
        """True when the bundle identifies its signer by certificate, not by an out-of-band key."""
        return self.material != "public-key"

    def describe(self) -> str:
        """One line saying what the bundle carries (for reports)."""
        parts = [f"{self.media_type}", f"material={self.material}"]
        content = "dsse-envelope" if self.envelope is not None else "message-signature"
        parts.append(f"content={content}")
        if self.tlog_entries:
            parts.append(f"tlogEntries={self.tlog_entries}")
        if self.rfc3161_timestamps:
            parts.append(f"timestamps={self.rfc3161_timestamps}")
        return ", ".join(parts)


@dataclass(frozen=True)
class BundleCheck:
    """Outcome of a key-based bundle verification: the verifying signature plus notes."""

    signature: Signature
    notes: tuple[str, ...]


def build_dsse_bundle(envelope: Envelope, key: PublicKey) -> dict[str, Any]:
    """A key-based v0.3 bundle around `envelope` (keyid dropped, hint = base64 sha256 SPKI).

    Built through the sigstore_models types so the shape is checked on the way out.
    """
    model = _ModelBundle(
        media_type=BUNDLE_V03,
        verification_material=_ModelMaterial(public_key=_ModelKeyId(hint=key.sigstore_hint()),
                                             tlog_entries=[]),
        dsse_envelope=_ModelEnvelope(
            payload=base64.b64encode(envelope.payload),
            payload_type=envelope.payload_type,
            signatures=[_ModelSignature(sig=base64.b64encode(s.sig)) for s in envelope.signatures],
        ),
    )
    doc: dict[str, Any] = model.to_dict()
    # protojson (cosign) leaves out empty repeated fields; do the same.
    if doc["verificationMaterial"].get("tlogEntries") == []:
        del doc["verificationMaterial"]["tlogEntries"]
    return doc


def _normalised_for_model(doc: dict[str, Any]) -> dict[str, Any]:
    """Fill protobuf defaults that protojson omits and that the pydantic models require."""
    out = copy.deepcopy(doc)
    vm = out.get("verificationMaterial")
    if isinstance(vm, dict):
        vm.setdefault("tlogEntries", [])
        pk = vm.get("publicKey")
        if isinstance(pk, dict):
            pk.setdefault("hint", None)
    return out


def _b64_field(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise MalformedError(f"bundle {where} is not a base64 string")
    return b64decode_lenient(value)


def parse_bundle(data: bytes | dict[str, Any]) -> ParsedBundle:
    """Strictly parse a sigstore bundle (bytes or an already-parsed object).

    Rejects unknown fields, duplicate keys, unknown media types and the wrong number of
    content/material choices (a bundle with both a `dsseEnvelope` and a `messageSignature` is
    malformed). Certificates and tlog entries are kept for reporting. The one decoder every
    verifier routes by (DSSE or message signature, key or certificate).
    """
    doc = loads_strict(data, max_bytes=MAX_BUNDLE_BYTES) if isinstance(data, bytes) else data
    if not isinstance(doc, dict):
        raise MalformedError("bundle is not a JSON object")
    mt = doc.get("mediaType")
    if mt not in BUNDLE_MEDIA_TYPES:
        raise MalformedError(f"bundle mediaType {mt!r} is not a known sigstore bundle type")
    if ("dsseEnvelope" in doc) == ("messageSignature" in doc):
        raise MalformedError("bundle must carry exactly one of dsseEnvelope and messageSignature")
    try:
        # JSON mode: enum fields (messageDigest.algorithm, …) arrive as their protojson names.
        _ModelBundle.model_validate_json(json.dumps(_normalised_for_model(doc)))
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise MalformedError(f"bundle does not match the sigstore bundle schema at {loc or '(root)'}: "
                             f"{first.get('msg')}") from exc
    vm = doc["verificationMaterial"]
    material: Material
    certs: tuple[bytes, ...] = ()
    hint: str | None = None
    if "publicKey" in vm:
        material = "public-key"
        raw_hint = vm["publicKey"].get("hint")
        hint = raw_hint if isinstance(raw_hint, str) and raw_hint else None
    elif "certificate" in vm:
        material = "certificate"
        certs = (_b64_field(vm["certificate"].get("rawBytes"), "certificate.rawBytes"),)
    else:
        material = "certificate-chain"
        chain = vm["x509CertificateChain"].get("certificates") or []
        certs = tuple(_b64_field(c.get("rawBytes"), "x509CertificateChain.rawBytes") for c in chain)
    tlog = vm.get("tlogEntries") or []
    tsd = vm.get("timestampVerificationData") or {}
    timestamps = len(tsd.get("rfc3161Timestamps") or []) if isinstance(tsd, dict) else 0
    envelope: Envelope | None = None
    msg_sig: bytes | None = None
    msg_digest: tuple[str, bytes] | None = None
    if "dsseEnvelope" in doc:
        envelope = Envelope.from_json(doc["dsseEnvelope"])
    else:
        ms = doc["messageSignature"]
        msg_sig = _b64_field(ms.get("signature"), "messageSignature.signature")
        md = ms.get("messageDigest")
        if isinstance(md, dict):
            msg_digest = (str(md.get("algorithm")), _b64_field(md.get("digest"), "messageDigest.digest"))
    return ParsedBundle(str(mt), material, hint, certs, len(tlog), timestamps, envelope, msg_sig, msg_digest)


def check_cosign_keyids(envelope: Envelope) -> None:
    """Raise MalformedError if any DSSE signature has a non-empty keyid (cosign rejects those in bundles)."""
    for i, s in enumerate(envelope.signatures):
        if s.keyid:
            raise MalformedError(f"bundle DSSE signatures[{i}].keyid is {s.keyid!r}; cosign accepts only an "
                                 "absent or empty keyid in bundles, so it would reject this bundle")


def verify_dsse_bundle(bundle: ParsedBundle, key: PublicKey) -> BundleCheck:
    """Verify a key-based DSSE bundle with `key` the way `cosign verify-attestation --key` does.

    Raises KeylessBundle for certificate bundles, MalformedError for a keyid cosign would
    reject, SignatureError when no signature verifies. Tlog entries are reported, not checked.
    """
    if bundle.keyless:
        raise KeylessBundle(f"bundle is keyless ({bundle.material}, {len(bundle.certificates_der)} "
                            "certificate(s)); keyless verification needs a trusted root and is not done here")
    if bundle.envelope is None:
        raise MalformedError("bundle carries a messageSignature, not a DSSE envelope")
    check_cosign_keyids(bundle.envelope)
    sig = bundle.envelope.verify(key, index=None)
    notes: list[str] = []
    if bundle.public_key_hint is not None and bundle.public_key_hint != key.sigstore_hint():
        notes.append("publicKey.hint does not match the verifying key (hints are unauthenticated; ignored)")
    if bundle.tlog_entries:
        notes.append(f"{bundle.tlog_entries} transparency-log entr(y/ies) present and NOT verified "
                     "(no trusted root; like cosign --insecure-ignore-tlog)")
    if bundle.rfc3161_timestamps:
        notes.append(f"{bundle.rfc3161_timestamps} RFC 3161 timestamp(s) present and NOT verified")
    return BundleCheck(sig, tuple(notes))


def verify_message_bundle(bundle: ParsedBundle, key: PublicKey, blob: bytes) -> BundleCheck:
    """Verify a key-based messageSignature bundle (cosign sign-blob) over `blob`."""
    if bundle.keyless:
        raise KeylessBundle(f"bundle is keyless ({bundle.material}); not verified")
    if bundle.message_signature is None:
        raise MalformedError("bundle carries a DSSE envelope, not a messageSignature")
    try:
        key.verify(bundle.message_signature, blob)
    except SignatureError as exc:
        raise SignatureError("bundle messageSignature does not verify with the given key") from exc
    return BundleCheck(Signature(None, bundle.message_signature), ())
