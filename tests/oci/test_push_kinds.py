"""`acx push` by kind: the document's schemaVersion names a cartridge, workflow or Agent Graph and
anything else is refused (invalid_input naming what was found, even with --no-verify); workflows
and graphs are linted and signature-verified before push; a pushed graph pulls back as a graph;
`pull` refuses a layer that is not what its artifact type says and leaves nothing behind."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.oci.layout import LayoutStore
from acxoci.oci.target import push_bytes
from acxoci.workflow.graph import sign_graph
from tests.harness.cli import run_acx

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
GRAPH = "graph/product-delivery.signed.agent-graph.json"
GRAPH_TYPE = "application/vnd.acx.agent-graph.v1+json"
WORKFLOW_TYPE = "application/vnd.acx.workflow.v1+json"
MANIFEST_MT = "application/vnd.oci.image.manifest.v1+json"


def _file(tmp: Path, name: str, doc: Any) -> Path:
    p = tmp / name
    p.write_text(json.dumps(doc, indent=2))
    return p


def _non_acx(vectors: Path) -> dict[str, tuple[Any, str]]:
    """Each non-ACX JSON kind the issue lists, with a word its refusal must name."""
    return {
        "hello": ({"hello": 1}, "hello"),
        "registry-index": (
            {"schemaVersion": "acx.registry-index/1", "generatedAt": "2026-07-18T00:00:00Z", "agents": []},
            "acx.registry-index/1",
        ),
        "status-list": (
            {
                "@context": ["https://www.w3.org/ns/credentials/v2"],
                "type": ["VerifiableCredential", "BitstringStatusListCredential"],
                "issuer": "did:web:verifier.example",
                "credentialSubject": {
                    "type": "BitstringStatusList",
                    "statusPurpose": "revocation",
                    "encodedList": "uH4sIAAAAAAAAA-3BMQEAAADCoPVPbQwfoAAAAAAAAAAAAAAAAAAAAIC3AYbSVKsAQAAA",
                },
            },
            "BitstringStatusListCredential",
        ),
        "level-credential": (
            json.loads((vectors / "level" / "vc-min.json").read_text()),
            "OpenBadgeCredential",
        ),
    }


@pytest.mark.parametrize("which", ["hello", "registry-index", "status-list", "level-credential"])
@pytest.mark.parametrize("flags", [(), ("--no-verify",)], ids=["verify", "no-verify"])
def test_non_acx_json_is_refused(
    which: str, flags: tuple[str, ...], vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, word = _non_acx(vectors_dir)[which]
    layout = tmp_path / "layout"
    res = run_acx(
        capsys, "--json", "push", *flags, str(_file(tmp_path, f"{which}.json", doc)), f"oci-layout:{layout}:x"
    )
    assert res.returncode == 3, res.stdout + res.stderr
    err = json.loads(res.stderr or res.stdout)
    err = err.get("error", err)
    assert err["kind"] == "invalid_input"
    assert word in err["message"] and "not an ACX artifact" in err["message"]
    assert not layout.exists() or not any((layout / "blobs").rglob("*"))


def test_graph_push_pulls_back_as_graph(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"oci-layout:{tmp_path / 'layout'}:pd"
    res = run_acx(capsys, "--json", "push", str(vectors_dir / GRAPH), ref)
    assert res.returncode == 0, res.stdout + res.stderr
    pushed = json.loads(res.stdout)
    assert (pushed["kind"], pushed["artifactType"]) == ("agent-graph", GRAPH_TYPE)
    assert pushed["verdict"]["trust"] == "portable"
    out = tmp_path / "out"
    out.mkdir()
    res = run_acx(capsys, "--json", "pull", ref, "-o", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    pulled = json.loads(res.stdout)
    assert pulled["kind"] == "agent-graph" and pulled["verdict"]["trust"] == "portable"
    assert Path(pulled["path"]).read_bytes() == (vectors_dir / GRAPH).read_bytes()
    store = LayoutStore(tmp_path / "layout")
    desc = store.resolve("pd")
    with store.fetch(desc) as fh:
        manifest = json.loads(fh.read())
    assert manifest["layers"][0]["mediaType"] == GRAPH_TYPE
    assert manifest["annotations"]["vnd.acx.agent-graph.digest"].startswith("sha256:4c2c0fce")


def test_unsigned_or_invalid_graph_needs_no_verify(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"oci-layout:{tmp_path / 'layout'}:u"
    src = vectors_dir / "graph" / "product-delivery.agent-graph.json"
    res = run_acx(capsys, "push", str(src), ref)
    assert res.returncode == 8 and "unsigned" in (res.stdout + res.stderr)
    bad = json.loads(src.read_text())
    bad["routes"][0]["to"] = ["ghost"]
    res = run_acx(capsys, "push", str(_file(tmp_path, "bad.agent-graph.json", bad)), ref)
    assert res.returncode == 3 and "does not lint" in (res.stdout + res.stderr)
    res = run_acx(capsys, "--json", "push", "--no-verify", str(src), ref)
    assert res.returncode == 0 and json.loads(res.stdout)["kind"] == "agent-graph"
    out = tmp_path / "g.agent-graph.json"
    res = run_acx(capsys, "--json", "pull", ref, "-o", str(out))
    assert res.returncode == 0 and json.loads(res.stdout)["verdict"]["trust"] == "unsigned"


def test_tampered_graph_is_not_pushed(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((vectors_dir / GRAPH).read_text())
    doc["actors"][0]["description"] = "Someone else entirely."
    res = run_acx(
        capsys, "push", str(_file(tmp_path, "t.agent-graph.json", doc)), f"oci-layout:{tmp_path / 'l'}:t"
    )
    assert res.returncode == 1 and "tampered" in (res.stdout + res.stderr).lower()


def test_workflows_are_verified_before_push(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"oci-layout:{tmp_path / 'layout'}:w"
    res = run_acx(capsys, "--json", "push", str(vectors_dir / "workflow" / "team.signed.cal.json"), ref)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["artifactType"] == WORKFLOW_TYPE
    for published in ("ship-a-feature", "research-council"):  # the reference's signed workflows
        got = run_acx(capsys, "--json", "push", str(vectors_dir / "reference" / f"{published}.cal.json"), ref)
        assert got.returncode == 0 and json.loads(got.stdout)["kind"] == "workflow", got.stderr
    assert run_acx(capsys, "push", str(vectors_dir / "workflow" / "team.cal.json"), ref).returncode == 8
    assert (
        run_acx(capsys, "push", str(vectors_dir / "workflow" / "team.tampered.cal.json"), ref).returncode == 1
    )
    lint_bad = vectors_dir / "workflow" / "lint" / "unknown-agent.cal.json"
    assert run_acx(capsys, "push", str(lint_bad), ref).returncode == 3


def _push_manifest(layout: Path, tag: str, artifact_type: str, layer_type: str, data: bytes) -> None:
    target = LayoutStore(layout, create=True)
    layer = push_bytes(target, data, layer_type)
    config = push_bytes(target, b"{}", "application/vnd.oci.empty.v1+json")
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MT,
        "artifactType": artifact_type,
        "config": config.to_json(),
        "layers": [
            {**layer.to_json(), "annotations": {"org.opencontainers.image.title": "x.agent-graph.json"}}
        ],
    }
    desc = push_bytes(target, json.dumps(manifest).encode(), MANIFEST_MT, artifact_type=artifact_type)
    target.tag(desc, tag)


@pytest.mark.parametrize("flags", [(), ("--no-verify",)], ids=["verify", "no-verify"])
def test_pull_refuses_content_that_is_not_its_artifact_type(
    flags: tuple[str, ...], vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layout = tmp_path / "layout"
    workflow = (vectors_dir / "workflow" / "team.signed.cal.json").read_bytes()
    signed_graph = sign_graph(
        json.loads((vectors_dir / "graph" / "product-delivery.agent-graph.json").read_text()),
        publisher_id="io.github.example",
        key=generate_ed25519(),
        now=NOW,
    )
    cases = {
        "wf-as-graph": (GRAPH_TYPE, GRAPH_TYPE, workflow),
        "graph-as-wf": (WORKFLOW_TYPE, WORKFLOW_TYPE, json.dumps(signed_graph).encode()),
        "hello-as-graph": (GRAPH_TYPE, GRAPH_TYPE, b'{"hello":1}'),
        "sqlite-as-graph": (GRAPH_TYPE, GRAPH_TYPE, (vectors_dir / "sample" / "sample.acx").read_bytes()),
        "json-as-cartridge": (
            "application/vnd.acx.cartridge.v1",
            "application/vnd.acx.cartridge.layer.v1+sqlite",
            json.dumps(signed_graph).encode(),
        ),
    }
    for tag, (atype, ltype, data) in cases.items():
        _push_manifest(layout, tag, atype, ltype, data)
        out = tmp_path / f"out-{tag}"
        out.mkdir()
        res = run_acx(capsys, "pull", *flags, f"oci-layout:{layout}:{tag}", "-o", str(out))
        assert res.returncode == 1, (tag, res.stdout, res.stderr)
        assert "artifact type says" in (res.stdout + res.stderr), (tag, res.stderr)
        assert list(out.iterdir()) == [], tag
