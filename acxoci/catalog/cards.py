"""Cards: what a verified artifact says about itself, read with acx's own readers (the cartridge
inspector, the workflow model, the graph inspector) and the shared graph picture. Called only
for bytes the judge verified; every string is escaped later, when the page is rendered."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.catalog.model import Card, Item, Kind, Section
from acxoci.errors import InvalidInput
from acxoci.fsutil import read_bytes
from acxoci.studio.graphview import render_svg, view_of

MAX_DOC = 16 * 1024 * 1024
MAX_ITEMS = 200  # per section; a card is a summary


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _items(items: list[Item]) -> tuple[Item, ...]:
    return tuple(items[:MAX_ITEMS]) + ((Item(f"… and {len(items) - MAX_ITEMS} more"),)
                                       if len(items) > MAX_ITEMS else ())


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = loads_strict(value)
        except AttestError:
            return ()
    return tuple(t for t in value[:50] if isinstance(t, str)) if isinstance(value, list) else ()


def _lineage(doc: Mapping[str, Any]) -> Section:
    lin = doc.get("lineage")
    parents = lin.get("parents") if isinstance(lin, Mapping) else None
    items = [
        Item(f"{_s(p.get('publisherId'))}/{_s(p.get('id'))}@{_s(p.get('version'))}",
             f"{_s(p.get('relation'))} of {_s(p.get('artifactType'))}", _s(p.get("digest")))
        for p in (parents if isinstance(parents, list) else []) if isinstance(p, Mapping)
    ]
    return Section("Lineage", _items(items))


def agent_card(path: Path, publisher: str | None) -> Card:
    """A cartridge's card: meta, skills (the ROM-verified skill rows) and capabilities."""
    from acxoci.cartridge.inspect import inspect_cartridge

    view = inspect_cartridge(path)
    meta: Mapping[str, Any] = view["meta"]
    skills = [Item(_s(s.get("name")), _s(s.get("description")), _s(s.get("version")))
              for s in view["skills"]]
    caps = [Item(_s(c.get("taskType")) or _s(c.get("id")), _s(c.get("domain"))) for c in view["capabilities"]]
    return Card(
        id=_s(meta.get("acx.artifact_id")),
        version=_s(meta.get("acx.artifact_version")),
        name=_s(meta.get("acx.agent_name")) or _s(meta.get("acx.artifact_id")),
        description=_s(meta.get("acx.description")),
        publisher=publisher or _s(meta.get("acx.publisher_id")),
        license=_s(meta.get("acx.license")),
        tags=_tags(meta.get("acx.tags")),
        role=_s(meta.get("acx.role")),
        sections=(Section("Skills", _items(skills)), Section("Capabilities", _items(caps))),
    )


def _document(path: Path) -> dict[str, Any]:
    try:
        doc = loads_strict(read_bytes(path, "document", limit=MAX_DOC))
    except AttestError as exc:
        raise InvalidInput(f"not valid JSON: {exc}", where=str(path)) from exc
    if not isinstance(doc, dict):
        raise InvalidInput("not a JSON object", where=str(path))
    return doc


def workflow_card(path: Path, publisher: str | None) -> Card:
    """A workflow's card: participants, RAC (descriptions only), required capabilities, lineage and
    the picture of its flow."""
    from acxoci.workflow.model import Workflow

    doc = _document(path)
    wf = Workflow.from_json(doc)
    participants = []
    for p in wf.participants:
        if p.slot is not None:
            level = f", level ≥ {p.slot.min_level.acx_level}" if p.slot.min_level and \
                p.slot.min_level.acx_level is not None else ""
            participants.append(Item(p.alias, f"slot: {p.slot.role or 'any role'}{level}",
                                     "" if p.required else "optional"))
        else:
            participants.append(Item(p.alias, "pinned cartridge", p.rom_digest or ""))
    rac = [Item(r.id, f"{r.kind}, {'required' if r.required else 'optional'}", r.description) for r in wf.rac]
    caps = sorted({c for n in wf.nodes for c in n.requires_capabilities})
    skills = sorted({s for n in wf.nodes for s in n.requires_skills})
    return Card(
        id=wf.id, version=wf.version or "", name=wf.name or wf.id, description=wf.description or "",
        publisher=publisher or "", license=wf.license or "", tags=wf.tags,
        sections=(Section("Participants", _items(participants)), Section("RAC (required available context)",
                  _items(rac)), Section("Capabilities required", _items([Item(c) for c in caps])),
                  Section("Skills required", _items([Item(s) for s in skills])), _lineage(doc)),
        graph_svg=render_svg(view_of(doc), title=wf.name or wf.id),
    )


def graph_card(path: Path, publisher: str | None) -> Card:
    """An Agent Graph's card: actors, knowledge modules, routes, loops, lineage and its picture."""
    from acxoci.workflow.graph import inspect_graph

    doc = _document(path)
    v = inspect_graph(doc)
    actors = [Item(_s(a.get("name")) or _s(a.get("id")), _s(a.get("kind"))) for a in v["actors"]]
    knowledge = [Item(_s(k.get("id")), _s(k.get("kind")), ", ".join(k.get("stewards") or []))
                 for k in v["knowledge"]]
    loops = []
    for lp in v["loops"]:
        ref = lp.get("workflowRef") if isinstance(lp.get("workflowRef"), Mapping) else {}
        pin = f"{_s(ref.get('publisherId'))}/{_s(ref.get('id'))}@{_s(ref.get('version'))}" if ref else ""
        loops.append(Item(_s(lp.get("id")), _s(lp.get("kind")), pin))
    routes = [Item(_s(r.get("id")), f"{_s(r.get('from'))} → {', '.join(r.get('to') or [])}",
                   f"{_s(r.get('intent'))} ({_s(r.get('obligation'))})") for r in v["routes"]]
    name = _s(v.get("name")) or _s(v.get("id"))
    return Card(
        id=_s(v.get("id")), version=_s(v.get("version")), name=name, description=_s(v.get("description")),
        publisher=publisher or "", license=_s(v.get("license")), tags=_tags(doc.get("tags")),
        sections=(Section("Actors", _items(actors)), Section("Knowledge modules (RAC)", _items(knowledge)),
                  Section("Routes", _items(routes)), Section("Loops", _items(loops)), _lineage(doc)),
        graph_svg=render_svg(view_of(doc), title=name),
    )


def card_for(kind: Kind, path: Path, publisher: str | None) -> Card:
    """The card of a verified artifact of `kind` at `path`."""
    if kind == "agent":
        return agent_card(path, publisher)
    if kind == "workflow":
        return workflow_card(path, publisher)
    return graph_card(path, publisher)
