"""`acx init --role` scaffolds a package `cartridge build` accepts as is; `acx init --from-code`
derives roles, a workflow that lints VALID with --publish and RAC descriptions from real trees,
gives the same bytes twice, and stays inside its bounds on hostile trees (symlinks out of DIR,
FIFOs, huge and malformed manifests, deep and wide trees)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.authoring import walk as walk_mod
from acxoci.authoring.detect import detect
from acxoci.authoring.roles import ROLES
from acxoci.authoring.walk import walk
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.spec import check_spec
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import PEERS, REPO, missing

GO_TREE = (
    PEERS / "ggcr-src" / "usr" / "share" / "gocode" / "src" / "github.com" / "google" / "go-containerregistry"
)


@pytest.fixture(scope="module")
def key() -> PrivateKey:
    return generate_ed25519()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("role", sorted(ROLES))
def test_every_role_scaffolds_a_package_that_builds_clean(
    role: str, tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = acx_json(capsys, "init", str(tmp_path / "pkg"), "--role", role)
    assert code == 0 and out["role"] == role, out
    build_cartridge(tmp_path / "pkg", tmp_path / "a.acx", publisher="io.github.example", key=key)
    assert check_spec(tmp_path / "a.acx").clean
    manifest = json.loads((tmp_path / "pkg" / "manifest.json").read_text())
    assert manifest["role"] == role and "TODO" in manifest["description"]


def test_init_refuses_unknown_roles_and_a_folder_with_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = acx_json(capsys, "init", str(tmp_path / "x"), "--role", "Weird Role!")
    assert code == 2 and "unknown role" in out["error"]["message"]
    assert not (tmp_path / "x").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep")
    assert acx_json(capsys, "init", str(tmp_path / "full"))[0] == 2
    assert acx_json(capsys, "init", str(tmp_path / "full"), "--force")[0] == 0
    assert (tmp_path / "full" / "mine.txt").read_text() == "keep"
    (tmp_path / "evil").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "evil" / "skills").symlink_to(tmp_path / "elsewhere")
    code, out = acx_json(capsys, "init", str(tmp_path / "evil"), "--force")
    assert code == 3 and "symlink" in out["error"]["message"]
    assert list((tmp_path / "elsewhere").iterdir()) == []


#: Three real trees: this repository, go-containerregistry's Go sources (a peer `make peers`
#: installs from Debian) and the Python sources of `requests` as installed in the venv.
TREES = {"acxoci": REPO, "go-containerregistry": GO_TREE,
         "requests": Path(importlib.util.find_spec("requests").origin or "").parent}  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(TREES))
def test_from_code_on_real_trees_lints_valid_builds_and_repeats_byte_for_byte(
    name: str, tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = TREES[name]
    if not tree.is_dir():
        missing(f"{name} sources not found at {tree}; run `make peers`")
    code, out = acx_json(capsys, "init", "--from-code", str(tree), "--out", str(tmp_path / "a"))
    assert code == 0, out
    assert out["roles"] and out["truncated"] is None
    flow = tmp_path / "a" / "cal" / "from-code.cal.json"
    code, lint = acx_json(capsys, "workflow", "lint", str(flow), "--publish")
    assert code == 0 and lint["ok"], lint
    for role in out["roles"]:
        pkg = tmp_path / "a" / "agents" / role["role"]
        build_cartridge(pkg, tmp_path / "agent.acx", publisher="io.github.example", key=key)
        assert check_spec(tmp_path / "agent.acx").clean
    assert acx_json(capsys, "init", "--from-code", str(tree), "--out", str(tmp_path / "b"))[0] == 0
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    # the RAC describes kinds of knowledge; it never carries the tree's own file names or text
    rac = json.loads(flow.read_text())["rac"]
    text = json.dumps(rac)
    assert all(name not in text for name in ("pyproject", "acxoci", "cmd_", "go.mod") if name)


def test_the_roles_follow_the_signals(tmp_path: Path) -> None:
    root = tmp_path / "code"
    for rel, body in {
        "package.json": json.dumps(
            {
                "dependencies": {"react": "18", "express": "4", "passport": "1"},
                "devDependencies": {"vitest": "1"},
            }
        ),
        "infra/main.tf": 'resource "x" "y" {}',
        "Dockerfile": "FROM scratch",
        ".github/workflows/ci.yml": "on: push",
        "dags/etl.py": "# a DAG",
        "SECURITY.md": "report here",
        "openapi.yaml": "openapi: 3.1.0",
        "README.md": "hi",
        "src/App.test.tsx": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    a = detect(walk(root))
    roles = {f.role: f for f in a.roles}
    assert list(roles) == ["frontend_dev", "backend_dev", "qa_engineer", "security_expert", "devops_engineer"]
    assert roles["backend_dev"].tasks == ["implement-feature", "design-api"]
    assert set(roles["devops_engineer"].tasks) == {"deploy", "harden-security", "build-dag"}
    assert [r.id for r in a.rac] == [
        "api-contracts",
        "ci-pipeline",
        "code-wiki",
        "container-build",
        "data-flows",
        "infra-arch",
        "security-policy",
        "test-suite",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert [f.role for f in detect(walk(empty)).roles] == ["fullstack_dev"]


def test_hostile_trees_are_read_within_bounds_and_never_followed_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    (outside / "infra").mkdir(parents=True)
    (outside / "infra" / "main.tf").write_text("x")
    (outside / "Dockerfile").write_text("FROM x")
    root = tmp_path / "code"
    root.mkdir()
    (root / "linked").symlink_to(outside)  # a folder symlink out of DIR: never entered
    (root / "Dockerfile").symlink_to(outside / "Dockerfile")  # a file symlink: never read
    os.mkfifo(root / "package.json")  # a FIFO where a manifest should be: never opened
    (root / "pyproject.toml").write_bytes(b"[project]\ndependencies = [" + b"[" * 100_000)
    (root / "sub").mkdir()
    (root / "sub" / "package.json").write_bytes(b"[" * 200_000)  # deep JSON: RecursionError caught
    (root / "big").mkdir()
    (root / "big" / "Cargo.toml").write_bytes(b"#" * (walk_mod.MAX_MANIFEST_BYTES + 1))
    listing = walk(root)
    assert "linked" not in listing.dirs and "Dockerfile" not in listing.files
    assert {"pyproject.toml", "sub/package.json", "big/Cargo.toml"} <= set(listing.unreadable)
    r = run_acx(capsys, "init", "--from-code", str(root), "--out", str(tmp_path / "o1"))
    assert r.returncode == 0 and "not read: big/Cargo.toml" in r.stdout + r.stderr, r.stdout + r.stderr
    assert all(f.role != "devops_engineer" for f in detect(listing).roles)
    # deep and wide trees stop at the caps, deterministically, and say so
    deep = root / "deep"
    for i in range(walk_mod.MAX_DEPTH + 3):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "main.tf").write_text("x")
    assert walk(root).truncated == f"folders deeper than {walk_mod.MAX_DEPTH} levels"
    monkeypatch.setattr(walk_mod, "MAX_ENTRIES", 5)
    first = walk(root)
    assert first.truncated == "more than 5 entries" and first == walk(root)
    code, out = acx_json(capsys, "init", "--from-code", str(root), "--out", str(tmp_path / "o"))
    assert code == 0 and out["truncated"] == "more than 5 entries"
    assert "stopped early" in (tmp_path / "o" / "README.md").read_text()
    # the code folder is not a folder: refused; an output folder inside DIR is not analysed
    assert acx_json(capsys, "init", "--from-code", str(root / "linked"), "--out", str(tmp_path / "p"))[0] == 3
    assert (
        acx_json(capsys, "init", "--from-code", str(tmp_path / "nope"), "--out", str(tmp_path / "q"))[0] == 4
    )


def test_an_output_folder_inside_the_codebase_is_not_analysed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "code"
    shutil.copytree(REPO / "examples" / "agent-package", root)
    code, first = acx_json(capsys, "init", "--from-code", str(root), "--out", str(root / "agent-set"))
    assert code == 0
    code, again = acx_json(
        capsys, "init", "--from-code", str(root), "--out", str(root / "agent-set"), "--force"
    )
    assert code == 0 and again["roles"] == first["roles"] and again["filesSeen"] == first["filesSeen"]
    human = run_acx(capsys, "init", "--from-code", str(root), "--out", str(tmp_path / "h"))
    assert human.returncode == 0 and "ANALYSED" in human.stdout
