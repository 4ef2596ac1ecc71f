"""Artifact shapes: deterministic bytes, the oras-compatible structure, and the ACX annotations."""

from __future__ import annotations

import json

import pytest

from acxoci.oci.descriptor import EMPTY_DIGEST, OCI_MANIFEST, Descriptor, parse_manifest
from acxoci.oci.shapes import (
    CARTRIDGE_ARTIFACT_TYPE,
    CARTRIDGE_LAYER_TYPE,
    WORKFLOW_ARTIFACT_TYPE,
    cartridge_manifest,
    referrer_manifest,
    workflow_manifest,
)
from tests.harness import env

D = "sha256:" + "c" * 64
ROM = "sha256:" + "d" * 64


def test_cartridge_manifest_is_deterministic_and_shaped_like_oras() -> None:
    a = cartridge_manifest(
        file_digest=D, file_size=12288, title="cart.acx", rom_digest=ROM, created="2026-11-30T00:24:59Z"
    )
    b = cartridge_manifest(
        file_digest=D, file_size=12288, title="cart.acx", rom_digest=ROM, created="2026-11-30T00:24:59Z"
    )
    assert a.data == b.data and a.descriptor.digest == b.descriptor.digest
    c = cartridge_manifest(
        file_digest=D, file_size=12288, title="cart.acx", rom_digest=ROM, created="2026-11-30T00:25:00Z"
    )
    assert c.descriptor.digest != a.descriptor.digest
    m = parse_manifest(a.data)
    assert m.artifact_type == CARTRIDGE_ARTIFACT_TYPE
    assert m.config is not None and m.config.digest == EMPTY_DIGEST and m.config.data == b"{}"
    assert m.layers[0].media_type == CARTRIDGE_LAYER_TYPE
    assert m.layers[0].annotations == {
        "org.opencontainers.image.title": "cart.acx",
        "vnd.acx.rom-manifest-hash": ROM,
        "vnd.acx.spec-version": "0.1",
    }
    assert m.annotations == {"org.opencontainers.image.created": "2026-11-30T00:24:59Z"}
    sample = env.SHARED / "peers-samples" / "oras13-push-manifest.json"
    if sample.exists():
        oras = json.loads(sample.read_text())
        ours = json.loads(a.data)
        assert list(ours) == list(oras)  # same key order as oras
        assert ours["config"] == oras["config"]


def test_workflow_and_referrer_manifests() -> None:
    w = workflow_manifest(
        file_digest=D,
        file_size=10,
        title="t.cal.json",
        workflow_id="team",
        version="1.0.0",
        workflow_digest=ROM,
        publisher="io.github.x",
        created="2026-01-01T00:00:00Z",
    )
    m = parse_manifest(w.data)
    assert m.artifact_type == WORKFLOW_ARTIFACT_TYPE
    assert m.annotations["vnd.acx.workflow.id"] == "team"
    assert m.annotations["vnd.acx.workflow.publisher"] == "io.github.x"
    subject = Descriptor(OCI_MANIFEST, D, 594)
    r = referrer_manifest(
        subject=subject,
        artifact_type="application/vnd.dsse.envelope.v1+json",
        file_digest=ROM,
        file_size=5,
        media_type="application/vnd.dsse.envelope.v1+json",
        title="e.json",
        created="2026-01-01T00:00:00Z",
    )
    rm = parse_manifest(r.data)
    assert rm.subject == subject
    assert [b.digest for b in r.blobs] == [EMPTY_DIGEST, ROM]


@pytest.mark.parametrize("rom", [None, ROM])
def test_optional_rom_annotation(rom: str | None) -> None:
    m = parse_manifest(
        cartridge_manifest(
            file_digest=D, file_size=1, title="x", rom_digest=rom, created="2026-01-01T00:00:00Z"
        ).data
    )
    assert ("vnd.acx.rom-manifest-hash" in m.layers[0].annotations) == (rom is not None)
