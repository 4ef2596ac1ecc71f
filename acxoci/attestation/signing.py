"""Signing and key plumbing shared by OCI and blob attestations: sign a statement into a DSSE
envelope, wrap it in a bundle, load private/public key files, and try a set of trusted keys."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from acxoci.attest.bundle import build_dsse_bundle
from acxoci.attest.dsse import INTOTO_PAYLOAD_TYPE, Envelope, Signature
from acxoci.attest.dsse import sign as dsse_sign
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.intoto import Statement
from acxoci.attest.keys import PrivateKey, PublicKey, load_public_pem
from acxoci.attest.trust import TrustKey, TrustRegistry
from acxoci.errors import InvalidInput
from acxoci.fsutil import read_bytes


@dataclass(frozen=True)
class TrustedKey:
    """A key the verifier accepts, with where it came from and its trust-registry entry if any."""

    key: PublicKey
    source: str
    entry: TrustKey | None = None

    @property
    def keyid(self) -> str:
        return self.entry.keyid if self.entry is not None else self.key.keyid()


def load_public_key_file(path: Path) -> TrustedKey:
    """A `--key PUB` file: SPKI PEM (cosign.pub, openssl, acx key)."""
    data = read_bytes(path, "public key")
    try:
        return TrustedKey(load_public_pem(data), f"key file {path.name}")
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc


def trust_registry_keys(registry: TrustRegistry) -> list[TrustedKey]:
    """Every key of a trust registry, each with its entry (judged after the signature verifies)."""
    return [TrustedKey(k.public_key, f"trust registry {registry.registry_id or ''}".strip(), k)
            for k in registry.keys]


def sign_statement(statement: Statement, key: PrivateKey, *, keyid: str | None) -> Envelope:
    """DSSE-sign the JCS bytes of `statement` (in-toto payload type)."""
    return dsse_sign(INTOTO_PAYLOAD_TYPE, statement.canonical_bytes(), key, keyid)


def envelope_bytes(envelope: Envelope) -> bytes:
    """Compact JSON of a DSSE envelope (keyid kept, `""` when unset, like cosign 2.5)."""
    return json.dumps(envelope.to_json(include_keyid=True), separators=(",", ":")).encode("utf-8")


def bundle_bytes(envelope: Envelope, public: PublicKey) -> bytes:
    """A key-based sigstore bundle v0.3 (no DSSE keyid) around `envelope`."""
    bare = Envelope(envelope.payload_type, envelope.payload,
                    tuple(Signature(None, s.sig) for s in envelope.signatures))
    return json.dumps(build_dsse_bundle(bare, public), separators=(",", ":")).encode("utf-8")


def verify_with_keys(envelope: Envelope, keys: list[TrustedKey]) -> tuple[TrustedKey, Signature]:
    """The first trusted key that verifies any signature of `envelope`; SignatureError otherwise."""
    if not keys:
        raise SignatureError("no trusted key was given")
    for tk in keys:
        try:
            return tk, envelope.verify(tk.key, index=None)
        except SignatureError:
            continue
    noun = "the given key" if len(keys) == 1 else f"any of the {len(keys)} trusted keys"
    raise SignatureError(f"DSSE signature does not verify with {noun}")

