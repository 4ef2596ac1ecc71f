"""Wire shapes: our legacy `.att` manifest/config are byte-identical to cosign 2.5's for the same
envelope; bundle/envelope referrers carry what PEERS §5 says cosign needs; referrer classification
looks at layers, not at the listing's artifactType."""

from __future__ import annotations

import json

import pytest

from acxoci.attest.bundle import BUNDLE_V03
from acxoci.attestation.formats import (
    COSIGN_SIGNATURE_ANNOTATION,
    DSSE_MEDIA_TYPE,
    build_bundle_referrer,
    build_envelope_referrer,
    build_legacy_manifest,
    classify_referrer,
    legacy_layer,
    legacy_layers,
    legacy_tag,
)
from acxoci.attestation.statements import (
    CARTRIDGE_PREDICATE_TYPE,
    CartridgeFacts,
    cartridge_statement,
    subject_matches,
    workflow_digest,
)
from acxoci.errors import InvalidInput
from acxoci.oci.descriptor import EMPTY_DIGEST, OCI_MANIFEST, Descriptor, parse_manifest
from tests.harness.env import SHARED

SAMPLES = SHARED / "peers-samples"
SUBJECT = Descriptor(OCI_MANIFEST, "sha256:" + "ab" * 32, 594)


def _sample(name: str) -> bytes:
    if not (SAMPLES / name).exists():
        pytest.skip(f"peer sample {name} not available")
    return (SAMPLES / name).read_bytes()


def test_legacy_bytes_equal_cosign25() -> None:
    envelope = _sample("cosign25-legacy-att-envelope.json")
    layer, _ = legacy_layer(envelope, CARTRIDGE_PREDICATE_TYPE)
    built = build_legacy_manifest([layer])
    assert built.blobs[0].data == _sample("cosign25-legacy-att-config.json")
    assert built.manifest.data == _sample("cosign25-legacy-att-manifest.json")


def test_legacy_layers_need_the_cosign_annotation() -> None:
    m = parse_manifest(_sample("cosign25-legacy-att-manifest.json"))
    assert [la.predicate_type for la in legacy_layers(m)] == [CARTRIDGE_PREDICATE_TYPE]
    raw = json.loads(_sample("cosign25-legacy-att-manifest.json"))
    del raw["layers"][0]["annotations"][COSIGN_SIGNATURE_ANNOTATION]
    assert legacy_layers(parse_manifest(json.dumps(raw).encode())) == []


def test_legacy_tag() -> None:
    assert legacy_tag("sha256:" + "0f" * 32) == "sha256-" + "0f" * 32 + ".att"


def test_two_layers_in_config() -> None:
    a, _ = legacy_layer(b'{"a":1}', "t1")
    b, _ = legacy_layer(b'{"b":2}', "t2")
    built = build_legacy_manifest([a, b])
    cfg = json.loads(built.blobs[0].data)
    assert cfg["rootfs"]["diff_ids"] == [a.desc.digest, b.desc.digest]
    assert len(cfg["history"]) == 2
    with pytest.raises(ValueError):
        build_legacy_manifest([])


def test_bundle_referrer_shape() -> None:
    built = build_bundle_referrer(b'{"x":1}', SUBJECT, CARTRIDGE_PREDICATE_TYPE,
                                  created="2026-11-30T00:00:00Z")
    m = json.loads(built.manifest.data)
    assert m["subject"] == {"mediaType": OCI_MANIFEST, "size": 594, "digest": SUBJECT.digest}
    assert m["layers"][0]["mediaType"] == BUNDLE_V03
    assert m["config"]["digest"] == EMPTY_DIGEST
    assert m["artifactType"] == BUNDLE_V03
    assert {b.desc.digest for b in built.blobs} == {EMPTY_DIGEST, m["layers"][0]["digest"]}
    kind, layer = classify_referrer(parse_manifest(built.manifest.data))
    assert kind == "bundle" and layer is not None and layer.digest == m["layers"][0]["digest"]


def test_cosign_bundle_referrer_is_classified_by_layer() -> None:
    kind, _ = classify_referrer(parse_manifest(_sample("cosign31-bundle-referrer-manifest.json")))
    assert kind == "bundle"
    # the oras-attached DSSE envelope is an `envelope` referrer; the cosign signature referrer is not ours
    assert classify_referrer(parse_manifest(_sample("oras13-attach-manifest.json")))[0] == "envelope"
    sig = parse_manifest(_sample("cosign25-sign-oci11-referrer-manifest.json"))
    assert classify_referrer(sig)[0] == "other"


def test_envelope_referrer_shape() -> None:
    built = build_envelope_referrer(b'{"payload":""}', SUBJECT, created="2026-11-30T00:00:00Z")
    m = json.loads(built.manifest.data)
    assert m["artifactType"] == DSSE_MEDIA_TYPE and m["layers"][0]["mediaType"] == DSSE_MEDIA_TYPE
    assert classify_referrer(parse_manifest(built.manifest.data))[0] == "envelope"


def test_cartridge_statement_binds_oci_digest_and_rom() -> None:
    facts = CartridgeFacts("sha256:" + "11" * 32, "sha256:" + "11" * 32, "io.github.x",
                           "sha256:" + "22" * 32, 3, "2026-01-01T00:00:00Z", "sha256:" + "33" * 32)
    stmt = cartridge_statement(SUBJECT.digest, "127.0.0.1:5000/acx/demo", facts)
    doc = json.loads(stmt.canonical_bytes())
    assert doc["_type"] == "https://in-toto.io/Statement/v1"
    assert doc["subject"] == [{"name": "127.0.0.1:5000/acx/demo", "digest": {"sha256": "ab" * 32}}]
    assert doc["predicate"]["romDigest"] == facts.rom_digest
    assert doc["predicate"]["layerDigest"] == facts.layer_digest
    assert subject_matches(stmt, SUBJECT.digest) and not subject_matches(stmt, "sha256:" + "00" * 32)
    with pytest.raises(InvalidInput):
        cartridge_statement("sha512:abc", "x", facts)


def test_workflow_digest_ignores_integrity_and_key_order() -> None:
    a = {"id": "x", "nodes": [1, 2], "integrity": {"sig": "1"}}
    b = {"nodes": [1, 2], "id": "x"}
    assert workflow_digest(a) == workflow_digest(b)
    assert workflow_digest(a) != workflow_digest({"id": "y", "nodes": [1, 2]})
