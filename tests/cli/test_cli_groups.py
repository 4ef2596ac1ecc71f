"""Lazy command loading: every top-level command is reachable through `groups.ENTRY`, and
loading only a command's modules still gives that command (so nothing silently vanishes)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acxoci.cli import groups
from tests.harness.env import REPO

LIST_NAMES = """
import json, sys, typer
from acxoci.cli import groups, main
mods = tuple(sys.argv[1:]) or groups.ALL_MODULES
groups.register(main.app, mods)
print(json.dumps(sorted(typer.main.get_command(main.app).commands)))
"""


def names_with(*modules: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", LIST_NAMES, *modules], capture_output=True, text=True,
                         cwd=REPO, check=True)
    return set(json.loads(out.stdout))


def test_entry_covers_every_command() -> None:
    assert names_with() == set(groups.ENTRY)


@pytest.mark.parametrize("name", sorted(groups.ENTRY))
def test_each_command_loads_with_its_own_modules(name: str) -> None:
    assert name in names_with(*groups.ENTRY[name])


def test_modules_for_picks_the_first_positional() -> None:
    assert groups.modules_for(["-v", "cartridge", "verify", "x"]) == ("cmd_cartridge",)
    assert groups.modules_for(["cartridge", "--help"]) == groups.ENTRY["cartridge"]
    assert groups.modules_for(["cartridge", "nonsense"]) == groups.ENTRY["cartridge"]
    assert groups.modules_for(["--version"]) == ()
    assert groups.modules_for([]) == groups.ALL_MODULES
    assert groups.modules_for(["nonsense"]) == groups.ALL_MODULES

