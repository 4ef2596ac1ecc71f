# ruff: noqa: E501
"""Typed model of the harness requirements (`acx.harness.v1`): generated from schemas/acx.harness.v1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["HarnessDoc"]


class HarnessDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX harness requirements, acx.harness.v1"""

    schema_version: str = field(name="schemaVersion")
    mcp: HarnessDocMcp
    model: HarnessDocModel
    required_tools: tuple[HarnessDocRequiredToolsItem, ...] = field(name="requiredTools")
    optional_tools: (
        tuple[HarnessDocOptionalToolsItem, ...] | UnsetType
    ) = field(default=UNSET, name="optionalTools")
    filesystem: HarnessDocFilesystem | UnsetType = UNSET
    network: HarnessDocNetwork | UnsetType = UNSET


class HarnessDocNetwork(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HarnessDocNetwork`"""

    egress: str
    allowlist: tuple[str, ...] | UnsetType = UNSET


class HarnessDocFilesystem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HarnessDocFilesystem`"""

    read: tuple[str, ...] | UnsetType = UNSET
    write: tuple[str, ...] | UnsetType = UNSET


class HarnessDocOptionalToolsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HarnessDocOptionalToolsItem`"""

    role: str
    tier: str
    capability_scopes: tuple[str, ...] = field(name="capabilityScopes")
    name: str
    description: str
    input_schema: HarnessDocToolInputSchema = field(name="inputSchema")


class HarnessDocRequiredToolsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HarnessDocRequiredToolsItem`"""

    role: str
    tier: str
    capability_scopes: tuple[str, ...] = field(name="capabilityScopes")
    name: str
    description: str
    input_schema: HarnessDocToolInputSchema = field(name="inputSchema")


class HarnessDocToolInputSchema(Struct, frozen=True, kw_only=True):
    """A tool's input schema (a JSON Schema of an object)."""

    type: tuple[str, ...] | str | UnsetType = UNSET
    required: tuple[str, ...] | UnsetType = UNSET
    properties: dict[str, HarnessDocPropertySchema | bool] | UnsetType = UNSET


class HarnessDocPropertySchema(Struct, frozen=True, kw_only=True):
    """A property's schema"""

    type: tuple[str, ...] | str | UnsetType = UNSET


class HarnessDocModel(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HarnessDocModel`"""

    tool_use: bool = field(name="toolUse")
    min_context_window_tokens: int = field(name="minContextWindowTokens")
    structured_output: bool | UnsetType = field(default=UNSET, name="structuredOutput")


class HarnessDocMcp(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HarnessDocMcp`"""

    min_protocol_revision: str = field(name="minProtocolRevision")
    preferred_protocol_revision: str | UnsetType = field(default=UNSET, name="preferredProtocolRevision")
    require_structured_content: bool | UnsetType = field(default=UNSET, name="requireStructuredContent")
