"""Wire formats stock cosign reads (PEERS §4.1, §4.2, §5), built and recognised here. Pure.

- legacy: tag `sha256-<hex>.att`, an image manifest whose layers are DSSE envelopes annotated
  `dev.cosignproject.cosign/signature`, with an image config listing them as diff_ids;
- bundle: an OCI 1.1 referrer (subject set) whose one layer is a sigstore bundle v0.3;
- envelope: the cartridge's embedded DSSE envelope as a referrer for ACX-aware tools (cosign
  does not read these).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from acxoci.attest.bundle import BUNDLE_V03, BUNDLE_V03_ALT
from acxoci.oci.descriptor import (
    ANNOTATION_CREATED,
    EMPTY_DATA,
    EMPTY_JSON,
    OCI_MANIFEST,
    Descriptor,
    Manifest,
    descriptor_for,
    manifest_bytes,
)
from acxoci.oci.listing import check_attestation_layers

Format = Literal["legacy", "bundle"]
FORMATS: tuple[Format, ...] = ("legacy", "bundle")

DSSE_MEDIA_TYPE = "application/vnd.dsse.envelope.v1+json"
COSIGN_SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
PREDICATE_TYPE_ANNOTATION = "predicateType"
IMAGE_CONFIG = "application/vnd.oci.image.config.v1+json"
BUNDLE_MEDIA_TYPES = (BUNDLE_V03, BUNDLE_V03_ALT)
BUNDLE_CONTENT_ANNOTATION = "dev.sigstore.bundle.content"
BUNDLE_PREDICATE_ANNOTATION = "dev.sigstore.bundle.predicateType"
ZERO_TIME = "0001-01-01T00:00:00Z"


def legacy_tag(subject_digest: str) -> str:
    """cosign's attestation tag for a subject: `sha256-<hex>.att`."""
    alg, _, hexpart = subject_digest.partition(":")
    return f"{alg}-{hexpart}.att"


@dataclass(frozen=True)
class Blob:
    """Bytes to push with their descriptor."""

    desc: Descriptor
    data: bytes


@dataclass(frozen=True)
class BuiltManifest:
    """A manifest ready to push: its bytes/descriptor and the blobs it needs first."""

    manifest: Blob
    blobs: tuple[Blob, ...]


def _blob(data: bytes, media_type: str) -> Blob:
    return Blob(descriptor_for(data, media_type), data)


def _compact(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class LegacyLayer:
    """One `.att` layer: a DSSE envelope with its (unauthenticated) predicateType annotation."""

    desc: Descriptor
    predicate_type: str | None


def legacy_layer(envelope: bytes, predicate_type: str,
                 keyless: dict[str, str] | None = None) -> tuple[LegacyLayer, bytes]:
    """A new `.att` layer for `envelope` (annotated as cosign does; a keyless signature adds its
    certificate and timestamp annotations, `dev.sigstore.cosign/*`)."""
    ann = {COSIGN_SIGNATURE_ANNOTATION: "", PREDICATE_TYPE_ANNOTATION: predicate_type, **(keyless or {})}
    desc = descriptor_for(envelope, DSSE_MEDIA_TYPE, annotations=ann)
    return LegacyLayer(desc, predicate_type), envelope


def build_legacy_manifest(layers: Sequence[LegacyLayer]) -> BuiltManifest:
    """The `.att` image manifest + config for `layers` (the envelopes must be pushed separately);
    one no reader would read (past the attestation caps) is refused."""
    if not layers:
        raise ValueError("a legacy attestation manifest needs at least one layer")
    check_attestation_layers([la.desc for la in layers], where="the new cosign .att manifest")
    config = {"architecture": "", "created": ZERO_TIME, "history": [{"created": ZERO_TIME} for _ in layers],
              "os": "", "rootfs": {"type": "layers", "diff_ids": [la.desc.digest for la in layers]},
              "config": {}}
    cfg = _blob(_compact(config), IMAGE_CONFIG)
    layer_objs: list[dict[str, Any]] = []
    for la in layers:
        obj = {"mediaType": la.desc.media_type, "size": la.desc.size, "digest": la.desc.digest}
        if la.desc.annotations:
            obj["annotations"] = dict(la.desc.annotations)
        layer_objs.append(obj)
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": {"mediaType": IMAGE_CONFIG, "size": cfg.desc.size, "digest": cfg.desc.digest},
                "layers": layer_objs}
    return BuiltManifest(_blob(manifest_bytes(manifest), OCI_MANIFEST), (cfg,))


def legacy_layers(manifest: Manifest, *, where: str = "cosign .att manifest") -> list[LegacyLayer]:
    """The layers cosign would read from an `.att` manifest (those with the signature annotation);
    a manifest past the attestation caps is refused (LimitExceeded naming `where`, its digest)."""
    check_attestation_layers(manifest.layers, where=where)
    out: list[LegacyLayer] = []
    for layer in manifest.layers:
        if COSIGN_SIGNATURE_ANNOTATION in layer.annotations:
            out.append(LegacyLayer(layer, layer.annotations.get(PREDICATE_TYPE_ANNOTATION)))
    return out


def _subject_obj(subject: Descriptor) -> dict[str, Any]:
    return {"mediaType": subject.media_type, "size": subject.size, "digest": subject.digest}


def _empty_config() -> tuple[dict[str, Any], Blob]:
    empty = _blob(EMPTY_DATA, EMPTY_JSON)
    return {"mediaType": EMPTY_JSON, "size": empty.desc.size, "digest": empty.desc.digest}, empty


def build_bundle_referrer(bundle: bytes, subject: Descriptor, predicate_type: str, *,
                          created: str) -> BuiltManifest:
    """The cosign-3-shaped bundle referrer: empty config, one bundle layer, `subject`."""
    cfg_obj, empty = _empty_config()
    layer = _blob(bundle, BUNDLE_V03)
    manifest = {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": BUNDLE_V03,
        "config": cfg_obj,
        "layers": [{"mediaType": BUNDLE_V03, "size": layer.desc.size, "digest": layer.desc.digest}],
        "subject": _subject_obj(subject),
        "annotations": {BUNDLE_CONTENT_ANNOTATION: "dsse-envelope",
                        BUNDLE_PREDICATE_ANNOTATION: predicate_type, ANNOTATION_CREATED: created},
    }
    return BuiltManifest(_blob(manifest_bytes(manifest), OCI_MANIFEST), (empty, layer))


def build_envelope_referrer(envelope: bytes, subject: Descriptor, *,
                            created: str | None = None) -> BuiltManifest:
    """The cartridge's own DSSE envelope as a referrer (oras-attach shape, artifactType = DSSE).
    Without `created` the manifest is deterministic (same envelope, same digest)."""
    cfg_obj, empty = _empty_config()
    layer = _blob(envelope, DSSE_MEDIA_TYPE)
    manifest = {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": DSSE_MEDIA_TYPE,
        "config": cfg_obj,
        "layers": [{"mediaType": DSSE_MEDIA_TYPE, "size": layer.desc.size, "digest": layer.desc.digest,
                    "annotations": {"org.opencontainers.image.title": "cartridge.dsse.json"}}],
        "subject": _subject_obj(subject),
    }
    if created is not None:
        manifest["annotations"] = {ANNOTATION_CREATED: created}
    return BuiltManifest(_blob(manifest_bytes(manifest), OCI_MANIFEST), (empty, layer))


ReferrerKind = Literal["bundle", "envelope", "other"]


def classify_referrer(manifest: Manifest) -> tuple[ReferrerKind, Descriptor | None]:
    """What a referrer manifest carries, judged by its layers (never by the listing's artifactType,
    which ggcr registries replace with the config media type)."""
    if manifest.is_index:
        return "other", None
    for layer in manifest.layers:
        if layer.media_type in BUNDLE_MEDIA_TYPES:
            return "bundle", layer
    at = manifest.artifact_type
    for layer in manifest.layers:
        if layer.media_type == DSSE_MEDIA_TYPE and at == DSSE_MEDIA_TYPE:
            return "envelope", layer
    return "other", None
