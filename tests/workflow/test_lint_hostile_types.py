"""Review regression: a document where an object or an array stands in for a string (a RAC kind,
a node type, a gateway, a route's `from`, ...) is a lint finding, never a crash. Each of the
review's twelve crash sites is built here from the shipped examples and run through every reader
of such a file: `acx workflow lint` / `acx graph lint`, the Exchange gate (`acx exchange
verify`, `index`, `site`) and the Studio's `POST /api/lint` (a real `acx builder`). Each must
give a typed answer: no exit 70, no dropped connection, no "internal error" rejection."""

from __future__ import annotations

import copy
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.web import Builder, start_builder

PUBLISHER = "dev.example.me"
NOW = "2026-12-06T00:00:00Z"
#: (example, path to the member replaced, the value put there): one per crash site the review found
SITES: list[tuple[str, tuple[str | int, ...], Any]] = [
    ("workflow", ("rac", 0, "kind"), {}),
    ("workflow", ("rac", 0, "check", "type"), {}),
    ("workflow", ("variables", 0, "type"), {}),
    ("workflow", ("nodes", 0, "type"), {}),
    ("workflow", ("nodes", 0, "event"), {}),
    ("workflow", ("nodes", 1, "sideEffects"), {}),
    ("workflow", ("nodes", 1, "approval"), {}),
    ("workflow", ("nodes", 1, "completion", "type"), {}),
    ("workflow", ("nodes", 3, "gateway"), {}),
    ("workflow", ("edges", 3, "when", "all", 0, "op"), {}),
    ("graph", ("routes", 0, "from"), {}),
    ("graph", ("routes", 0, "from"), []),
]
EXAMPLE = {"workflow": REPO / "examples" / "workflow" / "review-team.cal.json",
           "graph": REPO / "examples" / "graph" / "review-team.agent-graph.json"}


def hostile(kind: str, path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """The example with the member at `path` replaced by `value`."""
    doc: dict[str, Any] = json.loads(EXAMPLE[kind].read_text())
    at: Any = doc
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = copy.deepcopy(value)
    return doc


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Builder]:
    b = start_builder(tmp_path_factory.mktemp("builder"))
    yield b
    b.stop()


def post_lint(b: Builder, body: bytes) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", b.port, timeout=30)
    conn.request("POST", "/api/lint", body, {"Origin": f"http://127.0.0.1:{b.port}",
                                             "Content-Type": "application/json"})
    resp = conn.getresponse()  # a dropped connection raises here
    answer = json.loads(resp.read())
    conn.close()
    return resp.status, answer


@pytest.mark.parametrize(("kind", "path", "value"), SITES,
                         ids=[f"{k}-{'.'.join(map(str, p))}={json.dumps(v)}" for k, p, v in SITES])
def test_a_wrong_type_is_a_finding_everywhere(
    kind: str, path: tuple[str | int, ...], value: Any, tmp_path: Path, builder: Builder,
    capsys: pytest.CaptureFixture[str]
) -> None:
    doc = hostile(kind, path, value)
    where = ".".join(map(str, path))
    suffix = ".cal.json" if kind == "workflow" else ".agent-graph.json"
    single = tmp_path / f"doc{suffix}"
    single.write_text(json.dumps(doc))
    code, out = acx_json(capsys, kind, "lint", str(single))
    assert code in (1, 3) and not out["ok"], out  # INVALID (or refused as input), never exit 70
    # the Exchange gate: the file is rejected with lint's reason; the folder is still judged
    ex = tmp_path / "ex"
    rel = f"{'cals' if kind == 'workflow' else 'graphs'}/{PUBLISHER}/review-team/0.1.0{suffix}"
    (ex / rel).parent.mkdir(parents=True)
    (ex / rel).write_text(json.dumps(doc))
    for command in (("verify", str(ex)), ("index", str(ex)), ("verify", str(ex), "--without-graphs")):
        code, out = acx_json(capsys, "exchange", *command, "--now", NOW)
        assert code == 1, (command, out)
        reasons = [r["reason"] for r in out.get("rejected", []) if r["path"] == rel]
        assert not any("internal error" in r for r in reasons), (command, where, reasons)
    key = tmp_path / "k.pem"
    assert acx_json(capsys, "key", "generate", "-o", str(key))[0] == 0
    trust = tmp_path / "trust.json"
    assert acx_json(capsys, "key", "trust", str(tmp_path / "k.pub.pem"), "--publisher", PUBLISHER,
                    "-r", str(trust))[0] == 0
    code, out = acx_json(capsys, "exchange", "site", str(ex), "--out", str(tmp_path / "site"),
                         "--trust-registry", str(trust), "--now", NOW)
    assert code == 0 and [e["verdict"] for e in out["entries"]] == ["rejected"], out
    site = json.loads((tmp_path / "site" / "catalog.json").read_text())
    assert not any("internal error" in a["summary"] for a in site["artifacts"]), site["artifacts"]
    # the Studio answers with the lint findings (200), not a failure
    status, answer = post_lint(builder, json.dumps(doc).encode())
    assert status == 200 and not answer["lint"]["ok"] and answer["lint"]["issues"], (where, answer)
