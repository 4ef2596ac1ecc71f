"""`workflow lint` takes its closed key sets and enums from schemas/acx.cal-1.schema.json (through
acxoci.workflow.calschema), keeping its own rule ids and JSON paths: an unknown key anywhere the
schema closes an object is `unknown-property` at that path, and every enum the schema lists is
exactly what the lint accepts."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from acxoci.jsonschemas import load_schema
from acxoci.workflow import calschema
from acxoci.workflow.lint import lint
from tests.harness.env import REPO

EXAMPLE = json.loads((REPO / "examples" / "workflow" / "review-team.cal.json").read_text())


def _node(kind: str) -> int:
    return next(i for i, n in enumerate(EXAMPLE["nodes"]) if n["type"] == kind)


PLACES: list[tuple[str, list[Any]]] = [
    ("$", []),
    ("$.participants[0]", ["participants", 0]),
    ("$.participants[0].slot", ["participants", 0, "slot"]),
    ("$.participants[0].slot.capabilities[0]", ["participants", 0, "slot", "capabilities", 0]),
    ("$.rac[0]", ["rac", 0]),
    ("$.rac[0].check", ["rac", 0, "check"]),
    ("$.variables[0]", ["variables", 0]),
    ("$.edges[0]", ["edges", 0]),
    ("$.authors[0]", ["authors", 0]),
    (f"$.nodes[{_node('task')}]", ["nodes", _node("task")]),
    (f"$.nodes[{_node('gateway')}]", ["nodes", _node("gateway")]),
    (f"$.nodes[{_node('event')}]", ["nodes", _node("event")]),
]


def test_the_example_is_clean() -> None:
    assert lint(EXAMPLE).ok, [i.text() for i in lint(EXAMPLE).issues]


@pytest.mark.parametrize("path, steps", PLACES, ids=[p for p, _ in PLACES])
def test_an_unknown_key_where_the_schema_closes_an_object(path: str, steps: list[Any]) -> None:
    doc = copy.deepcopy(EXAMPLE)
    target: Any = doc
    for step in steps:
        target = target[step]
    target["xUnknown"] = 1
    found = [(i.rule, i.path) for i in lint(doc, publish=True).issues]  # authors: publish profile
    assert ("unknown-property", f"{path}.xUnknown") in found, found


def test_every_schema_enum_value_is_accepted_and_nothing_else() -> None:
    schema = load_schema(calschema.SCHEMA_FILE)
    gateway_enum = next(v for v in schema["$defs"]["node"]["oneOf"]
                        if v["properties"]["type"].get("const") == "gateway")["properties"]["gateway"]["enum"]
    assert set(gateway_enum) == calschema.GATEWAY_KINDS
    i = _node("gateway")
    for kind in gateway_enum:
        doc = copy.deepcopy(EXAMPLE)
        doc["nodes"][i]["gateway"] = kind
        assert not [x for x in lint(doc).issues if x.path == f"$.nodes[{i}].gateway"], kind
    doc = copy.deepcopy(EXAMPLE)
    doc["nodes"][i]["gateway"] = "sideways"
    assert any(x.path == f"$.nodes[{i}].gateway" for x in lint(doc).issues)


def test_the_lint_follows_an_edit_of_the_schema() -> None:
    """Allow one more edge property in (a copy of) the schema: the lint accepts it, with no second
    list to edit. Run in a fresh interpreter, so the edited schema is what the modules load."""
    script = f"""
import copy, json
from acxoci import jsonschemas
real = jsonschemas.load_schema
def edited(name):
    doc = copy.deepcopy(real(name))
    if name == {calschema.SCHEMA_FILE!r}:
        doc["properties"]["edges"]["items"]["properties"]["label"] = {{"type": "string"}}
    return doc
jsonschemas.load_schema = edited
from acxoci.workflow.lint import lint
doc = json.loads(open({str(REPO / "examples" / "workflow" / "review-team.cal.json")!r}).read())
doc["edges"][0]["label"] = "first"
print(json.dumps([i.path for i in lint(doc).issues]))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "$.edges[0].label" not in json.loads(proc.stdout)
    doc = copy.deepcopy(EXAMPLE)
    doc["edges"][0]["label"] = "first"
    assert ("unknown-property", "$.edges[0].label") in [(i.rule, i.path) for i in lint(doc).issues]
