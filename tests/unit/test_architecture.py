"""The import arrows of DESIGN.md, checked on every module:

- `attest` imports nothing of ours;
- `acxoci.oci` imports only `attest` (and itself, and the leaf helpers `acxoci.errors`, `acxoci.fsutil`);
- only `acxoci.cli` imports typer or rich;
- nothing imports `acxoci.cli` (except the CLI itself and `acxoci.__main__`);
- domain packages never import `acxoci.release`; `release` never imports `cli`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.env import REPO

OURS = ("attest", "acxoci")
DOMAIN = (
    "acxoci.cartridge",
    "acxoci.workflow",
    "acxoci.policy",
    "acxoci.level",
    "acxoci.attestation",
    "acxoci.artifact",
    "acxoci.install",
    "acxoci.exchange",
)


def module_name(path: Path, root: Path = REPO) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = REPO) -> Iterator[tuple[int, str]]:
    """Every absolute module name imported by the file (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = module_name(path, root).split(".")
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield node.lineno, mod
            for alias in node.names:  # `from acxoci import cli` imports acxoci.cli
                yield node.lineno, f"{mod}.{alias.name}"


def violations_for(path: Path, root: Path = REPO) -> list[str]:
    me = module_name(path, root)
    out: list[str] = []

    def under(name: str, pkg: str) -> bool:
        return name == pkg or name.startswith(pkg + ".")

    for line, imp in imports_of(path, root):
        where = f"{path.relative_to(root)}:{line} imports {imp}"
        if under(me, "attest") and under(imp, "acxoci"):
            out.append(f"{where}: attest must import nothing of acxoci")
        if (
            under(me, "acxoci.oci")
            and under(imp, "acxoci")
            and not (
                under(imp, "acxoci.oci")
                or imp in ("acxoci.errors", "acxoci", "acxoci.fsutil")
                or under(imp, "acxoci.errors")
                or under(imp, "acxoci.fsutil")
            )
        ):
            out.append(f"{where}: acxoci.oci may import only attest")
        if not under(me, "acxoci.cli") and (under(imp, "typer") or under(imp, "rich")):
            out.append(f"{where}: only acxoci.cli may import typer/rich")
        if under(imp, "acxoci.cli") and not (under(me, "acxoci.cli") or me == "acxoci.__main__"):
            out.append(f"{where}: nothing may import acxoci.cli")
        if any(under(me, d) for d in DOMAIN) and under(imp, "acxoci.release"):
            out.append(f"{where}: domain packages must not import acxoci.release")
        if under(me, "acxoci.release") and under(imp, "acxoci.cli"):
            out.append(f"{where}: release must not import cli")
    return out


def source_files() -> list[Path]:
    files: list[Path] = []
    for pkg in OURS:
        files += sorted((REPO / pkg).rglob("*.py"))
    return files


def test_there_is_code_to_check() -> None:
    names = {module_name(p) for p in source_files()}
    assert {"attest.dsse", "acxoci.errors", "acxoci.cli.main"} <= names


def test_import_arrows_follow_design() -> None:
    problems = [v for p in source_files() for v in violations_for(p)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("module", "body", "expected"),
    [
        ("attest/zz_bad.py", "from acxoci.errors import AcxError\n", "attest must import nothing"),
        ("acxoci/oci/zz_bad.py", "import acxoci.cartridge.verify\n", "acxoci.oci may import only attest"),
        ("acxoci/cartridge/zz_bad.py", "import typer\n", "only acxoci.cli may import typer"),
        ("acxoci/workflow/zz_bad.py", "from acxoci.cli import output\n", "nothing may import acxoci.cli"),
        ("acxoci/level/zz_bad.py", "from ..release import engine\n", "must not import acxoci.release"),
        ("acxoci/oci/zz_ok.py", "from attest.canonical import jcs\nfrom . import layout\n", None),
    ],
)
def test_checker_catches_a_wrong_arrow(tmp_path: Path, module: str, body: str, expected: str | None) -> None:
    """The checker itself: a planted wrong import is reported (proves the test can fail)."""
    fake = tmp_path / module
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(body)
    found = violations_for(fake, tmp_path)
    if expected is None:
        assert found == []
    else:
        assert any(expected in v for v in found), found
