"""The cartridge verify path stays one you can read in one sitting (issue 31): every
`acxoci.cartridge` module `acx cartridge verify` imports counts at most 2,000 code lines
(non-blank, not starting with `#`), and none of them starts a process, reads `/proc`, parses
argv or tunes the garbage collector."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.harness.env import REPO

BUDGET = 2000
_LOADED = """
import json, sys
from acxoci.cli import main
sys.argv = ["acx", "cartridge", "verify", sys.argv[1]]
try:
    main.main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("acxoci.cartridge"))), file=sys.stderr)
"""
FORBIDDEN_IMPORTS = {"subprocess", "multiprocessing", "gc", "concurrent.futures"}


def _verify_modules(vectors_dir: Path) -> list[Path]:
    out = subprocess.run([sys.executable, "-c", _LOADED, str(vectors_dir / "sample" / "sample.acx")],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    names = json.loads(out.stderr.strip().splitlines()[-1])
    paths = []
    for name in names:
        base = REPO / Path(*name.split("."))
        paths.append(base / "__init__.py" if base.is_dir() else base.with_suffix(".py"))
    return paths


def code_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.strip().startswith("#"))


def machinery(path: Path) -> list[str]:
    """What the verify path must not do, found in one module's source."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [f"imports {n}" for n in names if n in FORBIDDEN_IMPORTS]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "/proc/" in node.value:
            found.append("reads /proc")
        if isinstance(node, ast.Attribute) and node.attr == "argv":
            found.append("reads sys.argv")
    return found


def test_the_scan_sees_machinery(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import gc\nimport sys\nfrom subprocess import run\nP = '/proc/self/fd'\nA = sys.argv\n")
    assert machinery(bad) == ["imports gc", "imports subprocess", "reads /proc", "reads sys.argv"]


def test_verify_path_is_within_budget_and_plain(vectors_dir: Path) -> None:
    paths = _verify_modules(vectors_dir)
    assert REPO / "acxoci" / "cartridge" / "verify.py" in paths and len(paths) > 3
    total = sum(code_lines(p) for p in paths)
    assert total <= BUDGET, {p.name: code_lines(p) for p in paths}
    problems = [f"{p.relative_to(REPO)}: {m}" for p in paths for m in machinery(p)]
    assert not problems, problems
