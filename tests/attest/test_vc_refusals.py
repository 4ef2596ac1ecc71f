"""eddsa-jcs-2022 proofs and Bitstring Status Lists: every refusal's whole message, the proof
`@context` rule in both list and string forms, what `split_proof`/`hash_data` return, and what
signing leaves of its input. The messages are compared whole because `acx level verify` and the
status-list checks show them to the user (wrapped as `status list credential: …`)."""

from __future__ import annotations

import base64
import copy
import gzip
import io
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from acxoci.attest import statuslist, vc
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.keys import PrivateKey, generate_ed25519, generate_p256

VM = "did:web:issuer.example#key-1"
CREATED = "2026-01-01T00:00:00Z"
V2 = "https://www.w3.org/ns/credentials/v2"


def _doc(context: Any = None) -> dict[str, Any]:
    return {
        "@context": [V2] if context is None else context,
        "type": ["VerifiableCredential"],
        "issuer": "did:web:issuer.example",
        "credentialSubject": {"id": "urn:x", "tags": ["a", "b"]},
    }


def _signed(key: PrivateKey, doc: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return vc.sign(_doc() if doc is None else doc, key, verification_method=VM, created=CREATED, **kw)


def _malformed(fn: Any, *args: Any, **kw: Any) -> str:
    with pytest.raises(MalformedError) as err:
        fn(*args, **kw)
    return str(err.value)


# base58 / multibase

def test_base58_refusals_say_what_and_where() -> None:
    assert _malformed(vc.b58decode, 58) == "base58 value is not a string"
    assert _malformed(vc.b58decode, "1" * (vc.MAX_B58_CHARS + 1)) == (
        f"base58 value of {vc.MAX_B58_CHARS + 1} characters exceeds {vc.MAX_B58_CHARS}")
    assert _malformed(vc.b58decode, "abc0de") == "invalid base58 character '0' at position 3"
    expected = "proofValue is not multibase base58btc (must start with 'z')"
    assert _malformed(vc.multibase_b58btc_decode, "u" + vc.b58encode(b"abc")) == expected
    assert _malformed(vc.multibase_b58btc_decode, None) == expected


def test_base58_length_limit_is_inclusive() -> None:
    assert vc.b58decode("1" * vc.MAX_B58_CHARS) == b"\x00" * vc.MAX_B58_CHARS
    assert vc.b58decode("") == b""
    assert vc.b58decode("2") == b"\x01"


# proof options and variants

@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("type", "Ed25519Signature2020",
         "proof.type is 'Ed25519Signature2020', expected 'DataIntegrityProof'"),
        ("type", None, "proof.type is None, expected 'DataIntegrityProof'"),
        ("cryptosuite", "eddsa-rdfc-2022",
         "proof.cryptosuite is 'eddsa-rdfc-2022', expected 'eddsa-jcs-2022'"),
        ("created", "yesterday", "proof.created 'yesterday' is not an XML Schema dateTime"),
        ("created", 5, "proof.created 5 is not an XML Schema dateTime"),
        ("verificationMethod", "", "proof.verificationMethod is missing"),
        ("proofPurpose", None, "proof.proofPurpose is missing"),
    ],
)
def test_proof_option_refusals_are_whole_messages(field: str, value: Any, message: str) -> None:
    key = generate_ed25519()
    secured = _signed(key)
    if value is None:
        del secured["proof"][field]
    else:
        secured["proof"][field] = value
    assert _malformed(vc.verify, secured, key.public()) == message


def test_unknown_variant_is_named() -> None:
    key = generate_ed25519()
    bogus = cast(Any, "jws")
    assert _malformed(vc.sign, _doc(), key, verification_method=VM, created=CREATED,
                      variant=bogus) == "unknown eddsa-jcs-2022 variant 'jws'"
    assert _malformed(vc.verify, _signed(key), key.public(),
                      variant=bogus) == "unknown eddsa-jcs-2022 variant 'jws'"


def test_non_ed25519_keys_and_documents_are_refused_by_name() -> None:
    p256 = generate_p256()
    key = generate_ed25519()
    assert _malformed(vc.sign, _doc(), p256, verification_method=VM,
                      created=CREATED) == "eddsa-jcs-2022 needs an Ed25519 key"
    assert _malformed(vc.verify, _signed(key), p256.public()) == "eddsa-jcs-2022 needs an Ed25519 key"
    assert _malformed(vc.sign, [_doc()], key, verification_method=VM,
                      created=CREATED) == "document to sign is not a JSON object"


def test_signature_failure_names_the_variants_tried() -> None:
    key, other = generate_ed25519(), generate_ed25519()
    secured = _signed(key)
    for variant, tried in (("auto", "w3c/acx"), ("w3c", "w3c"), ("acx", "acx")):
        with pytest.raises(SignatureError) as err:
            vc.verify(secured, other.public(), variant=cast(Any, variant))
        assert str(err.value) == f"eddsa-jcs-2022 proof does not verify ({tried} variant)"


def test_proof_result_reports_the_signed_fields() -> None:
    key = generate_ed25519()
    secured = vc.sign(_doc(), key, verification_method=VM, created=CREATED, proof_purpose="authentication")
    assert vc.verify(secured, key.public()) == vc.ProofResult("w3c", VM, CREATED, "authentication")
    # a proof without `created` (optional in the spec) verifies and reports None
    unsecured = _doc()
    options = {"type": vc.PROOF_TYPE, "cryptosuite": vc.CRYPTOSUITE, "verificationMethod": VM,
               "proofPurpose": "assertionMethod"}
    sig = key.sign(vc.hash_data(unsecured, options, "w3c"))
    undated = {**unsecured, "proof": {**options, "proofValue": vc.multibase_b58btc_encode(sig)}}
    assert vc.verify(undated, key.public()) == vc.ProofResult("w3c", VM, None, "assertionMethod")


def test_a_default_proof_is_an_assertion() -> None:
    key = generate_ed25519()
    proof = _signed(key)["proof"]
    assert {k: v for k, v in proof.items() if k != "proofValue"} == {
        "type": "DataIntegrityProof", "cryptosuite": "eddsa-jcs-2022", "created": CREATED,
        "verificationMethod": VM, "proofPurpose": "assertionMethod"}
    assert vc.verify(_signed(key), key.public()).proof_purpose == "assertionMethod"


# split_proof and hash_data

@pytest.mark.parametrize(
    ("secured", "message"),
    [
        ([], "secured document is not a JSON object"),
        ({"a": 1}, "document has no single proof object"),
        ({"proof": [{"proofValue": "z1"}]}, "document has no single proof object"),
        ({"proof": {"type": vc.PROOF_TYPE}}, "proof.proofValue is missing"),
        ({"proof": {"proofValue": 5}}, "proof.proofValue is missing"),
        ({"proof": {"proofValue": vc.multibase_b58btc_encode(b"\x01" * 63)}},
         "proofValue decodes to 63 bytes, an Ed25519 signature has 64"),
    ],
)
def test_split_proof_refusals(secured: Any, message: str) -> None:
    assert _malformed(vc.split_proof, secured) == message


def test_split_proof_returns_the_three_parts() -> None:
    key = generate_ed25519()
    secured = _signed(key)
    unsecured, options, sig = vc.split_proof(secured)
    assert unsecured == _doc()
    assert options == {k: v for k, v in secured["proof"].items() if k != "proofValue"}
    assert "proofValue" not in options and options["verificationMethod"] == VM
    assert sig == vc.b58decode(secured["proof"]["proofValue"][1:]) and len(sig) == 64


def test_proof_configuration_leaves_out_the_proof_value() -> None:
    key = generate_ed25519()
    secured = _signed(key)
    unsecured, options, _ = vc.split_proof(secured)
    for variant in vc.VARIANTS:
        assert vc.hash_data(unsecured, secured["proof"], variant) == vc.hash_data(unsecured, options, variant)
        assert b"proofValue" not in vc.proof_configuration(unsecured, secured["proof"], variant)


# the proof's @context (vc-di-eddsa)

@pytest.mark.parametrize("context", [V2, [V2], [V2, "https://example.com/ctx/v1"]])
def test_proof_context_equal_to_the_documents_verifies(context: Any) -> None:
    key = generate_ed25519()
    secured = _signed(key, _doc(context))
    secured["proof"]["@context"] = copy.deepcopy(context)
    assert vc.verify(secured, key.public(), variant="w3c").variant == "w3c"
    assert vc.verify(secured, key.public()).variant == "w3c"


def test_proof_context_prefix_applies_to_the_document() -> None:
    # the proof's @context is a strict prefix: the signature covers the document under that context
    key = generate_ed25519()
    short = [V2, "https://example.com/ctx/v1"]
    long = [*short, "https://example.com/ctx/extra"]
    options = {"type": vc.PROOF_TYPE, "cryptosuite": vc.CRYPTOSUITE, "created": CREATED,
               "verificationMethod": VM, "proofPurpose": "assertionMethod"}
    sig = key.sign(vc.hash_data(_doc(short), options, "w3c"))
    secured = {**_doc(long), "proof": {**options, "@context": short,
                                       "proofValue": vc.multibase_b58btc_encode(sig)}}
    assert vc.verify(secured, key.public(), variant="w3c").variant == "w3c"
    # a string proof context that prefixes a list document context
    sig1 = key.sign(vc.hash_data(_doc(V2), options, "w3c"))
    one = {**_doc(long), "proof": {**options, "@context": V2, "proofValue": vc.multibase_b58btc_encode(sig1)}}
    assert vc.verify(one, key.public(), variant="w3c").variant == "w3c"
    # the same proof on a document whose context does not start with the proof's: refused
    for ctx in ([long[1], long[0]], "https://example.com/ctx/v1", [long[0]]):
        moved = {**_doc(ctx), "proof": secured["proof"]}
        with pytest.raises(SignatureError):
            vc.verify(moved, key.public(), variant="w3c")


# signing

def test_re_signing_replaces_the_old_proof_and_leaves_the_input_alone() -> None:
    key, other = generate_ed25519(), generate_ed25519()
    first = _signed(other)
    before = copy.deepcopy(first)
    again = _signed(key, first)
    assert first == before
    assert set(again) == set(_doc()) | {"proof"}
    assert again["proof"]["proofValue"] != first["proof"]["proofValue"]
    assert vc.verify(again, key.public()).variant == "w3c"
    again["credentialSubject"]["tags"].append("c")  # the output shares nothing with the input
    assert first == before


# status lists

def _u(data: bytes) -> str:
    return "u" + base64.urlsafe_b64encode(data).decode().rstrip("=")


def _gz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(data)
    return buf.getvalue()


def test_status_list_size_refusals_are_whole_messages() -> None:
    assert _malformed(statuslist.new_bitstring, 1024) == (
        f"status list size 1024 must be a multiple of 8 and >= {statuslist.MIN_BITS}")
    assert _malformed(statuslist.encode_list, bytes(100)) == (
        f"status list of 800 bits is below the {statuslist.MIN_BITS}-bit minimum")


@pytest.mark.parametrize(
    ("encoded", "message"),
    [
        (5, "encodedList is not multibase base64url (must start with 'u')"),
        ("zAAAA", "encodedList is not multibase base64url (must start with 'u')"),
        ("uAAA=", "encodedList must be base64url without padding"),
        ("uAAAAA", "encodedList must be base64url without padding"),
        (_u(_gz(bytes(16384))[:-6]), "encodedList GZIP stream is truncated"),
        (_u(_gz(bytes(16384)) + b"\x00"), "encodedList has trailing data after the GZIP stream"),
    ],
)
def test_decode_list_refusals_are_whole_messages(encoded: Any, message: str) -> None:
    assert _malformed(statuslist.decode_list, encoded) == message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (None, "status list credential is not a JSON object"),
        ({"purpose": None}, "status list credentialSubject.statusPurpose is missing"),
        ({"encoded": None}, "status list credentialSubject.encodedList is missing"),
    ],
)
def test_list_credential_refusals_are_whole_messages(change: dict[str, Any] | None, message: str) -> None:
    doc: Any = statuslist.status_list_credential(
        list_id="https://s.example/1", issuer="did:web:s.example",
        encoded_list=statuslist.encode_list(statuslist.new_bitstring()), valid_from=CREATED)
    if change is None:
        doc = [doc]
    elif "purpose" in change:
        del doc["credentialSubject"]["statusPurpose"]
    else:
        doc["credentialSubject"]["encodedList"] = 7
    assert _malformed(statuslist.list_bits_from_credential, doc) == message


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("statusListCredential", "", "credentialStatus.statusListCredential is missing"),
        ("statusPurpose", None, "credentialStatus.statusPurpose is missing"),
    ],
)
def test_status_entry_refusals_are_whole_messages(field: str, value: Any, message: str) -> None:
    doc: dict[str, Any] = {"type": statuslist.ENTRY_TYPE, "statusPurpose": "revocation",
                           "statusListIndex": "3", "statusListCredential": "https://s.example/1"}
    doc[field] = value
    assert _malformed(statuslist.StatusEntry.from_json, doc) == message


_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@settings(max_examples=200, deadline=None)
@given(hst.text(alphabet=_B64URL, max_size=41).filter(lambda b: len(b) % 4 != 1))
def test_any_unpadded_base64url_body_reaches_the_gzip_check(body: str) -> None:
    # the base64url step cannot fail once the body passed the alphabet and length checks: whatever
    # the bytes, the refusal comes from the GZIP stage
    with pytest.raises(MalformedError) as err:
        statuslist.decode_list("u" + body)
    gzip_stage = ("encodedList is not GZIP data: ", "encodedList GZIP stream is truncated")
    assert str(err.value).startswith(gzip_stage)
