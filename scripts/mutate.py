"""`make mutate`: mutation testing of the trust core with mutmut, then killed/survived per file.

mutmut runs in a scratch copy of the repository (`.mutate/work`, git-ignored) whose pyproject.toml
gets a `[tool.mutmut]` section naming the files to mutate and the tests to run, so the repository's
own files are never rewritten. Survivors are listed by name; `--show NAME` prints one's diff
(run inside `.mutate/work`: `../../.venv/bin/mutmut show NAME`).

    python scripts/mutate.py                              # the whole trust core (slow: hours)
    python scripts/mutate.py --files attest/dsse.py       # one file
    python scripts/mutate.py --report                     # re-print the last run's table
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / ".mutate" / "work"
TRUST_CORE = (
    "attest/*.py",
    "acxoci/cartridge/reader.py",
    "acxoci/cartridge/manifest.py",
    "acxoci/cartridge/verify.py",
    "acxoci/cartridge/sqlar.py",
    "acxoci/install/checks.py",
    "acxoci/level/credential.py",
    "acxoci/level/status.py",
    "acxoci/level/binding.py",
    "acxoci/workflow/verify.py",
    "acxoci/oci/digest.py",
)
TESTS = ("tests/unit", "tests/property", "tests/fuzz")
COPY = ("attest", "acxoci", "tests", "schemas", "examples", "scripts", "README.md", "pyproject.toml")
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
LINE = re.compile(r"^\s*(?P<name>[\w.]+__mutmut_\d+): (?P<status>.+?)\s*$")


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def prepare(files: list[str], tests: list[str]) -> None:
    """A fresh scratch copy of the repo with the mutmut section appended to its pyproject.toml."""
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, WORK / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, WORK / name)
    section = (
        "\n[tool.mutmut]\n"
        'source_paths = ["attest", "acxoci"]\n'
        f"only_mutate = {_toml_list(files)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
        'also_copy = ["examples", "schemas", "scripts", "README.md"]\n'
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "-m", "not interop"]\n'
    )
    with (WORK / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(section)


def _env() -> dict[str, str]:
    shared = os.environ.get("ACX_SHARED_DIR") or str(REPO.parent / "shared")
    return {**os.environ, "ACX_SHARED_DIR": shared, "PYTHONPATH": ""}


def run(max_children: int) -> int:
    mutmut = Path(sys.executable).parent / "mutmut"
    log = WORK.parent / "run.log"
    print(f"mutmut run in {WORK} (progress: {log})", flush=True)
    with log.open("w") as out:
        cmd = [str(mutmut), "run", "--max-children", str(max_children)]
        return subprocess.call(cmd, cwd=WORK, env=_env(), stdout=out, stderr=subprocess.STDOUT)


def results() -> dict[str, str]:
    """mutant name → status from `mutmut results --all true`."""
    mutmut = Path(sys.executable).parent / "mutmut"
    out = subprocess.run([str(mutmut), "results", "--all", "true"], cwd=WORK, env=_env(),
                         capture_output=True, text=True, check=False).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            found[m["name"]] = m["status"]
    return found


def _file_of(name: str) -> str:
    module = name.split("__mutmut_")[0].rsplit(".", 1)[0]
    return module.replace(".", "/") + ".py"


def report(found: dict[str, str]) -> tuple[int, int]:
    per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for name, status in found.items():
        per[_file_of(name)]["killed" if status in KILLED else status] += 1
    print(f"{'file':42} {'mutants':>8} {'killed':>7} {'survived':>9} {'other':>6} {'killed %':>9}")
    tk = ts = 0
    for f in sorted(per):
        c = per[f]
        total = sum(c.values())
        k, s = c.get("killed", 0), c.get("survived", 0)
        other = total - k - s
        tk, ts = tk + k, ts + s
        pct = 100 * k / (k + s) if k + s else 100.0
        print(f"{f:42} {total:8} {k:7} {s:9} {other:6} {pct:8.1f}%")
    pct = 100 * tk / (tk + ts) if tk + ts else 100.0
    print(f"mutate: {tk + ts} effective mutants, {tk} killed, {ts} survived, {pct:.1f}% killed")
    survivors = sorted(n for n, s in found.items() if s == "survived")
    if survivors:
        print("\nsurvived (inspect with `mutmut show NAME` in .mutate/work):")
        for n in survivors:
            print(f"  {n}")
    return tk, ts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", default=list(TRUST_CORE), help="globs of files to mutate")
    ap.add_argument("--tests", nargs="*", default=list(TESTS), help="pytest paths to run against mutants")
    ap.add_argument("--max-children", type=int, default=int(os.environ.get("MUTATE_JOBS") or 2))
    ap.add_argument("--report", action="store_true", help="only print the last run's results")
    ap.add_argument("--min-killed", type=float, default=90.0, help="fail below this kill percentage")
    args = ap.parse_args()
    if not args.report:
        prepare(args.files, args.tests)
        rc = run(args.max_children)
        if rc not in (0, 1):
            print(f"mutmut run exited {rc}", file=sys.stderr)
    found = results()
    if not found:
        print("no mutmut results (run without --report first)", file=sys.stderr)
        return 1
    killed, survived = report(found)
    if killed + survived == 0:
        print("no mutant was tested (see .mutate/run.log)", file=sys.stderr)
        return 1
    return 0 if 100 * killed / (killed + survived) >= args.min_killed else 1


if __name__ == "__main__":
    sys.exit(main())
