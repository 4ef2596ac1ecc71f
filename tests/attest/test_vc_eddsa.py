"""eddsa-jcs-2022 Data Integrity proofs: base58btc, the reference vector, and an independent W3C check."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.attest import vc
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.keys import generate_ed25519, load_public_pem


def _vc_min(vectors_dir: Path) -> tuple[dict[str, Any], bytes]:
    doc = json.loads((vectors_dir / "level" / "vc-min.json").read_text(encoding="utf-8"))
    pem = (vectors_dir / "level" / "vc-min.pub.pem").read_bytes()
    return doc, pem


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        (b"", ""),
        (b"\x00", "1"),
        (b"\x00\x00\x01", "112"),
        (b"Hello World!", "2NEpo7TZRRrLZSi2U"),
        (bytes.fromhex("0000287fb4cd"), "11233QC4"),
    ],
)
def test_base58btc_known_values(raw: bytes, encoded: str) -> None:
    assert vc.b58encode(raw) == encoded
    assert vc.b58decode(encoded) == raw


def test_base58_roundtrip_random_and_rejects_bad_alphabet() -> None:
    import os

    for n in range(0, 80, 7):
        data = b"\x00" * (n % 3) + os.urandom(n)
        assert vc.b58decode(vc.b58encode(data)) == data
    for bad in ("0abc", "Oops", "Il", "z+"):
        with pytest.raises(MalformedError):
            vc.b58decode(bad)
    with pytest.raises(MalformedError, match="must start with 'z'"):
        vc.multibase_b58btc_decode("u" + vc.b58encode(b"abc"))


def test_vc_min_verifies_with_reference_variant(vectors_dir: Path) -> None:
    doc, pem = _vc_min(vectors_dir)
    key = load_public_pem(pem)
    res = vc.verify(doc, key, variant="acx")
    assert res.variant == "acx"
    assert res.verification_method == "did:web:verifier.example#key-1"
    assert vc.verify(doc, key).variant == "acx"  # auto-detect says which variant verified
    with pytest.raises(SignatureError):
        vc.verify(doc, key, variant="w3c")  # the reference omits @context: a W3C check must fail


def test_vc_min_tampered_fails(vectors_dir: Path) -> None:
    doc, pem = _vc_min(vectors_dir)
    doc["credentialSubject"]["result"][0]["acx:acxLevel"] = 31
    with pytest.raises(SignatureError):
        vc.verify(doc, load_public_pem(pem))


def _independent_w3c_verify(secured: dict[str, Any], public_key: ed25519.Ed25519PublicKey) -> bool:
    """vc-di-eddsa §3.3.2 Verify Proof (eddsa-jcs-2022), written here from the spec's steps."""
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    # 1. unsecuredDocument = securedDocument without proof.
    unsecured = {k: v for k, v in secured.items() if k != "proof"}
    # 2. proofOptions = proof without proofValue.
    proof_options = {k: v for k, v in secured["proof"].items() if k != "proofValue"}
    # 3. proofBytes = multibase (base58btc, 'z') decode of proofValue.
    pv = secured["proof"]["proofValue"]
    assert pv[0] == "z"
    num = 0
    for ch in pv[1:]:
        num = num * 58 + alphabet.index(ch)
    body = num.to_bytes((num.bit_length() + 7) // 8, "big")
    proof_bytes = b"\x00" * (len(pv[1:]) - len(pv[1:].lstrip("1"))) + body
    # 4. If proofOptions has @context it must prefix the document's; otherwise none to check.
    # 5. Transformation: JCS of the unsecured document.
    transformed = rfc8785.dumps(unsecured)
    # 6. Proof configuration: options with the document's @context, then JCS.
    assert proof_options["type"] == "DataIntegrityProof"
    assert proof_options["cryptosuite"] == "eddsa-jcs-2022"
    proof_config = dict(proof_options)
    proof_config["@context"] = unsecured["@context"]
    canonical_config = rfc8785.dumps(proof_config)
    # 7. Hashing: sha256(config) || sha256(document).
    hash_data = hashlib.sha256(canonical_config).digest() + hashlib.sha256(transformed).digest()
    # 8. Ed25519 verification.
    try:
        public_key.verify(proof_bytes, hash_data)
    except InvalidSignature:
        return False
    return True


def _doc() -> dict[str, Any]:
    return {
        "@context": ["https://www.w3.org/ns/credentials/v2"],
        "type": ["VerifiableCredential"],
        "issuer": "did:web:issuer.example",
        "validFrom": "2026-01-01T00:00:00Z",
        "credentialSubject": {"id": "urn:x", "name": "Jürgen — ø"},
    }


def test_w3c_signed_verifies_with_independent_spec_check() -> None:
    key = generate_ed25519()
    secured = vc.sign(
        _doc(), key, verification_method="did:web:issuer.example#key-1", created="2026-01-01T00:00:00Z"
    )
    pk = load_pem_public_key(key.public().spki_pem().encode())
    assert isinstance(pk, ed25519.Ed25519PublicKey)
    assert _independent_w3c_verify(secured, pk)
    assert vc.verify(secured, key.public()).variant == "w3c"
    with pytest.raises(SignatureError):
        vc.verify(secured, key.public(), variant="acx")
    tampered = copy.deepcopy(secured)
    tampered["credentialSubject"]["name"] = "Mallory"
    assert not _independent_w3c_verify(tampered, pk)
    with pytest.raises(SignatureError):
        vc.verify(tampered, key.public())


def test_acx_variant_sign_roundtrip_and_wrong_key() -> None:
    key = generate_ed25519()
    secured = vc.sign(
        _doc(),
        key,
        verification_method="did:web:issuer.example#key-1",
        created="2026-01-01T00:00:00Z",
        variant="acx",
    )
    assert vc.verify(secured, key.public()).variant == "acx"
    with pytest.raises(SignatureError):
        vc.verify(secured, generate_ed25519().public())


def test_proof_context_must_prefix_document_context() -> None:
    key = generate_ed25519()
    secured = vc.sign(
        _doc(), key, verification_method="did:web:issuer.example#key-1", created="2026-01-01T00:00:00Z"
    )
    with_ctx = copy.deepcopy(secured)
    with_ctx["proof"]["@context"] = ["https://example.org/other"]
    with pytest.raises(SignatureError):
        vc.verify(with_ctx, key.public(), variant="w3c")


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("cryptosuite", "ecdsa-jcs-2019", "cryptosuite"),
        ("type", "Ed25519Signature2020", "proof.type"),
        ("created", "yesterday", "dateTime"),
        ("proofValue", "uAAAA", "base58btc"),
        ("proofValue", "z" + vc.b58encode(b"\x01" * 10), "64"),
    ],
)
def test_malformed_proofs_are_typed_errors(field: str, value: str, match: str) -> None:
    key = generate_ed25519()
    secured = vc.sign(
        _doc(), key, verification_method="did:web:issuer.example#key-1", created="2026-01-01T00:00:00Z"
    )
    secured["proof"][field] = value
    with pytest.raises(MalformedError, match=match):
        vc.verify(secured, key.public())


def test_p256_key_refused() -> None:
    from acxoci.attest.keys import generate_p256

    with pytest.raises(MalformedError, match="Ed25519"):
        vc.sign(_doc(), generate_p256(), verification_method="did:x#k", created="2026-01-01T00:00:00Z")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=96))
def test_base58_roundtrip_property(data: bytes) -> None:
    enc = vc.b58encode(data)
    assert vc.b58decode(enc) == data
    assert len(enc) - len(enc.lstrip("1")) == len(data) - len(data.lstrip(b"\x00"))


def test_proof_context_must_prefix_the_document_context() -> None:
    # vc-di-eddsa: a proof may carry the document's @context; it must be a prefix of it and then applies
    key = generate_ed25519()
    doc = {"@context": ["https://www.w3.org/ns/credentials/v2", "https://example.com/ctx/v1"],
           "type": ["VerifiableCredential"], "issuer": "did:web:i.example", "credentialSubject": {"id": "x"}}
    signed = vc.sign(doc, key, verification_method="did:web:i.example#key-1", created="2026-01-01T00:00:00Z")
    same = copy.deepcopy(signed)
    same["proof"]["@context"] = list(doc["@context"])
    assert vc.verify(same, key.public(), variant="w3c").variant == "w3c"
    for other in (["https://example.com/ctx/v1"], ["https://www.w3.org/ns/credentials/v2", "https://x.example"],
                  [*doc["@context"], "https://more.example"]):
        moved = copy.deepcopy(signed)
        moved["proof"]["@context"] = other
        with pytest.raises(SignatureError):
            vc.verify(moved, key.public(), variant="w3c")
    assert vc.verify(signed, key.public(), variant="w3c").variant == "w3c"


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("verificationMethod", 5, "proof.verificationMethod is missing"),
        ("verificationMethod", "", "proof.verificationMethod is missing"),
        ("proofPurpose", ["assertionMethod"], "proof.proofPurpose is missing"),
        ("proofPurpose", "", "proof.proofPurpose is missing"),
        ("created", "yesterday", "is not an XML Schema dateTime"),
        ("created", 5, "is not an XML Schema dateTime"),
        ("type", "Ed25519Signature2020", "proof.type is 'Ed25519Signature2020'"),
        ("cryptosuite", "eddsa-rdfc-2022", "proof.cryptosuite is 'eddsa-rdfc-2022'"),
    ],
)
def test_proof_options_are_checked_each(field: str, value: Any, match: str) -> None:
    key = generate_ed25519()
    signed = vc.sign(_doc(), key, verification_method="did:web:issuer.example#key-1",
                     created="2026-01-01T00:00:00Z")
    signed["proof"][field] = value
    with pytest.raises(MalformedError, match=match):
        vc.verify(signed, key.public())
