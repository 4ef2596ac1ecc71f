"""`make mutate`: mutation testing of the trust core with mutmut, in two stages, killed per file.

mutmut runs in scratch copies of the repository (`.mutate/<name>`, git-ignored) whose
pyproject.toml gets a `[tool.mutmut]` section naming the files to mutate and the tests to run, so
the repository's own files are never rewritten. Stage 1 runs each group of files (GROUPS) against
the tests written for it, which is fast, then runs each survivor once more against all of the
group's test files (mutmut's trace of which tests reach a function misses some); stage 2 runs
only the survivors left against the wide selection (every test file of the FAST_FOLDERS but
those in WIDE_EXCLUDE), where mutmut again runs only the tests it traced reaching the function. A
mutant is killed when any test fails, so the stages give the same verdicts as one wide run, in a
fraction of the time.

    python scripts/mutate.py                              # both stages over every group (about an hour)
    python scripts/mutate.py --groups level checks        # some groups
    python scripts/mutate.py --report                     # re-print the last table
    python scripts/mutate.py --work one --files acxoci/attest/dsse.py --tests tests/attest/test_dsse_verify.py
    python scripts/mutate.py --report --work one          # one ad-hoc run's table
    python scripts/mutate.py --work two --survivors-of one --files acxoci/attest/dsse.py --tests tests/attest
    python scripts/mutate.py --work one --rerun 'acxoci.attest.dsse.x_*'   # re-run named mutants
    python scripts/mutate.py --work one --confirm tests/attest/test_dsse_verify.py  # new tests vs survivors

Inspect a survivor with `../../.venv/bin/mutmut show NAME` inside its scratch copy. A timeout (the
mutant's tests ran past mutmut's CPU-time limit) counts as killed but is shown in its own column; a
mutant no selected test reaches ("no tests") counts as survived. `--confirm` runs tests written
after a run against that run's survivors (each survivor switched on with mutmut's own
`MUTANT_UNDER_TEST`) and remembers which it kills in `.mutate/<work>.confirmed.json`. The last line
is always the summary: `mutate: N effective mutants, K killed, S survived, P% killed`.
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
from concurrent.futures import ThreadPoolExecutor
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRATCH = REPO / ".mutate"
TRUST_CORE = (
    "acxoci/attest/*.py",
    "acxoci/cartridge/reader.py",
    "acxoci/cartridge/manifest.py",
    "acxoci/cartridge/verify.py",
    "acxoci/cartridge/sqlar.py",
    "acxoci/cartridge/schema.py",
    "acxoci/install/checks.py",
    "acxoci/level/credential.py",
    "acxoci/level/status.py",
    "acxoci/level/binding.py",
    "acxoci/workflow/verify.py",
    "acxoci/oci/digest.py",
)
#: the test folders of the trust core's subjects, the property tests and the source walks: stage 2's
#: wide selection and the default of an ad-hoc run (`make test-fast` runs the same folders)
FAST_FOLDERS = ("attest", "attestation", "cartridge", "cli", "exchange", "install", "level", "oci",
                "policy", "property", "release", "walks", "workflow")
TESTS = tuple(f"tests/{s}" for s in FAST_FOLDERS)
# stage 1: each group of files against the tests written for it
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "checks": (("acxoci/install/checks.py",), ("tests/install/test_install_checks.py",
                                               "tests/install/test_install_check_results.py")),
    "level": (("acxoci/level/binding.py", "acxoci/level/credential.py", "acxoci/level/status.py"),
              ("tests/level/test_level_binding.py", "tests/level/test_level_credential.py",
               "tests/level/test_level_status.py", "tests/level/test_level_status_https.py",
               "tests/level/test_level_reasons.py")),
    "cartridge": (("acxoci/cartridge/verify.py", "acxoci/cartridge/manifest.py"),
                  ("tests/cartridge/test_cartridge_verify.py", "tests/cartridge/test_cartridge_reader.py",
                   "tests/cartridge/test_manifest_and_verify_edges.py",
                   "tests/cartridge/test_manifest_canonical.py",
                   "tests/cartridge/test_cartridge_open_races.py")),
    "reader": (("acxoci/cartridge/reader.py", "acxoci/cartridge/sqlar.py", "acxoci/cartridge/schema.py"),
               ("tests/cartridge/test_cartridge_reader.py", "tests/cartridge/test_cartridge_schema.py",
                "tests/cartridge/test_reader_typed_scans.py",
                "tests/cartridge/test_reader_btree_checks.py",
                "tests/cartridge/test_reader_open_refusals.py",
                "tests/cartridge/test_reader_sqlar_entries.py",
                "tests/cartridge/test_cartridge_open_races.py", "tests/cartridge/test_schema_tokens.py",
                "tests/cartridge/test_structure_as_sqlite_parses.py")),
    "attest": (("acxoci/attest/statuslist.py", "acxoci/attest/vc.py"),
               ("tests/attest/test_statuslist_bitstring.py", "tests/attest/test_vc_eddsa.py",
                "tests/attest/test_vc_refusals.py")),
    "trust": (("acxoci/attest/trust.py",),
              ("tests/attest/test_trust_registry.py", "tests/cli/test_key_trust.py",
               "tests/attest/test_trust_findings.py", "tests/attest/test_trust_verdicts_cli.py",
               "tests/attest/test_trust_registry_fields.py")),
    "decisions": (("acxoci/attest/trustdecision.py",),
                  ("tests/attest/test_trust_decisions.py", "tests/attestation/test_independent_time.py",
                   "tests/attest/test_trust_decision_edges.py")),
    "core": (("acxoci/attest/canonical.py", "acxoci/attest/dsse.py", "acxoci/attest/intoto.py",
              "acxoci/attest/keys.py", "acxoci/attest/cosignkey.py", "acxoci/attest/bundle.py",
              "acxoci/attest/b64.py", "acxoci/attest/errors.py", "acxoci/attest/__init__.py",
              "acxoci/workflow/verify.py", "acxoci/oci/digest.py"),
             ("tests/attest/test_canonical.py", "tests/attest/test_canonical_strict.py",
              "tests/attest/test_dsse_verify.py", "tests/attest/test_intoto.py",
              "tests/attest/test_intoto_strict.py",
              "tests/attest/test_keyfiles.py", "tests/attest/test_cosignkey_files.py",
              "tests/attest/test_bundle_model.py", "tests/attestation/test_attestation_formats.py",
              "tests/workflow/test_workflow_verify_verdicts.py",
              "tests/workflow/test_workflow_verify_bindings.py",
              "tests/oci/test_oci_digest.py", "tests/oci/test_oci_layout.py",
              "tests/oci/test_oci_shapes.py",
              "tests/oci/test_oci_descriptor.py", "tests/property/test_verifying_reader.py",
              "tests/oci/test_verifying_reader_copy.py", "tests/attest/test_attest_reports_whole.py",
              "tests/attest/test_cosignkey_fields.py")),
}
# stage 2 leaves out the test files that cannot pass under mutmut's trampolines, or test processes
WIDE_EXCLUDE: dict[str, str] = {
    "tests/cartridge/test_hostile_cartridges.py":
        "memory bound of a child `acx` that imports every mutant's code",
    "tests/cartridge/test_btree_walks_disagree.py": "the same measured child as test_hostile_cartridges.py",
    "tests/oci/test_oci_bounds.py": "memory bound of a measured child process",
    "tests/oci/test_registry_client_refusals.py": "memory bound of a measured child process",
    "tests/oci/test_hostile_layout.py": "5 s and 150 MB bounds around each command, which trampolines slow",
    "tests/oci/test_hostile_registry.py": "5 s and 150 MB bounds around each command, which trampolines slow",
    "tests/attestation/test_sigstore_verify.py": "memory bound of a measured child process",
    "tests/release/test_concurrency.py": "races real `acx` processes: timing, not verdicts",
    "tests/release/test_disk_full.py": "child processes under RLIMIT_FSIZE",
    "tests/walks/test_architecture.py": "reads the import graph, which the trampolines change",
    "tests/cli/test_a_command_imports_what_it_uses.py":
        "reads the import graph, which the trampolines change",
    "tests/walks/test_no_recursion.py": "reads the source, which the trampolines rewrite",
    "tests/walks/test_bounded_reads.py": "reads the source, which the trampolines rewrite",
    # fails on main without any mutant (json.loads in acxoci/authoring/walk.py and install/load.py),
    # which stops stage 2 before it starts; it reads source files, not the mutated code
    "tests/attest/test_canonical.py":
        "a source grep that fails on main today; no mutant changes its answer",
}


def wide_tests() -> list[str]:
    """Every test file of the FAST_FOLDERS except WIDE_EXCLUDE."""
    files = [f for s in FAST_FOLDERS for f in sorted((REPO / "tests" / s).glob("test_*.py"))]
    return [p for p in (str(f.relative_to(REPO)) for f in files) if p not in WIDE_EXCLUDE]


COPY = ("acxoci", "tests", "schemas", "examples", "scripts", "docs", "README.md", "pyproject.toml")
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
UNKILLED = {"survived", "no tests"}
LINE = re.compile(r"^\s*(?P<name>[\w.]+__mutmut_\d+): (?P<status>.+?)\s*$")


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def prepare(work: Path, files: list[str], tests: list[str]) -> None:
    """A fresh scratch copy of the repo with the mutmut section appended to its pyproject.toml."""
    if work.exists():
        shutil.rmtree(work)
    _confirmed_path(work).unlink(missing_ok=True)  # an earlier run's confirmations name other mutants
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, work / name)
    section = (
        "\n[tool.mutmut]\n"
        'source_paths = ["acxoci"]\n'
        f"only_mutate = {_toml_list(files)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
        'also_copy = ["examples", "schemas", "scripts", "docs", "README.md"]\n'
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "-m", "not interop"]\n'
    )
    with (work / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(section)


def _env() -> dict[str, str]:
    shared = os.environ.get("ACX_SHARED_DIR") or str(REPO.parent / "shared")
    return {**os.environ, "ACX_SHARED_DIR": shared, "PYTHONPATH": ""}


def run(work: Path, max_children: int, names: list[str]) -> int:
    """`mutmut run` in the scratch copy (all mutants, or only the named ones), logged beside it."""
    mutmut = Path(sys.executable).parent / "mutmut"
    log = work.parent / f"{work.name}.log"
    print(f"mutmut run in {work} (progress: {log})", flush=True)
    with log.open("w") as out:
        cmd = [str(mutmut), "run", "--max-children", str(max_children), *names]
        return subprocess.call(cmd, cwd=work, env=_env(), stdout=out, stderr=subprocess.STDOUT)


def results(work: Path) -> dict[str, str]:
    """mutant name → status from `mutmut results --all true`."""
    mutmut = Path(sys.executable).parent / "mutmut"
    out = subprocess.run([str(mutmut), "results", "--all", "true"], cwd=work, env=_env(),
                         capture_output=True, text=True, check=False).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            found[m["name"]] = m["status"]
    return found


def _confirmed_path(work: Path) -> Path:
    return work.parent / f"{work.name}.confirmed.json"


def confirmed(work: Path) -> dict[str, str]:
    """mutant name → "killed"/"timeout"/"survived" from earlier `--confirm` runs."""
    path = _confirmed_path(work)
    if not path.exists():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def _run_one(root: Path, name: str, tests: list[str], timeout: float) -> str:
    """The current tests against one mutant, switched on as mutmut does it."""
    env = {**_env(), "MUTANT_UNDER_TEST": name}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not interop", *tests]
    try:
        rc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, timeout=timeout,
                            check=False).returncode
    except subprocess.TimeoutExpired:
        return "timeout"
    if rc == 0:
        return "survived"
    if rc == 1:
        return "killed"
    raise SystemExit(f"pytest exited {rc} for {name}: check the tests given to --confirm")


def confirm(work: Path, tests: list[str], patterns: list[str], jobs: int, timeout: float = 600.0) -> None:
    """Run `tests` (as they are now) against the run's survivors, or the ones matching `patterns`."""
    root = work.parent / f"{work.name}.confirm"  # a copy: a mutmut run may still be using `mutants`
    if root.exists():
        shutil.rmtree(root)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "tests", "mutmut-stats.json")
    shutil.copytree(work / "mutants", root, ignore=skip)
    shutil.copytree(REPO / "tests", root / "tests", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if _run_one(root, "", tests, timeout) != "survived":
        raise SystemExit(f"the tests given to --confirm fail without a mutant: {tests}")
    done = confirmed(work)
    todo = sorted(n for n, s in results(work).items()
                  if s in UNKILLED and done.get(n) not in KILLED
                  and (not patterns or any(fnmatch(n, p) for p in patterns)))
    print(f"confirming {len(todo)} survivors against {' '.join(tests)}", flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        outcomes = pool.map(lambda n: _run_one(root, n, tests, timeout), todo)
        for name, status in zip(todo, outcomes, strict=True):
            done[name] = status
            _confirmed_path(work).write_text(json.dumps(done, indent=1, sort_keys=True), encoding="utf-8")
            print(f"  {name}: {status}", flush=True)


def _rank(status: str) -> int:
    """Which of two runs' verdicts on one mutant stands: a kill, else a survival, else nothing."""
    return 2 if status in KILLED else 1 if status != "not checked" else 0


def _file_of(name: str) -> str:
    module = name.split("__mutmut_")[0].rsplit(".", 1)[0]
    return module.replace(".", "/") + ".py"


def report(found: dict[str, str], later: set[str]) -> tuple[int, int]:
    """The per-file table (`later`: killed only by tests written after the run), the survivors'
    names, and the summary line last."""
    per: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for name, status in found.items():
        c = per[_file_of(name)]
        c["killed" if status in KILLED else status] += 1
        if status == "timeout":
            c["timeout"] += 1
        if name in later:
            c["later"] += 1
    print(f"{'file':42} {'mutants':>8} {'killed':>7} {'timeout':>8} {'later':>6} {'survived':>9} "
          f"{'no tests':>9} {'not run':>8} {'other':>6} {'killed %':>9}")
    tk = ts = tt = 0
    for f in sorted(per):
        c = per[f]
        total = sum(v for key, v in c.items() if key not in ("timeout", "later"))
        k, t, s, n = c.get("killed", 0), c.get("timeout", 0), c.get("survived", 0), c.get("no tests", 0)
        pending = c.get("not checked", 0)  # a run stopped before it reached them
        other = total - k - s - n - pending
        tk, ts, tt = tk + k, ts + s + n, tt + t
        pct = 100 * k / (k + s + n) if k + s + n else 100.0
        print(f"{f:42} {total:8} {k:7} {t:8} {c.get('later', 0):6} {s:9} {n:9} {pending:8} {other:6} "
              f"{pct:8.1f}%")
    survivors = sorted(n for n, s in found.items() if s in UNKILLED)
    if survivors:
        print("\nnot killed (inspect with `mutmut show NAME` in the scratch copy):")
        for name in survivors:
            print(f"  {name}: {found[name]}")
    pct = 100 * tk / (tk + ts) if tk + ts else 100.0
    print(f"\n{tt} of the killed are timeouts")
    print(f"mutate: {tk + ts} effective mutants, {tk} killed, {ts} survived, {pct:.1f}% killed")
    return tk, ts


def staged(groups: list[str], jobs: int, wide: bool = True) -> list[Path]:
    """Stage 1 then (with `wide`) stage 2 for each group; the scratch copies that make the table."""
    works: list[Path] = []
    for name in groups:
        files, tests = GROUPS[name]
        first, second = SCRATCH / f"s1-{name}", SCRATCH / f"s2-{name}"
        prepare(first, list(files), list(tests))
        run(first, jobs, [])
        works.append(first)
        # mutmut runs only the tests its trace saw reaching the mutated function, and that trace
        # misses some (code reached from another thread, for example): each survivor is run
        # once more against every test file of its group, as `--confirm` does
        confirm(first, list(tests), [], jobs)
        done = confirmed(first)
        names = sorted(n for n, s in results(first).items() if s in UNKILLED and done.get(n) not in KILLED)
        if names and wide:
            prepare(second, list(files), wide_tests())
            run(second, jobs, names)
            works.append(second)
    return works


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", nargs="*", default=list(GROUPS), choices=list(GROUPS),
                    help="groups for the two-stage run (default: all)")
    ap.add_argument("--first-stage-only", action="store_true",
                    help="stage 1 only (each group against its own tests): minutes, not an hour")
    ap.add_argument("--files", nargs="*", default=None, help="globs of files to mutate (one ad-hoc run)")
    ap.add_argument("--tests", nargs="*", default=list(TESTS), help="pytest paths for an ad-hoc run")
    ap.add_argument("--max-children", type=int, default=int(os.environ.get("MUTATE_JOBS") or 2))
    ap.add_argument("--work", nargs="*", default=None,
                    help="scratch copy name(s) under .mutate/ (several only with --report; with --report, "
                         "WORK:GLOB counts only WORK's mutants of files matching GLOB, e.g. a run made "
                         "before one of its files changed)")
    ap.add_argument("--report", action="store_true", help="only print the last run's results")
    ap.add_argument("--rerun", nargs="*", default=[], help="re-run these mutants (names or globs)")
    ap.add_argument("--survivors-of", default=None, metavar="WORK",
                    help="a fresh run of only the mutants WORK's run did not kill (a second, wider stage)")
    ap.add_argument("--confirm", nargs="*", default=None,
                    help="run these tests (as they are now) against the run's survivors")
    ap.add_argument("--min-killed", type=float, default=90.0, help="fail below this kill percentage")
    args = ap.parse_args()
    only: dict[Path, str] = {}
    if args.work is None:  # the staged plan's scratch copies
        works = [SCRATCH / f"{stage}-{g}" for g in args.groups for stage in ("s1", "s2")]
        if not args.report:
            if args.files or args.rerun or args.survivors_of or args.confirm is not None:
                ap.error("--files, --rerun, --survivors-of and --confirm need --work")
            works = staged(args.groups, args.max_children, wide=not args.first_stage_only)
        works = [w for w in works if w.exists()]
    else:
        works = [SCRATCH / w.split(":", 1)[0] for w in args.work]
        if args.report:  # WORK:GLOB counts only that run's mutants of files matching GLOB
            only.update({SCRATCH / w.split(":", 1)[0]: w.split(":", 1)[1] for w in args.work if ":" in w})
        if args.confirm is not None:
            if len(works) != 1 or not args.confirm:
                ap.error("--confirm takes one --work and the tests to run")
            confirm(works[0], args.confirm, args.rerun, args.max_children)
        elif not args.report:
            if len(works) != 1:
                ap.error("one --work for a run")
            names = list(args.rerun)
            if args.survivors_of:
                names = sorted(n for n, s in results(SCRATCH / args.survivors_of).items() if s in UNKILLED)
                if not names:
                    print(f"{args.survivors_of}: no survivors", file=sys.stderr)
                    return 0
            if not args.rerun:
                prepare(works[0], args.files or list(TRUST_CORE), args.tests)
            rc = run(works[0], args.max_children, names)
            if rc not in (0, 1):
                print(f"mutmut run exited {rc}", file=sys.stderr)
    found: dict[str, str] = {}
    later: set[str] = set()
    for work in works:  # a kill by any run is a kill (each selection is part of the unit + property tests)
        def counted(name: str, work: Path = work) -> bool:
            return work not in only or fnmatch(_file_of(name), only[work])

        for n, s in results(work).items():
            if counted(n) and (n not in found or _rank(s) > _rank(found[n])):
                found[n] = s
        for name, status in confirmed(work).items():
            if counted(name) and status in KILLED and found.get(name) in UNKILLED:
                found[name] = status
                later.add(name)
    if not found:
        print("no mutmut results (run without --report first)", file=sys.stderr)
        return 1
    killed, survived = report(found, later)
    if killed + survived == 0:
        print("no mutant was tested (see the .mutate/*.log)", file=sys.stderr)
        return 1
    return 0 if 100 * killed / (killed + survived) >= args.min_killed else 1


if __name__ == "__main__":
    sys.exit(main())
