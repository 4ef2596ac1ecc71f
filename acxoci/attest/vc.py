"""W3C VC Data Integrity proofs with the `eddsa-jcs-2022` cryptosuite, plus base58btc multibase.

Two variants: `w3c` (vc-di-eddsa: the proof configuration carries the document's `@context`) and
`acx` (the ACX reference: no `@context` in the proof configuration). We sign W3C; we verify both.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from acxoci.attest.canonical import jcs
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.keys import PrivateKey, PublicKey

Variant = Literal["w3c", "acx"]
VARIANT_W3C: Final = "w3c"
VARIANT_ACX: Final = "acx"
VARIANTS: Final[tuple[Variant, ...]] = ("w3c", "acx")

PROOF_TYPE: Final = "DataIntegrityProof"
CRYPTOSUITE: Final = "eddsa-jcs-2022"

_B58_ALPHABET: Final = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX: Final = {ch: i for i, ch in enumerate(_B58_ALPHABET)}
_DATETIME_RE: Final = re.compile(
    r"^-?[0-9]{4,}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?$"
)
MAX_B58_CHARS: Final = 4096


def b58encode(data: bytes) -> str:
    """Base58 (Bitcoin alphabet); each leading 0x00 byte becomes a leading `1`."""
    zeros = len(data) - len(data.lstrip(b"\x00"))
    n = int.from_bytes(data, "big")
    out: list[str] = []
    while n:
        n, rem = divmod(n, 58)
        out.append(_B58_ALPHABET[rem])
    return "1" * zeros + "".join(reversed(out))


def b58decode(text: str) -> bytes:
    """Inverse of b58encode; rejects characters outside the Bitcoin alphabet and huge inputs."""
    if not isinstance(text, str):
        raise MalformedError("base58 value is not a string")
    if len(text) > MAX_B58_CHARS:
        raise MalformedError(f"base58 value of {len(text)} characters exceeds {MAX_B58_CHARS}")
    n = 0
    for pos, ch in enumerate(text):
        digit = _B58_INDEX.get(ch)
        if digit is None:
            raise MalformedError(f"invalid base58 character {ch!r} at position {pos}")
        n = n * 58 + digit
    zeros = len(text) - len(text.lstrip("1"))
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")  # b"" for n == 0
    return b"\x00" * zeros + body


def multibase_b58btc_encode(data: bytes) -> str:
    """Multibase base58btc: `z` + base58."""
    return "z" + b58encode(data)


def multibase_b58btc_decode(text: str) -> bytes:
    """Decode a `z`-prefixed multibase base58btc string."""
    if not isinstance(text, str) or not text.startswith("z"):
        raise MalformedError("proofValue is not multibase base58btc (must start with 'z')")
    return b58decode(text[1:])


@dataclass(frozen=True)
class ProofResult:
    """What verified: the variant, the verification method and the proof's created time."""

    variant: Variant
    verification_method: str
    created: str | None
    proof_purpose: str


def _check_options(options: dict[str, Any]) -> None:
    if options.get("type") != PROOF_TYPE:
        raise MalformedError(f"proof.type is {options.get('type')!r}, expected {PROOF_TYPE!r}")
    if options.get("cryptosuite") != CRYPTOSUITE:
        raise MalformedError(f"proof.cryptosuite is {options.get('cryptosuite')!r}, expected {CRYPTOSUITE!r}")
    created = options.get("created")
    if created is not None and (not isinstance(created, str) or not _DATETIME_RE.fullmatch(created)):
        raise MalformedError(f"proof.created {created!r} is not an XML Schema dateTime")
    vm = options.get("verificationMethod")
    if not isinstance(vm, str) or not vm:
        raise MalformedError("proof.verificationMethod is missing")
    purpose = options.get("proofPurpose")
    if not isinstance(purpose, str) or not purpose:
        raise MalformedError("proof.proofPurpose is missing")


def proof_configuration(unsecured: dict[str, Any], options: dict[str, Any], variant: Variant) -> bytes:
    """Canonical proof configuration: JCS of the options (W3C adds the document's `@context`)."""
    _check_options(options)
    config = dict(options)
    config.pop("proofValue", None)
    if variant == VARIANT_W3C:
        if "@context" in unsecured:
            config["@context"] = unsecured["@context"]
    elif variant != VARIANT_ACX:  # the ACX variant hashes the proof fields exactly as they are
        raise MalformedError(f"unknown eddsa-jcs-2022 variant {variant!r}")
    return jcs(config)


def hash_data(unsecured: dict[str, Any], options: dict[str, Any], variant: Variant) -> bytes:
    """sha256(canonical proof config) ‖ sha256(JCS(document without proof))."""
    config_hash = hashlib.sha256(proof_configuration(unsecured, options, variant)).digest()
    doc_hash = hashlib.sha256(jcs(unsecured)).digest()
    return config_hash + doc_hash


def sign(document: dict[str, Any], key: PrivateKey, *, verification_method: str, created: str,
         proof_purpose: str = "assertionMethod", variant: Variant = VARIANT_W3C) -> dict[str, Any]:
    """Return a copy of `document` with an eddsa-jcs-2022 DataIntegrityProof added (Ed25519 only)."""
    if key.public().algorithm != "ed25519":
        raise MalformedError("eddsa-jcs-2022 needs an Ed25519 key")
    if not isinstance(document, dict):
        raise MalformedError("document to sign is not a JSON object")
    unsecured = copy.deepcopy(document)  # the one copy: the result shares nothing with `document`
    unsecured.pop("proof", None)
    options: dict[str, Any] = {
        "type": PROOF_TYPE,
        "cryptosuite": CRYPTOSUITE,
        "created": created,
        "verificationMethod": verification_method,
        "proofPurpose": proof_purpose,
    }
    signature = key.sign(hash_data(unsecured, options, variant))
    return {**unsecured, "proof": {**options, "proofValue": multibase_b58btc_encode(signature)}}


def split_proof(secured: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """(document without proof, proof options without proofValue, signature bytes)."""
    if not isinstance(secured, dict):
        raise MalformedError("secured document is not a JSON object")
    proof = secured.get("proof")
    if not isinstance(proof, dict):
        raise MalformedError("document has no single proof object")
    value = proof.get("proofValue")
    if not isinstance(value, str):
        raise MalformedError("proof.proofValue is missing")
    sig = multibase_b58btc_decode(value)
    if len(sig) != 64:
        raise MalformedError(f"proofValue decodes to {len(sig)} bytes, an Ed25519 signature has 64")
    unsecured = {k: v for k, v in secured.items() if k != "proof"}
    options = {k: v for k, v in proof.items() if k != "proofValue"}
    return unsecured, options, sig


def _verify_one(unsecured: dict[str, Any], options: dict[str, Any], sig: bytes, key: PublicKey,
                variant: Variant) -> None:
    if variant == VARIANT_W3C and "@context" in options:
        # vc-di-eddsa: the document's @context must start with the proof's @context, which then applies.
        pctx = options["@context"]
        dctx = unsecured.get("@context")
        plist = pctx if isinstance(pctx, list) else [pctx]
        dlist = dctx if isinstance(dctx, list) else [dctx]
        if dlist[: len(plist)] != plist:
            raise SignatureError("proof @context is not a prefix of the document @context")
        # proof_configuration then sets the config's @context to the document's, now this same one
        unsecured = {**unsecured, "@context": pctx}
    key.verify(sig, hash_data(unsecured, options, variant))


def verify(secured: dict[str, Any], key: PublicKey, *,
           variant: Variant | Literal["auto"] = "auto") -> ProofResult:
    """Verify the eddsa-jcs-2022 proof with `key`; `auto` tries W3C then the ACX variant.

    Raises MalformedError for a malformed proof and SignatureError when no variant verifies."""
    if key.algorithm != "ed25519":
        raise MalformedError("eddsa-jcs-2022 needs an Ed25519 key")
    unsecured, options, sig = split_proof(secured)
    _check_options(options)
    candidates: tuple[Variant, ...] = VARIANTS if variant == "auto" else (variant,)
    for v in candidates:
        if v not in VARIANTS:
            raise MalformedError(f"unknown eddsa-jcs-2022 variant {v!r}")
        try:
            _verify_one(unsecured, options, sig, key, v)
        except SignatureError:
            continue
        return ProofResult(v, str(options["verificationMethod"]),
                           options.get("created"),  # _check_options: a string or absent
                           str(options["proofPurpose"]))
    tried = "/".join(candidates)
    raise SignatureError(f"eddsa-jcs-2022 proof does not verify ({tried} variant)")
