"""Every YAML document acx reads (a verification policy, host limits, a release plan, a SKILL.md's
front matter) goes through one reader that refuses, before building anything, nesting deeper than
64 levels (PyYAML builds recursively: exit 70 before) and anchors/aliases (a kilobyte of nested
aliases expands to gigabytes): a typed refusal naming the file, quickly."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from acxoci.yamldoc import MAX_DEPTH, load_yaml
from tests.harness.cli import acx_json
from tests.harness.env import REPO

DEEP = "a: " + "[" * 5000 + "]" * 5000 + "\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))


def test_the_reader_takes_plain_data_and_refuses_depth_and_aliases() -> None:
    assert load_yaml("a: [1, {b: c}]\n", what="x", where="f") == {"a": [1, {"b": "c"}]}
    ok = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)  # the mapping is the first level
    assert load_yaml(ok, what="x", where="f") is not None
    for text, why in ((ok.replace("[", "[[", 1).replace("]", "]]", 1), "deeper than"),
                      (DEEP, "deeper than|nesting depth"), (BOMB, "anchors and aliases"),
                      ("a: &x 1\n", "anchors")):
        with pytest.raises(Exception, match=why) as exc:
            load_yaml(text, what="x", where="f")
        assert type(exc.value).__name__ == "InvalidInput"


@pytest.mark.parametrize("body", [DEEP, BOMB], ids=["deep", "aliases"])
def test_every_yaml_input_refuses_typed_and_fast(body: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(body)
    ok_policy = tmp_path / "ok.yaml"
    ok_policy.write_text("schemaVersion: acx.verification-policy/1\npublishers: []\n")
    skill_pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "examples" / "agent-package", skill_pkg)
    skill = next(skill_pkg.glob("**/SKILL.md"))
    front = "name: x\ndescription: y\nmetadata:\n  v: " + body.replace("\n", "\n  ")
    skill.write_text("---\n" + front.rstrip() + "\n---\nbody\n")
    layout = f"oci-layout:{tmp_path / 'none'}:1.0.0"
    assert acx_json(capsys, "key", "generate", "-o", str(tmp_path / "k.pem"))[0] == 0
    cases = [
        ("verify", layout, "--policy", str(bad)),
        ("install", layout, "--policy", str(ok_policy), "--host-limits", str(bad), "--store",
         str(tmp_path / "s")),
        ("release", "plan", str(bad)),
        ("cartridge", "build", str(skill_pkg), "-o", str(tmp_path / "b.acx"), "--publisher", "dev.example.x",
         "--key", str(tmp_path / "k.pem")),
    ]
    for args in cases:
        t0 = time.monotonic()
        code, out = acx_json(capsys, *args)
        assert code == 3 and out["error"]["kind"] == "invalid_input", (args, out)
        assert time.monotonic() - t0 < 10, args
        assert len(out["error"]["message"]) < 400, out  # the expansion is never printed
