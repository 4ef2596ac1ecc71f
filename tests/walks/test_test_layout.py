"""The tests are laid out by subject (issue 31): no test module (or script) imports another test
module, helpers live in the one support package (tests/harness; tests/fuzz is the fuzz engine
scripts/fuzz.py runs), `tests/unit/` stays gone, no test file is named after how it came about,
a test file named by the docs, scripts or tests exists, and the test sets of scripts/mutate.py and
`make test-fast` name files and folders that exist."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.harness.env import REPO

#: Where modules that are not tests may live (shared helpers; the fuzz engine).
SUPPORT = {"harness", "fuzz"}
#: Names that say how a test came about rather than what it tests.
ORIGIN = re.compile(r"hostile_review|_mutants|review2")
#: A dotted name of a test module (`tests.<folder>.test_<name>`).
TEST_MODULE = re.compile(r"^tests(\.\w+)*\.test_\w+$")
#: A path of a file under tests/ as the docs and scripts name one.
TEST_PATH = re.compile(r"\btests/[\w/]+\.py\b")
#: Where test files are named by path. Decision records are history (they may name a test that was
#: removed since); acxoci/ is left to its owners.
NAMING = ("README.md", "docs/*.md", "Makefile", "action.yml", ".ci/*", "scripts/*", "tests/**/*.py")


def imports_of_test_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import of a test module: `import tests.x.test_y`, `from
    tests.x.test_y import ...`, `from tests.x import test_y`, or a dotted name given to importlib."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if TEST_MODULE.match(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tests":
            if TEST_MODULE.match(node.module):
                found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                      if a.name.startswith("test_")]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and TEST_MODULE.match(node.value):
            found.append((node.lineno, node.value))
    return found


def layout_problems(root: Path) -> list[str]:
    """Every breach of the layout under `root` (a repository: its tests/ and scripts/)."""
    problems: list[str] = []
    if (root / "tests" / "unit").exists():
        problems.append("tests/unit/ exists: put each test in the folder of its subject")
    files = [*sorted((root / "tests").rglob("*.py")), *sorted((root / "scripts").glob("*.py"))]
    for path in files:
        rel = path.relative_to(root)
        name = path.name
        if rel.parts[0] == "tests":
            if name.startswith("test_") and ORIGIN.search(name):
                problems.append(f"{rel}: named after how it came about")
            if not (name.startswith("test_") or name in ("__init__.py", "conftest.py")) and (
                len(rel.parts) < 3 or rel.parts[1] not in SUPPORT
            ):
                problems.append(f"{rel}: a helper outside tests/harness")
        for line, module in imports_of_test_modules(ast.parse(path.read_text(encoding="utf-8"))):
            problems.append(f"{rel}:{line} imports the test module {module}")
    return problems


def stale_test_paths(root: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    """`file:line: path` for every tests/....py path named in the NAMING files that does not exist."""
    found: list[str] = []
    files = sorted({p for pattern in NAMING for p in root.glob(pattern) if p.is_file()})
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel in skip:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            found += [f"{rel}:{n}: {m[0]}" for m in TEST_PATH.finditer(line) if not (root / m[0]).is_file()]
    return found


def _write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_checks_see_each_kind_of_breach(tmp_path: Path) -> None:
    """Planted: a tests/unit folder, imports of test modules in each spelling, a name after its
    origin and a helper beside the tests; each is reported, and a clean tree gives nothing."""
    clean = tmp_path / "clean"
    _write(clean, "tests/oci/test_a.py", "from tests.harness.installs import NOW\nimport tests.harness.env\n")
    _write(clean, "tests/harness/helpers.py", "from tests.fuzz import resign\n")
    _write(clean, "tests/oci/conftest.py")
    assert layout_problems(clean) == []

    bad = tmp_path / "bad"
    _write(bad, "tests/unit/__init__.py")
    _write(bad, "tests/oci/test_a.py", "from tests.install.test_flow import World\n")
    _write(bad, "tests/oci/test_b.py", "from tests.install import test_flow as flow\n")
    _write(bad, "tests/oci/test_c.py", "def f():\n    import tests.oci.test_a\n")
    _write(bad, "tests/oci/test_d.py", "import importlib\nm = importlib.import_module('tests.oci.test_a')\n")
    _write(bad, "tests/cartridge/test_reader_mutants_scan.py")
    _write(bad, "tests/oci/test_registry_hostile_review.py")
    _write(bad, "tests/oci/test_cartridge_review2.py")
    _write(bad, "tests/oci/support.py")
    _write(bad, "scripts/soak.py", "from tests.release.test_run import make_world\n")
    got = layout_problems(bad)
    assert got == [
        "tests/unit/ exists: put each test in the folder of its subject",
        "tests/cartridge/test_reader_mutants_scan.py: named after how it came about",
        "tests/oci/support.py: a helper outside tests/harness",
        "tests/oci/test_a.py:1 imports the test module tests.install.test_flow",
        "tests/oci/test_b.py:1 imports the test module tests.install.test_flow",
        "tests/oci/test_c.py:2 imports the test module tests.oci.test_a",
        "tests/oci/test_cartridge_review2.py: named after how it came about",
        "tests/oci/test_d.py:2 imports the test module tests.oci.test_a",
        "tests/oci/test_registry_hostile_review.py: named after how it came about",
        "scripts/soak.py:1 imports the test module tests.release.test_run",
    ], got


def test_the_tests_are_laid_out_by_subject() -> None:
    problems = layout_problems(REPO)
    hint = "name a test after what it tests; move what test modules share to tests/harness"
    assert not problems, "\n".join([*problems, hint])


def test_a_moved_test_named_by_a_doc_or_script_is_seen(tmp_path: Path) -> None:
    _write(tmp_path, "tests/oci/test_a.py", "# see tests/oci/test_b.py and tests/harness/env.py\n")
    _write(tmp_path, "tests/harness/env.py")
    _write(tmp_path, "docs/guide.md", "run `pytest tests/unit/test_a.py`\n")
    _write(tmp_path, "docs/decisions/0001-x.md", "tests/unit/test_gone.py (history)\n")
    _write(tmp_path, "Makefile", "fast:\n\tpytest tests/oci/test_a.py\n")
    assert stale_test_paths(tmp_path) == ["docs/guide.md:1: tests/unit/test_a.py",
                                          "tests/oci/test_a.py:1: tests/oci/test_b.py"]


def test_every_test_file_named_exists() -> None:
    stale = stale_test_paths(REPO, skip=frozenset({"tests/walks/test_test_layout.py"}))  # its plants
    assert not stale, "\n".join(stale)


@pytest.fixture(scope="module")
def mutate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("acx_mutate_script", REPO / "scripts" / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mutation_sets_name_files_that_exist(mutate: ModuleType) -> None:
    """Each group's source and test files, each exclusion and each trust-core glob of
    scripts/mutate.py names something that exists (a moved test would silently drop out)."""
    missing = []
    for name, (sources, tests) in mutate.GROUPS.items():
        missing += [f"GROUPS[{name}]: {p}" for p in (*sources, *tests) if not (REPO / p).is_file()]
        missing += [f"GROUPS[{name}]: {p} is not a test file" for p in tests
                    if not Path(p).name.startswith("test_")]
    missing += [f"WIDE_EXCLUDE: {p}" for p in mutate.WIDE_EXCLUDE if not (REPO / p).is_file()]
    missing += [f"TESTS: {p}" for p in mutate.TESTS if not (REPO / p).is_dir()]
    missing += [f"TRUST_CORE: {g}" for g in mutate.TRUST_CORE if not list(REPO.glob(g))]
    assert not missing, missing
    wide = mutate.wide_tests()
    assert wide and not set(wide) & set(mutate.WIDE_EXCLUDE)
    assert all((REPO / p).is_file() for p in wide)


def test_make_test_fast_runs_the_folders_mutate_calls_fast(mutate: ModuleType) -> None:
    text = (REPO / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    m = re.search(r"^FAST_TESTS := (.+)$", text, re.M)
    assert m, "Makefile: no FAST_TESTS line"
    assert m[1].split() == list(mutate.TESTS)


def test_mutate_help_runs() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "mutate.py"), "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "--groups" in proc.stdout, proc.stderr
