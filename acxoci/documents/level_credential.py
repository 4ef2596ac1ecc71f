# ruff: noqa: E501
"""Typed model of the level credential (a W3C VC 2.0 with an eddsa-jcs-2022 proof): generated from schemas/acx.level-credential-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["LevelCredentialDoc"]


class LevelCredentialDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX level credential (VC 2.0 + Open Badges 3.0 achievement)"""

    context: tuple[str, ...] = field(name="@context")
    id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    type: tuple[str, ...]
    issuer: LevelCredentialDocIssuer
    valid_from: str = field(name="validFrom")
    valid_until: str | UnsetType = field(default=UNSET, name="validUntil")
    credential_subject: LevelCredentialDocCredentialSubject = field(name="credentialSubject")
    evidence: tuple[LevelCredentialDocEvidenceItem, ...] | UnsetType = UNSET
    credential_status: (
        LevelCredentialDocCredentialStatus | UnsetType
    ) = field(default=UNSET, name="credentialStatus")
    proof: LevelCredentialDocProof


class LevelCredentialDocProof(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocProof`"""

    context: Any = field(default=UNSET, name="@context")
    type: str
    cryptosuite: str
    created: str | UnsetType = UNSET
    verification_method: str = field(name="verificationMethod")
    proof_purpose: str = field(name="proofPurpose")
    proof_value: str = field(name="proofValue")


class LevelCredentialDocCredentialStatus(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LevelCredentialDocCredentialStatus`"""

    id: str | UnsetType = UNSET
    type: str
    status_purpose: str = field(name="statusPurpose")
    status_list_index: str = field(name="statusListIndex")
    status_list_credential: str = field(name="statusListCredential")


class LevelCredentialDocEvidenceItem(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocEvidenceItem`"""

    id: str
    type: tuple[str, ...]
    acx_digest_multibase: str | UnsetType = field(default=UNSET, name="acx:digestMultibase")
    acx_trajectory_digest: str | UnsetType = field(default=UNSET, name="acx:trajectoryDigest")
    acx_dsse_envelope: (
        LevelCredentialDocEvidenceItemAcxDsseEnvelope | UnsetType
    ) = field(default=UNSET, name="acx:dsseEnvelope")


class LevelCredentialDocEvidenceItemAcxDsseEnvelope(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocEvidenceItemAcxDsseEnvelope`"""

    payload_type: str = field(name="payloadType")
    payload: str
    signatures: tuple[Any, ...]


class LevelCredentialDocCredentialSubject(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocCredentialSubject`"""

    type: tuple[str, ...]
    id: str
    achievement: LevelCredentialDocCredentialSubjectAchievement
    result: tuple[LevelCredentialDocResult, ...]


class LevelCredentialDocResult(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocResult`"""

    type: tuple[str, ...]
    achieved_level: str = field(name="achievedLevel")
    acx_rating_mu: int | float = field(name="acx:ratingMu")
    acx_rating_sigma: int | float = field(name="acx:ratingSigma")
    acx_games_played: int = field(name="acx:gamesPlayed")
    acx_acx_level: int = field(name="acx:acxLevel")
    acx_career_tier: str = field(name="acx:careerTier")
    acx_pass_rate: int | float | UnsetType = field(default=UNSET, name="acx:passRate")
    acx_cartridge_rom_digest: str = field(name="acx:cartridgeRomDigest")
    acx_benchmark_id: str = field(name="acx:benchmarkId")
    acx_benchmark_version: str = field(name="acx:benchmarkVersion")
    acx_benchmark_digest: str = field(name="acx:benchmarkDigest")
    acx_held_out_slice_digest: str = field(name="acx:heldOutSliceDigest")
    acx_solver: str | UnsetType = field(default=UNSET, name="acx:solver")
    acx_verifier: str | UnsetType = field(default=UNSET, name="acx:verifier")


class LevelCredentialDocCredentialSubjectAchievement(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocCredentialSubjectAchievement`"""

    id: str
    type: tuple[str, ...]
    name: str
    criteria: LevelCredentialDocCredentialSubjectAchievementCriteria
    result_description: (
        tuple[LevelCredentialDocCredentialSubjectAchievementResultDescriptionItem, ...] | UnsetType
    ) = field(default=UNSET, name="resultDescription")


class LevelCredentialDocCredentialSubjectAchievementResultDescriptionItem(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocCredentialSubjectAchievementResultDescriptionItem`"""

    id: Any
    name: Any
    result_type: Any = field(name="resultType")
    type: Any


class LevelCredentialDocCredentialSubjectAchievementCriteria(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocCredentialSubjectAchievementCriteria`"""

    narrative: str | UnsetType = UNSET


class LevelCredentialDocIssuer(Struct, frozen=True, kw_only=True):
    """`LevelCredentialDocIssuer`"""

    id: str
    type: tuple[str, ...] | UnsetType = UNSET
