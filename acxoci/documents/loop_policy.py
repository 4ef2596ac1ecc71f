# ruff: noqa: E501
"""Typed model of the loop + context policy (`acx.loop-context-policy/1` and `/1.1`): generated from schemas/acx.loop-context-policy-1.1.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["LoopPolicyDoc"]


class LoopPolicyDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ACX loop + context policy, acx.loop-context-policy/1.1"""

    schema_version: str = field(name="schemaVersion")
    loop: LoopPolicyDocLoop
    context: LoopPolicyDocContext
    rules: tuple[LoopPolicyDocRulesItem, ...] | UnsetType = UNSET
    guardrail_contract: (
        LoopPolicyDocGuardrailContract | UnsetType
    ) = field(default=UNSET, name="guardrailContract")
    budget: LoopPolicyDocBudget | UnsetType = UNSET
    hints: dict[str, Any] | UnsetType = UNSET
    observability: LoopPolicyDocObservability | UnsetType = UNSET


class LoopPolicyDocObservability(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocObservability`"""

    tracer: str
    decision_log: str = field(name="decisionLog")
    pillars: tuple[str, ...]


class LoopPolicyDocBudget(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocBudget`"""

    token_spend: LoopPolicyDocBudgetTokenSpend = field(name="tokenSpend")
    concurrency: LoopPolicyDocBudgetConcurrency
    timeouts: LoopPolicyDocBudgetTimeouts
    kill_switch: LoopPolicyDocBudgetKillSwitch = field(name="killSwitch")


class LoopPolicyDocBudgetKillSwitch(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocBudgetKillSwitch`"""

    enabled: bool
    reason: str | UnsetType | None = UNSET
    paused_project_ids: tuple[str, ...] | UnsetType = field(default=UNSET, name="pausedProjectIds")
    paused_station_ids: tuple[str, ...] | UnsetType = field(default=UNSET, name="pausedStationIds")


class LoopPolicyDocBudgetTimeouts(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocBudgetTimeouts`"""

    default_command_sec: int = field(name="defaultCommandSec")
    max_command_sec: int = field(name="maxCommandSec")


class LoopPolicyDocBudgetConcurrency(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocBudgetConcurrency`"""

    max_commands_per_station: int = field(name="maxCommandsPerStation")
    max_stations_per_project: int = field(name="maxStationsPerProject")
    max_global_in_flight_commands: int = field(name="maxGlobalInFlightCommands")


class LoopPolicyDocBudgetTokenSpend(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocBudgetTokenSpend`"""

    daily_per_project: int = field(name="dailyPerProject")
    daily_per_agent: int = field(name="dailyPerAgent")
    daily_global: int = field(name="dailyGlobal")


class LoopPolicyDocGuardrailContract(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocGuardrailContract`"""

    signal_kinds: tuple[str, ...] | UnsetType = field(default=UNSET, name="signalKinds")
    outcome_report: str = field(name="outcomeReport")


class LoopPolicyDocRulesItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocRulesItem`"""

    id: str
    category: str
    title: str
    trigger: str
    action: str
    severity: str


class LoopPolicyDocContext(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocContext`"""

    retrieval: str
    identifier_kinds: tuple[str, ...] | UnsetType = field(default=UNSET, name="identifierKinds")
    preload: tuple[str, ...] | UnsetType = UNSET
    compaction: LoopPolicyDocContextCompaction | UnsetType = UNSET
    tool_result_truncation: (
        LoopPolicyDocContextToolResultTruncation | UnsetType
    ) = field(default=UNSET, name="toolResultTruncation")
    memory_files: tuple[str, ...] | UnsetType = field(default=UNSET, name="memoryFiles")
    embedding_engine_id: str = field(name="embeddingEngineId")
    playbook: LoopPolicyDocContextPlaybook | UnsetType = UNSET


class LoopPolicyDocContextPlaybook(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocContextPlaybook`"""

    store: str
    entry_shape: str = field(name="entryShape")


class LoopPolicyDocContextToolResultTruncation(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocContextToolResultTruncation`"""

    max_tokens: int | UnsetType = field(default=UNSET, name="maxTokens")
    keep_last_n: int | UnsetType = field(default=UNSET, name="keepLastN")
    head_bytes: int | UnsetType = field(default=UNSET, name="headBytes")
    tail_bytes: int | UnsetType = field(default=UNSET, name="tailBytes")


class LoopPolicyDocContextCompaction(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocContextCompaction`"""

    preserve: tuple[str, ...] | UnsetType = UNSET
    discard: tuple[str, ...] | UnsetType = UNSET
    target_token_budget: int = field(name="targetTokenBudget")


class LoopPolicyDocLoop(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocLoop`"""

    max_turns: int = field(name="maxTurns")
    cycle: tuple[str, ...]
    verification: LoopPolicyDocLoopVerification | UnsetType = UNSET
    stop_conditions: tuple[LoopPolicyDocLoopStopConditionsItem, ...] = field(name="stopConditions")
    handoff: LoopPolicyDocLoopHandoff | UnsetType = UNSET
    sub_agents: (
        tuple[LoopPolicyDocLoopSubAgentsItem, ...] | UnsetType
    ) = field(default=UNSET, name="subAgents")


class LoopPolicyDocLoopSubAgentsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocLoopSubAgentsItem`"""

    id: str
    description: str
    prompt_ref: str = field(name="promptRef")
    tools: tuple[str, ...]
    max_turns: int | UnsetType = field(default=UNSET, name="maxTurns")
    retrieval: str | UnsetType = UNSET
    context_return_budget_tokens: int | UnsetType = field(default=UNSET, name="contextReturnBudgetTokens")
    concurrency: str | UnsetType = UNSET
    mode: str | UnsetType = UNSET


class LoopPolicyDocLoopHandoff(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocLoopHandoff`"""

    emits: str
    return_windows: tuple[str, ...] | UnsetType = field(default=UNSET, name="returnWindows")


class LoopPolicyDocLoopStopConditionsItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocLoopStopConditionsItem`"""

    when: str
    action: str


class LoopPolicyDocLoopVerification(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocLoopVerification`"""

    commands: tuple[str, ...] | UnsetType = UNSET
    max_attempts: int | UnsetType = field(default=UNSET, name="maxAttempts")
    scope: str | UnsetType = UNSET
    pass_intent: str = field(name="passIntent")
    block_on_failure: bool | UnsetType = field(default=UNSET, name="blockOnFailure")
    regression: LoopPolicyDocLoopVerificationRegression | UnsetType = UNSET


class LoopPolicyDocLoopVerificationRegression(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`LoopPolicyDocLoopVerificationRegression`"""

    held_in_suite: str | None = field(name="heldInSuite")
    held_out_suite: str | None = field(name="heldOutSuite")
    accept_if: str = field(name="acceptIf")
