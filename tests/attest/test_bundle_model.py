"""Sigstore bundle v0.3: strict parse of real cosign bundles, build/parse round trip, and the
key-based verification rules cosign applies (keyid, hint, keyless and tlog reporting)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from acxoci.attest.bundle import (
    BUNDLE_V03,
    KeylessBundle,
    build_dsse_bundle,
    parse_bundle,
    verify_dsse_bundle,
)
from acxoci.attest.dsse import sign
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.keys import generate_ed25519, generate_p256, load_public_pem
from tests.harness.env import SHARED
from tests.harness.primitives import TLOG_ENTRY

SAMPLES = SHARED / "peers-samples"


def _sample(name: str) -> bytes:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"peer sample {name} not available")
    return path.read_bytes()


@pytest.mark.parametrize("name", ["cosign31-bundle.json", "cosign25-newbundle-bundle.json",
                                  "crafted-bundle.json", "cosign31-sign-bundle.json"])
def test_parses_real_cosign_bundles(name: str) -> None:
    b = parse_bundle(_sample(name))
    assert b.media_type == BUNDLE_V03
    assert b.material == "public-key" and not b.keyless
    assert b.envelope is not None and b.envelope.payload_type == "application/vnd.in-toto+json"
    assert b.tlog_entries == 0 and b.certificates_der == ()
    assert b.public_key_hint is not None and len(base64.b64decode(b.public_key_hint)) == 32


def test_verifies_crafted_sample_with_its_key() -> None:
    pub = load_public_pem(_sample("keys/p256.pub.pem"))
    b = parse_bundle(_sample("crafted-bundle.json"))
    assert verify_dsse_bundle(b, pub).notes == ()
    with pytest.raises(SignatureError):
        verify_dsse_bundle(b, generate_p256().public())


@pytest.mark.parametrize("gen", [generate_ed25519, generate_p256])
def test_build_roundtrip_shape(gen: Any) -> None:
    key = gen()
    env = sign("application/vnd.in-toto+json", b'{"x":1}', key, "should-be-dropped")
    doc = build_dsse_bundle(env, key.public())
    assert doc["mediaType"] == BUNDLE_V03
    assert doc["verificationMaterial"] == {"publicKey": {"hint": key.public().sigstore_hint()}}
    assert "keyid" not in doc["dsseEnvelope"]["signatures"][0]
    assert list(doc["dsseEnvelope"]) == ["payload", "payloadType", "signatures"]
    parsed = parse_bundle(json.dumps(doc).encode())
    assert verify_dsse_bundle(parsed, key.public()).signature.sig == env.signatures[0].sig


def _doc(key: Any = None) -> tuple[dict[str, Any], Any]:
    key = key or generate_p256()
    env = sign("application/vnd.in-toto+json", b'{"x":1}', key, None)
    return build_dsse_bundle(env, key.public()), key


def test_keyid_that_cosign_rejects() -> None:
    doc, key = _doc()
    doc["dsseEnvelope"]["signatures"][0]["keyid"] = "acx-key-1"
    with pytest.raises(MalformedError, match="keyid"):
        verify_dsse_bundle(parse_bundle(json.dumps(doc).encode()), key.public())
    doc["dsseEnvelope"]["signatures"][0]["keyid"] = ""
    verify_dsse_bundle(parse_bundle(json.dumps(doc).encode()), key.public())


def test_wrong_or_missing_hint_is_only_a_note() -> None:
    doc, key = _doc()
    doc["verificationMaterial"]["publicKey"]["hint"] = base64.b64encode(b"\0" * 32).decode()
    assert "hint" in verify_dsse_bundle(parse_bundle(json.dumps(doc).encode()), key.public()).notes[0]
    doc["verificationMaterial"]["publicKey"] = {}
    assert verify_dsse_bundle(parse_bundle(json.dumps(doc).encode()), key.public()).notes == ()


def test_tampered_payload_fails() -> None:
    doc, key = _doc()
    doc["dsseEnvelope"]["payload"] = base64.b64encode(b'{"x":2}').decode()
    with pytest.raises(SignatureError):
        verify_dsse_bundle(parse_bundle(json.dumps(doc).encode()), key.public())


def test_keyless_bundle_is_reported_not_verified() -> None:
    doc, key = _doc()
    doc["verificationMaterial"] = {"certificate": {"rawBytes": base64.b64encode(b"not really DER").decode()}}
    b = parse_bundle(json.dumps(doc).encode())
    assert b.keyless and b.material == "certificate" and b.certificates_der == (b"not really DER",)
    with pytest.raises(KeylessBundle):
        verify_dsse_bundle(b, key.public())


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda d: d.update(extra=1), "extra"),
    (lambda d: d.update(mediaType="application/json"), "mediaType"),
    (lambda d: d.pop("dsseEnvelope"), "exactly one of dsseEnvelope and messageSignature"),
    (lambda d: d["verificationMaterial"].update(certificate={"rawBytes": "AA=="}), "Exactly one"),
    (lambda d: d["dsseEnvelope"].update(signatures="x"), "signatures"),
])
def test_strict_shape(mutate: Any, needle: str) -> None:
    doc, _ = _doc()
    mutate(doc)
    with pytest.raises(MalformedError, match=needle):
        parse_bundle(json.dumps(doc).encode())


def test_duplicate_keys_rejected() -> None:
    doc, _ = _doc()
    raw = json.dumps(doc)
    dup = raw.replace('"mediaType"', '"mediaType": "x", "mediaType"', 1)
    with pytest.raises(MalformedError, match="duplicate"):
        parse_bundle(dup.encode())


def test_message_signature_bundle_is_not_an_attestation() -> None:
    doc, key = _doc()
    del doc["dsseEnvelope"]
    sig = key.sign(b"blob")
    doc["messageSignature"] = {"signature": base64.b64encode(sig).decode()}
    b = parse_bundle(json.dumps(doc).encode())
    assert b.envelope is None and b.message_signature == sig
    with pytest.raises(MalformedError):
        verify_dsse_bundle(b, key.public())


def test_tlog_entries_are_reported_as_not_verified() -> None:
    doc, key = _doc()
    doc["verificationMaterial"]["tlogEntries"] = [TLOG_ENTRY]
    b = parse_bundle(json.dumps(doc).encode())
    assert b.tlog_entries == 1 and "tlogEntries=1" in b.describe()
    notes = verify_dsse_bundle(b, key.public()).notes
    assert any("NOT verified" in n for n in notes)
