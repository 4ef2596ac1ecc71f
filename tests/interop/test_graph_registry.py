"""Agent Graphs on real registries (distribution, acx-refreg) with oras 1.3 in both directions:
acx pushes a graph that oras pulls byte-for-byte under its graph artifact type; oras pushes a graph
that acx pulls and verifies; oras pushes non-graph content under the graph type and acx refuses it
and leaves nothing behind."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.cli import run_acx
from tests.harness.fixtures import start_registry
from tests.harness.peers import Oras
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

GRAPH_TYPE = "application/vnd.acx.agent-graph.v1+json"
SIGNED = "graph/product-delivery.signed.agent-graph.json"


@pytest.fixture(params=["distribution", "refreg"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Registry]:
    reg = start_registry(str(request.param), tmp_path / str(request.param))
    yield reg
    reg.stop()


def test_graph_both_directions(
    registry: Registry, oras13: Oras, vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(vectors_dir / SIGNED, work / "pd.agent-graph.json")
    ref = f"{registry.host}/acx/graph:v1"
    res = run_acx(capsys, "--json", "push", str(work / "pd.agent-graph.json"), ref)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["artifactType"] == GRAPH_TYPE
    out = work / "oras-out"
    out.mkdir()
    oras13.run("pull", "--plain-http", "-o", str(out), ref)
    assert (out / "pd.agent-graph.json").read_bytes() == (vectors_dir / SIGNED).read_bytes()
    manifest = json.loads(oras13.run("manifest", "fetch", "--plain-http", ref).stdout)
    assert manifest["artifactType"] == GRAPH_TYPE and manifest["layers"][0]["mediaType"] == GRAPH_TYPE

    oref = f"{registry.host}/oras/graph:v1"
    oras13.run("push", "--plain-http", "--artifact-type", GRAPH_TYPE, oref,
               f"pd.agent-graph.json:{GRAPH_TYPE}", cwd=work)  # fmt: skip
    res = run_acx(capsys, "--json", "pull", oref, "-o", str(work / "back.agent-graph.json"))
    assert res.returncode == 0, res.stdout + res.stderr
    pulled = json.loads(res.stdout)
    assert pulled["kind"] == "agent-graph" and pulled["verdict"]["trust"] == "portable"

    (work / "hello.json").write_text('{"hello": 1}')
    bref = f"{registry.host}/oras/not-a-graph:v1"
    oras13.run(
        "push", "--plain-http", "--artifact-type", GRAPH_TYPE, bref, f"hello.json:{GRAPH_TYPE}", cwd=work
    )
    dest = work / "refused"
    dest.mkdir()
    res = run_acx(capsys, "pull", "--no-verify", bref, "-o", str(dest))
    assert res.returncode == 1 and "artifact type says agent-graph" in res.stderr, res.stderr
    assert list(dest.iterdir()) == []
