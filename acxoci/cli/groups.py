"""Which command modules serve which top-level command, and their registration.

`acx` imports only the modules for the command being run (a cartridge verify does not pay
for sigstore models or the level engine), which keeps start-up short for CI loops and for
transfer benchmarks. Root help, or an unknown command, imports them all.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import typer

from acxoci.cli.apps import GROUPS

ALL_MODULES = (
    "cmd_key",
    "cmd_cartridge",
    "cmd_cartridge_build",
    "cmd_harness",
    "cmd_policy",
    "cmd_oci",
    "cmd_attest",
    "cmd_workflow",
    "cmd_level",
    "cmd_install",
    "cmd_release",
    "cmd_graph",
    "cmd_roster",
    "cmd_activate",
    "cmd_exchange",
    "cmd_init",
    "cmd_share",
    "cmd_lance",
    "cmd_load",
    "cmd_studio",
)

# top-level command or group name -> the modules that add commands under it
ENTRY: dict[str, tuple[str, ...]] = {
    **{
        name: ("cmd_oci",)
        for name in ("push", "pull", "discover", "attach", "cp", "tags", "login", "logout", "manifest")
    },
    **{name: ("cmd_attest",) for name in ("attest", "verify", "attest-blob", "verify-blob")},
    **{name: ("cmd_install",) for name in ("install", "uninstall", "installed")},
    "cartridge": ("cmd_cartridge", "cmd_cartridge_build"),
    "workflow": ("cmd_workflow",),
    "key": ("cmd_key",),
    "policy": ("cmd_policy", "cmd_install"),
    "harness": ("cmd_harness",),
    "check": ("cmd_harness",),
    "level": ("cmd_level",),
    "status-list": ("cmd_level",),
    "release": ("cmd_release",),
    "graph": ("cmd_graph",),
    "cal": ("cmd_workflow",),
    "ls": ("cmd_roster",),
    "list": ("cmd_roster",),
    **{name: ("cmd_activate",) for name in ("activate", "deactivate")},
    "exchange": ("cmd_exchange", "cmd_studio"),
    "init": ("cmd_init",),
    "share": ("cmd_share",),
    "lance": ("cmd_lance",),
    "load": ("cmd_load",),
    "builder": ("cmd_studio",),
}

# (group, subcommand) -> the one module that adds it, where a group spans several modules: `acx
# cartridge verify` loads neither the builder's commands nor their imports (`acx cartridge --help`
# and an unknown subcommand still load every module of the group)
SUBCOMMAND: dict[tuple[str, str], tuple[str, ...]] = {
    **{("cartridge", name): ("cmd_cartridge",) for name in ("verify", "inspect", "strip")},
    **{("cartridge", name): ("cmd_cartridge_build",) for name in ("build", "sign", "spec", "skillset")},
}

_done: dict[int, set[str]] = {}  # per app object: a module's commands are added to each app once


def modules_for(args: list[str]) -> tuple[str, ...]:
    """The command modules needed to run `args` (all of them when the command is unknown)."""
    words: list[str] = []
    for arg in args:
        if arg == "--":
            break
        if arg == "--version":
            return ()
        if not arg.startswith("-"):
            words.append(arg)
            if len(words) == 2:
                break
    if not words:
        return ALL_MODULES
    group = ENTRY.get(words[0], ALL_MODULES)
    return SUBCOMMAND.get((words[0], words[1]), group) if len(words) == 2 else group


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"acxoci.cli.{name}")


def register(app: typer.Typer, modules: tuple[str, ...] = ALL_MODULES) -> None:
    """Import and register `modules` (each once per process), then mount the non-empty groups."""
    done = _done.setdefault(id(app), set())
    for name in modules:
        if name in done:
            continue
        _load(name).register(app)
        done.add(name)
    mounted = {info.name for info in app.registered_groups}
    for group_name, group in GROUPS.items():
        if group_name not in mounted and (group.registered_commands or group.registered_groups):
            app.add_typer(group, name=group_name)


def register_all(app: typer.Typer) -> None:
    """Register every command module."""
    register(app, ALL_MODULES)
