"""What the Studio's one endpoint (`POST /api/lint`) answers about a document: the same lint as
`acx workflow lint` / `acx graph lint` (rules, paths, messages), the digest `acx workflow digest` /
`acx graph digest` prints, the signature verdict `workflow verify` / `graph verify` gives without a
trust registry, the picture of the document, and on request the remix draft `acx workflow remix`
would write. Pure: bytes in, a JSON-ready answer out; nothing is written anywhere."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.errors import AcxError
from acxoci.studio.graphview import render_svg, view_of
from acxoci.workflow.graph import graph_digest, is_graph, lint_graph, verify_graph
from acxoci.workflow.lineage import RELATIONS, remix
from acxoci.workflow.lint import LintResult, lint
from acxoci.workflow.sign import workflow_digest
from acxoci.workflow.signed import SignedVerdict
from acxoci.workflow.verify import verify_workflow

MAX_BODY = 1024 * 1024
MAX_ISSUES = 500  # shown in the answer (a 1 MiB document can break a rule a hundred thousand times)
Kind = Literal["workflow", "agent-graph"]


@dataclass(frozen=True)
class BadRequest(Exception):
    """A request the endpoint refuses before analysing anything (HTTP 400 with this message)."""

    message: str


def _issue(issue: dict[str, Any]) -> dict[str, Any]:
    """An issue as the page shows it: its rule, path, message and `text` (the CLI's line, whose
    value is already cut short), without the raw offending value (which can be most of the body)."""
    return {k: issue[k] for k in ("rule", "path", "message", "severity", "text")}


def headline(result: LintResult, publish: bool) -> str:
    """The verdict line `acx … lint` prints (without its colours)."""
    if result.ok:
        return "VALID ✓ — " + ("structure and publish profile pass" if publish else "structure passes")
    return f"INVALID — {len(result.errors)} issue(s)"


def parse_document(body: bytes) -> dict[str, Any]:
    """The body as a strict JSON object (the rules `acx … lint` reads a file with)."""
    if len(body) > MAX_BODY:
        raise BadRequest(f"the document is {len(body)} bytes; at most {MAX_BODY} are analysed")
    try:
        doc = loads_strict(body, max_bytes=MAX_BODY)
    except AttestError as exc:
        raise BadRequest(f"not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise BadRequest(f"a workflow or agent graph is a JSON object, not a {type(doc).__name__}")
    return doc


def _remix(doc: dict[str, Any], kind: Kind, verdict: SignedVerdict | None, relation: str) -> dict[str, Any]:
    """`acx workflow remix` for either kind: the parent must be signed and verify; the draft drops
    its integrity and pins the parent's digest in `lineage` (lineage.remix does both)."""
    if verdict is None or not verdict.signed:
        return {"error": f"only a signed {kind} can be remixed (it has no integrity block)"}
    if not verdict.ok:
        return {"error": "the parent does not verify: " + "; ".join(verdict.issues)}
    try:
        draft = remix(doc, relation)
    except AcxError as exc:
        return {"error": exc.one_line()}
    parent = draft["lineage"]["parents"][0]
    if kind == "agent-graph":  # lineage.remix names workflow parents; the rule is the same for graphs
        parent["artifactType"] = "agent-graph"
    return {"draft": draft, "parent": parent}


def analyse(body: bytes, *, publish: bool, relation: str | None, now: datetime) -> dict[str, Any]:
    """The endpoint's answer for one document. BadRequest for a body that is no JSON object or an
    unknown relation; lint findings, a tampered signature or a refused remix are answers, not errors."""
    if relation is not None and relation not in RELATIONS:
        raise BadRequest(f"relation must be one of {', '.join(RELATIONS)}")
    doc = parse_document(body)
    kind: Kind = "agent-graph" if is_graph(doc) else "workflow"
    result = lint_graph(doc, publish=publish) if kind == "agent-graph" else lint(doc, publish=publish)
    digest: str | None
    try:
        digest = graph_digest(doc) if kind == "agent-graph" else workflow_digest(doc)
    except AttestError:  # e.g. an integer outside the JCS domain: lint names it, there is no digest
        digest = None
    verdict: SignedVerdict | None = None
    signature: dict[str, Any] | None = None
    if "integrity" in doc and digest is not None:
        try:
            verify = verify_graph if kind == "agent-graph" else verify_workflow
            verdict = verify(doc, registry=None, now=now)
            signature = verdict.to_json()
        except AcxError as exc:
            signature = {"ok": False, "signed": True, "trust": "tampered", "summary": exc.one_line()}
    view = view_of(doc)
    lint_json = result.to_json()
    name = doc.get("name")
    title = name if isinstance(name, str) else str(doc.get("id", kind))
    answer: dict[str, Any] = {
        "kind": kind,
        "lint": {**lint_json, "issues": [_issue(i) for i in lint_json["issues"][:MAX_ISSUES]],
                 "issueCount": len(result.issues)},
        "headline": headline(result, publish),
        "digest": digest,
        "signature": signature,
        "graph": {"svg": render_svg(view, title=title), **view.summary()},
    }
    if relation is not None:
        answer["remix"] = _remix(doc, kind, verdict, relation)
    return answer
