"""Registers every command module, then mounts the non-empty groups on the root app.
Each module has `register(app)` and adds commands to the root app or to a group in apps.py."""

from __future__ import annotations

import typer

from acxoci.cli import (
    cmd_attest,
    cmd_cartridge,
    cmd_cartridge_build,
    cmd_harness,
    cmd_install,
    cmd_key,
    cmd_level,
    cmd_oci,
    cmd_policy,
    cmd_release,
    cmd_workflow,
)
from acxoci.cli.apps import GROUPS

MODULES = (
    cmd_key,
    cmd_cartridge,
    cmd_cartridge_build,
    cmd_harness,
    cmd_policy,
    cmd_oci,
    cmd_attest,
    cmd_workflow,
    cmd_level,
    cmd_install,
    cmd_release,
)


def register_all(app: typer.Typer) -> None:
    for mod in MODULES:
        mod.register(app)
    for name, group in GROUPS.items():
        if group.registered_commands or group.registered_groups:
            app.add_typer(group, name=name)
