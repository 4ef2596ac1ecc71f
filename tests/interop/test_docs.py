"""Docs are tests: every fenced shell block in README.md and docs/*.md runs as written.

How a block is run: the blocks of one document run in order (a later block may use files an
earlier one wrote), each with `bash -euo pipefail`, in one scratch folder per document that holds
a copy of `examples/` and links to the repository's `Makefile`, `pyproject.toml` and `.venv` (so
`make venv && . .venv/bin/activate` is the no-op it is after setup). HOME and the XDG folders
point into the scratch folder, so nothing touches the user's docker config or install store.
When a runnable block names `registry.example`, a distribution registry is started on
127.0.0.1 and the name is replaced by its `host:port`; when a document's blocks name `$SIGSTACK_…`,
they run with the exports of the session's loopback Sigstore stack (`scripts/sigstore-stack.sh`);
`$REGISTRY_TOKEN` (the guide's login example) is set to a token that registry accepts, as it
accepts any (tests/interop/test_oci_auth.py checks login against a registry that does not).

Markers, an HTML comment on the line just before the opening fence (invisible when rendered):

    <!-- docs-test: skip: REASON -->          the block cannot run here; REASON is required and
                                             the skipped blocks are listed by the test
    <!-- docs-test: expect-output: TEXT -->   the block's output (stdout and stderr) contains TEXT

Every fence names its language: `sh`, `bash` and `shell` blocks run; anything else (`text`,
`yaml`, `json`, …) is not a command. A block that fails prints its document, line and output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import env
from tests.harness.fixtures import start_registry

pytestmark = pytest.mark.interop

REPO = env.REPO
SHELL_LANGS = frozenset({"sh", "bash", "shell"})
PLACEHOLDER_HOST = "registry.example"
STACK_MARK = "SIGSTACK_"  # a block naming $SIGSTACK_* runs with the loopback Sigstore stack's exports
MARKER = re.compile(r"^<!--\s*docs-test:\s*(?P<kind>[a-z-]+)\s*:\s*(?P<arg>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<lang>[A-Za-z0-9_+-]*)\s*$")
BLOCK_TIMEOUT = 600


@dataclass(frozen=True)
class Block:
    """One fenced block of a document, with the marker written just before it."""

    doc: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip: str | None = None
    expect: str | None = None

    @property
    def runs(self) -> bool:
        return self.lang in SHELL_LANGS and self.skip is None

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


class DocsMarkupError(ValueError):
    """A marker or fence the docs test cannot interpret (a loud failure, never a silent skip)."""


def parse_blocks(text: str, doc: str) -> list[Block]:
    """Every fenced block of a Markdown document, in order, with its marker applied."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].lstrip().startswith("<!-- docs-test") and not MARKER.match(lines[i]):
                raise DocsMarkupError(f"{doc}:{i + 1}: malformed docs-test marker {lines[i]!r}")
            i += 1
            continue
        fence, lang, start = m["fence"], m["lang"], i
        if not lang:
            raise DocsMarkupError(f"{doc}:{i + 1}: a fenced block must name its language "
                                  "(sh to run it; text for a synopsis)")
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence[:3]):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise DocsMarkupError(f"{doc}:{start + 1}: unterminated fence")
        skip = expect = None
        prev = lines[start - 1] if start > 0 else ""
        mark = MARKER.match(prev)
        if mark:
            kind, arg = mark["kind"], mark["arg"]
            if not arg:
                raise DocsMarkupError(f"{doc}:{start}: docs-test {kind} needs a reason/text")
            if kind == "skip":
                skip = arg
            elif kind == "expect-output":
                expect = arg
            else:
                raise DocsMarkupError(f"{doc}:{start}: unknown docs-test marker {kind!r}")
            if lang not in SHELL_LANGS:
                raise DocsMarkupError(f"{doc}:{start}: docs-test marker on a {lang} block")
        blocks.append(Block(doc, start + 1, lang, "\n".join(body) + "\n", skip, expect))
        i += 1
    return blocks


def documents() -> list[Path]:
    """README.md and every docs/*.md (decisions are prose, but their blocks are checked too)."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
            *sorted((REPO / "docs" / "decisions").glob("*.md"))]


def all_blocks() -> list[Block]:
    return [b for path in documents() for b in parse_blocks(path.read_text("utf-8"), _rel(path))]


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def make_scratch(folder: Path) -> Path:
    """A folder that looks like a fresh clone after `make venv`, without sharing writable state."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "examples", folder / "examples")
    for name in ("Makefile", "pyproject.toml", ".venv"):
        (folder / name).symlink_to(REPO / name)
    home = folder / ".home"
    home.mkdir()
    return folder


def block_env(scratch: Path) -> dict[str, str]:
    """The environment a reader's shell would have, minus anything pointing outside the scratch."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("ACX_", "COSIGN_", "DOCKER_", "XDG_", "REGISTRY_")) or k == "ACX_PEERS_DIR"}
    home = scratch / ".home"
    keep.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"),
                XDG_CACHE_HOME=str(home / "cache"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
                NO_COLOR="1", TERM="dumb", REGISTRY_TOKEN="docs-test-token",
                ACX_VECTORS=str(env.VECTORS))
    keep.pop("VIRTUAL_ENV", None)
    return keep


def run_block(block: Block, scratch: Path, registry_host: str | None,
              extra_env: dict[str, str] | None = None) -> str:
    """Run one block; on failure, fail with its place and its output."""
    code = block.code
    if PLACEHOLDER_HOST in code:
        assert registry_host, "a registry block ran without a registry"
        code = code.replace(PLACEHOLDER_HOST, registry_host)
    if STACK_MARK in code:
        assert extra_env and STACK_MARK + "TRUST_CONFIG" in extra_env, "a Sigstore block without the stack"
    try:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=scratch,
                              env={**block_env(scratch), **(extra_env or {})},
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the block did not finish in {BLOCK_TIMEOUT} s:\n{block.code}")
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"{block.where}: the block exits {proc.returncode}:\n{block.code}\n--- output ---\n{out}")
    if block.expect is not None and block.expect not in out:
        pytest.fail(f"{block.where}: the output does not contain {block.expect!r}:\n--- output ---\n{out}")
    return out


@pytest.fixture(scope="module")
def docs_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    """One loopback registry for every document that names `registry.example` (none otherwise)."""
    if not any(b.runs and PLACEHOLDER_HOST in b.code for b in all_blocks()):
        yield None
        return
    reg = start_registry("distribution", tmp_path_factory.mktemp("docs-registry"))
    try:
        yield reg.host
    finally:
        reg.stop()


def _venv_is_current() -> None:
    proc = subprocess.run(["make", "-q", "venv"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail("the venv is older than pyproject.toml: run `make venv` first "
                    "(the Quickstart's `make venv` must be the no-op a set-up clone gives)")


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("doc", [_rel(p) for p in documents()])
def test_every_shell_block_runs(doc: str, tmp_path: Path, docs_registry: str | None,
                                request: pytest.FixtureRequest) -> None:
    blocks = [b for b in parse_blocks((REPO / doc).read_text("utf-8"), doc) if b.runs]
    if not blocks:
        return  # a document without commands is fine; test_docs_inventory lists it
    _venv_is_current()
    scratch = make_scratch(tmp_path / "scratch")
    stack_env: dict[str, str] = {}
    if any(STACK_MARK in b.code for b in blocks):  # the session's loopback Sigstore stack: its exports
        stack_env = dict(request.getfixturevalue("sigstack_stack").env)
    for block in blocks:
        run_block(block, scratch, docs_registry, stack_env)


def test_docs_inventory(capsys: pytest.CaptureFixture[str]) -> None:
    """Every fence is understood, every skip has a reason, and the skipped blocks are listed."""
    blocks = all_blocks()
    runnable = [b for b in blocks if b.runs]
    skipped = [b for b in blocks if b.skip is not None]
    assert len(runnable) >= 8, "the README and guide blocks are expected to run"
    assert {b.doc for b in runnable} >= {"README.md", "docs/guide.md"}
    with capsys.disabled():
        print(f"\ndocs test: {len(runnable)} shell block(s) run, {len(skipped)} skipped:")
        for b in skipped:
            print(f"  {b.where}: {b.skip}")


@pytest.mark.parametrize("text, message", [
    ("```\nacx push x y\n```\n", "must name its language"),
    ("<!-- docs-test: skip: -->\n```sh\nfalse\n```\n", "needs a reason"),
    ("<!-- docs-test: sometimes: x -->\n```sh\ntrue\n```\n", "unknown docs-test marker"),
    ("<!-- docs-test skip because -->\n```sh\ntrue\n```\n", "malformed"),
    ("```sh\ntrue\n", "unterminated"),
    ("<!-- docs-test: skip: x -->\n```yaml\na: 1\n```\n", "marker on a yaml block"),
])
def test_markup_mistakes_fail_loudly(text: str, message: str) -> None:
    with pytest.raises(DocsMarkupError, match=message):
        parse_blocks(text, "x.md")


def test_a_failing_block_fails_the_test(tmp_path: Path) -> None:
    """The runner itself cannot pass a broken block: exit status, `set -e` mid-block, pipefail
    and a missing expected output all fail."""
    scratch = make_scratch(tmp_path / "s")
    for code in ("false\n", "false\ntrue\n", "false | true\n", "acx no-such-command\n"):
        with pytest.raises(pytest.fail.Exception, match="exits"):
            run_block(Block("x.md", 1, "sh", code), scratch, None)
    with pytest.raises(pytest.fail.Exception, match="does not contain"):
        run_block(Block("x.md", 1, "sh", "echo hello\n", expect="INSTALLED"), scratch, None)
    assert "acx" in run_block(Block("x.md", 1, "sh", "acx --version\n"), scratch, None)
