"""Builder parts: capability ids and purls against the reference vectors, declared capabilities,
SKILL.md frontmatter rules, package reading errors, and the memory record checker."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.capabilities import capability_id, capability_issues, make_capability, purl
from acxoci.cartridge.memory import partition, record_issues
from acxoci.cartridge.package import read_package
from acxoci.cartridge.skills import load_skill
from acxoci.errors import InvalidInput
from tests.harness.env import REPO

EXAMPLE = REPO / "examples" / "agent-package"


def test_capability_id_matches_reference_vectors() -> None:
    assert (
        capability_id("harden-security", ["pkg:generic/oauth", "pkg:generic/postgresql"], "infrastructure")
        == "cap-cefa827bec7b65a3"
    )
    cap = make_capability(
        "implement-feature", ["postgres", "oauth", "node"], "infrastructure", at="2026-07-16T00:00:00.000Z"
    )
    assert cap.id == "cap-929f1eb591064cc4"
    assert cap.record["stack"] == ["pkg:generic/node", "pkg:generic/oauth", "pkg:generic/postgresql"]
    assert capability_issues(cap.id, cap.json, cap.content_hash) == []


def test_reference_capability_rows_are_structurally_valid(vectors_dir: Path) -> None:
    conn = sqlite3.connect(f"file:{vectors_dir / 'reference' / 'rex-calder.acx'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, json, content_hash FROM capabilities").fetchall()
    finally:
        conn.close()
    assert rows
    for cid, text, h in rows:
        assert capability_issues(cid, text.encode(), h) == [], cid
    cid, text, h = rows[0]
    assert capability_issues(cid, text.encode(), "sha256:" + "0" * 64) == [
        "content_hash does not match the json column"
    ]


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("airflow", "pkg:pypi/apache-airflow"),
        ("dbt", "pkg:pypi/dbt-core"),
        ("postgres", "pkg:generic/postgresql"),
        ("Node JS", "pkg:generic/node-js"),
        ("pkg:npm/left-pad", "pkg:npm/left-pad"),
    ],
)
def test_purl(name: str, want: str) -> None:
    assert purl(name) == want


def test_declared_capabilities_and_package_skill(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    (pkg / "capabilities.json").write_text(
        json.dumps(
            [
                {"taskType": "review", "stack": ["python"], "domain": "testing"},
                {"taskType": "test-authoring", "stack": ["pytest"], "domain": "testing"},
            ]
        )
    )
    out = tmp_path / "x.acx"
    build_cartridge(
        pkg,
        out,
        publisher="io.github.example-acx",
        key=generate_ed25519(),
        created_at="2026-05-04T09:00:00.000Z",
    )
    conn = sqlite3.connect(out)
    try:
        caps = [
            json.loads(j)["taskType"] for (j,) in conn.execute("SELECT json FROM capabilities ORDER BY id")
        ]
        skills = [r[0] for r in conn.execute("SELECT name FROM acx_skill ORDER BY name")]
        (ss,) = conn.execute("SELECT data FROM sqlar WHERE name = 'rom/cal/skillset.json'").fetchone()
    finally:
        conn.close()
    assert sorted(caps) == ["review", "test-authoring"]
    assert skills == ["expertise-reviewer", "review-checklist"]
    play = json.loads(ss)["plays"][0]
    assert sorted(play["providesCapabilities"]) == ["review", "test-authoring"]
    assert play["canComplete"] == ["expertise-reviewer", "review-checklist"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("no frontmatter\n", "frontmatter"),
        ("---\nname: Bad_Name\ndescription: d\n---\nbody\n", "name"),
        ("---\nname: other\ndescription: d\n---\nbody\n", "differs from its directory"),
        ("---\nname: my-skill\n---\nbody\n", "description"),
        ("---\nname: [unclosed\n---\n", "YAML"),
    ],
)
def test_skill_frontmatter_rules(text: str, needle: str) -> None:
    with pytest.raises(InvalidInput, match=needle):
        load_skill("my-skill", text.encode())


def test_skill_index_fields() -> None:
    s = load_skill(
        "my-skill",
        b"---\nname: my-skill\ndescription: Does a thing.\nlicense: MIT\n"
        b"compatibility: any host\nmetadata:\n  version: 2.1.0\n---\n12345678\n",
    )
    row = s.index_row()
    assert row[:7] == (
        "rom/skills/my-skill/SKILL.md",
        "my-skill",
        "Does a thing.",
        "MIT",
        "any host",
        "2.1.0",
        3,
    )
    assert row[-1] == "acx.skill/1" and len(row[7]) == 64


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda m: m.update(artifactId="Bad Id"), "artifactId"),
        (lambda m: m.update(artifactVersion="1.0"), "SemVer"),
        (lambda m: m.pop("role"), "role"),
    ],
)
def test_package_manifest_errors(tmp_path: Path, edit: object, needle: str) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    m = json.loads((pkg / "manifest.json").read_text())
    edit(m)  # type: ignore[operator]
    (pkg / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(InvalidInput, match=needle):
        read_package(pkg)


def test_memory_record_checker_catches_tier_and_fingerprint() -> None:
    rec = dict(
        partition(
            [
                {
                    "id": "m1",
                    "title": "T",
                    "summary": "S",
                    "sourceType": "lesson",
                    "timestamp": "2026-01-01T00:00:00Z",
                }
            ],
            include_field_learned=False,
            salt=b"x",
        )
        .rom[0]
        .record
    )
    assert record_issues(rec, row_zone="rom") == []
    assert record_issues(rec, row_zone="save")
    assert record_issues({**rec, "title": "changed"}, row_zone="rom") == [
        "artifactFingerprint does not match the record"
    ]
    assert record_issues({k: v for k, v in rec.items() if k != "tags"}, row_zone="rom") == [
        "missing key 'tags'"
    ]
    with pytest.raises(InvalidInput, match="repeated"):
        partition([rec, rec], include_field_learned=False, salt=b"x")
