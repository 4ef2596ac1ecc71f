"""The SPEC §8.5 handshake: binding one tool per role, scopes, revision floor, model, fs/net,
the compliance descriptor, the -32602 refusal listing every unmet item, and a refused
negotiation leaving the cartridge byte-identical."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.policy._schema import load_schema
from acxoci.policy.harness import (
    ComplianceDescriptor,
    default_harness,
    negotiate,
    parse_harness,
    parse_host,
    preflight,
    schema_accepts,
)
from tests.harness.cli import run_acx
from tests.harness.env import REPO

HOST = json.loads((REPO / "examples" / "host.json").read_text())
HASH = "sha256:" + "ab" * 32


def run(host: dict[str, Any], req: dict[str, Any] | None = None) -> ComplianceDescriptor:
    d = negotiate(parse_harness(req or default_harness()), parse_host(host), HASH)
    jsonschema.validate(d.to_json(), load_schema("acx.harness-compliance.v1.schema.json"))
    return d


def test_example_host_accepts_and_binds_each_role() -> None:
    d = run(HOST)
    assert d.verdict == "accept" and d.unmet == () and d.jsonrpc_error() is None
    bound = {b.role: b.bound_tool for b in d.bindings}
    assert bound == {
        "acx:execute": "shell",
        "acx:dispatch": "spawn_agent",
        "acx:memory.write": "remember",
        "acx:search": "recall",
        "acx:list_agents": "recall",
    }
    assert d.protocol_revision == "2025-11-25"
    assert d.to_json()["requirementsHash"] == HASH
    assert preflight(d.to_json()) == []


def _without(tool: str) -> dict[str, Any]:
    h = copy.deepcopy(HOST)
    h["tools"] = [t for t in h["tools"] if t["name"] != tool]
    return h


@pytest.mark.parametrize(
    ("host", "unmet"),
    [
        (_without("spawn_agent"), ["role:acx:dispatch"]),
        (
            {
                **HOST,
                "tools": [{**t, "scopes": ["exec"]} if t["name"] == "shell" else t for t in HOST["tools"]],
            },
            ["scope:acx:execute:fs.read"],
        ),
        (
            {
                **HOST,
                "tools": [
                    {**t, "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}
                    if t["name"] == "shell"
                    else t
                    for t in HOST["tools"]
                ],
            },
            ["schema:acx:execute:shell"],
        ),
        ({**HOST, "mcp": {"protocolRevisions": ["2024-10-07"]}}, ["protocolRevision:2024-10-07<2024-11-05"]),
        ({**HOST, "model": {"toolUse": False, "contextWindowTokens": 200000}}, ["model.toolUse"]),
        (
            {**HOST, "model": {"toolUse": True, "contextWindowTokens": 32000}},
            ["model.contextWindowTokens:32000<100000"],
        ),
        ({**HOST, "filesystem": {"read": ["docs"], "write": []}}, ["filesystem.read:."]),
    ],
)
def test_refusals_name_each_unmet_item(host: dict[str, Any], unmet: list[str]) -> None:
    d = run(host)
    assert d.verdict == "refuse"
    assert list(d.unmet) == unmet
    err = d.jsonrpc_error()
    assert err is not None and err["code"] == -32602 and err["message"] == "Unsupported harness"
    assert err["data"]["unmet"] == unmet and "requested" in err["data"] and "supported" in err["data"]


def test_every_unmet_role_is_listed_at_once() -> None:
    host = {**HOST, "tools": []}
    d = run(host)
    assert sorted(d.unmet) == sorted(
        f"role:{r}" for r in ("acx:execute", "acx:dispatch", "acx:memory.write", "acx:search")
    )
    assert preflight(d.to_json())


def test_optional_tools_never_block() -> None:
    host = copy.deepcopy(HOST)
    for t in host["tools"]:
        t["roles"] = [r for r in t["roles"] if r != "acx:list_agents"]
    d = run(host)
    assert d.verdict == "accept"
    opt = next(b for b in d.bindings if b.role == "acx:list_agents")
    assert (opt.bound_tool, opt.satisfied) == (None, False)


def test_revision_negotiation_prefers_preferred_then_newest_older() -> None:
    assert (
        run({**HOST, "mcp": {"protocolRevisions": ["2024-11-05", "2025-06-18"]}}).protocol_revision
        == "2025-06-18"
    )


def test_network_and_write_grants() -> None:
    req = default_harness()
    req["network"] = {"egress": "allowlist", "allowlist": ["pypi.org", "github.com"]}
    req["filesystem"] = {"read": ["src"], "write": ["save/notes"]}
    d = run(HOST, req)
    assert set(d.unmet) == {"network.egress:allowlist"}
    host = {
        **HOST,
        "network": {"egress": "allowlist", "allowlist": ["pypi.org"]},
        "filesystem": {"read": ["."], "write": ["save"]},
    }
    d = run(host, req)
    assert list(d.unmet) == ["network.allowlist:github.com"]
    d = run({**host, "network": {"egress": "any"}}, req)
    assert d.verdict == "accept" and d.filesystem_granted == {"read": ("src",), "write": ("save/notes",)}
    d = run({**host, "network": {"egress": "any"}, "filesystem": {"read": ["."], "write": []}}, req)
    assert list(d.unmet) == ["filesystem.write:save/notes"]


def test_schema_accepts_checks_required_properties_and_types() -> None:
    from acxoci.attest.typed import decode_as
    from acxoci.documents.harness import HarnessDocToolInputSchema as Schema

    def s(doc: dict[str, object]) -> Schema:
        return decode_as(doc, Schema, document="inputSchema")

    contract = s({"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}}})
    assert schema_accepts(s({"properties": {"command": {"type": ["string", "null"]}}}), contract) == []
    assert schema_accepts(s({"properties": {"command": {}}}), contract) == []
    assert schema_accepts(s({"properties": {"command": True}}), contract) == []
    assert schema_accepts(s({"properties": {"command": {"type": "integer"}}}), contract)
    assert schema_accepts(s({"properties": {}}), contract)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_cli_refusal_leaves_cartridge_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli = lambda *a: run_acx(capsys, "--json", *a)  # noqa: E731
    cart = tmp_path / "c.acx"
    build_cartridge(
        REPO / "examples" / "agent-package",
        cart,
        publisher="io.github.example-acx",
        key=generate_ed25519(),
        created_at="2026-05-04T09:00:00.000Z",
    )
    before = _sha(cart)
    mtime = cart.stat().st_mtime_ns
    host = tmp_path / "host.json"
    host.write_text(json.dumps(_without("remember")))
    out = tmp_path / "descriptor.json"
    res = _cli("harness", "negotiate", str(cart), "--host", str(host), "-o", str(out))
    assert res.returncode == 8, res.stderr
    data = json.loads(res.stdout)
    assert data["error"]["code"] == -32602 and data["error"]["data"]["unmet"] == ["role:acx:memory.write"]
    assert json.loads(out.read_text())["verdict"] == "refuse"
    assert _sha(cart) == before and cart.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.acx", "descriptor.json", "host.json"]
    ok = _cli("harness", "negotiate", str(cart), "--host", str(REPO / "examples" / "host.json"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    desc = json.loads(ok.stdout)["descriptor"]
    assert desc["verdict"] == "accept"
    assert desc["requirementsHash"].startswith("sha256:")
    assert _sha(cart) == before


def test_cli_refuses_tampered_cartridge(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cli = lambda *a: run_acx(capsys, "--json", *a)  # noqa: E731
    target = vectors_dir / "sample" / "tampered" / "rom-data.acx"
    before = _sha(target)
    res = _cli("harness", "negotiate", str(target), "--host", str(REPO / "examples" / "host.json"))
    assert res.returncode == 8, res.stdout + res.stderr
    assert "tampered" in res.stdout
    assert _sha(target) == before
