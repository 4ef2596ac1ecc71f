"""`acx cp -r --from-list FILE`: many artifacts (a mirror) in one process, several at a time; a
failed pair is reported and the others are copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli import acx_json
from tests.harness.installs import push_cartridge
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def test_a_list_is_copied_several_at_a_time_with_referrers(tmp_path: Path, vectors_dir: Path,
                                                          distribution_registry: Registry,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src"
    for i in range(6):
        push_cartridge(src, vectors_dir / "sample" / "sample.acx", f"a{i}")
    key = tmp_path / "k.pem"
    assert acx_json(capsys, "key", "generate", "-o", str(key))[0] == 0
    assert acx_json(capsys, "attest", f"oci-layout:{src}:a0", "--key", str(key))[0] == 0
    host = distribution_registry.host
    lines = [f"oci-layout:{src}:a{i}  {host}/mirror/a{i}:a{i}" for i in range(6)]
    listing = tmp_path / "list.txt"
    listing.write_text("# a mirror of six\n" + "\n".join(lines) + "\n\n"
                       + f"oci-layout:nowhere:x  {host}/m/x:x\n")
    code, out = acx_json(capsys, "cp", "-r", "--from-list", str(listing), "--concurrency", "4")
    assert code == 4 and out["failed"] == 1 and len(out["copies"]) == 7, out  # the missing source: not_found
    done = [c for c in out["copies"] if "error" not in c]
    assert len(done) == 6 and len({c["digest"] for c in done}) == 1
    assert done[0]["referrers"], done[0]  # the attestation of a0 came along
    code, tags = acx_json(capsys, "tags", f"{host}/mirror/a3")
    assert code == 0 and "a3" in tags["tags"], tags


def test_list_errors_name_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("a b\nonly-one\n")
    code, out = acx_json(capsys, "cp", "--from-list", str(bad))
    assert code == 3 and "line 2" in out["error"]["message"], out
    code, out = acx_json(capsys, "cp", "x", "y", "--from-list", str(bad))
    assert code == 2, out
