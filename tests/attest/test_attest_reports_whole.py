"""The attest core's refusals and reports compared whole: sigstore bundles of every material and
content kind (what `describe` and the verification notes say, blob signatures verified),
private-key PEMs in every encryption state, and JSON numbers at the length and range limits.
Keys are generated at run time. Written against the survivors of `make mutate`."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, x25519

from acxoci.attest.bundle import (
    BUNDLE_V03,
    KeylessBundle,
    ParsedBundle,
    build_dsse_bundle,
    parse_bundle,
    verify_dsse_bundle,
    verify_message_bundle,
)
from acxoci.attest.canonical import loads_strict
from acxoci.attest.dsse import sign
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.keys import (
    PrivateKey,
    ed25519_keyid_from_pem,
    generate_ed25519,
    generate_p256,
    load_private_pem,
)
from tests.harness.primitives import PK, TLOG_ENTRY, pkcs8_pem

FAST_N = 16
KEY = generate_p256()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- sigstore bundles ---------------------------------------------------------------------------

def _dsse_doc() -> dict[str, Any]:
    env = sign("application/vnd.in-toto+json", b'{"x":1}', KEY, None)
    return build_dsse_bundle(env, KEY.public())


def _message_doc(blob: bytes = b"blob", *, digest: bool = True) -> dict[str, Any]:
    doc = _dsse_doc()
    del doc["dsseEnvelope"]
    doc["messageSignature"] = {"signature": _b64(KEY.sign(blob))}
    if digest:
        doc["messageSignature"]["messageDigest"] = {"algorithm": "SHA2_256", "digest": _b64(b"d" * 32)}
    return doc


def test_a_dict_is_parsed_as_given_and_left_unchanged() -> None:
    doc = _dsse_doc()
    doc["verificationMaterial"]["publicKey"] = {}  # protojson leaves out the empty hint
    before = copy.deepcopy(doc)
    parsed = parse_bundle(doc)
    assert doc == before  # the defaults the schema model needs are filled in a copy
    assert parsed == parse_bundle(json.dumps(doc).encode())
    assert parsed.public_key_hint is None and parsed.material == "public-key"


def test_a_bundle_is_bounded_at_16_mib_not_the_general_json_limit() -> None:
    raw = json.dumps(_dsse_doc()).encode()
    limit = 16 * 1024 * 1024
    assert parse_bundle(raw + b" " * (limit - len(raw))).envelope is not None
    with pytest.raises(MalformedError) as exc:
        parse_bundle(raw + b" " * (limit + 1 - len(raw)))
    assert str(exc.value) == f"JSON document of {limit + 1} bytes exceeds the {limit}-byte limit"


@pytest.mark.parametrize(("raw", "message"), [
    (b"[]", "bundle is not a JSON object"),
    (json.dumps({**_dsse_doc(), "extra": 1}).encode(),
     "bundle does not match the sigstore bundle schema at extra: Extra inputs are not permitted"),
    (json.dumps({**_dsse_doc(), "messageSignature": _message_doc()["messageSignature"]}).encode(),
     "bundle must carry exactly one of dsseEnvelope and messageSignature"),
])
def test_bundle_refusals_say_where(raw: bytes, message: str) -> None:
    with pytest.raises(MalformedError) as exc:
        parse_bundle(raw)
    assert str(exc.value) == message


def test_a_nested_schema_error_names_its_whole_path() -> None:
    doc = _dsse_doc()
    doc["verificationMaterial"] = {"x509CertificateChain": {"certificates": [{}]}}
    with pytest.raises(MalformedError) as exc:
        parse_bundle(json.dumps(doc).encode())
    assert str(exc.value) == ("bundle does not match the sigstore bundle schema at verificationMaterial."
                              "x509CertificateChain.certificates.0.rawBytes: Field required")


def test_an_empty_hint_is_no_hint() -> None:
    doc = _dsse_doc()
    doc["verificationMaterial"]["publicKey"]["hint"] = ""
    b = parse_bundle(json.dumps(doc).encode())
    assert b.public_key_hint is None
    assert verify_dsse_bundle(b, KEY.public()).notes == ()


def test_like_cosign_any_signature_of_a_bundle_may_verify() -> None:
    """cosign accepts a bundle when one of its signatures verifies with the key, not only the first."""
    other = generate_p256()
    env = sign("application/vnd.in-toto+json", b'{"x":1}', other, None)
    mine = sign("application/vnd.in-toto+json", b'{"x":1}', KEY, None)
    doc = build_dsse_bundle(env, KEY.public())
    doc["dsseEnvelope"]["signatures"].append({"sig": _b64(mine.signatures[0].sig)})
    check = verify_dsse_bundle(parse_bundle(json.dumps(doc).encode()), KEY.public())
    assert check.signature.sig == mine.signatures[0].sig


def test_a_certificate_chain_bundle_is_keyless_and_reported() -> None:
    doc = _dsse_doc()
    doc["verificationMaterial"] = {
        "x509CertificateChain": {"certificates": [{"rawBytes": _b64(b"leaf")}, {"rawBytes": _b64(b"ca")}]},
        "tlogEntries": [],
        "timestampVerificationData": {"rfc3161Timestamps": [{"signedTimestamp": _b64(b"t1")}]},
    }
    b = parse_bundle(json.dumps(doc).encode())
    assert (b.material, b.keyless, b.certificates_der, b.public_key_hint) == (
        "certificate-chain", True, (b"leaf", b"ca"), None)
    assert b.describe() == f"{BUNDLE_V03}, material=certificate-chain, content=dsse-envelope, timestamps=1"
    with pytest.raises(KeylessBundle) as exc:
        verify_dsse_bundle(b, KEY.public())
    assert str(exc.value) == ("bundle is keyless (certificate-chain, 2 certificate(s)); keyless verification "
                              "needs a trusted root and is not done here")
    with pytest.raises(KeylessBundle) as exc:
        verify_message_bundle(b, KEY.public(), b"blob")
    assert str(exc.value) == "bundle is keyless (certificate-chain); not verified"


def test_a_single_certificate_bundle_hint_is_none() -> None:
    doc = _dsse_doc()
    doc["verificationMaterial"] = {"certificate": {"rawBytes": _b64(b"leaf")}}
    b = parse_bundle(json.dumps(doc).encode())
    assert (b.material, b.certificates_der, b.public_key_hint) == ("certificate", (b"leaf",), None)


def test_a_dsse_bundle_with_timestamps_and_tlog_entries_notes_each() -> None:
    doc = _dsse_doc()
    hint = doc["verificationMaterial"]["publicKey"]["hint"]
    doc["verificationMaterial"]["publicKey"]["hint"] = _b64(b"\0" * 32)
    doc["verificationMaterial"]["timestampVerificationData"] = {
        "rfc3161Timestamps": [{"signedTimestamp": _b64(b"t1")}, {"signedTimestamp": _b64(b"t2")}]}
    b = parse_bundle(json.dumps(doc).encode())
    assert (b.rfc3161_timestamps, b.tlog_entries, b.message_signature, b.message_digest) == (2, 0, None, None)
    assert b.describe() == f"{BUNDLE_V03}, material=public-key, content=dsse-envelope, timestamps=2"
    check = verify_dsse_bundle(b, KEY.public())
    assert check.notes == (
        "publicKey.hint does not match the verifying key (hints are unauthenticated; ignored)",
        "2 RFC 3161 timestamp(s) present and NOT verified")
    assert hint == KEY.public().sigstore_hint()


def test_tlog_note_is_whole() -> None:
    doc = _dsse_doc()
    doc["verificationMaterial"]["tlogEntries"] = [TLOG_ENTRY, TLOG_ENTRY]
    b = parse_bundle(json.dumps(doc).encode())
    assert b.describe() == f"{BUNDLE_V03}, material=public-key, content=dsse-envelope, tlogEntries=2"
    assert verify_dsse_bundle(b, KEY.public()).notes == (
        "2 transparency-log entr(y/ies) present and NOT verified (no trusted root; like cosign "
        "--insecure-ignore-tlog)",)


def test_a_keyid_cosign_rejects_is_named() -> None:
    doc = _dsse_doc()
    doc["dsseEnvelope"]["signatures"][0]["keyid"] = "k1"
    with pytest.raises(MalformedError) as exc:
        verify_dsse_bundle(parse_bundle(json.dumps(doc).encode()), KEY.public())
    assert str(exc.value) == ("bundle DSSE signatures[0].keyid is 'k1'; cosign accepts only an absent or "
                              "empty keyid in bundles, so it would reject this bundle")


def test_a_blob_signature_bundle_verifies_over_the_blob_only() -> None:
    b = parse_bundle(json.dumps(_message_doc()).encode())
    assert b.envelope is None and b.message_digest == ("SHA2_256", b"d" * 32)
    assert b.describe() == f"{BUNDLE_V03}, material=public-key, content=message-signature"
    check = verify_message_bundle(b, KEY.public(), b"blob")
    assert check.notes == () and check.signature.keyid is None and check.signature.sig == b.message_signature
    with pytest.raises(SignatureError) as exc:
        verify_message_bundle(b, KEY.public(), b"other blob")
    assert str(exc.value) == "bundle messageSignature does not verify with the given key"
    with pytest.raises(SignatureError):
        verify_message_bundle(b, generate_p256().public(), b"blob")
    with pytest.raises(MalformedError) as mexc:
        verify_dsse_bundle(b, KEY.public())
    assert str(mexc.value) == "bundle carries a messageSignature, not a DSSE envelope"
    assert parse_bundle(json.dumps(_message_doc(digest=False)).encode()).message_digest is None


def test_a_dsse_bundle_is_not_a_blob_signature() -> None:
    with pytest.raises(MalformedError) as exc:
        verify_message_bundle(parse_bundle(json.dumps(_dsse_doc()).encode()), KEY.public(), b"blob")
    assert str(exc.value) == "bundle carries a DSSE envelope, not a messageSignature"


def test_parsed_bundle_is_exactly_what_was_carried() -> None:
    doc = _message_doc()
    got = parse_bundle(json.dumps(doc).encode())
    sig = base64.b64decode(doc["messageSignature"]["signature"])
    assert got == ParsedBundle(BUNDLE_V03, "public-key", KEY.public().sigstore_hint(), (), 0, 0, None, sig,
                               ("SHA2_256", b"d" * 32))


# --- private key PEMs ---------------------------------------------------------------------------

@pytest.mark.parametrize(("pem_password", "given", "message"), [
    (None, b"pw", "private key passphrase problem: a passphrase was given but the key is not encrypted"),
    (b"pw", None, "private key passphrase problem: the key is encrypted and no passphrase was given"),
    (b"pw", b"wrong", "not a usable PEM private key (wrong passphrase, or a corrupt key)"),
])
def test_private_pem_passphrase_problems_say_which(pem_password: bytes | None, given: bytes | None,
                                                   message: str) -> None:
    with pytest.raises(MalformedError) as exc:
        load_private_pem(pkcs8_pem(KEY, pem_password), given)
    assert str(exc.value) == message


def test_private_pem_of_another_kind_or_garbage() -> None:
    with pytest.raises(MalformedError) as exc:
        load_private_pem(f"-----BEGIN {PK}-----\nAAAA\n-----END {PK}-----\n".encode())
    assert str(exc.value) == "not a usable PEM private key (malformed, or of an unsupported type)"
    other = x25519.X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with pytest.raises(MalformedError) as exc:
        load_private_pem(other)
    assert str(exc.value) == "unsupported private key type X25519PrivateKey"


def test_ed25519_keyid_from_pem() -> None:
    ed = generate_ed25519()
    pem = ed.public().spki_pem()
    assert ed25519_keyid_from_pem(pem) == ed.public().keyid()
    assert ed25519_keyid_from_pem(pem.decode() if isinstance(pem, bytes) else pem) == ed.public().keyid()
    p256 = PrivateKey(ec.generate_private_key(ec.SECP256R1())).public().spki_pem()
    with pytest.raises(MalformedError) as exc:
        ed25519_keyid_from_pem(p256)
    assert str(exc.value) == "public key is not Ed25519"


# --- JSON numbers -------------------------------------------------------------------------------

def test_number_length_limit_is_400_characters() -> None:
    ok = "0." + "1" * 398
    assert isinstance(loads_strict(ok.encode()), float)
    with pytest.raises(MalformedError) as exc:
        loads_strict((ok + "1").encode())
    assert str(exc.value) == "JSON number of 401 characters is too long"


def test_a_number_beyond_binary64_is_named_by_its_first_40_characters() -> None:
    text = "1" * 45 + "e400"
    with pytest.raises(MalformedError) as exc:
        loads_strict(f"[{text}]".encode())
    assert str(exc.value) == f"JSON number {text[:40]} is not finite in binary64"


@pytest.mark.parametrize(("raw", "message"), [
    (b'{"\\ud800":1}', "JSON key holds a lone surrogate escape"),
    (b'{"a":{"b":"x\\udfff"}}', "JSON string holds a lone surrogate escape"),
    (b'[1,true,null,2.5,["\\udc00"]]', "JSON string holds a lone surrogate escape"),
    (b'"\\ud800"', "JSON string holds a lone surrogate escape"),
])
def test_lone_surrogate_escapes_are_found_anywhere(raw: bytes, message: str) -> None:
    with pytest.raises(MalformedError) as exc:
        loads_strict(raw)
    assert str(exc.value) == message


def test_escaped_pairs_and_plain_values_pass_the_tree_check() -> None:
    assert loads_strict(b'{"k\\ud83d\\ude00":[1,"\\ud83d\\ude00",{"n":null}],"t":true}') == {
        "k\U0001f600": [1, "\U0001f600", {"n": None}], "t": True}


def test_nesting_is_counted_through_objects_and_arrays() -> None:
    assert loads_strict(b'{"a":{"b":[1,{}]}}', max_depth=4) == {"a": {"b": [1, {}]}}
    with pytest.raises(MalformedError) as exc:
        loads_strict(b'{"a":{"b":[1,{}]}}', max_depth=3)
    assert str(exc.value) == "JSON nests deeper than 3 levels"
    assert loads_strict(b'[[],[1],{"a":2},[],3]', max_depth=2) == [[], [1], {"a": 2}, [], 3]
