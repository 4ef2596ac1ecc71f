"""DSSE envelopes: PAE, sign, verify. Standard base64 out; standard or URL-safe accepted in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acxoci.attest.b64 import b64decode_lenient, b64encode
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.keys import PrivateKey, PublicKey

INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


@dataclass(frozen=True)
class Signature:
    keyid: str | None
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[Signature, ...]

    @classmethod
    def from_json(cls, doc: Any) -> Envelope:
        """Parse an envelope object, checking its shape (not its signatures)."""
        if not isinstance(doc, dict):
            raise MalformedError("DSSE envelope is not a JSON object")
        pt = doc.get("payloadType")
        if not isinstance(pt, str) or not pt:
            raise MalformedError("DSSE envelope has no payloadType")
        if not pt.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in pt):
            raise MalformedError("DSSE payloadType is not UTF-8 text (lone surrogate)")
        if "payload" not in doc or not isinstance(doc["payload"], str):
            raise MalformedError("DSSE envelope has no payload")
        payload = b64decode_lenient(doc["payload"])
        raw_sigs = doc.get("signatures")
        if not isinstance(raw_sigs, list) or not raw_sigs:
            raise MalformedError("DSSE envelope has no signatures")
        sigs: list[Signature] = []
        for i, s in enumerate(raw_sigs):
            if not isinstance(s, dict) or not isinstance(s.get("sig"), str):
                raise MalformedError(f"DSSE signatures[{i}] has no sig")
            keyid = s.get("keyid")
            if keyid is not None and not isinstance(keyid, str):
                raise MalformedError(f"DSSE signatures[{i}].keyid is not a string")
            sigs.append(Signature(keyid, b64decode_lenient(s["sig"])))
        return cls(pt, payload, tuple(sigs))

    def to_json(self, *, include_keyid: bool = True) -> dict[str, Any]:
        """Envelope as JSON: `{payloadType, payload, signatures:[{keyid, sig}]}`.

        With include_keyid=False the keyid is left out (sigstore bundles need that).
        """
        sigs: list[dict[str, str]] = []
        for s in self.signatures:
            entry: dict[str, str] = {}
            if include_keyid:
                entry["keyid"] = s.keyid or ""
            entry["sig"] = b64encode(s.sig)
            sigs.append(entry)
        return {"payloadType": self.payload_type, "payload": b64encode(self.payload), "signatures": sigs}

    def pae(self) -> bytes:
        return pae(self.payload_type, self.payload)

    def verify(self, key: PublicKey, *, index: int | None = 0) -> Signature:
        """Verify with `key`. index=0 checks only the first signature (the ACX rule);
        index=None accepts any signature that verifies. Returns the verifying signature."""
        candidates = self.signatures if index is None else self.signatures[index:index + 1]
        if not candidates:
            raise SignatureError("DSSE envelope has no signature to check")
        message = self.pae()
        for s in candidates:
            try:
                key.verify(s.sig, message)
                return s
            except SignatureError:
                continue
        raise SignatureError("DSSE signature does not verify with the given key")


def sign(payload_type: str, payload: bytes, key: PrivateKey, keyid: str | None) -> Envelope:
    """Sign `payload` and return a one-signature envelope."""
    sig = key.sign(pae(payload_type, payload))
    return Envelope(payload_type, payload, (Signature(keyid, sig),))
