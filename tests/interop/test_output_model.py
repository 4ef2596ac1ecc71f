"""One output model: the `--json` output of every command validates against its schema in
schemas/output/ (error, verdict, transfer, install, document), and no field is spelled two ways
(keyId, publisherId… never keyid / signerKeyId), outside documents embedded verbatim.

One world (keys, a cartridge, a workflow, an OCI layout and a loopback registry, a level
verifier) is built through the CLI itself, and every command of `acx` is run in it with --json;
a command that cannot run here is listed in NOT_RUN with the reason."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acxoci.cli import groups
from acxoci.cli.main import app
from acxoci.cli.output import COMMAND_KINDS, EMBEDDED, FIELD_ALIASES, canonical_fields, make_result
from tests.harness.cli import run_acx
from tests.harness.env import REPO
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

SCHEMAS = REPO / "schemas" / "output"
NOT_RUN: dict[str, str] = {
    "acx login": "needs a registry account; tests/interop/test_tty_prompts.py and test_oci_auth.py",
    "acx logout": "paired with login (see there)",
    "acx release plan": "needs a release plan; tests/interop/test_github_actions.py runs plan/run/status",
    "acx release run": "see acx release plan",
    "acx release resume": "see acx release plan",
    "acx release status": "see acx release plan; tests/release/test_status_projection.py validates its "
                          "--json against schemas/output/release-status.schema.json",
    "acx release pause": "see acx release status (tests/release/test_quota_states.py)",
    "acx release unpause": "see acx release pause",
    "acx release approve": "see acx release status (tests/release/test_monitor_mirrors.py)",
    "acx level run": "plays a benchmark without issuing; `level issue` runs the same games here",
    "acx attest-blob": "issue 16 reworks blob attestations (verify-blob); covered by test_cosign_blob.py",
    "acx verify-blob": "see attest-blob",
    "acx cartridge sign": "re-signs an existing cartridge; `cartridge build` signs here",
    "acx policy simulate": "needs a run trace; tests/policy covers it",
    "acx list": "hidden alias of `acx ls`, which runs here",
    "acx harness negotiate": "writes a compliance file; `install --host` runs the negotiation here",
    "acx builder": "serves until SIGINT/SIGTERM; tests/studio/test_builder_server.py runs it (--json too)",
}


@cache
def schema(kind: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((SCHEMAS / f"{kind}.schema.json").read_text())
    return doc


def all_command_paths() -> set[str]:
    """Every command `acx` registers, as `acx word …`."""
    import typer.main

    groups.register_all(app)
    out: set[str] = set()
    stack = [("acx", typer.main.get_command(app))]
    while stack:
        path, cmd = stack.pop()
        subs = getattr(cmd, "commands", None)
        if subs:
            stack.extend((f"{path} {name}", sub) for name, sub in subs.items())
        else:
            out.add(path)
    return out


def alias_spellings(value: Any, where: str = "$") -> list[str]:
    """Every old field spelling in a result, outside embedded documents."""
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in FIELD_ALIASES:
                found.append(f"{where}.{k}")
            if k not in EMBEDDED:
                found += alias_spellings(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += alias_spellings(v, f"{where}[{i}]")
    return found


class World:
    """Runs `acx --json …` in-process and checks each output as it goes."""

    def __init__(self, capsys: pytest.CaptureFixture[str], root: Path, paths: set[str]) -> None:
        self.capsys, self.root, self.paths = capsys, root, paths
        self.ran: set[str] = set()
        self.kinds: dict[str, set[str]] = {}

    def command_path(self, args: tuple[str, ...]) -> str:
        words = ["acx"]
        for a in args:
            if a.startswith("-"):
                break
            candidate = " ".join([*words, a])
            if candidate in self.paths or any(p.startswith(candidate + " ") for p in self.paths):
                words.append(a)
            else:
                break
        return " ".join(words)

    def __call__(self, *args: str, code: int = 0) -> Any:
        res = run_acx(self.capsys, "--json", *[a.replace("{R}", str(self.root)) for a in args])
        path = self.command_path(args)
        assert res.returncode == code, (path, res.returncode, res.stdout[-3000:], res.stderr[-2000:])
        out = json.loads(res.stdout)
        is_error = isinstance(out, dict) and set(out) == {"error"}
        kind = "error" if is_error else COMMAND_KINDS.get(path, "document")
        errors = sorted(jsonschema.Draft202012Validator(schema(kind)).iter_errors(out), key=str)
        assert not errors, (path, kind, [e.message for e in errors][:5])
        assert alias_spellings(out) == [], (path, alias_spellings(out))
        self.ran.add(path)
        self.kinds.setdefault(path, set()).add(kind)
        return out


@pytest.mark.timeout(900)
def test_every_command_json_validates_against_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], distribution_registry: Registry
) -> None:
    paths = all_command_paths()
    acx = World(capsys, tmp_path, paths)
    reg = distribution_registry.host
    r = "{R}"
    # keys and trust
    acx("key", "generate", "-o", f"{r}/pub.pem")
    acx("key", "trust", f"{r}/pub.pub.pem", "--publisher", "dev.example.out", "-r", f"{r}/trust.json",
        "--not-before", "2026-01-01T00:00:00Z")
    acx("key", "inspect", f"{r}/pub.pem")
    # cartridges
    pkg = str(REPO / "examples" / "agent-package")
    acx("cartridge", "build", pkg, "-o", f"{r}/agent.acx", "--publisher", "dev.example.out",
        "--key", f"{r}/pub.pem")
    acx("cartridge", "verify", f"{r}/agent.acx", "--trust-registry", f"{r}/trust.json")
    acx("cartridge", "inspect", f"{r}/agent.acx")
    acx("cartridge", "spec", f"{r}/agent.acx")
    acx("cartridge", "skillset", f"{r}/agent.acx")
    acx("cartridge", "strip", f"{r}/agent.acx", "-o", f"{r}/stripped.acx")
    acx("policy", "check", f"{r}/agent.acx")
    acx("harness", "check", f"{r}/agent.acx")
    acx("harness", "lint", f"{r}/agent.acx")
    acx("check", f"{r}/agent.acx", "--all-tools")
    acx("check", f"{r}/agent.acx", "--tools", "acx:execute", code=8)
    acx("lance", f"{r}/agent.acx", "--out", f"{r}/memory", "--trust-registry", f"{r}/trust.json")
    # authoring and sharing
    acx("init", f"{r}/new-agent", "--role", "qa_engineer")
    acx("init", "--from-code", str(REPO / "examples"), "--out", f"{r}/agent-set")
    acx("share", "agent", f"{r}/agent.acx", "--registry", f"{r}", "--dry-run")
    # OCI
    layout = f"oci-layout:{r}/store"
    acx("push", f"{r}/agent.acx", f"{layout}:1.0.0", "--sign", "--key", f"{r}/pub.pem")
    acx("push", f"{r}/agent.acx", f"{reg}/out/agent:1.0.0", "--sign", "--key", f"{r}/pub.pem")
    acx("verify", f"{reg}/out/agent:1.0.0", "--trust-registry", f"{r}/trust.json")
    acx("attest", f"{layout}:1.0.0", "--key", f"{r}/pub.pem")
    acx("discover", f"{layout}:1.0.0")
    acx("tags", layout)
    acx("manifest", "get", f"{layout}:1.0.0")
    acx("pull", f"{reg}/out/agent:1.0.0", "-o", f"{r}/pulled.acx")
    acx("cp", "-r", f"{reg}/out/agent:1.0.0", f"oci-layout:{r}/mirror")
    (tmp_path / "note.json").write_text('{"note": 1}\n')
    acx("attach", f"{layout}:1.0.0", f"{r}/note.json", "--artifact-type", "application/vnd.example+json")
    # install
    acx("policy", "init", "-o", f"{r}/policy.yaml", "--publisher", "dev.example.out",
        "--trust-registry", f"{r}/trust.json")
    acx("policy", "init", "-o", f"{r}/nobody.yaml")
    refused = acx("install", f"{layout}:1.0.0", "--policy", f"{r}/nobody.yaml", "--store", f"{r}/st", code=8)
    assert refused["status"] == "refused" and refused["error"]["kind"] == "refused_by_policy"
    done = acx("install", f"{layout}:1.0.0", "--policy", f"{r}/policy.yaml", "--store", f"{r}/st",
               "--host", str(REPO / "examples" / "host.json"))
    acx("installed", "list", "--store", f"{r}/st")
    acx("installed", "show", done["name"], "--store", f"{r}/st")
    acx("installed", "verify", "--store", f"{r}/st")
    acx("installed", "sync", "--dry-run", "--store", f"{r}/st")
    acx("installed", "sync", "--store", f"{r}/st")
    acx("activate", done["name"], "--skills-dir", f"{r}/skills", "--store", f"{r}/st")
    acx("deactivate", done["name"], "--skills-dir", f"{r}/skills", "--store", f"{r}/st")
    acx("uninstall", done["name"], "--store", f"{r}/st")
    acx("load", f"{r}/agent.acx", "--skills-dir", f"{r}/loaded", "--policy", f"{r}/policy.yaml",
        "--print-only")
    acx("load", f"{r}/agent.acx", "--skills-dir", f"{r}/loaded", "--policy", f"{r}/policy.yaml",
        "--store", f"{r}/st")
    acx("verify", f"{layout}:1.0.0", "--policy", f"{r}/policy.yaml")
    # the Exchange: one cartridge at its coordinate, indexed, verified, mirrored
    coord = tmp_path / "exchange" / "cartridges" / "dev.example.out" / "pr-reviewer" / "1.0.0"
    coord.mkdir(parents=True)
    (coord / "cartridge.acx").write_bytes((tmp_path / "agent.acx").read_bytes())
    acx("exchange", "index", f"{r}/exchange")
    acx("exchange", "verify", f"{r}/exchange")
    acx("exchange", "mirror", f"{r}/exchange", f"oci-layout:{r}/exmirror")
    acx("exchange", "site", f"{r}/exchange", "--out", f"{r}/site", "--trust-registry", f"{r}/trust.json")
    acx("exchange", "site", f"oci-layout:{r}/exmirror", "--out", f"{r}/msite", "--policy", f"{r}/policy.yaml")
    # workflows
    flow = str(REPO / "examples" / "workflow" / "review-team.cal.json")
    acx("workflow", "lint", flow, "--publish")
    acx("workflow", "digest", flow)
    acx("workflow", "inspect", flow)
    acx("workflow", "sign", flow, "--publisher", "dev.example.out", "--key", f"{r}/pub.pem",
        "-o", f"{r}/team.cal.json")
    acx("workflow", "verify", f"{r}/team.cal.json", "--trust-registry", f"{r}/trust.json")
    acx("workflow", "remix", f"{r}/team.cal.json", "-o", f"{r}/remix.cal.json")
    acx("workflow", "ready", f"{r}/team.cal.json", "--cartridges", r, code=1)
    acx("cal", f"{r}/team.cal.json", "--cartridges", r, code=1)
    acx("ls", r)
    # agent graphs
    graph = str(REPO / "examples" / "graph" / "review-team.agent-graph.json")
    acx("graph", "lint", graph, "--publish")
    acx("graph", "digest", graph)
    acx("graph", "inspect", graph)
    acx("graph", "sign", graph, "--publisher", "dev.example.out", "--key", f"{r}/pub.pem",
        "--out", f"{r}/team.agent-graph.json")
    acx("graph", "verify", f"{r}/team.agent-graph.json")
    # levels and status lists
    acx("level", "bench-init", "-o", f"{r}/bench", "--demo")
    acx("key", "generate", "-o", f"{r}/verifier.pem")
    acx("key", "trust", f"{r}/verifier.pub.pem", "--publisher", "example.verifier", "-r", f"{r}/issuers.json")
    status_ref = f"{reg}/out/status:status"
    acx("status-list", "create", "--id", status_ref, "--issuer", "did:web:verifier.example",
        "--issuer-key", f"{r}/verifier.pem", "-o", f"{r}/status.json")
    acx("status-list", "publish", f"{r}/status.json", status_ref)
    acx("status-list", "show", status_ref)
    bench = f"{r}/bench/acx-bench-dag-de@2026.07.1.bench.json"
    acx("level", "issue", f"{reg}/out/agent:1.0.0", "--bench", bench,
        "--issuer", "did:web:verifier.example", "--issuer-key", f"{r}/verifier.pem",
        "--status-list", f"{r}/status.json", "-o", f"{r}/level.vc.json")
    acx("level", "verify", f"{reg}/out/agent:1.0.0", "--issuers", f"{r}/issuers.json")
    acx("key", "generate", "-o", f"{r}/old.pem")
    acx("key", "trust", f"{r}/old.pub.pem", "--publisher", "example.verifier", "-r", f"{r}/issuers.json")
    acx("key", "revoke", f"{r}/old.pub.pem", "--trust-registry", f"{r}/issuers.json", "--reason", "retired")
    acx("level", "revoke", f"{r}/level.vc.json", "--status-list", f"{r}/status.json",
        "--issuer-key", f"{r}/verifier.pem", "--publish", status_ref)
    acx("level", "verify", f"{reg}/out/agent:1.0.0", "--issuers", f"{r}/issuers.json", code=1)
    # errors
    acx("cartridge", "verify", f"{r}/missing.acx", code=4)
    acx("install", f"{layout}:1.0.0", code=2)

    unknown = {p for p in paths if p not in acx.ran and p not in NOT_RUN}
    assert not unknown, f"commands neither run here nor listed in NOT_RUN: {sorted(unknown)}"
    stale = {p for p in NOT_RUN if p not in paths or p in acx.ran}
    assert not stale, f"NOT_RUN lists commands that do not exist or do run: {sorted(stale)}"
    missing_kinds = {p for p in COMMAND_KINDS if p not in paths}
    assert not missing_kinds, f"COMMAND_KINDS names commands that do not exist: {sorted(missing_kinds)}"


def test_canonical_fields_rename_outside_embedded_documents() -> None:
    data = {"keyid": "a", "attestations": [{"signerKeyId": "b", "verdict": "verified"}],
            "record": {"keys": [{"keyid": "kept"}]}, "keyId": "x"}
    out = canonical_fields(data)
    assert out["keyId"] == "x" and "keyid" not in out  # the canonical spelling wins
    assert out["attestations"][0] == {"keyId": "b", "verdict": "verified"}
    assert out["record"] == {"keys": [{"keyid": "kept"}]}


def test_verdict_and_install_results_have_their_shape() -> None:
    v = make_result({"ready": False, "verdict": "NOT READY"}, "verdict").to_json()
    assert v["ok"] is False and "ready" not in v
    c = make_result({"status": "verified", "exitCode": 0}, "verdict").to_json()
    assert c["ok"] is True and c["verdict"] == "verified"
    refused = make_result({"status": "refused", "reference": "x", "checks": [],
                           "refusal": {"kind": "refused_by_policy", "exitCode": 8,
                                       "failed": [{"id": "trust", "kind": "untrusted_publisher"}]}},
                          "install").to_json()
    assert refused["error"]["exitCode"] == 8 and "trust: untrusted_publisher" in refused["error"]["message"]
    jsonschema.validate(refused, schema("install"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ok": True, "verdict": "x", "keyid": "y"}, schema("verdict"))
