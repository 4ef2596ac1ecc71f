"""W3C Bitstring Status List v1.0: the bitstring, its GZIP + multibase base64url encoding, and the
(unsigned) status-list credential and entry shapes. Bits count MSB-first from byte 0; 1 = set.
"""

from __future__ import annotations

import base64
import gzip
import io
import re
import zlib
from dataclasses import dataclass
from typing import Any, Final

from acxoci.attest.errors import MalformedError

MIN_BITS: Final = 131072  # 16 KiB, the spec's minimum (herd privacy)
MAX_BITS: Final = 8 * 16 * 1024 * 1024  # refuse lists that inflate beyond 16 MiB
MAX_ENCODED_CHARS: Final = 4 * 1024 * 1024
CREDENTIAL_TYPE: Final = "BitstringStatusListCredential"
LIST_TYPE: Final = "BitstringStatusList"
ENTRY_TYPE: Final = "BitstringStatusListEntry"
VC_V2_CONTEXT: Final = "https://www.w3.org/ns/credentials/v2"
_B64URL_RE: Final = re.compile(r"^[A-Za-z0-9_-]*$")


def new_bitstring(size_bits: int = MIN_BITS) -> bytearray:
    """An all-zero bitstring of `size_bits` (a multiple of 8, at least MIN_BITS)."""
    if size_bits < MIN_BITS or size_bits % 8:
        raise MalformedError(f"status list size {size_bits} must be a multiple of 8 and >= {MIN_BITS}")
    if size_bits > MAX_BITS:
        raise MalformedError(f"status list size {size_bits} exceeds {MAX_BITS} bits")
    return bytearray(size_bits // 8)


def _locate(bits: bytes | bytearray, index: int) -> tuple[int, int]:
    if not isinstance(index, int) or isinstance(index, bool) or index < 0 or index >= len(bits) * 8:
        raise MalformedError(f"status list index {index!r} is outside 0..{len(bits) * 8 - 1}")
    return index // 8, 7 - (index % 8)


def get_bit(bits: bytes | bytearray, index: int) -> bool:
    """The bit at `index`, counting MSB-first from byte 0."""
    byte, shift = _locate(bits, index)
    return bool((bits[byte] >> shift) & 1)


def set_bit(bits: bytearray, index: int, value: bool = True) -> None:
    """Set (or clear) the bit at `index` in place."""
    byte, shift = _locate(bits, index)
    if value:
        bits[byte] |= 1 << shift
    else:
        bits[byte] &= ~(1 << shift) & 0xFF


def encode_list(bits: bytes | bytearray) -> str:
    """`u` + base64url (no padding) of the GZIP-compressed bitstring."""
    if len(bits) * 8 < MIN_BITS:
        raise MalformedError(f"status list of {len(bits) * 8} bits is below the {MIN_BITS}-bit minimum")
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(bytes(bits))
    return "u" + base64.urlsafe_b64encode(buf.getvalue()).decode("ascii").rstrip("=")


def decode_list(encoded: str, *, max_bits: int = MAX_BITS, min_bits: int = MIN_BITS) -> bytearray:
    """Decode an `encodedList`, refusing oversize input and decompression bombs (output capped)."""
    if not isinstance(encoded, str) or not encoded.startswith("u"):
        raise MalformedError("encodedList is not multibase base64url (must start with 'u')")
    if len(encoded) > MAX_ENCODED_CHARS:
        raise MalformedError(f"encodedList of {len(encoded)} characters exceeds {MAX_ENCODED_CHARS}")
    body = encoded[1:]
    if not _B64URL_RE.fullmatch(body) or len(body) % 4 == 1:
        raise MalformedError("encodedList must be base64url without padding")
    # cannot fail: only alphabet characters, never 4k+1 of them, padded here (lenient on spare bits)
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    limit = max_bits // 8
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # GZIP container only
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise MalformedError(f"encodedList is not GZIP data: {exc}") from exc
    if len(out) > limit or inflater.unconsumed_tail:
        raise MalformedError(f"encodedList inflates beyond {max_bits} bits (decompression bomb guard)")
    if not inflater.eof:
        raise MalformedError("encodedList GZIP stream is truncated")
    if inflater.unused_data:
        raise MalformedError("encodedList has trailing data after the GZIP stream")
    if len(out) * 8 < min_bits:
        raise MalformedError(f"status list of {len(out) * 8} bits is below the {min_bits}-bit minimum")
    return bytearray(out)


def status_list_credential(*, list_id: str, issuer: str, encoded_list: str, valid_from: str,
                           valid_until: str | None = None, purpose: str = "revocation") -> dict[str, Any]:
    """An unsigned BitstringStatusListCredential (sign it with attest.vc.sign)."""
    doc: dict[str, Any] = {
        "@context": [VC_V2_CONTEXT],
        "id": list_id,
        "type": ["VerifiableCredential", CREDENTIAL_TYPE],
        "issuer": issuer,
        "validFrom": valid_from,
        "credentialSubject": {
            "id": f"{list_id}#list",
            "type": LIST_TYPE,
            "statusPurpose": purpose,
            "encodedList": encoded_list,
        },
    }
    if valid_until is not None:
        doc["validUntil"] = valid_until
    return doc


@dataclass(frozen=True)
class StatusEntry:
    """A parsed BitstringStatusListEntry (`credentialStatus`)."""

    list_credential: str
    index: int
    purpose: str
    entry_id: str | None

    @classmethod
    def from_json(cls, doc: Any) -> StatusEntry:
        """Parse and check a credentialStatus object; the index is a base-10 string per the spec."""
        if not isinstance(doc, dict) or doc.get("type") != ENTRY_TYPE:
            raise MalformedError(f"credentialStatus is not a {ENTRY_TYPE}")
        lc = doc.get("statusListCredential")
        if not isinstance(lc, str) or not lc:
            raise MalformedError("credentialStatus.statusListCredential is missing")
        raw_index = doc.get("statusListIndex")
        if not isinstance(raw_index, str) or not re.fullmatch(r"[0-9]{1,12}", raw_index):
            raise MalformedError(f"credentialStatus.statusListIndex {raw_index!r} is not a base-10 string")
        purpose = doc.get("statusPurpose")
        if not isinstance(purpose, str) or not purpose:
            raise MalformedError("credentialStatus.statusPurpose is missing")
        eid = doc.get("id")
        return cls(lc, int(raw_index), purpose, eid if isinstance(eid, str) else None)

    def to_json(self) -> dict[str, Any]:
        """The entry as written into a credential."""
        out: dict[str, Any] = {}
        if self.entry_id is not None:
            out["id"] = self.entry_id
        out.update({"type": ENTRY_TYPE, "statusPurpose": self.purpose,
                    "statusListIndex": str(self.index), "statusListCredential": self.list_credential})
        return out


def list_bits_from_credential(doc: Any) -> tuple[bytearray, str]:
    """(bitstring, statusPurpose) of a BitstringStatusListCredential (shape checks only, no proof)."""
    if not isinstance(doc, dict):
        raise MalformedError("status list credential is not a JSON object")
    types = doc.get("type")
    if not isinstance(types, list) or CREDENTIAL_TYPE not in types:
        raise MalformedError(f"status list credential type does not include {CREDENTIAL_TYPE}")
    subj = doc.get("credentialSubject")
    if not isinstance(subj, dict) or subj.get("type") != LIST_TYPE:
        raise MalformedError(f"status list credentialSubject is not a {LIST_TYPE}")
    purpose = subj.get("statusPurpose")
    if not isinstance(purpose, str):
        raise MalformedError("status list credentialSubject.statusPurpose is missing")
    encoded = subj.get("encodedList")
    if not isinstance(encoded, str):
        raise MalformedError("status list credentialSubject.encodedList is missing")
    return decode_list(encoded), purpose
