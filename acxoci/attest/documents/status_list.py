# ruff: noqa: E501
"""Typed model of the status list credential (W3C Bitstring Status List): generated from schemas/acx.status-list-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["StatusListDoc"]


class StatusListDoc(Struct, frozen=True, kw_only=True):
    """Bitstring status list credential (W3C Bitstring Status List v1.0, VC 2.0)"""

    context: tuple[dict[str, Any] | str, ...] | str = field(name="@context")
    id: str
    type: tuple[str, ...]
    issuer: StatusListDocIssuer | str
    valid_from: str = field(name="validFrom")
    valid_until: str | UnsetType = field(default=UNSET, name="validUntil")
    credential_subject: StatusListDocCredentialSubject = field(name="credentialSubject")
    proof: StatusListDocProof | UnsetType = UNSET
    name: Any = UNSET
    description: Any = UNSET


class StatusListDocProof(Struct, frozen=True, kw_only=True):
    """`StatusListDocProof`"""

    type: str
    cryptosuite: str
    created: str | UnsetType = UNSET
    verification_method: str = field(name="verificationMethod")
    proof_purpose: str = field(name="proofPurpose")
    proof_value: str = field(name="proofValue")
    context: Any = field(default=UNSET, name="@context")
    expires: str | UnsetType = UNSET
    nonce: str | UnsetType = UNSET
    domain: Any = UNSET
    challenge: str | UnsetType = UNSET
    id: str | UnsetType = UNSET
    previous_proof: Any = field(default=UNSET, name="previousProof")


class StatusListDocCredentialSubject(Struct, frozen=True, kw_only=True):
    """`StatusListDocCredentialSubject`"""

    id: str | UnsetType = UNSET
    type: str
    status_purpose: str = field(name="statusPurpose")
    encoded_list: str = field(name="encodedList")
    ttl: int | UnsetType = UNSET
    status_size: int | UnsetType = field(default=UNSET, name="statusSize")
    status_message: tuple[dict[str, Any], ...] | UnsetType = field(default=UNSET, name="statusMessage")
    status_reference: Any = field(default=UNSET, name="statusReference")


class StatusListDocIssuer(Struct, frozen=True, kw_only=True):
    """`StatusListDocIssuer`"""

    id: str
