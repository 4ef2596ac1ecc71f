"""The requests a registry → registry `copy` makes per blob, counted on two of our own loopback
registries: the destination is asked once whether it has each blob (the upload that follows
does not ask again), a blob it already has is neither fetched nor uploaded, and a blob that
appears between the copy's question and its upload is still stored once, with its digest."""

from __future__ import annotations

import io
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from acxoci.oci.copy import copy
from acxoci.oci.descriptor import OCI_MANIFEST, Descriptor
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.settings import RemoteOptions
from tests.harness.memregistry import MemRegistry

OPTS = RemoteOptions(plain_http=True)
EMPTY = "application/vnd.oci.empty.v1+json"


@pytest.fixture
def pair() -> Iterator[tuple[MemRegistry, MemRegistry, list[str]]]:
    """A source holding an artifact of three random blobs at `a/b:v1`, and an empty destination."""
    src, dst = MemRegistry().start(), MemRegistry().start()
    try:
        blobs = [os.urandom(50_000 + i) for i in range(3)]
        digests = [src.add_blob(b) for b in blobs]
        config = src.add_blob(b"{}")
        src.add_manifest(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "artifactType": "application/x.test",
                "config": {"mediaType": EMPTY, "digest": config, "size": 2},
                "layers": [
                    {"mediaType": "application/octet-stream", "digest": d, "size": len(b)}
                    for d, b in zip(digests, blobs, strict=True)
                ],
            },
            tag="v1",
        )
        yield src, dst, [config, *digests]
    finally:
        src.stop()
        dst.stop()


def _copy(src: MemRegistry, dst: MemRegistry) -> None:
    copy(
        RegistryTarget(parse_reference(f"{src.host}/a/b:v1"), OPTS),
        RegistryTarget(parse_reference(f"{dst.host}/c/d:v1"), OPTS),
        "v1",
        referrers=False,
    )


def _per_blob(reg: MemRegistry, method: str) -> Counter[str]:
    return Counter(
        r.path.rsplit("/", 1)[1] for r in reg.seen if r.method == method and "/blobs/sha256:" in r.path
    )


Pair = tuple[MemRegistry, MemRegistry, list[str]]


def test_each_blob_is_asked_about_once_and_uploaded_once(pair: Pair) -> None:
    src, dst, digests = pair
    _copy(src, dst)
    assert _per_blob(dst, "HEAD") == Counter({d: 1 for d in digests})
    puts = Counter(r.path.split("digest=")[-1].replace("%3A", ":") for r in dst.seen if r.method == "PUT"
                   and "/blobs/uploads/" in r.path)
    assert puts == Counter({d: 1 for d in digests})
    # the empty config `{}` is known bytes: never fetched
    assert _per_blob(src, "GET") == Counter({d: 1 for d in digests[1:]})
    assert all(dst.blobs[d] == src.blobs[d] for d in digests)


def test_a_second_copy_fetches_and_uploads_nothing(pair: Pair) -> None:
    src, dst, _ = pair
    _copy(src, dst)
    src.reset_counts()
    dst.reset_counts()
    _copy(src, dst)
    assert not _per_blob(src, "GET")
    assert not [r for r in dst.seen if r.method in ("POST", "PUT", "PATCH") and "/blobs/" in r.path]


def test_the_absent_mark_is_used_once(pair: Pair) -> None:
    """A HEAD's "missing" spares only the upload right after it: a later push of the same blob
    through the same target asks again (and skips the upload when the blob is there by then)."""
    src, dst, digests = pair
    target = RegistryTarget(parse_reference(f"{dst.host}/c/d:v1"), OPTS)
    data = src.blobs[digests[1]]
    desc = Descriptor("application/octet-stream", digests[1], len(data))
    assert not target.exists(desc)
    target.push(desc, io.BytesIO(data))  # no second HEAD
    target.push(desc, io.BytesIO(data))  # asks, finds it, uploads nothing
    heads = [r for r in dst.seen if r.method == "HEAD"]
    posts = [r for r in dst.seen if r.method == "POST"]
    assert len(heads) == 2
    assert len(posts) == 1
    assert dst.blobs[digests[1]] == data


def test_a_blob_uploaded_after_its_probe_is_not_uploaded_again(pair: Pair, tmp_path: Path) -> None:
    """The hash-while-uploading path HEADs the blob once its digest is known (a miss) and then
    finishes the upload: the blob is stored, so a later push of it asks and uploads nothing."""
    _, dst, _ = pair
    small_chunks = RemoteOptions(plain_http=True, chunk_size=1 << 20)
    target = RegistryTarget(parse_reference(f"{dst.host}/c/d:v1"), small_chunks)
    big = tmp_path / "big.bin"
    data = os.urandom(3 << 20)
    big.write_bytes(data)
    desc = target.push_file_hashing(big, "application/octet-stream")
    assert dst.blobs[desc.digest] == data
    posts = len([r for r in dst.seen if r.method == "POST"])
    target.push(desc, io.BytesIO(data))
    assert len([r for r in dst.seen if r.method == "POST"]) == posts
    assert [r.method for r in dst.seen][-1] == "HEAD"
