"""Strict manifest/index/descriptor parsing, the 4 MiB limit, and the peers' real manifests."""

from __future__ import annotations

import json

import pytest

from acxoci.oci.descriptor import (
    EMPTY_DIGEST,
    OCI_INDEX,
    OCI_MANIFEST,
    Descriptor,
    parse_manifest,
    referrer_entry,
)
from acxoci.oci.errors import MalformedManifest, ManifestTooLarge
from tests.harness import env

SAMPLES = env.SHARED / "peers-samples"
D = "sha256:" + "b" * 64


def _m(**kw: object) -> bytes:
    m: dict[str, object] = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2},
        "layers": [],
    }
    m.update(kw)
    return json.dumps(m).encode()


@pytest.mark.parametrize(
    "name",
    [
        "oras13-push-manifest.json",
        "oras13-attach-manifest.json",
        "cosign31-bundle-referrer-manifest.json",
        "referrers-fallback-index.by-cosign31.json",
        "referrers-fallback-index.docker-registry.json",
        "oras13-oci-layout-index.json",
    ],
)
def test_parses_real_peer_documents(name: str) -> None:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    m = parse_manifest(path.read_bytes(), where=name)
    if m.is_index:
        assert all(d.digest.startswith("sha256:") for d in m.manifests)
    else:
        assert m.config is not None and m.layers


def test_attach_manifest_subject_and_entry() -> None:
    path = SAMPLES / "oras13-attach-manifest.json"
    if not path.exists():
        pytest.skip("no sample")
    data = path.read_bytes()
    m = parse_manifest(data)
    assert m.subject is not None and m.subject.media_type == OCI_MANIFEST
    entry = referrer_entry(Descriptor(OCI_MANIFEST, D, len(data)), m).to_json()
    assert entry["artifactType"] == "application/vnd.dsse.envelope.v1+json"
    assert "org.opencontainers.image.created" in entry["annotations"]


@pytest.mark.parametrize(
    "data",
    [
        b'{"schemaVersion":2,"schemaVersion":2}',  # duplicate key
        b"[]",
        b"{",
        b'{"schemaVersion":1}',
        _m(mediaType="application/x-unknown"),
        _m(layers=[{"mediaType": "x", "digest": "sha256:zz", "size": 1}]),
        _m(layers=[{"mediaType": "x", "digest": D, "size": -1}]),
        _m(layers=[{"mediaType": "x", "digest": D, "size": True}]),
        _m(annotations={"a": 1}),
        _m(
            config={
                "mediaType": "application/vnd.oci.empty.v1+json",
                "digest": EMPTY_DIGEST,
                "size": 2,
                "data": "W10=",
            }
        ),
        json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX}).encode(),
    ],
)
def test_malformed(data: bytes) -> None:
    with pytest.raises(MalformedManifest):
        parse_manifest(data)


def test_media_type_must_match_descriptor_and_size_limit() -> None:
    with pytest.raises(MalformedManifest):
        parse_manifest(_m(), media_type=OCI_INDEX)
    with pytest.raises(ManifestTooLarge):
        parse_manifest(b" " * (4 * 1024 * 1024 + 1))


def test_descriptor_roundtrip_keeps_unknown_fields() -> None:
    obj = {"mediaType": OCI_MANIFEST, "digest": D, "size": 3, "platform": {"os": "linux"}, "urls": ["x"]}
    d = Descriptor.from_json(obj, "t")
    assert d.to_json() == obj
    assert d.plain().to_json() == {"mediaType": OCI_MANIFEST, "digest": D, "size": 3}


@pytest.mark.parametrize("alg", ["sha256", "sha512"])
def test_embedded_data_is_proven_against_the_digest_whatever_the_algorithm(alg: str) -> None:
    """`data` is used instead of a fetch (fetch_bytes), so a registry must not be able to embed
    other bytes under a digest of either algorithm."""
    import base64
    import hashlib

    good, evil = b'{"a":1}', b'{"a":2}'
    digest = f"{alg}:" + hashlib.new(alg, good).hexdigest()

    def desc(data: bytes) -> dict[str, object]:
        return {"mediaType": "application/json", "digest": digest, "size": len(data),
                "data": base64.b64encode(data).decode()}

    assert Descriptor.from_json(desc(good), "t").data == good
    with pytest.raises(MalformedManifest, match="embedded data"):
        Descriptor.from_json(desc(evil), "t")
