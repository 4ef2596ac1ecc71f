"""`acx workflow ready --issuers`: a minLevel slot is staffed only by a cartridge whose level
credential verifies against its verified ROM digest and is not revoked (status list on an OCI
layout); credentials come from the cartridge's `attestations` table or from OCI referrers."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.artifact import push_path
from acxoci.attest.keys import generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.cartridge.verify import verify_cartridge
from acxoci.cli.output import OPTS
from acxoci.level import oci as level_oci
from acxoci.level import status as st
from acxoci.level.benchmark import demo_suite
from acxoci.level.credential import issue_credential
from acxoci.level.run import run_level
from acxoci.level.solver import ReferenceSolver
from acxoci.oci.target import open_target
from tests.harness.cli import acx_json as acx
from tests.harness.trustdocs import registry_doc

ISSUER = "did:web:verifier.example"
NOW = "2026-08-01T12:00:00Z"
LATER = "2026-08-01T13:00:00Z"
AT = datetime(2026, 8, 1, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _reset_opts() -> Iterator[None]:
    yield
    OPTS.json = OPTS.verbose = OPTS.quiet = False




def _workflow(path: Path, min_level: dict[str, Any]) -> Path:
    doc = {
        "schemaVersion": "acx.cal/1", "id": "levelled-team", "version": "1.0.0", "name": "Levelled team",
        "description": "One senior builder drafts a design document.", "license": "MIT",
        "authors": [{"name": "acxoci tests"}], "tags": ["test"],
        "participants": [{"alias": "builder", "bind": "slot", "slot": {"minLevel": min_level}}],
        "start": "go",
        "nodes": [
            {"id": "go", "type": "event", "event": "start"},
            {"id": "draft", "type": "task", "agent": "builder",
             "completion": {"type": "artifact", "produces": "design-doc"}},
            {"id": "done", "type": "event", "event": "end"},
        ],
        "edges": [{"from": "go", "to": "draft"}, {"from": "draft", "to": "done"}],
    }
    path.write_text(json.dumps(doc))
    return path


def _embed(cart: Path, vc: dict[str, Any]) -> None:
    """Insert the level row (brief §1.2 shape) into the cartridge's unsigned `attestations` table."""
    res = vc["credentialSubject"]["result"][0]
    with sqlite3.connect(cart) as db:
        db.execute("INSERT OR REPLACE INTO attestations VALUES (?, 'vc-2.0', ?, 'application/vc', ?, ?, ?)",
                   (f"level-{res['acx:benchmarkId']}", res["acx:cartridgeRomDigest"], json.dumps(vc),
                    vc["credentialStatus"]["statusListCredential"], vc["validFrom"]))
    db.close()


@pytest.fixture
def world(tmp_path: Path, vectors_dir: Path) -> dict[str, Any]:
    """Issuer registry, a status list published on a layout, and two credentials for the sample
    cartridge's verified ROM digest: senior (index 1) and too low (index 2)."""
    sample = vectors_dir / "sample" / "sample.acx"
    rom = verify_cartridge(sample, registry=None, now=AT).rom_digest
    assert rom is not None
    key = generate_ed25519()
    pub = key.public()
    reg = registry_doc(pub, "example.verifier")
    (tmp_path / "issuers.json").write_text(json.dumps(reg))
    status_ref = f"oci-layout:{tmp_path / 'status-store'}:status"
    lst = st.create_status_list(list_id=status_ref, issuer=ISSUER, key=key, now=AT)
    level_oci.publish_status_list(status_ref, lst, now=AT)

    def issue(competence: float, index: int) -> dict[str, Any]:
        result = run_level(demo_suite(), cartridge=sample, rom_digest=rom, solver=ReferenceSolver(competence),
                           signer=key)
        return issue_credential(result, cartridge_id="sample", issuer=ISSUER, key=key, now=AT,
                                status=StatusEntry(status_ref, index, "revocation", f"{status_ref}#{index}"))

    senior, low = issue(24, 1), issue(18, 2)
    assert senior["credentialSubject"]["result"][0]["acx:acxLevel"] >= 15  # senior or above
    assert low["credentialSubject"]["result"][0]["acx:acxLevel"] < 15
    return {"dir": tmp_path, "sample": sample, "key": key, "list": lst, "status": status_ref,
            "senior": senior, "low": low}


def _revoke(w: dict[str, Any], index: int) -> None:
    new = st.set_status(w["list"], index, key=w["key"], now=AT)
    level_oci.publish_status_list(w["status"], new, now=AT)


def _ready(capsys: pytest.CaptureFixture[str], w: dict[str, Any], wf: Path, *roster: str,
           issuers: bool = True) -> tuple[int, Any]:
    d: Path = w["dir"]
    extra = ["--issuers", str(d / "issuers.json"), "--cache-dir", str(d / "cache"),
             "--allow-demo-level"] if issuers else []
    return acx(capsys, "workflow", "ready", str(wf), *roster, *extra, "--now", LATER)


def test_embedded_credential_staffs_until_revoked(world: dict[str, Any], capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    d: Path = world["dir"]
    roster = d / "roster"
    roster.mkdir()
    for name, vc in (("a-low", world["low"]), ("b-senior", world["senior"]), ("c-none", None)):
        shutil.copyfile(world["sample"], roster / f"{name}.acx")
        if vc is not None:
            _embed(roster / f"{name}.acx", vc)
    wf = _workflow(d / "wf.cal.json", {"careerTier": "senior"})

    code, res = _ready(capsys, world, wf, "--cartridges", str(roster))
    assert code == 0, res
    builder = res["participants"][0]
    assert builder["staffed"] and builder["cartridge"]["source"] == "b-senior.acx"

    code, res = _ready(capsys, world, wf, "--cartridges", str(roster), issuers=False)
    assert code == 1 and "no level verifier is available" in res["participants"][0]["reason"]

    d2 = world["dir"]  # without --allow-demo-level the demo-measured levels do not count
    code, res = acx(capsys, "workflow", "ready", str(wf), "--cartridges", str(roster), "--issuers",
                    str(d2 / "issuers.json"), "--cache-dir", str(d2 / "cache"), "--now", LATER)
    assert code == 1 and "a demonstration" in res["participants"][0]["reason"], res

    _revoke(world, 1)
    code, res = _ready(capsys, world, wf, "--cartridges", str(roster))
    assert code == 1 and res["verdict"] == "NOT READY"
    reason = res["participants"][0]["reason"]
    assert "(b-senior.acx) level unverifiable: level credential revoked" in reason
    assert "proven level" in reason or "proven tier" in reason  # the low one is still too low
    assert "(c-none.acx) level unverifiable: no level credential attached" in reason


def test_too_low_level_is_not_staffed(world: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    d: Path = world["dir"]
    roster = d / "roster"
    roster.mkdir()
    shutil.copyfile(world["sample"], roster / "low.acx")
    _embed(roster / "low.acx", world["low"])
    level = world["low"]["credentialSubject"]["result"][0]["acx:acxLevel"]
    wf = _workflow(d / "wf.cal.json", {"acxLevel": 15})
    code, res = _ready(capsys, world, wf, "--cartridges", str(roster))
    assert code == 1 and not res["participants"][0]["staffed"]
    assert f"proven level {level} < 15" in res["participants"][0]["reason"]
    code, res = _ready(capsys, world, _workflow(d / "wf2.cal.json", {"acxLevel": level}),
                       "--cartridges", str(roster))
    assert code == 0, res


def test_transplanted_embedded_credential_is_refused(world: dict[str, Any], vectors_dir: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    d: Path = world["dir"]
    roster = d / "roster"
    roster.mkdir()
    other = roster / "rex.acx"
    shutil.copyfile(vectors_dir / "reference" / "rex-calder.acx", other)
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE IF NOT EXISTS attestations (att_id TEXT PRIMARY KEY NOT NULL, type TEXT NOT "
                   "NULL, subject_oid TEXT, media_type TEXT NOT NULL, document TEXT NOT NULL, status_url "
                   "TEXT, created_at TEXT NOT NULL) WITHOUT ROWID")
    db.close()
    _embed(other, world["senior"])  # bound to the sample's ROM digest, not rex's
    code, res = _ready(capsys, world, _workflow(d / "wf.cal.json", {"careerTier": "senior"}),
                       "--cartridges", str(roster))
    assert code == 1 and "ROM digest binding mismatch" in res["participants"][0]["reason"]


def test_layout_roster_uses_level_referrers(world: dict[str, Any],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    d: Path = world["dir"]
    layout = f"oci-layout:{d / 'store'}"
    target, _ = open_target(layout)
    subject, _, _ = push_path(target, world["sample"], "agent", verify=True, registry=None, now=AT,
                              created=NOW)
    wf = _workflow(d / "wf.cal.json", {"careerTier": "senior"})
    code, res = _ready(capsys, world, wf, "--roster", f"{layout}:agent")
    assert code == 1 and "no level credential attached" in res["participants"][0]["reason"]
    level_oci.attach_credential(target, subject, world["senior"], now=AT)
    code, res = _ready(capsys, world, wf, "--roster", f"{layout}:agent")
    assert code == 0, res
    _revoke(world, 1)
    code, res = _ready(capsys, world, wf, "--roster", f"{layout}:agent")
    assert code == 1 and "revoked" in res["participants"][0]["reason"]
