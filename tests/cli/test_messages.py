"""Messages that name the mistake (the new-user trial's findings): a local file where a reference
goes is refused before any network request and the hint names the command that takes a file;
oras's argument order for push is recognised; `verify REF` with no flags points at --policy; a
bad flag value is a usage error naming the flag, not the file it would have written; a folder
argument that is a file says so; what an unstaffed participant needs is said; progress lines are
fed with real names and digests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO


@pytest.fixture
def cartridge(tmp_path: Path, vectors_dir: Path) -> Path:
    from tests.harness.installs import make_cartridge, push_cartridge

    acx = make_cartridge(vectors_dir, tmp_path / "agent.acx", generate_ed25519())
    push_cartridge(tmp_path / "layout", acx, "1.0.0")
    return acx


@pytest.mark.parametrize(
    "args",
    [
        ("tags", "{f}"),
        ("manifest", "get", "{f}"),
        ("discover", "{f}"),
        ("cp", "{f}", "registry.invalid/x:1"),
        ("cp", "oci-layout:{d}:1", "{f}"),
        ("attest", "{f}", "--key", "{k}"),
        ("pull", "{f}"),
        ("install", "{f}"),
        ("verify", "{f}", "--policy", "{k}"),
        ("attach", "{f}", "{f}", "--artifact-type", "text/plain"),
    ],
)
def test_a_local_file_where_a_reference_goes(
    args: tuple[str, ...], cartridge: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused (2) before any request: `registry-1.docker.io` is never asked (no network here)."""
    argv = [a.format(f=cartridge, d=tmp_path / "layout", k=cartridge) for a in args]
    code, out = acx_json(capsys, *argv)
    assert code == 2 and out["error"]["kind"] == "usage", out
    assert "is a local file" in out["error"]["message"] and out["error"]["hint"], out


def test_push_in_oras_argument_order_is_named(
    cartridge: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"oci-layout:{tmp_path / 'p'}:1.0.0"
    code, out = acx_json(capsys, "push", ref, str(cartridge))
    assert code == 2 and out["error"]["hint"] == f"acx push {cartridge} {ref}", out
    assert not (tmp_path / "p").exists()


def test_verify_without_flags_points_at_policy_and_a_bad_reference_comes_first(
    cartridge: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = acx_json(capsys, "verify", f"oci-layout:{tmp_path / 'layout'}:1.0.0")
    assert code == 2 and "--policy FILE" in out["error"]["message"], out
    assert out["error"]["hint"].startswith("acx verify REF --policy")
    code, out = acx_json(capsys, "verify", "oci-layout:", "--key", str(tmp_path / "missing.pub"))
    assert code == 2 and out["error"]["kind"] == "bad_reference", out


def test_flag_values_are_usage_errors_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = generate_ed25519()
    pub = tmp_path / "k.pub.pem"
    pub.write_text(key.public().spki_pem())
    reg = tmp_path / "trust.json"
    code, out = acx_json(capsys, "key", "trust", str(pub), "--publisher", "A.B", "--trust-registry", str(reg))
    assert code == 2 and "--publisher" in out["error"]["message"] and not reg.exists(), out
    assert (
        acx_json(
            capsys, "key", "trust", str(pub), "--publisher", "com.example.team", "--trust-registry", str(reg)
        )[0]
        == 0
    )
    before = reg.read_bytes()
    code, out = acx_json(
        capsys, "key", "revoke", str(pub), "--trust-registry", str(reg), "--reason", "compromised"
    )
    assert code == 2 and "--reason must be one of key-compromise" in out["error"]["message"], out
    assert "where" not in out["error"] and reg.read_bytes() == before
    code, out = acx_json(capsys, "discover", f"oci-layout:{tmp_path}:x", "--depth", "-1")
    assert code == 2 and "--depth" in out["error"]["message"], out


def test_an_encrypted_key_without_a_passphrase_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACX_KEY_PASSWORD", raising=False)
    monkeypatch.delenv("COSIGN_PASSWORD", raising=False)
    from acxoci.attest.cosignkey import encrypt_cosign_key

    (tmp_path / "cosign.key").write_bytes(encrypt_cosign_key(generate_ed25519(), b"secret"))
    code, out = acx_json(capsys, "key", "inspect", str(tmp_path / "cosign.key"))
    assert code == 5 and "no password was given" in out["error"]["message"], out
    monkeypatch.setenv("COSIGN_PASSWORD", "wrong")
    code, out = acx_json(capsys, "key", "inspect", str(tmp_path / "cosign.key"))
    assert code == 5 and "wrong password" in out["error"]["message"], out


def test_exchange_folder_argument_that_is_a_file(cartridge: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("index", "verify"):
        code, out = acx_json(capsys, "exchange", command, str(cartridge))
        assert code == 2 and "is a file" in out["error"]["message"] and "acx share" in out["error"]["hint"], (
            out
        )


def test_attach_takes_oras_file_colon_media_type(
    cartridge: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    note = tmp_path / "note.txt"
    note.write_text("reviewed")
    ref = f"oci-layout:{tmp_path / 'layout'}:1.0.0"
    code, out = acx_json(
        capsys, "attach", ref, f"{note}:text/markdown", "--artifact-type", "application/x.note"
    )
    assert code == 0, out
    layer = json.loads((tmp_path / "layout" / "blobs" / "sha256" / out["digest"].split(":")[1]).read_text())
    assert layer["layers"][0]["mediaType"] == "text/markdown", layer
    code, out = acx_json(capsys, "attach", ref, f"{note}:not a type", "--artifact-type", "application/x.note")
    assert code == 2 and "--media-type" in out["error"]["message"], out


def test_pull_writes_into_the_current_folder_by_default(
    cartridge: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    code, out = acx_json(capsys, "pull", f"oci-layout:{tmp_path / 'layout'}:1.0.0")
    assert code == 0 and Path(out["path"]).parent == Path("."), out
    assert (here / out["path"]).read_bytes() == cartridge.read_bytes()


def test_workflow_ready_says_what_each_unstaffed_participant_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "roster"
    empty.mkdir()
    r = run_acx(
        capsys,
        "workflow",
        "ready",
        str(REPO / "examples" / "workflow" / "review-team.cal.json"),
        "--cartridges",
        str(empty),
    )
    assert r.returncode == 1
    assert "needs role backend_dev, capability implement-feature" in r.stdout
    assert "needs role tech_writer" in r.stdout  # a role `acx init` makes
    code, out = acx_json(
        capsys, "workflow", "ready", "registry.example/team:0.1.0", "--cartridges", str(empty)
    )
    assert code == 4 and "acx pull REF" in out["error"]["hint"], out


def test_release_progress_names_effects_and_digests(tmp_path: Path, vectors_dir: Path) -> None:
    """What a terminal's progress line shows during `acx release run`: each effect by its
    description, and the digest it produced (the interpreter's observer seam, fed by the CLI)."""
    from acxoci.cli.cmd_release import _Progress
    from acxoci.release import interpreter
    from acxoci.release.effects import plan_effects
    from acxoci.release.plan import load_plan
    from tests.harness.releases import make_world

    layout = tmp_path / "layout"
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{layout}"])
    plan = load_plan(w.plan)
    names = {e.id: e.describe() for e in plan_effects(plan)}
    notes: list[str] = []
    observer = _Progress(notes.append, names)
    interpreter.OBSERVERS.append(observer)
    try:
        report = interpreter.run_goal(plan, root=w.state)
    finally:
        interpreter.OBSERVERS.remove(observer)
    assert report.status.state == "done", report.to_json()
    assert any(n.startswith(next(iter(names.values()))) for n in notes)
    assert any(": done sha256:" in n for n in notes), notes


def test_share_takes_cartridge_as_its_kind(
    capsys: pytest.CaptureFixture[str], cartridge: Path, tmp_path: Path
) -> None:
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    code, out = acx_json(
        capsys, "share", "cartridge", str(cartridge), "--registry", str(exchange), "--dry-run"
    )
    code2, out2 = acx_json(capsys, "share", "agent", str(cartridge), "--registry", str(exchange), "--dry-run")
    assert code == code2 and _drop(out, "kind") == _drop(out2, "kind"), (out, out2)


def _drop(d: Any, key: str) -> Any:
    return {k: v for k, v in d.items() if k != key} if isinstance(d, dict) else d
