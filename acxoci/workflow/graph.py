"""Agent Graphs (`acx.agent-graph/1`, ACX brief §9.8): lint, digest, sign, verify, inspect.

A graph is declarative: actors (team seats), knowledge modules (metadata, never content), routes
between actors (with returns and triggers), loop bindings (often a pinned ACX workflow) and
convergence points where loops meet. The rules are learned from the reference's schema and
behaviour and written here in our own terms; each issue names a rule id, a JSON path and the value.

Digest, DSSE signature and integrity block are the workflow's (`acxoci.workflow.signed`) with the
graph's names. Hostile input is bounded (decision 0017): the document size, nesting depth, every
collection and the work of the pairwise checks have caps, every walk is iterative. Pure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UnsetType

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import PrivateKey
from acxoci.attest.trust import TrustRegistry
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.agent_graph import AgentGraphDoc
from acxoci.errors import InvalidInput
from acxoci.fsutil import read_bytes
from acxoci.workflow import signed
from acxoci.workflow.issues import ABSENT, Issue, IssueCollector, one_of
from acxoci.workflow.lineage import check_lineage
from acxoci.workflow.lint import URI_RE, LintResult, publish_profile
from acxoci.workflow.model import DIGEST_RE, IDENT_RE, PUBLISHER_RE, SEMVER_RE
from acxoci.workflow.signed import SignedVerdict

GRAPH_SCHEMA_VERSION = "acx.agent-graph/1"
GRAPH_SIGNATURE_VERSION = "acx.agent-graph-signature/1"
GRAPH_PREDICATE_TYPE = "https://acx.dev/attestation/agent-graph/v1"
GRAPH_MEDIA_TYPE = "application/vnd.acx.agent-graph.v1+json"
GRAPH_SUFFIX = ".agent-graph.json"

KIND = signed.SignedKind(
    label="agent graph",
    urn="agent-graph",
    signature_schema=GRAPH_SIGNATURE_VERSION,
    predicate_type=GRAPH_PREDICATE_TYPE,
    id_field="agentGraphId",
    version_field="agentGraphVersion",
    digest_field="agentGraphDigest",
    counts=(
        ("actors", "actors"),
        ("knowledgeModules", "knowledge"),
        ("routes", "routes"),
        ("loops", "loops"),
        ("convergencePoints", "convergence"),
    ),
)

# --- bounds (decision 0017): a hostile graph is refused with an issue, never walked unbounded ---
MAX_GRAPH_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_ITEMS = 4096  # each top-level collection
MAX_REFS = 1024  # each id array inside an item
MAX_PAIR_WORK = 1_000_000  # (target x knowledge) pairs of mandatory direction, inputs x routes
MAX_VALUES = 250_000  # JSON values in one graph (the reference's published graph has under 1,000)

TOP_KEYS = frozenset(
    {
        "schemaVersion",
        "id",
        "version",
        "name",
        "description",
        "license",
        "homepage",
        "authors",
        "tags",
        "lineage",
        "actors",
        "knowledge",
        "routes",
        "loops",
        "convergence",
        "limits",
        "extensions",
        "integrity",
    }
)
ACTOR_KEYS = frozenset({"id", "kind", "name", "description", "selector", "cardinality", "responsibilities"})
SELECTOR_KEYS = frozenset({"roles", "capabilities", "tags", "description"})
KNOWLEDGE_KEYS = frozenset(
    {
        "id",
        "kind",
        "name",
        "description",
        "stewards",
        "audience",
        "durability",
        "sensitivity",
        "freshness",
        "locator",
    }
)
ROUTE_KEYS = frozenset(
    {
        "id",
        "from",
        "to",
        "intent",
        "relationship",
        "obligation",
        "authority",
        "purpose",
        "success",
        "carries",
        "returns",
        "triggers",
        "cadence",
        "delivery",
        "acknowledgement",
        "medium",
        "weight",
        "expects",
    }
)
LOOP_KEYS = frozenset({"id", "kind", "description", "workflowRef", "actorBindings", "imports", "exports"})
CONVERGENCE_KEYS = frozenset(
    {
        "id",
        "description",
        "inputs",
        "steward",
        "contributors",
        "policy",
        "outputs",
        "trigger",
        "failureMode",
        "limits",
    }
)
ACTOR_KINDS = frozenset({"agent", "human", "group", "service", "mixed"})
KNOWLEDGE_KINDS = frozenset(
    {
        "intent",
        "requirement",
        "decision",
        "status",
        "evidence",
        "feedback",
        "risk",
        "context",
        "artifact",
        "tacit",
        "custom",
    }
)
DURABILITY = frozenset({"turn", "session", "workflow", "project", "organization", "public"})
SENSITIVITY = frozenset({"public", "internal", "restricted"})
LOCATOR_TYPES = frozenset({"rac", "okf", "mcp-resource", "artifact", "manual", "custom"})
INTENTS = frozenset(
    {
        "inform",
        "direct",
        "request",
        "report",
        "advise",
        "review",
        "approve",
        "escalate",
        "coordinate",
        "observe",
        "custom",
    }
)
OBLIGATIONS = frozenset({"must", "should", "may"})
AUTHORITIES = frozenset({"informational", "advisory", "delegated", "approval", "escalation"})
DELIVERY = frozenset({"broadcast", "one", "owner", "custom"})
ACKNOWLEDGEMENT = frozenset({"required", "optional", "none"})
CADENCE_MODES = frozenset({"event", "continuous", "periodic", "on-demand", "custom"})
LOOP_KINDS = frozenset({"acx-workflow", "external", "informal"})
MERGE_MODES = frozenset({"steward-synthesis", "consensus", "vote", "priority", "latest", "custom"})
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
EVENT_RE = re.compile(r"^[a-z][a-z0-9-]*(?:\.[a-z0-9][a-z0-9-]*)+$")
RELATIONSHIP_RE = re.compile(r"^[a-z][a-z0-9._-]{0,63}$")
_PRIVATE_EXACT = frozenset({"content", "body", "message", "messages", "payload", "transcript", "token"})
_PRIVATE_PART = re.compile(
    r"(?:credential|password|passwd|secret|privatekey|apikey|accesstoken|authtoken|bearertoken|"
    r"refreshtoken|clienttoken|apitoken)"
)
_PRIVATE_CONTENT = re.compile(r"^(?:knowledge|private|source|task)content$")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _records(value: Any) -> list[tuple[int, Mapping[str, Any]]]:
    if not isinstance(value, list):
        return []
    return [(i, v) for i, v in enumerate(value[:MAX_ITEMS]) if isinstance(v, Mapping)]


class _GraphLinter(IssueCollector):
    """One lint run over a raw graph document (use `lint_graph()`)."""

    def obj(self, value: Any, allowed: frozenset[str], path: str, what: str) -> Mapping[str, Any] | None:
        if not isinstance(value, Mapping):
            self.add("shape", path, f"{what} must be an object", value)
            return None
        self.closed(value, allowed, path, what)
        return value

    def text(self, value: Any, path: str, lo: int = 1, hi: int = 2000, *, rule: str = "text") -> None:
        if not isinstance(value, str) or len(value.strip()) < lo or len(value) > hi:
            self.add(rule, path, f"must be a {lo}-{hi} character string", value)

    def opt_text(self, o: Mapping[str, Any], key: str, path: str, lo: int = 1, hi: int = 2000) -> None:
        if key in o:
            self.text(o[key], f"{path}.{key}", lo, hi)

    def enum(self, value: Any, allowed: frozenset[str], path: str, what: str) -> None:
        if not isinstance(value, str) or value not in allowed:
            self.add("enum", path, f"{what} must be one of {sorted(allowed)}", value)

    def pos_int(self, value: Any, path: str, *, minimum: int = 1) -> None:
        if not _is_int(value) or value < minimum:
            word = "positive" if minimum == 1 else "non-negative"
            self.add("integer", path, f"must be a {word} integer", value)

    def strings(
        self, value: Any, path: str, *, non_empty: bool = False, max_len: int | None = None
    ) -> list[str]:
        """An array of non-empty unique strings (bounded); returns the good ones."""
        if not isinstance(value, list):
            self.add("string-array", path, "must be an array of strings", value)
            return []
        if non_empty and not value:
            self.add("string-array", path, "must not be empty", value)
        if len(value) > MAX_REFS:
            self.add("too-large", path, f"has {len(value)} entries (at most {MAX_REFS})", len(value))
            return []
        seen: set[str] = set()
        out: list[str] = []
        for i, v in enumerate(value):
            if not isinstance(v, str) or not v or (max_len is not None and len(v) > max_len):
                self.add("string-array", f"{path}[{i}]", "must be a non-empty string", v)
            elif v in seen:
                self.add("duplicate", f"{path}[{i}]", "duplicate value", v)
            else:
                seen.add(v)
                out.append(v)
        return out

    def refs(
        self, value: Any, path: str, known: set[str], what: str, *, non_empty: bool = False
    ) -> list[str]:
        """An id array whose every entry names a declared `what`."""
        out = self.strings(value, path, non_empty=non_empty)
        for i, v in enumerate(out):
            if not IDENT_RE.fullmatch(v):
                self.add("identifier", f"{path}[{i}]", "must match ^[a-z][a-z0-9._-]{0,127}$", v)
            elif v not in known:
                self.add("unknown-reference", f"{path}[{i}]", f"references an undeclared {what}", v)
        return out

    def ident(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str) or not IDENT_RE.fullmatch(value):
            self.add("identifier", path, "must match ^[a-z][a-z0-9._-]{0,127}$", value)
            return None
        return value

    def cadence(self, value: Any, path: str, interval: str) -> None:
        c = self.obj(value, frozenset({"mode", "description", interval}), path, "cadence")
        if c is None:
            return
        self.enum(c.get("mode"), CADENCE_MODES, f"{path}.mode", "mode")
        self.text(c.get("description"), f"{path}.description", hi=1000)
        if interval in c:
            self.pos_int(c[interval], f"{path}.{interval}")
        elif c.get("mode") == "periodic":
            self.add("cadence-periodic", f"{path}.{interval}", f"a periodic cadence needs {interval}")

    # --- document --------------------------------------------------------------------------

    def run(self) -> list[Issue]:
        d = self.doc
        if not self._shape_ok(d):
            return self.issues
        self.closed(d, TOP_KEYS, "$", "agent graph")
        if d.get("schemaVersion") != GRAPH_SCHEMA_VERSION:
            self.add(
                "schema-version",
                "$.schemaVersion",
                f"schemaVersion must be {GRAPH_SCHEMA_VERSION}",
                d.get("schemaVersion"),
            )
        if not isinstance(d.get("id"), str) or not IDENT_RE.fullmatch(d["id"]):
            self.add("graph-id", "$.id", "agent graph id must match ^[a-z][a-z0-9._-]{0,127}$", d.get("id"))
        if "version" in d and not (isinstance(d["version"], str) and SEMVER_RE.fullmatch(d["version"])):
            self.add("version", "$.version", "version must be SemVer", d["version"])
        self.opt_text(d, "name", "$", 3, 120)
        self.opt_text(d, "description", "$", 20, 2000)
        self.opt_text(d, "license", "$", 1, 100)
        if "homepage" in d and not (isinstance(d["homepage"], str) and URI_RE.fullmatch(d["homepage"])):
            self.add("uri", "$.homepage", "homepage must be an absolute URI", d["homepage"])
        self._authors_tags(d)
        if "lineage" in d:
            integ = d.get("integrity")
            publisher = integ.get("publisherId") if isinstance(integ, Mapping) else None
            self.issues.extend(
                check_lineage(
                    d["lineage"],
                    artifact_type="agent-graph",
                    publisher_id=publisher if isinstance(publisher, str) else None,
                    artifact_id=d.get("id"),
                    version=d.get("version"),
                )
            )
        for key in ("actors", "knowledge", "routes"):
            if not isinstance(d.get(key), list) or not d[key]:
                self.add("collection", f"$.{key}", f"{key} must be a non-empty array", d.get(key))
        for key in ("loops", "convergence"):
            if key in d and not isinstance(d[key], list):
                self.add("collection", f"$.{key}", f"{key} must be an array", d[key])
        max_fanout = self._limits(d.get("limits"))
        self.extensions(d.get("extensions", ABSENT))
        if "integrity" in d and not isinstance(d["integrity"], Mapping):
            self.add("integrity", "$.integrity", "integrity must be an object", d["integrity"])

        actors = _records(d.get("actors"))
        knowledge = _records(d.get("knowledge"))
        routes = _records(d.get("routes"))
        loops = _records(d.get("loops"))
        points = _records(d.get("convergence"))
        for key in ("actors", "knowledge", "routes", "loops", "convergence"):
            value = d.get(key)
            if isinstance(value, list):
                for i, v in enumerate(value[:MAX_ITEMS]):
                    if not isinstance(v, Mapping):
                        self.add("shape", f"$.{key}[{i}]", "must be an object", v)
        actor_ids = self._ids(actors, "actors", "actor")
        knowledge_ids = self._ids(knowledge, "knowledge", "knowledge")
        route_ids = self._ids(routes, "routes", "route")
        loop_ids = self._ids(loops, "loops", "loop")
        self._ids(points, "convergence", "convergence")

        for i, a in actors:
            self._actor(a, f"$.actors[{i}]")
        for i, k in knowledge:
            self._knowledge(k, f"$.knowledge[{i}]", actor_ids)
        for i, r in routes:
            self._route(r, f"$.routes[{i}]", actor_ids, knowledge_ids, route_ids, max_fanout)
        self._returns(routes)
        self._mandatory_direction(routes)
        loop_exports: dict[str, set[str]] = {}
        for i, lp in loops:
            exported = self._loop(lp, f"$.loops[{i}]", actor_ids, knowledge_ids)
            if isinstance(lp.get("id"), str):
                loop_exports.setdefault(lp["id"], exported)
        carried_to = self._deliveries(routes)
        for i, p in points:
            self._convergence(
                p,
                f"$.convergence[{i}]",
                actor_ids,
                knowledge_ids,
                loop_ids,
                loop_exports,
                carried_to,
                knowledge,
            )
        self._usage(actors, knowledge, routes, loops, points)
        return self.issues

    def _shape_ok(self, d: Mapping[str, Any]) -> bool:
        """Depth, size and null checks in one iterative walk; False when too hostile to lint.
        Only containers are queued (with their path); scalars are counted and dropped."""
        stack: list[tuple[Any, str, int]] = [(d, "$", 0)]
        nodes = 0
        while stack:
            value, path, depth = stack.pop()
            if depth >= MAX_DEPTH:
                self.add("too-deep", path, f"nesting deeper than {MAX_DEPTH} levels")
                return False
            if isinstance(value, Mapping):
                if path == "$.extensions":
                    continue  # opaque by design: null allowed inside, walked again by the profile
                items: Iterable[tuple[Any, Any]] = value.items()
            else:
                items = enumerate(value)
            nodes += len(value)
            if nodes > MAX_VALUES:
                self.add("too-large", "$", f"more than {MAX_VALUES} JSON values")
                return False
            for k, v in items:
                if v is None:
                    self.add("null", _child(path, k), "explicit null is not allowed (omit the property)")
                elif isinstance(v, Mapping | list):
                    stack.append((v, _child(path, k), depth + 1))
        for key in ("actors", "knowledge", "routes", "loops", "convergence"):
            value = d.get(key)
            if isinstance(value, list) and len(value) > MAX_ITEMS:
                self.add(
                    "too-large", f"$.{key}", f"has {len(value)} entries (at most {MAX_ITEMS})", len(value)
                )
                return False
        return True

    def _authors_tags(self, d: Mapping[str, Any]) -> None:
        if "authors" in d:
            authors = d["authors"]
            if not isinstance(authors, list) or not authors:
                self.add("authors", "$.authors", "authors must be a non-empty array", authors)
            else:
                for i, a in _records(authors):
                    p = f"$.authors[{i}]"
                    self.closed(a, frozenset({"name", "url"}), p, "author")
                    self.text(a.get("name"), f"{p}.name", 1, 120)
                    if "url" in a and not (isinstance(a["url"], str) and URI_RE.fullmatch(a["url"])):
                        self.add("uri", f"{p}.url", "author url must be an absolute URI", a["url"])
        if "tags" in d:
            tags = self.strings(d["tags"], "$.tags", non_empty=True, max_len=64)
            if isinstance(d["tags"], list) and len(d["tags"]) > 20:
                self.add("tags", "$.tags", "at most 20 tags", len(d["tags"]))
            for i, t in enumerate(tags):
                if not TAG_RE.fullmatch(t):
                    self.add("tags", f"$.tags[{i}]", "tag must match ^[a-z0-9][a-z0-9._-]{0,63}$", t)

    def _limits(self, value: Any) -> int | None:
        lim = self.obj(value, frozenset({"maxPropagationHops", "maxFanout"}), "$.limits", "limits")
        if lim is None:
            return None
        self.pos_int(lim.get("maxPropagationHops"), "$.limits.maxPropagationHops")
        self.pos_int(lim.get("maxFanout"), "$.limits.maxFanout")
        fan = lim.get("maxFanout")
        return fan if isinstance(fan, int) and not isinstance(fan, bool) and fan >= 1 else None

    def _ids(self, items: list[tuple[int, Mapping[str, Any]]], key: str, what: str) -> set[str]:
        seen: set[str] = set()
        for i, v in items:
            ident = self.ident(v.get("id"), f"$.{key}[{i}].id")
            if ident is None:
                continue
            if ident in seen:
                self.add("duplicate-id", f"$.{key}[{i}].id", f"duplicate {what} id", ident)
            seen.add(ident)
        return seen

    def _actor(self, a: Mapping[str, Any], p: str) -> None:
        self.closed(a, ACTOR_KEYS, p, "actor")
        self.enum(a.get("kind"), ACTOR_KINDS, f"{p}.kind", "actor kind")
        self.text(a.get("description"), f"{p}.description")
        self.opt_text(a, "name", p, 1, 120)
        if "selector" in a:
            s = self.obj(a["selector"], SELECTOR_KEYS, f"{p}.selector", "selector")
            if s is not None:
                if not s:
                    self.add("selector", f"{p}.selector", "a selector must constrain or describe the actor")
                if "roles" in s:
                    self.strings(s["roles"], f"{p}.selector.roles", non_empty=True, max_len=120)
                if "capabilities" in s:
                    self.strings(s["capabilities"], f"{p}.selector.capabilities", non_empty=True, max_len=160)
                if "tags" in s:
                    for i, t in enumerate(self.strings(s["tags"], f"{p}.selector.tags", non_empty=True)):
                        if not TAG_RE.fullmatch(t):
                            self.add("tags", f"{p}.selector.tags[{i}]", "invalid tag", t)
                self.opt_text(s, "description", f"{p}.selector", 1, 1000)
        if "cardinality" in a:
            c = self.obj(a["cardinality"], frozenset({"min", "max"}), f"{p}.cardinality", "cardinality")
            if c is not None:
                if "min" not in c and "max" not in c:
                    self.add("cardinality", f"{p}.cardinality", "cardinality must declare min or max")
                if "min" in c:
                    self.pos_int(c["min"], f"{p}.cardinality.min", minimum=0)
                if "max" in c:
                    self.pos_int(c["max"], f"{p}.cardinality.max")
                lo, hi = c.get("min"), c.get("max")
                if isinstance(lo, int) and isinstance(hi, int) and _is_int(lo) and _is_int(hi) and lo > hi:
                    self.add("cardinality", f"{p}.cardinality", "min must not exceed max", c)
        if "responsibilities" in a:
            self.strings(a["responsibilities"], f"{p}.responsibilities", max_len=500)

    def _knowledge(self, k: Mapping[str, Any], p: str, actors: set[str]) -> None:
        self.closed(k, KNOWLEDGE_KEYS, p, "knowledge module")
        self.enum(k.get("kind"), KNOWLEDGE_KINDS, f"{p}.kind", "knowledge kind")
        self.text(k.get("description"), f"{p}.description")
        self.opt_text(k, "name", p, 1, 120)
        self.refs(k.get("stewards"), f"{p}.stewards", actors, "actor", non_empty=True)
        if "audience" in k:
            self.refs(k["audience"], f"{p}.audience", actors, "actor")
        if "durability" in k:
            self.enum(k["durability"], DURABILITY, f"{p}.durability", "durability")
        if "sensitivity" in k:
            self.enum(k["sensitivity"], SENSITIVITY, f"{p}.sensitivity", "sensitivity")
        if "freshness" in k:
            self.cadence(k["freshness"], f"{p}.freshness", "maxAgeMs")
        if "locator" in k:
            loc = self.obj(k["locator"], frozenset({"type", "description"}), f"{p}.locator", "locator")
            if loc is not None:
                self.enum(loc.get("type"), LOCATOR_TYPES, f"{p}.locator.type", "locator type")
                self.text(loc.get("description"), f"{p}.locator.description", hi=1000)

    def _route(
        self,
        r: Mapping[str, Any],
        p: str,
        actors: set[str],
        knowledge: set[str],
        routes: set[str],
        max_fanout: int | None,
    ) -> None:
        self.closed(r, ROUTE_KEYS, p, "route")
        src = r.get("from")
        if not isinstance(src, str) or src not in actors:
            self.add("unknown-reference", f"{p}.from", "references an undeclared actor", src)
        to = self.refs(r.get("to"), f"{p}.to", actors, "actor", non_empty=True)
        if isinstance(src, str) and src in to:
            self.add("self-route", f"{p}.to", "a route must not lead an actor to itself", src)
        if max_fanout is not None and len(to) > max_fanout:
            self.add(
                "fanout", f"{p}.to", f"{len(to)} recipients exceed limits.maxFanout {max_fanout}", len(to)
            )
        self.enum(r.get("intent"), INTENTS, f"{p}.intent", "intent")
        if "relationship" in r and not (
            isinstance(r["relationship"], str) and RELATIONSHIP_RE.fullmatch(r["relationship"])
        ):
            self.add(
                "relationship", f"{p}.relationship", "must match ^[a-z][a-z0-9._-]{0,63}$", r["relationship"]
            )
        self.enum(r.get("obligation"), OBLIGATIONS, f"{p}.obligation", "obligation")
        if "authority" in r:
            self.enum(r["authority"], AUTHORITIES, f"{p}.authority", "authority")
        self.text(r.get("purpose"), f"{p}.purpose", 10, 2000)
        self.opt_text(r, "success", p, 1, 1000)
        self.refs(r.get("carries"), f"{p}.carries", knowledge, "knowledge module", non_empty=True)
        if "returns" in r:
            self.refs(r["returns"], f"{p}.returns", knowledge, "knowledge module", non_empty=True)
            if not isinstance(r.get("expects"), Mapping):
                self.add(
                    "expects",
                    f"{p}.expects",
                    "a route that declares returns needs expects (the return route)",
                )
        triggers = r.get("triggers")
        if not isinstance(triggers, list) or not triggers:
            self.add("triggers", f"{p}.triggers", "triggers must be a non-empty array", triggers)
        elif len(triggers) > MAX_REFS:
            self.add("too-large", f"{p}.triggers", f"has {len(triggers)} entries (at most {MAX_REFS})")
        else:
            seen: set[bytes] = set()
            for i, t in enumerate(triggers):
                tp = f"{p}.triggers[{i}]"
                self._trigger(t, tp)
                if isinstance(t, Mapping):
                    try:
                        key = jcs(t)
                    except MalformedError:
                        continue
                    if key in seen:
                        self.add("duplicate", tp, "duplicate trigger", t)
                    seen.add(key)
        if "cadence" in r:
            self.cadence(r["cadence"], f"{p}.cadence", "intervalMs")
        if "delivery" in r:
            self.enum(r["delivery"], DELIVERY, f"{p}.delivery", "delivery")
        if "acknowledgement" in r:
            self.enum(r["acknowledgement"], ACKNOWLEDGEMENT, f"{p}.acknowledgement", "acknowledgement")
        self.opt_text(r, "medium", p, 1, 200)
        if "weight" in r:
            w = r["weight"]
            if isinstance(w, bool) or not isinstance(w, int | float) or not 0 <= w <= 1:
                self.add("weight", f"{p}.weight", "weight must be a number between 0 and 1", w)
        if "expects" in r:
            e = self.obj(
                r["expects"], frozenset({"via", "withinMs", "description"}), f"{p}.expects", "expects"
            )
            if e is not None:
                via = e.get("via")
                if not isinstance(via, str) or via not in routes:
                    self.add("unknown-reference", f"{p}.expects.via", "references an undeclared route", via)
                if "withinMs" in e:
                    self.pos_int(e["withinMs"], f"{p}.expects.withinMs")
                self.opt_text(e, "description", f"{p}.expects", 1, 1000)

    def _trigger(self, t: Any, p: str) -> None:
        if not isinstance(t, Mapping):
            self.add("trigger", p, "a trigger must be an object", t)
            return
        kind = t.get("type")
        if kind == "event":
            self.closed(t, frozenset({"type", "events", "description"}), p, "trigger")
            for i, ev in enumerate(self.strings(t.get("events"), f"{p}.events", non_empty=True, max_len=160)):
                if not EVENT_RE.fullmatch(ev):
                    self.add("event-name", f"{p}.events[{i}]", "event must look like area.happened", ev)
        elif kind == "interval":
            self.closed(t, frozenset({"type", "everyMs", "description"}), p, "trigger")
            self.pos_int(t.get("everyMs"), f"{p}.everyMs")
        elif kind == "manual":
            self.closed(t, frozenset({"type", "description"}), p, "trigger")
        else:
            self.add("trigger", f"{p}.type", "trigger type must be event, interval or manual", kind)
        self.opt_text(t, "description", p, 1, 1000)

    def _returns(self, routes: list[tuple[int, Mapping[str, Any]]]) -> None:
        """An expected answer comes back on a declared route from a recipient to the sender,
        carrying every knowledge module the request says it returns."""
        by_id: dict[str, Mapping[str, Any]] = {}
        for _, r in routes:
            if isinstance(r.get("id"), str):
                by_id.setdefault(r["id"], r)
        for i, r in routes:
            e = r.get("expects")
            if not isinstance(e, Mapping) or not isinstance(e.get("via"), str):
                continue
            back = by_id.get(e["via"])
            if back is None:
                continue
            p = f"$.routes[{i}].expects.via"
            to = set(_str_list(r.get("to")))
            back_to = set(_str_list(back.get("to")))
            if not (one_of(back.get("from"), to) and one_of(r.get("from"), back_to)):
                self.add(
                    "return-route",
                    p,
                    "the return route must lead from a recipient back to the sender",
                    e["via"],
                )
            carried = set(_str_list(back.get("carries")))
            for k in _str_list(r.get("returns")):
                if k not in carried:
                    self.add(
                        "return-route", p, f"the return route does not carry returned knowledge {k!r}", k
                    )

    def _mandatory_direction(self, routes: list[tuple[int, Mapping[str, Any]]]) -> None:
        """For one knowledge module and one recipient there is one mandatory director, and
        mandatory direction never loops back (iterative cycle search, bounded work)."""
        owner: dict[tuple[str, str], str] = {}
        edges: dict[str, dict[str, set[str]]] = {}
        work = 0
        for i, r in routes:
            if (
                r.get("intent") != "direct"
                or r.get("obligation") != "must"
                or not isinstance(r.get("from"), str)
            ):
                continue
            src = r["from"]
            carries, to = _str_list(r.get("carries")), _str_list(r.get("to"))
            work += len(carries) * len(to)
            if work > MAX_PAIR_WORK:
                self.add(
                    "too-large", "$.routes", f"mandatory direction needs more than {MAX_PAIR_WORK} checks"
                )
                return
            for k in carries:
                for t in to:
                    prev = owner.setdefault((t, k), src)
                    if prev != src:
                        self.add(
                            "direction-conflict",
                            f"$.routes[{i}]",
                            f"actor {t!r} gets mandatory direction for {k!r} from {prev!r} and {src!r}",
                            k,
                        )
                    edges.setdefault(k, {}).setdefault(src, set()).add(t)
        for k, adj in edges.items():
            if _has_cycle(adj):
                self.add(
                    "direction-cycle",
                    "$.routes",
                    f"mandatory direction for knowledge {k!r} must be acyclic",
                    k,
                )

    def _loop(self, lp: Mapping[str, Any], p: str, actors: set[str], knowledge: set[str]) -> set[str]:
        self.closed(lp, LOOP_KEYS, p, "loop")
        kind = lp.get("kind")
        self.enum(kind, LOOP_KINDS, f"{p}.kind", "loop kind")
        self.text(lp.get("description"), f"{p}.description")
        if kind == "acx-workflow" and not isinstance(lp.get("workflowRef"), Mapping):
            self.add("workflow-ref", f"{p}.workflowRef", "an acx-workflow loop needs a workflowRef")
        if kind != "acx-workflow" and "workflowRef" in lp:
            self.add("workflow-ref", f"{p}.workflowRef", "only an acx-workflow loop carries a workflowRef")
        if "workflowRef" in lp:
            ref = self.obj(
                lp["workflowRef"],
                frozenset({"publisherId", "id", "version", "digest"}),
                f"{p}.workflowRef",
                "workflowRef",
            )
            if ref is not None:
                if "publisherId" in ref and not (
                    isinstance(ref["publisherId"], str) and PUBLISHER_RE.fullmatch(ref["publisherId"])
                ):
                    self.add(
                        "publisher",
                        f"{p}.workflowRef.publisherId",
                        "must be a reverse-DNS publisher",
                        ref["publisherId"],
                    )
                self.ident(ref.get("id"), f"{p}.workflowRef.id")
                if "version" in ref and not (
                    isinstance(ref["version"], str) and SEMVER_RE.fullmatch(ref["version"])
                ):
                    self.add("version", f"{p}.workflowRef.version", "must be SemVer", ref["version"])
                if "digest" in ref and not (
                    isinstance(ref["digest"], str) and DIGEST_RE.fullmatch(ref["digest"])
                ):
                    self.add("digest", f"{p}.workflowRef.digest", "must be sha256:<64 hex>", ref["digest"])
        if "actorBindings" in lp:
            bindings = lp["actorBindings"]
            if not isinstance(bindings, list):
                self.add("shape", f"{p}.actorBindings", "actorBindings must be an array", bindings)
            else:
                bound: Counter[str] = Counter()
                for i, b in enumerate(bindings[:MAX_REFS]):
                    bp = f"{p}.actorBindings[{i}]"
                    bo = self.obj(b, frozenset({"actor", "participants"}), bp, "actor binding")
                    if bo is None:
                        continue
                    if not isinstance(bo.get("actor"), str) or bo["actor"] not in actors:
                        self.add(
                            "unknown-reference",
                            f"{bp}.actor",
                            "references an undeclared actor",
                            bo.get("actor"),
                        )
                    for j, alias in enumerate(
                        self.strings(bo.get("participants"), f"{bp}.participants", non_empty=True)
                    ):
                        bound[alias] += 1
                        if not IDENT_RE.fullmatch(alias):
                            self.add(
                                "identifier", f"{bp}.participants[{j}]", "invalid participant alias", alias
                            )
                for alias, n in sorted(bound.items()):
                    if n > 1:
                        self.add(
                            "binding", f"{p}.actorBindings", "participant bound to more than one actor", alias
                        )
        imports = (
            self.refs(lp["imports"], f"{p}.imports", knowledge, "knowledge module", non_empty=True)
            if "imports" in lp
            else []
        )
        exports = (
            self.refs(lp["exports"], f"{p}.exports", knowledge, "knowledge module", non_empty=True)
            if "exports" in lp
            else []
        )
        if not imports and not exports:
            self.add("loop-knowledge", p, "a loop must import or export at least one knowledge module")
        return set(exports)

    def _deliveries(self, routes: list[tuple[int, Mapping[str, Any]]]) -> dict[str, set[str]]:
        """knowledge id -> the actors some route delivers it to (bounded by the caps)."""
        out: dict[str, set[str]] = {}
        for _, r in routes:
            to = _str_list(r.get("to"))
            for k in _str_list(r.get("carries")):
                out.setdefault(k, set()).update(to)
        return out

    def _convergence(
        self,
        c: Mapping[str, Any],
        p: str,
        actors: set[str],
        knowledge: set[str],
        loops: set[str],
        loop_exports: Mapping[str, set[str]],
        carried_to: Mapping[str, set[str]],
        modules: list[tuple[int, Mapping[str, Any]]],
    ) -> None:
        self.closed(c, CONVERGENCE_KEYS, p, "convergence point")
        self.text(c.get("description"), f"{p}.description")
        steward = c.get("steward")
        if not isinstance(steward, str) or steward not in actors:
            self.add("unknown-reference", f"{p}.steward", "references an undeclared actor", steward)
        inputs = c.get("inputs")
        if not isinstance(inputs, list) or len(inputs) < 2:
            self.add(
                "convergence-inputs",
                f"{p}.inputs",
                "a convergence point needs at least two loop inputs",
                inputs,
            )
            inputs = inputs if isinstance(inputs, list) else []
        input_loops: set[str] = set()
        input_knowledge: set[str] = set()
        for i, inp in enumerate(inputs[:MAX_REFS]):
            ip = f"{p}.inputs[{i}]"
            io = self.obj(inp, frozenset({"loop", "knowledge"}), ip, "convergence input")
            if io is None:
                continue
            loop = io.get("loop")
            if isinstance(loop, str):
                input_loops.add(loop)
            if not isinstance(loop, str) or loop not in loops:
                self.add("unknown-reference", f"{ip}.loop", "references an undeclared loop", loop)
            for j, k in enumerate(
                self.refs(
                    io.get("knowledge"), f"{ip}.knowledge", knowledge, "knowledge module", non_empty=True
                )
            ):
                input_knowledge.add(k)
                if isinstance(loop, str) and loop in loop_exports and k not in loop_exports[loop]:
                    self.add("convergence-input", f"{ip}.knowledge[{j}]", f"not exported by loop {loop!r}", k)
                if isinstance(steward, str) and steward not in carried_to.get(k, ()):
                    self.add(
                        "convergence-input",
                        f"{ip}.knowledge[{j}]",
                        f"no route carries it to the steward {steward!r}",
                        k,
                    )
        if len(input_loops) < 2:
            self.add(
                "convergence-inputs",
                f"{p}.inputs",
                "a convergence point must join at least two distinct loops",
            )
        if "contributors" in c:
            self.refs(c["contributors"], f"{p}.contributors", actors, "actor")
        pol = self.obj(c.get("policy"), frozenset({"mode", "description"}), f"{p}.policy", "policy")
        if pol is not None:
            self.enum(pol.get("mode"), MERGE_MODES, f"{p}.policy.mode", "policy mode")
            self.text(pol.get("description"), f"{p}.policy.description")
        stewards = {
            m["id"]: set(_str_list(m.get("stewards"))) for _, m in modules if isinstance(m.get("id"), str)
        }
        for j, out in enumerate(
            self.refs(c.get("outputs"), f"{p}.outputs", knowledge, "knowledge module", non_empty=True)
        ):
            if out in input_knowledge:
                self.add(
                    "convergence-output",
                    f"{p}.outputs[{j}]",
                    "an output must be synthesized, not an unchanged input",
                    out,
                )
            if out in stewards and isinstance(steward, str) and steward not in stewards[out]:
                self.add(
                    "convergence-output",
                    f"{p}.outputs[{j}]",
                    "the convergence steward must steward each output",
                    out,
                )
        self.text(c.get("trigger"), f"{p}.trigger", 1, 1000)
        self.opt_text(c, "failureMode", p, 1, 1000)
        lim = self.obj(c.get("limits"), frozenset({"maxWaitMs", "maxRounds"}), f"{p}.limits", "limits")
        if lim is not None:
            self.pos_int(lim.get("maxWaitMs"), f"{p}.limits.maxWaitMs")
            self.pos_int(lim.get("maxRounds"), f"{p}.limits.maxRounds")

    def _usage(
        self,
        actors: Sequence[tuple[int, Mapping[str, Any]]],
        knowledge: Sequence[tuple[int, Mapping[str, Any]]],
        routes: Sequence[tuple[int, Mapping[str, Any]]],
        loops: Sequence[tuple[int, Mapping[str, Any]]],
        points: Sequence[tuple[int, Mapping[str, Any]]],
    ) -> None:
        """Every declared actor and knowledge module takes part in the architecture."""
        used_actors: set[Any] = set()
        used_knowledge: set[Any] = set()
        for _, k in knowledge:
            used_actors.update(_str_list(k.get("stewards")), _str_list(k.get("audience")))
        for _, r in routes:
            used_actors.update(_str_list([r.get("from")]))
            used_actors.update(_str_list(r.get("to")))
            used_knowledge.update(_str_list(r.get("carries")), _str_list(r.get("returns")))
        for _, lp in loops:
            b = lp.get("actorBindings")
            for _, x in _records(b):
                used_actors.update(_str_list([x.get("actor")]))
            used_knowledge.update(_str_list(lp.get("imports")), _str_list(lp.get("exports")))
        for _, c in points:
            used_actors.update(_str_list([c.get("steward")]))
            used_actors.update(_str_list(c.get("contributors")))
            for _, inp in _records(c.get("inputs")):
                used_knowledge.update(_str_list(inp.get("knowledge")))
            used_knowledge.update(_str_list(c.get("outputs")))
        for i, a in actors:
            if isinstance(a.get("id"), str) and a["id"] not in used_actors:
                self.add(
                    "isolated",
                    f"$.actors[{i}]",
                    "actor takes no part in the information architecture",
                    a["id"],
                )
        for i, k in knowledge:
            if isinstance(k.get("id"), str) and k["id"] not in used_knowledge:
                self.add(
                    "isolated",
                    f"$.knowledge[{i}]",
                    "knowledge module is never routed, bound to a loop or produced by convergence",
                    k["id"],
                )


def _child(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v for v in value[:MAX_REFS] if isinstance(v, str)]


def _has_cycle(adj: Mapping[str, Iterable[str]]) -> bool:
    """Iterative three-colour DFS over a small adjacency map."""
    state: dict[str, int] = {}
    for root in adj:
        if state.get(root):
            continue
        stack: list[tuple[str, Any]] = [(root, iter(adj.get(root, ())))]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return True
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(adj.get(nxt, ()))))
    return False


def graph_publish_profile(doc: Mapping[str, Any]) -> list[Issue]:
    """The public profile to sign or publish a graph: the workflow profile (SemVer, name,
    description, SPDX, homepage, tags, authors, secret scrub), workflow refs pinned by publisher,
    SemVer and digest, and no private-content or credential-bearing extension keys."""
    out = [i for i in publish_profile(doc, noun="agent graph") if i.rule != "publish-extension-key"]
    for i, lp in _records(doc.get("loops")):
        if lp.get("kind") != "acx-workflow":
            continue
        ref = lp.get("workflowRef") if isinstance(lp.get("workflowRef"), Mapping) else {}
        assert isinstance(ref, Mapping)
        p = f"$.loops[{i}].workflowRef"
        if not (isinstance(ref.get("publisherId"), str) and PUBLISHER_RE.fullmatch(ref["publisherId"])):
            out.append(
                Issue(
                    "publish-workflow-ref",
                    f"{p}.publisherId",
                    "a published graph pins the workflow publisher",
                    ref.get("publisherId"),
                )
            )
        if not (isinstance(ref.get("version"), str) and SEMVER_RE.fullmatch(ref["version"])):
            out.append(
                Issue(
                    "publish-workflow-ref",
                    f"{p}.version",
                    "a published graph pins a SemVer workflow version",
                    ref.get("version"),
                )
            )
        if not (isinstance(ref.get("digest"), str) and DIGEST_RE.fullmatch(ref["digest"])):
            out.append(
                Issue(
                    "publish-workflow-ref",
                    f"{p}.digest",
                    "a published graph pins the workflow digest",
                    ref.get("digest"),
                )
            )
    ext = doc.get("extensions")
    stack: list[tuple[Any, str, int]] = [(ext, "$.extensions", 0)] if isinstance(ext, Mapping) else []
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            out.append(Issue("too-deep", path, f"nesting deeper than {MAX_DEPTH} levels"))
            break
        if isinstance(value, Mapping):
            for k, v in value.items():
                squashed = re.sub(r"[^A-Za-z0-9]", "", str(k)).lower()
                if (
                    squashed in _PRIVATE_EXACT
                    or _PRIVATE_PART.search(squashed)
                    or _PRIVATE_CONTENT.match(squashed)
                ):
                    out.append(
                        Issue(
                            "publish-extension-key",
                            f"{path}.{k}",
                            "extension key names private content or credentials",
                            k,
                        )
                    )
                stack.append((v, f"{path}.{k}", depth + 1))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
    return out


def lint_graph(doc: Any, *, publish: bool = False) -> LintResult:
    """Lint a raw Agent Graph; with `publish` also the public profile and the secret scrub."""
    if not isinstance(doc, Mapping):
        return LintResult(
            (Issue("document", "$", "an agent graph must be a JSON object", type(doc).__name__),), publish
        )
    issues = _GraphLinter(doc).run()
    if publish and not any(i.rule in ("too-deep", "too-large") for i in issues):
        issues.extend(graph_publish_profile(doc))
    return LintResult(tuple(issues), publish)


def graph_digest(doc: Mapping[str, Any]) -> str:
    """The graph digest (JCS of the document without `integrity`), as for workflows."""
    return signed.document_digest(doc)


def _profile_precheck(body: Mapping[str, Any], publisher_id: str | None) -> list[str]:
    """A signed graph must pass the structure and the publish profile (the reference says
    tampered otherwise); lineage is checked against the signed publisher."""
    doc = dict(body)
    if publisher_id is not None:
        doc["integrity"] = {"publisherId": publisher_id}
    result = lint_graph(doc, publish=True)
    return [f"publication profile: {i.text()}" for i in result.errors]


def sign_graph(
    doc: Mapping[str, Any], *, publisher_id: str, key: PrivateKey, now: datetime
) -> dict[str, Any]:
    """A copy of the graph with a fresh `acx.agent-graph-signature/1` integrity block. Refuses a
    non-reverse-DNS publisher, a non-Ed25519 key, bad lineage and anything `lint --publish` rejects."""

    def refusals(body: Mapping[str, Any]) -> list[str]:
        return _profile_precheck(body, publisher_id)

    return signed.sign_document(KIND, doc, publisher_id=publisher_id, key=key, now=now, refusals=refusals)


def verify_graph(doc: Mapping[str, Any], *, registry: TrustRegistry | None, now: datetime) -> SignedVerdict:
    """Verify an Agent Graph: unsigned → warning/unsigned (ok); a profile failure or any failed
    binding → invalid/tampered; a good signature → portable, trusted or tampered (compromised)."""
    return signed.verify_document(KIND, doc, registry=registry, now=now, precheck=_profile_precheck)


def is_graph(doc: Any) -> bool:
    """True for a document that says it is an Agent Graph."""
    return isinstance(doc, Mapping) and doc.get("schemaVersion") == GRAPH_SCHEMA_VERSION


def architecture(doc: Mapping[str, Any]) -> str:
    """One line: how many actors, knowledge modules, routes, loops and convergence points."""
    c = signed.counts(KIND, doc)
    return (
        f"{c['actors']} actor(s), {c['knowledgeModules']} knowledge module(s), {c['routes']} route(s), "
        f"{c['loops']} loop(s), {c['convergencePoints']} convergence point(s)"
    )


def decode_graph(doc: Any, *, where: str = "agent graph") -> AgentGraphDoc:
    """The graph as its model (`acx.agent-graph/1` types, closed objects); InvalidInput naming the
    JSON pointer when it does not decode."""
    try:
        return decode_as(doc, AgentGraphDoc, document=where)
    except DocumentTypeError as exc:
        raise InvalidInput(str(exc), where=where, details={"pointer": exc.pointer},
                           hint="`acx graph lint` names every structural problem") from exc


def inspect_graph(doc: Mapping[str, Any], verdict: SignedVerdict | None = None) -> dict[str, Any]:
    """A summary card: counts, actors, knowledge, route intents, loops and the verdict (the
    document is decoded into its model first)."""
    g = decode_graph(doc)

    def opt(v: str | UnsetType) -> str | None:
        return None if isinstance(v, UnsetType) else v

    view: dict[str, Any] = {
        "schemaVersion": g.schema_version,
        "id": g.id,
        "version": opt(g.version),
        "name": opt(g.name) or g.id,
        "description": opt(g.description) or "",
        "license": opt(g.license),
        "counts": signed.counts(KIND, doc),
        "actors": [{"id": a.id, "kind": a.kind, "name": opt(a.name) or a.id} for a in g.actors],
        "knowledge": [{"id": k.id, "kind": k.kind, "stewards": list(k.stewards)} for k in g.knowledge],
        "routes": [
            {"id": r.id, "from": r.from_, "to": list(r.to), "intent": r.intent, "obligation": r.obligation}
            for r in g.routes
        ],
        "intents": sorted({r.intent for r in g.routes}),
        "loops": [
            {
                "id": lp.id,
                "kind": lp.kind,
                "workflowRef": None if isinstance(lp.workflow_ref, UnsetType)
                else msgspec.to_builtins(lp.workflow_ref),
            }
            for lp in (() if isinstance(g.loops, UnsetType) else g.loops)
        ],
        "convergence": [
            {"id": c.id, "steward": c.steward}
            for c in (() if isinstance(g.convergence, UnsetType) else g.convergence)
        ],
        "digest": graph_digest(doc),
    }
    if verdict is not None:
        view["verification"] = verdict.to_json()
    return view


def load_graph(path: Path) -> dict[str, Any]:
    """Read an `.agent-graph.json` strictly (bounded size, UTF-8, no duplicate keys) and require a
    JSON object that says it is an Agent Graph (anything else is invalid_input naming what it is)."""
    data = read_bytes(path, "agent graph", limit=MAX_GRAPH_BYTES)
    try:
        doc = loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc
    if not isinstance(doc, dict):
        found_type = type(doc).__name__
        raise InvalidInput(f"$: an agent graph is a JSON object, found a {found_type}", where=str(path))
    if not is_graph(doc):
        found = doc.get("schemaVersion")
        shown = (
            found[:80] if isinstance(found, str) else type(found).__name__ if found is not None else "none"
        )
        raise InvalidInput(
            f"not an agent graph: $.schemaVersion is {shown!r}, expected {GRAPH_SCHEMA_VERSION!r}",
            where=str(path),
        )
    return doc


def default_signed_graph_name(source: Path) -> Path:
    """`<name>.signed.agent-graph.json` next to the input."""
    name = source.name
    for suffix in (GRAPH_SUFFIX, ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    name = name.removesuffix(".signed")
    return source.with_name(f"{name}.signed{GRAPH_SUFFIX}")
