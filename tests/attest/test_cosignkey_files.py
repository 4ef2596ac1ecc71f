"""cosign.key files: decrypt what we encrypt (Ed25519, P-256), refuse wrong passwords, tampered
ciphertext and hostile scrypt parameters; load PKCS#8 keys through the same entry point."""

from __future__ import annotations

import base64
import json

import pytest

from acxoci.attest.cosignkey import (
    WrongPassword,
    decrypt_cosign_key,
    encrypt_cosign_key,
    is_cosign_key,
    load_signing_key,
)
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import generate_ed25519, generate_p256

FAST_N = 1024  # keeps the unit suite fast; cosign writes N=65536 (covered by the interop tests)


def _rewrite(pem: bytes, change: dict[str, object]) -> bytes:
    lines = pem.decode().strip().splitlines()
    doc = json.loads(base64.b64decode("".join(lines[1:-1])))
    for path, value in change.items():
        cur = doc
        *head, last = path.split(".")
        for h in head:
            cur = cur[h]
        cur[last] = value
    body = base64.b64encode(json.dumps(doc).encode()).decode()
    return f"{lines[0]}\n{body}\n{lines[-1]}\n".encode()


@pytest.mark.parametrize("gen", [generate_ed25519, generate_p256])
def test_roundtrip(gen: object) -> None:
    key = gen()  # type: ignore[operator]
    pem = encrypt_cosign_key(key, b"s3cret", n=FAST_N)
    assert pem.startswith(b"-----BEGIN ENCRYPTED SIGSTORE " + b"PRIVATE KEY-----")
    assert is_cosign_key(pem)
    back = decrypt_cosign_key(pem, b"s3cret")
    assert back.public().spki_der() == key.public().spki_der()
    # the decrypted key really signs
    back.public().verify(back.sign(b"m"), b"m")


def test_wrong_password() -> None:
    pem = encrypt_cosign_key(generate_p256(), b"right", n=FAST_N)
    with pytest.raises(WrongPassword):
        decrypt_cosign_key(pem, b"wrong")


def test_empty_password_is_a_password() -> None:
    pem = encrypt_cosign_key(generate_ed25519(), b"", n=FAST_N)
    assert load_signing_key(pem, None).public().algorithm == "ed25519"
    with pytest.raises(WrongPassword):
        load_signing_key(pem, b"x")


def test_tampered_ciphertext() -> None:
    pem = encrypt_cosign_key(generate_ed25519(), b"pw", n=FAST_N)
    lines = pem.decode().strip().splitlines()
    doc = json.loads(base64.b64decode("".join(lines[1:-1])))
    ct = bytearray(base64.b64decode(doc["ciphertext"]))
    ct[5] ^= 1
    bad = _rewrite(pem, {"ciphertext": base64.b64encode(bytes(ct)).decode()})
    with pytest.raises(WrongPassword):
        decrypt_cosign_key(bad, b"pw")


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("kdf.params.N", 1 << 30, "kdf.params.N"),
    ("kdf.params.N", 1000, "power of two"),
    ("kdf.params.r", 0, "kdf.params.r"),
    ("kdf.name", "argon2", "unsupported kdf"),
    ("cipher.name", "aes-gcm", "unsupported cipher"),
    ("cipher.nonce", base64.b64encode(b"short").decode(), "nonce"),
    ("kdf.salt", "!!notbase64", "kdf.salt"),
])
def test_hostile_parameters(field: str, value: object, needle: str) -> None:
    pem = encrypt_cosign_key(generate_ed25519(), b"pw", n=FAST_N)
    with pytest.raises(MalformedError, match=needle):
        decrypt_cosign_key(_rewrite(pem, {field: value}), b"pw")


def test_not_a_cosign_key() -> None:
    with pytest.raises(MalformedError):
        decrypt_cosign_key(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", b"")
    with pytest.raises(MalformedError):
        load_signing_key(generate_ed25519().public().spki_pem().encode(), None)


def test_pkcs8_keys_through_the_same_loader() -> None:
    key = generate_p256()
    plain = load_signing_key(key.pkcs8_pem(), None)
    assert plain.public().spki_der() == key.public().spki_der()
    enc = key.pkcs8_pem(b"pw")
    assert load_signing_key(enc, b"pw").public().spki_der() == key.public().spki_der()
    with pytest.raises(WrongPassword):
        load_signing_key(enc, None)
    with pytest.raises(WrongPassword):
        load_signing_key(enc, b"nope")


def test_base64_fields_are_strict() -> None:
    # a lenient decoder would drop the stray character and open the box anyway
    key = generate_ed25519()
    pem = encrypt_cosign_key(key, b"pw", n=FAST_N)
    lines = pem.decode().strip().splitlines()
    doc = json.loads(base64.b64decode("".join(lines[1:-1])))
    for field in ("ciphertext", "cipher.nonce", "kdf.salt"):
        bad = json.loads(json.dumps(doc))
        *head, last = field.split(".")
        cur = bad
        for h in head:
            cur = cur[h]
        cur[last] = "*" + cur[last]
        with pytest.raises(MalformedError, match=f"{last} is not base64"):
            decrypt_cosign_key(_rewrite(pem, {field: cur[last]}), b"pw")
    assert decrypt_cosign_key(pem, b"pw").public().keyid() == key.public().keyid()
