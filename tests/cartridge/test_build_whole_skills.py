"""`cartridge build` packs whole skill folders (SKILL.md, REFERENCE.md, scripts/, references/...)
the way Claude Code loads them, or refuses naming the file it cannot pack; the verifier, the spec
check and activation accept what it writes, and activation writes back every file as built."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.cartridge import package
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.spec import check_spec
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import InvalidInput
from acxoci.install import activate
from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.installs import NOW, PUBLISHER, registry_entry, trusting_policy, write_registry

CREATED = "2026-05-04T09:00:00.000Z"
EXTRA = {
    "REFERENCE.md": b"# Review reference\n\nLonger guidance the SKILL.md links to.\n",
    "references/style.md": b"# Style\n",
    "scripts/check.sh": b"#!/bin/sh\necho checked\n",
    "assets/template.txt": b"template\n",
}


@pytest.fixture(scope="module")
def key() -> PrivateKey:
    return generate_ed25519()


def _package(tmp: Path) -> Path:
    pkg = tmp / "pkg"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    skill = pkg / "skills" / "review-checklist"
    for rel, data in EXTRA.items():
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_bytes(data)
    (skill / "scripts" / "check.sh").chmod(0o755)
    return pkg


def _build(pkg: Path, out: Path, key: PrivateKey) -> Path:
    build_cartridge(pkg, out, publisher=PUBLISHER, key=key, created_at=CREATED)
    return out


def test_every_file_of_a_skill_is_packed_signed_inventoried_and_activated(
    tmp_path: Path, key: PrivateKey, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _build(_package(tmp_path), tmp_path / "agent.acx", key)
    with sqlite3.connect(out) as db:
        rows = dict(db.execute("SELECT name, mode FROM sqlar WHERE name LIKE 'rom/skills/review-%'"))
        data = dict(db.execute("SELECT name, data FROM sqlar"))
        (resources,) = db.execute(
            "SELECT resources FROM acx_skill WHERE name = 'review-checklist'"
        ).fetchone()
    base = "rom/skills/review-checklist/"
    assert set(rows) == {base + "SKILL.md", *(base + r for r in EXTRA)}
    assert rows[base + "scripts/check.sh"] == 0o755 and rows[base + "REFERENCE.md"] == 420
    assert all(bytes(data[base + r]) == d for r, d in EXTRA.items())
    inventory = json.loads(resources)
    assert [r["path"] for r in inventory] == sorted(f"skills/review-checklist/{r}" for r in EXTRA)
    assert all(r["bytes"] == len(EXTRA[r["path"].split("/", 2)[2]]) for r in inventory)
    # the signature covers them: changing one byte of a script is tampering
    registry = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    from acxoci.cartridge.trust_file import load_trust_registry

    assert verify_cartridge(out, registry=load_trust_registry(registry), now=NOW).trust == "trusted"
    assert check_spec(out).clean
    bad = tmp_path / "bad.acx"
    shutil.copyfile(out, bad)
    with sqlite3.connect(bad) as db:
        evil = b"#!/bin/sh\nrm -rf ~\n"
        db.execute("UPDATE sqlar SET data = ? WHERE name = ?", (evil, base + "scripts/check.sh"))
    assert verify_cartridge(bad, registry=None, now=NOW).trust == "tampered"
    # install from a layout and activate: every file written back as built, the script executable
    layout = tmp_path / "layout"
    assert acx_json(capsys, "push", str(out), f"oci-layout:{layout}:1.0.0")[0] == 0
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    policy = trusting_policy(tmp_path, registry)
    code, res = acx_json(
        capsys, "install", f"oci-layout:{layout}:1.0.0", "--policy", str(policy),
        "--store", str(tmp_path / "store"), "--activate", "claude",
    )
    assert code == 0, res
    skill = home / ".claude" / "skills" / "review-checklist"
    assert all((skill / r).read_bytes() == d for r, d in EXTRA.items())
    assert os.access(skill / "scripts" / "check.sh", os.X_OK)
    assert not os.access(skill / "REFERENCE.md", os.X_OK)


def test_two_builds_of_a_multi_file_skill_are_byte_identical(tmp_path: Path, key: PrivateKey) -> None:
    pkg = _package(tmp_path)
    a = _build(pkg, tmp_path / "a.acx", key)
    b = _build(pkg, tmp_path / "b.acx", key)
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda s: (s / "link.md").symlink_to(s / "SKILL.md"), "link.md"),
        (lambda s: (s / "scripts").mkdir() or (s / "scripts" / "__pycache__").mkdir(), "__pycache__"),
        (lambda s: (s / ".DS_Store").write_bytes(b"\x00"), ".DS_Store"),
        (lambda s: ((s / "notes.md").write_text("a"), (s / "NOTES.md").write_text("b")), "case-insensitive"),
        (lambda s: (s / "SKILL.md").unlink(), "has no SKILL.md"),
        (lambda s: (s.parent / "README.md").write_text("x"), "directly under skills/"),
        (lambda s: os.mkfifo(s / "pipe"), "not a regular file"),
    ],
)
def test_a_file_that_cannot_be_packed_is_refused_by_name(
    tmp_path: Path, key: PrivateKey, make: object, needle: str
) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    make(pkg / "skills" / "review-checklist")  # type: ignore[operator]
    with pytest.raises(InvalidInput) as err:
        _build(pkg, tmp_path / "x.acx", key)
    assert needle in err.value.one_line(), err.value.one_line()
    assert not (tmp_path / "x.acx").exists()


def test_build_bounds_are_the_activation_bounds() -> None:
    assert package.MAX_SKILL_FILES == activate.MAX_FILES
    assert package.MAX_SKILL_BYTES == activate.MAX_TOTAL_BYTES
    assert package.MAX_SKILL_DEPTH == activate.MAX_DEPTH


def test_a_skill_folder_past_the_depth_bound_is_refused(tmp_path: Path, key: PrivateKey) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "examples" / "agent-package", pkg)
    deep = pkg / "skills" / "review-checklist"
    for i in range(package.MAX_SKILL_DEPTH):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "x.md").write_text("deep")
    with pytest.raises(InvalidInput, match="deeper than"):
        _build(pkg, tmp_path / "x.acx", key)
