"""The loop + context policy (`acx.loop-context-policy/1` and `/1.1`): a frozen model and a
validator that checks every rule of SPEC §9 (brief §8) and names the rule and JSON path."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from acxoci.errors import InvalidInput
from acxoci.policy._schema import ERROR, WARNING, Issue, child_path, schema_issues
from acxoci.policy.limits import ResourceLimits

V1 = "acx.loop-context-policy/1"
V1_1 = "acx.loop-context-policy/1.1"
KNOWN_VERSIONS = (V1, V1_1)
SCHEMA_FILES = {V1: "acx.loop-context-policy-1.schema.json", V1_1: "acx.loop-context-policy-1.1.schema.json"}
MEDIA_TYPE = "application/vnd.acx.loop-context-policy.v1+json"
ROM_PATH = "rom/policy/loop-context-policy.json"
OVERLAY_PATH = "save/policy/rule-overlay.json"

CANONICAL_CYCLE = ("plan", "gather_context", "act", "verify", "reflect")
TERMINATING_REPORT_ACTIONS = frozenset({"handoff", "await_human"})
#: Tool roles that only read; a sub-agent whose tools are all read-only may fan out in parallel.
READ_ONLY_ROLES = frozenset({"acx:search", "acx:list_agents"})
READ_ONLY_SCOPES = frozenset({"search", "memory.read", "fs.read", "net.fetch"})
RETURN_BUDGET_RANGE = (1000, 2000)
DEFAULT_RETURN_BUDGET = 1500
#: Keys under `hints` that would try to change the outcome contract (hints must stay ignorable).
CONTRACT_KEYS = frozenset(
    {
        "outcome",
        "outcomeReport",
        "emits",
        "stopConditions",
        "OperatorCommandReport",
        "handoff",
        "guardrailContract",
    }
)
_SCORE_RE = re.compile(r"^\s*(?:[<>]=?|==?|≥|≤)?\s*[0-9]+(?:\.[0-9]+)?\s*%?\s*$|(?:[<>]=?|≥|≤)\s*[0-9]")
#: The return window a terminating condition hands control back through.
WINDOW_FOR_CONDITION = {
    "pr_ready": "pr_ready",
    "blocked": "blocker",
    "guardrail_stop": "blocker",
    "needs_input": "ambiguity",
}
V11_ONLY_CYCLE = frozenset({"plan", "reflect"})


@dataclass(frozen=True)
class Regression:
    """v1.1 held-in / held-out acceptance: a candidate passes only with no regression on both."""

    held_in_suite: str | None
    held_out_suite: str | None
    accept_if: str


@dataclass(frozen=True)
class Verification:
    """The smallest valid check before a commit or handoff; passIntent is prose, never a score."""

    pass_intent: str
    commands: tuple[str, ...] = ()
    max_attempts: int = 1
    scope: str = "touched"
    block_on_failure: bool = True
    regression: Regression | None = None


@dataclass(frozen=True)
class StopCondition:
    """`when` a condition holds, take `action`."""

    when: str
    action: str


@dataclass(frozen=True)
class SubAgent:
    """A delegate; writers default to single_threaded and return one condensed summary."""

    id: str
    description: str
    prompt_ref: str
    tools: tuple[str, ...]
    concurrency: str = "single_threaded"
    context_return_budget_tokens: int = DEFAULT_RETURN_BUDGET
    max_turns: int | None = None
    retrieval: str | None = None
    mode: str | None = None


@dataclass(frozen=True)
class MissionRule:
    """A declarative guardrail rule: all six fields, verbatim from AGENTIBUS."""

    id: str
    category: str
    title: str
    trigger: str
    action: str
    severity: str


@dataclass(frozen=True)
class ContextPolicy:
    """How the agent perceives and manages its context window (intent, not algorithms)."""

    retrieval: str
    embedding_engine_id: str
    identifier_kinds: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    preserve: tuple[str, ...] = ()
    discard: tuple[str, ...] = ()
    target_token_budget: int | None = None
    tool_result_truncation: Mapping[str, int] = field(default_factory=dict)
    memory_files: tuple[str, ...] = ()
    playbook: Mapping[str, str] | None = None


@dataclass(frozen=True)
class LoopContextPolicy:
    """A parsed, validated policy document."""

    schema_version: str
    max_turns: int
    cycle: tuple[str, ...]
    stop_conditions: tuple[StopCondition, ...]
    context: ContextPolicy
    verification: Verification | None = None
    handoff_emits: str | None = None
    return_windows: tuple[str, ...] = ()
    sub_agents: tuple[SubAgent, ...] = ()
    rules: tuple[MissionRule, ...] = ()
    signal_kinds: tuple[str, ...] = ()
    outcome_report: str | None = None
    budget: ResourceLimits | None = None
    hints: Mapping[str, Any] = field(default_factory=dict)
    observability: Mapping[str, Any] | None = None

    def action_for(self, when: str) -> str | None:
        """The declared action for a stop condition, or None when the policy does not name it."""
        for sc in self.stop_conditions:
            if sc.when == when:
                return sc.action
        return None


def read_as_v1(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What a v1 reader sees: v1.1 additions (plan/reflect, regression, playbook, observability,
    subAgents[].mode) are dropped, as SPEC §9.6 says unknown keys are."""
    out = {k: v for k, v in doc.items() if k != "observability"}
    loop = dict(out.get("loop") or {}) if isinstance(out.get("loop"), Mapping) else out.get("loop")
    if isinstance(loop, dict):
        if isinstance(loop.get("cycle"), list):
            loop["cycle"] = [c for c in loop["cycle"] if c not in V11_ONLY_CYCLE]
        ver = loop.get("verification")
        if isinstance(ver, Mapping):
            loop["verification"] = {k: v for k, v in ver.items() if k != "regression"}
        subs = loop.get("subAgents")
        if isinstance(subs, list):
            loop["subAgents"] = [
                {k: v for k, v in s.items() if k != "mode"} if isinstance(s, Mapping) else s for s in subs
            ]
        out["loop"] = loop
    ctx = out.get("context")
    if isinstance(ctx, Mapping):
        out["context"] = {k: v for k, v in ctx.items() if k != "playbook"}
    out["schemaVersion"] = V1
    return out


def _is_read_only(tool: str, harness_scopes: Mapping[str, Iterable[str]] | None) -> bool:
    if tool in READ_ONLY_ROLES:
        return True
    if harness_scopes is not None and tool in harness_scopes:
        scopes = set(harness_scopes[tool])
        return bool(scopes) and scopes <= READ_ONLY_SCOPES
    return False


def _semantic_issues(
    doc: Mapping[str, Any], harness_scopes: Mapping[str, Iterable[str]] | None
) -> list[Issue]:
    out: list[Issue] = []
    loop = doc.get("loop") if isinstance(doc.get("loop"), Mapping) else {}
    assert isinstance(loop, Mapping)
    hints = doc.get("hints") if isinstance(doc.get("hints"), Mapping) else {}
    assert isinstance(hints, Mapping)
    cycle = loop.get("cycle")
    if isinstance(cycle, list) and all(isinstance(c, str) for c in cycle):
        known = [c for c in cycle if c in CANONICAL_CYCLE]
        if known != sorted(known, key=CANONICAL_CYCLE.index):
            out.append(
                Issue(
                    "loop.cycle.order",
                    "$.loop.cycle",
                    f"cycle {cycle} is not an ordered subset of {list(CANONICAL_CYCLE)}",
                )
            )
        if "verify" not in cycle and not _verify_justified(hints):
            out.append(
                Issue(
                    "loop.cycle.verify-or-justify",
                    "$.loop.cycle",
                    "verify is omitted from the cycle and no reason is given in hints "
                    "(a non-empty string under a hints key that mentions 'verify')",
                )
            )
        if "verify" in cycle and not isinstance(loop.get("verification"), Mapping):
            out.append(
                Issue(
                    "loop.verification.missing",
                    "$.loop.verification",
                    "the cycle has verify but no verification block says what to run",
                    WARNING,
                )
            )
    ver = loop.get("verification")
    if (
        isinstance(ver, Mapping)
        and isinstance(ver.get("passIntent"), str)
        and _SCORE_RE.search(ver["passIntent"])
    ):
        out.append(
            Issue(
                "loop.verification.passIntent",
                "$.loop.verification.passIntent",
                f"passIntent {ver['passIntent']!r} is a scored threshold; it must be prose intent "
                "(scored acceptance belongs to the provable level)",
            )
        )
    stops = loop.get("stopConditions")
    actions: list[tuple[int, str]] = []
    if isinstance(stops, list):
        seen: dict[str, int] = {}
        for i, sc in enumerate(stops):
            if not isinstance(sc, Mapping):
                continue
            when = sc.get("when")
            if isinstance(when, str):
                if when in seen:
                    out.append(
                        Issue(
                            "loop.stopConditions.unique",
                            f"$.loop.stopConditions[{i}].when",
                            f"stop condition {when!r} is declared twice (first at index {seen[when]})",
                        )
                    )
                seen.setdefault(when, i)
            if isinstance(sc.get("action"), str):
                actions.append((i, sc["action"]))
        gc = doc.get("guardrailContract")
        kinds = gc.get("signalKinds") if isinstance(gc, Mapping) else None
        if isinstance(kinds, list):
            for when, kind in (("guardrail_stop", "stop"), ("blocked", "blocked")):
                if when in seen and kind not in kinds:
                    out.append(
                        Issue(
                            "guardrailContract.signal-for-condition",
                            "$.guardrailContract.signalKinds",
                            f"stop condition {when!r} fires on signal kind {kind!r}, "
                            "which signalKinds does not declare",
                        )
                    )
    if any(a in TERMINATING_REPORT_ACTIONS for _, a in actions) and not isinstance(
        loop.get("handoff"), Mapping
    ):
        i = next(i for i, a in actions if a in TERMINATING_REPORT_ACTIONS)
        out.append(
            Issue(
                "loop.handoff.report-required",
                "$.loop.handoff",
                f"stopConditions[{i}] terminates with handoff/await_human, which must emit exactly one "
                "OperatorCommandReport, but loop.handoff {emits: OperatorCommandReport} is missing",
            )
        )
    handoff = loop.get("handoff")
    windows = handoff.get("returnWindows") if isinstance(handoff, Mapping) else None
    if isinstance(windows, list) and isinstance(stops, list):
        for i, sc in enumerate(stops):
            if not isinstance(sc, Mapping) or sc.get("action") not in TERMINATING_REPORT_ACTIONS:
                continue
            window = WINDOW_FOR_CONDITION.get(str(sc.get("when")))
            if window is not None and window not in windows:
                out.append(
                    Issue(
                        "loop.handoff.window-for-condition",
                        f"$.loop.stopConditions[{i}]",
                        f"{sc.get('when')!r} hands control back, but returnWindows lacks {window!r}",
                        WARNING,
                    )
                )
    subs = loop.get("subAgents")
    if isinstance(subs, list):
        ids: dict[str, int] = {}
        for i, sa in enumerate(subs):
            if not isinstance(sa, Mapping):
                continue
            p = f"$.loop.subAgents[{i}]"
            sid = sa.get("id")
            if isinstance(sid, str):
                if sid in ids:
                    out.append(
                        Issue("loop.subAgents.unique-id", f"{p}.id", f"sub-agent id {sid!r} is repeated")
                    )
                ids.setdefault(sid, i)
            tools = sa.get("tools") if isinstance(sa.get("tools"), list) else []
            assert isinstance(tools, list)
            if sa.get("concurrency") == "parallel":
                writers = [t for t in tools if isinstance(t, str) and not _is_read_only(t, harness_scopes)]
                if writers or not tools:
                    out.append(
                        Issue(
                            "loop.subAgents.concurrency",
                            f"{p}.concurrency",
                            "only read-only fan-out may be parallel; tools "
                            f"{writers or '(none declared)'} may write or decide, so this sub-agent "
                            "must be single_threaded",
                        )
                    )
            budget = sa.get("contextReturnBudgetTokens")
            lo, hi = RETURN_BUDGET_RANGE
            if isinstance(budget, int) and not isinstance(budget, bool) and not lo <= budget <= hi:
                out.append(
                    Issue(
                        "loop.subAgents.contextReturnBudget",
                        f"{p}.contextReturnBudgetTokens",
                        f"{budget} is outside the recommended {lo}-{hi} tokens",
                        WARNING,
                    )
                )
            mt, top = sa.get("maxTurns"), loop.get("maxTurns")
            if isinstance(mt, int) and isinstance(top, int) and mt > top:
                out.append(
                    Issue(
                        "loop.subAgents.maxTurns",
                        f"{p}.maxTurns",
                        f"sub-agent maxTurns {mt} exceeds the loop's {top}",
                        WARNING,
                    )
                )
    ctx = doc.get("context")
    if isinstance(ctx, Mapping):
        comp = ctx.get("compaction")
        if (
            isinstance(comp, Mapping)
            and isinstance(comp.get("preserve"), list)
            and isinstance(comp.get("discard"), list)
        ):
            both = sorted(set(map(str, comp["preserve"])) & set(map(str, comp["discard"])))
            if both:
                out.append(
                    Issue(
                        "context.compaction.overlap",
                        "$.context.compaction",
                        f"categories {both} are both preserved and discarded",
                    )
                )
        if ctx.get("retrieval") in ("preload", "hybrid") and not ctx.get("preload"):
            out.append(
                Issue(
                    "context.preload",
                    "$.context.preload",
                    f"retrieval {ctx.get('retrieval')!r} has nothing to preload",
                    WARNING,
                )
            )
    rules = doc.get("rules")
    if isinstance(rules, list):
        rids: set[str] = set()
        for i, r in enumerate(rules):
            if isinstance(r, Mapping) and isinstance(r.get("id"), str):
                if r["id"] in rids:
                    out.append(
                        Issue("rules.unique-id", f"$.rules[{i}].id", f"rule id {r['id']!r} is repeated")
                    )
                rids.add(r["id"])
    budget_doc = doc.get("budget")
    if isinstance(budget_doc, Mapping):
        t = budget_doc.get("timeouts")
        if isinstance(t, Mapping):
            d, m = t.get("defaultCommandSec"), t.get("maxCommandSec")
            if isinstance(d, int) and isinstance(m, int) and d > m:
                out.append(
                    Issue(
                        "budget.timeouts.order",
                        "$.budget.timeouts.defaultCommandSec",
                        f"defaultCommandSec {d} exceeds maxCommandSec {m}",
                    )
                )
    for k in hints:
        if k in CONTRACT_KEYS:
            out.append(
                Issue(
                    "hints.no-outcome-override",
                    child_path("$.hints", str(k)),
                    f"hints key {k!r} would alter the outcome contract; hints must be ignorable",
                )
            )
    return out


def _verify_justified(hints: Mapping[str, Any]) -> bool:
    return any("verify" in str(k).lower() and isinstance(v, str) and v.strip() for k, v in hints.items())


def validate_policy(doc: Any, *, harness_scopes: Mapping[str, Iterable[str]] | None = None) -> list[Issue]:
    """Every schema and semantic finding for a policy document (errors and warnings).

    `harness_scopes` (role -> scopes, from the cartridge's harness) lets tools outside the built-in
    read-only set count as read-only for the parallel sub-agent rule."""
    if not isinstance(doc, Mapping):
        return [Issue("policy.object", "$", "the policy document is not a JSON object")]
    version = doc.get("schemaVersion")
    if version not in KNOWN_VERSIONS:
        return [
            Issue(
                "schemaVersion.known",
                "$.schemaVersion",
                f"unknown schemaVersion {version!r}; expected one of {list(KNOWN_VERSIONS)}",
            )
        ]
    issues = schema_issues(doc, SCHEMA_FILES[str(version)], default_rule="policy.schema")
    issues.extend(_semantic_issues(doc, harness_scopes))
    return sorted(set(issues), key=lambda i: (i.severity != ERROR, i.path, i.rule))


def errors_only(issues: Iterable[Issue]) -> list[Issue]:
    """The issues that make a document invalid (warnings dropped)."""
    return [i for i in issues if i.severity == ERROR]


def parse_policy(doc: Any, *, where: str = ROM_PATH, reader: str = V1_1) -> LoopContextPolicy:
    """Validate and build the model. `reader=V1` reads the document as a v1 reader would
    (v1.1 keys dropped). Raises InvalidInput listing every error with rule and path."""
    issues = errors_only(validate_policy(doc))
    if issues:
        raise InvalidInput(
            f"loop-context policy is invalid ({len(issues)} issue(s)): " + "; ".join(map(str, issues)),
            where=where,
            details={"issues": [i.to_json() for i in issues]},
        )
    assert isinstance(doc, Mapping)
    if reader == V1:
        doc = read_as_v1(doc)
    return _build(doc)


def _build(doc: Mapping[str, Any]) -> LoopContextPolicy:
    loop: Mapping[str, Any] = doc["loop"]
    ctx: Mapping[str, Any] = doc["context"]
    ver = loop.get("verification")
    verification = None
    if isinstance(ver, Mapping):
        reg = ver.get("regression")
        verification = Verification(
            pass_intent=ver["passIntent"],
            commands=tuple(ver.get("commands", ())),
            max_attempts=int(ver.get("maxAttempts", 1)),
            scope=str(ver.get("scope", "touched")),
            block_on_failure=bool(ver.get("blockOnFailure", True)),
            regression=Regression(reg["heldInSuite"], reg["heldOutSuite"], reg["acceptIf"])
            if isinstance(reg, Mapping)
            else None,
        )
    handoff = loop.get("handoff") if isinstance(loop.get("handoff"), Mapping) else None
    subs = tuple(
        SubAgent(
            id=s["id"],
            description=s["description"],
            prompt_ref=s["promptRef"],
            tools=tuple(s["tools"]),
            concurrency=s.get("concurrency", "single_threaded"),
            context_return_budget_tokens=s.get("contextReturnBudgetTokens", DEFAULT_RETURN_BUDGET),
            max_turns=s.get("maxTurns"),
            retrieval=s.get("retrieval"),
            mode=s.get("mode"),
        )
        for s in loop.get("subAgents", ())
    )
    comp = ctx.get("compaction") if isinstance(ctx.get("compaction"), Mapping) else {}
    assert isinstance(comp, Mapping)
    context = ContextPolicy(
        retrieval=ctx["retrieval"],
        embedding_engine_id=ctx["embeddingEngineId"],
        identifier_kinds=tuple(ctx.get("identifierKinds", ())),
        preload=tuple(ctx.get("preload", ())),
        preserve=tuple(comp.get("preserve", ())),
        discard=tuple(comp.get("discard", ())),
        target_token_budget=comp.get("targetTokenBudget"),
        tool_result_truncation=dict(ctx.get("toolResultTruncation", {})),
        memory_files=tuple(ctx.get("memoryFiles", ())),
        playbook=ctx.get("playbook"),
    )
    gc = doc.get("guardrailContract") if isinstance(doc.get("guardrailContract"), Mapping) else {}
    assert isinstance(gc, Mapping)
    budget = ResourceLimits.from_json(doc["budget"]) if isinstance(doc.get("budget"), Mapping) else None
    return LoopContextPolicy(
        schema_version=doc["schemaVersion"],
        max_turns=loop["maxTurns"],
        cycle=tuple(loop["cycle"]),
        stop_conditions=tuple(StopCondition(s["when"], s["action"]) for s in loop["stopConditions"]),
        context=context,
        verification=verification,
        handoff_emits=handoff.get("emits") if handoff else None,
        return_windows=tuple(handoff.get("returnWindows", ())) if handoff else (),
        sub_agents=subs,
        rules=tuple(
            MissionRule(r["id"], r["category"], r["title"], r["trigger"], r["action"], r["severity"])
            for r in doc.get("rules", ())
        ),
        signal_kinds=tuple(gc.get("signalKinds", ())),
        outcome_report=gc.get("outcomeReport"),
        budget=budget,
        hints=dict(doc.get("hints", {})),
        observability=doc.get("observability"),
    )


def default_policy(embedding_engine_id: str = "local-hash-128") -> dict[str, Any]:
    """acxoci's default v1.1 policy document for a cartridge that ships none (valid against our schema)."""
    return {
        "schemaVersion": V1_1,
        "loop": {
            "maxTurns": 40,
            "cycle": list(CANONICAL_CYCLE),
            "verification": {
                "commands": ["lint", "typecheck", "test:touched"],
                "maxAttempts": 3,
                "scope": "touched",
                "passIntent": "lint, types and touched tests green",
                "blockOnFailure": True,
                "regression": {
                    "heldInSuite": None,
                    "heldOutSuite": None,
                    "acceptIf": "no-regression-on-held-in-and-held-out",
                },
            },
            "stopConditions": [
                {"when": "completed", "action": "stop"},
                {"when": "pr_ready", "action": "handoff"},
                {"when": "blocked", "action": "await_human"},
                {"when": "guardrail_stop", "action": "await_human"},
                {"when": "needs_input", "action": "await_human"},
                {"when": "budget_exhausted", "action": "handoff"},
                {"when": "max_turns", "action": "report_continue"},
            ],
            "handoff": {
                "emits": "OperatorCommandReport",
                "returnWindows": ["phase_exit", "blocker", "pr_ready", "ambiguity", "destructive_change"],
            },
            "subAgents": [],
        },
        "context": {
            "retrieval": "just_in_time",
            "identifierKinds": ["file_path", "stored_query", "memory_ref", "symbol"],
            "compaction": {
                "preserve": ["architectural_decisions", "unresolved_bugs", "user_intent", "task_state"],
                "discard": ["redundant_output", "tool_output"],
                "targetTokenBudget": 60000,
            },
            "toolResultTruncation": {"maxTokens": 4000, "keepLastN": 20},
            "memoryFiles": ["save/notes/NOTES.md"],
            "playbook": {"store": "save/playbook.jsonl", "entryShape": "{ id, description }"},
            "embeddingEngineId": embedding_engine_id,
        },
        "observability": {
            "tracer": "save/trace/",
            "decisionLog": "save/decisions.jsonl",
            "pillars": ["component", "experience", "decision"],
        },
        "rules": [
            {
                "id": "halt-before-destructive",
                "category": "checkpoint",
                "title": "Stop before destructive changes",
                "trigger": "a step would delete data, rewrite history or force-push",
                "action": "emit a checkpoint signal and await a human",
                "severity": "critical",
            },
            {
                "id": "ask-when-unclear",
                "category": "question",
                "title": "Ask when the goal is unclear",
                "trigger": "the request has two readings the repository cannot settle",
                "action": "emit a question signal",
                "severity": "warn",
            },
            {
                "id": "verified-before-done",
                "category": "quality",
                "title": "Report done only when verified",
                "trigger": "about to report success while verification has not passed",
                "action": "re-run verification or report blocked",
                "severity": "critical",
            },
        ],
        "guardrailContract": {
            "signalKinds": ["milestone", "checkpoint", "question", "blocked", "stop"],
            "outcomeReport": "OperatorCommandReport",
        },
        "hints": {},
    }
