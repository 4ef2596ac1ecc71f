"""PURE builders of the ACX artifact manifests (no I/O): the cartridge manifest, the workflow
manifest and a generic referrer manifest for `acx attach`. Same inputs → same bytes → same
digest (the `created` annotation is an input, never the wall clock)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acxoci.oci.descriptor import (
    ANNOTATION_CREATED,
    ANNOTATION_TITLE,
    EMPTY_DATA,
    EMPTY_DIGEST,
    EMPTY_JSON,
    OCI_MANIFEST,
    Descriptor,
    check_media_type,
    check_title,
    descriptor_for,
    manifest_bytes,
)

CARTRIDGE_ARTIFACT_TYPE = "application/vnd.acx.cartridge.v1"
CARTRIDGE_LAYER_TYPE = "application/vnd.acx.cartridge.layer.v1+sqlite"
WORKFLOW_ARTIFACT_TYPE = "application/vnd.acx.workflow.v1+json"
WORKFLOW_LAYER_TYPE = "application/vnd.acx.workflow.v1+json"
DSSE_ENVELOPE_TYPE = "application/vnd.dsse.envelope.v1+json"
ANNOTATION_ROM_HASH = "vnd.acx.rom-manifest-hash"
ANNOTATION_SPEC_VERSION = "vnd.acx.spec-version"
ANNOTATION_WORKFLOW_ID = "vnd.acx.workflow.id"
ANNOTATION_WORKFLOW_VERSION = "vnd.acx.workflow.version"
ANNOTATION_WORKFLOW_DIGEST = "vnd.acx.workflow.digest"
ANNOTATION_WORKFLOW_PUBLISHER = "vnd.acx.workflow.publisher"
SPEC_VERSION = "0.1"


def empty_config() -> dict[str, Any]:
    """The OCI empty config descriptor (`{}`), with its data inlined like oras 1.3."""
    return {"mediaType": EMPTY_JSON, "digest": EMPTY_DIGEST, "size": 2, "data": "e30="}


EMPTY_CONFIG_BLOB = EMPTY_DATA


@dataclass(frozen=True)
class Built:
    """A built manifest: its JSON object, exact bytes and descriptor (blobs to push: `blobs`)."""

    manifest: dict[str, Any]
    data: bytes
    descriptor: Descriptor
    blobs: tuple[Descriptor, ...]


def _build(
    artifact_type: str,
    layers: list[dict[str, Any]],
    annotations: Mapping[str, str],
    subject: Descriptor | None = None,
) -> Built:
    check_media_type(artifact_type, "manifest", "artifactType")
    m: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": empty_config(),
        "layers": layers,
    }
    if subject is not None:
        m["subject"] = {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size}
    if annotations:
        m["annotations"] = dict(sorted(annotations.items()))
    data = manifest_bytes(m)
    desc = descriptor_for(data, OCI_MANIFEST, artifact_type=artifact_type, annotations=annotations)
    blobs = (
        Descriptor(EMPTY_JSON, EMPTY_DIGEST, 2),
        *(Descriptor(str(la["mediaType"]), str(la["digest"]), int(la["size"])) for la in layers),
    )
    return Built(m, data, desc, blobs)


def _layer(media_type: str, digest: str, size: int, annotations: Mapping[str, str]) -> dict[str, Any]:
    """A layer descriptor; its media type and title are held to their grammar (a title becomes a
    file name where the artifact is pulled)."""
    check_media_type(media_type, "layer")
    if ANNOTATION_TITLE in annotations:
        check_title(annotations[ANNOTATION_TITLE], "layer title")
    out: dict[str, Any] = {"mediaType": media_type, "digest": digest, "size": size}
    if annotations:
        out["annotations"] = dict(sorted(annotations.items()))
    return out


def cartridge_manifest(
    *,
    file_digest: str,
    file_size: int,
    title: str,
    rom_digest: str | None,
    created: str,
    spec_version: str = SPEC_VERSION,
) -> Built:
    """Image manifest for a cartridge: artifactType cartridge.v1, empty config, one raw SQLite layer
    annotated with title / ROM hash / spec version; `created` (the signing time) on the manifest."""
    ann = {ANNOTATION_TITLE: title, ANNOTATION_SPEC_VERSION: spec_version}
    if rom_digest:
        ann[ANNOTATION_ROM_HASH] = rom_digest
    layer = _layer(CARTRIDGE_LAYER_TYPE, file_digest, file_size, ann)
    return _build(CARTRIDGE_ARTIFACT_TYPE, [layer], {ANNOTATION_CREATED: created})


def workflow_manifest(
    *,
    file_digest: str,
    file_size: int,
    title: str,
    workflow_id: str | None,
    version: str | None,
    workflow_digest: str | None,
    publisher: str | None,
    created: str,
) -> Built:
    """Image manifest for a signed `.cal.json`: artifactType workflow.v1+json, one layer holding the
    file, manifest annotations for id, version, digest and publisher."""
    layer = _layer(WORKFLOW_LAYER_TYPE, file_digest, file_size, {ANNOTATION_TITLE: title})
    ann = {ANNOTATION_CREATED: created}
    for key, value in (
        (ANNOTATION_WORKFLOW_ID, workflow_id),
        (ANNOTATION_WORKFLOW_VERSION, version),
        (ANNOTATION_WORKFLOW_DIGEST, workflow_digest),
        (ANNOTATION_WORKFLOW_PUBLISHER, publisher),
    ):
        if value:
            ann[key] = value
    return _build(WORKFLOW_ARTIFACT_TYPE, [layer], ann)


def referrer_manifest(
    *,
    subject: Descriptor,
    artifact_type: str,
    file_digest: str,
    file_size: int,
    media_type: str,
    title: str | None,
    created: str,
    annotations: Mapping[str, str] | None = None,
) -> Built:
    """A referrer (for `acx attach`): empty config, one layer, `subject` = the target manifest."""
    layer = _layer(media_type, file_digest, file_size, {ANNOTATION_TITLE: title} if title else {})
    return _build(artifact_type, [layer], {ANNOTATION_CREATED: created, **dict(annotations or {})}, subject)


GRAPH_ARTIFACT_TYPE = "application/vnd.acx.agent-graph.v1+json"
GRAPH_LAYER_TYPE = "application/vnd.acx.agent-graph.v1+json"
ANNOTATION_GRAPH_ID = "vnd.acx.agent-graph.id"
ANNOTATION_GRAPH_VERSION = "vnd.acx.agent-graph.version"
ANNOTATION_GRAPH_DIGEST = "vnd.acx.agent-graph.digest"
ANNOTATION_GRAPH_PUBLISHER = "vnd.acx.agent-graph.publisher"


def graph_manifest(
    *,
    file_digest: str,
    file_size: int,
    title: str,
    graph_id: str | None,
    version: str | None,
    graph_digest: str | None,
    publisher: str | None,
    created: str,
) -> Built:
    """Image manifest for an Agent Graph (`.agent-graph.json`), shaped like a workflow's:
    artifactType agent-graph.v1+json, one layer holding the file, id/version/digest/publisher."""
    layer = _layer(GRAPH_LAYER_TYPE, file_digest, file_size, {ANNOTATION_TITLE: title})
    ann = {ANNOTATION_CREATED: created}
    for key, value in (
        (ANNOTATION_GRAPH_ID, graph_id),
        (ANNOTATION_GRAPH_VERSION, version),
        (ANNOTATION_GRAPH_DIGEST, graph_digest),
        (ANNOTATION_GRAPH_PUBLISHER, publisher),
    ):
        if value:
            ann[key] = value
    return _build(GRAPH_ARTIFACT_TYPE, [layer], ann)
