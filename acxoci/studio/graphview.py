"""The picture of a workflow (`acx.cal/1`) or an Agent Graph (`acx.agent-graph/1`): which boxes,
which arrows, where. One layout and one SVG drawing, used by the Studio (through `POST /api/lint`)
and by the static catalog, so both pages show a document the same way.

Pure and bounded: it reads the raw document tolerantly (a broken document still draws what is
well-formed), draws at most MAX_NODES boxes and MAX_EDGES arrows, walks iteratively, and every
string it puts in the SVG goes through `html.esc`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from acxoci.studio.html import clip, esc

MAX_NODES = 300
MAX_EDGES = 1200
NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 180, 56, 110, 28, 24
LEFT = 90  # room left of the first column for arcs between boxes of one column
LABEL_CHARS, SUB_CHARS, EDGE_CHARS = 24, 28, 20
GRAPH_SCHEMA = "acx.agent-graph/1"


@dataclass(frozen=True)
class Box:
    """One node: its id, what it is (`kind` is also its CSS class), two text lines and its place."""

    id: str
    kind: str
    label: str
    sub: str
    col: int
    row: int
    start: bool = False

    @property
    def x(self) -> int:
        return LEFT + self.col * (NODE_W + GAP_X)

    @property
    def y(self) -> int:
        return PAD + self.row * (NODE_H + GAP_Y)


@dataclass(frozen=True)
class Arrow:
    """One edge between two drawn boxes; `kind` is its CSS class, `label` its condition or intent."""

    src: str
    dst: str
    kind: str
    label: str = ""


@dataclass(frozen=True)
class GraphView:
    """What to draw, and whether the document held more than is drawn."""

    boxes: tuple[Box, ...]
    arrows: tuple[Arrow, ...]
    truncated: bool = False

    @property
    def width(self) -> int:
        cols = max((b.col for b in self.boxes), default=0) + 1
        return LEFT + PAD + cols * NODE_W + (cols - 1) * GAP_X

    @property
    def height(self) -> int:
        rows = max((b.row for b in self.boxes), default=0) + 1
        return 2 * PAD + rows * NODE_H + (rows - 1) * GAP_Y + 40

    def summary(self) -> dict[str, Any]:
        """Counts for the API answer."""
        return {"nodes": len(self.boxes), "edges": len(self.arrows), "truncated": self.truncated}


def _records(value: Any, key: str = "id") -> Iterator[Mapping[str, Any]]:
    """The objects of an array that carry a string `key` (anything else is skipped)."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping) and isinstance(item.get(key), str):
                yield item


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    """The strings of an array (bounded by MAX_EDGES), or none."""
    return [v for v in value[:MAX_EDGES] if isinstance(v, str)] if isinstance(value, list) else []


def condition_text(when: Any, budget: int = 12) -> str:
    """A short reading of an edge condition (`var op value`, `not`, `all`, `any`, `racAvailable`):
    at most `budget` parts, built without recursion."""
    out: list[str] = []
    stack: list[Any] = [when]
    while stack and len(out) < budget:
        item = stack.pop()
        if isinstance(item, str):  # a joiner pushed below
            out.append(item)
        elif not isinstance(item, Mapping):
            out.append("?")
        elif "var" in item:
            value = item.get("value")
            shown = value if isinstance(value, str) else repr(value) if value is not None else ""
            out.append(f"{_text(item.get('var'))} {_text(item.get('op'))} {shown}".strip())
        elif "racAvailable" in item:
            out.append(f"rac {_text(item.get('racAvailable'))}")
        elif "not" in item:
            out.append("not")
            stack.append(item.get("not"))
        elif isinstance(item.get("all"), list) or isinstance(item.get("any"), list):
            word = " and " if isinstance(item.get("all"), list) else " or "
            parts = item.get("all") if isinstance(item.get("all"), list) else item.get("any")
            assert isinstance(parts, list)
            seq: list[Any] = []
            for i, p in enumerate(parts[:budget]):
                if i:
                    seq.append(word)
                seq.append(p)
            stack.extend(reversed(seq))
        else:
            out.append("?")
    text = " ".join(s.strip() for s in out if s.strip())
    return text + (" …" if stack else "")


def _workflow(doc: Mapping[str, Any]) -> GraphView:
    nodes: dict[str, Mapping[str, Any]] = {}
    truncated = False
    for n in _records(doc.get("nodes")):
        if len(nodes) >= MAX_NODES:
            truncated = True
            break
        nodes.setdefault(n["id"], n)
    arrows: list[Arrow] = []
    out: dict[str, list[str]] = {k: [] for k in nodes}
    for e in _records(doc.get("edges"), "from"):
        src, dst = e.get("from"), e.get("to")
        if not (isinstance(dst, str) and src in nodes and dst in nodes):
            continue
        if len(arrows) >= MAX_EDGES:
            truncated = True
            break
        cond = "when" in e
        arrows.append(Arrow(str(src), dst, "conditional" if cond else "flow",
                            condition_text(e.get("when")) if cond else ""))
        out[str(src)].append(dst)
    start = doc.get("start")
    layer: dict[str, int] = {}
    roots = ([start] if isinstance(start, str) and start in nodes else []) + list(nodes)
    for root in roots:  # breadth-first from the start, then from whatever it does not reach
        if root in layer:
            continue
        base = max(layer.values(), default=-1) + 1 if layer else 0
        layer[root] = base
        queue = deque([root])
        while queue:
            cur = queue.popleft()
            for nxt in out[cur]:
                if nxt not in layer:
                    layer[nxt] = layer[cur] + 1
                    queue.append(nxt)
    rows: dict[int, int] = {}
    boxes: list[Box] = []
    for nid, n in nodes.items():
        col = layer[nid]
        row = rows.get(col, 0)
        rows[col] = row + 1
        kind = _text(n.get("type")) or "node"
        if kind == "task":
            sub = " · ".join(s for s in (_text(n.get("agent")), _text(n.get("action"))) if s)
        elif kind == "gateway":
            sub = _text(n.get("gateway")) or "gateway"
        elif kind == "event":
            sub = _text(n.get("event")) or "event"
            kind = f"event-{sub}" if sub in ("start", "end", "stop") else "event"
        else:
            sub = kind
            kind = "node"
        boxes.append(Box(nid, kind if kind in _KINDS else "node", nid, sub, col, row, nid == start))
    # an arrow back to an earlier (or the same) column closes a loop
    marked = tuple(
        Arrow(a.src, a.dst, "loop", a.label) if layer[a.dst] <= layer[a.src] else a for a in arrows
    )
    return GraphView(tuple(boxes), marked, truncated)


def _graph(doc: Mapping[str, Any]) -> GraphView:
    """Agent Graph: actors, loops, convergence points and knowledge modules in four columns;
    routes between actors, bindings of actors to loops, loops feeding convergence points, and
    what loops and convergence points export to knowledge."""
    boxes: dict[str, Box] = {}
    truncated = False
    columns = (("actors", "actor", 0), ("loops", "loop", 1), ("convergence", "convergence", 2),
               ("knowledge", "knowledge", 3))
    for key, kind, col in columns:
        row = 0
        for item in _records(doc.get(key)):
            bid = f"{kind}:{item['id']}"
            if bid in boxes:
                continue
            if len(boxes) >= MAX_NODES:
                truncated = True
                break
            if kind == "actor":
                sub = _text(item.get("kind")) or "actor"
                label = _text(item.get("name")) or item["id"]
            elif kind == "loop":
                ref = item.get("workflowRef")
                sub = (f"{_text(ref.get('id'))}@{_text(ref.get('version'))}" if isinstance(ref, Mapping)
                       else _text(item.get("kind")) or "loop")
                label = item["id"]
            elif kind == "convergence":
                sub = f"steward {_text(item.get('steward'))}"
                label = item["id"]
            else:
                sub = _text(item.get("kind")) or "knowledge"
                label = _text(item.get("name")) or item["id"]
            boxes[bid] = Box(bid, kind, label, sub, col, row)
            row += 1
    arrows: list[Arrow] = []

    def add(src: str, dst: str, kind: str, label: str) -> None:
        nonlocal truncated
        if src in boxes and dst in boxes:
            if len(arrows) >= MAX_EDGES:
                truncated = True
            else:
                arrows.append(Arrow(src, dst, kind, label))

    for r in _records(doc.get("routes")):
        label = " ".join(s for s in (_text(r.get("intent")), _text(r.get("obligation"))) if s)
        for t in _strings(r.get("to")):
            add(f"actor:{_text(r.get('from'))}", f"actor:{t}", "route", label)
    for lp in _records(doc.get("loops")):
        for b in _records(lp.get("actorBindings"), "actor"):
            add(f"actor:{b['actor']}", f"loop:{lp['id']}", "binding", "runs")
        for k in _strings(lp.get("exports")):
            add(f"loop:{lp['id']}", f"knowledge:{k}", "flow", "exports")
    for c in _records(doc.get("convergence")):
        for inp in _records(c.get("inputs"), "loop"):
            add(f"loop:{inp['loop']}", f"convergence:{c['id']}", "flow", "feeds")
        for k in _strings(c.get("outputs")):
            add(f"convergence:{c['id']}", f"knowledge:{k}", "flow", "outputs")
    return GraphView(tuple(boxes.values()), tuple(arrows), truncated)


_KINDS = frozenset({"task", "gateway", "event", "event-start", "event-end", "event-stop", "node"})


def view_of(doc: Any) -> GraphView:
    """The picture of a raw workflow or Agent Graph (empty for anything that is not an object)."""
    if not isinstance(doc, Mapping):
        return GraphView((), ())
    return _graph(doc) if doc.get("schemaVersion") == GRAPH_SCHEMA else _workflow(doc)


# ---- drawing -----------------------------------------------------------------------------------


def _shape(b: Box) -> str:
    x, y, w, h = b.x, b.y, NODE_W, NODE_H
    if b.kind in ("gateway", "convergence"):
        cx, cy = x + w // 2, y + h // 2
        return (f'<polygon class="shape" points="{x},{cy} {cx},{y - 6} {x + w},{cy} {cx},{y + h + 6}"/>')
    radius = h // 2 if b.kind.startswith("event") else 8
    return f'<rect class="shape" x="{x}" y="{y}" width="{w}" height="{h}" rx="{radius}"/>'


def _path(a: Arrow, boxes: Mapping[str, Box]) -> tuple[str, int, int]:
    """The SVG path of an arrow and where its label goes."""
    s, d = boxes[a.src], boxes[a.dst]
    if d.col > s.col:  # forward: right side to left side
        x1, y1, x2, y2 = s.x + NODE_W, s.y + NODE_H // 2, d.x, d.y + NODE_H // 2
        mx = (x1 + x2) // 2
        return f"M{x1},{y1} C{mx},{y1} {mx},{y2} {x2},{y2}", mx, (y1 + y2) // 2 - 4
    if d.col == s.col and d.row != s.row:  # same column: an arc on the left (its label only in the tip)
        x1, y1 = s.x, s.y + NODE_H // 2 + (6 if d.row > s.row else -6)
        x2, y2 = d.x, d.y + NODE_H // 2 + (-6 if d.row > s.row else 6)
        bulge = max(x1 - 30 - 12 * abs(d.row - s.row), 4)
        return f"M{x1},{y1} C{bulge},{y1} {bulge},{y2} {x2},{y2}", -1, -1
    # back (or to itself): leave at the bottom, come back in at the bottom
    x1, y1 = s.x + NODE_W // 2 + 10, s.y + NODE_H
    x2, y2 = d.x + NODE_W // 2 - 10, d.y + NODE_H
    low = max(y1, y2) + 34
    return f"M{x1},{y1} C{x1},{low} {x2},{low} {x2},{y2}", (x1 + x2) // 2, low - 4


def render_svg(view: GraphView, *, title: str) -> str:
    """The view as one standalone SVG element (every text escaped); a note when it is truncated
    or empty."""
    boxes = {b.id: b for b in view.boxes}
    w, h = view.width, view.height
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="acx-graph" viewBox="0 0 {w} {h}" '
        f'width="{w}" height="{h}" role="img" aria-label="{esc(clip(title, 200))}">',
        "<defs><marker id=\"arrowhead\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"8\" "
        "markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\"/></marker></defs>",
        '<g class="edges">',
    ]
    for a in view.arrows:
        d, lx, ly = _path(a, boxes)
        tip = f"{a.src} → {a.dst}" + (f": {a.label}" if a.label else "")
        parts.append(f'<g class="edge edge-{a.kind}"><title>{esc(clip(tip, 300))}</title>'
                     f'<path d="{d}" marker-end="url(#arrowhead)"/>')
        if a.label and lx >= 0:
            parts.append(f'<text class="edge-label" x="{lx}" y="{ly}" text-anchor="middle">'
                         f"{esc(clip(a.label, EDGE_CHARS))}</text>")
        parts.append("</g>")
    parts.append('</g><g class="nodes">')
    for b in view.boxes:
        cls = f"node node-{b.kind}" + (" node-start" if b.start else "")
        tip = f"{b.label} ({b.sub})" if b.sub else b.label
        parts.append(
            f'<g class="{cls}" data-id="{esc(b.id)}"><title>{esc(clip(tip, 300))}</title>{_shape(b)}'
            f'<text class="label" x="{b.x + NODE_W // 2}" y="{b.y + 23}" text-anchor="middle">'
            f"{esc(clip(b.label, LABEL_CHARS))}</text>"
            f'<text class="sub" x="{b.x + NODE_W // 2}" y="{b.y + 42}" text-anchor="middle">'
            f"{esc(clip(b.sub, SUB_CHARS))}</text></g>"
        )
    parts.append("</g>")
    if view.truncated or not view.boxes:
        note = (f"only the first {MAX_NODES} nodes and {MAX_EDGES} edges are drawn" if view.truncated
                else "nothing to draw yet")
        parts.append(f'<text class="note" x="{PAD}" y="{h - 12}">{esc(note)}</text>')
    parts.append("</svg>")
    return "".join(parts)
