"""Concurrent transfers against a real distribution registry with oras 1.3 as the other side,
both directions: a multi-file artifact `oras push`ed is `acx pull`ed byte-identical with
`--concurrency 4`; a cartridge `acx push`ed with `--concurrency 4` is `oras pull`ed
byte-identical; and `acx cp --concurrency 4` of the multi-file artifact is `oras pull`ed
byte-identical from the copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.harness.cli import acx_json
from tests.harness.peers import Oras
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def _files(tmp_path: Path) -> dict[str, bytes]:
    src = tmp_path / "src"
    src.mkdir()
    files = {f"{c}.txt": os.urandom(300 * 1024 + i) for i, c in enumerate("abcd")}
    for name, data in files.items():
        (src / name).write_bytes(data)
    return files


def test_oras_multi_file_push_acx_pull_and_cp(
    distribution_registry: Registry, oras13: Oras, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _files(tmp_path)
    ref = f"{distribution_registry.host}/acx/files:v1"
    oras13.run("push", "--plain-http", "--artifact-type", "application/x.test.files", ref, *files,
               cwd=tmp_path / "src")
    out = tmp_path / "pulled"
    code, res = acx_json(capsys, "pull", "--no-verify", "--concurrency", "4", ref, "-o", str(out))
    assert code == 0, res
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files
    copy = f"{distribution_registry.host}/acx/copy:v1"
    code, res = acx_json(capsys, "cp", "--concurrency", "4", ref, copy)
    assert code == 0, res
    back = tmp_path / "back"
    back.mkdir()
    oras13.run("pull", "--plain-http", "-o", str(back), copy)
    assert {p.name: p.read_bytes() for p in back.iterdir()} == files


def test_acx_push_concurrent_oras_pull(
    distribution_registry: Registry, oras13: Oras, vectors_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cart = vectors_dir / "sample" / "sample.acx"
    ref = f"{distribution_registry.host}/acx/cart:v1"
    code, res = acx_json(capsys, "push", "--concurrency", "4", str(cart), ref)
    assert code == 0, res
    out = tmp_path / "o"
    out.mkdir()
    oras13.run("pull", "--plain-http", "-o", str(out), ref)
    assert (out / "sample.acx").read_bytes() == cart.read_bytes()
    mine = tmp_path / "mine.acx"
    code, res = acx_json(capsys, "pull", "--concurrency", "1", ref, "-o", str(mine))
    assert code == 0, res
    assert mine.read_bytes() == cart.read_bytes()
