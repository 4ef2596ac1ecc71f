# ruff: noqa: E501
"""Typed model of the resource limits (a policy's `budget`, a host's resource-limits.yaml): generated from schemas/resource-limits.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["ResourceLimitsDoc"]


class ResourceLimitsDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ResourceLimits (cartridge budget defaults"""

    token_spend: ResourceLimitsDocTokenSpend = field(name="tokenSpend")
    concurrency: ResourceLimitsDocConcurrency
    timeouts: ResourceLimitsDocTimeouts
    kill_switch: ResourceLimitsDocKillSwitch = field(name="killSwitch")


class ResourceLimitsDocKillSwitch(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ResourceLimitsDocKillSwitch`"""

    enabled: bool
    reason: str | UnsetType | None = UNSET
    paused_project_ids: tuple[str, ...] | UnsetType = field(default=UNSET, name="pausedProjectIds")
    paused_station_ids: tuple[str, ...] | UnsetType = field(default=UNSET, name="pausedStationIds")


class ResourceLimitsDocTimeouts(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ResourceLimitsDocTimeouts`"""

    default_command_sec: int = field(name="defaultCommandSec")
    max_command_sec: int = field(name="maxCommandSec")


class ResourceLimitsDocConcurrency(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ResourceLimitsDocConcurrency`"""

    max_commands_per_station: int = field(name="maxCommandsPerStation")
    max_stations_per_project: int = field(name="maxStationsPerProject")
    max_global_in_flight_commands: int = field(name="maxGlobalInFlightCommands")


class ResourceLimitsDocTokenSpend(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`ResourceLimitsDocTokenSpend`"""

    daily_per_project: int = field(name="dailyPerProject")
    daily_per_agent: int = field(name="dailyPerAgent")
    daily_global: int = field(name="dailyGlobal")
