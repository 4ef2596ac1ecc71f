"""Model, JSON Schemas and the cal-skillset derivation."""

from __future__ import annotations

import copy
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acxoci.cartridge.reader import open_cartridge
from acxoci.errors import InvalidInput
from acxoci.workflow.model import CalSkillSet, Workflow, derive_skillset, load_document, skillset_differences
from tests.harness.env import REPO
from tests.harness.workflows import team


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((files("acxoci") / "schemas" / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_cal_schema_accepts_every_vector_and_rejects_rac_content(vectors_dir: Path) -> None:
    v = _validator("acx.cal-1.schema.json")
    paths = [
        *(vectors_dir / "reference").glob("*.cal.json"),
        *(vectors_dir / "workflow").glob("*.cal.json"),
        REPO / "examples" / "workflow" / "review-team.cal.json",
    ]
    for p in paths:
        assert list(v.iter_errors(load_document(p))) == [], p.name
    bad = load_document(vectors_dir / "workflow" / "lint" / "rac-with-content.cal.json")
    assert list(v.iter_errors(bad))
    doc = team(vectors_dir)
    doc["participants"][0]["romDigest"] = "sha256:" + "0" * 64  # slot + romDigest
    assert list(v.iter_errors(doc))
    doc = team(vectors_dir)
    doc["edges"][3]["when"] = {"var": "review.outcome", "op": "eq", "value": 1, "always": True}
    assert list(v.iter_errors(doc))


def test_skillset_schema(vectors_dir: Path) -> None:
    v = _validator("acx.cal-skillset-1.schema.json")
    with open_cartridge(vectors_dir / "sample" / "sample.acx") as cart:
        raw = cart.sqlar_read("rom/cal/skillset.json")
    assert raw is not None
    assert list(v.iter_errors(json.loads(raw))) == []
    assert list(v.iter_errors({"schemaVersion": "acx.cal-skillset/1", "plays": [], "extra": 1}))


def test_workflow_model(vectors_dir: Path) -> None:
    wf = Workflow.from_json(load_document(vectors_dir / "reference" / "ship-a-feature.cal.json"))
    assert wf.id == "ship-a-feature" and wf.signed and wf.limits.max_steps == 24
    builder = wf.participant("builder")
    assert builder is not None and builder.slot is not None and builder.slot.min_level is not None
    assert builder.slot.min_level.acx_level == 15 and builder.required
    assert [r.required for r in wf.rac] == [True, True, False]
    assert wf.nodes[1].completion is not None and wf.nodes[1].completion["type"] == "verification"
    assert wf.edges[4].when == {"not": {"var": "review.outcome", "op": "eq", "value": "completed"}}
    with pytest.raises(InvalidInput):
        Workflow.from_json({"id": "x"})


def test_skillset_derivation_matches_the_stored_one_in_vectors(vectors_dir: Path) -> None:
    for name in ("sample/sample.acx", "reference/ada-ridge.acx", "reference/rex-calder.acx"):
        with open_cartridge(vectors_dir / name) as cart:
            raw = cart.sqlar_read("rom/cal/skillset.json")
            assert raw is not None
            stored = CalSkillSet.from_json(json.loads(raw))
            types = [json.loads(r.json)["taskType"] for r in cart.capabilities()]
            derived = derive_skillset(cart.meta()["acx.role"], types, [s.name for s in cart.skills()])
        assert skillset_differences(stored, derived) == [], name
        assert stored.to_json() == json.loads(raw)
        assert CalSkillSet.from_json(derived.to_json()) == derived
        forged_doc: dict[str, Any] = copy.deepcopy(derived.to_json())
        forged_doc["plays"][0]["providesCapabilities"] = ["deploy-prod"]
        diffs = skillset_differences(CalSkillSet.from_json(forged_doc), derived)
        assert any("claims ['deploy-prod']" in d for d in diffs) and any("omits" in d for d in diffs)
