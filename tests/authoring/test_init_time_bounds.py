"""`acx init --from-code` is bounded in time, not only in bytes: Python's TOML parser is quadratic
in a dotted key's depth (one `[a.a.a...]` header of 64 KiB costs seconds, of 1 MiB minutes), so a
TOML manifest with a line of more dots than a real key has is not parsed; TOML manifests have a
smaller size cap and a budget of their own, and all manifests together a total budget, taken in
the walk's sorted order (the same files are read every time)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from acxoci.authoring import walk as W
from acxoci.authoring.walk import walk
from tests.harness.cli import acx_json


def test_a_quadratic_toml_key_is_not_parsed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "tree"
    for n in range(4):  # four 64 KiB headers: about ten seconds for the standard parser
        (tree / f"p{n}").mkdir(parents=True)
        (tree / f"p{n}" / "pyproject.toml").write_text("[" + ".".join(["a"] * 32_000) + "]\n")
    # a real manifest with a long one-line list of dotted names is still read
    modules = ", ".join(f'"pkg{i}.sub.mod"' for i in range(100))  # 200 dots on one line
    (tree / "app").mkdir()
    (tree / "app" / "pyproject.toml").write_text(
        f'[project]\nname = "app"\ndependencies = ["django>=4.2"]\n\n'
        f"[[tool.mypy.overrides]]\nmodule = [{modules}]\n")
    start = time.monotonic()
    code, out = acx_json(capsys, "init", "--from-code", str(tree), "--out", str(tmp_path / "out"))
    assert code == 0, out
    assert time.monotonic() - start < 5
    listing = walk(tree)
    assert listing.unreadable == tuple(f"p{n}/pyproject.toml" for n in range(4))
    assert "django" in listing.deps["app/pyproject.toml"]


def test_manifests_are_parsed_within_a_budget(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    doc = b'{"dependencies": {"react": "1"}}'
    n_json = W.MAX_PARSED_BYTES // W.MAX_MANIFEST_BYTES + 1
    for n in range(n_json):  # each just under the per-file cap: the last is over the total
        (tree / f"j{n:02d}").mkdir(parents=True)
        (tree / f"j{n:02d}" / "package.json").write_bytes(doc + b" " * (W.MAX_MANIFEST_BYTES - len(doc)))
    listing = walk(tree)
    assert listing.unreadable == (f"j{n_json - 1:02d}/package.json",)
    assert all(listing.deps[f"j{n:02d}/package.json"] == ("react",) for n in range(n_json - 1))
    # TOML: a smaller cap per file, and a budget of its own
    toml_tree = tmp_path / "toml"
    body = '[project]\ndependencies = ["flask"]\n'
    filler = "# " + "x" * 78 + "\n"
    size = W.MAX_TOML_BYTES - 1024
    n_toml = W.MAX_TOML_PARSED_BYTES // size + 1
    for n in range(n_toml):
        (toml_tree / f"t{n}").mkdir(parents=True)
        (toml_tree / f"t{n}" / "Cargo.toml").write_text(body + filler * ((size - len(body)) // len(filler)))
    (toml_tree / "big").mkdir()
    (toml_tree / "big" / "pyproject.toml").write_text(body + filler * (W.MAX_TOML_BYTES // len(filler)))
    listing = walk(toml_tree)
    assert listing.unreadable == ("big/pyproject.toml", f"t{n_toml - 1}/Cargo.toml"), listing.unreadable
    assert json.dumps(sorted(listing.deps)) == json.dumps(
        sorted(["big/pyproject.toml", *(f"t{n}/Cargo.toml" for n in range(n_toml))]))
