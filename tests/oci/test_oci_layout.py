"""LayoutStore: push/resolve/fetch/tag/referrers/delete, oras-shaped index.json, atomic and
serialised index updates, and reading an index written by oras."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest

from acxoci.oci.copy import copy
from acxoci.oci.descriptor import ANNOTATION_REF_NAME, OCI_MANIFEST, Descriptor
from acxoci.oci.errors import BlobNotFound, DigestMismatch, ManifestNotFound
from acxoci.oci.layout import LayoutStore
from acxoci.oci.shapes import EMPTY_CONFIG_BLOB, cartridge_manifest, referrer_manifest
from acxoci.oci.target import fetch_manifest, push_bytes

CREATED = "2026-01-02T03:04:05Z"


def _artifact(store: LayoutStore, payload: bytes, tag: str | None = "v1") -> Descriptor:
    layer = push_bytes(store, payload, "application/vnd.acx.cartridge.layer.v1+sqlite")
    push_bytes(store, EMPTY_CONFIG_BLOB, "application/vnd.oci.empty.v1+json")
    built = cartridge_manifest(
        file_digest=layer.digest, file_size=layer.size, title="c.acx", rom_digest=None, created=CREATED
    )
    desc = push_bytes(store, built.data, OCI_MANIFEST)
    if tag:
        store.tag(desc, tag)
    return desc


def _attach(
    store: LayoutStore, subject: Descriptor, body: bytes, at: str = "application/x.sig"
) -> Descriptor:
    layer = push_bytes(store, body, at)
    built = referrer_manifest(
        subject=subject,
        artifact_type=at,
        file_digest=layer.digest,
        file_size=layer.size,
        media_type=at,
        title="s.json",
        created=CREATED,
    )
    return push_bytes(store, built.data, OCI_MANIFEST)


def test_push_tag_resolve_referrers(tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "l")
    desc = _artifact(store, b"cartridge bytes")
    assert json.loads((tmp_path / "l" / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    assert store.resolve("v1").digest == desc.digest
    assert store.resolve(desc.digest).digest == desc.digest
    m = fetch_manifest(store, desc)
    assert m.artifact_type == "application/vnd.acx.cartridge.v1"
    r1 = _attach(store, desc, b"sig one")
    r2 = _attach(store, desc, b"sbom", "application/x.sbom")
    refs = store.referrers(desc)
    assert {r.digest for r in refs} == {r1.digest, r2.digest}
    assert [r.digest for r in store.referrers(desc, "application/x.sbom")] == [r2.digest]
    index = json.loads((tmp_path / "l" / "index.json").read_text())
    untagged = [e for e in index["manifests"] if ANNOTATION_REF_NAME not in e.get("annotations", {})]
    assert {e["digest"] for e in untagged} == {r1.digest, r2.digest}  # oras shape: untagged entries
    assert store.tags() == ["v1"]


def test_retag_keeps_old_manifest_listed_and_delete(tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "l")
    a = _artifact(store, b"one")
    b = _artifact(store, b"two")
    assert store.resolve("v1").digest == b.digest
    listed = [e.digest for e in store.entries()]
    assert a.digest in listed and listed.count(b.digest) == 1
    store.delete(b)
    with pytest.raises(ManifestNotFound):
        store.resolve("v1")
    with pytest.raises(BlobNotFound):
        store.fetch(b).read_all()


def test_corrupt_blob_is_detected(tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "l")
    desc = _artifact(store, b"payload")
    m = fetch_manifest(store, desc)
    path = tmp_path / "l" / "blobs" / "sha256" / m.layers[0].digest[7:]
    path.write_bytes(b"PAYLOAD")
    with pytest.raises(DigestMismatch):
        store.fetch(m.layers[0]).read_all()


def test_push_refuses_lying_content_and_leaves_no_blob(tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "l")
    desc = Descriptor("application/octet-stream", "sha256:" + "0" * 64, 3)
    with pytest.raises(DigestMismatch):
        store.push(desc, io.BytesIO(b"abc"))
    assert [p.name for p in (tmp_path / "l" / "blobs" / "sha256").iterdir()] == []


def test_concurrent_index_updates_lose_nothing(tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "l")
    subject = _artifact(store, b"subject")
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            _attach(LayoutStore(tmp_path / "l"), subject, f"sig {i}".encode())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store.referrers(subject)) == 12


def test_reads_oras_index_and_copies_between_layouts(tmp_path: Path) -> None:
    src = LayoutStore(tmp_path / "a")
    desc = _artifact(src, b"x" * 5000)
    ref = _attach(src, desc, b"sig")
    # rewrite index.json exactly in oras' shape (artifactType after annotations, ref.name last)
    index = json.loads((tmp_path / "a" / "index.json").read_text())
    (tmp_path / "a" / "index.json").write_text(json.dumps(index, indent=1))
    dst = LayoutStore(tmp_path / "b")
    report = copy(src, dst, "v1")
    assert report.referrers == [ref.digest]
    assert dst.resolve("v1").digest == desc.digest
    assert [r.digest for r in dst.referrers(desc)] == [ref.digest]
    again = copy(src, dst, "v1")
    assert again.bytes_copied == 0
