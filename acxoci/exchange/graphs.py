"""The Exchange's one seam to Agent Graphs (`graphs/<publisher>/<id>/<version>.agent-graph.json`).

Graph verification belongs to the graph module (`acxoci.workflow.graph`, issue 18). While it is
not in the tree `graph_support()` returns None and the exchange refuses a folder with graphs
(GraphSupportPending) unless told to leave them out; once it is, graphs are verified through it and
carded, with their loop dependencies resolved against the indexed workflows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acxoci.exchange.coordinates import folder_path

if TYPE_CHECKING:
    from acxoci.exchange.index import Rejected, Release
    from acxoci.exchange.status import Ledger


@dataclass(frozen=True)
class GraphVerdict:
    """What the index needs from a graph verification."""

    ok: bool
    signed: bool
    digest: str
    publisher_id: str | None
    trust: str
    status: str
    issues: tuple[str, ...] = ()
    signed_at: str | None = None


@dataclass(frozen=True)
class GraphSupport:
    """A graph verifier and its publication profile (issues that make a graph unpublishable)."""

    verify: Callable[[dict[str, Any], Any, datetime], GraphVerdict]
    publish_issues: Callable[[dict[str, Any]], list[str]]


def graph_support() -> GraphSupport | None:
    """The graph module's verifier and publication profile (`acxoci.workflow.graph`, issue 18), or
    None while that module is not in this tree (graph support pending)."""
    import importlib

    try:
        graph_module = importlib.import_module("acxoci.workflow.graph")
    except ImportError:
        return None
    verify_graph = getattr(graph_module, "verify_graph", None)
    lint_graph = getattr(graph_module, "lint_graph", None)
    if verify_graph is None or lint_graph is None:
        return None

    def verify(doc: dict[str, Any], registry: Any, now: datetime) -> GraphVerdict:
        v = verify_graph(doc, registry=registry, now=now)
        return GraphVerdict(
            bool(v.ok),
            bool(v.signed),
            str(v.digest),
            v.publisher_id,
            str(v.trust),
            str(v.status),
            tuple(str(i) for i in v.issues),
            v.signed_at,
        )

    def publish_issues(doc: dict[str, Any]) -> list[str]:
        return [i.text() for i in lint_graph(doc, publish=True).errors]

    return GraphSupport(verify, publish_issues)


def _records(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def graph_card(doc: dict[str, Any], v: GraphVerdict) -> dict[str, Any]:
    """The index fields of one graph (reference order), from the document and its verdict."""
    routes = _records(doc.get("routes"))
    lin = doc.get("lineage")
    parents = _records(lin.get("parents")) if isinstance(lin, dict) else []

    def count(key: str) -> int:
        value = doc.get(key)
        return len(value) if isinstance(value, list) else 0

    return {
        "id": doc.get("id"),
        "version": doc.get("version"),
        "name": doc.get("name") or doc.get("id"),
        "description": doc.get("description") or "",
        "license": doc.get("license") or None,
        "tags": doc.get("tags") if isinstance(doc.get("tags"), list) else [],
        "publisher": v.publisher_id,
        "trust": v.trust,
        "trustStatus": v.status,
        "digest": v.digest,
        "actorCount": count("actors"),
        "knowledgeCount": count("knowledge"),
        "routeCount": count("routes"),
        "loopCount": count("loops"),
        "convergenceCount": count("convergence"),
        "intents": sorted(
            {
                r.get("intent")
                for r in routes
                if isinstance(r, dict) and isinstance(r.get("intent"), str) and r.get("intent")
            }
        ),
        "actors": [
            {"id": a.get("id"), "name": a.get("name") or a.get("id"), "kind": a.get("kind")}
            for a in _records(doc.get("actors"))
        ],
        "knowledge": [
            {
                "id": k.get("id"),
                "name": k.get("name") or k.get("id"),
                "kind": k.get("kind"),
                "stewards": k.get("stewards") or [],
            }
            for k in _records(doc.get("knowledge"))
        ],
        "loops": [
            {
                "id": lp.get("id"),
                "kind": lp.get("kind"),
                **{
                    out: (lp.get("workflowRef") or {}).get(src)
                    if isinstance(lp.get("workflowRef"), dict)
                    else None
                    for out, src in (
                        ("workflowPublisherId", "publisherId"),
                        ("workflowId", "id"),
                        ("workflowVersion", "version"),
                        ("digest", "digest"),
                    )
                },
            }
            for lp in _records(doc.get("loops"))
        ],
        "lineage": [
            {
                k: p.get(k)
                for k in ("artifactType", "publisherId", "id", "version", "digest", "relation", "source")
            }
            for p in parents
        ],
    }


def summarize_graph(
    support: GraphSupport, path: Path, rel: str, ledger: Ledger, registry: Any, now: datetime
) -> tuple[Release | None, Rejected | None]:
    """Verify one graph through `support` and build its index entry."""
    from acxoci.errors import AcxError
    from acxoci.exchange.index import Rejected, Release, _read_json

    try:
        doc = _read_json(path, rel)
    except AcxError as exc:
        return None, Rejected("agent-graph", rel, exc.one_line())
    if not isinstance(doc, dict):
        return None, Rejected("agent-graph", rel, "Agent Graph is not a JSON object")
    v = support.verify(doc, registry, now)
    profile = support.publish_issues(doc)
    card = graph_card(doc, v)
    expected = folder_path("agent-graph", str(v.publisher_id), str(card["id"]), str(card["version"]))
    issues = [*v.issues, *profile] + (
        [f"non-canonical Agent Graph path (expected {expected})"] if rel != expected else []
    )
    if not (v.ok and v.signed and not profile and rel == expected):
        return None, Rejected("agent-graph", rel, "; ".join(issues) or "Agent Graph was not accepted")
    entry = {
        "path": rel,
        **{
            k: card[k]
            for k in (
                "id",
                "version",
                "name",
                "description",
                "license",
                "tags",
                "publisher",
                "trust",
                "trustStatus",
                "digest",
                "actorCount",
                "knowledgeCount",
                "routeCount",
                "loopCount",
                "convergenceCount",
                "intents",
                "actors",
                "knowledge",
                "loops",
                "lineage",
            )
        },
        "publishable": True,
        "signed": v.signed,
    }
    release = Release("agent-graph", path, rel, entry, v.signed_at)
    entry["registryStatus"] = ledger.lifecycle(release.identity())
    return release, None


def resolve_dependencies(
    graphs: list[dict[str, Any]], workflows: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """Fill each graph entry's `dependencies` (its acx-workflow loops resolved against the indexed
    workflows by coordinate and digest) and `dependenciesResolved`; return (path, reason) for every
    loop that is missing or whose digest differs."""
    by_coord = {(w.get("publisher"), w.get("id"), w.get("version")): w for w in workflows}
    problems: list[tuple[str, str]] = []
    for g in graphs:
        deps = []
        for lp in g.get("loops") or []:
            if lp.get("kind") != "acx-workflow":
                continue
            wf = by_coord.get(
                (lp.get("workflowPublisherId"), lp.get("workflowId"), lp.get("workflowVersion"))
            )
            status = (
                "missing"
                if wf is None
                else ("resolved" if wf.get("digest") == lp.get("digest") else "digest-mismatch")
            )
            deps.append(
                {
                    "loopId": lp.get("id"),
                    "artifactType": "workflow",
                    "publisherId": lp.get("workflowPublisherId"),
                    "id": lp.get("workflowId"),
                    "version": lp.get("workflowVersion"),
                    "digest": lp.get("digest"),
                    "status": status,
                    "path": wf.get("path") if wf else None,
                    "registryStatus": (wf.get("registryStatus") or {}).get("status") if wf else None,
                }
            )
            if status != "resolved":
                problems.append(
                    (str(g.get("path")), f"loop '{lp.get('id')}' workflow dependency is {status}")
                )
        g["dependencies"] = deps
        g["dependenciesResolved"] = all(d["status"] == "resolved" for d in deps)
    return problems
