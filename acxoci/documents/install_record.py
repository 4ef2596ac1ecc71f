# ruff: noqa: E501
"""Typed model of the install record (`acx.install-record/1`, `record.json` of an installed item): generated from schemas/acx.install-record-1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["InstallRecordDoc"]


class InstallRecordDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """acxoci install record, acx.install-record/1"""

    schema_version: str = field(name="schemaVersion")
    name: str
    kind: str
    digest: str
    reference: str
    repository: str
    tag: str | UnsetType | None = UNSET
    artifact_version: str | UnsetType | None = field(default=UNSET, name="artifactVersion")
    media_type: str | UnsetType = field(default=UNSET, name="mediaType")
    artifact_type: str | UnsetType | None = field(default=UNSET, name="artifactType")
    content_digest: str | UnsetType | None = field(default=UNSET, name="contentDigest")
    rom_digest: str | UnsetType | None = field(default=UNSET, name="romDigest")
    publisher_id: str | UnsetType | None = field(default=UNSET, name="publisherId")
    trust: str | UnsetType = UNSET
    seq: int
    installed_at: str = field(name="installedAt")
    tool: InstallRecordDocTool
    policy: InstallRecordDocPolicy
    host: InstallRecordDocHost
    checks: tuple[InstallRecordDocCheck, ...]
    keys: tuple[InstallRecordDocKeysItem, ...]
    status_lists: tuple[InstallRecordDocStatusListsItem, ...] = field(name="statusLists")
    attestations: tuple[InstallRecordDocAttestationsItem, ...]
    level: InstallRecordDocLevel | UnsetType | None = UNSET
    harness: dict[str, Any] | UnsetType | None = UNSET
    effective_limits: dict[str, Any] | UnsetType | None = field(default=UNSET, name="effectiveLimits")
    staffing: dict[str, Any] | UnsetType | None = UNSET
    files: tuple[InstallRecordDocFilesItem, ...]


class InstallRecordDocFilesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocFilesItem`"""

    path: str
    digest: str
    size: int


class InstallRecordDocLevel(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocLevel`"""

    level: int | UnsetType | None = UNSET
    tier: str | UnsetType | None = UNSET
    issuer: str | UnsetType = UNSET
    credential_digest: str | UnsetType | None = field(default=UNSET, name="credentialDigest")


class InstallRecordDocAttestationsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocAttestationsItem`"""

    format: str
    predicate_type: str = field(name="predicateType")
    digest: str | UnsetType | None = UNSET
    keyid: str | UnsetType | None = UNSET
    signer: InstallRecordDocAttestationsItemSigner | UnsetType | None = UNSET


class InstallRecordDocAttestationsItemSigner(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The sigstore-verified signer"""

    mode: str | UnsetType = UNSET
    certificate_identity: str | UnsetType | None = field(default=UNSET, name="certificateIdentity")
    certificate_issuer: str | UnsetType | None = field(default=UNSET, name="certificateIssuer")
    log_index: int | UnsetType | None = field(default=UNSET, name="logIndex")
    integrated_time: int | UnsetType | None = field(default=UNSET, name="integratedTime")
    verified_times: tuple[str, ...] | UnsetType = field(default=UNSET, name="verifiedTimes")


class InstallRecordDocStatusListsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocStatusListsItem`"""

    id: str
    index: int | None
    valid_from: str | UnsetType | None = field(default=UNSET, name="validFrom")
    source: str | UnsetType | None = UNSET
    checked_at: str = field(name="checkedAt")
    revoked: bool


class InstallRecordDocKeysItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocKeysItem`"""

    role: str
    keyid: str | None
    publisher_id: str | UnsetType | None = field(default=UNSET, name="publisherId")
    signed_at: str | UnsetType | None = field(default=UNSET, name="signedAt")


class InstallRecordDocCheck(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocCheck`"""

    order: int
    id: str
    what: str
    status: str
    reason: str
    kind: str | UnsetType = UNSET
    details: dict[str, Any] | UnsetType = UNSET


class InstallRecordDocHost(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocHost`"""

    descriptor: str | UnsetType | None = UNSET
    descriptor_digest: str | UnsetType | None = field(default=UNSET, name="descriptorDigest")
    limits: str | UnsetType | None = UNSET
    limits_digest: str | UnsetType | None = field(default=UNSET, name="limitsDigest")


class InstallRecordDocPolicy(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`InstallRecordDocPolicy`"""

    source: str
    digest: str
    files: tuple[InstallRecordDocPolicyFilesItem, ...]
    document: dict[str, Any]


class InstallRecordDocPolicyFilesItem(Struct, frozen=True, kw_only=True):
    """`InstallRecordDocPolicyFilesItem`"""

    digest: Any
    path: Any


class InstallRecordDocTool(Struct, frozen=True, kw_only=True):
    """`InstallRecordDocTool`"""

    name: Any
    version: Any
