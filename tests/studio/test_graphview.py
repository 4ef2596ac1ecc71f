"""The one picture of a workflow or Agent Graph (Studio and catalog): what it draws (nodes, edges,
gateways, loops, routes), that every string in it is escaped into well-formed SVG whatever the
document holds, and that hostile sizes and depths stay bounded."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.studio.analysis import BadRequest, analyse
from acxoci.studio.graphview import MAX_EDGES, MAX_NODES, condition_text, render_svg, view_of
from acxoci.studio.html import esc

SVG = "{http://www.w3.org/2000/svg}"
DRAWN = {f"{SVG}{t}" for t in ("svg", "defs", "marker", "path", "g", "title", "rect", "polygon", "text")}


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    for el in root.iter():
        assert el.tag in DRAWN, el.tag
        assert not any(a.lower().startswith("on") or a in ("href", "style") for a in el.attrib), el.attrib
    return root


def test_a_workflow_draws_its_nodes_edges_gateways_and_loops(vectors_dir: Path) -> None:
    doc = json.loads((vectors_dir / "workflow" / "team.signed.cal.json").read_text())
    view = view_of(doc)
    assert [b.id for b in view.boxes] == [n["id"] for n in doc["nodes"]]
    kinds = {b.id: b.kind for b in view.boxes}
    assert kinds["gate"] == "gateway" and kinds["done"] == "event-end" and kinds["design"] == "task"
    assert next(b for b in view.boxes if b.id == "design").start
    arrows = {(a.src, a.dst): a for a in view.arrows}
    assert len(arrows) == len(doc["edges"])
    assert arrows[("gate", "build")].kind == "loop"  # back to an earlier step
    assert arrows[("gate", "done")].kind == "conditional"
    assert arrows[("gate", "done")].label == "review.outcome eq completed"
    assert arrows[("gate", "build")].label == "not review.outcome eq completed"
    root = parse(render_svg(view, title=doc["name"]))
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "label"]
    assert labels == [n["id"] for n in doc["nodes"]]


def test_an_agent_graph_draws_actors_loops_convergence_and_knowledge(vectors_dir: Path) -> None:
    doc = json.loads((vectors_dir / "graph" / "product-delivery.signed.agent-graph.json").read_text())
    view = view_of(doc)
    by_kind: dict[str, int] = {}
    for b in view.boxes:
        by_kind[b.kind] = by_kind.get(b.kind, 0) + 1
    assert by_kind == {"actor": len(doc["actors"]), "loop": len(doc["loops"]),
                       "convergence": len(doc["convergence"]), "knowledge": len(doc["knowledge"])}
    routes = [a for a in view.arrows if a.kind == "route"]
    assert len(routes) == sum(len(r["to"]) for r in doc["routes"])
    assert {a.kind for a in view.arrows} == {"route", "binding", "flow"}
    parse(render_svg(view, title=doc["name"]))


def hostile_doc() -> dict[str, Any]:
    evil = '</text><script>alert(1)</script>"\'&<img src=x onerror=alert(2)>\x01\x1b[31m\u202e\ufffe'
    return {
        "schemaVersion": "acx.cal/1", "id": evil, "name": evil, "start": evil,
        "nodes": [{"id": evil, "type": "task", "agent": evil, "action": evil},
                  {"id": "b" + evil, "type": evil, "gateway": evil, "event": evil}],
        "edges": [{"from": evil, "to": "b" + evil, "when": {"var": evil, "op": evil, "value": evil}},
                  {"from": "b" + evil, "to": evil, "when": {"any": [{"racAvailable": evil}, "x", 3]}}],
    }


def test_every_string_is_escaped_into_well_formed_svg() -> None:
    svg = render_svg(view_of(hostile_doc()), title=hostile_doc()["name"])
    root = parse(svg)  # well-formed XML: no control character or markup got through
    assert "<script" not in svg and "<img" not in svg and "\x1b" not in svg and "\u202e" not in svg
    texts = " ".join(t.text or "" for t in root.iter() if t.tag in (f"{SVG}text", f"{SVG}title"))
    assert "<script>" in texts and "\\u001b" in texts and "\\u202e" in texts  # shown, as text
    assert esc('<a href="x">&\x00') == "&lt;a href=&quot;x&quot;&gt;&amp;\\u0000"


def test_sizes_and_depths_are_bounded() -> None:
    n = 100_000
    doc = {"schemaVersion": "acx.cal/1", "id": "big", "start": "n0",
           "nodes": [{"id": f"n{i}", "type": "task"} for i in range(n)],
           "edges": [{"from": f"n{i}", "to": f"n{i + 1}"} for i in range(n - 1)]}
    t = time.monotonic()
    view = view_of(doc)
    svg = render_svg(view, title="big")
    assert time.monotonic() - t < 2.0
    assert len(view.boxes) == MAX_NODES and view.truncated and len(view.arrows) <= MAX_EDGES
    assert "only the first" in svg
    deep: Any = {"var": "x", "op": "eq", "value": 1}
    for _ in range(50_000):  # far deeper than any recursion limit
        deep = {"not": deep}
    text = condition_text(deep)
    assert len(text) < 200 and text.endswith("…")
    graph = {"schemaVersion": "acx.agent-graph/1", "actors": [{"id": f"a{i}"} for i in range(5000)],
             "routes": [{"from": "a0", "to": [f"a{i}" for i in range(5000)]}]}
    gv = view_of(graph)
    assert len(gv.boxes) == MAX_NODES and gv.truncated and len(gv.arrows) <= MAX_EDGES
    assert view_of([1, 2]).boxes == () and view_of({"nodes": "x", "edges": 7}).boxes == ()


def test_the_answer_carries_the_picture_and_never_fails_on_a_broken_document() -> None:
    now = datetime.now(UTC)
    for doc in (hostile_doc(), {"nodes": [1, None, {"id": 3}], "edges": [{"from": None}], "start": []}):
        answer = analyse(json.dumps(doc).encode(), publish=True, relation="remix", now=now)
        assert answer["lint"]["ok"] is False and "error" in answer["remix"]
        parse(answer["graph"]["svg"])
    for body in (b'{"x": 1152921504606846976}', b"[]", b'"x"', b"{" * 100_000):
        with pytest.raises(BadRequest):
            analyse(body, publish=False, relation=None, now=now)
