"""The boot handshake over a cartridge file (SPEC §8.5 steps 1-5): verify the signed ROM, run the
package-spec checks `cartridge spec` (and the Exchange) run, read the harness requirements, learn
what the host offers, and negotiate. One path for `acx harness negotiate` and `acx check`.

What the host offers comes from one of: a host descriptor (`--host`, acx.host.v1); the roles an
operator says the host provides (`--tools`/`--all-tools`, as the reference's `check`), where the
rest is taken as meeting the cartridge and reported as assumed; or a live MCP server
(`--mcp-stdio`), whose protocol revision and tools are used as it states them.

Opens the cartridge read-only (immutable), so a refusal can never activate the ROM or touch SAVE."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.trust import TrustRegistry
from acxoci.attest.typed import decode_as
from acxoci.cartridge.verify import CartridgeVerdict, verify_cartridge
from acxoci.documents.host import HostDocToolInputSchema
from acxoci.errors import AcxError, RefusedByPolicy, UsageError
from acxoci.policy import harness as h
from acxoci.policy.files import load_document


@dataclass(frozen=True)
class HostOffer:
    """A host descriptor, where it came from, and what was assumed rather than stated."""

    descriptor: h.HostDescriptor
    source: str
    assumed: tuple[str, ...] = ()
    server: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Handshake:
    """The verdict on the cartridge, the host it was negotiated against, the compliance descriptor."""

    verdict: CartridgeVerdict
    descriptor: h.ComplianceDescriptor
    host: HostOffer
    requirements: h.HarnessRequirements

    @property
    def accepted(self) -> bool:
        return self.descriptor.accepted

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mediaType": h.COMPLIANCE_MEDIA_TYPE,
            "descriptor": self.descriptor.to_json(),
            "trust": self.verdict.trust,
            "host": {"source": self.host.source, "assumed": list(self.host.assumed)},
        }
        if self.host.server is not None:
            out["host"]["mcpServer"] = dict(self.host.server)
        err = self.descriptor.jsonrpc_error()
        if err is not None:
            out["error"] = err
        return out


def _assumed_model(req: h.HarnessRequirements) -> dict[str, Any]:
    return {
        "tool_use": req.tool_use,
        "context_window_tokens": req.min_context_window_tokens,
        "structured_output": req.structured_output,
        "fs_read": req.fs_read,
        "fs_write": req.fs_write,
        "egress": req.egress,
        "allowlist": req.allowlist,
    }


ASSUMED = ("model", "filesystem", "network")


def binaries_on_path(req: h.HarnessRequirements, path: str | None = None) -> tuple[str, ...]:
    """The executables the requirements name that are on PATH (looked up, never run)."""
    return tuple(b for b, _opt in req.external_tools if shutil.which(b, path=path) is not None)


def host_from_roles(
    req: h.HarnessRequirements, roles: Sequence[str], *, all_tools: bool, binaries: Sequence[str]
) -> HostOffer:
    """What `--tools ROLE,…` (or `--all-tools`) says: one tool per named role of the requirements,
    bound as the cartridge's contract; the protocol revision, model, filesystem and network are
    taken as meeting the cartridge and listed as assumed. Pure."""
    named = set(roles)
    contracts = (*req.required_tools, *req.optional_tools)
    tools = tuple(
        h.HostTool(c.name, (c.role,), c.scopes, c.input_schema)
        for c in contracts
        if all_tools or c.role in named or c.name in named
    )
    rev = req.preferred_protocol_revision or req.min_protocol_revision
    desc = h.HostDescriptor(
        protocol_revisions=(rev,), tools=tools, binaries=tuple(binaries), **_assumed_model(req)
    )
    return HostOffer(desc, "--all-tools" if all_tools else "--tools " + ",".join(roles), ("mcp", *ASSUMED))


def parse_binds(binds: Sequence[str]) -> dict[str, str]:
    """`ROLE=TOOL` pairs (UsageError for anything else or a role named twice)."""
    out: dict[str, str] = {}
    for b in binds:
        role, sep, tool = b.partition("=")
        if not sep or not role or not tool:
            raise UsageError(f"--bind {b!r} is not ROLE=TOOL")
        if role in out:
            raise UsageError(f"--bind names role {role!r} twice")
        out[role] = tool
    return out


def host_from_mcp(
    req: h.HarnessRequirements,
    protocol_version: str,
    tools: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    binds: Mapping[str, str],
    base: h.HostDescriptor | None,
    binaries: Sequence[str],
) -> h.HostDescriptor:
    """The host a live MCP server makes: its protocol revision, and its tools with their own input
    schemas; a tool serves a role when `binds` maps the role to it or its name is the contract's
    name, and is granted the contract's scopes by that binding. Model, filesystem, network and
    executables come from `base` (a host descriptor) when given. Pure."""
    contracts = (*req.required_tools, *req.optional_tools)
    out = []
    for name, schema in tools:
        served = [c for c in contracts if binds.get(c.role, c.name) == name]
        scopes = tuple(dict.fromkeys(s for c in served for s in c.scopes))
        # the server's own schema, untrusted: decoded (a wrong type names the tool and pointer)
        typed = decode_as(schema, HostDocToolInputSchema, document=f"MCP tool {name!r} inputSchema")
        out.append(h.HostTool(name, tuple(c.role for c in served), scopes, typed))
    model = (
        {
            "tool_use": base.tool_use,
            "context_window_tokens": base.context_window_tokens,
            "structured_output": base.structured_output,
            "fs_read": base.fs_read,
            "fs_write": base.fs_write,
            "egress": base.egress,
            "allowlist": base.allowlist,
        }
        if base is not None
        else _assumed_model(req)
    )
    return h.HostDescriptor(
        protocol_revisions=(protocol_version,),
        tools=tuple(out),
        binaries=base.binaries if base is not None else tuple(binaries),
        host_id=base.host_id if base is not None else None,
        **model,
    )


def mcp_offer(
    command: str, *, binds: Mapping[str, str], base: h.HostDescriptor | None, timeout: float
) -> Callable[[h.HarnessRequirements], HostOffer]:
    """A host source that asks the MCP server started by `command` (acxoci/policy/mcp_stdio.py)."""

    def make(req: h.HarnessRequirements) -> HostOffer:
        from acxoci.policy.mcp_stdio import query_server

        unknown = sorted(set(binds) - {c.role for c in (*req.required_tools, *req.optional_tools)})
        if unknown:
            raise UsageError(f"--bind names roles the cartridge does not require: {unknown}")
        server = query_server(
            command,
            protocol_version=req.preferred_protocol_revision or req.min_protocol_revision,
            timeout=timeout,
        )
        desc = host_from_mcp(
            req,
            server.protocol_version,
            [(t.name, t.input_schema) for t in server.tools],
            binds=binds,
            base=base,
            binaries=binaries_on_path(req),
        )
        info = {
            "command": list(server.command),
            "name": server.server_name,
            "protocolVersion": server.protocol_version,
            "tools": [t.name for t in server.tools],
        }
        return HostOffer(desc, "--mcp-stdio", () if base is not None else ASSUMED, info)

    return make


def fixed_offer(offer_desc: h.HostDescriptor, source: str) -> Callable[[h.HarnessRequirements], HostOffer]:
    """A host source that is a host descriptor file."""
    return lambda _req: HostOffer(offer_desc, source)


def roles_offer(roles: Sequence[str], *, all_tools: bool) -> Callable[[h.HarnessRequirements], HostOffer]:
    """A host source from `--tools`/`--all-tools`; executables are looked up on PATH, as the reference."""
    return lambda req: host_from_roles(req, roles, all_tools=all_tools, binaries=binaries_on_path(req))


def package_problems(cartridge: str | os.PathLike[str]) -> list[str]:
    """The errors `acx cartridge spec` finds (`rule@path: message`): the checks every reader of the
    package runs, so a host never boots what spec, install and the Exchange refuse."""
    from acxoci.cartridge.spec import check_spec

    return [
        f"spec:{i.rule}@{i.path}: {i.message}" for i in check_spec(cartridge).issues if i.severity == "error"
    ]


def handshake(
    cartridge: str | os.PathLike[str],
    host: Callable[[h.HarnessRequirements], HostOffer],
    *,
    registry: TrustRegistry | None,
    now: datetime,
) -> Handshake:
    """Verify `cartridge` (RefusedByPolicy if rejected), run the package checks, then negotiate its
    harness against what `host` offers. Package errors refuse too: each is an `unmet` entry
    (`spec:<rule>@<path>: …`) of the compliance descriptor. InvalidInput for a bad host document."""
    verdict = verify_cartridge(cartridge, registry=registry, now=now)
    if verdict.rejected:
        raise RefusedByPolicy(
            f"cartridge signature does not verify ({verdict.trust}): {verdict.summary}",
            where=str(cartridge),
            details={"issues": list(verdict.issues)},
        )
    problems = package_problems(cartridge)
    loaded = load_document(Path(cartridge), h.ROM_PATH)
    try:
        requirements = h.parse_harness(loaded.doc, where=loaded.source)
    except AcxError as exc:
        if not problems:
            raise
        raise h.HarnessRefused(
            "Unsupported harness: the package does not pass its checks: " + "; ".join(problems),
            where=str(cartridge),
            details={"unmet": problems},
        ) from exc
    offer = host(requirements)
    descriptor = h.negotiate(requirements, offer.descriptor, loaded.digest)
    if problems:
        descriptor = replace(descriptor, verdict="refuse", unmet=(*descriptor.unmet, *problems))
    return Handshake(verdict, descriptor, offer, requirements)
