"""`acx load FILE --host H`: the one-step form of install --activate from a local file, judged by
the same decision, seen by installed verify and installed sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from tests.harness.cli import acx_json
from tests.harness.installs import (
    PUBLISHER,
    make_cartridge,
    registry_entry,
    tree_hash,
    write_registry,
)


@pytest.fixture
def loaded(tmp_path: Path, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "agent.acx", key)
    trust = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    return {"acx": acx, "trust": trust, "store": tmp_path / "store", "home": tmp_path / "home",
            "tmp": tmp_path, "key_reg": trust}


def test_print_only_judges_and_writes_nothing(loaded: dict[str, Path],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_hash(loaded["tmp"])
    code, out = acx_json(capsys, "load", str(loaded["acx"]), "--host", "claude", "--trust-registry",
                         str(loaded["trust"]), "--store", str(loaded["store"]), "--print-only")
    assert code == 0 and out["status"] == "would-install" and out["written"] is False, out
    assert out["skills"] == ["expertise-designer"] and out["root"].endswith(".claude/skills")
    assert tree_hash(loaded["tmp"]) == before


def test_load_installs_and_activates_and_sync_sees_it(loaded: dict[str, Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    store, home = loaded["store"], loaded["home"]
    code, out = acx_json(capsys, "load", str(loaded["acx"]), "--host", "claude", "--trust-registry",
                         str(loaded["trust"]), "--store", str(store))
    assert code == 0 and out["status"] == "installed", out
    assert (home / ".claude/skills/expertise-designer/SKILL.md").is_file()
    code, shown = acx_json(capsys, "installed", "show", out["name"], "--store", str(store))
    assert shown["record"]["repository"] == f"file:{loaded['acx'].resolve()}", shown
    checks = {c["id"]: c["status"] for c in shown["record"]["checks"]}
    assert checks["lifecycle"] == "skip" and checks["signature"] == "pass", checks
    code, ver = acx_json(capsys, "installed", "verify", "--store", str(store))
    assert code == 0 and ver["ok"], ver
    # the publisher's key is compromised: the loaded agent no longer passes, and sync removes it
    write_registry(loaded["trust"], [registry_entry(generate_ed25519(), PUBLISHER)])
    code, ver = acx_json(capsys, "installed", "verify", "--store", str(store))
    assert code == 1 and not ver["items"][0]["ok"], ver
    code, res = acx_json(capsys, "installed", "sync", "--store", str(store))
    assert code == 0 and res["steps"][0]["done"] == "deactivated", res
    assert not (home / ".claude").exists()


def test_an_untrusted_file_is_refused_and_nothing_is_written(loaded: dict[str, Path],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    other = write_registry(loaded["tmp"] / "other.json", [registry_entry(generate_ed25519(), PUBLISHER)])
    code, out = acx_json(capsys, "load", str(loaded["acx"]), "--host", "codex", "--trust-registry",
                         str(other), "--store", str(loaded["store"]))
    assert code == 8 and out["status"] == "refused", out
    assert "trust" in {c["id"] for c in out["refusal"]["failed"]}
    assert not (loaded["home"] / ".agents").exists()
    assert not (loaded["store"] / "items").exists() or not any((loaded["store"] / "items").iterdir())


def test_install_of_a_local_file_names_load(loaded: dict[str, Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out = acx_json(capsys, "install", str(loaded["acx"]), "--policy", "p.yaml")
    assert code == 2 and "acx load" in out["error"]["hint"], out
