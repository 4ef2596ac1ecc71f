"""cosign key files with each hostile field (the message names the field; a work factor scrypt
cannot take is a typed refusal, not a crash), what encryption writes, and signing keys loaded in
every encryption state. Keys are generated at run time. Written against the survivors of
`make mutate`."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import nacl.secret
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import x25519

from acxoci.attest.cosignkey import (
    WrongPassword,
    _scrypt,
    decrypt_cosign_key,
    encrypt_cosign_key,
    load_signing_key,
    pem_type,
)
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import generate_ed25519, generate_p256
from tests.harness.primitives import PEM_LABEL, PK, pkcs8_pem

FAST_N = 16
KEY = generate_p256()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- cosign key files ---------------------------------------------------------------------------

def _pem(doc: Any, label: str = PEM_LABEL) -> bytes:
    body = _b64(json.dumps(doc).encode())
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n".encode()


def _doc_of(pem: bytes) -> dict[str, Any]:
    lines = pem.decode().strip().splitlines()
    doc: dict[str, Any] = json.loads(base64.b64decode("".join(lines[1:-1])))
    return doc


GOOD = _doc_of(encrypt_cosign_key(KEY, b"pw", n=FAST_N))


def _with(path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    *head, last = path.split(".")
    cur = doc
    for h in head:
        cur = cur[h]
    if value is KeyError:
        del cur[last]
    else:
        cur[last] = value
    return doc


@pytest.mark.parametrize(("pem", "message"), [
    (b"no pem here", f"cosign key: no {PEM_LABEL} PEM block"),
    (_pem(GOOD, f"ENCRYPTED OTHER {PK}"), f"cosign key: no {PEM_LABEL} PEM block"),
    (_pem([]), "cosign key: body is not a JSON object"),
    (_pem(_with("kdf", "scrypt")), "cosign key: unsupported kdf 'scrypt'"),
    (_pem(_with("kdf.name", "argon2")), "cosign key: unsupported kdf 'argon2'"),
    (_pem(_with("cipher", "nacl/secretbox")), "cosign key: unsupported cipher 'nacl/secretbox'"),
    (_pem(_with("cipher.name", "aes-gcm")), "cosign key: unsupported cipher 'aes-gcm'"),
    (_pem(_with("kdf.params", KeyError)), "cosign key: kdf.params is missing"),
    (_pem(_with("kdf.params.N", "16")), "cosign key: kdf.params.N='16' is not an integer in 1..1048576"),
    (_pem(_with("kdf.params.N", True)), "cosign key: kdf.params.N=True is not an integer in 1..1048576"),
    (_pem(_with("kdf.params.N", 0)), "cosign key: kdf.params.N=0 is not an integer in 1..1048576"),
    (_pem(_with("kdf.params.r", 33)), "cosign key: kdf.params.r=33 is not an integer in 1..32"),
    (_pem(_with("kdf.params.p", 17)), "cosign key: kdf.params.p=17 is not an integer in 1..16"),
    (_pem(_with("kdf.params.N", 24)), "cosign key: kdf.params.N=24 is not a power of two above 1"),
    (_pem(_with("kdf.params.N", 1)), "cosign key: kdf.params.N=1 is not a power of two above 1"),
    (_pem(_with("kdf.salt", KeyError)), "cosign key: kdf.salt is missing or not a string"),
    (_pem(_with("cipher.nonce", 5)), "cosign key: cipher.nonce is missing or not a string"),
    (_pem(_with("cipher.nonce", _b64(b"n" * 16))), "cosign key: cipher.nonce has 16 bytes, expected 24"),
    (_pem(_with("ciphertext", None)), "cosign key: .ciphertext is missing or not a string"),
])
def test_cosign_key_refusals_name_the_field(pem: bytes, message: str) -> None:
    with pytest.raises(MalformedError) as exc:
        decrypt_cosign_key(pem, b"pw")
    assert type(exc.value) is MalformedError and str(exc.value) == message


@pytest.mark.parametrize(("pem", "prefix"), [
    (b"-----BEGIN " + PEM_LABEL.encode() + b"-----\n!!!!\n-----END " + PEM_LABEL.encode() + b"-----\n",
     "cosign key: PEM body is not base64: "),
    # characters a lenient decoder would skip: only strict base64 refuses them
    (_pem(_with("kdf.salt", "c2Fs!dA==")), "cosign key: kdf.salt is not base64: "),
    (_pem(_with("cipher.nonce", "!" + _b64(b"n" * 24))), "cosign key: cipher.nonce is not base64: "),
])
def test_cosign_key_base64_is_strict(pem: bytes, prefix: str) -> None:
    with pytest.raises(MalformedError) as exc:
        decrypt_cosign_key(pem, b"pw")
    assert str(exc.value).startswith(prefix), str(exc.value)


def test_the_largest_allowed_parameters_are_accepted() -> None:
    """r=32, p=16 and N=2 are in range: the file is refused only because the password is wrong for them."""
    for path, value in (("kdf.params.r", 32), ("kdf.params.p", 16), ("kdf.params.N", 2)):
        with pytest.raises(WrongPassword) as exc:
            decrypt_cosign_key(_pem(_with(path, value)), b"pw")
        assert str(exc.value) == "cosign key: wrong password (secretbox did not open)"


def _sealed(der: bytes) -> bytes:
    salt, nonce = b"s" * 32, b"n" * 24
    box = nacl.secret.SecretBox(_scrypt(b"pw", salt, FAST_N, 8, 1))
    doc = copy.deepcopy(GOOD)
    doc["kdf"]["salt"], doc["cipher"]["nonce"] = _b64(salt), _b64(nonce)
    doc["ciphertext"] = _b64(box.encrypt(der, nonce).ciphertext)
    return _pem(doc)


def test_what_decrypts_must_be_an_ed25519_or_ecdsa_pkcs8_key() -> None:
    with pytest.raises(MalformedError) as exc:
        decrypt_cosign_key(_sealed(b"not DER"), b"pw")
    assert str(exc.value).startswith("cosign key: decrypted data is not a PKCS#8 key: ")
    der = x25519.X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with pytest.raises(MalformedError) as exc:
        decrypt_cosign_key(_sealed(der), b"pw")
    assert str(exc.value) == "cosign key: unsupported key type X25519PrivateKey (Ed25519 or ECDSA only)"


def test_cosigns_default_work_factor_decrypts() -> None:
    """N=65536, r=8 needs 64 MiB of scrypt memory: more than hashlib's default ceiling."""
    key = generate_ed25519()
    assert decrypt_cosign_key(encrypt_cosign_key(key, b"pw"), b"pw").public().keyid() == key.public().keyid()


def test_encryption_uses_the_given_salt_and_nonce_and_writes_compact_json() -> None:
    salt, nonce = b"S" * 32, b"N" * 24
    one = encrypt_cosign_key(KEY, b"pw", n=FAST_N, salt=salt, nonce=nonce)
    assert one == encrypt_cosign_key(KEY, b"pw", n=FAST_N, salt=salt, nonce=nonce)
    lines = one.decode().splitlines()
    assert lines[0] == f"-----BEGIN {PEM_LABEL}-----" and lines[-1] == f"-----END {PEM_LABEL}-----"
    assert all(len(line) == 64 for line in lines[1:-2]) and 0 < len(lines[-2]) <= 64
    body = base64.b64decode("".join(lines[1:-1]))
    assert b" " not in body  # compact, as cosign writes it
    doc = json.loads(body)
    assert doc["kdf"] == {"name": "scrypt", "params": {"N": FAST_N, "r": 8, "p": 1}, "salt": _b64(salt)}
    assert doc["cipher"] == {"name": "nacl/secretbox", "nonce": _b64(nonce)}
    fresh = [_doc_of(encrypt_cosign_key(KEY, b"pw", n=FAST_N)) for _ in range(2)]
    assert [len(base64.b64decode(d["kdf"]["salt"])) for d in fresh] == [32, 32]
    assert fresh[0]["kdf"]["salt"] != fresh[1]["kdf"]["salt"]
    assert fresh[0]["cipher"]["nonce"] != fresh[1]["cipher"]["nonce"]
    assert pem_type(one) == PEM_LABEL and pem_type(b"nothing") is None


def test_signing_keys_in_every_encryption_state() -> None:
    plain, sealed = pkcs8_pem(KEY), pkcs8_pem(KEY, b"pw")
    legacy = pkcs8_pem(KEY, b"pw", serialization.PrivateFormat.TraditionalOpenSSL)
    assert b"Proc-Type: 4,ENCRYPTED" in legacy and pem_type(legacy) == f"EC {PK}"
    keyid = KEY.public().keyid()
    assert load_signing_key(plain, b"ignored").public().keyid() == keyid  # not encrypted: no password used
    assert load_signing_key(plain, None).public().keyid() == keyid
    for pem in (sealed, legacy):
        assert load_signing_key(pem, b"pw").public().keyid() == keyid
        with pytest.raises(WrongPassword) as exc:
            load_signing_key(pem, None)
        assert str(exc.value) == "private key is encrypted and no password was given"
        with pytest.raises(WrongPassword) as exc:
            load_signing_key(pem, b"wrong")
        assert str(exc.value) == ("private key could not be decrypted: not a usable PEM private key "
                                  "(wrong passphrase, or a corrupt key)")
    with pytest.raises(MalformedError) as mexc:
        load_signing_key(pkcs8_pem(KEY).replace(PK.encode(), b"PUBLIC KEY"), None)
    assert str(mexc.value) == "not a private key PEM (expected a cosign.key or a PKCS#8 PEM)"
