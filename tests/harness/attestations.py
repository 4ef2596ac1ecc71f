"""Builders shared by the attestation tests (no tests here): push a cartridge/workflow artifact
into any Target, and attach a Sigstore bundle to a subject as a bundle referrer (its shape is
checked by tests/attestation/test_pushed_shapes.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from acxoci.attest.canonical import sha256_digest
from acxoci.attestation.formats import build_bundle_referrer
from acxoci.oci.descriptor import (
    EMPTY_DATA,
    EMPTY_JSON,
    OCI_MANIFEST,
    Descriptor,
    descriptor_for,
    manifest_bytes,
)
from acxoci.oci.layout import LayoutStore
from acxoci.oci.target import Target

CARTRIDGE_ARTIFACT = "application/vnd.acx.cartridge.v1"
CARTRIDGE_LAYER = "application/vnd.acx.cartridge.layer.v1+sqlite"
WORKFLOW_MEDIA = "application/vnd.acx.workflow.v1+json"


def _push(target: Target, data: bytes, media_type: str) -> Descriptor:
    desc = descriptor_for(data, media_type)
    if not target.exists(desc):
        target.push(desc, io.BytesIO(data))
    return desc


def push_artifact(target: Target, data: bytes, *, artifact_type: str, layer_type: str, tag: str,
                  annotations: dict[str, str] | None = None) -> Descriptor:
    """Push one-layer artifact (empty config) and tag it; returns the manifest descriptor."""
    layer = _push(target, data, layer_type)
    _push(target, EMPTY_DATA, EMPTY_JSON)
    layer_obj: dict[str, object] = {"mediaType": layer_type, "digest": layer.digest, "size": layer.size}
    if annotations:
        layer_obj["annotations"] = annotations
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
                "config": {"mediaType": EMPTY_JSON, "digest": sha256_digest(EMPTY_DATA), "size": 2},
                "layers": [layer_obj]}
    desc = _push(target, manifest_bytes(manifest), OCI_MANIFEST)
    target.tag(desc, tag)
    return desc


def push_cartridge(target: Target, path: Path, tag: str = "v1") -> Descriptor:
    """Push a .acx file the way brief §11 describes a cartridge manifest."""
    return push_artifact(target, path.read_bytes(), artifact_type=CARTRIDGE_ARTIFACT,
                         layer_type=CARTRIDGE_LAYER,
                         tag=tag, annotations={"vnd.acx.spec-version": "0.1"})


def push_workflow(target: Target, doc: dict[str, object], tag: str = "wf1") -> Descriptor:
    """Push a workflow JSON document as a one-layer artifact."""
    data = json.dumps(doc, indent=2).encode("utf-8")
    return push_artifact(target, data, artifact_type=WORKFLOW_MEDIA, layer_type=WORKFLOW_MEDIA, tag=tag)


def attach_bundle(
    layout_dir: Path,
    subject: Descriptor,
    bundle: bytes,
    predicate_type: str = "https://slsa.dev/provenance/v1",
) -> str:
    """Attach `bundle` to `subject` as a cosign-3-shaped bundle referrer; its manifest digest."""
    layout = LayoutStore(layout_dir, create=True)
    built = build_bundle_referrer(bundle, subject.plain(), predicate_type, created="2026-01-01T00:00:00Z")
    for blob in built.blobs:
        _push(layout, blob.data, blob.desc.media_type)
    return _push(layout, built.manifest.data, OCI_MANIFEST).digest
