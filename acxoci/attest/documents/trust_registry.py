# ruff: noqa: E501
"""Typed model of the trust registry (`acx.trust-registry/1`): generated from schemas/acx.trust-registry-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["TrustRegistryDoc"]


class TrustRegistryDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX trust registry, acx.trust-registry/1"""

    schema_version: str = field(name="schemaVersion")
    registry_id: str | UnsetType | None = field(default=UNSET, name="registryId")
    updated_at: str | UnsetType | None = field(default=UNSET, name="updatedAt")
    keys: tuple[TrustRegistryDocKey, ...]


class TrustRegistryDocKey(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`TrustRegistryDocKey`"""

    keyid: str
    publisher_id: str = field(name="publisherId")
    algorithm: str
    public_key_pem: str = field(name="publicKeyPem")
    status: str
    not_before: str = field(name="notBefore")
    not_after: str = field(name="notAfter")
    namespace_proof: TrustRegistryDocNamespaceProof = field(name="namespaceProof")
    rotated_from: str | UnsetType | None = field(default=UNSET, name="rotatedFrom")
    rotated_to: str | UnsetType | None = field(default=UNSET, name="rotatedTo")
    revoked_at: str | UnsetType | None = field(default=UNSET, name="revokedAt")
    revocation_reason: str | UnsetType | None = field(default=UNSET, name="revocationReason")


class TrustRegistryDocNamespaceProof(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`TrustRegistryDocNamespaceProof`"""

    method: str
    oidc_subject: str | UnsetType = field(default=UNSET, name="oidcSubject")
    oidc_issuer: str | UnsetType = field(default=UNSET, name="oidcIssuer")
    verified_at: str = field(name="verifiedAt")
    txt_record: str | UnsetType = field(default=UNSET, name="txtRecord")
