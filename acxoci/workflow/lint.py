"""Workflow lint: every structural and graph rule of `acx.cal/1`, plus the `--publish` profile
and the secret scrub. Each issue names a rule id, a JSON path and the offending value.

Runs in time linear in nodes + edges: one pass per collection, adjacency lists, iterative
BFS/DFS (no recursion, so a 100,000-node chain is fine).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from acxoci.workflow import calschema, conditions
from acxoci.workflow.issues import ABSENT, Issue, IssueCollector, one_of
from acxoci.workflow.lineage import check_lineage
from acxoci.workflow.model import (
    APPROVALS,
    CAL_SCHEMA_VERSION,
    CAREER_TIERS,
    COMPLETION_TYPES,
    DIGEST_RE,
    EVENT_KINDS,
    GATEWAY_KINDS,
    IDENT_RE,
    LIMIT_KEYS,
    NODE_TYPES,
    RAC_CHECK_TYPES,
    RAC_KINDS,
    SEMVER_RE,
    SIDE_EFFECTS,
    TERMINAL_EVENTS,
    TOP_LEVEL_KEYS,
    VARIABLE_TYPES,
)

# Closed key sets from schemas/acx.cal-1.schema.json (calschema): the lint keeps its own rule
# ids and paths, the schema is the one list of what may appear where.
PARTICIPANT_KEYS = calschema.PARTICIPANT_KEYS
SLOT_KEYS = calschema.SLOT_KEYS
MIN_LEVEL_KEYS = calschema.MIN_LEVEL_KEYS
SLOT_CAP_KEYS = calschema.SLOT_CAP_KEYS
RAC_KEYS = calschema.RAC_KEYS
RAC_CHECK_KEYS = calschema.RAC_CHECK_KEYS
VARIABLE_KEYS = calschema.VARIABLE_KEYS
EDGE_KEYS = calschema.EDGE_KEYS
REQUIRES_KEYS = calschema.REQUIRES_KEYS
NODE_KEYS = calschema.NODE_KEYS
COMPLETION_FIELDS: dict[str, tuple[str, ...]] = calschema.COMPLETION_FIELDS
AUTHOR_KEYS = calschema.AUTHOR_KEYS
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")
FORBIDDEN_EXTENSION_WORDS = (
    "credential",
    "password",
    "passwd",
    "secret",
    "apikey",
    "accesstoken",
    "authtoken",
    "refreshtoken",
    "privatekey",
    "payload",
    "transcript",
    "taskcontent",
)


@dataclass(frozen=True)
class LintResult:
    """Issues of one lint run; `ok` when there is no error-severity issue."""

    issues: tuple[Issue, ...]
    publish: bool

    @property
    def ok(self) -> bool:
        """True when no error was found."""
        return not any(i.severity == "error" for i in self.issues)

    @property
    def errors(self) -> tuple[Issue, ...]:
        """Only the error-severity issues."""
        return tuple(i for i in self.issues if i.severity == "error")

    def rules(self) -> set[str]:
        """The set of rule ids that fired."""
        return {i.rule for i in self.issues}

    def to_json(self) -> dict[str, Any]:
        """JSON form for `--json`."""
        return {"ok": self.ok, "publish": self.publish, "issues": [i.to_json() for i in self.issues]}


class _Linter(IssueCollector):
    """One lint run over a raw document (kept private; use `lint()`)."""

    def ident(self, value: Any, path: str, what: str) -> str | None:
        """The value when it is a valid identifier, else None (and an issue)."""
        if not isinstance(value, str) or not IDENT_RE.fullmatch(value):
            self.add("identifier", path, f"{what} must match ^[a-z][a-z0-9._-]{{0,127}}$", value)
            return None
        return value

    def string_array(self, value: Any, path: str, *, non_empty: bool = False) -> list[str]:
        """Check an array of non-empty unique strings; returns the good strings."""
        if not isinstance(value, list):
            self.add("string-array", path, "must be an array of strings", value)
            return []
        if non_empty and not value:
            self.add("string-array", path, "must not be empty", value)
        seen: set[str] = set()
        out: list[str] = []
        for i, v in enumerate(value):
            if not isinstance(v, str) or not v.strip():
                self.add("string-array", f"{path}[{i}]", "must be a non-empty string", v)
                continue
            if v in seen:
                self.add("string-array", f"{path}[{i}]", "duplicate value", v)
                continue
            seen.add(v)
            out.append(v)
        return out

    def positive_int(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    # --- document ----------------------------------------------------------------------------

    def run(self) -> list[Issue]:
        d = self.doc
        for k in d:
            if k not in TOP_LEVEL_KEYS:
                self.add("unknown-property", f"$.{k}", "workflow contains an unknown top-level property", k)
        if d.get("schemaVersion") != CAL_SCHEMA_VERSION:
            self.add(
                "schema-version",
                "$.schemaVersion",
                f"schemaVersion must be {CAL_SCHEMA_VERSION}",
                d.get("schemaVersion"),
            )
        if not isinstance(d.get("id"), str) or not IDENT_RE.fullmatch(d["id"]):
            self.add("workflow-id", "$.id", "workflow id must match ^[a-z][a-z0-9._-]{0,127}$", d.get("id"))
        self.extensions(d.get("extensions", ABSENT))
        aliases = self.participants(d.get("participants", ABSENT))
        rac_ids = self.rac(d.get("rac", ABSENT))
        variables = self.variables(d.get("variables", ABSENT))
        max_steps = self.limits(d.get("limits", ABSENT))
        nodes = self.nodes(d.get("nodes"), aliases, rac_ids)
        edges = self.edges(d.get("edges"), nodes, variables, rac_ids)
        start = d.get("start")
        start_ok = isinstance(start, str) and start in nodes
        if not start_ok:
            self.add("start", "$.start", "start must name an existing node", start)
        self.graph(nodes, edges, start if start_ok else None, max_steps)
        integrity = d.get("integrity")
        publisher = integrity.get("publisherId") if isinstance(integrity, dict) else None
        self.issues.extend(
            check_lineage(
                d.get("lineage", ABSENT),
                artifact_type="workflow",
                publisher_id=publisher if isinstance(publisher, str) else None,
                artifact_id=d.get("id"),
                version=d.get("version"),
            )
        )
        return self.issues

    def keyed_items(
        self,
        value: Any,
        *,
        field: str,
        array_rule: str,
        item_rule: str,
        noun: str,
        keys: frozenset[str],
        id_key: str,
        id_noun: str,
        dup_rule: str,
        ids: set[str],
        optional: bool,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield `(path, item)` for each object in the array at `$.field` after the checks every
        keyed list shares: array shape, object items, closed keys, identifier syntax and
        uniqueness (identifiers are collected into `ids`)."""
        if value is ABSENT and optional:
            return
        if not isinstance(value, list):
            self.add(array_rule, f"$.{field}", f"{field} must be an array", value)
            return
        for i, item in enumerate(value):
            path = f"$.{field}[{i}]"
            if not isinstance(item, dict):
                self.add(item_rule, path, f"a {noun} must be an object", item)
                continue
            self.closed(item, keys, path, noun)
            ident = self.ident(item.get(id_key), f"{path}.{id_key}", id_noun)
            if ident is not None:
                if ident in ids:
                    self.add(dup_rule, f"{path}.{id_key}", f"duplicate {id_noun}", ident)
                ids.add(ident)
            yield path, item

    def participants(self, value: Any) -> set[str]:
        aliases: set[str] = set()
        for path, p in self.keyed_items(
            value, field="participants", array_rule="participants", item_rule="participant",
            noun="participant", keys=PARTICIPANT_KEYS, id_key="alias", id_noun="participant alias",
            dup_rule="duplicate-alias", ids=aliases, optional=False,
        ):
            if "required" in p and not isinstance(p["required"], bool):
                self.add("participant", f"{path}.required", "required must be a boolean", p["required"])
            bind = p.get("bind")
            if bind == "hash":
                if not isinstance(p.get("romDigest"), str) or not DIGEST_RE.fullmatch(p["romDigest"]):
                    self.add(
                        "participant-hash",
                        f"{path}.romDigest",
                        "bind=hash needs romDigest sha256:<64 lowercase hex>",
                        p.get("romDigest"),
                    )
                if "slot" in p:
                    self.add(
                        "participant-hash",
                        f"{path}.slot",
                        "bind=hash must not carry slot constraints",
                        p["slot"],
                    )
                if "cartridgeId" in p and not isinstance(p["cartridgeId"], str):
                    self.add(
                        "participant", f"{path}.cartridgeId", "cartridgeId must be a string", p["cartridgeId"]
                    )
            elif bind == "slot":
                if "romDigest" in p:
                    self.add(
                        "participant-slot",
                        f"{path}.romDigest",
                        "bind=slot must not carry romDigest",
                        p["romDigest"],
                    )
                if not isinstance(p.get("slot"), dict):
                    self.add(
                        "participant-slot", f"{path}.slot", "bind=slot needs a slot object", p.get("slot")
                    )
                else:
                    self.slot(p["slot"], f"{path}.slot")
            else:
                self.add("participant-bind", f"{path}.bind", "bind must be 'hash' or 'slot'", bind)
        return aliases

    def slot(self, slot: Mapping[str, Any], path: str) -> None:
        self.closed(slot, SLOT_KEYS, path, "slot")
        if not any(k in slot for k in ("role", "minLevel", "capabilities")):
            self.add("slot-empty", path, "slot must constrain role, minLevel or capabilities", dict(slot))
        if "role" in slot and (not isinstance(slot["role"], str) or not slot["role"]):
            self.add("slot-role", f"{path}.role", "role must be a non-empty string", slot["role"])
        if "minLevel" in slot:
            ml = slot["minLevel"]
            mp = f"{path}.minLevel"
            if not isinstance(ml, dict):
                self.add("min-level", mp, "minLevel must be an object", ml)
            else:
                self.closed(ml, MIN_LEVEL_KEYS, mp, "minLevel")
                if "careerTier" not in ml and "acxLevel" not in ml:
                    self.add("min-level", mp, "minLevel must constrain careerTier or acxLevel", dict(ml))
                if "acxLevel" in ml and not (
                    isinstance(ml["acxLevel"], int)
                    and not isinstance(ml["acxLevel"], bool)
                    and ml["acxLevel"] >= 0
                ):
                    self.add(
                        "min-level",
                        f"{mp}.acxLevel",
                        "acxLevel must be a non-negative integer",
                        ml["acxLevel"],
                    )
                if "careerTier" in ml and not one_of(ml["careerTier"], CAREER_TIERS):
                    self.add(
                        "career-tier",
                        f"{mp}.careerTier",
                        f"careerTier must be one of {', '.join(CAREER_TIERS)}",
                        ml["careerTier"],
                    )
        if "capabilities" in slot:
            caps = slot["capabilities"]
            if not isinstance(caps, list):
                self.add("slot-capability", f"{path}.capabilities", "capabilities must be an array", caps)
                return
            for i, c in enumerate(caps):
                cp = f"{path}.capabilities[{i}]"
                if not isinstance(c, dict):
                    self.add("slot-capability", cp, "a slot capability must be an object", c)
                    continue
                self.closed(c, SLOT_CAP_KEYS, cp, "slot capability")
                if not isinstance(c.get("taskType"), str) or not c["taskType"]:
                    self.add(
                        "slot-capability",
                        f"{cp}.taskType",
                        "slot capability needs a taskType",
                        c.get("taskType"),
                    )
                if "stack" in c:
                    self.string_array(c["stack"], f"{cp}.stack")

    def rac(self, value: Any) -> set[str]:
        ids: set[str] = set()
        for path, r in self.keyed_items(
            value, field="rac", array_rule="rac", item_rule="rac", noun="RAC item", keys=RAC_KEYS,
            id_key="id", id_noun="RAC id", dup_rule="duplicate-rac", ids=ids, optional=True,
        ):
            if "content" in r:
                self.add(
                    "rac-content",
                    f"{path}.content",
                    "a RAC item must not carry content; it is a description only",
                    r["content"],
                )
            if not one_of(r.get("kind"), RAC_KINDS):
                self.add(
                    "rac-kind",
                    f"{path}.kind",
                    f"kind must be one of {', '.join(sorted(RAC_KINDS))}",
                    r.get("kind"),
                )
            desc = r.get("description")
            if not isinstance(desc, str) or not 1 <= len(desc) <= 2000:
                self.add(
                    "rac-description", f"{path}.description", "needs a 1-2000 character description", desc
                )
            if "required" in r and not isinstance(r["required"], bool):
                self.add("rac", f"{path}.required", "required must be a boolean", r["required"])
            if "check" in r:
                chk = r["check"]
                if not isinstance(chk, dict):
                    self.add("rac-check", f"{path}.check", "check must be an object", chk)
                else:
                    self.closed(chk, RAC_CHECK_KEYS, f"{path}.check", "RAC check")
                    if not one_of(chk.get("type"), RAC_CHECK_TYPES):
                        self.add(
                            "rac-check",
                            f"{path}.check.type",
                            f"check type must be one of {', '.join(sorted(RAC_CHECK_TYPES))}",
                            chk.get("type"),
                        )
                    if "hint" in chk and not isinstance(chk["hint"], str):
                        self.add("rac-check", f"{path}.check.hint", "hint must be a string", chk["hint"])
            if "okf" in r and not isinstance(r["okf"], dict):
                self.add("rac", f"{path}.okf", "okf must be an object", r["okf"])
        return ids

    def variables(self, value: Any) -> set[str]:
        names: set[str] = set()
        for path, v in self.keyed_items(
            value, field="variables", array_rule="variables", item_rule="variables", noun="variable",
            keys=VARIABLE_KEYS, id_key="name", id_noun="variable name", dup_rule="duplicate-variable",
            ids=names, optional=True,
        ):
            if not one_of(v.get("type"), VARIABLE_TYPES):
                self.add(
                    "variable-type",
                    f"{path}.type",
                    f"type must be one of {', '.join(sorted(VARIABLE_TYPES))}",
                    v.get("type"),
                )
        return names

    def limits(self, value: Any) -> int | None:
        if value is ABSENT:
            return None
        if not isinstance(value, dict):
            self.add("limits", "$.limits", "limits must be an object", value)
            return None
        self.closed(value, frozenset(LIMIT_KEYS), "$.limits", "limits")
        for k in LIMIT_KEYS:
            if k in value and not self.positive_int(value[k]):
                self.add("limits", f"$.limits.{k}", "must be a positive integer", value[k])
        ms = value.get("maxSteps")
        return ms if self.positive_int(ms) else None

    def nodes(self, value: Any, aliases: set[str], rac_ids: set[str]) -> dict[str, tuple[int, str]]:
        """Returns id -> (index, kind) where kind is task|gateway|start|end|stop|handoff|timer|?."""
        out: dict[str, tuple[int, str]] = {}
        if not isinstance(value, list) or not value:
            self.add("nodes", "$.nodes", "nodes must be a non-empty array", value)
            return out
        for i, n in enumerate(value):
            path = f"$.nodes[{i}]"
            if not isinstance(n, dict):
                self.add("node", path, "a node must be an object", n)
                continue
            nid = self.ident(n.get("id"), f"{path}.id", "node id")
            if nid is None:
                continue
            ntype = n.get("type")
            kind = "?"
            if not one_of(ntype, NODE_TYPES):
                self.add("node-type", f"{path}.type", "type must be task, gateway or event", ntype)
            else:
                self.closed(n, NODE_KEYS[ntype], path, f"{ntype} node")
                if ntype == "task":
                    kind = "task"
                    self.task(n, path, aliases, rac_ids)
                elif ntype == "gateway":
                    kind = "gateway"
                    if not one_of(n.get("gateway"), GATEWAY_KINDS):
                        self.add(
                            "gateway-kind",
                            f"{path}.gateway",
                            f"gateway must be one of {', '.join(sorted(GATEWAY_KINDS))}",
                            n.get("gateway"),
                        )
                else:
                    ev = n.get("event")
                    if not one_of(ev, EVENT_KINDS):
                        self.add(
                            "event-kind",
                            f"{path}.event",
                            f"event must be one of {', '.join(sorted(EVENT_KINDS))}",
                            ev,
                        )
                    else:
                        kind = ev
                    if ev == "timer" and not self.positive_int(n.get("afterMs")):
                        self.add(
                            "timer-after",
                            f"{path}.afterMs",
                            "a timer event needs a positive afterMs",
                            n.get("afterMs"),
                        )
                    elif "afterMs" in n and not self.positive_int(n["afterMs"]):
                        self.add(
                            "timer-after",
                            f"{path}.afterMs",
                            "afterMs must be a positive integer",
                            n["afterMs"],
                        )
            if nid in out:
                self.add("duplicate-node", f"{path}.id", "duplicate node id", nid)
                continue
            out[nid] = (i, kind)
        return out

    def task(self, n: Mapping[str, Any], path: str, aliases: set[str], rac_ids: set[str]) -> None:
        nid = n.get("id")
        agent = n.get("agent")
        if not isinstance(agent, str) or agent not in aliases:
            self.add(
                "unknown-agent",
                f"{path}.agent",
                f"task {nid} names an agent alias that is not a participant",
                agent,
            )
        if "action" in n and not isinstance(n["action"], str):
            self.add("task", f"{path}.action", "action must be a string", n["action"])
        req = n.get("requires", ABSENT)
        if req is not ABSENT:
            if not isinstance(req, dict):
                self.add("requires", f"{path}.requires", "requires must be an object", req)
            else:
                self.closed(req, REQUIRES_KEYS, f"{path}.requires", "requires")
                for k in ("skills", "capabilities"):
                    if k in req:
                        self.string_array(req[k], f"{path}.requires.{k}")
                if "rac" in req:
                    for j, r in enumerate(self.string_array(req["rac"], f"{path}.requires.rac")):
                        if r not in rac_ids:
                            self.add(
                                "unknown-rac",
                                f"{path}.requires.rac[{j}]",
                                f"task {nid} requires a RAC id that is not declared",
                                r,
                            )
        comp = n.get("completion")
        cp = f"{path}.completion"
        if comp is None:
            self.add("completion-missing", cp, f"task {nid} has no completion condition", None)
        elif not isinstance(comp, dict) or not one_of(comp.get("type"), COMPLETION_TYPES):
            self.add(
                "completion-type",
                f"{cp}.type",
                f"completion type must be one of {', '.join(sorted(COMPLETION_TYPES))}",
                comp.get("type") if isinstance(comp, dict) else comp,
            )
        else:
            ctype = comp["type"]
            fields = COMPLETION_FIELDS[ctype]
            self.closed(comp, frozenset(("type", *fields)), cp, f"{ctype} completion")
            if ctype in ("skill-scripts", "verification"):
                key = fields[0]
                if key not in comp:
                    self.add(
                        "completion-field", f"{cp}.{key}", f"{ctype} completion needs non-empty {key}", None
                    )
                else:
                    self.string_array(comp[key], f"{cp}.{key}", non_empty=True)
            for key in fields:
                if key in ("scripts", "commands"):
                    continue
                v = comp.get(key)
                if not isinstance(v, str) or not v.strip():
                    self.add("completion-field", f"{cp}.{key}", f"{ctype} completion needs {key}", v)
        if "sideEffects" in n and not one_of(n["sideEffects"], SIDE_EFFECTS):
            self.add(
                "task-side-effects",
                f"{path}.sideEffects",
                f"sideEffects must be one of {', '.join(sorted(SIDE_EFFECTS))}",
                n["sideEffects"],
            )
        if "approval" in n and not one_of(n["approval"], APPROVALS):
            self.add(
                "task-approval",
                f"{path}.approval",
                f"approval must be one of {', '.join(sorted(APPROVALS))}",
                n["approval"],
            )
        if "budget" in n and not isinstance(n["budget"], dict):
            self.add("task", f"{path}.budget", "budget must be an object", n["budget"])
        if "guardrails" in n:
            self.string_array(n["guardrails"], f"{path}.guardrails")

    def edges(
        self, value: Any, nodes: Mapping[str, tuple[int, str]], variables: set[str], rac_ids: set[str]
    ) -> list[tuple[str, str, bool]]:
        """Returns the usable edges as (from, to, conditional)."""
        out: list[tuple[str, str, bool]] = []
        if not isinstance(value, list):
            self.add("edges", "$.edges", "edges must be an array", value)
            return out
        seen: set[tuple[str, str, str]] = set()
        for i, e in enumerate(value):
            path = f"$.edges[{i}]"
            if not isinstance(e, dict):
                self.add("edge", path, "an edge must be an object", e)
                continue
            self.closed(e, EDGE_KEYS, path, "edge")
            src, dst = e.get("from"), e.get("to")
            ok = True
            if not isinstance(src, str) or src not in nodes:
                self.add(
                    "edge-unknown-node", f"{path}.from", "edge starts at a node that does not exist", src
                )
                ok = False
            if not isinstance(dst, str) or dst not in nodes:
                self.add("edge-unknown-node", f"{path}.to", "edge ends at a node that does not exist", dst)
                ok = False
            when = e.get("when")
            if "when" in e:
                self.issues.extend(conditions.check(when, f"{path}.when", variables, rac_ids))
            if not ok:
                continue
            assert isinstance(src, str) and isinstance(dst, str)
            key = (src, dst, json.dumps(when, sort_keys=True, ensure_ascii=False) if "when" in e else "")
            if key in seen:
                self.add(
                    "duplicate-edge", path, "duplicate edge (same from, to and condition)", f"{src} → {dst}"
                )
                continue
            seen.add(key)
            conditional = isinstance(when, dict) and "always" not in when
            out.append((src, dst, conditional))
        return out

    # --- graph -------------------------------------------------------------------------------

    def graph(
        self,
        nodes: Mapping[str, tuple[int, str]],
        edges: list[tuple[str, str, bool]],
        start: str | None,
        max_steps: int | None,
    ) -> None:
        if not nodes:
            return
        ids = list(nodes)
        where = list(nodes.values())
        index = dict(zip(ids, range(len(ids)), strict=True))
        kinds = [w[1] for w in where]

        def npath(k: int) -> str:  # built only for an issue
            return f"$.nodes[{where[k][0]}]"

        # Adjacency as flat arrays (head/next edge lists per node), not one list per node: the
        # per-node lists cost fresh memory for every node and made big graphs superlinear.
        n = len(ids)
        adj = _Adjacency(n, len(edges))
        outdeg = [0] * n
        unconditional_out = [0] * n
        for e, (src, dst, conditional) in enumerate(edges):
            a = index[src]
            adj.add(e, a, index[dst])
            outdeg[a] += 1
            if not conditional:
                unconditional_out[a] += 1
        starts = [k for k, kind in enumerate(kinds) if kind == "start"]
        if len(starts) > 1:
            self.add(
                "start-event",
                npath(starts[1]),
                "workflow may contain at most one start event",
                [ids[k] for k in starts],
            )
        for k in starts:
            if ids[k] != start and start is not None:
                self.add("start-event", npath(k), "a start event must be the workflow's start node", ids[k])
        terminals = [k for k, kind in enumerate(kinds) if kind in TERMINAL_EVENTS]
        if not terminals:
            self.add("no-terminal", "$.nodes", "workflow needs at least one end or stop event", None)
        for k, kind in enumerate(kinds):
            if kind in TERMINAL_EVENTS:
                if outdeg[k]:
                    self.add(
                        "terminal-outgoing", npath(k), "a terminal event must not have outgoing edges", ids[k]
                    )
            elif not outdeg[k]:
                self.add("dead-end", npath(k), "a non-terminal node needs an outgoing edge", ids[k])
            elif kind != "gateway" and outdeg[k] > 1 and unconditional_out[k]:
                self.add(
                    "unconditional-branch",
                    npath(k),
                    "a non-gateway node with several outgoing edges needs a condition on every branch",
                    ids[k],
                )
        if start is None:
            return
        s = index[start]
        reach = [False] * len(ids)
        reach[s] = True
        queue: deque[int] = deque([s])
        head, nxt, dst_of = adj.head, adj.next, adj.dst
        while queue:
            a = queue.popleft()
            e = head[a]
            while e >= 0:
                b = dst_of[e]
                if not reach[b]:
                    reach[b] = True
                    queue.append(b)
                e = nxt[e]
        to_end = [False] * len(ids)
        for t in terminals:
            to_end[t] = True
        queue = deque(terminals)
        rhead, rnxt, src_of = adj.rhead, adj.rnext, adj.src
        while queue:
            b = queue.popleft()
            e = rhead[b]
            while e >= 0:
                a = src_of[e]
                if not to_end[a]:
                    to_end[a] = True
                    queue.append(a)
                e = rnxt[e]
        for k in range(len(ids)):
            if not reach[k]:
                self.add("unreachable", npath(k), "node is unreachable from start", ids[k])
            elif terminals and not to_end[k]:
                self.add("no-path-to-end", npath(k), "node has no path to an end or stop event", ids[k])
        if max_steps is None and _has_cycle(adj, s):
            self.add(
                "cycle-needs-max-steps",
                "$.limits.maxSteps",
                "a cyclic workflow needs a positive limits.maxSteps to guarantee termination",
                None,
            )


class _Adjacency:
    """Edges as flat int arrays: `head[a]`/`next[e]` chain node a's outgoing edges, `rhead`/`rnext`
    its incoming ones; `src[e]`/`dst[e]` are the edge's ends. -1 ends a chain."""

    def __init__(self, nodes: int, edges: int) -> None:
        self.head = [-1] * nodes
        self.rhead = [-1] * nodes
        self.next = [-1] * edges
        self.rnext = [-1] * edges
        self.src = [0] * edges
        self.dst = [0] * edges

    def add(self, e: int, a: int, b: int) -> None:
        """Record edge number `e` from node a to node b."""
        self.src[e] = a
        self.dst[e] = b
        self.next[e] = self.head[a]
        self.head[a] = e
        self.rnext[e] = self.rhead[b]
        self.rhead[b] = e


def _has_cycle(adj: _Adjacency, start: int) -> bool:
    """Iterative three-colour DFS from `start`: True when a back edge exists."""
    head, nxt, dst = adj.head, adj.next, adj.dst
    color = [0] * len(head)  # 0 white, 1 on stack, 2 done
    stack: list[tuple[int, int]] = [(start, head[start])]  # (node, next edge to follow)
    color[start] = 1
    while stack:
        node, e = stack[-1]
        if e >= 0:
            stack[-1] = (node, nxt[e])
            b = dst[e]
            if color[b] == 1:
                return True
            if color[b] == 0:
                color[b] = 1
                stack.append((b, head[b]))
        else:
            color[node] = 2
            stack.pop()
    return False


# --- publish profile + secret scrub -----------------------------------------------------------


def _spdx_ok(expr: str) -> bool:
    """Syntax of an SPDX license expression: ids, AND/OR/WITH, parentheses (WITH after an id)."""
    if not expr or len(expr) > 100:
        return False
    tokens = re.findall(r"\(|\)|[^\s()]+", expr)
    pos = 0

    def is_id(t: str) -> bool:
        return bool(
            re.fullmatch(
                r"[A-Za-z0-9][A-Za-z0-9.-]*\+?|(?:DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-"
                r"[A-Za-z0-9.-]+",
                t,
            )
        ) and t not in ("AND", "OR", "WITH")

    # expr := term ((AND|OR) term)* ; term := '(' expr ')' | id [WITH id]   (iterative with a depth stack)
    depth = 0
    expect_term = True
    while pos < len(tokens):
        t = tokens[pos]
        if expect_term:
            if t == "(":
                depth += 1
                pos += 1
                continue
            if not is_id(t):
                return False
            pos += 1
            if pos < len(tokens) and tokens[pos] == "WITH":
                if pos + 1 >= len(tokens) or not is_id(tokens[pos + 1]):
                    return False
                pos += 2
            expect_term = False
        else:
            if t == ")":
                depth -= 1
                if depth < 0:
                    return False
                pos += 1
                continue
            if t not in ("AND", "OR"):
                return False
            pos += 1
            expect_term = True
    return not expect_term and depth == 0


# (rule, literal anchors that any match must contain, pattern). The anchors are a cheap
# prefilter: a pattern is only run when one of its anchors occurs in the text at all.
_SECRET_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    ("pem-private-key", ("PRIVATE KEY",), re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")),
    (
        "aws-access-key",
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ),
    ("slack-token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("jwt", ("eyJ",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("uri-credentials", ("@",), re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@")),
)
_ASSIGNMENT_WORDS = (
    "password",
    "passwd",
    "pwd",
    "secret",
    "api_key",
    "api-key",
    "apikey",
    "access_token",
    "access-token",
    "accesstoken",
    "auth_token",
    "auth-token",
    "authtoken",
)
_ASSIGNMENT = re.compile(
    r"(?i)\b(?:password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|access[_-]?token|auth[_-]?token)"
    r"[ \t]*[:=][ \t]*['\"]?[^\s'\"]{6,}"
)
_HOME_ANCHORS = ("/home/", "/Users/", ":\\Users\\", "~/")
_HOME_PATH = re.compile(r"(?:/home/|/Users/)[A-Za-z0-9._-]+|\b[A-Za-z]:\\Users\\[^\\\s]+|(?<![\w.])~/[\w.-]")
# Public identifiers that look random but are not secrets: algorithm-prefixed digests and keyids.
_DIGEST_ANCHORS = ("sha256:", "sha384:", "sha512:", "ed25519:")
_DIGEST_TOKEN = re.compile(r"\b(?:sha256|sha384|sha512|ed25519):[0-9a-f]{32,128}\b")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{24,}")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_SEPARATORS = re.compile(r"[-_]")


def _entropy(s: str) -> float:
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _high_entropy(token: str) -> bool:
    if len(token) >= 32 and _HEX.fullmatch(token):
        return True
    body = token.rstrip("=")
    if len(body) < 24 or not any(c.isdigit() for c in body) or not any(c.isalpha() for c in body):
        return False
    # Hyphenated words and UUIDs are identifiers: a key-like token has a long separator-free run.
    if max(len(run) for run in _SEPARATORS.split(body)) < 13:
        return False
    return _entropy(body) >= 4.0


class _StringIndex:
    """Every public string (outside `integrity`) in document order, joined into one `blob`.
    The scan keeps only the strings; where each one sits (for a JSON path) is worked out by a
    second walk in the same order, and only when a path is asked for (a scrub hit)."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self._root = {k: v for k, v in doc.items() if k != "integrity"}
        strings: list[str] = []
        append = strings.append
        stack: list[Any] = [self._root]
        pop, push = stack.pop, stack.append
        while stack:
            obj = pop()
            for v in obj.values() if type(obj) is dict else obj:
                t = type(v)
                if t is str:
                    append(v)
                elif t is dict or t is list:
                    push(v)
        self.strings = strings
        self.blob = "\n".join(strings)
        self._located: tuple[list[int], list[int], list[str | int], list[tuple[int, str | int]]] | None = None

    def _locate(self) -> tuple[list[int], list[int], list[str | int], list[tuple[int, str | int]]]:
        """(blob offset, owner container, key) per string and the (parent, key) containers; the walk
        visits strings in exactly the order of `__init__`."""
        if self._located is not None:
            return self._located
        owner: list[int] = []  # per string: index into `containers`
        keys: list[str | int] = []  # per string: key or index inside its owner
        containers: list[tuple[int, str | int]] = [(-1, "")]  # (parent, key); 0 is the root
        stack: list[tuple[Any, int]] = [(self._root, 0)]
        pop = stack.pop
        while stack:
            obj, cidx = pop()
            items = obj.items() if type(obj) is dict else enumerate(obj)
            for k, v in items:
                t = type(v)
                if t is str:
                    owner.append(cidx)
                    keys.append(k)
                elif t is dict or t is list:
                    containers.append((cidx, k))
                    stack.append((v, len(containers) - 1))
        offsets: list[int] = []
        pos = 0
        for text in self.strings:
            offsets.append(pos)
            pos += len(text) + 1
        self._located = (offsets, owner, keys, containers)
        return self._located

    @staticmethod
    def _step(key: str | int) -> str:
        return f"[{key}]" if isinstance(key, int) else f".{key}"

    def path_at(self, offset: int) -> str:
        """The JSON path of the string that contains blob offset `offset`."""
        offsets, owner, keys, containers = self._locate()
        i = bisect.bisect_right(offsets, offset) - 1
        parts = [self._step(keys[i])]
        c = owner[i]
        while c > 0:
            parent, key = containers[c]
            parts.append(self._step(key))
            c = parent
        return "$" + "".join(reversed(parts))


def scrub(doc: Mapping[str, Any]) -> list[Issue]:
    """The secret scrub: secret-like or home-path strings in public metadata. Algorithm-prefixed
    digests (`sha256:<hex>`) and keyids are public identifiers and never flagged."""
    index = _StringIndex(doc)
    blob = index.blob
    issues: list[Issue] = []
    flagged: set[tuple[str, str]] = set()

    def hit(rule: str, start: int, matched: str, message: str, issue_rule: str) -> None:
        path = index.path_at(start)
        if (rule, path) in flagged:
            return
        flagged.add((rule, path))
        shown = matched if len(matched) <= 12 else matched[:6] + "…" + matched[-2:]
        issues.append(Issue(issue_rule, path, message.format(rule=rule), shown))

    secret_msg = "public metadata looks like a secret ({rule})"
    for rule, anchors, pattern in _SECRET_PATTERNS:
        if any(a in blob for a in anchors):
            for m in pattern.finditer(blob):
                hit(rule, m.start(), m.group(0), secret_msg, "secret")
    lowered = blob.lower()
    if any(w in lowered for w in _ASSIGNMENT_WORDS):
        for m in _ASSIGNMENT.finditer(blob):
            hit("secret-assignment", m.start(), m.group(0), secret_msg, "secret")
    masked = blob
    if any(a in blob for a in _DIGEST_ANCHORS):
        masked = _DIGEST_TOKEN.sub(lambda m: " " * len(m.group(0)), blob)
    for m in _TOKEN.finditer(masked):
        if _high_entropy(m.group(0)):
            hit("high-entropy", m.start(), m.group(0), secret_msg, "secret")
    if any(a in blob for a in _HOME_ANCHORS):
        for m in _HOME_PATH.finditer(blob):
            hit("home-path", m.start(), m.group(0), "public metadata exposes a local home path", "home-path")
    return issues


def publish_profile(doc: Mapping[str, Any], *, noun: str = "workflow") -> list[Issue]:
    """The public profile required to publish or sign: SemVer, name, description, SPDX license,
    homepage, tags, authors, clean extension keys, and the secret scrub. `noun` names the kind
    of document in the messages (Agent Graphs share the profile)."""
    out: list[Issue] = []
    v = doc.get("version")
    if not isinstance(v, str) or not SEMVER_RE.fullmatch(v):
        out.append(Issue("publish-version", "$.version", f"a publishable {noun} needs a SemVer version", v))
    name = doc.get("name")
    if not isinstance(name, str) or not 3 <= len(name) <= 120:
        out.append(
            Issue("publish-name", "$.name", f"a publishable {noun} needs a 3-120 character name", name)
        )
    desc = doc.get("description")
    if not isinstance(desc, str) or not 20 <= len(desc.strip()) <= 2000:
        out.append(
            Issue(
                "publish-description",
                "$.description",
                f"a publishable {noun} needs a 20-2000 character description (trimmed)",
                desc,
            )
        )
    lic = doc.get("license")
    if not isinstance(lic, str) or not _spdx_ok(lic):
        out.append(
            Issue(
                "publish-license",
                "$.license",
                f"a publishable {noun} needs a valid SPDX license expression (at most 100 chars)",
                lic,
            )
        )
    if "homepage" in doc and (not isinstance(doc["homepage"], str) or not URI_RE.fullmatch(doc["homepage"])):
        out.append(
            Issue("publish-homepage", "$.homepage", "homepage must be an absolute URI", doc["homepage"])
        )
    tags = doc.get("tags")
    if not isinstance(tags, list) or not 1 <= len(tags) <= 20:
        out.append(Issue("publish-tags", "$.tags", f"a publishable {noun} needs 1-20 discovery tags", tags))
    else:
        seen: set[str] = set()
        for i, t in enumerate(tags):
            if not isinstance(t, str) or not TAG_RE.fullmatch(t) or t in seen:
                out.append(
                    Issue(
                        "publish-tags",
                        f"$.tags[{i}]",
                        "tags must be unique and match ^[a-z0-9][a-z0-9._-]{0,63}$",
                        t,
                    )
                )
            elif isinstance(t, str):
                seen.add(t)
    authors = doc.get("authors")
    if not isinstance(authors, list) or not authors:
        out.append(
            Issue(
                "publish-authors",
                "$.authors",
                f"a publishable {noun} needs at least one named author",
                authors,
            )
        )
    else:
        for i, a in enumerate(authors):
            ap = f"$.authors[{i}]"
            if (
                not isinstance(a, dict)
                or not isinstance(a.get("name"), str)
                or not 1 <= len(a["name"]) <= 120
            ):
                out.append(Issue("publish-authors", ap, "an author needs a 1-120 character name", a))
                continue
            out.extend(
                Issue("unknown-property", f"{ap}.{k}", "author contains an unknown property", k)
                for k in a
                if k not in AUTHOR_KEYS
            )
            if "url" in a and (not isinstance(a["url"], str) or not URI_RE.fullmatch(a["url"])):
                out.append(
                    Issue("publish-authors", f"{ap}.url", "author url must be an absolute URI", a["url"])
                )
    ext = doc.get("extensions")
    if isinstance(ext, dict):
        stack: list[tuple[Any, str]] = [(ext, "$.extensions")]
        while stack:
            obj, path = stack.pop()
            if isinstance(obj, dict):
                for k, item in obj.items():
                    squashed = re.sub(r"[^a-z0-9]", "", k.lower())
                    word = next((w for w in FORBIDDEN_EXTENSION_WORDS if w in squashed), None)
                    if word:
                        out.append(
                            Issue(
                                "publish-extension-key",
                                f"{path}.{k}",
                                f"extension key names credentials or private payloads ('{word}')",
                                k,
                            )
                        )
                    stack.append((item, f"{path}.{k}"))
            elif isinstance(obj, list):
                stack.extend((item, f"{path}[{i}]") for i, item in enumerate(obj))
    out.extend(scrub(doc))
    return out


def lint(doc: Any, *, publish: bool = False) -> LintResult:
    """Lint a raw workflow document; with `publish` also the public profile and secret scrub."""
    if not isinstance(doc, dict):
        return LintResult(
            (Issue("document", "$", "a workflow must be a JSON object", type(doc).__name__),), publish
        )
    issues = _Linter(doc).run()
    if publish:
        issues.extend(publish_profile(doc))
    return LintResult(tuple(issues), publish)
