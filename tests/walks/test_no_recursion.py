"""Every walk is iterative and bounded (issue 29): no function of ours calls itself, no library
walk that recurses per level (`Path.rglob`, `os.walk` recurse in Python 3.11) is used on a folder a
user hands us, and a roster folder nested deeper than Python's recursion limit is a typed refusal
(exit 3), never a RecursionError (exit 70)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.cli import run_acx
from tests.harness.env import REPO

#: Self-calls that do not recurse on input-controlled depth, each with the reason.
ALLOWED_RECURSION = {
    # the referrer engineer's tree rendering and output layer (issue 29 leaves referrer walks to them)
    ("acxoci/cli/cmd_oci.py", "add"): "renders the referrer tree the bounded referrer walk returned",
    ("acxoci/cli/output.py", "canonical_fields"): "renames fields of acx's own result objects",
    # walks of our own schemas (package data), never of a document
    ("acxoci/policy/limits.py", "_relaxed"): "relaxes acx's own resource-limits schema",
}
#: Per-level recursive library walks, allowed only over folders acx itself wrote (its install
#: store, a staging folder, the catalog it just generated), never over a folder a user hands it.
ALLOWED_TREE_WALKS = {
    "acxoci/install/reverify.py", "acxoci/install/activate.py", "acxoci/install/store.py",
    "acxoci/catalog/site.py",
}


def _sources() -> list[Path]:
    return sorted((REPO / "acxoci").rglob("*.py"))


def self_calls(tree: ast.AST) -> list[tuple[str, int]]:
    """(function, line) of every call a function makes to itself: a bare call of a module-level or
    nested function's own name, or `self.name(...)`/`cls.name(...)` inside a method."""
    found: list[tuple[str, int]] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]  # (node, is the node a class body)
    while stack:
        node, in_class = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(child):
                    if not isinstance(sub, ast.Call):
                        continue
                    f = sub.func
                    if (not in_class and isinstance(f, ast.Name) and f.id == child.name) or (
                        in_class and isinstance(f, ast.Attribute) and f.attr == child.name
                        and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls")
                    ):
                        found.append((child.name, sub.lineno))
                        break
            stack.append((child, isinstance(child, ast.ClassDef)))
    return found


def test_the_detector_sees_direct_recursion_and_not_a_method_calling_a_function() -> None:
    src = (
        "def walk(n):\n    return walk(n - 1)\n"
        "class A:\n    def pae(self):\n        return pae(1)\n    def go(self):\n        return self.go()\n"
    )
    assert {name for name, _ in self_calls(ast.parse(src))} == {"walk", "go"}


def test_no_function_recurses() -> None:
    found = []
    for path in _sources():
        rel = path.relative_to(REPO).as_posix()
        for name, line in self_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, name) not in ALLOWED_RECURSION:
                found.append(f"{rel}:{line} {name}() calls itself")
    assert not found, "\n".join(found)


def test_no_recursive_library_walk_of_a_user_folder() -> None:
    pattern = re.compile(r"\.rglob\(|\bos\.walk\(|\.walk\(\)")
    found = []
    for path in _sources():
        rel = path.relative_to(REPO).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line) and rel not in ALLOWED_TREE_WALKS:
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def _deep(root: Path, levels: int) -> Path:
    """`root/d/d/…/d`, `levels` deep (made one level at a time: `mkdir(parents=True)` recurses)."""
    d = root
    d.mkdir()
    for _ in range(levels):
        d = d / "d"
        d.mkdir()
    return d


@pytest.fixture
def deep_tmp(tmp_path: Path) -> Iterator[Path]:
    """tmp_path, with any `_deep` chain below it removed bottom-up afterwards (pytest's own cleanup
    of old temp folders uses shutil.rmtree, which recurses and fails on a chain this deep)."""
    yield tmp_path
    for top in tmp_path.iterdir():
        if top.is_symlink() or not top.is_dir():
            continue
        chain = [top]
        while (chain[-1] / "d").is_dir() and not (chain[-1] / "d").is_symlink():
            chain.append(chain[-1] / "d")
        for d in reversed(chain):
            for f in d.iterdir():
                if not f.is_dir() or f.is_symlink():
                    f.unlink()
            d.rmdir()


@pytest.mark.parametrize("command", ["ls", "ready"])
def test_a_roster_folder_nested_1100_deep_is_refused_typed(
    deep_tmp: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    roster = deep_tmp / "roster"
    _deep(roster, 1100)
    wf = deep_tmp / "w.cal.json"
    wf.write_text(json.dumps({"schemaVersion": "acx.cal/1", "id": "w", "start": "s", "participants": [],
                              "nodes": [{"id": "s", "type": "event", "event": "start"}], "edges": []}))
    ready = ["workflow", "ready", str(wf), "--cartridges", str(roster)]
    argv = ["ls", str(roster)] if command == "ls" else ready
    r = run_acx(capsys, "--json", *argv)
    assert r.returncode == 3, r.stdout + r.stderr
    err = json.loads(r.stdout)["error"]
    assert err["kind"] == "invalid_input" and "deeper than" in err["message"], err


def test_a_roster_with_a_cartridge_below_a_symlink_loop_is_walked_once(tmp_path: Path) -> None:
    from acxoci.workflow.ready import directory_roster

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.acx").write_bytes(b"x")
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    assert [src for src, _ in directory_roster(tmp_path)] == ["a/x.acx"]
