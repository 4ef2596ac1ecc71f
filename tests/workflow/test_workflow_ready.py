"""`workflow ready`: staffing from a directory roster by verified ROM digest, slots, levels, tasks."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest

from acxoci.workflow.lint import lint
from acxoci.workflow.model import Workflow
from acxoci.workflow.ready import (
    LevelResolver,
    ProvenLevel,
    RosterCartridge,
    assess,
    directory_roster,
    load_roster,
)
from acxoci.workflow.sign import sign_workflow
from acxoci.workflow.verify import verify_workflow
from tests.harness.workflows import NOW, SAMPLE_ROM, load, new_key, pinned_workflow


def _roster_dir(tmp_path: Path, files: list[Path]) -> Path:
    root = tmp_path / "roster"
    (root / "nested").mkdir(parents=True)
    for i, f in enumerate(files):
        shutil.copyfile(f, root / ("nested" if i % 2 else ".") / f"{i}-{f.name}")
    return root


def _ready(doc: dict[str, Any], roster_dir: Path, resolver: LevelResolver | None = None) -> Any:
    roster = load_roster(directory_roster(roster_dir), registry=None, now=NOW)
    return assess(
        Workflow.from_json(doc),
        roster,
        lint_result=lint(doc),
        workflow_verdict=verify_workflow(doc, registry=None, now=NOW),
        level_resolver=resolver,
    )


def test_reference_roster_matches_reference_verdict(vectors_dir: Path) -> None:
    doc = load(vectors_dir / "reference" / "ship-a-feature.cal.json")
    report = _ready(doc, vectors_dir / "reference")
    assert not report.ready
    staffed = {s.alias: s for s in report.participants}
    assert not staffed["architect"].staffed and not staffed["builder"].staffed
    assert staffed["reviewer"].staffed and staffed["reviewer"].cartridge is not None
    assert staffed["reviewer"].cartridge.agent_name == "Rex Calder"
    assert "level unverifiable" in staffed["builder"].reason
    assert len(report.reasons) == 2


def test_signed_hash_participant_is_staffed_only_from_a_verifying_cartridge(
    vectors_dir: Path, tmp_path: Path
) -> None:
    doc = sign_workflow(pinned_workflow(), publisher_id="io.github.tester", key=new_key(), now=NOW)
    good = _ready(doc, _roster_dir(tmp_path / "a", [vectors_dir / "sample" / "sample.acx"]))
    assert good.ready, good.reasons
    [p] = good.participants
    assert p.staffed and p.cartridge is not None and p.cartridge.verified_rom_digest == SAMPLE_ROM

    tampered = sorted((vectors_dir / "sample" / "tampered").glob("*.acx"))
    bad_files = [f for f in tampered if f.name != "save-only-change.acx"]
    assert len(bad_files) >= 5
    bad = _ready(doc, _roster_dir(tmp_path / "b", bad_files))
    assert not bad.ready
    [p] = bad.participants
    assert not p.staffed
    assert len(p.notes) == len(bad_files)  # each tampered copy claims the digest and is refused by name
    assert all("refused" in n and "tampered" in n for n in p.notes)
    assert len(bad.rejected_cartridges) == len(bad_files)

    save_only = _ready(
        doc, _roster_dir(tmp_path / "c", [vectors_dir / "sample" / "tampered" / "save-only-change.acx"])
    )
    assert save_only.ready  # a SAVE-zone change does not touch the signed ROM


def test_tampered_copy_first_then_good_one(vectors_dir: Path, tmp_path: Path) -> None:
    files = [vectors_dir / "sample" / "tampered" / "rom-data.acx", vectors_dir / "sample" / "sample.acx"]
    report = _ready(pinned_workflow(), _roster_dir(tmp_path, files))
    assert report.ready
    [p] = report.participants
    assert p.cartridge is not None and p.cartridge.path.endswith("sample.acx")


def test_per_task_capability_and_skill_checks(vectors_dir: Path, tmp_path: Path) -> None:
    roster = _roster_dir(tmp_path, [vectors_dir / "sample" / "sample.acx"])
    report = _ready(pinned_workflow(caps=["deploy-service"], skills=["writing"]), roster)
    assert not report.ready
    assert "node draft: agent 'designer' lacks required capability 'deploy-service'" in report.reasons
    assert "node draft: agent 'designer' lacks required skill 'writing'" in report.reasons


def test_unknown_digest_and_optional_participant(vectors_dir: Path, tmp_path: Path) -> None:
    roster = _roster_dir(tmp_path, [vectors_dir / "sample" / "sample.acx"])
    doc = pinned_workflow(rom="sha256:" + "1" * 64)
    report = _ready(doc, roster)
    assert report.reasons == ("participant 'designer' unresolved: no verified cartridge with that romDigest",)
    optional = copy.deepcopy(doc)
    optional["participants"][0]["required"] = False
    optional["nodes"][1]["requires"] = {}
    report = _ready(optional, roster)
    assert report.ready and len(report.warnings) == 1


def test_tampered_workflow_is_not_ready(vectors_dir: Path, tmp_path: Path) -> None:
    doc = sign_workflow(pinned_workflow(), publisher_id="io.github.tester", key=new_key(), now=NOW)
    doc["name"] = "Pinned designer v2"
    report = _ready(doc, _roster_dir(tmp_path, [vectors_dir / "sample" / "sample.acx"]))
    assert not report.ready
    assert any(r.startswith("signature: workflow digest mismatch") for r in report.reasons)


class FixedLevels:
    """Test double for the level verifier (named as such): a fixed level per agent name."""

    def __init__(self, levels: dict[str, int]) -> None:
        self.levels = levels

    def proven_level(self, cartridge: RosterCartridge) -> ProvenLevel | None:
        lvl = self.levels.get(cartridge.agent_name or "")
        return None if lvl is None else ProvenLevel(lvl, "senior")


@pytest.mark.parametrize(
    ("levels", "staffed"), [({"Ada Ridge": 28}, True), ({"Ada Ridge": 10}, False), ({}, False)]
)
def test_min_level_needs_a_proven_level(vectors_dir: Path, levels: dict[str, int], staffed: bool) -> None:
    doc = load(vectors_dir / "reference" / "ship-a-feature.cal.json")
    report = _ready(doc, vectors_dir / "reference", resolver=FixedLevels(levels))
    builder = next(s for s in report.participants if s.alias == "builder")
    assert builder.staffed is staffed
    if staffed:
        assert builder.cartridge is not None and builder.cartridge.agent_name == "Ada Ridge"


def test_unreadable_file_in_roster_is_never_staffed(vectors_dir: Path, tmp_path: Path) -> None:
    root = _roster_dir(tmp_path, [vectors_dir / "sample" / "sample.acx"])
    (root / "junk.acx").write_bytes(b"not sqlite at all")
    report = _ready(pinned_workflow(), root)
    assert report.ready
    assert any("not usable: invalid_input" in r for r in report.rejected_cartridges)


def test_cartridge_id_mismatch_is_a_warning_not_a_refusal(vectors_dir: Path, tmp_path: Path) -> None:
    doc = pinned_workflow()
    doc["participants"][0]["cartridgeId"] = "io.github.someone/other@00000000-0000-4000-8000-000000000000"
    report = _ready(doc, _roster_dir(tmp_path, [vectors_dir / "sample" / "sample.acx"]))
    assert report.ready
    assert len(report.warnings) == 1 and "cartridgeId" in report.warnings[0]
