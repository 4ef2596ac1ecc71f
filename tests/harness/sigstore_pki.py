"""A throwaway Sigstore instance built at test time: a Fulcio-like CA, a CT log and a Rekor log,
each with a fresh P-256 key, their `trusted_root.json`, and keyless bundles (v0.3, DSSE, one
`dsse/0.0.1` entry in a one-leaf tree) signed by short-lived leaf certificates with an embedded
SCT. Nothing here verifies anything: the `sigstore` library does that in the code under test.
Keys never leave memory."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

SCT_OID = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
ORIGIN = "rekor.test.invalid - 1"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _spki(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _der_len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _octets(data: bytes) -> bytes:
    return b"\x04" + _der_len(len(data)) + data


def _utf8(text: str) -> bytes:
    raw = text.encode()
    return b"\x0c" + _der_len(len(raw)) + raw


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class FakeSigstore:
    """One test instance: CA + CT log + Rekor keys, generated per test."""

    start: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    ca_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    ct_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    rekor_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )

    def __post_init__(self) -> None:
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "acx-test"),
                x509.NameAttribute(NameOID.COMMON_NAME, "acx-test-fulcio"),
            ]
        )
        ski = x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key())
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.start - timedelta(days=1))
            .not_valid_after(self.start + timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
            .add_extension(ski, critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )

    # --- trusted root -------------------------------------------------------------------

    def _log(self, key: ec.EllipticCurvePrivateKey, url: str) -> dict[str, Any]:
        return {
            "baseUrl": url,
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": _b64(_spki(key)),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": {"start": _iso(self.start - timedelta(days=1))},
            },
            "logId": {"keyId": _b64(hashlib.sha256(_spki(key)).digest())},
        }

    def trusted_root(self) -> dict[str, Any]:
        """The instance's `trusted_root.json` document."""
        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [self._log(self.rekor_key, "https://rekor.test.invalid")],
            "certificateAuthorities": [
                {
                    "subject": {"organization": "acx-test", "commonName": "acx-test-fulcio"},
                    "uri": "https://fulcio.test.invalid",
                    "certChain": {
                        "certificates": [
                            {"rawBytes": _b64(self.ca_cert.public_bytes(serialization.Encoding.DER))}
                        ]
                    },
                    "validFor": {"start": _iso(self.start - timedelta(days=1))},
                }
            ],
            "ctlogs": [self._log(self.ct_key, "https://ctfe.test.invalid")],
            "timestampAuthorities": [],
        }

    def trusted_root_bytes(self) -> bytes:
        return json.dumps(self.trusted_root()).encode()

    # --- certificates -------------------------------------------------------------------

    def _leaf_builder(
        self,
        key: ec.EllipticCurvePrivateKey,
        identity: str,
        issuer: str,
        not_before: datetime,
        not_after: datetime,
        serial: int,
    ) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(
                x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()), critical=False
            )
            .add_extension(
                x509.SubjectAlternativeName([x509.UniformResourceIdentifier(identity)]), critical=True
            )
            .add_extension(x509.UnrecognizedExtension(ISSUER_V1, issuer.encode()), critical=False)
            .add_extension(x509.UnrecognizedExtension(ISSUER_V2, _utf8(issuer)), critical=False)
        )

    def _sct_list(self, signature: bytes, when: datetime) -> bytes:
        log_id = hashlib.sha256(_spki(self.ct_key)).digest()
        sct = (
            b"\x00"
            + log_id
            + struct.pack("!Q", int(when.timestamp() * 1000))
            + b"\x00\x00"
            + b"\x04\x03"
            + struct.pack("!H", len(signature))
            + signature
        )
        body = struct.pack("!H", len(sct)) + sct
        return _octets(struct.pack("!H", len(body)) + body)

    def leaf(
        self,
        identity: str,
        issuer: str = GITHUB_ISSUER,
        *,
        not_before: datetime | None = None,
        lifetime: timedelta = timedelta(minutes=10),
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        """A Fulcio-style leaf (empty subject, SAN + issuer extensions, embedded SCT)."""
        key = ec.generate_private_key(ec.SECP256R1())
        nb = not_before or self.start
        serial = x509.random_serial_number()
        placeholder = self._sct_list(b"\x00" * 72, nb)
        pre = (
            self._leaf_builder(key, identity, issuer, nb, nb + lifetime, serial)
            .add_extension(x509.UnrecognizedExtension(SCT_OID, placeholder), critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )
        tbs = pre.tbs_precertificate_bytes
        issuer_key_hash = hashlib.sha256(_spki(self.ca_key)).digest()
        signed = (
            struct.pack("!BBQH", 0, 0, int(nb.timestamp() * 1000), 1)
            + issuer_key_hash
            + struct.pack("!I", len(tbs))[1:]
            + tbs
            + b"\x00\x00"
        )
        sig = self.ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
        cert = (
            self._leaf_builder(key, identity, issuer, nb, nb + lifetime, serial)
            .add_extension(x509.UnrecognizedExtension(SCT_OID, self._sct_list(sig, nb)), critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )
        return key, x509.load_der_x509_certificate(cert.public_bytes(serialization.Encoding.DER))

    # --- bundles ------------------------------------------------------------------------

    def _checkpoint(self, root: bytes) -> str:
        note = f"{ORIGIN}\n1\n{_b64(root)}\n"
        sig = self.rekor_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        hint = hashlib.sha256(_spki(self.rekor_key)).digest()[:4]
        return f"{note}\n\u2014 {ORIGIN.split(' ')[0]} {_b64(hint + sig)}\n"

    def dsse_bundle(
        self,
        statement: bytes,
        identity: str,
        issuer: str = GITHUB_ISSUER,
        *,
        integrated: datetime | None = None,
        not_before: datetime | None = None,
        promise: bool = True,
        log_index: int = 7,
    ) -> bytes:
        """A v0.3 keyless DSSE bundle over `statement`, logged at `integrated` (default: one
        minute after the certificate's start)."""
        key, cert = self.leaf(identity, issuer, not_before=not_before)
        payload_type = "application/vnd.in-toto+json"
        pae = f"DSSEv1 {len(payload_type)} {payload_type} {len(statement)} ".encode() + statement
        sig = key.sign(pae, ec.ECDSA(hashes.SHA256()))
        envelope = {
            "payload": _b64(statement),
            "payloadType": payload_type,
            "signatures": [{"sig": _b64(sig)}],
        }
        pem = cert.public_bytes(serialization.Encoding.PEM)
        body = json.dumps(
            {
                "apiVersion": "0.0.1",
                "kind": "dsse",
                "spec": {
                    "envelopeHash": {
                        "algorithm": "sha256",
                        "value": hashlib.sha256(json.dumps(envelope).encode()).hexdigest(),
                    },
                    "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(statement).hexdigest()},
                    "signatures": [{"signature": _b64(sig), "verifier": _b64(pem)}],
                },
            },
            separators=(",", ":"),
        ).encode()
        when = integrated or (not_before or self.start) + timedelta(minutes=1)
        entry = self.log_entry(body, "dsse", when, log_index=log_index, promise=promise)
        bundle = {
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": _b64(cert.public_bytes(serialization.Encoding.DER))},
                "tlogEntries": [entry],
            },
            "dsseEnvelope": envelope,
        }
        return json.dumps(bundle).encode()

    def log_entry(
        self, body: bytes, kind: str, when: datetime, *, log_index: int = 7, promise: bool = True
    ) -> dict[str, Any]:
        """A Rekor v1 entry for `body` in a one-leaf tree: inclusion proof, checkpoint, SET."""
        log_id = hashlib.sha256(_spki(self.rekor_key)).digest()
        leaf_hash = hashlib.sha256(b"\x00" + body).digest()
        entry: dict[str, Any] = {
            "logIndex": str(log_index),
            "logId": {"keyId": _b64(log_id)},
            "kindVersion": {"kind": kind, "version": "0.0.1"},
            "integratedTime": str(int(when.timestamp())),
            "inclusionProof": {
                "logIndex": "0",
                "rootHash": _b64(leaf_hash),
                "treeSize": "1",
                "hashes": [],
                "checkpoint": {"envelope": self._checkpoint(leaf_hash)},
            },
            "canonicalizedBody": _b64(body),
        }
        if promise:
            canon = rfc8785.dumps(
                {
                    "body": _b64(body),
                    "integratedTime": int(when.timestamp()),
                    "logID": log_id.hex(),
                    "logIndex": log_index,
                }
            )
            entry["inclusionPromise"] = {
                "signedEntryTimestamp": _b64(self.rekor_key.sign(canon, ec.ECDSA(hashes.SHA256())))
            }
        return entry

    def legacy_att_layer(
        self,
        statement: bytes,
        identity: str,
        issuer: str = GITHUB_ISSUER,
        *,
        integrated: datetime | None = None,
        log_index: int = 9,
        leaf: tuple[ec.EllipticCurvePrivateKey, x509.Certificate] | None = None,
    ) -> tuple[bytes, dict[str, str]]:
        """cosign 2's keyless `.att` layer: a DSSE envelope plus certificate, chain and Rekor
        bundle (SET over an `intoto/0.0.2` entry, no inclusion proof) annotations."""
        key, cert = leaf or self.leaf(identity, issuer)
        payload_type = "application/vnd.in-toto+json"
        pae = f"DSSEv1 {len(payload_type)} {payload_type} {len(statement)} ".encode() + statement
        sig = key.sign(pae, ec.ECDSA(hashes.SHA256()))
        envelope = json.dumps(
            {
                "payloadType": payload_type,
                "payload": _b64(statement),
                "signatures": [{"keyid": "", "sig": _b64(sig)}],
            }
        ).encode()
        pem = cert.public_bytes(serialization.Encoding.PEM)
        body = json.dumps(
            {
                "apiVersion": "0.0.2",
                "kind": "intoto",
                "spec": {
                    "content": {
                        "envelope": {
                            "payloadType": payload_type,
                            "payload": _b64(_b64(statement).encode()),
                            "signatures": [{"sig": _b64(_b64(sig).encode()), "publicKey": _b64(pem)}],
                        },
                        "hash": {"algorithm": "sha256", "value": hashlib.sha256(envelope).hexdigest()},
                        "payloadHash": {
                            "algorithm": "sha256",
                            "value": hashlib.sha256(statement).hexdigest(),
                        },
                    }
                },
            },
            separators=(",", ":"),
        ).encode()
        when = int((integrated or self.start + timedelta(minutes=1)).timestamp())
        log_id = hashlib.sha256(_spki(self.rekor_key)).digest().hex()
        canon = rfc8785.dumps(
            {"body": _b64(body), "integratedTime": when, "logID": log_id, "logIndex": log_index}
        )
        rekor = {
            "SignedEntryTimestamp": _b64(self.rekor_key.sign(canon, ec.ECDSA(hashes.SHA256()))),
            "Payload": {"body": _b64(body), "integratedTime": when, "logIndex": log_index, "logID": log_id},
        }
        return envelope, {
            "dev.sigstore.cosign/certificate": pem.decode(),
            "dev.sigstore.cosign/chain": self.ca_cert.public_bytes(serialization.Encoding.PEM).decode(),
            "dev.sigstore.cosign/bundle": json.dumps(rekor),
        }

    def key_message_bundle(
        self,
        artifact: bytes,
        key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey,
        *,
        logged_key: ec.EllipticCurvePrivateKey | None = None,
        logged_digest: bytes | None = None,
        when: datetime | None = None,
    ) -> bytes:
        """A key-based (managed key) messageSignature bundle with a logged `hashedrekord/0.0.1`
        entry (integrated at `when`, default one minute after the start); `logged_key` /
        `logged_digest` put something else in the (validly logged) body."""
        digest = hashlib.sha256(artifact).digest()
        if isinstance(key, ed25519.Ed25519PrivateKey):
            sig = key.sign(artifact)
        else:
            sig = key.sign(artifact, ec.ECDSA(hashes.SHA256()))
        pem = (
            (logged_key or key)
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        body = json.dumps(
            {
                "apiVersion": "0.0.1",
                "kind": "hashedrekord",
                "spec": {
                    "data": {"hash": {"algorithm": "sha256", "value": (logged_digest or digest).hex()}},
                    "signature": {"content": _b64(sig), "publicKey": {"content": _b64(pem)}},
                },
            },
            separators=(",", ":"),
        ).encode()
        entry = self.log_entry(body, "hashedrekord", when or self.start + timedelta(minutes=1))
        spki = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return json.dumps(
            {
                "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                "verificationMaterial": {
                    "publicKey": {"hint": _b64(hashlib.sha256(spki).digest())},
                    "tlogEntries": [entry],
                },
                "messageSignature": {
                    "messageDigest": {"algorithm": "SHA2_256", "digest": _b64(digest)},
                    "signature": _b64(sig),
                },
            }
        ).encode()

    def key_dsse_bundle(
        self,
        statement: bytes,
        key: ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey,
        *,
        when: datetime | None = None,
        promise: bool = True,
        log_index: int = 11,
    ) -> bytes:
        """A key-based (managed key) v0.3 DSSE bundle over `statement`: `publicKey.hint` and one
        `dsse/0.0.1` entry logging the signature and `key` (the body `check_key_entry_body`
        matches), integrated at `when` (default: one minute after the instance's start)."""
        payload_type = "application/vnd.in-toto+json"
        pae = f"DSSEv1 {len(payload_type)} {payload_type} {len(statement)} ".encode() + statement
        if isinstance(key, ed25519.Ed25519PrivateKey):
            sig = key.sign(pae)
        else:
            sig = key.sign(pae, ec.ECDSA(hashes.SHA256()))
        public = key.public_key()
        spki = public.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        envelope = {
            "payload": _b64(statement),
            "payloadType": payload_type,
            "signatures": [{"sig": _b64(sig)}],
        }
        body = json.dumps(
            {
                "apiVersion": "0.0.1",
                "kind": "dsse",
                "spec": {
                    "envelopeHash": {
                        "algorithm": "sha256",
                        "value": hashlib.sha256(json.dumps(envelope).encode()).hexdigest(),
                    },
                    "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(statement).hexdigest()},
                    "signatures": [{"signature": _b64(sig), "verifier": _b64(pem)}],
                },
            },
            separators=(",", ":"),
        ).encode()
        entry = self.log_entry(
            body, "dsse", when or self.start + timedelta(minutes=1), log_index=log_index, promise=promise
        )
        return json.dumps(
            {
                "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                "verificationMaterial": {
                    "publicKey": {"hint": _b64(hashlib.sha256(spki).digest())},
                    "tlogEntries": [entry],
                },
                "dsseEnvelope": envelope,
            }
        ).encode()
