"""The import arrows of DESIGN.md, checked on every module:

- `acxoci.attest` imports nothing of ours outside itself;
- `acxoci.oci` imports only `acxoci.attest` (and itself, and the leaf helpers `acxoci.errors`,
  `acxoci.fsutil`);
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

OURS = ("acxoci",)
DOMAIN = (
    "acxoci.cartridge",
    "acxoci.workflow",
    "acxoci.policy",
    "acxoci.level",
    "acxoci.attestation",
    "acxoci.artifact",
    "acxoci.install",
    "acxoci.exchange",
    "acxoci.authoring",
    "acxoci.studio",
    "acxoci.catalog",
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
        if under(me, "acxoci.attest") and under(imp, "acxoci") and not under(imp, "acxoci.attest"):
            out.append(f"{where}: acxoci.attest must import nothing of acxoci outside itself")
        if (
            under(me, "acxoci.oci")
            and under(imp, "acxoci")
            and not (
                under(imp, "acxoci.oci")
                or under(imp, "acxoci.attest")
                or imp in ("acxoci.errors", "acxoci", "acxoci.fsutil")
                or under(imp, "acxoci.errors")
                or under(imp, "acxoci.fsutil")
            )
        ):
            out.append(f"{where}: acxoci.oci may import only acxoci.attest")
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
    assert {"acxoci.attest.dsse", "acxoci.errors", "acxoci.cli.main"} <= names


def test_import_arrows_follow_design() -> None:
    problems = [v for p in source_files() for v in violations_for(p)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("module", "body", "expected"),
    [
        ("acxoci/attest/zz_bad.py", "from acxoci.errors import AcxError\n", "must import nothing"),
        ("acxoci/attest/zz_ok.py", "from acxoci.attest.canonical import jcs\nfrom . import dsse\n", None),
        ("acxoci/oci/zz_bad.py", "import acxoci.cartridge.verify\n", "may import only acxoci.attest"),
        ("acxoci/cartridge/zz_bad.py", "import typer\n", "only acxoci.cli may import typer"),
        ("acxoci/workflow/zz_bad.py", "from acxoci.cli import output\n", "nothing may import acxoci.cli"),
        ("acxoci/level/zz_bad.py", "from ..release import engine\n", "must not import acxoci.release"),
        ("acxoci/oci/zz_ok.py", "from acxoci.attest.canonical import jcs\nfrom . import layout\n", None),
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


def import_circles(files: list[Path], root: Path = REPO) -> list[list[str]]:
    """Every circle of imports (top-level and lazy ones inside functions) among `files`' modules."""
    mods = {module_name(p, root): p for p in files}
    graph: dict[str, set[str]] = {}
    for m, p in mods.items():
        deps: set[str] = set()
        for _, imp in imports_of(p, root):
            parts = imp.split(".")
            for i in range(len(parts), 0, -1):
                cand = ".".join(parts[:i])
                if cand in mods:
                    if cand != m:
                        deps.add(cand)
                    break
        graph[m] = deps
    circles: list[list[str]] = []
    done: set[str] = set()
    for start in sorted(graph):  # iterative DFS from each module: a path back to `start` is a circle
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    circle = sorted(path)
                    if circle not in circles and not set(circle) & done:
                        circles.append(circle)
                elif nxt not in seen and nxt not in done and len(path) < 50:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        done.add(start)
    return circles


@pytest.mark.parametrize("pkg", ["acxoci/attest", "acxoci/install", "acxoci/level", "acxoci/cartridge",
                                 "acxoci/workflow", "acxoci/policy", "acxoci/studio", "acxoci/catalog"])
def test_no_import_circles(pkg: str) -> None:
    """DESIGN: no import circles (the store once called back into the installer, and the level
    credential, status and OCI modules imported each other)."""
    assert import_circles(sorted((REPO / pkg).rglob("*.py"))) == []


def test_circle_finder_finds_a_planted_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "acxoci" / "zz"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("def f():\n    from acxoci.zz import b\n")
    (pkg / "b.py").write_text("from acxoci.zz.a import f\n")
    (pkg / "c.py").write_text("from acxoci.zz import a\n")
    assert import_circles(sorted(pkg.glob("*.py")), tmp_path) == [["acxoci.zz.a", "acxoci.zz.b"]]


def test_one_acceptance_decision() -> None:
    """DESIGN.md, "One judge": the acceptance decision is `acxoci.install.checks.run_checks`, and only
    `acxoci.install.judge` (which gathers its inputs) calls it; every stage goes through the judge."""
    callers = []
    for path in sorted((REPO / "acxoci").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if name == "run_checks":
                    callers.append(module_name(path))
    assert sorted(set(callers)) == ["acxoci.install.judge"], callers
