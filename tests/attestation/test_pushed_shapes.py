"""The attestation tests' push helpers (tests/harness/attestations.py) produce the brief §11 shapes."""

from __future__ import annotations

from pathlib import Path

from acxoci.attest.canonical import sha256_digest
from acxoci.oci.target import fetch_manifest
from tests.harness.attestations import CARTRIDGE_ARTIFACT, push_cartridge


def test_push_cartridge_shape(tmp_path: Path, vectors_dir: Path) -> None:
    from acxoci.oci.layout import LayoutStore
    store = LayoutStore(tmp_path / "layout")
    desc = push_cartridge(store, vectors_dir / "sample" / "sample.acx")
    m = fetch_manifest(store, desc)
    assert m.artifact_type == CARTRIDGE_ARTIFACT
    assert m.layers[0].digest == sha256_digest((vectors_dir / "sample" / "sample.acx").read_bytes())
    assert store.resolve("v1").digest == desc.digest
