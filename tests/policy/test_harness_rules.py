"""Harness requirements (acx.harness.v1): every rule has a breaking document whose finding names
the rule and JSON path; the reference's default manifest fails exactly as the brief says."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acxoci.errors import InvalidInput
from acxoci.policy.harness import default_harness, parse_harness, validate_harness, validate_host

Doc = dict[str, Any]


def _tool(doc: Doc, role: str) -> Doc:
    return next(t for t in doc["requiredTools"] if t["role"] == role)


def _drop_role(role: str) -> Callable[[Doc], None]:
    def f(d: Doc) -> None:
        d["requiredTools"] = [t for t in d["requiredTools"] if t["role"] != role]
        d["requiredTools"].append({**_tool(default_harness(), "acx:execute"), "role": "acx:extra"})

    return f


CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    (
        "schemaVersion",
        lambda d: d.update(schemaVersion="acx.harness.v2"),
        "harness.schemaVersion",
        "$.schemaVersion",
    ),
    ("unknown top key", lambda d: d.update(extraTools=[]), "harness.closed", "$.extraTools"),
    (
        "legacy externalTools not a list",
        lambda d: d.update(externalTools={"bin": "git"}),
        "harness.legacy.externalTools",
        "$.externalTools",
    ),
    (
        "legacy externalTools path bin",
        lambda d: d.update(externalTools=[{"bin": "/usr/bin/git"}]),
        "harness.legacy.externalTools",
        "$.externalTools[0].bin",
    ),
    (
        "legacy externalTools extra key",
        lambda d: d.update(externalTools=[{"bin": "git", "args": ["-c"]}]),
        "harness.legacy.externalTools",
        "$.externalTools[0]",
    ),
    ("mcp missing", lambda d: d.pop("mcp"), "harness.mcp", "$.mcp"),
    (
        "floor missing",
        lambda d: d["mcp"].pop("minProtocolRevision"),
        "harness.mcp.minProtocolRevision",
        "$.mcp.minProtocolRevision",
    ),
    (
        "floor format",
        lambda d: d["mcp"].update(minProtocolRevision="2024/11/05"),
        "harness.mcp.minProtocolRevision",
        "$.mcp.minProtocolRevision",
    ),
    (
        "floor not a date",
        lambda d: d["mcp"].update(minProtocolRevision="2024-13-45"),
        "harness.mcp.minProtocolRevision",
        "$.mcp.minProtocolRevision",
    ),
    (
        "floor too old",
        lambda d: d["mcp"].update(minProtocolRevision="2024-10-07"),
        "harness.mcp.floor",
        "$.mcp.minProtocolRevision",
    ),
    (
        "preferred below floor",
        lambda d: d["mcp"].update(minProtocolRevision="2025-06-18", preferredProtocolRevision="2025-03-26"),
        "harness.mcp.preferredProtocolRevision",
        "$.mcp.preferredProtocolRevision",
    ),
    (
        "model id instead of floor",
        lambda d: d["model"].update(minContextWindowTokens="claude-200k"),
        "harness.model.minContextWindowTokens",
        "$.model.minContextWindowTokens",
    ),
    ("toolUse missing", lambda d: d["model"].pop("toolUse"), "harness.model.toolUse", "$.model.toolUse"),
    (
        "fewer than four tools",
        lambda d: d["requiredTools"].pop(),
        "harness.required-roles",
        "$.requiredTools",
    ),
    ("execute missing", _drop_role("acx:execute"), "harness.required-roles", "$.requiredTools"),
    ("dispatch missing", _drop_role("acx:dispatch"), "harness.required-roles", "$.requiredTools"),
    ("memory.write missing", _drop_role("acx:memory.write"), "harness.required-roles", "$.requiredTools"),
    ("search missing", _drop_role("acx:search"), "harness.required-roles", "$.requiredTools"),
    (
        "required role only optional",
        lambda d: (
            d["optionalTools"].append({**d["requiredTools"].pop(1), "tier": "optional"}),
            d["requiredTools"].append({**_tool(default_harness(), "acx:execute"), "role": "acx:other"}),
        ),
        "harness.required-roles",
        "$.optionalTools[1].tier",
    ),
    (
        "role scopes",
        lambda d: _tool(d, "acx:search").update(capabilityScopes=["search"]),
        "harness.role-scopes",
        "$.requiredTools[3].capabilityScopes",
    ),
    (
        "unknown scope",
        lambda d: _tool(d, "acx:dispatch").update(capabilityScopes=["dispatch", "root"]),
        "harness.scopes.closed-set",
        "$.requiredTools[1].capabilityScopes[1]",
    ),
    (
        "empty scopes",
        lambda d: d["optionalTools"][0].update(capabilityScopes=[]),
        "harness.tool-contract.scopes",
        "$.optionalTools[0].capabilityScopes",
    ),
    (
        "role pattern",
        lambda d: d["optionalTools"][0].update(role="list_agents"),
        "harness.tool-contract.role",
        "$.optionalTools[0].role",
    ),
    (
        "tier mismatch",
        lambda d: d["optionalTools"][0].update(tier="required"),
        "harness.tool-contract.tier",
        "$.optionalTools[0].tier",
    ),
    (
        "contract missing inputSchema",
        lambda d: d["requiredTools"][0].pop("inputSchema"),
        "harness.tool-contract.inputSchema",
        "$.requiredTools[0].inputSchema",
    ),
    (
        "contract unknown key",
        lambda d: d["requiredTools"][0].update(bin="git"),
        "harness.tool-contract",
        "$.requiredTools[0].bin",
    ),
    (
        "inputSchema required not in properties",
        lambda d: d["requiredTools"][0]["inputSchema"].update(required=["command", "cwd"]),
        "harness.tool-contract.inputSchema",
        "$.requiredTools[0].inputSchema.required",
    ),
    (
        "duplicate role",
        lambda d: d["optionalTools"].append({**_tool(d, "acx:dispatch"), "tier": "optional"}),
        "harness.unique-roles",
        "$.optionalTools[1].role",
    ),
    (
        "legacy filesystem unknown scope",
        lambda d: d.update(filesystem=["fs.exec"]),
        "harness.legacy.filesystem",
        "$.filesystem[0]",
    ),
    (
        "legacy filesystem repeated",
        lambda d: d.update(filesystem=["fs.read", "fs.read"]),
        "harness.legacy.filesystem",
        "$.filesystem[1]",
    ),
    (
        "legacy network host",
        lambda d: d.update(network=["pypi.org"]),
        "harness.legacy.network",
        "$.network[0]",
    ),
    ("filesystem as string", lambda d: d.update(filesystem="fs.read"), "harness.filesystem", "$.filesystem"),
    ("network as number", lambda d: d.update(network=0), "harness.network", "$.network"),
    (
        "egress unknown",
        lambda d: d.update(network={"egress": "some"}),
        "harness.network.egress",
        "$.network.egress",
    ),
    (
        "allowlist empty",
        lambda d: d.update(network={"egress": "allowlist", "allowlist": []}),
        "harness.network.allowlist",
        "$.network.allowlist",
    ),
    (
        "allowlist with none",
        lambda d: d.update(network={"egress": "none", "allowlist": ["x.org"]}),
        "harness.network.allowlist",
        "$.network.allowlist",
    ),
]


def test_default_is_valid() -> None:
    assert validate_harness(default_harness()) == []


@pytest.mark.parametrize(("what", "mutate", "rule", "path"), CASES, ids=[c[0] for c in CASES])
def test_each_harness_rule(what: str, mutate: Callable[[Doc], None], rule: str, path: str) -> None:
    doc = default_harness()
    mutate(doc)
    issues = validate_harness(doc)
    assert (rule, path) in {(i.rule, i.path) for i in issues}, [str(i) for i in issues]
    with pytest.raises(InvalidInput) as exc:
        parse_harness(doc)
    assert rule in str(exc.value)


def test_reference_default_manifest_is_read_as_legacy(vectors_dir: Path) -> None:
    """The reference builder's harness is not the schema shape: three legacy warnings, no error."""
    conn = sqlite3.connect(f"file:{vectors_dir / 'sample' / 'sample.acx'}?mode=ro", uri=True)
    try:
        sz, data = conn.execute(
            "SELECT sz, data FROM sqlar WHERE name = 'rom/manifest/harness-requirements.json'"
        ).fetchone()
    finally:
        conn.close()
    raw = data if len(data) == sz else zlib.decompress(data, -15)
    issues = validate_harness(json.loads(raw))
    assert {(i.rule, i.path, i.severity) for i in issues} == {
        ("harness.legacy.externalTools", "$.externalTools", "warning"),
        ("harness.legacy.filesystem", "$.filesystem", "warning"),
        ("harness.legacy.network", "$.network", "warning"),
    }
    req = parse_harness(json.loads(raw))
    assert req.external_tools == (("git", False), ("node", False))
    assert (req.fs_read, req.fs_write, req.egress) == ((".",), (), "none")
    assert set(req.legacy) == {
        "harness.legacy.externalTools",
        "harness.legacy.filesystem",
        "harness.legacy.network",
    }


def test_legacy_scope_lists_map_to_the_schema_shape() -> None:
    doc = default_harness()
    doc.update(filesystem=["fs.read", "fs.write"], network=["net.fetch"])
    req = parse_harness(doc)
    assert (req.fs_read, req.fs_write, req.egress, req.allowlist) == ((".",), (".",), "any", ())
    doc.update(filesystem=[], network=[])
    req = parse_harness(doc)
    assert (req.fs_read, req.fs_write, req.egress) == ((), (), "none")
    assert req.external_tools == ()


def test_legacy_external_tools_are_bounded() -> None:
    doc = default_harness()
    doc["externalTools"] = [f"tool{i}" for i in range(100_000)]
    issues = validate_harness(doc)
    assert [i.rule for i in issues if i.severity == "error"] == ["harness.legacy.externalTools"]


def test_host_descriptor_schema() -> None:
    assert validate_host(
        {
            "schemaVersion": "acx.host.v1",
            "mcp": {"protocolRevisions": []},
            "model": {"toolUse": True, "contextWindowTokens": 1},
            "tools": [],
        }
    )
    assert (
        validate_host(
            {
                "schemaVersion": "acx.host.v1",
                "mcp": {"protocolRevisions": ["2025-06-18"]},
                "model": {"toolUse": True, "contextWindowTokens": 1},
                "tools": [],
            }
        )
        == []
    )
