"""`acx cartridge spec`: our builds are CLEAN; each spec rule has a cartridge that breaks it and
the issue names the rule and a JSON path; the reference's harness fails our schema."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.spec import check_spec
from tests.harness.cli import run_acx
from tests.harness.env import REPO

EXAMPLE = REPO / "examples" / "agent-package"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spec") / "ex.acx"
    build_cartridge(
        EXAMPLE,
        out,
        publisher="io.github.example-acx",
        key=generate_ed25519(),
        created_at="2026-05-04T09:00:00.000Z",
        include_field_learned=True,
    )
    return out


def test_our_builds_are_clean(built: Path, vectors_dir: Path, tmp_path: Path) -> None:
    report = check_spec(built)
    assert report.clean, [str(i) for i in report.issues]
    assert [a["role"] for a in report.artifacts] == [
        "identity",
        "memory-baseline",
        "memory-vectors",
        "skills",
        "capabilities",
        "harness",
        "loop-context",
        "level",
    ]
    out = tmp_path / "sample.acx"
    build_cartridge(
        vectors_dir / "sample" / "sample-agent-package",
        out,
        publisher="io.github.example-acx",
        key=generate_ed25519(),
        created_at="2026-04-03T13:35:46.190Z",
    )
    assert check_spec(out).clean


def test_reference_export_is_clean_with_legacy_harness_warnings(vectors_dir: Path) -> None:
    report = check_spec(vectors_dir / "sample" / "sample.acx")
    assert report.clean
    assert {(i.rule, i.severity) for i in report.issues} == {
        ("harness.legacy.externalTools", "warning"),
        ("harness.legacy.filesystem", "warning"),
        ("harness.legacy.network", "warning"),
    }


def _json_edit(name: str, edit: Callable[[dict], None]) -> Callable[[sqlite3.Connection], None]:  # type: ignore[type-arg]
    def f(conn: sqlite3.Connection) -> None:
        (data,) = conn.execute("SELECT data FROM sqlar WHERE name = ?", (name,)).fetchone()
        doc = json.loads(data)
        edit(doc)
        new = json.dumps(doc, indent=2).encode()
        conn.execute("UPDATE sqlar SET data = ?, sz = ? WHERE name = ?", (new, len(new), name))

    return f


def _sql(stmt: str, *args: object) -> Callable[[sqlite3.Connection], None]:
    return lambda conn: conn.execute(stmt, args) and None


PS = "rom/package-spec.json"
CASES: list[tuple[str, Callable[[sqlite3.Connection], None], str, str]] = [
    ("extra top key", _json_edit(PS, lambda d: d.update(extra=1)), "package-spec.closed", f"{PS}:$.extra"),
    (
        "cartridgeId mismatch",
        _json_edit(PS, lambda d: d.update(cartridgeId="x/y@z")),
        "package-spec.cartridgeId",
        f"{PS}:$.cartridgeId",
    ),
    (
        "engine mismatch",
        _json_edit(PS, lambda d: d.update(embeddingEngine={"id": "other", "dim": 128})),
        "package-spec.embeddingEngine",
        f"{PS}:$.embeddingEngine",
    ),
    (
        "artifact wrong value",
        _json_edit(PS, lambda d: d["artifacts"][5].update(required=False)),
        "package-spec.artifact.harness",
        f"{PS}:$.artifacts[5].required",
    ),
    (
        "artifact extra key",
        _json_edit(PS, lambda d: d["artifacts"][0].update(path="x")),
        "package-spec.artifact.identity",
        f"{PS}:$.artifacts[0].path",
    ),
    (
        "role twice",
        _json_edit(PS, lambda d: d["artifacts"].__setitem__(7, dict(d["artifacts"][6]))),
        "package-spec.artifacts.role",
        f"{PS}:$.artifacts",
    ),
    (
        "count wrong",
        _json_edit(PS, lambda d: d["artifacts"][1].update(count=9)),
        "package-spec.count",
        f"{PS}:$.artifacts[1].count",
    ),
    (
        "lance columns",
        _json_edit("rom/schema/lance-memory.json", lambda d: d["columns"].pop()),
        "lance.columns",
        "rom/schema/lance-memory.json:$.columns",
    ),
    (
        "lance dim",
        _json_edit("rom/schema/lance-memory.json", lambda d: d["embeddingEngine"].update(dim=64)),
        "lance.dim",
        "rom/schema/lance-memory.json:$.embeddingEngine.dim",
    ),
    (
        "policy rule",
        _json_edit("rom/policy/loop-context-policy.json", lambda d: d["loop"].update(maxTurns=0)),
        "loop.maxTurns",
        "rom/policy/loop-context-policy.json:$.loop.maxTurns",
    ),
    (
        "policy engine id",
        _json_edit(
            "rom/policy/loop-context-policy.json",
            lambda d: d["context"].update(embeddingEngineId="openai-3-small"),
        ),
        "context.embeddingEngineId",
        "rom/policy/loop-context-policy.json:$.context.embeddingEngineId",
    ),
    (
        "harness rule",
        _json_edit("rom/manifest/harness-requirements.json", lambda d: d.update(network=["ftp"])),
        "harness.legacy.network",
        "rom/manifest/harness-requirements.json:$.network[0]",
    ),
    (
        "non-portable path",
        _sql("INSERT INTO sqlar VALUES ('rom/../evil', 420, 0, 1, x'41')"),
        "sqlar.portable-path",
        'sqlar["rom/../evil"]',
    ),
    (
        "required file missing",
        _sql("DELETE FROM sqlar WHERE name = 'rom/policy/loop-context-policy.json'"),
        "rom.required-file",
        'sqlar["rom/policy/loop-context-policy.json"]',
    ),
    (
        "memory tier",
        _sql(
            "UPDATE memory SET payload = replace(payload, '\"portable\":true', '\"portable\":false')"
            " WHERE zone = 'rom'"
        ),
        "memory.record",
        "memory[rev-0001]:$",
    ),
    (
        "memory key",
        _sql("UPDATE memory SET payload = replace(payload, '\"impact\"', '\"effect\"') WHERE id='rev-0002'"),
        "memory.record",
        "memory[rev-0002]:$",
    ),
    (
        "uncovered rom row",
        _sql("INSERT INTO sqlar VALUES ('rom/skills/evil/SKILL.md', 420, 0, 1, x'41')"),
        "rom.covered",
        'objects["rom/skills/evil/SKILL.md"]',
    ),
    (
        "skillset version",
        _json_edit("rom/cal/skillset.json", lambda d: d.update(schemaVersion="acx.cal-skillset/9")),
        "skillset.schemaVersion",
        "rom/cal/skillset.json:$.schemaVersion",
    ),
    (
        "skillset shape",
        _json_edit("rom/cal/skillset.json", lambda d: d.update(references={})),
        "skillset.shape",
        "rom/cal/skillset.json:$.references",
    ),
    (
        "capability hash",
        _sql("UPDATE capabilities SET content_hash = 'sha256:' || hex(randomblob(32))"),
        "capability.record",
        None,
    ),
]


@pytest.mark.parametrize(("what", "mutate", "rule", "path"), CASES, ids=[c[0] for c in CASES])
def test_each_spec_rule(
    built: Path,
    tmp_path: Path,
    what: str,
    mutate: Callable[[sqlite3.Connection], None],
    rule: str,
    path: str | None,
) -> None:
    copy = tmp_path / "c.acx"
    shutil.copyfile(built, copy)
    conn = sqlite3.connect(copy)
    with conn:
        mutate(conn)
    conn.close()
    report = check_spec(copy)
    assert not report.clean
    found = {(i.rule, i.path) for i in report.issues}
    if path is None:
        assert rule in {r for r, _ in found}, found
    else:
        assert (rule, path) in found, found


def test_cli_spec_exit_codes(built: Path, vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = run_acx(capsys, "cartridge", "spec", str(built))
    assert ok.returncode == 0 and "CLEAN" in ok.stdout
    legacy = run_acx(capsys, "--json", "cartridge", "spec", str(vectors_dir / "sample" / "sample.acx"))
    assert legacy.returncode == 0
    assert json.loads(legacy.stdout)["clean"] is True
