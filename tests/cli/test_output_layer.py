"""Every human output of the CLI goes through the output layer (acxoci/cli/output.py), proven on
the AST of every other module of acxoci/cli: no rich import, no console, no print/echo/write to
stdout or stderr; every say/say_error/info/warn/cell call takes a string literal as its
template (so no value can become markup or add a line), and Markup() wraps only literals. The
layer itself: values are escaped (newline, CR, tab, controls, format and bidi characters, lone
surrogates, rich markup) while templates keep their line breaks."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from acxoci.cli import output
from tests.harness.env import REPO

CLI = REPO / "acxoci" / "cli"
TEMPLATED = frozenset({"say", "say_error", "info", "warn", "cell"})
PRINTERS = frozenset({"print", "print_json", "log", "rule", "out"})


def _modules() -> list[Path]:
    return sorted(p for p in CLI.glob("*.py") if p.name != "output.py")


def _violations(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("rich", "click"):
                    yield f"{where}: imports {alias.name} (render through acxoci.cli.output)"
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod.split(".")[0] == "rich" or (mod == "click" and any(a.name == "echo" for a in node.names)):
                yield f"{where}: imports from {mod}"
            if mod == "acxoci.cli.output":
                for alias in node.names:
                    if alias.name in ("console", "err_console"):
                        yield f"{where}: imports the console itself ({alias.name})"
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name) \
                    and node.value.value.id == "sys" and node.value.attr in ("stdout", "stderr") \
                    and node.attr in ("write", "buffer", "writelines"):
                yield f"{where}: sys.{node.value.attr}.{node.attr} (use the output layer)"
            if node.attr in ("echo", "secho") and isinstance(node.value, ast.Name):
                yield f"{where}: {node.value.id}.{node.attr}"
            if node.attr in ("console", "err_console"):
                yield f"{where}: reaches the console ({node.attr})"
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "print":
                yield f"{where}: print()"
            if isinstance(f, ast.Attribute) and f.attr in PRINTERS and not (
                    isinstance(f.value, ast.Name) and f.value.id in ("sys", "os", "math")):
                yield f"{where}: .{f.attr}() (print through say/info/…)"
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in TEMPLATED:
                first = node.args[0] if node.args else None
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    yield f"{where}: {name}() template is not a string literal"
            if name == "Markup":
                ok = len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str)
                if not ok:
                    yield f"{where}: Markup() of something other than a string literal"


def test_every_human_output_goes_through_the_output_layer() -> None:
    found = [v for p in _modules() for v in _violations(p)]
    assert found == []
    assert len(_modules()) > 15  # the walk saw the CLI


def test_the_check_catches_each_way_around_it(tmp_path: Path) -> None:
    bad = CLI / "_probe_bad_output.py"
    bad.write_text(
        "import sys\nfrom rich.markup import escape\nfrom acxoci.cli.output import console, say, Markup\n"
        "def f(x):\n"
        "    print(x)\n"
        "    sys.stdout.write(x)\n"
        "    console.print(x)\n"
        "    say(f'{x}')\n"
        "    say('a ' + x)\n"
        "    Markup(x)\n"
        "    import typer\n"
        "    typer.echo(x)\n"
    )
    try:
        found = list(_violations(bad))
    finally:
        bad.unlink()
    kinds = " | ".join(found)
    for needle in ("imports from rich", "console itself", "print()", "sys.stdout.write", ".print()",
                   "say() template", "Markup()", "typer.echo"):
        assert needle in kinds, (needle, found)


EVIL = ("ok\nFAKE: verified by trusted key\r\x1b[2J\x1b]0;t\x07\t\u202e\u2066\u200b\u2028\x85\udcff"
        "[bold]x[/bold]")


@pytest.mark.parametrize("ch", ["\n", "\r", "\t", "\x1b", "\x07", "\x85", "\x9b", "\u202e", "\u2066",
                                "\u200b", "\u200e", "\u2028", "\u2029", "\ufeff", "\u00ad", "\udcff"])
def test_a_value_can_carry_no_unshown_character(ch: str) -> None:
    got = output.shown(f"a{ch}b")
    assert ch not in got and got.startswith("a\\") and got.endswith("b")


def test_templates_keep_their_lines_and_values_add_none() -> None:
    out = output.console
    with out.capture() as cap:
        output.say("first {}\nsecond {}", EVIL, 3)
    lines = cap.get().splitlines()
    assert len(lines) == 2 and lines[0].startswith("first ok\\nFAKE") and lines[1] == "second 3"
    assert "[bold]x[/bold]" in lines[0]  # markup in a value is shown as written
    for ch in "\r\x1b\x07\t\u202e\u2066\u200b\u2028\x85":
        assert ch not in cap.get()


def test_markup_of_our_own_is_kept_and_numbers_keep_their_format() -> None:
    got = output.render("{} {:3d} {:<4}|", output.Markup("[red]x[/red]"), 7, "ab")
    assert got == "[red]x[/red]   7 ab  |"
    assert output.render("{}", "[red]x[/red]") == "\\[red]x\\[/red]"
    assert output.render("braces {{}}") == "braces {}"  # str.format's rule, with or without values
