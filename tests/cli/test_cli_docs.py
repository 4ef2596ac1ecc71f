"""docs/cli.md lists every error kind acxoci can exit with, with its exit code: the table is
read from the document and compared with every AcxError subclass in the package."""

from __future__ import annotations

import importlib
import pkgutil
import re

import acxoci
from acxoci.errors import AcxError
from tests.harness.env import REPO

ROW = re.compile(r"^\| (\d+) \| `([a-z_]+)` \|")


def documented() -> set[tuple[str, int]]:
    rows = (ROW.match(line) for line in (REPO / "docs" / "cli.md").read_text("utf-8").splitlines())
    return {(m[2], int(m[1])) for m in rows if m}


def error_classes() -> set[tuple[str, int]]:
    for mod in pkgutil.walk_packages(acxoci.__path__, "acxoci."):
        importlib.import_module(mod.name)
    found: set[tuple[str, int]] = set()
    stack = list(AcxError.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        found.add((cls.kind, cls.exit_code))
    return found


def test_every_error_kind_is_in_the_exit_code_table() -> None:
    missing = error_classes() - documented()
    assert not missing, f"add these (kind, exit code) rows to docs/cli.md: {sorted(missing)}"


def test_the_table_lists_no_kind_that_does_not_exist() -> None:
    stale = documented() - error_classes()
    assert not stale, f"docs/cli.md lists kinds no error class has: {sorted(stale)}"


CONCURRENCY_ROW = re.compile(r"^\| `(push|pull|cp)` \| (\d+) \|")


def test_concurrency_defaults_in_the_docs_are_the_commands_defaults() -> None:
    """docs/cli.md's `--concurrency` table states each command's real default (and the flag
    exists on push, pull and cp)."""
    import typer

    from acxoci.cli import cmd_oci

    text = (REPO / "docs" / "cli.md").read_text("utf-8")
    rows = {m[1]: int(m[2]) for m in map(CONCURRENCY_ROW.match, text.splitlines()) if m}
    assert set(rows) == {"push", "pull", "cp"}
    app = typer.Typer()
    cmd_oci.register(app)
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for name, default in rows.items():
        command = commands[name]
        option = next(p for p in command.params if "--concurrency" in getattr(p, "opts", []))
        assert option.default == default, (name, option.default)
