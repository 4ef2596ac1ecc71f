# ruff: noqa: E501
"""Typed model of the verification policy (`acx.verification-policy/1`, a host's install policy): generated from schemas/acx.verification-policy-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["VerificationPolicyDoc"]


class VerificationPolicyDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """acxoci verification policy, acx.verification-policy/1"""

    schema_version: str = field(name="schemaVersion")
    description: str | UnsetType = UNSET
    publishers: tuple[VerificationPolicyDocPublishersItem, ...] | UnsetType = UNSET
    minimum_trust: str | UnsetType = field(default=UNSET, name="minimumTrust")
    provenance: VerificationPolicyDocProvenance | UnsetType = UNSET
    attestations: VerificationPolicyDocAttestations | UnsetType = UNSET
    level: VerificationPolicyDocLevel | UnsetType = UNSET
    revocation: VerificationPolicyDocRevocation | UnsetType = UNSET
    registries: VerificationPolicyDocRegistries | UnsetType = UNSET
    harness: VerificationPolicyDocHarness | UnsetType = UNSET
    limits: VerificationPolicyDocLimits | UnsetType = UNSET


class VerificationPolicyDocLimits(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocLimits`"""

    budget_above_host: str | UnsetType = field(default=UNSET, name="budgetAboveHost")
    require_host_limits: bool | UnsetType = field(default=UNSET, name="requireHostLimits")


class VerificationPolicyDocHarness(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocHarness`"""

    require_host: bool | UnsetType = field(default=UNSET, name="requireHost")


class VerificationPolicyDocRegistries(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocRegistries`"""

    allowed: tuple[str, ...] | UnsetType = UNSET


class VerificationPolicyDocRevocation(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocRevocation`"""

    max_status_list_age_seconds: int | UnsetType = field(default=UNSET, name="maxStatusListAgeSeconds")
    allow_offline_cached: bool | UnsetType = field(default=UNSET, name="allowOfflineCached")
    status_list_cache: str | UnsetType = field(default=UNSET, name="statusListCache")
    status_lists: dict[str, str] | UnsetType = field(default=UNSET, name="statusLists")


class VerificationPolicyDocLevel(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocLevel`"""

    minimum: str | int | UnsetType = UNSET
    issuers: tuple[str, ...] | UnsetType = UNSET
    issuer_registries: tuple[str, ...] | UnsetType = field(default=UNSET, name="issuerRegistries")
    allow_demo: bool | UnsetType = field(default=UNSET, name="allowDemo")
    verifiers: tuple[str, ...] | UnsetType = UNSET


class VerificationPolicyDocAttestations(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocAttestations`"""

    formats: tuple[str, ...] | UnsetType = UNSET
    predicate_types: tuple[str, ...] | UnsetType = field(default=UNSET, name="predicateTypes")
    keys: tuple[VerificationPolicyDocAttestationsKeysItem, ...] | UnsetType = UNSET
    trusted_root: str | UnsetType = field(default=UNSET, name="trustedRoot")


class VerificationPolicyDocAttestationsKeysItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocAttestationsKeysItem`"""

    public_key_pem: str | UnsetType = field(default=UNSET, name="publicKeyPem")
    public_key_file: str | UnsetType = field(default=UNSET, name="publicKeyFile")


class VerificationPolicyDocProvenance(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Require SLSA Provenance v1 for the artifact, signed keylessly by a CI run"""

    repository: str | UnsetType = UNSET
    ref: str | UnsetType = UNSET
    signer_workflow: str | UnsetType = field(default=UNSET, name="signerWorkflow")


class VerificationPolicyDocPublishersItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocPublishersItem`"""

    id: str
    trust_registries: tuple[str, ...] | UnsetType = field(default=UNSET, name="trustRegistries")
    keys: tuple[VerificationPolicyDocPublishersItemKeysItem, ...] | UnsetType = UNSET
    identities: tuple[VerificationPolicyDocPublishersItemIdentitiesItem, ...] | UnsetType = UNSET


class VerificationPolicyDocPublishersItemIdentitiesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocPublishersItemIdentitiesItem`"""

    issuer: str
    subject: str | UnsetType = UNSET
    subject_reg_exp: str | UnsetType = field(default=UNSET, name="subjectRegExp")


class VerificationPolicyDocPublishersItemKeysItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`VerificationPolicyDocPublishersItemKeysItem`"""

    keyid: str | UnsetType = UNSET
    public_key_pem: str | UnsetType = field(default=UNSET, name="publicKeyPem")
    public_key_file: str | UnsetType = field(default=UNSET, name="publicKeyFile")
