"""Smaller parity with the reference: `workflow ready` prints the flow and its conditions, signing
without a key names the command that makes one (decision 0031), human `cartridge inspect` shows
every metadata entry and the attestations, and `install`/`verify`/`pull` given a local file refuse
before any network request, naming the command that takes a file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO, VECTORS
from tests.harness.evilregistry import recorder

FLOW = REPO / "examples" / "workflow" / "review-team.cal.json"
GRAPH = REPO / "examples" / "graph" / "review-team.agent-graph.json"


def test_ready_prints_the_flow_and_its_conditions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "roster").mkdir()
    r = run_acx(capsys, "workflow", "ready", str(FLOW), "--cartridges", str(tmp_path / "roster"))
    assert r.returncode == 1
    out = r.stdout
    assert "Flow:" in out and "Conditional transitions:" in out and "Nodes (start:" in out
    assert "decide → abandoned  when" in out and "begin → change" in out
    code, data = acx_json(capsys, "workflow", "ready", str(FLOW), "--cartridges", str(tmp_path / "roster"))
    assert code == 1 and any(f["when"] for f in data["conditional"]) and data["flow"]


@pytest.mark.parametrize(("kind", "doc", "out_flag"), [("workflow", FLOW, "-o"), ("graph", GRAPH, "--out")])
def test_sign_without_a_key_names_the_command_that_makes_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, doc: Path, out_flag: str
) -> None:
    out = tmp_path / "signed.json"
    code, err = acx_json(
        capsys, kind, "sign", str(doc), "--publisher", "io.github.example", out_flag, str(out)
    )
    assert code == 2 and "acx key generate" in (err["error"]["hint"] or ""), err
    assert not out.exists() and sorted(os.listdir(tmp_path)) == []  # no key written anywhere


def test_human_inspect_shows_all_metadata_and_attestations(capsys: pytest.CaptureFixture[str]) -> None:
    ref = VECTORS / "reference" / "ada-ridge.acx"
    if not ref.is_file():
        pytest.skip("shared vectors not found")
    code, data = acx_json(capsys, "cartridge", "inspect", str(ref))
    assert code == 0 and data["attestations"]
    human = run_acx(capsys, "cartridge", "inspect", str(ref)).stdout
    assert f"metadata ({len(data['meta'])}):" in human
    for k in data["meta"]:
        assert f"    {k} = " in human
    assert f"attestations ({len(data['attestations'])}):" in human
    for a in data["attestations"]:
        assert a["attId"] in human and a["type"] in human


def test_reference_commands_refuse_a_local_file_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = recorder()
    try:
        host_dir = tmp_path / server.host  # a file whose path reads like host:port/repo
        host_dir.mkdir()
        local = host_dir / "agent"
        build_cartridge(
            REPO / "examples" / "agent-package",
            local,
            publisher="io.github.example",
            key=generate_ed25519(),
            created_at="2026-05-04T09:00:00.000Z",
        )
        shutil.copyfile(REPO / "examples" / "host.json", tmp_path / "policy.yaml")
        os.chdir(tmp_path)
        ref = f"{server.host}/agent"
        for args, needle in (
            (("install", ref, "--policy", "policy.yaml"), "acx load FILE"),
            (("verify", ref), "acx cartridge verify FILE"),
            (("pull", ref, "-o", "x.acx"), "needs no pull"),
        ):
            code, err = acx_json(capsys, *args)
            assert code == 2 and needle in err["error"]["hint"] and "local file" in err["error"]["message"], (
                err
            )
        assert server.seen == []  # not one request reached the registry the path looks like
    finally:
        server.stop()
