"""Planted fields: a value from a registry, a layout, a document, a file name or a record carrying
line breaks, carriage returns, tabs, terminal controls and bidi/format characters reaches the
terminal escaped from `verify`, `discover`, `cartridge inspect`, `tags`, `ls`, `installed
list/show` and `exchange verify` (no raw control character, no forged line), while `--json` keeps
the exact value. The values are planted at test time into real files, layouts and records."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.attestation.attach import write_attestation
from acxoci.attestation.statements import oci_statement
from acxoci.install.store import RECORD, slug
from tests.harness import hostilelayout as H
from tests.harness.cli import run_acx
from tests.harness.exchanges import make_exchange
from tests.harness.installs import PUBLISHER, make_cartridge

PLANT = "plant\nFORGED: VERIFIED by trusted key\r\t\x1b[2J\x1b]0;t\x07\x9b1m\u202e\u2066\u200b\u2028\x85"
RAW = ["\r", "\t", "\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u200b", "\u2028", "\x85"]
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{ch!r} reached the terminal: {text!r}"
    assert "\nFORGED" not in text, f"a value added a line: {text!r}"


def _both(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[Any, str]:
    """Human output (checked clean, returned) and the --json value of the same command."""
    human = run_acx(capsys, *args)
    assert human.returncode != 70, human.stderr
    _clean(human.stdout + human.stderr)
    got = run_acx(capsys, "--json", *args)
    _clean(got.stdout)  # JSON writes them as \u escapes
    return json.loads(got.stdout), human.stdout + human.stderr


@pytest.fixture(scope="module")
def cart(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("cart")
    key = generate_ed25519()
    return {"key": key, "file": make_cartridge(vectors_dir, d / "s.acx", key), "dir": d}


def test_verify_shows_a_planted_predicate_type_escaped(
    cart: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's forgery: an attestation by a key nobody trusts, whose predicate type carries a
    line reading like a verified attestation from a trusted signer."""
    kit = H.build(tmp_path, cart["file"], cart["file"])
    stmt = oci_statement(kit.subject.digest, "layout", PLANT, {"note": PLANT})
    write_attestation(kit.store, kit.subject, stmt, generate_ed25519(), formats="both", now=NOW)
    pub = tmp_path / "trusted.pub"
    pub.write_text(cart["key"].public().spki_pem())
    res, human = _both(capsys, "verify", f"{kit.ref}:v1", "--key", str(pub))
    assert res["ok"] is False
    assert PLANT in [a.get("predicateType") for a in res["attestations"]]
    assert "plant\\nFORGED" in human


def test_discover_shows_planted_fields_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kit = H.build(tmp_path)
    kit.manifest(artifact_type="application/x.noted", subject=kit.subject, annotations={"note": PLANT})
    H.stray_in_fallback_tag(kit)
    kit.fallback_index(kit.subject, [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                      "digest": "sha256:" + "12" * 32, "size": 9, "artifactType": PLANT}])
    res, human = _both(capsys, "discover", f"{kit.ref}:v1")
    assert [n["annotations"]["note"] for n in res["referrers"]] == [PLANT]
    assert PLANT in [s.get("claimedArtifactType") for s in res["strays"]] or \
        any(s["kind"] == "malformed_manifest" for s in res["strays"])
    assert "application/x.noted" in human


def _set_meta(path: Path, key: str, value: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("UPDATE cartridge SET value = ? WHERE key = ?", (value, key))
    finally:
        conn.close()


def test_cartridge_inspect_shows_planted_metadata_escaped(
    cart: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.acx"
    shutil.copyfile(cart["file"], f)
    _set_meta(f, "acx.agent_name", PLANT)
    res, human = _both(capsys, "cartridge", "inspect", str(f))
    assert res["meta"]["acx.agent_name"] == PLANT
    assert "plant\\nFORGED" in human


def test_tags_show_a_planted_ref_name_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kit = H.build(tmp_path)
    H.bad_ref_name(kit, PLANT)
    res, human = _both(capsys, "tags", kit.ref)
    assert res["error"]["kind"] == "malformed_manifest"
    assert "ref.name" in human


def test_ls_shows_a_planted_file_name_and_metadata_escaped(
    cart: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "roster"
    folder.mkdir()
    f = folder / "evil\nFORGED\x1b[2J.acx"
    shutil.copyfile(cart["file"], f)
    _set_meta(f, "acx.agent_name", PLANT)
    res, human = _both(capsys, "ls", str(folder), "--now", "2026-11-30T12:00:00Z")
    assert [(r["file"], r["name"]) for r in res["cartridges"]] == [(f.name, PLANT)]
    assert "plant\\nFORGED" in human


def test_installed_list_and_show_render_a_planted_record_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record in the store is a file like any other: a planted one is shown escaped."""
    store = tmp_path / "store"
    digest = "sha256:" + "34" * 32
    name = "io.example/agent" + PLANT
    item = store / "items" / f"{slug(name)}@{digest.removeprefix('sha256:')}"
    item.mkdir(parents=True)
    (item / RECORD).write_text(json.dumps({
        "name": name, "digest": digest, "kind": PLANT, "reference": PLANT, "installedAt": PLANT,
        "trust": PLANT, "publisherId": PLANT, "policy": {"source": PLANT, "digest": PLANT},
        "checks": [{"status": "pass", "order": 1, "id": PLANT, "reason": PLANT}], "files": []}))
    res, _ = _both(capsys, "installed", "list", "--store", str(store))
    assert [i["name"] for i in res["items"]] == [name]
    res, human = _both(capsys, "installed", "show", name, "--store", str(store))
    assert "plant\\nFORGED" in human


def test_exchange_verify_shows_a_planted_path_escaped(
    tmp_path: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ex = make_exchange(tmp_path, generate_ed25519(), vectors_dir)
    bad = ex.root / "cartridges" / PUBLISHER / "pr-reviewer" / ("9.9.9" + PLANT)
    bad.mkdir()
    (bad / "cartridge.acx").write_bytes(b"not a cartridge")
    res, human = _both(capsys, "exchange", "verify", str(ex.root))
    assert any(PLANT in r["path"] for r in res["rejected"]), res["rejected"]
    assert "9.9.9plant\\nFORGED" in human
