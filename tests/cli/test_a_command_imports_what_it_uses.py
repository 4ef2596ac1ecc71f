"""`acx cartridge verify` loads only what it uses (issue 31): its own command module, no builder
commands, no transport or registry code, no helper process; and every mapped subcommand still runs
(its --help) with the module it is mapped to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acxoci.cli.groups import SUBCOMMAND

_LOADED = (
    "import json, sys\n"
    "from acxoci.cli.main import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
)


def _modules(*args: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _LOADED, *args], capture_output=True, text=True, timeout=60)
    loaded: list[str] = json.loads(out.stderr.strip().splitlines()[-1])
    return set(loaded)


def test_cartridge_verify_loads_only_its_own_command_module(vectors_dir: Path) -> None:
    loaded = _modules("cartridge", "verify", str(vectors_dir / "sample" / "sample.acx"))
    assert "acxoci.cli.cmd_cartridge" in loaded and "acxoci.cartridge.verify" in loaded
    for absent in ("acxoci.cli.cmd_cartridge_build", "acxoci.cartridge.build", "acxoci.oci", "requests",
                   "acxoci.cartridge.skills", "yaml"):
        assert absent not in loaded, absent


@pytest.mark.parametrize(("group", "sub"), sorted(SUBCOMMAND))
def test_each_mapped_subcommand_runs_with_its_module(group: str, sub: str) -> None:
    loaded = _modules(group, sub, "--help")
    modules = {f"acxoci.cli.{m}" for m in SUBCOMMAND[(group, sub)]}
    assert modules <= loaded
    others = {m for (g, _), ms in SUBCOMMAND.items() if g == group for m in ms}
    assert not {f"acxoci.cli.{m}" for m in others - set(SUBCOMMAND[(group, sub)])} & loaded


def test_the_group_s_help_still_lists_every_subcommand() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "acxoci", "cartridge", "--help"], capture_output=True, text=True, timeout=60
    )
    for (group, sub) in SUBCOMMAND:
        if group == "cartridge":
            assert sub in out.stdout, sub
