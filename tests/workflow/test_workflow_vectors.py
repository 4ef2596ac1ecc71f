"""The shared reference vectors: digests, verify verdicts and lint verdicts must match the reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acxoci.workflow.lint import lint
from acxoci.workflow.model import load_document
from acxoci.workflow.sign import workflow_digest
from acxoci.workflow.verify import verify_workflow
from tests.harness.workflows import NOW


def _expected(vectors: Path, kind: str) -> list[tuple[str, dict[str, Any]]]:
    data = json.loads((vectors / "expected.json").read_text(encoding="utf-8"))
    return [(k, v) for k, v in sorted(data.items()) if v.get("kind") == kind]


# The reference's lint messages, mapped to our rule ids (the recorded output names the rule).
REFERENCE_MESSAGE_TO_RULE = {
    "cyclic workflow needs limits.maxSteps": "cycle-needs-max-steps",
    "MUST NOT carry content": "rac-content",
    "references unknown agent alias": "unknown-agent",
    "is unreachable from start": "unreachable",
}


def test_every_workflow_vector_digest_and_verdict(vectors_dir: Path) -> None:
    cases = _expected(vectors_dir, "workflow")
    assert len(cases) >= 4
    for name, exp in cases:
        doc = load_document(vectors_dir / name)
        ref = exp["reference"]
        assert workflow_digest(doc) == ref["digest"], name
        v = verify_workflow(doc, registry=None, now=NOW)
        assert (v.status, v.trust) == (ref["status"], ref["trust"]), (name, v)
        assert v.digest == ref["digest"]
        cli_exit = 0 if (v.ok and v.signed and lint(doc, publish=True).ok) else 1
        assert cli_exit == ref["exit"], name
        if exp.get("acxoci_must_say") == "tampered":
            assert v.trust == "tampered" and not v.ok


def test_tampered_vector_names_the_digest_mismatch(vectors_dir: Path) -> None:
    doc = load_document(vectors_dir / "workflow" / "team.tampered.cal.json")
    v = verify_workflow(doc, registry=None, now=NOW)
    assert v.trust == "tampered"
    assert len(v.issues) == 1
    assert v.issues[0].startswith("workflow digest mismatch: signed sha256:ace99c5f")
    assert v.issues[0].endswith(f"computed {workflow_digest(doc)}")


def test_unsigned_team_digest_equals_the_signed_one(vectors_dir: Path) -> None:
    unsigned = load_document(vectors_dir / "workflow" / "team.cal.json")
    signed = load_document(vectors_dir / "workflow" / "team.signed.cal.json")
    assert workflow_digest(unsigned) == signed["integrity"]["digest"]
    v = verify_workflow(unsigned, registry=None, now=NOW)
    assert (v.ok, v.signed, v.status, v.trust) == (True, False, "warning", "unsigned")


@pytest.mark.parametrize(
    "name", ["cycle-without-maxsteps", "rac-with-content", "unknown-agent", "unreachable-node"]
)
def test_lint_vectors_fail_for_the_recorded_rule(vectors_dir: Path, name: str) -> None:
    key = f"workflow/lint/{name}.cal.json"
    exp = json.loads((vectors_dir / "expected.json").read_text(encoding="utf-8"))[key]
    assert exp["reference"]["exit"] == 1
    recorded = [
        line.strip()[2:] for line in exp["reference"]["output"].splitlines() if line.strip().startswith("- ")
    ]
    expected_rules = {rule for msg, rule in REFERENCE_MESSAGE_TO_RULE.items() for r in recorded if msg in r}
    assert expected_rules, recorded
    result = lint(load_document(vectors_dir / key))
    assert not result.ok
    assert expected_rules <= result.rules()
    # nothing else than the recorded rule fires (unknown-property accompanies a RAC content key)
    assert result.rules() - expected_rules <= {"unknown-property"}


def test_reference_workflows_pass_lint_publish(vectors_dir: Path) -> None:
    for path in [
        *sorted((vectors_dir / "reference").glob("*.cal.json")),
        vectors_dir / "workflow" / "team.cal.json",
    ]:
        result = lint(load_document(path), publish=True)
        assert result.ok, (path.name, [i.text() for i in result.issues])
