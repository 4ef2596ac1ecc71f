"""Signing keys: Ed25519 (the ACX default, pure signatures) and ECDSA P-256/SHA-256.

Public keys travel as SPKI PEM; private keys are PKCS#8 PEM (optionally encrypted).
The ACX keyid is `ed25519:` + hex(sha256(DER SPKI)).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from acxoci.attest.errors import MalformedError, SignatureError

PublicKeyTypes = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey
PrivateKeyTypes = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class PublicKey:
    """A verification key with its SPKI encoding."""

    key: PublicKeyTypes

    @property
    def algorithm(self) -> str:
        if isinstance(self.key, ed25519.Ed25519PublicKey):
            return "ed25519"
        return f"ecdsa-{self.key.curve.name}"

    def spki_der(self) -> bytes:
        return self.key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def spki_pem(self) -> str:
        return self.key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")

    def fingerprint_hex(self) -> str:
        """hex(sha256(DER SPKI))."""
        return hashlib.sha256(self.spki_der()).hexdigest()

    def keyid(self) -> str:
        """ACX keyid: `ed25519:<hex sha256 SPKI>` (other algorithms use their own prefix)."""
        prefix = "ed25519" if self.algorithm == "ed25519" else self.algorithm
        return f"{prefix}:{self.fingerprint_hex()}"

    def sigstore_hint(self) -> str:
        """base64(sha256(DER SPKI)): the `publicKey.hint` cosign writes into bundles."""
        return base64.b64encode(hashlib.sha256(self.spki_der()).digest()).decode("ascii")

    def verify(self, signature: bytes, data: bytes) -> None:
        """Raise SignatureError unless `signature` is valid over `data`.

        Ed25519 is pure; ECDSA is ASN.1 DER with SHA-256 whatever the curve (as cosign does).
        """
        try:
            if isinstance(self.key, ed25519.Ed25519PublicKey):
                self.key.verify(signature, data)
            else:
                self.key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature as exc:
            raise SignatureError("signature does not verify") from exc
        except ValueError as exc:
            raise SignatureError(f"signature is malformed: {exc}") from exc


@dataclass(frozen=True)
class PrivateKey:
    """A signing key. Never serialised into an artifact."""

    key: PrivateKeyTypes

    def public(self) -> PublicKey:
        return PublicKey(self.key.public_key())

    def sign(self, data: bytes) -> bytes:
        if isinstance(self.key, ed25519.Ed25519PrivateKey):
            return self.key.sign(data)
        return self.key.sign(data, ec.ECDSA(hashes.SHA256()))

    def pkcs8_pem(self, password: bytes | None = None) -> bytes:
        enc: serialization.KeySerializationEncryption
        enc = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


def generate_ed25519() -> PrivateKey:
    return PrivateKey(ed25519.Ed25519PrivateKey.generate())


def generate_p256() -> PrivateKey:
    return PrivateKey(ec.generate_private_key(ec.SECP256R1()))


def load_public_pem(pem: bytes | str) -> PublicKey:
    """Load an SPKI PEM public key (Ed25519 or EC)."""
    try:
        data = pem.encode("ascii") if isinstance(pem, str) else pem
    except UnicodeEncodeError as exc:  # PEM is ASCII armour; anything else is not a key
        raise MalformedError(f"not a PEM public key: non-ASCII character at {exc.start}") from exc
    if b"PRIVATE KEY" in data:
        raise MalformedError("expected a public key but found private key material")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        # The library's text (an FAQ link, an OpenSSL error name) says nothing a user can act on.
        raise MalformedError("not a PEM public key (no readable PUBLIC KEY block)") from exc
    if not isinstance(key, ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey):
        raise MalformedError(f"unsupported public key type {type(key).__name__}")
    return PublicKey(key)


def load_private_pem(pem: bytes, password: bytes | None = None) -> PrivateKey:
    """Load a PKCS#8 (or SEC1/traditional) PEM private key, optionally encrypted."""
    try:
        key = serialization.load_pem_private_key(pem, password=password)
    except TypeError as exc:
        given = "a passphrase was given but the key is not encrypted" if password else \
            "the key is encrypted and no passphrase was given"
        raise MalformedError(f"private key passphrase problem: {given}") from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        why = "wrong passphrase, or a corrupt key" if password else "malformed, or of an unsupported type"
        raise MalformedError(f"not a usable PEM private key ({why})") from exc
    if not isinstance(key, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey):
        raise MalformedError(f"unsupported private key type {type(key).__name__}")
    return PrivateKey(key)


def ed25519_keyid_from_pem(pem: bytes | str) -> str:
    """keyid of an Ed25519 SPKI PEM; raises MalformedError for any other key."""
    pub = load_public_pem(pem)
    if pub.algorithm != "ed25519":
        raise MalformedError("public key is not Ed25519")
    return pub.keyid()
