"""The loop + context policy (`acx.loop-context-policy/1` and `/1.1`): a frozen model and a
validator that checks every rule of SPEC §9 (brief §8) and names the rule and JSON path."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UnsetType

from acxoci.attest.typed import opt, seq
from acxoci.documents.loop_policy import LoopPolicyDoc
from acxoci.errors import InvalidInput
from acxoci.policy._schema import ERROR, WARNING, Issue, child_path, decode_issues, schema_issues
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
    """What a v1 reader sees of a policy document (JSON in, JSON out; `parse_policy(reader=V1)`
    applies the same reading to the decoded model): v1.1 additions (plan/reflect, regression,
    playbook, observability, subAgents[].mode) are dropped, as SPEC §9.6 says unknown keys are."""
    out = {k: v for k, v in doc.items() if k != "observability"}
    loop = dict(out.get("loop") or {}) if isinstance(out.get("loop"), Mapping) else out.get("loop")
    if isinstance(loop, dict):
        if isinstance(loop.get("cycle"), list):
            loop["cycle"] = [c for c in loop["cycle"] if not (isinstance(c, str) and c in V11_ONLY_CYCLE)]
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




def _semantic_issues(doc: LoopPolicyDoc, harness_scopes: Mapping[str, Iterable[str]] | None) -> list[Issue]:
    out: list[Issue] = []
    loop = doc.loop
    hints = opt(doc.hints) or {}
    cycle = list(loop.cycle)
    known = [c for c in cycle if c in CANONICAL_CYCLE]
    if known != sorted(known, key=CANONICAL_CYCLE.index):
        out.append(Issue("loop.cycle.order", "$.loop.cycle",
                         f"cycle {cycle} is not an ordered subset of {list(CANONICAL_CYCLE)}"))
    if "verify" not in cycle and not _verify_justified(hints):
        out.append(Issue("loop.cycle.verify-or-justify", "$.loop.cycle",
                         "verify is omitted from the cycle and no reason is given in hints "
                         "(a non-empty string under a hints key that mentions 'verify')"))
    ver = opt(loop.verification)
    if "verify" in cycle and ver is None:
        out.append(Issue("loop.verification.missing", "$.loop.verification",
                         "the cycle has verify but no verification block says what to run", WARNING))
    if ver is not None and _SCORE_RE.search(ver.pass_intent):
        out.append(Issue("loop.verification.passIntent", "$.loop.verification.passIntent",
                         f"passIntent {ver.pass_intent!r} is a scored threshold; it must be prose intent "
                         "(scored acceptance belongs to the provable level)"))
    seen: dict[str, int] = {}
    for i, sc in enumerate(loop.stop_conditions):
        if sc.when in seen:
            why = f"stop condition {sc.when!r} is declared twice (first at index {seen[sc.when]})"
            out.append(Issue("loop.stopConditions.unique", f"$.loop.stopConditions[{i}].when", why))
        seen.setdefault(sc.when, i)
    contract = opt(doc.guardrail_contract)
    kinds = opt(contract.signal_kinds) if contract is not None else None
    if kinds is not None:
        for when, kind in (("guardrail_stop", "stop"), ("blocked", "blocked")):
            if when in seen and kind not in kinds:
                out.append(Issue("guardrailContract.signal-for-condition", "$.guardrailContract.signalKinds",
                                 f"stop condition {when!r} fires on signal kind {kind!r}, "
                                 "which signalKinds does not declare"))
    terminating = [i for i, sc in enumerate(loop.stop_conditions) if sc.action in TERMINATING_REPORT_ACTIONS]
    handoff = opt(loop.handoff)
    if terminating and handoff is None:
        out.append(Issue("loop.handoff.report-required", "$.loop.handoff",
                         f"stopConditions[{terminating[0]}] terminates with handoff/await_human, which "
                         "must emit exactly one OperatorCommandReport, but loop.handoff "
                         "{emits: OperatorCommandReport} is missing"))
    windows = opt(handoff.return_windows) if handoff is not None else None
    if windows is not None:
        for i in terminating:
            when = loop.stop_conditions[i].when
            window = WINDOW_FOR_CONDITION.get(when)
            if window is not None and window not in windows:
                out.append(Issue("loop.handoff.window-for-condition", f"$.loop.stopConditions[{i}]",
                                 f"{when!r} hands control back, but returnWindows lacks {window!r}", WARNING))
    ids: dict[str, int] = {}
    for i, sa in enumerate(seq(loop.sub_agents)):
        p = f"$.loop.subAgents[{i}]"
        if sa.id in ids:
            out.append(Issue("loop.subAgents.unique-id", f"{p}.id", f"sub-agent id {sa.id!r} is repeated"))
        ids.setdefault(sa.id, i)
        if sa.concurrency == "parallel":
            writers = [t for t in sa.tools if not _is_read_only(t, harness_scopes)]
            if writers or not sa.tools:
                out.append(Issue("loop.subAgents.concurrency", f"{p}.concurrency",
                                 "only read-only fan-out may be parallel; tools "
                                 f"{writers or '(none declared)'} may write or decide, so this sub-agent "
                                 "must be single_threaded"))
        budget = opt(sa.context_return_budget_tokens)
        lo, hi = RETURN_BUDGET_RANGE
        if budget is not None and not lo <= budget <= hi:
            out.append(Issue("loop.subAgents.contextReturnBudget", f"{p}.contextReturnBudgetTokens",
                             f"{budget} is outside the recommended {lo}-{hi} tokens", WARNING))
        mt = opt(sa.max_turns)
        if mt is not None and mt > loop.max_turns:
            out.append(Issue("loop.subAgents.maxTurns", f"{p}.maxTurns",
                             f"sub-agent maxTurns {mt} exceeds the loop's {loop.max_turns}", WARNING))
    ctx = doc.context
    comp = opt(ctx.compaction)
    if comp is not None and seq(comp.preserve) and seq(comp.discard):
        both = sorted(set(seq(comp.preserve)) & set(seq(comp.discard)))
        if both:
            out.append(Issue("context.compaction.overlap", "$.context.compaction",
                             f"categories {both} are both preserved and discarded"))
    if ctx.retrieval in ("preload", "hybrid") and not seq(ctx.preload):
        out.append(Issue("context.preload", "$.context.preload",
                         f"retrieval {ctx.retrieval!r} has nothing to preload", WARNING))
    rids: set[str] = set()
    for i, r in enumerate(seq(doc.rules)):
        if r.id in rids:
            out.append(Issue("rules.unique-id", f"$.rules[{i}].id", f"rule id {r.id!r} is repeated"))
        rids.add(r.id)
    budget_doc = opt(doc.budget)
    if budget_doc is not None:
        d, m = budget_doc.timeouts.default_command_sec, budget_doc.timeouts.max_command_sec
        if d > m:
            out.append(Issue("budget.timeouts.order", "$.budget.timeouts.defaultCommandSec",
                             f"defaultCommandSec {d} exceeds maxCommandSec {m}"))
    for k in hints:
        if k in CONTRACT_KEYS:
            out.append(Issue("hints.no-outcome-override", child_path("$.hints", str(k)),
                             f"hints key {k!r} would alter the outcome contract; hints must be ignorable"))
    return out


def _verify_justified(hints: Mapping[str, Any]) -> bool:
    return any("verify" in str(k).lower() and isinstance(v, str) and v.strip() for k, v in hints.items())


def _checked(
    doc: Any, harness_scopes: Mapping[str, Iterable[str]] | None
) -> tuple[list[Issue], LoopPolicyDoc | None]:
    if not isinstance(doc, Mapping):
        return [Issue("policy.object", "$", "the policy document is not a JSON object")], None
    version = doc.get("schemaVersion")
    if not isinstance(version, str) or version not in KNOWN_VERSIONS:
        return [
            Issue(
                "schemaVersion.known",
                "$.schemaVersion",
                f"unknown schemaVersion {version!r}; expected one of {list(KNOWN_VERSIONS)}",
            )
        ], None
    issues = schema_issues(doc, SCHEMA_FILES[version], default_rule="policy.schema")
    model, type_issues = decode_issues(doc, LoopPolicyDoc, document=ROM_PATH, rule="policy.schema")
    if model is None:
        issues += [] if issues else type_issues  # the schema already names what does not decode
    else:
        issues += _semantic_issues(model, harness_scopes)
    return sorted(set(issues), key=lambda i: (i.severity != ERROR, i.path, i.rule)), model


def validate_policy(doc: Any, *, harness_scopes: Mapping[str, Iterable[str]] | None = None) -> list[Issue]:
    """Every schema and semantic finding for a policy document (errors and warnings).

    `harness_scopes` (role -> scopes, from the cartridge's harness) lets tools outside the built-in
    read-only set count as read-only for the parallel sub-agent rule."""
    return _checked(doc, harness_scopes)[0]


def decoded_policy(doc: Any) -> LoopPolicyDoc | None:
    """The policy document as its model, or None when it is not a known, well-typed policy."""
    return _checked(doc, None)[1]


def errors_only(issues: Iterable[Issue]) -> list[Issue]:
    """The issues that make a document invalid (warnings dropped)."""
    return [i for i in issues if i.severity == ERROR]


def parse_policy(doc: Any, *, where: str = ROM_PATH, reader: str = V1_1) -> LoopContextPolicy:
    """Validate, decode and build the model. `reader=V1` reads the document as a v1 reader would
    (v1.1 keys dropped). Raises InvalidInput listing every error with rule and path."""
    all_issues, model = _checked(doc, None)
    issues = errors_only(all_issues)
    if issues or model is None:
        raise InvalidInput(
            f"loop-context policy is invalid ({len(issues)} issue(s)): " + "; ".join(map(str, issues)),
            where=where,
            details={"issues": [i.to_json() for i in issues]},
        )
    return _build(model, v1=reader == V1)


def _build(doc: LoopPolicyDoc, *, v1: bool = False) -> LoopContextPolicy:
    loop, ctx = doc.loop, doc.context
    ver = opt(loop.verification)
    verification = None
    if ver is not None:
        reg = None if v1 else opt(ver.regression)
        verification = Verification(
            pass_intent=ver.pass_intent,
            commands=seq(ver.commands),
            max_attempts=opt(ver.max_attempts) or 1,
            scope=opt(ver.scope) or "touched",
            block_on_failure=ver.block_on_failure is not False,
            regression=Regression(reg.held_in_suite, reg.held_out_suite, reg.accept_if) if reg else None,
        )
    handoff = opt(loop.handoff)
    subs = tuple(
        SubAgent(
            id=s.id,
            description=s.description,
            prompt_ref=s.prompt_ref,
            tools=s.tools,
            concurrency=opt(s.concurrency) or "single_threaded",
            context_return_budget_tokens=(
                DEFAULT_RETURN_BUDGET if isinstance(s.context_return_budget_tokens, UnsetType)
                else s.context_return_budget_tokens
            ),
            max_turns=opt(s.max_turns),
            retrieval=opt(s.retrieval),
            mode=None if v1 else opt(s.mode),
        )
        for s in seq(loop.sub_agents)
    )
    comp = opt(ctx.compaction)
    trunc = opt(ctx.tool_result_truncation)
    playbook = None if v1 else opt(ctx.playbook)
    context = ContextPolicy(
        retrieval=ctx.retrieval,
        embedding_engine_id=ctx.embedding_engine_id,
        identifier_kinds=seq(ctx.identifier_kinds),
        preload=seq(ctx.preload),
        preserve=seq(comp.preserve) if comp else (),
        discard=seq(comp.discard) if comp else (),
        target_token_budget=comp.target_token_budget if comp else None,
        tool_result_truncation={} if trunc is None else msgspec.to_builtins(trunc),
        memory_files=seq(ctx.memory_files),
        playbook=None if playbook is None else {"store": playbook.store, "entryShape": playbook.entry_shape},
    )
    gc = opt(doc.guardrail_contract)
    cycle = tuple(c for c in loop.cycle if not (v1 and c in V11_ONLY_CYCLE))
    return LoopContextPolicy(
        schema_version=V1 if v1 else doc.schema_version,
        max_turns=loop.max_turns,
        cycle=cycle,
        stop_conditions=tuple(StopCondition(s.when, s.action) for s in loop.stop_conditions),
        context=context,
        verification=verification,
        handoff_emits=handoff.emits if handoff else None,
        return_windows=seq(handoff.return_windows) if handoff else (),
        sub_agents=subs,
        rules=tuple(MissionRule(r.id, r.category, r.title, r.trigger, r.action, r.severity)
                    for r in seq(doc.rules)),
        signal_kinds=seq(gc.signal_kinds) if gc else (),
        outcome_report=gc.outcome_report if gc else None,
        budget=None if isinstance(doc.budget, UnsetType) else ResourceLimits.from_model(doc.budget),
        hints=opt(doc.hints) or {},
        observability=None if v1 or isinstance(doc.observability, UnsetType)
        else msgspec.to_builtins(doc.observability),
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
