"""Typed model of the host descriptor (`acx.host.v1`): generated from schemas/acx.host.v1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["HostDoc"]


class HostDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """acxoci host descriptor, acx.host.v1"""

    schema_version: str = field(name="schemaVersion")
    host_id: str | UnsetType = field(default=UNSET, name="hostId")
    mcp: HostDocMcp
    model: HostDocModel
    tools: tuple[HostDocToolsItem, ...]
    filesystem: HostDocFilesystem | UnsetType = UNSET
    binaries: tuple[str, ...] | UnsetType = UNSET
    network: HostDocNetwork | UnsetType = UNSET


class HostDocNetwork(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostDocNetwork`"""

    egress: str
    allowlist: tuple[str, ...] | UnsetType = UNSET


class HostDocFilesystem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostDocFilesystem`"""

    read: tuple[str, ...] | UnsetType = UNSET
    write: tuple[str, ...] | UnsetType = UNSET


class HostDocToolsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostDocToolsItem`"""

    name: str
    roles: tuple[str, ...]
    scopes: tuple[str, ...]
    input_schema: HostDocToolInputSchema = field(name="inputSchema")
    description: str | UnsetType = UNSET


class HostDocToolInputSchema(Struct, frozen=True, kw_only=True):
    """A tool's input schema (a JSON Schema of an object)."""

    type: tuple[str, ...] | str | UnsetType = UNSET
    required: tuple[str, ...] | UnsetType = UNSET
    properties: dict[str, HostDocPropertySchema | bool] | UnsetType = UNSET


class HostDocPropertySchema(Struct, frozen=True, kw_only=True):
    """A property's schema"""

    type: tuple[str, ...] | str | UnsetType = UNSET


class HostDocModel(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostDocModel`"""

    id: str | UnsetType = UNSET
    tool_use: bool = field(name="toolUse")
    context_window_tokens: int = field(name="contextWindowTokens")
    structured_output: bool | UnsetType = field(default=UNSET, name="structuredOutput")


class HostDocMcp(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostDocMcp`"""

    protocol_revisions: tuple[str, ...] = field(name="protocolRevisions")
