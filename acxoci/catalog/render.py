"""The catalog as files: an index page with search and filters (catalog.js, no server), one page
per artifact, `catalog.json` (the same verdicts for scripts) and the shared assets. Pure: entries
in, `{relative path: bytes}` out, the same bytes for the same entries. Every string that came from
an artifact, a folder or a registry goes through `studio.html.esc`; the pages carry a CSP that
allows no inline script, and the graph pictures are the SVG `studio.graphview` escaped."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from acxoci.catalog.model import KIND_ORDER, Card, Entry, Verdict
from acxoci.studio.assets import CATALOG, read_asset
from acxoci.studio.html import clip, esc

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; "
       "form-action 'none'")
KIND_LABEL = {"agent": "agent", "workflow": "workflow", "agent-graph": "agent graph", "unknown": "unknown"}
_SLUG = re.compile(r"[^a-z0-9.]+")
_TRIM = re.compile(r"^(?:cartridges|cals|graphs)/|/cartridge\.acx$|\.cal\.json$|\.agent-graph\.json$")


def page_name(entry: Entry) -> str:
    """`items/<kind>-<readable slug>-<8 hex of the location>.html`: stable and filesystem-safe."""
    loc = entry.candidate.location
    short = _TRIM.sub("", loc.lower().removeprefix("oci-layout:"))
    slug = _SLUG.sub("-", short).strip("-.")[-60:].strip("-.") or "item"
    return f"items/{entry.kind}-{slug}-{hashlib.sha256(loc.encode()).hexdigest()[:8]}.html"


def order(entries: Iterable[Entry]) -> list[Entry]:
    """Agents, then workflows, then graphs; each by location (publisher/id/version)."""
    return sorted(entries, key=lambda e: (KIND_ORDER.get(e.kind, 9), e.candidate.location))


def _head(title: str, root: str) -> str:
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
        "<meta name=\"referrer\" content=\"no-referrer\">\n"
        f"<title>{esc(clip(title, 200))}</title>\n"
        f"<link rel=\"icon\" href=\"{root}favicon.svg\" type=\"image/svg+xml\">\n"
        f"<link rel=\"stylesheet\" href=\"{root}acx.css\">\n"
        f"<link rel=\"stylesheet\" href=\"{root}catalog.css\">\n"
    )


def _badge(word: str, prefix: str = "") -> str:
    cls = re.sub(r"[^a-z-]", "", word.lower())
    return f'<span class="badge {cls}">{esc(prefix + word)}</span>'


def _badges(v: Verdict) -> str:
    out = [_badge("verified" if v.verified and v.word in ("trusted", "verified") else v.word)]
    if v.verified and v.word not in ("trusted", "portable"):
        out.append(_badge(v.trust, "signer "))
    if v.lifecycle is not None and v.lifecycle.status != v.word:
        out.append(_badge(v.lifecycle.status))
    return " ".join(out)


def _title(e: Entry) -> str:
    if e.card is not None:
        return e.card.name or e.card.id
    return e.candidate.location


def _coordinate(e: Entry) -> str:
    if e.card is not None:
        return f"{e.card.publisher}/{e.card.id}@{e.card.version}"
    return e.candidate.location


def _search_text(e: Entry) -> str:
    parts = [_title(e), _coordinate(e), e.candidate.location, e.verdict.word, KIND_LABEL.get(e.kind, "")]
    if e.card is not None:
        parts += [e.card.description, e.card.role, *e.card.tags]
    return clip(" ".join(parts).lower(), 2000)


# ---- the index ---------------------------------------------------------------------------------


def _option_list(name: str, label: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
    return (f'<label for="{name}">{esc(label)}</label>'
            f'<select id="{name}"><option value="">all</option>{opts}</select>')


def index_page(entries: Sequence[Entry], *, title: str, built: str, basis: str,
               findings: Sequence[str]) -> str:
    kinds = sorted({e.kind for e in entries}, key=lambda k: KIND_ORDER.get(k, 9))
    verdicts = sorted({e.verdict.word for e in entries})
    lives = sorted({e.verdict.lifecycle.status if e.verdict.lifecycle else "active" for e in entries})
    out = [_head(title, ""), "<script src=\"catalog.js\" defer></script>\n</head>\n<body>\n",
           '<a class="skip" href="#results">Skip to the list</a>\n',
           f'<header class="bar"><h1>{esc(title)}</h1>',
           f'<p class="muted">Built {esc(built)} by acx. Every verdict is the one '
           f"<code>{esc(basis)}</code> gave at build time; an artifact that did not verify is never "
           "shown as verified, and its contents are not shown at all.</p></header>\n<main>\n"]
    if findings:
        out.append('<section class="findings" aria-labelledby="findings-title">'
                   '<h2 id="findings-title">Findings about the source</h2><ul>')
        out += [f"<li>{esc(clip(f, 500))}</li>" for f in findings]
        out.append("</ul></section>\n")
    out.append(
        '<form id="filters" class="filters" role="search" hidden>'
        '<div class="field"><label for="q">Search</label>'
        '<input id="q" type="search" autocomplete="off" placeholder="name, publisher, tag, skill…"></div>'
        f'<div class="field">{_option_list("f-kind", "Kind", kinds)}</div>'
        f'<div class="field">{_option_list("f-verdict", "Verdict", verdicts)}</div>'
        f'<div class="field">{_option_list("f-lifecycle", "Lifecycle", lives)}</div>'
        f'<p id="count" class="muted" aria-live="polite">{len(entries)} artifact(s)</p></form>\n'
        f'<h2 class="visually-hidden" id="results-title">Artifacts</h2>'
        '<ul id="results" class="cards" aria-labelledby="results-title" tabindex="-1">\n'
    )
    for e in entries:
        v = e.verdict
        life = v.lifecycle.status if v.lifecycle else "active"
        desc = e.card.description if e.card is not None else v.summary
        out.append(
            f'<li class="card" data-kind="{esc(e.kind)}" data-verdict="{esc(v.word)}" '
            f'data-lifecycle="{esc(life)}" data-text="{esc(_search_text(e))}">'
            f'<h3><a href="{e.page}">{esc(clip(_title(e), 140))}</a></h3>'
            f'<p class="coord"><span class="kind">{esc(KIND_LABEL.get(e.kind, e.kind))}</span> '
            f'<span class="mono">{esc(clip(_coordinate(e), 200))}</span></p>'
            f'<p class="badges">{_badges(v)}</p>'
            f'<p class="desc">{esc(clip(desc, 280))}</p></li>\n'
        )
    out.append("</ul>\n</main>\n</body>\n</html>\n")
    return "".join(out)


# ---- one artifact ------------------------------------------------------------------------------


def _row(label: str, value: str, *, mono: bool = False) -> str:
    cls = ' class="mono"' if mono else ""
    return f"<dt>{esc(label)}</dt><dd{cls}>{esc(value)}</dd>"


def _card_html(c: Card) -> str:
    out = ['<section aria-labelledby="about-title"><h2 id="about-title">About</h2>',
           f'<p class="desc">{esc(clip(c.description, 5000))}</p><dl class="facts">']
    out.append(_row("Coordinate", f"{c.publisher}/{c.id}@{c.version}", mono=True))
    if c.role:
        out.append(_row("Role", c.role))
    if c.license:
        out.append(_row("License", c.license))
    if c.tags:
        out.append(_row("Tags", ", ".join(c.tags)))
    out.append("</dl>")
    if c.graph_svg:
        out.append('<h3 id="graph-title">Graph</h3>'
                   f'<div class="graph-box" tabindex="0" role="region" aria-labelledby="graph-title">'
                   f"{c.graph_svg}</div>")
    for s in c.sections:
        out.append(f"<h3>{esc(s.title)}</h3>")
        if not s.items:
            out.append('<p class="muted">none</p>')
            continue
        out.append('<ul class="items">')
        for i in s.items:
            detail = f' <span class="muted">— {esc(clip(i.detail, 300))}</span>' if i.detail else ""
            extra = f'<br><span class="extra">{esc(clip(i.extra, 600))}</span>' if i.extra else ""
            out.append(f"<li><strong>{esc(clip(i.name, 200))}</strong>{detail}{extra}</li>")
        out.append("</ul>")
    out.append("</section>")
    return "".join(out)


def item_page(e: Entry, *, title: str, built: str) -> str:
    v = e.verdict
    head = _title(e)
    out = [_head(f"{head} — {title}", "../"), "</head>\n<body>\n",
           '<a class="skip" href="#verdict-title">Skip to the verdict</a>\n',
           f'<header class="bar"><p><a href="../index.html">← {esc(title)}</a></p>'
           f"<h1>{esc(head)}</h1>"
           f'<p class="badges">{_badges(v)}</p></header>\n<main class="item">\n']
    if not v.verified:
        out.append('<p class="banner" role="alert"><strong>Not verified.</strong> acx did not accept this '
                   "artifact, so nothing it says about itself is shown.</p>")
    out.append('<section aria-labelledby="verdict-title"><h2 id="verdict-title">Verdict</h2>'
               f'<p class="summary">{esc(v.summary)}</p><dl class="facts">')
    out.append(_row("Kind", KIND_LABEL.get(e.kind, e.kind)))
    out.append(_row("Location", e.candidate.location, mono=True))
    if v.digest:
        out.append(_row("Digest", v.digest, mono=True))
    out.append(_row("Signer", v.publisher_id or "—"))
    if v.key_id:
        out.append(_row("Key", v.key_id, mono=True))
    out.append(_row("Trust", v.trust))
    if v.level is not None:
        claimed = f"{v.level.claimed} — " if v.level.claimed else ""
        why = f": {v.level.reason}" if v.level.reason else ""
        out.append(_row("Level", f"{claimed}{v.level.state}{why}"))
    life = v.lifecycle
    status = "active"
    if life is not None:
        status = life.status + (f": {life.reason}" if life.reason else "")
        status += f" (successor {life.successor})" if life.successor else ""
    out.append(_row("Lifecycle", status))
    out.append(_row("Judged at", built))
    out.append(_row("Judged as", v.command, mono=True))
    out.append("</dl>")
    if v.checks:
        out.append('<table class="checks"><caption>Checks</caption><thead><tr><th scope="col">check</th>'
                   '<th scope="col">result</th><th scope="col">reason</th></tr></thead><tbody>')
        for c in v.checks:
            out.append(f'<tr class="{esc(c.status)}"><td>{esc(c.id)}</td><td>{esc(c.status)}</td>'
                       f"<td>{esc(clip(c.reason, 1000))}</td></tr>")
        out.append("</tbody></table>")
    out.append("</section>")
    if v.verified and v.install and (life is None or life.status != "withdrawn"):
        out.append('<section aria-labelledby="use-title"><h2 id="use-title">Use it</h2>'
                   f'<pre class="command"><code>{esc(v.install)}</code></pre></section>')
    if e.card is not None:
        out.append(_card_html(e.card))
    out.append("</main>\n</body>\n</html>\n")
    return "".join(out)


def summary_json(entries: Sequence[Entry], *, built: str, basis: str, findings: Sequence[str]) -> bytes:
    """`catalog.json`: the verdicts for scripts (the same facts the pages show)."""
    items: list[dict[str, Any]] = []
    for e in entries:
        v = e.verdict
        items.append({
            "kind": e.kind, "location": e.candidate.location, "page": e.page, "verified": v.verified,
            "verdict": v.word, "trust": v.trust, "digest": v.digest, "publisherId": v.publisher_id,
            "keyId": v.key_id, "lifecycle": v.lifecycle.status if v.lifecycle else "active",
            "level": v.level.state if v.level else None, "summary": v.summary, "judgedAs": v.command,
            "install": v.install, "name": e.card.name if e.card else None,
            "checks": [{"id": c.id, "status": c.status, "reason": c.reason} for c in v.checks],
        })
    doc = {"schemaVersion": "acx.catalog/1", "builtAt": built, "judgedAs": basis,
           "findings": list(findings), "artifacts": items}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def render_site(entries: Sequence[Entry], *, title: str, built: str, basis: str,
                findings: Sequence[str]) -> dict[str, bytes]:
    """Every file of the catalog, by relative path."""
    files = {name: read_asset(name) for name in CATALOG}
    files["index.html"] = index_page(entries, title=title, built=built, basis=basis,
                                     findings=findings).encode("utf-8")
    for e in entries:
        files[e.page] = item_page(e, title=title, built=built).encode("utf-8")
    files["catalog.json"] = summary_json(entries, built=built, basis=basis, findings=findings)
    return files
