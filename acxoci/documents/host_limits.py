# ruff: noqa: E501
"""Typed model of the host resource limits (`resource-limits.yaml`: the budget's shape, every member optional): generated from schemas/resource-limits.schema.json
by scripts/gen_models.py (do not edit; change the schema and run it again)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType, field

__all__ = ["HostLimitsDoc"]


class HostLimitsDoc(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """ResourceLimits (cartridge budget defaults"""

    token_spend: HostLimitsDocTokenSpend | UnsetType = field(default=UNSET, name="tokenSpend")
    concurrency: HostLimitsDocConcurrency | UnsetType = UNSET
    timeouts: HostLimitsDocTimeouts | UnsetType = UNSET
    kill_switch: HostLimitsDocKillSwitch | UnsetType = field(default=UNSET, name="killSwitch")


class HostLimitsDocKillSwitch(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostLimitsDocKillSwitch`"""

    enabled: bool | UnsetType = UNSET
    reason: str | UnsetType | None = UNSET
    paused_project_ids: tuple[str, ...] | UnsetType = field(default=UNSET, name="pausedProjectIds")
    paused_station_ids: tuple[str, ...] | UnsetType = field(default=UNSET, name="pausedStationIds")


class HostLimitsDocTimeouts(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostLimitsDocTimeouts`"""

    default_command_sec: int | UnsetType = field(default=UNSET, name="defaultCommandSec")
    max_command_sec: int | UnsetType = field(default=UNSET, name="maxCommandSec")


class HostLimitsDocConcurrency(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostLimitsDocConcurrency`"""

    max_commands_per_station: int | UnsetType = field(default=UNSET, name="maxCommandsPerStation")
    max_stations_per_project: int | UnsetType = field(default=UNSET, name="maxStationsPerProject")
    max_global_in_flight_commands: int | UnsetType = field(default=UNSET, name="maxGlobalInFlightCommands")


class HostLimitsDocTokenSpend(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`HostLimitsDocTokenSpend`"""

    daily_per_project: int | UnsetType = field(default=UNSET, name="dailyPerProject")
    daily_per_agent: int | UnsetType = field(default=UNSET, name="dailyPerAgent")
    daily_global: int | UnsetType = field(default=UNSET, name="dailyGlobal")
