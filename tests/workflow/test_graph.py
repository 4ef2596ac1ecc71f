"""Agent Graphs (`acx.agent-graph/1`): the reference's vectors reproduce (digest, lint, verdicts),
sign → verify → digest round trips with keys made at run time, every binding is checked, lint
rules fire on one edit each, and hostile graphs get typed, bounded answers (never exit 70)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.b64 import b64decode_lenient
from acxoci.attest.canonical import jcs
from acxoci.attest.dsse import sign as dsse_sign
from acxoci.attest.keys import generate_ed25519
from acxoci.errors import RefusedByPolicy
from acxoci.workflow.graph import (
    GRAPH_PREDICATE_TYPE,
    graph_digest,
    lint_graph,
    sign_graph,
    verify_graph,
)
from acxoci.workflow.verify import verify_workflow
from tests.harness.cli import run_acx

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
SIGNED = "graph/product-delivery.signed.agent-graph.json"
SOURCE = "graph/product-delivery.agent-graph.json"
Doc = dict[str, Any]


def load(vectors: Path, rel: str) -> Doc:
    doc: Doc = json.loads((vectors / rel).read_text())
    return doc


def expected(vectors: Path, rel: str) -> dict[str, Any]:
    exp: dict[str, Any] = json.loads((vectors / "expected.json").read_text())[rel]["reference"]
    return exp


@pytest.mark.parametrize("rel", [SIGNED, SOURCE])
def test_reference_vectors_reproduce(vectors_dir: Path, rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc, ref = load(vectors_dir, rel), expected(vectors_dir, rel)
    assert graph_digest(doc) == ref["digest"]
    v = verify_graph(doc, registry=None, now=NOW)
    assert (v.status, v.trust) == (ref["status"], ref["trust"])
    assert lint_graph(doc, publish=True).ok
    res = run_acx(capsys, "graph", "verify", str(vectors_dir / rel))
    assert res.returncode == ref["exit"], res.stdout
    assert "architecture:" in res.stdout
    if "lint" in ref:
        lint = run_acx(capsys, "graph", "lint", str(vectors_dir / rel), "--publish")
        assert lint.returncode == 0 and ref["lint"] in lint.stdout
    dig = run_acx(capsys, "graph", "digest", str(vectors_dir / rel))
    assert dig.stdout.strip() == ref["digest"]


def test_sign_verify_digest_round_trip(vectors_dir: Path, tmp_path: Path) -> None:
    src = load(vectors_dir, SOURCE)
    key = generate_ed25519()
    signed = sign_graph(src, publisher_id="io.github.example", key=key, now=NOW)
    assert graph_digest(signed) == graph_digest(src) == expected(vectors_dir, SOURCE)["digest"]
    integ = signed["integrity"]
    assert integ["schemaVersion"] == "acx.agent-graph-signature/1"
    assert sorted(integ) == sorted(
        ["schemaVersion", "digest", "publisherId", "keyid", "publicKeyPem", "signedAt", "envelope"]
    )
    stmt = json.loads(b64decode_lenient(integ["envelope"]["payload"]))
    assert stmt["predicateType"] == GRAPH_PREDICATE_TYPE
    assert stmt["subject"][0]["name"] == "urn:acx:agent-graph:product-delivery@1.0.0"
    assert stmt["predicate"] == {
        "acxSchemaVersion": "acx.agent-graph/1",
        "agentGraphId": "product-delivery",
        "agentGraphVersion": "1.0.0",
        "publisherId": "io.github.example",
        "agentGraphDigest": integ["digest"],
        "signedAt": "2026-11-30T12:00:00.000Z",
        "actors": 3,
        "knowledgeModules": 5,
        "routes": 4,
        "loops": 2,
        "convergencePoints": 1,
    }
    v = verify_graph(signed, registry=None, now=NOW)
    assert (v.ok, v.status, v.trust, v.keyid) == (True, "verified", "portable", key.public().keyid())
    # key order and whitespace do not change the digest; the file form re-verifies
    text = json.dumps(dict(reversed(list(signed.items()))), indent=None)
    assert verify_graph(json.loads(text), registry=None, now=NOW).trust == "portable"
    # re-signing a signed graph replaces its integrity block
    again = sign_graph(signed, publisher_id="io.github.other", key=generate_ed25519(), now=NOW)
    assert verify_graph(again, registry=None, now=NOW).publisher_id == "io.github.other"


def test_cli_sign_then_verify(vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "k.pem"
    assert run_acx(capsys, "key", "generate", "-o", str(key)).returncode == 0
    src = tmp_path / "pd.agent-graph.json"
    src.write_text((vectors_dir / SOURCE).read_text())
    res = run_acx(
        capsys, "--json", "graph", "sign", str(src), "--publisher", "io.github.example", "--key", str(key)
    )
    assert res.returncode == 0, res.stdout + res.stderr
    out = Path(json.loads(res.stdout)["file"])
    assert out.name == "pd.signed.agent-graph.json"
    assert run_acx(capsys, "graph", "verify", str(out)).returncode == 0
    inspect = run_acx(capsys, "--json", "graph", "inspect", str(out))
    view = json.loads(inspect.stdout)
    assert view["verification"]["trust"] == "portable" and view["counts"]["routes"] == 4


def _mutate_signed(doc: Doc, fn: Callable[[Doc], None]) -> Doc:
    d = copy.deepcopy(doc)
    fn(d)
    return d


TAMPERS: list[tuple[str, Callable[[Doc], None], str]] = [
    (
        "content",
        lambda d: d["actors"][0].update(description="A different product owner seat."),
        "digest mismatch",
    ),
    ("publisher", lambda d: d["integrity"].update(publisherId="io.github.mallory"), "publisherId binding"),
    ("signedAt", lambda d: d["integrity"].update(signedAt="2026-01-01T00:00:00.000Z"), "signedAt binding"),
    ("extra field", lambda d: d["integrity"].update(note="x"), "exactly the acx.agent-graph-signature/1"),
    (
        "schema",
        lambda d: d["integrity"].update(schemaVersion="acx.workflow-signature/1"),
        "unexpected integrity",
    ),
    ("keyid", lambda d: d["integrity"].update(keyid="ed25519:" + "0" * 64), "keyid does not match"),
    (
        "two sigs",
        lambda d: d["integrity"]["envelope"]["signatures"].append({"keyid": "x", "sig": "y"}),
        "exactly one",
    ),
    ("profile", lambda d: d.pop("license"), "publication profile"),
]


@pytest.mark.parametrize(("what", "fn", "issue"), TAMPERS, ids=[t[0] for t in TAMPERS])
def test_tampered_signed_graph(vectors_dir: Path, what: str, fn: Callable[[Doc], None], issue: str) -> None:
    v = verify_graph(_mutate_signed(load(vectors_dir, SIGNED), fn), registry=None, now=NOW)
    assert (v.ok, v.status, v.trust) == (False, "invalid", "tampered")
    assert any(issue in i for i in v.issues), v.issues


def test_statement_count_binding(vectors_dir: Path) -> None:
    """A validly signed Statement whose counts disagree with the document is refused."""
    src = load(vectors_dir, SOURCE)
    key = generate_ed25519()
    signed = sign_graph(src, publisher_id="io.github.example", key=key, now=NOW)
    stmt = json.loads(b64decode_lenient(signed["integrity"]["envelope"]["payload"]))
    stmt["predicate"]["routes"] = 3
    env = dsse_sign("application/vnd.in-toto+json", jcs(stmt), key, key.public().keyid())
    signed["integrity"]["envelope"] = env.to_json()
    v = verify_graph(signed, registry=None, now=NOW)
    assert v.trust == "tampered" and any("routes binding mismatch" in i for i in v.issues), v.issues


def test_workflow_verifier_does_not_accept_a_graph(vectors_dir: Path) -> None:
    v = verify_workflow(load(vectors_dir, SIGNED), registry=None, now=NOW)
    assert v.trust == "tampered"


def test_sign_refuses_unpublishable_graph(vectors_dir: Path) -> None:
    src = load(vectors_dir, SOURCE)
    del src["loops"][0]["workflowRef"]["digest"]
    with pytest.raises(RefusedByPolicy) as exc:
        sign_graph(src, publisher_id="io.github.example", key=generate_ed25519(), now=NOW)
    assert exc.value.kind == "refused_by_policy"
    assert "workflowRef.digest" in str(exc.value)


def _edit(path: list[Any], value: Any) -> Callable[[Doc], None]:
    def f(d: Doc) -> None:
        node: Any = d
        for p in path[:-1]:
            node = node[p]
        if value is _DEL:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return f


_DEL = object()
LINTS: list[tuple[str, Callable[[Doc], None], str, str]] = [
    ("unknown top key", _edit(["content"], "x"), "unknown-property", "$.content"),
    (
        "knowledge content",
        _edit(["knowledge", 0, "content"], "the roadmap"),
        "unknown-property",
        "$.knowledge[0].content",
    ),
    (
        "duplicate actor",
        lambda d: d["actors"].append(copy.deepcopy(d["actors"][0])),
        "duplicate-id",
        "$.actors[3].id",
    ),
    (
        "unknown steward",
        _edit(["knowledge", 0, "stewards"], ["ghost"]),
        "unknown-reference",
        "$.knowledge[0].stewards[0]",
    ),
    ("self route", _edit(["routes", 0, "to"], ["product-owner"]), "self-route", "$.routes[0].to"),
    ("bad intent", _edit(["routes", 0, "intent"], "command"), "enum", "$.routes[0].intent"),
    ("returns without expects", _edit(["routes", 0, "expects"], _DEL), "expects", "$.routes[0].expects"),
    (
        "wrong return route",
        _edit(["routes", 0, "expects", "via"], "po-requests-research"),
        "return-route",
        "$.routes[0].expects.via",
    ),
    ("null value", _edit(["actors", 0, "name"], None), "null", "$.actors[0].name"),
    ("fanout", _edit(["limits", "maxFanout"], 0), "integer", "$.limits.maxFanout"),
    (
        "one loop converges",
        _edit(["convergence", 0, "inputs", 1, "loop"], "discovery-loop"),
        "convergence-inputs",
        "$.convergence[0].inputs",
    ),
    (
        "workflowRef on informal",
        _edit(["loops", 0, "kind"], "informal"),
        "workflow-ref",
        "$.loops[0].workflowRef",
    ),
    (
        "isolated knowledge",
        lambda d: d["knowledge"].append({**d["knowledge"][1], "id": "orphan"}),
        "isolated",
        "$.knowledge[5]",
    ),
    (
        "bad event",
        _edit(["routes", 0, "triggers", 0, "events"], ["WorkRequested"]),
        "event-name",
        "$.routes[0].triggers[0].events[0]",
    ),
    (
        "conflicting direction",
        lambda d: d["routes"].append(
            {
                **d["routes"][0],
                "id": "dev2",
                "from": "researchers",
                "returns": ["research-evidence"],
                "expects": {"via": "developers-report-po"},
            }
        ),
        "direction-conflict",
        "$.routes[4]",
    ),
]


@pytest.mark.parametrize(("what", "fn", "rule", "path"), LINTS, ids=[c[0] for c in LINTS])
def test_each_lint_rule(
    vectors_dir: Path, what: str, fn: Callable[[Doc], None], rule: str, path: str
) -> None:
    doc = load(vectors_dir, SOURCE)
    fn(doc)
    result = lint_graph(doc)
    assert not result.ok
    assert (rule, path) in {(i.rule, i.path) for i in result.issues}, [i.text() for i in result.issues]


def test_mandatory_direction_cycle(vectors_dir: Path) -> None:
    doc = load(vectors_dir, SOURCE)
    back = {**doc["routes"][0], "id": "dev-directs-po", "from": "developers", "to": ["product-owner"]}
    back.pop("returns")
    back.pop("expects")
    doc["routes"].append(back)
    rules = lint_graph(doc).rules()
    assert "direction-cycle" in rules


def test_publish_profile_secret(vectors_dir: Path) -> None:
    doc = load(vectors_dir, SOURCE)
    doc["actors"][0]["description"] = "token ghp_" + "a1B2" * 9
    assert "secret" in lint_graph(doc, publish=True).rules()
    doc = load(vectors_dir, SOURCE)
    doc["extensions"] = {"com.example.tool": {"apiKey": "x"}}
    assert "publish-extension-key" in lint_graph(doc, publish=True).rules()


# --- hostile graphs: typed, bounded, never exit 70 -------------------------------------------


def _graph_file(tmp: Path, doc: Any, name: str = "h.agent-graph.json") -> Path:
    p = tmp / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


def test_deep_nesting_is_a_lint_issue(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = load(vectors_dir, SOURCE)
    deep: Any = "x"
    for _ in range(200):
        deep = {"a": deep}
    doc["extensions"] = {"com.example": deep}
    res = run_acx(capsys, "--json", "graph", "lint", str(_graph_file(tmp_path, doc)), "--publish")
    assert res.returncode == 1
    assert {(i["rule"], i["severity"]) for i in json.loads(res.stdout)["issues"]} == {("too-deep", "error")}
    doc = load(vectors_dir, SOURCE)
    doc["actors"][0]["selector"] = deep
    for cmd in ("lint", "verify"):
        res = run_acx(
            capsys,
            "--json",
            "graph",
            cmd,
            str(_graph_file(tmp_path, doc)),
            "--publish" if cmd == "lint" else "--now=2026-11-30T00:00:00Z",
        )
        assert res.returncode == 1, res.stderr
        assert "too-deep" in res.stdout


def test_nesting_beyond_the_parser_is_invalid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = '{"schemaVersion":"acx.agent-graph/1","extensions":' + "[" * 100_000 + "]" * 100_000 + "}"
    for cmd in ("lint", "verify", "digest", "inspect"):
        res = run_acx(capsys, "graph", cmd, str(_graph_file(tmp_path, text)))
        assert res.returncode not in (0, 70), (cmd, res.returncode, res.stderr)


def test_not_a_graph_is_invalid_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for doc, word in (
        ({"hello": 1}, "none"),
        ({"schemaVersion": "acx.cal/1"}, "acx.cal/1"),
        ([1, 2], "list"),
    ):
        res = run_acx(capsys, "--json", "graph", "verify", str(_graph_file(tmp_path, doc)))
        assert res.returncode == 3, res.stderr
        err = json.loads(res.stdout or res.stderr)
        assert err["error"]["kind"] == "invalid_input" if "error" in err else err["kind"] == "invalid_input"
        assert word in (res.stdout + res.stderr)


def test_huge_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "big.agent-graph.json"
    p.write_bytes(b'{"schemaVersion":"acx.agent-graph/1","x":"' + b"a" * (5 * 1024 * 1024) + b'"}')
    res = run_acx(capsys, "graph", "lint", str(p))
    assert res.returncode == 3


def test_many_duplicates_and_dense_direction_are_bounded(vectors_dir: Path, tmp_path: Path) -> None:
    """4,000 duplicate actors and mandatory-direction routes with 1,000x1,000 fan-out: lint
    answers with issues in a subprocess within generous time and memory bounds."""
    doc = load(vectors_dir, SOURCE)
    doc["actors"] = [copy.deepcopy(doc["actors"][0]) for _ in range(4000)]
    ids = [f"k{i}" for i in range(1000)]
    doc["knowledge"] += [
        {"id": k, "kind": "status", "description": "x", "stewards": ["product-owner"]} for k in ids
    ]
    route = {**doc["routes"][0], "to": [f"a{i}" for i in range(1000)], "carries": ids}
    route.pop("returns")
    route.pop("expects")
    doc["routes"] = [dict(route, id=f"r{i}", **{"from": f"s{i}"}) for i in range(5)]
    path = _graph_file(tmp_path, doc)
    code = (
        "import json,sys,time;from pathlib import Path;"
        "from acxoci.workflow.graph import lint_graph;t=time.time();"
        f"r=lint_graph(json.loads(Path({str(path)!r}).read_text()));"
        "hwm=[l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1];"
        "print(json.dumps({'s':time.time()-t,'mb':int(hwm)/1024,"
        "'rules':sorted(r.rules())}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    res = json.loads(out.stdout)
    assert "duplicate-id" in res["rules"] and "too-large" in res["rules"], res["rules"]
    assert res["s"] < 20 and res["mb"] < 400, res


def test_workflow_commands_point_to_graph(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("verify", "lint", "digest"):
        res = run_acx(capsys, "workflow", cmd, str(vectors_dir / SIGNED))
        assert res.returncode == 3 and "Agent Graph" in res.stderr, (cmd, res.stderr)


def test_wide_and_deep_4mb_graph_is_cheap(tmp_path: Path) -> None:
    """A 3.8 MB graph of 60 nested lists around 1.9 million zeros: `too-large`, quickly, in a
    subprocess with a generous memory bound (the walk queues containers only)."""
    path = tmp_path / "wide.agent-graph.json"
    inner = "[" + ",".join(["0"] * 1_900_000) + "]"
    path.write_text(
        '{"schemaVersion":"acx.agent-graph/1","id":"x","actors":' + "[" * 60 + inner + "]" * 60 + "}"
    )
    code = (
        "import json,sys,time;from pathlib import Path;"
        "from acxoci.workflow.graph import lint_graph, load_graph;t=time.time();"
        f"r=lint_graph(load_graph(Path({str(path)!r})), publish=True);"
        "hwm=[l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1];"
        "print(json.dumps({'s':time.time()-t,'mb':int(hwm)/1024,"
        "'rules':sorted(r.rules())}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    res = json.loads(out.stdout)
    assert res["rules"] == ["too-large"], res
    assert res["s"] < 10 and res["mb"] < 300, res


def test_reference_cli_verifies_our_signed_graph(vectors_dir: Path, tmp_path: Path) -> None:
    """Opt-in cross-check with the Node reference (never vendored): set ACX_REF_NODE to a Node >= 22
    binary and ACX_REF_CLI to the reference's src/cli.mjs."""
    import os

    node, cli = os.environ.get("ACX_REF_NODE"), os.environ.get("ACX_REF_CLI")
    if not node or not cli:
        pytest.skip("set ACX_REF_NODE and ACX_REF_CLI to cross-check with the reference CLI")
    base = [node, "--no-warnings", "--experimental-sqlite", cli]
    example = Path(__file__).resolve().parents[2] / "examples" / "graph" / "review-team.agent-graph.json"
    for src in (vectors_dir / SOURCE, example):
        signed = sign_graph(
            json.loads(src.read_text()), publisher_id="io.github.example", key=generate_ed25519(), now=NOW
        )
        path = tmp_path / f"{src.stem}.signed.agent-graph.json"
        path.write_text(json.dumps(signed, indent=2))
        got = subprocess.run([*base, "graph", "verify", str(path)], capture_output=True, text=True)
        assert got.returncode == 0, got.stdout + got.stderr
        assert "verified" in got.stdout and "portable" in got.stdout and graph_digest(signed) in got.stdout
        lint = subprocess.run([*base, "graph", "lint", str(src), "--publish"], capture_output=True, text=True)
        assert lint.returncode == 0 and "VALID" in lint.stdout, lint.stdout


@pytest.mark.parametrize("ring", [True, False], ids=["ring", "chain"])
def test_long_mandatory_direction_cycles_are_found_iteratively(vectors_dir: Path, ring: bool) -> None:
    """4,000 actors in one chain (or ring) of mandatory direction: found without recursion."""
    n = 4000
    doc = load(vectors_dir, SOURCE)
    doc["actors"] = [{"id": f"a{i}", "kind": "agent", "description": "seat"} for i in range(n)]
    doc["knowledge"] = [{"id": "brief", "kind": "requirement", "description": "b", "stewards": ["a0"]}]
    base = {"intent": "direct", "obligation": "must", "purpose": "Pass the brief along the chain.",
            "carries": ["brief"], "triggers": [{"type": "manual"}]}  # fmt: skip
    last = n if ring else n - 1
    doc["routes"] = [{**base, "id": f"r{i}", "from": f"a{i}", "to": [f"a{(i + 1) % n}"]} for i in range(last)]
    doc.pop("loops")
    doc.pop("convergence")
    rules = lint_graph(doc).rules()
    assert ("direction-cycle" in rules) is ring, rules
