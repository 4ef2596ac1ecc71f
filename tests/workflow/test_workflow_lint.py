"""Lint rules one by one (structural, graph, lineage, publish profile, secret scrub)."""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acxoci.workflow.lint import lint, scrub
from tests.harness.workflows import team

Doc = dict[str, Any]


def _node(doc: Doc, nid: str) -> Doc:
    return next(n for n in doc["nodes"] if n["id"] == nid)


def _edit(fn: Callable[[Doc], None]) -> Callable[[Doc], Doc]:
    def apply(doc: Doc) -> Doc:
        out = copy.deepcopy(doc)
        fn(out)
        return out

    return apply


CASES: list[tuple[str, Callable[[Doc], None]]] = [
    ("unknown-property", lambda d: d.__setitem__("owner", "x")),
    ("schema-version", lambda d: d.__setitem__("schemaVersion", "acx.cal/2")),
    ("workflow-id", lambda d: d.__setitem__("id", "Vector Team")),
    ("extension-namespace", lambda d: d.__setitem__("extensions", {"myext": {}})),
    ("participants", lambda d: d.__setitem__("participants", {})),
    ("nodes", lambda d: d.__setitem__("nodes", [])),
    ("edges", lambda d: d.__setitem__("edges", None)),
    ("duplicate-alias", lambda d: d["participants"].append(copy.deepcopy(d["participants"][0]))),
    ("duplicate-rac", lambda d: d["rac"].append(copy.deepcopy(d["rac"][0]))),
    ("duplicate-variable", lambda d: d["variables"].append({"name": "review", "type": "string"})),
    ("duplicate-node", lambda d: d["nodes"].append({"id": "gate", "type": "gateway", "gateway": "parallel"})),
    ("duplicate-edge", lambda d: d["edges"].append(copy.deepcopy(d["edges"][0]))),
    ("start", lambda d: d.__setitem__("start", "nowhere")),
    ("participant-hash", lambda d: d["participants"][0].update(bind="hash")),
    ("participant-slot", lambda d: d["participants"][0].update(romDigest="sha256:" + "0" * 64)),
    ("participant-bind", lambda d: d["participants"][0].update(bind="name")),
    ("slot-empty", lambda d: d["participants"][0].update(slot={})),
    ("min-level", lambda d: d["participants"][1]["slot"].update(minLevel={})),
    ("min-level", lambda d: d["participants"][1]["slot"].update(minLevel={"acxLevel": -1})),
    ("career-tier", lambda d: d["participants"][1]["slot"].update(minLevel={"careerTier": "wizard"})),
    ("slot-capability", lambda d: d["participants"][0]["slot"].update(capabilities=[{"stack": []}])),
    ("rac-kind", lambda d: d["rac"][0].update(kind="novel")),
    ("rac-description", lambda d: d["rac"][0].update(description="")),
    ("rac-description", lambda d: d["rac"][0].update(description="x" * 2001)),
    ("rac-content", lambda d: d["rac"][1].update(content="the wiki text")),
    ("rac-check", lambda d: d["rac"][0]["check"].update(type="ftp")),
    ("variable-type", lambda d: d["variables"][0].update(type="date")),
    ("limits", lambda d: d["limits"].update(maxDurationMs=0)),
    ("unknown-agent", lambda d: _node(d, "build").update(agent="ghost")),
    ("unknown-rac", lambda d: _node(d, "build")["requires"]["rac"].append("nope")),
    ("completion-missing", lambda d: _node(d, "build").pop("completion")),
    ("completion-type", lambda d: _node(d, "build").update(completion={"type": "vibes"})),
    ("string-array", lambda d: _node(d, "build")["completion"].update(commands=[])),
    ("completion-field", lambda d: _node(d, "build")["completion"].pop("passIntent")),
    ("completion-field", lambda d: _node(d, "review").update(completion={"type": "guardrail"})),
    ("completion-field", lambda d: _node(d, "design").update(completion={"type": "artifact"})),
    ("completion-field", lambda d: _node(d, "design").update(completion={"type": "skill-scripts"})),
    ("task-side-effects", lambda d: _node(d, "build").update(sideEffects="everything")),
    ("task-approval", lambda d: _node(d, "build").update(approval="sometimes")),
    ("string-array", lambda d: _node(d, "build")["requires"].update(capabilities=["x", "x"])),
    ("string-array", lambda d: _node(d, "build")["requires"].update(skills=[""])),
    ("gateway-kind", lambda d: _node(d, "gate").update(gateway="complex")),
    ("event-kind", lambda d: _node(d, "done").update(event="finish")),
    ("timer-after", lambda d: d["nodes"].insert(4, {"id": "wait", "type": "event", "event": "timer"})),
    ("node-type", lambda d: _node(d, "gate").update(type="subprocess")),
    (
        "edge-unknown-node",
        lambda d: d["edges"].append({"from": "gate", "to": "elsewhere", "when": {"always": True}}),
    ),
    ("condition-var", lambda d: d["edges"][3].update(when={"var": "outcome", "op": "eq", "value": 1})),
    ("condition-shape", lambda d: d["edges"][3].update(when={"expr": "review.outcome == 'ok'"})),
    (
        "start-event",
        lambda d: d["nodes"].extend(
            [{"id": "s1", "type": "event", "event": "start"}, {"id": "s2", "type": "event", "event": "start"}]
        ),
    ),
    (
        "start-event",
        lambda d: (
            d["nodes"].insert(0, {"id": "s1", "type": "event", "event": "start"}),
            d["edges"].append({"from": "s1", "to": "design"}),
        ),
    ),
    ("no-terminal", lambda d: _node(d, "done").update(event="handoff")),
    ("unreachable", lambda d: d["nodes"].append({"id": "orphan", "type": "event", "event": "end"})),
    (
        "no-path-to-end",
        lambda d: (
            d["nodes"].append({"id": "loop", "type": "gateway", "gateway": "exclusive"}),
            d["edges"].extend(
                [{"from": "gate", "to": "loop", "when": {"always": True}}, {"from": "loop", "to": "loop"}]
            ),
        ),
    ),
    ("terminal-outgoing", lambda d: d["edges"].append({"from": "done", "to": "design"})),
    ("dead-end", lambda d: d["edges"].pop(1)),
    ("unconditional-branch", lambda d: d["edges"].append({"from": "design", "to": "review"})),
    ("cycle-needs-max-steps", lambda d: d["limits"].pop("maxSteps")),
    ("lineage-parents", lambda d: d.__setitem__("lineage", {"parents": []})),
    ("lineage-parent", lambda d: d.__setitem__("lineage", {"parents": [{"artifactType": "workflow"}]})),
    (
        "lineage-source",
        lambda d: d.__setitem__(
            "lineage",
            {
                "parents": [
                    {
                        "artifactType": "workflow",
                        "publisherId": "io.github.x",
                        "id": "w",
                        "digest": "sha256:" + "1" * 64,
                        "relation": "fork",
                        "source": "https://user:pw@example.com/x",
                    }
                ]
            },
        ),
    ),
    (
        "lineage-duplicate",
        lambda d: d.__setitem__(
            "lineage",
            {
                "parents": [
                    {
                        "artifactType": "agent",
                        "publisherId": "io.github.x",
                        "id": "a",
                        "digest": "sha256:" + "1" * 64,
                        "relation": "derived-from",
                    }
                ]
                * 2
            },
        ),
    ),
]


@pytest.mark.parametrize(("rule", "fn"), CASES, ids=[f"{i}-{r}" for i, (r, _) in enumerate(CASES)])
def test_each_rule_is_caught(vectors_dir: Path, rule: str, fn: Callable[[Doc], None]) -> None:
    base = team(vectors_dir)
    assert lint(base).ok
    result = lint(_edit(fn)(base))
    assert not result.ok
    assert rule in result.rules(), [i.text() for i in result.issues]
    for issue in result.issues:
        assert issue.path.startswith("$")
        assert issue.rule in issue.text() and issue.path in issue.text()


def test_messages_name_rule_path_and_value(vectors_dir: Path) -> None:
    doc = team(vectors_dir)
    _node(doc, "build")["agent"] = "ghost"
    [issue] = lint(doc).issues
    assert issue.rule == "unknown-agent"
    assert issue.path == "$.nodes[1].agent"
    assert issue.value == "ghost"
    assert issue.text().startswith("[unknown-agent] $.nodes[1].agent: ") and '"ghost"' in issue.text()


def test_handoff_is_not_terminal_and_gateways_may_branch_unconditionally(vectors_dir: Path) -> None:
    doc = team(vectors_dir)
    doc["nodes"].append({"id": "split", "type": "gateway", "gateway": "parallel"})
    doc["edges"][0] = {"from": "design", "to": "split"}
    doc["edges"].extend([{"from": "split", "to": "build"}, {"from": "split", "to": "review"}])
    assert lint(doc).ok, [i.text() for i in lint(doc).issues]
    doc2 = team(vectors_dir)
    doc2["nodes"].append({"id": "pass", "type": "event", "event": "handoff"})
    doc2["edges"].append({"from": "gate", "to": "pass", "when": {"racAvailable": "code-wiki"}})
    assert "dead-end" in lint(doc2).rules()


PUBLISH_CASES: list[tuple[str, Callable[[Doc], None]]] = [
    ("publish-version", lambda d: d.__setitem__("version", "1.2")),
    ("publish-name", lambda d: d.__setitem__("name", "ab")),
    ("publish-description", lambda d: d.__setitem__("description", "   short text         ")),
    ("publish-license", lambda d: d.__setitem__("license", "Apache-2.0 AND")),
    ("publish-license", lambda d: d.__setitem__("license", "WITH Classpath-exception-2.0")),
    ("publish-license", lambda d: d.__setitem__("license", "(MIT OR Apache-2.0")),
    ("publish-homepage", lambda d: d.__setitem__("homepage", "example.com/page")),
    ("publish-tags", lambda d: d.__setitem__("tags", [])),
    ("publish-tags", lambda d: d.__setitem__("tags", ["Coding"])),
    ("publish-tags", lambda d: d.__setitem__("tags", ["a", "a"])),
    ("publish-authors", lambda d: d.__setitem__("authors", [])),
    ("publish-authors", lambda d: d.__setitem__("authors", [{"name": "x", "url": "not a uri"}])),
    ("publish-extension-key", lambda d: d.__setitem__("extensions", {"com.example": {"apiKey": "x"}})),
    ("secret", lambda d: _node(d, "build").update(action="use AKIAIOSFODNN7EXAMPLE to deploy")),
    (
        "secret",
        lambda d: d.__setitem__("extensions", {"com.example": {"note": "-----BEGIN " + "PRIVATE KEY-----"}}),
    ),
    ("secret", lambda d: _node(d, "build").update(action="token ghp_" + "a1B2c3D4e5" * 4)),
    ("secret", lambda d: d["rac"][0]["check"].update(hint="postgres://admin:hunter22@db.internal/app")),
    ("secret", lambda d: _node(d, "build").update(action="run with password=s3cr3tvalue")),
    (
        "secret",
        lambda d: _node(d, "build").update(action="key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c"),
    ),
    ("secret", lambda d: _node(d, "build").update(action="use kQ7vX2pL9mZ4wR8tY1nB6cJ3hF5gD0sA")),
    ("home-path", lambda d: d["rac"][0]["check"].update(hint="/home/alice/infra/*.tf")),
]


@pytest.mark.parametrize(
    ("rule", "fn"), PUBLISH_CASES, ids=[f"{i}-{r}" for i, (r, _) in enumerate(PUBLISH_CASES)]
)
def test_publish_profile_rules(vectors_dir: Path, rule: str, fn: Callable[[Doc], None]) -> None:
    base = team(vectors_dir)
    assert lint(base, publish=True).ok
    edited = _edit(fn)(base)
    assert rule not in lint(edited).rules()  # only the publish profile catches it
    result = lint(edited, publish=True)
    assert rule in result.rules(), [i.text() for i in result.issues]


@pytest.mark.parametrize(
    "license_expr",
    [
        "MIT",
        "Apache-2.0 OR MIT",
        "(MIT OR Apache-2.0) AND BSD-3-Clause",
        "GPL-2.0-or-later WITH Classpath-exception-2.0",
        "LicenseRef-acme-1",
    ],
)
def test_valid_spdx_expressions(vectors_dir: Path, license_expr: str) -> None:
    doc = team(vectors_dir)
    doc["license"] = license_expr
    assert lint(doc, publish=True).ok


def test_scrub_does_not_flag_legitimate_digests(vectors_dir: Path) -> None:
    doc = team(vectors_dir)
    digest = "sha256:" + "9c01754563172d977ca88aadae11cfbfe10d8bfb3fb3076f44e18c3634b896bd"
    doc["participants"][0] = {
        "alias": "architect",
        "bind": "hash",
        "romDigest": digest,
        "cartridgeId": "io.github.ridgeworks/ada-ridge@a70348bd-e7fc-4b58-860f-ccc91a95b92a",
    }
    doc["extensions"] = {"org.example.pins": {"golden": digest, "signer": "ed25519:" + "ab12" * 16}}
    _node(doc, "build")["action"] = f"Rebuild from {digest} and compare"
    doc["lineage"] = {
        "parents": [
            {
                "artifactType": "workflow",
                "publisherId": "io.github.x",
                "id": "w",
                "version": "1.0.0",
                "digest": digest,
                "relation": "remix",
            }
        ]
    }
    assert scrub(doc) == []
    assert lint(doc, publish=True).ok, [i.text() for i in lint(doc, publish=True).issues]
    # but a bare 64-hex string is still a high-entropy secret
    doc["extensions"]["org.example.pins"]["golden"] = digest.removeprefix("sha256:")
    assert [i.rule for i in scrub(doc)] == ["secret"]


def test_scrub_ignores_integrity_block(vectors_dir: Path) -> None:
    signed = __import__("json").loads((vectors_dir / "workflow" / "team.signed.cal.json").read_text())
    assert scrub(signed) == []


def _chain(n: int, *, cyclic: bool = False) -> Doc:
    nodes: list[Doc] = [{"id": "s", "type": "event", "event": "start"}]
    nodes += [
        {"id": f"t{i}", "type": "task", "agent": "a", "completion": {"type": "artifact", "produces": "x"}}
        for i in range(n)
    ]
    nodes.append({"id": "e", "type": "event", "event": "end"})
    ids = [x["id"] for x in nodes]
    edges: list[Doc] = [{"from": a, "to": b} for a, b in itertools.pairwise(ids)]
    if cyclic:
        edges[-1] = {"from": ids[-2], "to": "e", "when": {"var": "v", "op": "eq", "value": 1}}
        edges.append({"from": ids[-2], "to": "t0", "when": {"var": "v", "op": "ne", "value": 1}})
    return {
        "schemaVersion": "acx.cal/1",
        "id": "chain",
        "start": "s",
        "variables": [{"name": "v", "type": "number"}],
        "participants": [{"alias": "a", "bind": "slot", "slot": {"role": "r"}}],
        "nodes": nodes,
        "edges": edges,
    }


def test_long_chains_lint_without_recursion_and_in_linear_time() -> None:
    small, big = _chain(20_000, cyclic=True), _chain(80_000, cyclic=True)
    assert lint(small).rules() == {"cycle-needs-max-steps"}
    t0 = time.process_time()
    lint(small)
    t1 = time.process_time()
    result = lint(big)
    t2 = time.process_time()
    assert result.rules() == {"cycle-needs-max-steps"}
    assert (t2 - t1) < 8 * (t1 - t0) + 0.2  # 4x the nodes: linear, not quadratic
    big["limits"] = {"maxSteps": 1_000_000}
    assert lint(big).ok
