"""What an attacker with push rights plants beside a genuine artifact, at test time: a sigstore
bundle referrer (any bytes), a cosign `.att` manifest with whatever layers it likes (past the caps
a real writer refuses), and a certificate whose SAN extension does not parse (DER `30 03 ff ff ff`),
generated with `cryptography` for each test."""

from __future__ import annotations

import datetime
import json
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtensionOID, NameOID

from acxoci.attestation.formats import (
    COSIGN_SIGNATURE_ANNOTATION,
    DSSE_MEDIA_TYPE,
    IMAGE_CONFIG,
    build_bundle_referrer,
    legacy_tag,
)
from acxoci.oci.descriptor import OCI_MANIFEST, Descriptor
from acxoci.oci.reference import parse_reference
from acxoci.oci.target import Target, open_target, push_bytes

CARTRIDGE_TYPE = "https://acx.dev/attestation/cartridge/v1"


def bad_san_certificate() -> x509.Certificate:
    """A self-signed EC certificate whose subjectAltName extension is malformed DER."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "planted")])
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.UnrecognizedExtension(ExtensionOID.SUBJECT_ALTERNATIVE_NAME,
                                                      b"\x30\x03\xff\xff\xff"), critical=False)
            .sign(key, hashes.SHA256()))


def pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def subject_of(ref: str) -> tuple[Target, Descriptor]:
    """The target and the manifest descriptor `ref` names."""
    target, parsed = open_target(parse_reference(ref, require_ref=True))
    return target, target.resolve(parsed.reference or "")


def plant_bundle(ref: str, bundle: bytes, predicate_type: str = CARTRIDGE_TYPE) -> str:
    """A bundle referrer carrying `bundle` on the artifact at `ref`; its manifest digest."""
    target, subject = subject_of(ref)
    built = build_bundle_referrer(bundle, subject.plain(), predicate_type, created="2026-01-01T00:00:00Z")
    for b in built.blobs:
        push_bytes(target, b.data, b.desc.media_type)
    return push_bytes(target, built.manifest.data, OCI_MANIFEST).digest


def att_layer(data: bytes, annotations: dict[str, str] | None = None, *, size: int | None = None,
              digest: str | None = None) -> dict[str, Any]:
    """An `.att` layer object for `data` (or, with `size`/`digest`, one declaring other facts)."""
    import hashlib

    return {"mediaType": DSSE_MEDIA_TYPE, "size": len(data) if size is None else size,
            "digest": digest or "sha256:" + hashlib.sha256(data).hexdigest(),
            "annotations": {COSIGN_SIGNATURE_ANNOTATION: "", "predicateType": CARTRIDGE_TYPE,
                            **(annotations or {})}}


def set_att(ref: str, layers: list[dict[str, Any]], blobs: tuple[bytes, ...] = (), *,
            keep: bool = True) -> str:
    """Tag the artifact's `.att` with a manifest of the layers already there (`keep`) plus `layers`,
    written raw (no cap, as an attacker writes it); `blobs` are pushed first. The manifest digest."""
    from acxoci.errors import NotFound
    from acxoci.oci.target import fetch_manifest

    target, subject = subject_of(ref)
    tag = legacy_tag(subject.digest)
    old: list[dict[str, Any]] = []
    if keep:
        try:
            old = [la.to_json() for la in fetch_manifest(target, target.resolve(tag)).layers]
        except NotFound:
            old = []
    for b in blobs:
        push_bytes(target, b, DSSE_MEDIA_TYPE)
    every = [*old, *layers]
    config = json.dumps({"architecture": "", "os": "", "rootfs": {"type": "layers", "diff_ids": []},
                         "config": {}}).encode()
    cfg = push_bytes(target, config, IMAGE_CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": {"mediaType": IMAGE_CONFIG, "size": cfg.size, "digest": cfg.digest},
                "layers": every}
    desc = push_bytes(target, json.dumps(manifest, separators=(",", ":")).encode(), OCI_MANIFEST)
    target.tag(desc, tag)
    return desc.digest
