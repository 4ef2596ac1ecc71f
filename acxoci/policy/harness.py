"""Harness requirements (`acx.harness.v1`), the host descriptor (`acx.host.v1`, ours) and the
SPEC §8.5 boot handshake: bind one tool per role, grant scopes, emit a compliance descriptor or
refuse with JSON-RPC -32602 "Unsupported harness". Pure: no I/O, nothing is activated here."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from msgspec import UnsetType

from acxoci.attest.typed import opt, seq
from acxoci.documents.harness import HarnessDoc, HarnessDocOptionalToolsItem, HarnessDocRequiredToolsItem
from acxoci.documents.host import HostDoc
from acxoci.errors import InvalidInput, RefusedByPolicy
from acxoci.policy._schema import WARNING, Issue, decode_issues, schema_issues

SCHEMA_VERSION = "acx.harness.v1"
SCHEMA = "acx.harness.v1.schema.json"
HOST_SCHEMA = "acx.host.v1.schema.json"
COMPLIANCE_SCHEMA = "acx.harness-compliance.v1.schema.json"
MEDIA_TYPE = "application/vnd.acx.harness-requirements.v1+json"
COMPLIANCE_MEDIA_TYPE = "application/vnd.acx.harness-compliance.v1+json"
COMPLIANCE_VERSION = "acx.harness.compliance.v1"
ROM_PATH = "rom/manifest/harness-requirements.json"
#: The oldest MCP revision with initialize, tools/list, tools/call and inputSchema.
MCP_FLOOR = "2024-11-05"
MCP_PREFERRED = "2025-11-25"
#: The four required roles and the scopes each contract must at least ask for.
REQUIRED_ROLES: dict[str, frozenset[str]] = {
    "acx:execute": frozenset({"exec"}),
    "acx:dispatch": frozenset({"dispatch"}),
    "acx:memory.write": frozenset({"memory.write"}),
    "acx:search": frozenset({"search", "memory.read"}),
}
JSONRPC_INVALID_PARAMS = -32602
REFUSAL_MESSAGE = "Unsupported harness"
_EGRESS_ORDER = {"none": 0, "allowlist": 1, "any": 2}
_REV_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class PropertySchema(Protocol):
    """A property's schema inside a tool's input schema: its JSON Schema `type`."""

    @property
    def type(self) -> tuple[str, ...] | str | UnsetType: ...


class InputSchema(Protocol):
    """A tool's input schema (harness contract or host tool): the parts the handshake reads."""

    @property
    def type(self) -> tuple[str, ...] | str | UnsetType: ...

    @property
    def required(self) -> tuple[str, ...] | UnsetType: ...

    @property
    def properties(self) -> Mapping[str, PropertySchema | bool] | UnsetType: ...


@dataclass(frozen=True)
class ToolContract:
    """A tool-role contract: what the cartridge needs a host tool to do."""

    role: str
    tier: str
    scopes: tuple[str, ...]
    name: str
    description: str
    input_schema: InputSchema


@dataclass(frozen=True)
class HarnessRequirements:
    """A parsed, validated harness requirements document."""

    min_protocol_revision: str
    preferred_protocol_revision: str | None
    tool_use: bool
    min_context_window_tokens: int
    structured_output: bool | None
    required_tools: tuple[ToolContract, ...]
    optional_tools: tuple[ToolContract, ...] = ()
    fs_read: tuple[str, ...] = ()
    fs_write: tuple[str, ...] = ()
    egress: str = "none"
    allowlist: tuple[str, ...] = ()
    #: Executables the host must provide (legacy `externalTools`): (bin, optional).
    external_tools: tuple[tuple[str, bool], ...] = ()
    #: Rule ids of the legacy forms this document was normalized from (empty: schema shape).
    legacy: tuple[str, ...] = ()

    def scopes_by_role(self) -> dict[str, tuple[str, ...]]:
        """role -> contract scopes (used by the policy's read-only sub-agent rule)."""
        return {t.role: t.scopes for t in (*self.required_tools, *self.optional_tools)}


@dataclass(frozen=True)
class HostTool:
    """A concrete tool the host offers, the acx roles it can serve and the scopes it is granted."""

    name: str
    roles: tuple[str, ...]
    scopes: tuple[str, ...]
    input_schema: InputSchema


@dataclass(frozen=True)
class HostDescriptor:
    """What a host offers (acxoci's `acx.host.v1`)."""

    protocol_revisions: tuple[str, ...]
    tool_use: bool
    context_window_tokens: int
    tools: tuple[HostTool, ...]
    structured_output: bool | None = None
    fs_read: tuple[str, ...] = ()
    fs_write: tuple[str, ...] = ()
    egress: str = "none"
    allowlist: tuple[str, ...] = ()
    host_id: str | None = None
    #: Executables on the host's PATH; None when the descriptor does not say (then none are assumed).
    binaries: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Binding:
    """One role bound (or not) to a host tool."""

    role: str
    tier: str
    bound_tool: str | None
    scopes_granted: tuple[str, ...]
    satisfied: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "tier": self.tier,
            "boundTool": self.bound_tool,
            "scopesGranted": list(self.scopes_granted),
            "satisfied": self.satisfied,
        }


@dataclass(frozen=True)
class ComplianceDescriptor:
    """The handshake result (`application/vnd.acx.harness-compliance.v1+json`)."""

    requirements_hash: str
    protocol_revision: str | None
    tool_use: bool
    context_window_tokens: int
    structured_output: bool | None
    bindings: tuple[Binding, ...]
    filesystem_granted: Mapping[str, tuple[str, ...]] | None
    network_granted: Mapping[str, Any] | None
    verdict: str
    unmet: tuple[str, ...]
    supported: Mapping[str, Any] = field(default_factory=dict)
    requested: Mapping[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"

    def to_json(self) -> dict[str, Any]:
        model: dict[str, Any] = {"toolUse": self.tool_use, "contextWindowTokens": self.context_window_tokens}
        if self.structured_output is not None:
            model["structuredOutput"] = self.structured_output
        out: dict[str, Any] = {
            "schemaVersion": COMPLIANCE_VERSION,
            "requirementsHash": self.requirements_hash,
            "protocolRevision": self.protocol_revision,
            "model": model,
            "bindings": [b.to_json() for b in self.bindings],
        }
        if self.filesystem_granted is not None:
            out["filesystemGranted"] = {k: list(v) for k, v in self.filesystem_granted.items()}
        if self.network_granted is not None:
            out["networkGranted"] = dict(self.network_granted)
        out["verdict"] = self.verdict
        out["unmet"] = list(self.unmet)
        return out

    def jsonrpc_error(self) -> dict[str, Any] | None:
        """The JSON-RPC error object a refusing host returns (None when accepted)."""
        if self.accepted:
            return None
        return {
            "code": JSONRPC_INVALID_PARAMS,
            "message": REFUSAL_MESSAGE,
            "data": {
                "unmet": list(self.unmet),
                "supported": dict(self.supported),
                "requested": dict(self.requested),
            },
        }


class HarnessRefused(RefusedByPolicy):
    """The host cannot run the cartridge: the ROM is not activated and SAVE is not touched."""

    kind = "harness_refused"


def _valid_date(s: str) -> bool:
    try:
        date.fromisoformat(s)
    except ValueError:
        return False
    return True


Tool = HarnessDocRequiredToolsItem | HarnessDocOptionalToolsItem


def _tools(doc: HarnessDoc) -> list[tuple[str, int, Tool]]:
    """(array key, index, contract) of every tool contract, required ones first."""
    out: list[tuple[str, int, Tool]] = [("requiredTools", i, t) for i, t in enumerate(doc.required_tools)]
    if not isinstance(doc.optional_tools, UnsetType):
        out += [("optionalTools", i, t) for i, t in enumerate(doc.optional_tools)]
    return out


def _semantic_issues(doc: HarnessDoc) -> list[Issue]:
    out: list[Issue] = []
    by_role: dict[str, tuple[int, Tool]] = {}
    seen: dict[str, str] = {}
    for key, i, t in _tools(doc):
        p = f"$.{key}[{i}]"
        if t.role in seen:
            out.append(Issue("harness.unique-roles", f"{p}.role",
                             f"role {t.role!r} is already declared at {seen[t.role]}"))
        seen.setdefault(t.role, p)
        if key == "requiredTools":
            by_role.setdefault(t.role, (i, t))
        schema = t.input_schema
        if not isinstance(schema.type, UnsetType) and schema.type != "object":
            out.append(Issue("harness.tool-contract.inputSchema", f"{p}.inputSchema.type",
                             "a tool inputSchema must describe an object"))
        props = {} if isinstance(schema.properties, UnsetType) else schema.properties
        for r in () if isinstance(schema.required, UnsetType) else schema.required:
            if r not in props:
                out.append(Issue("harness.tool-contract.inputSchema", f"{p}.inputSchema.required",
                                 f"required property {r!r} is not in properties"))
    for role, needed in REQUIRED_ROLES.items():
        if role not in by_role:
            where = seen[role] + ".tier" if role in seen else "$.requiredTools"
            why = f"required role {role!r} is missing from requiredTools (a host would have to refuse)"
            out.append(Issue("harness.required-roles", where, why))
            continue
        i, t = by_role[role]
        missing = sorted(needed - set(t.capability_scopes))
        if missing:
            out.append(Issue("harness.role-scopes", f"$.requiredTools[{i}].capabilityScopes",
                             f"role {role!r} must ask for scopes {sorted(needed)}; missing {missing}"))
    lo = doc.mcp.min_protocol_revision
    pref = opt(doc.mcp.preferred_protocol_revision)
    for k, v in (("minProtocolRevision", lo), ("preferredProtocolRevision", pref)):
        if v is not None and _REV_RE.fullmatch(v) and not _valid_date(v):
            out.append(Issue(f"harness.mcp.{k}", f"$.mcp.{k}", f"{v!r} is not a real date"))
    if _REV_RE.fullmatch(lo) and lo < MCP_FLOOR:
        why = f"{lo} is older than {MCP_FLOOR}, the first MCP revision with tools and inputSchema"
        out.append(Issue("harness.mcp.floor", "$.mcp.minProtocolRevision", why))
    if pref is not None and pref < lo:
        out.append(Issue("harness.mcp.preferredProtocolRevision", "$.mcp.preferredProtocolRevision",
                         f"preferred revision {pref} is older than the floor {lo}"))
    net = doc.network
    if not isinstance(net, UnsetType):
        allow = () if isinstance(net.allowlist, UnsetType) else net.allowlist
        if net.egress == "allowlist" and not allow:
            out.append(Issue("harness.network.allowlist", "$.network.allowlist",
                             "egress 'allowlist' needs at least one allowlist entry"))
        if net.egress in ("none", "any") and allow:
            out.append(Issue("harness.network.allowlist", "$.network.allowlist",
                             f"an allowlist is meaningless with egress {net.egress!r}"))
    return out


LEGACY_RULE_EXTERNAL_TOOLS = "harness.legacy.externalTools"
LEGACY_RULE_FILESYSTEM = "harness.legacy.filesystem"
LEGACY_RULE_NETWORK = "harness.legacy.network"
#: Bounds on the legacy `externalTools` list (a hostile document cannot make us walk more).
MAX_EXTERNAL_TOOLS = 64
_BIN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
#: Legacy list-valued `filesystem`: each scope -> the schema-shape grant it asks for.
_LEGACY_FS = {"fs.read": "read", "fs.write": "write"}
#: Legacy list-valued `network`: each scope -> the schema-shape egress it asks for.
_LEGACY_NET = {"net.fetch": "any"}


@dataclass(frozen=True)
class Normalized:
    """A harness document in schema shape, plus what the legacy reading found."""

    doc: Any
    external_tools: tuple[tuple[str, bool], ...]
    issues: tuple[Issue, ...]

    @property
    def legacy(self) -> tuple[str, ...]:
        """Rule ids of the legacy forms that were read (each reported once, as a warning)."""
        return tuple(i.rule for i in self.issues if i.severity == WARNING)


def _scope_list(value: list[Any], key: str, allowed: Mapping[str, str], rule: str) -> list[Issue]:
    out: list[Issue] = []
    seen: set[str] = set()
    for i, item in enumerate(value[: MAX_EXTERNAL_TOOLS + 1]):
        if not isinstance(item, str) or item not in allowed:
            out.append(
                Issue(rule, f"$.{key}[{i}]", f"legacy {key} entry {item!r} is not one of {sorted(allowed)}")
            )
        elif item in seen:
            out.append(Issue(rule, f"$.{key}[{i}]", f"legacy {key} entry {item!r} is repeated"))
        else:
            seen.add(item)
    if len(value) > len(allowed):
        out.append(Issue(rule, f"$.{key}", f"legacy {key} list has {len(value)} entries"))
    return out


def normalize_legacy(doc: Any) -> Normalized:
    """Read the reference builder's older harness shape as the schema shape (decision 0016):

    - `externalTools: [{bin, optional?}|"bin"]` leaves the document and becomes the list of
      executables the host must provide (`binary:<bin>` when missing, as the reference's `check`);
    - `filesystem: ["fs.read", "fs.write"]` becomes `{read: ["."], write: ["."]}` (the workspace);
    - `network: []` becomes `{egress: "none"}`, `["net.fetch"]` becomes `{egress: "any"}`.

    Each form read is a WARNING with its rule id; a malformed legacy value is an ERROR. Anything
    else is left alone for the strict schema. Pure; never mutates `doc`."""
    if not isinstance(doc, Mapping) or doc.get("schemaVersion") != SCHEMA_VERSION:
        return Normalized(doc, (), ())
    out = dict(doc)
    issues: list[Issue] = []
    tools: list[tuple[str, bool]] = []
    if "externalTools" in out:
        ext = out.pop("externalTools")
        rule = LEGACY_RULE_EXTERNAL_TOOLS
        if not isinstance(ext, list):
            issues.append(Issue(rule, "$.externalTools", "legacy externalTools must be a list"))
        elif len(ext) > MAX_EXTERNAL_TOOLS:
            issues.append(
                Issue(
                    rule,
                    "$.externalTools",
                    f"legacy externalTools has {len(ext)} entries (at most {MAX_EXTERNAL_TOOLS})",
                )
            )
        else:
            seen: set[str] = set()
            for i, item in enumerate(ext):
                p = f"$.externalTools[{i}]"
                if isinstance(item, str):
                    name, optional = item, False
                elif (
                    isinstance(item, Mapping)
                    and set(item) <= {"bin", "optional"}
                    and isinstance(item.get("bin"), str)
                    and isinstance(item.get("optional", False), bool)
                ):
                    name, optional = item["bin"], bool(item.get("optional", False))
                else:
                    issues.append(Issue(rule, p, "an externalTools entry is a bin name or {bin, optional}"))
                    continue
                if not _BIN_RE.fullmatch(name):
                    issues.append(Issue(rule, f"{p}.bin", f"{name[:80]!r} is not a plain executable name"))
                elif name in seen:
                    issues.append(Issue(rule, f"{p}.bin", f"executable {name!r} is listed twice"))
                else:
                    seen.add(name)
                    tools.append((name, optional))
            issues.append(
                Issue(
                    rule,
                    "$.externalTools",
                    "legacy reference-builder key read as required host executables "
                    f"{[t for t, opt in tools if not opt]}",
                    WARNING,
                )
            )
    fs = out.get("filesystem")
    if isinstance(fs, list):
        rule = LEGACY_RULE_FILESYSTEM
        bad = _scope_list(fs, "filesystem", _LEGACY_FS, rule)
        issues.extend(bad)
        if not bad:
            shape: dict[str, list[str]] = {"read": [], "write": []}
            for scope in fs:
                shape[_LEGACY_FS[scope]] = ["."]
            out["filesystem"] = shape
            issues.append(
                Issue(rule, "$.filesystem", f"legacy scope list {fs} read as {json.dumps(shape)}", WARNING)
            )
    net = out.get("network")
    if isinstance(net, list):
        rule = LEGACY_RULE_NETWORK
        bad = _scope_list(net, "network", _LEGACY_NET, rule)
        issues.extend(bad)
        if not bad:
            nshape: dict[str, Any] = {"egress": "any" if net else "none", "allowlist": []}
            out["network"] = nshape
            issues.append(
                Issue(rule, "$.network", f"legacy scope list {net} read as {json.dumps(nshape)}", WARNING)
            )
    return Normalized(out, tuple(tools), tuple(issues))


def _checked(doc: Any) -> tuple[list[Issue], HarnessDoc | None, Normalized | None]:
    """Every finding, and the decoded model (None when the document does not decode)."""
    if not isinstance(doc, Mapping):
        return [Issue("harness.object", "$", "the harness document is not a JSON object")], None, None
    if doc.get("schemaVersion") != SCHEMA_VERSION:
        return [
            Issue(
                "harness.schemaVersion",
                "$.schemaVersion",
                f"unknown schemaVersion {doc.get('schemaVersion')!r}; expected {SCHEMA_VERSION!r}",
            )
        ], None, None
    norm = normalize_legacy(doc)
    issues = list(norm.issues) + schema_issues(norm.doc, SCHEMA, default_rule="harness.schema")
    model, type_issues = decode_issues(norm.doc, HarnessDoc, document=ROM_PATH, rule="harness.schema")
    if model is None:
        issues += [] if issues else type_issues  # the schema already names what does not decode
    else:
        issues += _semantic_issues(model)
    return sorted(set(issues), key=lambda i: (i.path, i.rule)), model, norm


def validate_harness(doc: Any) -> list[Issue]:
    """Every schema and semantic finding for a harness requirements document. A legacy form
    (see `normalize_legacy`) is read as the schema shape and reported as a WARNING."""
    return _checked(doc)[0]


def errors_only(issues: Sequence[Issue]) -> list[Issue]:
    """The findings that make a document unusable (warnings dropped)."""
    return [i for i in issues if i.severity != WARNING]


def _contract(t: Tool) -> ToolContract:
    return ToolContract(t.role, t.tier, t.capability_scopes, t.name, t.description, t.input_schema)


def parse_harness(doc: Any, *, where: str = ROM_PATH) -> HarnessRequirements:
    """Validate, decode and build the model; raises InvalidInput listing each rule and JSON path.
    A legacy form is normalized first (its warnings are kept in `legacy`), never refused."""
    issues, model, norm = _checked(doc)
    errors = errors_only(issues)
    if errors or model is None or norm is None:
        raise InvalidInput(
            f"harness requirements are invalid ({len(errors)} issue(s)): " + "; ".join(map(str, errors)),
            where=where,
            details={"issues": [i.to_json() for i in errors]},
        )
    fs, net = model.filesystem, model.network
    return HarnessRequirements(
        min_protocol_revision=model.mcp.min_protocol_revision,
        preferred_protocol_revision=opt(model.mcp.preferred_protocol_revision),
        tool_use=model.model.tool_use,
        min_context_window_tokens=model.model.min_context_window_tokens,
        structured_output=opt(model.model.structured_output),
        required_tools=tuple(_contract(t) for t in model.required_tools),
        optional_tools=tuple(_contract(t) for t in seq(model.optional_tools)),
        fs_read=() if isinstance(fs, UnsetType) else seq(fs.read),
        fs_write=() if isinstance(fs, UnsetType) else seq(fs.write),
        egress="none" if isinstance(net, UnsetType) else net.egress,
        allowlist=() if isinstance(net, UnsetType) else seq(net.allowlist),
        external_tools=norm.external_tools,
        legacy=norm.legacy,
    )




def validate_host(doc: Any) -> list[Issue]:
    """Schema findings for a host descriptor (and the type finding when it does not decode)."""
    issues = schema_issues(doc, HOST_SCHEMA, default_rule="host.schema")
    if not issues:
        issues = decode_issues(doc, HostDoc, document="host descriptor", rule="host.schema")[1]
    return issues


def parse_host(doc: Any, *, where: str = "host descriptor") -> HostDescriptor:
    """Validate, decode and build a host descriptor."""
    issues = schema_issues(doc, HOST_SCHEMA, default_rule="host.schema")
    model, type_issues = decode_issues(doc, HostDoc, document=where, rule="host.schema")
    issues = issues or type_issues
    if issues or model is None:
        raise InvalidInput(
            "host descriptor is invalid: " + "; ".join(map(str, issues)),
            where=where,
            details={"issues": [i.to_json() for i in issues]},
        )
    fs, net = model.filesystem, model.network
    return HostDescriptor(
        protocol_revisions=model.mcp.protocol_revisions,
        tool_use=model.model.tool_use,
        context_window_tokens=model.model.context_window_tokens,
        tools=tuple(HostTool(t.name, t.roles, t.scopes, t.input_schema) for t in model.tools),
        structured_output=opt(model.model.structured_output),
        fs_read=() if isinstance(fs, UnsetType) else seq(fs.read),
        fs_write=() if isinstance(fs, UnsetType) else seq(fs.write),
        egress="none" if isinstance(net, UnsetType) else net.egress,
        allowlist=() if isinstance(net, UnsetType) else seq(net.allowlist),
        host_id=opt(model.host_id),
        binaries=opt(model.binaries),
    )


def _types(schema: PropertySchema | bool) -> set[str] | None:
    if isinstance(schema, bool) or isinstance(schema.type, UnsetType):
        return None
    return {schema.type} if isinstance(schema.type, str) else set(schema.type)


def schema_accepts(tool_schema: InputSchema, contract_schema: InputSchema) -> list[str]:
    """Why a tool's inputSchema does not structurally accept the contract: each contract-required
    property must exist in the tool's properties with a compatible type. Empty list = accepts."""
    problems: list[str] = []
    tprops = {} if isinstance(tool_schema.properties, UnsetType) else tool_schema.properties
    cprops = {} if isinstance(contract_schema.properties, UnsetType) else contract_schema.properties
    for name in () if isinstance(contract_schema.required, UnsetType) else contract_schema.required:
        if name not in tprops:
            problems.append(f"property {name!r} missing")
            continue
        c = cprops.get(name)
        want, have = (_types(c) if c is not None else None), _types(tprops[name])
        if (
            want is not None
            and have is not None
            and not (want & have or ("integer" in want and "number" in have))
        ):
            problems.append(f"property {name!r} has type {sorted(have)}, contract needs {sorted(want)}")
    return problems


def _covers(grant: str, path: str) -> bool:
    if grant in ("*", "**", "/"):
        return True
    if grant in (".", "./"):
        return not path.startswith("/") and not path.startswith("..")
    g = grant.rstrip("/")
    return path == grant or path.rstrip("/") == g or path.startswith(g + "/")


def _negotiated_revision(requested: str, offered: Sequence[str]) -> str | None:
    if not offered:
        return None
    if requested in offered:
        return requested
    older = [r for r in offered if r <= requested]
    return max(older) if older else max(offered)


def _bind(contract: ToolContract, host: HostDescriptor, unmet: list[str]) -> Binding:
    candidates = [t for t in host.tools if contract.role in t.roles or t.name == contract.name]
    required = contract.tier == "required"
    best: tuple[HostTool, list[str]] | None = None
    for tool in candidates:
        why = schema_accepts(tool.input_schema, contract.input_schema)
        missing = [s for s in contract.scopes if s not in tool.scopes]
        if not why and not missing:
            return Binding(contract.role, contract.tier, tool.name, tuple(contract.scopes), True)
        if not why and best is None:
            best = (tool, missing)
    if best is not None:
        tool, missing = best
        if required:
            unmet.extend(f"scope:{contract.role}:{s}" for s in missing)
        granted = tuple(s for s in contract.scopes if s in tool.scopes)
        return Binding(contract.role, contract.tier, tool.name, granted, False)
    if required:
        if candidates:
            unmet.append(f"schema:{contract.role}:" + ",".join(t.name for t in candidates))
        else:
            unmet.append(f"role:{contract.role}")
    return Binding(contract.role, contract.tier, None, (), False)


def negotiate(req: HarnessRequirements, host: HostDescriptor, requirements_hash: str) -> ComplianceDescriptor:
    """SPEC §8.5 steps 2-5 against a host descriptor: negotiate the MCP revision, bind one tool per
    role, check model, filesystem and network grants. Returns the descriptor; `verdict` is
    `refuse` (with every unmet item) when any required item fails. Optional tools never block."""
    unmet: list[str] = []
    requested_rev = req.preferred_protocol_revision or req.min_protocol_revision
    rev = _negotiated_revision(requested_rev, host.protocol_revisions)
    if rev is None or rev < req.min_protocol_revision:
        unmet.append(f"protocolRevision:{rev or 'none'}<{req.min_protocol_revision}")
    if req.tool_use and not host.tool_use:
        unmet.append("model.toolUse")
    if host.context_window_tokens < req.min_context_window_tokens:
        unmet.append(
            f"model.contextWindowTokens:{host.context_window_tokens}<{req.min_context_window_tokens}"
        )
    bindings = [_bind(c, host, unmet) for c in (*req.required_tools, *req.optional_tools)]
    offered = set(host.binaries or ())
    # as the reference's `check`: a non-optional executable the host does not declare is unmet
    unmet.extend(f"binary:{b}" for b, optional in req.external_tools if not optional and b not in offered)
    fs_granted: dict[str, tuple[str, ...]] | None = None
    if req.fs_read or req.fs_write:
        read_ok = [p for p in req.fs_read if any(_covers(g, p) for g in (*host.fs_read, *host.fs_write))]
        write_ok = [p for p in req.fs_write if any(_covers(g, p) for g in host.fs_write)]
        unmet.extend(f"filesystem.read:{p}" for p in req.fs_read if p not in read_ok)
        unmet.extend(f"filesystem.write:{p}" for p in req.fs_write if p not in write_ok)
        fs_granted = {"read": tuple(read_ok), "write": tuple(write_ok)}
    net_granted: dict[str, Any] | None = None
    if req.egress != "none":
        if _EGRESS_ORDER[host.egress] < _EGRESS_ORDER[req.egress]:
            unmet.append(f"network.egress:{req.egress}")
            net_granted = {"egress": host.egress, "allowlist": list(host.allowlist)}
        elif req.egress == "allowlist" and host.egress == "allowlist":
            denied = [h for h in req.allowlist if h not in host.allowlist]
            unmet.extend(f"network.allowlist:{h}" for h in denied)
            net_granted = {"egress": "allowlist", "allowlist": [h for h in req.allowlist if h not in denied]}
        else:
            net_granted = {"egress": req.egress, "allowlist": list(req.allowlist)}
    supported: dict[str, Any] = {
        "protocolRevisions": list(host.protocol_revisions),
        "roles": sorted({r for t in host.tools for r in t.roles}),
        "tools": [{"name": t.name, "roles": list(t.roles), "scopes": list(t.scopes)} for t in host.tools],
        "model": {"toolUse": host.tool_use, "contextWindowTokens": host.context_window_tokens},
    }
    requested: dict[str, Any] = {
        "minProtocolRevision": req.min_protocol_revision,
        "preferredProtocolRevision": req.preferred_protocol_revision,
        "roles": [{"role": c.role, "scopes": list(c.scopes)} for c in req.required_tools],
        "model": {"toolUse": req.tool_use, "minContextWindowTokens": req.min_context_window_tokens},
    }
    if req.external_tools:
        supported["binaries"] = sorted(offered)
        requested["binaries"] = [{"bin": b, "optional": o} for b, o in req.external_tools]
    return ComplianceDescriptor(
        requirements_hash=requirements_hash,
        protocol_revision=rev,
        tool_use=host.tool_use,
        context_window_tokens=host.context_window_tokens,
        structured_output=host.structured_output,
        bindings=tuple(bindings),
        filesystem_granted=fs_granted,
        network_granted=net_granted,
        verdict="refuse" if unmet else "accept",
        unmet=tuple(unmet),
        supported=supported,
        requested=requested,
    )


def preflight(descriptor: Mapping[str, Any]) -> list[str]:
    """SPEC §8.5 step 6: reasons a persisted compliance descriptor must stop activation."""
    reasons = []
    if descriptor.get("verdict") != "accept":
        reasons.append(f"verdict is {descriptor.get('verdict')!r}")
    for b in descriptor.get("bindings", []) or []:
        if (
            isinstance(b, Mapping)
            and b.get("tier", "required") == "required"
            and b.get("satisfied") is not True
        ):
            reasons.append(f"required binding {b.get('role')!r} is not satisfied")
    return reasons


def default_harness() -> dict[str, Any]:
    """acxoci's default requirements document: the four roles, schema-valid (closed, fs/net objects)."""

    def tool(
        role: str, tier: str, scopes: list[str], name: str, desc: str, prop: str | None
    ) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        if prop:
            schema = {"type": "object", "required": [prop], "properties": {prop: {"type": "string"}}}
        return {
            "role": role,
            "tier": tier,
            "capabilityScopes": scopes,
            "name": name,
            "description": desc,
            "inputSchema": schema,
        }

    return {
        "schemaVersion": SCHEMA_VERSION,
        "mcp": {"minProtocolRevision": MCP_FLOOR, "preferredProtocolRevision": MCP_PREFERRED},
        "model": {"toolUse": True, "minContextWindowTokens": 100000, "structuredOutput": False},
        "requiredTools": [
            tool(
                "acx:execute",
                "required",
                ["exec", "fs.read"],
                "execute",
                "Run a command in a sandbox.",
                "command",
            ),
            tool(
                "acx:dispatch",
                "required",
                ["dispatch"],
                "dispatch",
                "Hand a unit of work to a sub-agent.",
                "task",
            ),
            tool(
                "acx:memory.write",
                "required",
                ["memory.write"],
                "add_memory",
                "Append a durable record to the SAVE zone.",
                "summary",
            ),
            tool(
                "acx:search",
                "required",
                ["search", "memory.read"],
                "search_memory",
                "Search memory and knowledge.",
                "query",
            ),
        ],
        "optionalTools": [
            tool(
                "acx:list_agents",
                "optional",
                ["memory.read"],
                "list_agents",
                "List the agents available.",
                None,
            )
        ],
        "filesystem": {"read": ["."], "write": []},
        "network": {"egress": "none", "allowlist": []},
    }
