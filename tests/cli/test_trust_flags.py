"""A trust flag never passes silently: every command given `--trust-registry` refuses a signer
below trusted (exit 8, refused_by_policy or a verdict of 8), unless `--require portable`, as
`acx cartridge verify --require trusted` does; pull and push then write nothing. Human output of
pull and push says the signer's trust, as --json does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from tests.harness.cli import acx_json, run_acx
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    write_registry,
)


@pytest.fixture
def signed(tmp_path: Path, vectors_dir: Path) -> dict[str, Any]:
    """A cartridge and a workflow signed by one key, pushed to a layout; a registry that trusts the
    key, and one that knows only another key for the same publisher."""
    from acxoci.workflow.sign import sign_workflow
    from tests.harness.env import REPO

    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    push_cartridge(tmp_path / "layout", acx, "1.0.0")
    doc = json.loads((REPO / "examples" / "workflow" / "review-team.cal.json").read_text())
    wf = tmp_path / "team.signed.cal.json"
    wf.write_text(json.dumps(sign_workflow(doc, publisher_id=PUBLISHER, key=key, now=NOW)))
    return {
        "acx": acx,
        "wf": wf,
        "ref": f"oci-layout:{tmp_path / 'layout'}:1.0.0",
        "good": write_registry(tmp_path / "good.json", [registry_entry(key, PUBLISHER)]),
        "other": write_registry(tmp_path / "other.json", [registry_entry(generate_ed25519(), PUBLISHER)]),
    }


def test_pull_refuses_an_untrusted_signer_and_writes_nothing(
    signed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code, res = acx_json(
        capsys, "pull", signed["ref"], "-o", str(out), "--trust-registry", str(signed["other"])
    )
    assert code == 8 and res["error"]["kind"] == "refused_by_policy", res
    assert (
        "below the required trusted" in res["error"]["message"]
        and "--require portable" in res["error"]["hint"]
    )
    assert list(out.iterdir()) == []  # no file, no staging file
    code, res = acx_json(
        capsys,
        "pull",
        signed["ref"],
        "-o",
        str(out),
        "--trust-registry",
        str(signed["other"]),
        "--require",
        "portable",
    )
    assert code == 0 and res["verdict"]["trust"] == "portable", res
    code, res = acx_json(
        capsys, "pull", signed["ref"], "-o", str(tmp_path / "t.acx"), "--trust-registry", str(signed["good"])
    )
    assert code == 0 and res["verdict"]["trust"] == "trusted", res
    # --require alone needs no registry: nothing vouches for the key, so trusted is refused
    assert (
        acx_json(capsys, "pull", signed["ref"], "-o", str(tmp_path / "r.acx"), "--require", "trusted")[0] == 8
    )
    r = run_acx(
        capsys,
        "pull",
        signed["ref"],
        "-o",
        str(tmp_path / "n.acx"),
        "--no-verify",
        "--trust-registry",
        str(signed["good"]),
    )
    assert r.returncode == 2 and "--no-verify checks nothing" in r.stderr
    r = run_acx(capsys, "pull", signed["ref"], "-o", str(tmp_path / "h.acx"))
    assert r.returncode == 0 and "signer portable" in r.stdout  # the human line says it too


def test_push_refuses_an_untrusted_signer_before_anything_is_pushed(
    signed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "pushed"
    code, res = acx_json(
        capsys,
        "push",
        str(signed["acx"]),
        f"oci-layout:{dest}:1.0.0",
        "--trust-registry",
        str(signed["other"]),
    )
    assert code == 8 and res["error"]["kind"] == "refused_by_policy" and not dest.exists(), res
    code, res = acx_json(
        capsys,
        "push",
        str(signed["acx"]),
        f"oci-layout:{dest}:1.0.0",
        "--trust-registry",
        str(signed["other"]),
        "--require",
        "portable",
    )
    assert code == 0, res
    r = run_acx(
        capsys,
        "push",
        str(signed["acx"]),
        f"oci-layout:{dest}:1.0.0",
        "--trust-registry",
        str(signed["good"]),
    )
    assert r.returncode == 0 and r.stdout.startswith(f"pushed oci-layout:{dest}:1.0.0@sha256:")
    assert "signer trusted" in r.stdout


@pytest.mark.parametrize(
    "command", [("check", "{acx}", "--all-tools"), ("harness", "negotiate", "{acx}", "--all-tools")]
)
def test_the_boot_handshake_refuses_an_untrusted_signer(
    command: tuple[str, ...], signed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.format(acx=signed["acx"]) for a in command]
    code, res = acx_json(capsys, *args, "--trust-registry", str(signed["other"]))
    assert code == 8 and res["error"]["kind"] == "refused_by_policy", res
    assert acx_json(capsys, *args, "--trust-registry", str(signed["other"]), "--require", "portable")[0] == 0
    assert acx_json(capsys, *args, "--trust-registry", str(signed["good"]))[0] == 0


def test_workflow_verify_and_strip_refuse_below_trusted(
    signed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at = ("--now", NOW.isoformat())
    code, res = acx_json(
        capsys, "workflow", "verify", str(signed["wf"]), "--trust-registry", str(signed["other"]), *at
    )
    assert code == 8 and res["ok"] is False and res["require"] == "trusted" and res["trust"] == "portable", (
        res
    )
    r = run_acx(
        capsys, "workflow", "verify", str(signed["wf"]), "--trust-registry", str(signed["other"]), *at
    )
    assert "refused: trust portable does not meet --require trusted" in r.stdout
    assert (
        acx_json(
            capsys,
            "workflow",
            "verify",
            str(signed["wf"]),
            "--trust-registry",
            str(signed["other"]),
            "--require",
            "portable",
            *at,
        )[0]
        == 0
    )
    assert (
        acx_json(
            capsys, "workflow", "verify", str(signed["wf"]), "--trust-registry", str(signed["good"]), *at
        )[0]
        == 0
    )
    stripped = tmp_path / "s.acx"
    code, res = acx_json(
        capsys,
        "cartridge",
        "strip",
        str(signed["acx"]),
        "-o",
        str(stripped),
        "--trust-registry",
        str(signed["other"]),
    )
    assert code == 8 and not stripped.exists(), res
    code, res = acx_json(
        capsys,
        "cartridge",
        "strip",
        str(signed["acx"]),
        "-o",
        str(stripped),
        "--trust-registry",
        str(signed["good"]),
    )
    assert code == 0 and stripped.is_file(), res
