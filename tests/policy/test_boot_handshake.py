"""The boot handshake as one path: `acx check` (the reference's preflight verdicts) and `acx harness
negotiate` verify the cartridge, run the package checks `cartridge spec` runs, and negotiate
against a host file, the roles an operator names, or a real MCP server (the reference filesystem
server from npm, started by the test); hostile stand-in servers stay bounded."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.policy.harness import default_harness
from tests.harness import env
from tests.harness.cartridges import build_example, policy_unknown_schema, skill_table_disagrees
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO

HOST = str(REPO / "examples" / "host.json")


@pytest.fixture(scope="module")
def key() -> PrivateKey:
    return generate_ed25519()


def test_check_gives_the_reference_verdicts(
    tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str]
) -> None:
    cart = build_example(tmp_path, key)
    code, out = acx_json(capsys, "check", str(cart), "--all-tools")
    assert code == 0 and out["ok"] and out["verdict"] == "ACCEPT" and out["host"]["assumed"]
    code, out = acx_json(capsys, "check", str(cart), "--tools", "acx:execute,acx:search,search_memory")
    assert code == 8 and out["verdict"] == "REFUSE"
    assert out["unmet"] == ["role:acx:dispatch", "role:acx:memory.write"]
    assert out["error"]["code"] == -32602 and out["error"]["message"] == "Unsupported harness"
    human = run_acx(capsys, "check", str(cart), "--all-tools")
    assert "ACCEPT" in human.stdout and "this host can boot the cartridge" in human.stdout
    assert acx_json(capsys, "check", str(cart))[0] == 2  # says nothing about the host: usage
    assert acx_json(capsys, "check", str(cart), "--all-tools", "--host", HOST)[0] == 2


def test_negotiate_and_check_refuse_what_spec_refuses(
    tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str]
) -> None:
    good = build_example(tmp_path, key)
    for bad, rule in (
        (skill_table_disagrees(good, tmp_path), "spec:skill.rom@acx_skill"),
        (policy_unknown_schema(good, tmp_path, key), "spec:schemaVersion.known@rom/policy/"),
    ):
        assert acx_json(capsys, "cartridge", "verify", str(bad))[0] == 0  # the signature is fine
        assert acx_json(capsys, "cartridge", "spec", str(bad))[0] == 1
        code, out = acx_json(capsys, "harness", "negotiate", str(bad), "--host", HOST)
        assert code == 8 and out["descriptor"]["verdict"] == "refuse", out
        assert any(u.startswith(rule) for u in out["error"]["data"]["unmet"]), out["error"]
        code, out = acx_json(capsys, "check", str(bad), "--all-tools")
        assert code == 8 and any(u.startswith(rule) for u in out["unmet"])
    code, out = acx_json(capsys, "harness", "negotiate", str(good), "--host", HOST)
    assert code == 0 and out["descriptor"]["verdict"] == "accept"
    tampered = tmp_path / "t.acx"
    shutil.copyfile(good, tampered)
    with sqlite3.connect(tampered) as db:
        db.execute("UPDATE sqlar SET data = CAST('x' AS BLOB), sz = 1 WHERE name LIKE 'rom/knowledge/%'")
    assert acx_json(capsys, "check", str(tampered), "--all-tools")[0] == 8


def test_harness_check_is_renamed_lint(
    tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str]
) -> None:
    cart = build_example(tmp_path, key)
    code, out = acx_json(capsys, "harness", "lint", str(cart))
    assert code == 0 and out["ok"] and out["verdict"]
    old = run_acx(capsys, "--json", "harness", "check", str(cart))
    assert old.returncode == 0 and json.loads(old.stdout)["ok"] and "deprecated" in old.stderr


def _fs_harness(floor: str = "2024-11-05", preferred: str = "2025-06-18") -> dict[str, Any]:
    """Requirements whose four contracts the filesystem server's tools can serve."""
    doc = default_harness()
    doc["mcp"] = {"minProtocolRevision": floor, "preferredProtocolRevision": preferred}
    strings = lambda *names: {  # noqa: E731
        "type": "object",
        "required": list(names),
        "properties": {n: {"type": "string"} for n in names},
    }
    contracts = {
        "acx:execute": ("write_file", strings("path", "content")),
        "acx:dispatch": ("create_directory", strings("path")),
        "acx:memory.write": ("move_file", strings("source", "destination")),
        "acx:search": ("search_files", strings("path", "pattern")),
    }
    for t in doc["requiredTools"]:
        t["name"], t["inputSchema"] = contracts[t["role"]]
    doc["optionalTools"] = []
    return doc


@pytest.fixture(scope="module")
def mcp_fs() -> Path:
    return env.peer("mcp-filesystem")


def test_negotiation_against_a_real_mcp_server(
    tmp_path: Path, key: PrivateKey, mcp_fs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "served"
    root.mkdir()
    server = f"{mcp_fs} '{root}'"
    fitting = build_example(tmp_path, key, _fs_harness(), "fs.acx")
    code, out = acx_json(capsys, "check", str(fitting), "--mcp-stdio", server)
    assert code == 0 and out["verdict"] == "ACCEPT", out
    desc = out["descriptor"]
    assert desc["protocolRevision"] == "2025-06-18"
    assert {b["role"]: b["boundTool"] for b in desc["bindings"]} == {
        "acx:execute": "write_file",
        "acx:dispatch": "create_directory",
        "acx:memory.write": "move_file",
        "acx:search": "search_files",
    }
    assert (
        out["host"]["mcpServer"]["name"] and "list_allowed_directories" in out["host"]["mcpServer"]["tools"]
    )
    # the same through harness negotiate, the descriptor written to a file
    descriptor = tmp_path / "compliance.json"
    code, _ = acx_json(
        capsys, "harness", "negotiate", str(fitting), "--mcp-stdio", server, "-o", str(descriptor)
    )
    assert code == 0 and json.loads(descriptor.read_text())["verdict"] == "accept"
    # the default roles: the filesystem server has none of those tools: -32602, every role unmet
    default = build_example(tmp_path, key, None, "default.acx")
    code, out = acx_json(capsys, "check", str(default), "--mcp-stdio", server)
    assert code == 8 and out["error"]["code"] == -32602 and out["error"]["message"] == "Unsupported harness"
    assert out["unmet"] == [
        "role:acx:execute",
        "role:acx:dispatch",
        "role:acx:memory.write",
        "role:acx:search",
    ]
    # an operator's binding is checked against the tool's real inputSchema
    code, out = acx_json(
        capsys, "check", str(default), "--mcp-stdio", server, "--bind", "acx:search=search_files"
    )
    assert code == 8 and "schema:acx:search:search_files" in out["unmet"]
    # a floor newer than the server speaks: the revision it answered is checked against it
    future = build_example(tmp_path, key, _fs_harness("2099-01-01", "2099-01-01"), "future.acx")
    code, out = acx_json(capsys, "check", str(future), "--mcp-stdio", server)
    assert code == 8 and any(
        u.startswith("protocolRevision:") and u.endswith("<2099-01-01") for u in out["unmet"]
    )
    assert sorted(p.name for p in root.iterdir()) == []  # nothing was called, nothing written


STAND_INS = {  # stand-ins for broken MCP servers (not real servers; named so)
    "silent": "import time\ntime.sleep(60)\n",
    "garbage": "import sys\nsys.stdin.readline()\nprint('hello, I am not JSON-RPC', flush=True)\n",
    "flood": "import sys\nsys.stdin.readline()\nsys.stdout.write('x' * (64 * 1024 * 1024))\n",
    "error": (
        "import sys, json\nreq = json.loads(sys.stdin.readline())\n"
        "err = {'code': -1, 'message': 'no'}\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': req['id'], 'error': err}), flush=True)\n"
    ),
}


@pytest.mark.parametrize(
    ("name", "code", "needle"),
    [
        ("silent", 6, "did not answer within 1 s"),
        ("garbage", 3, "not JSON-RPC"),
        ("flood", 3, "larger than"),
        ("error", 3, "answered with an error"),
    ],
)
def test_broken_servers_are_bounded(
    tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str], name: str, code: int, needle: str
) -> None:
    script = tmp_path / f"stand_in_{name}.py"
    script.write_text(STAND_INS[name])
    cart = build_example(tmp_path, key)
    got, out = acx_json(
        capsys, "check", str(cart), "--mcp-stdio", f"{sys.executable} {script}", "--mcp-timeout", "1"
    )
    assert got == code and needle in out["error"]["message"], out


def test_the_command_is_split_never_run_by_a_shell(
    tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str]
) -> None:
    cart = build_example(tmp_path, key)
    marker = tmp_path / "pwned"
    script = tmp_path / "stand_in_args.py"
    script.write_text("import sys, json\nopen(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))\n")
    record = tmp_path / "argv.json"
    cmd = f"{sys.executable} {script} {record} 'two words' ; touch {marker} $(id) `id`"
    code, _ = acx_json(capsys, "check", str(cart), "--mcp-stdio", cmd, "--mcp-timeout", "2")
    assert code == 6  # the stand-in exits without answering
    assert json.loads(record.read_text()) == ["two words", ";", "touch", str(marker), "$(id)", "`id`"]
    assert not marker.exists()
    assert acx_json(capsys, "check", str(cart), "--mcp-stdio", "no-such-binary-acx --x")[0] == 4
    assert acx_json(capsys, "check", str(cart), "--mcp-stdio", "python3 'unbalanced")[0] == 2
    assert acx_json(capsys, "check", str(cart), "--mcp-stdio", sys.executable, "--bind", "nope")[0] == 2
