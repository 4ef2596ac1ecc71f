"""docs/github-actions-example.yml runs: its steps, in order, as a GitHub runner would run them,
against a loopback registry with basic auth and the GITHUB_* variables set, including a first
attempt that dies in the middle of the release and a re-run that resumes from the cached goal.

What stands in for GitHub (and nothing else is changed):
- `actions/checkout`: a fresh git workspace made of examples/github-actions/ (with freshly
  generated keys in trust/registry.json and keys/attest.pub.pem), one per attempt, as a re-run
  gets a fresh runner;
- `actions/setup-python`: a clean venv whose `pip` installs the wheel `make dist` built (the job
  variable ACXOCI points at it; dependencies come from the project venv, so no network);
- `actions/cache/restore` / `save`: a folder of cache entries with GitHub's key and restore-key
  (newest prefix match) rules; `actions/upload-artifact`: a check that its paths match files;
- the job variable REGISTRY: the loopback registry instead of ghcr.io;
- GitHub's OIDC token service and the public-good Sigstore: the loopback Sigstore stack (real
  Fulcio, Rekor v2 and TSA; stand-in issuer serving the runner's token endpoint), named by the job
  variables SIGSTORE_TRUST_CONFIG and OIDC_ISSUER;
- `uses: ./tools/acxoci` (the acx action): the repository's own action.yml, its composite steps run
  like `run:` steps with its `inputs`.
`run:` steps run with `bash --noprofile --norc -eo pipefail`, `$GITHUB_ENV` is honoured, and
`if: always()` steps run after a failure while the others are skipped. Any other `uses:` or
expression fails the test, so the example cannot grow a step this test silently ignores.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml

from tests.harness import env
from tests.harness.servers import Registry, start_distribution
from tests.harness.sigstack import SigStack

pytestmark = pytest.mark.interop

REPO = env.REPO
WORKFLOW = REPO / "docs" / "github-actions-example.yml"
EXAMPLE = REPO / "examples" / "github-actions"
OWNER = "Octo-Org"  # mixed case on purpose: image names and publisher ids must be lowercased
ACTOR = "octocat"
TOKEN = "ghs-loopback-token"
TAG = "v1.0.0"  # the example package's artifactVersion: install refuses a tag naming another version
RUN_ID = "4242"
SHA = "5" * 40
WORKFLOW_FILE = ".github/workflows/release.yml"
RELEASE_STEP = "Release (keyless, with SLSA provenance; resumable, retried only on exit 6)"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
STEP_TIMEOUT = 600


@dataclass
class StepResult:
    name: str
    status: str  # success | failure | skipped
    output: str = ""


@dataclass
class Attempt:
    number: int
    workspace: Path
    temp: Path
    steps: list[StepResult] = field(default_factory=list)

    def step(self, prefix: str) -> StepResult:
        found = [s for s in self.steps if s.name.startswith(prefix)]
        assert len(found) == 1, f"no single step named {prefix!r}: {[s.name for s in self.steps]}"
        return found[0]

    def log(self) -> str:
        return "\n".join(f"--- [{s.status}] {s.name}\n{s.output}" for s in self.steps)


def _acx(*args: str, cwd: Path, extra_env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, "-m", "acxoci", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(extra_env or {})}, timeout=120)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout


class Runner:
    """Runs one job of a workflow file the way a GitHub-hosted runner does, for this example."""

    def __init__(self, root: Path, secrets: dict[str, str], job_env: dict[str, str], wheel: Path,
                 oidc: dict[str, str] | None = None) -> None:
        self.root = root
        self.oidc = oidc or {}  # the runner's OIDC token endpoint (ACTIONS_ID_TOKEN_REQUEST_*)
        self.secrets = secrets
        self.job_env_overrides = job_env
        self.wheel = wheel
        self.cache = root / "cache"
        self.cache.mkdir(parents=True)
        self.doc = yaml.safe_load(WORKFLOW.read_text("utf-8"))
        (self.job,) = self.doc["jobs"].values()

    def context(self, attempt: int) -> dict[str, str]:
        job_env = {k: str(v) for k, v in self.job.get("env", {}).items()}
        job_env.update(self.job_env_overrides)
        return {"github.ref_name": TAG, "github.run_id": RUN_ID, "github.run_attempt": str(attempt),
                "github.actor": ACTOR, "github.repository_owner": OWNER, "github.action_path": str(REPO),
                **{f"secrets.{k}": v for k, v in self.secrets.items()},
                **{f"env.{k}": v for k, v in job_env.items() if "${{" not in v}}

    def expand(self, text: str, attempt: int, extra: dict[str, str] | None = None) -> str:
        ctx = {**self.context(attempt), **(extra or {})}

        def one(m: re.Match[str]) -> str:
            if m[1] not in ctx:
                pytest.fail(f"the example uses ${{{{ {m[1]} }}}}, which this test cannot evaluate")
            return ctx[m[1]]

        return EXPR.sub(one, text)

    def make_workspace(self, number: int, keys: Path) -> Attempt:
        """A fresh checkout: the example files, the test's public keys, one git commit."""
        base = self.root / f"attempt-{number}"
        ws, temp = base / "workspace", base / "runner-temp"
        shutil.copytree(EXAMPLE, ws, symlinks=False)
        shutil.copy(keys / "trust.json", ws / "trust" / "registry.json")
        temp.mkdir(parents=True)
        (base / "home").mkdir()
        git_env = {**os.environ, "GIT_AUTHOR_DATE": "2026-11-30T12:00:00Z",
                   "GIT_COMMITTER_DATE": "2026-11-30T12:00:00Z", "HOME": str(base / "home")}
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                     "commit", "-qm", "x"]):
            subprocess.run(cmd, cwd=ws, check=True, env=git_env, capture_output=True)
        return Attempt(number, ws, temp)

    def python(self, attempt: Attempt) -> Path:
        """setup-python: a clean interpreter whose site sees the project's dependencies only."""
        venv = attempt.workspace.parent / "python"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        site = subprocess.run([str(venv / "bin" / "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "zz-acxoci-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        return venv / "bin"

    def run(self, attempt: Attempt, step_env: dict[str, dict[str, str]]) -> Attempt:
        n = attempt.number
        github_env = attempt.temp / "github_env"
        github_env.touch()
        job_env = {k: self.expand(str(v), n) for k, v in self.job.get("env", {}).items()}
        job_env.update(self.job_env_overrides)
        path_dirs = [p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(str(REPO))]
        base_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("ACX_", "COSIGN_", "DOCKER_", "VIRTUAL_ENV", "XDG_", "GITHUB_"))}
        base_env.update(self.oidc)
        base_env.update(
            CI="true", GITHUB_ACTIONS="true", GITHUB_REF_NAME=TAG, GITHUB_REF=f"refs/tags/{TAG}",
            GITHUB_SHA=SHA, GITHUB_WORKFLOW_REF=f"{OWNER}/agents/{WORKFLOW_FILE}@refs/tags/{TAG}",
            GITHUB_SERVER_URL="https://github.com", RUNNER_ENVIRONMENT="github-hosted",
            GITHUB_EVENT_NAME="push",
            GITHUB_REF_TYPE="tag", GITHUB_REPOSITORY=f"{OWNER}/agents", GITHUB_REPOSITORY_OWNER=OWNER,
            GITHUB_ACTOR=ACTOR, GITHUB_RUN_ID=RUN_ID, GITHUB_RUN_ATTEMPT=str(n), GITHUB_ENV=str(github_env),
            GITHUB_WORKSPACE=str(attempt.workspace), RUNNER_TEMP=str(attempt.temp),
            HOME=str(attempt.workspace.parent / "home"), PIP_NO_INDEX="1", PIP_NO_DEPS="1",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
        )
        failed = False
        for i, step in enumerate(self.job["steps"]):
            name = step.get("name") or step.get("uses") or f"step {i}"
            cond = step.get("if", "success()")
            if cond not in ("success()", "always()"):
                pytest.fail(f"step {name!r}: this test only knows if: success() and always(), not {cond!r}")
            if failed and cond != "always()":
                attempt.steps.append(StepResult(name, "skipped"))
                continue
            envs = {**base_env, **job_env, **_read_github_env(github_env), **step_env.get(name, {})}
            envs["PATH"] = os.pathsep.join(path_dirs)
            if (attempt.workspace.parent / "python").exists():
                envs["PATH"] = f"{attempt.workspace.parent / 'python' / 'bin'}{os.pathsep}{envs['PATH']}"
            ok, out = self.step(step, name, attempt, envs)
            attempt.steps.append(StepResult(name, "success" if ok else "failure", out))
            failed = failed or not ok
        return attempt

    def step(self, step: dict[str, Any], name: str, attempt: Attempt,
             envs: dict[str, str]) -> tuple[bool, str]:
        n, ws = attempt.number, attempt.workspace
        if "run" in step:
            script = attempt.temp / f"step-{len(attempt.steps)}.sh"
            script.write_text(self.expand(step["run"], n))
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=ws,
                                  env=envs, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=STEP_TIMEOUT)
            return proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
        uses = step["uses"].split("@", 1)[0]
        with_ = {k: self.expand(str(v), n) for k, v in step.get("with", {}).items()}
        if uses == "./tools/acxoci":  # the acx action: this repository's action.yml (composite)
            return self.composite(with_, attempt, envs)
        if uses == "actions/checkout":
            return True, "workspace prepared by the test"
        if uses == "actions/setup-python":
            self.python(attempt)
            return True, f"python {with_.get('python-version')} -> clean venv"
        if uses == "actions/cache/restore":
            return True, self.restore(ws / with_["path"], with_["key"], with_.get("restore-keys", ""))
        if uses == "actions/cache/save":
            return True, self.save(ws / with_["path"], with_["key"])
        if uses == "actions/upload-artifact":
            patterns = [p.strip() for p in with_["path"].splitlines() if p.strip()]
            found = [f for p in patterns for f in glob.glob(str(ws / p))]
            return True, f"would upload {len(found)} file(s)"
        pytest.fail(f"step {name!r} uses {uses}, which this test does not know how to run")

    def composite(self, with_: dict[str, str], attempt: Attempt, envs: dict[str, str]) -> tuple[bool, str]:
        """Run action.yml's steps: its inputs (defaults, then `with:`), each `run:` with bash."""
        action = yaml.safe_load((REPO / "action.yml").read_text("utf-8"))
        assert action["runs"]["using"] == "composite"
        unknown = set(with_) - set(action.get("inputs", {}))
        assert not unknown, f"the example passes inputs the action does not have: {unknown}"
        inputs = {k: self.expand(str(v.get("default", "")), attempt.number)
                  for k, v in action.get("inputs", {}).items()}
        inputs.update(with_)
        ctx = {f"inputs.{k}": v for k, v in inputs.items()}
        out = []
        for i, st in enumerate(action["runs"]["steps"]):
            assert "run" in st and st.get("shell") == "bash", "the action's steps are bash run: steps"
            script = attempt.temp / f"action-{len(attempt.steps)}-{i}.sh"
            script.write_text(self.expand(st["run"], attempt.number, ctx))
            step_env = {k: self.expand(str(v), attempt.number, ctx) for k, v in st.get("env", {}).items()}
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                                  cwd=attempt.workspace, env={**envs, **step_env}, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=STEP_TIMEOUT)
            out.append(f"[action: {st.get('name')}] exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
            if proc.returncode != 0:
                return False, "\n".join(out)
        return True, "\n".join(out)

    def restore(self, path: Path, key: str, restore_keys: str) -> str:
        exact = self.cache / key
        hit = exact if exact.is_dir() else None
        if hit is None:
            for prefix in (p.strip() for p in restore_keys.splitlines() if p.strip()):
                matches = sorted((d for d in self.cache.iterdir() if d.name.startswith(prefix)),
                                 key=lambda d: d.stat().st_mtime_ns, reverse=True)
                if matches:
                    hit = matches[0]
                    break
        if hit is None:
            return "cache miss"
        shutil.copytree(hit, path, symlinks=True)
        return f"restored {hit.name}"

    def save(self, path: Path, key: str) -> str:
        if (self.cache / key).exists():
            return f"cache entry {key} exists (not saved)"
        if not path.exists():
            return f"warning: {path.name} does not exist (nothing saved)"
        shutil.copytree(path, self.cache / key, symlinks=True)
        return f"saved {key}"


def _read_github_env(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if "<<" in line.split("=", 1)[0]:
            pytest.fail("multi-line $GITHUB_ENV values are not emulated by this test")
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make dist` into a scratch folder: a wheel and an sdist, each checked in a clean venv."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(["make", "dist", f"DIST={out}"], cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "check-dist: wheel" in proc.stdout and "check-dist: sdist" in proc.stdout, proc.stdout
    (whl,) = out.glob("acxoci-*.whl")
    return whl


@pytest.fixture
def private_registry(tmp_path: Path) -> Iterator[Registry]:
    reg = start_distribution(env.peer("docker-registry"), tmp_path / "registry", basic_auth=(ACTOR, TOKEN))
    yield reg
    reg.stop()


def _keys(folder: Path) -> dict[str, str]:
    """The repository secrets (the cartridge signing key; attestations are keyless) and the trust file."""
    folder.mkdir()
    _acx("key", "generate", "-o", "signing.pem", cwd=folder)
    owner = OWNER.lower()
    _acx("key", "trust", "signing.pub.pem", "--publisher", f"io.github.{owner}", "-r", "trust.json",
         "--oidc-subject", f"repo:{owner}/agents:ref:refs/tags/{TAG}",
         "--not-before", "2026-01-01T00:00:00Z", cwd=folder)
    return {"ACX_SIGNING_KEY": (folder / "signing.pem").read_text(), "GITHUB_TOKEN": TOKEN}


@pytest.mark.timeout(1500)
def test_the_example_releases_and_a_rerun_resumes_a_failed_attempt(
    tmp_path: Path, wheel: Path, private_registry: Registry, sigstack_stack: SigStack
) -> None:
    secrets = _keys(tmp_path / "keys")
    overrides = {"REGISTRY": private_registry.host, "ACXOCI": str(wheel),
                 "SIGSTORE_TRUST_CONFIG": str(sigstack_stack.trust_config),
                 "OIDC_ISSUER": sigstack_stack.issuer}
    claims = urlencode({"repo": f"{OWNER}/agents", "ref": f"refs/tags/{TAG}", "workflow": WORKFLOW_FILE,
                        "sha": SHA})
    oidc = {"ACTIONS_ID_TOKEN_REQUEST_URL": f"{sigstack_stack.env['ACTIONS_ID_TOKEN_REQUEST_URL']}?{claims}",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": sigstack_stack.env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"]}
    runner = Runner(tmp_path / "gha", secrets, overrides, wheel, oidc)

    # Attempt 1: the release process dies (SIGKILL) after its third journaled effect (a run
    # observer installed by the test's sitecustomize; the wheel's acx has no kill switch).
    hook = {"PYTHONPATH": str(REPO / "tests" / "harness" / "killhook"), "ACX_TEST_KILL_AFTER": "3"}
    first = runner.run(runner.make_workspace(1, tmp_path / "keys"),
                       {RELEASE_STEP: hook})
    log = first.log()
    assert first.step("Install acx").status == "success", log
    assert first.step("Build and sign").status == "success", log
    assert first.step("Release (").status == "failure", log
    assert first.step("Verify who built it").status == "skipped", log
    assert first.step("Save the goal folder").status == "success", log
    assert "saved acx-release-" in first.step("Save the goal folder").output, log
    assert first.step("Release status").status == "success", log

    # Attempt 2 (a re-run: fresh runner, new run_attempt) restores the goal and resumes it.
    second = runner.run(runner.make_workspace(2, tmp_path / "keys"), {})
    log = second.log()
    assert all(s.status == "success" for s in second.steps), log
    assert f"restored acx-release-{TAG}-{RUN_ID}-1" in second.step("Restore the goal folder").output
    journal = second.workspace / ".acx-release" / f"scenario-designer-{TAG}" / "journal.jsonl"
    entries = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    assert [e["type"] for e in entries].count("goal") == 1, "the re-run opened a second goal"
    starts = [e["runner"] for e in entries if e["type"] == "run" and e.get("event") == "start"]
    assert starts[0] == f"gha-{RUN_ID}-1" and starts[-1] == f"gha-{RUN_ID}-2", starts
    second_start = next(i for i, e in enumerate(entries) if e["type"] == "run"
                        and e.get("event") == "start" and e["runner"] == f"gha-{RUN_ID}-2")
    done = [(i, e["effect"]) for i, e in enumerate(entries)
            if e["type"] == "effect" and e.get("to") == "done"]
    before = {eff for i, eff in done if i < second_start}
    after = {eff for i, eff in done if i > second_start}
    assert before, "the killed attempt journaled no finished effect"
    assert after and not (before & after), (before, after)  # resumed: nothing done twice
    assert entries[-1]["type"] == "run" and entries[-1]["event"] == "end"

    # The consumer's install landed, under the lowercased owner.
    items = list((second.temp / "store" / "items").iterdir())
    assert len(items) == 1, items
    record = json.loads((items[0] / "record.json").read_text())
    assert record["repository"] == f"{private_registry.host}/{OWNER.lower()}/acx/scenario-designer"
    assert record["tag"] == TAG and record["publisherId"] == f"io.github.{OWNER.lower()}"
    verified = second.step("Verify who built it").output
    assert "PROVENANCE OK" in verified, verified


def test_every_file_the_example_names_is_shipped() -> None:
    """The repository files the workflow reads exist under examples/github-actions/."""
    text = WORKFLOW.read_text("utf-8")
    for name in ("agent/", "trust/registry.json", "acx-release.tmpl.yaml"):
        assert name in text, name
        assert (EXAMPLE / name).exists(), f"examples/github-actions/{name} is missing"
    plan = (EXAMPLE / "acx-release.tmpl.yaml").read_text()
    assert "dist/scenario-designer.acx" in plan and "policy.yaml" in plan
    doc = yaml.safe_load(text)
    steps = next(iter(doc["jobs"].values()))["steps"]
    uses = {s["uses"].split("@")[0]: s for s in steps if "uses" in s}
    assert "actions/cache" not in uses, "restore and save separately, so a failed attempt still saves"
    assert "./tools/acxoci" in uses and (REPO / "action.yml").exists()  # the acx action at the root
    assert doc["permissions"].get("id-token") == "write"  # keyless signing needs the job's OIDC token
    assert uses["actions/cache/save"].get("if") == "always()"
    assert "pip install acxoci\n" not in text  # not on PyPI: install from the repository
    # ... and not from a git URL of a repository nobody published: from source checked out with it
    assert "git+" not in text and "github.com/" not in text.split("ACXOCI:")[1].split("\n")[0]
    assert yaml.safe_load(text)["jobs"]["release"]["env"]["ACXOCI"].startswith("./")
