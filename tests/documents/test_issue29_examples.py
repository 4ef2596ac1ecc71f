"""The cases issue 29 reports, each re-signed by a publisher the trust registry vouches for: the
cartridge verifies TRUSTED, and every command reading the document answers with a typed finding
naming it (never exit 70); a ROM document that is JSON `null` is a document that is not an object,
never "absent" (so `cartridge spec` is not CLEAN)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import resign

HARNESS = "rom/manifest/harness-requirements.json"
POLICY = "rom/policy/loop-context-policy.json"


@pytest.fixture(scope="module")
def env() -> resign.Env:
    return resign.make_env()


def _run_all(env: resign.Env, kind_name: str, doc: Any) -> dict[str, resign.Ran]:
    kind = resign.BY_KIND[kind_name]
    results = resign.run_readers(env, kind, "sample.acx", doc)
    assert results is not None
    return {r.name: ran for r, ran in results}


def _harness(env: resign.Env) -> Any:
    from tests.harness.installs import valid_harness

    return valid_harness()


@pytest.mark.parametrize(
    ("kind", "change", "where"),
    [
        ("cartridge.harness", lambda d: d["requiredTools"][0].__setitem__("capabilityScopes", -1),
         "requiredTools[0].capabilityScopes"),
        ("cartridge.harness", lambda d: d["requiredTools"][0]["inputSchema"].__setitem__("required", [{}]),
         "requiredTools[0].inputSchema.required"),
        ("cartridge.policy", lambda d: d["loop"]["stopConditions"][0].__setitem__("action", []),
         "loop.stopConditions[0].action"),
    ],
)
def test_a_signed_document_with_a_wrong_type_is_a_typed_finding(
    env: resign.Env, kind: str, change: Any, where: str
) -> None:
    seed = dict(resign.BY_KIND[kind].seeds(env)[0][1])
    doc = json.loads(json.dumps(_harness(env) if kind == "cartridge.harness" else seed))
    change(doc)
    ran = _run_all(env, kind, doc)
    assert ran["cartridge verify"].code == 0 and json.loads(ran["cartridge verify"].out)["trust"] == "trusted"
    assert not [n for n, r in ran.items() if r.crashed], {n: r.out[:300] for n, r in ran.items() if r.crashed}
    spec = json.loads(ran["cartridge spec"].out)
    assert ran["cartridge spec"].code == 1 and not spec["clean"]
    assert any(where in i["path"] for i in spec["issues"]), spec["issues"]
    install = ran["install"]
    assert install.code in (3, 8), install.out[:500]  # refused, typed; never installed
    assert where.split("[")[0] in install.out


@pytest.mark.parametrize("path", ["rom/package-spec.json", HARNESS, POLICY, "rom/schema/lance-memory.json",
                                  "rom/cal/skillset.json"])
def test_a_rom_document_that_is_null_is_not_clean(env: resign.Env, path: str, tmp_path: Path) -> None:
    kind = next(k for k in resign.kinds() if k.name.startswith("cartridge.") and
                resign.BY_KIND[k.name].seeds(env) and path.endswith(_file_of(k.name)))
    p = kind.materialize(env, "sample.acx", None, tmp_path)
    verify = resign.run(["cartridge", "verify", str(p), "--trust-registry", str(env.registry)])
    assert json.loads(verify.out)["trust"] == "trusted"
    spec = resign.run(["cartridge", "spec", str(p)])
    report = json.loads(spec.out)
    assert spec.code == 1 and not report["clean"], report
    assert any(i["path"].startswith(path) and i["severity"] == "error" for i in report["issues"]), report


def _file_of(kind: str) -> str:
    return {
        "cartridge.package-spec": "package-spec.json", "cartridge.harness": "harness-requirements.json",
        "cartridge.policy": "loop-context-policy.json", "cartridge.lance": "lance-memory.json",
        "cartridge.skillset": "skillset.json",
    }.get(kind, "\0")


def test_a_committed_index_that_is_null_is_a_difference(env: resign.Env, tmp_path: Path) -> None:
    """`exchange verify` compared nothing when index.json held `null` (read as "no index") and
    passed; `null` is a document, and no index."""
    root = resign.BY_KIND["exchange-index"].materialize(env, "index.json", None, tmp_path)
    ran = resign.run(["exchange", "verify", str(root), "--now", resign.NOW_TEXT])
    report = json.loads(ran.out)
    assert ran.code == 1 and not report["ok"], report
    assert any("Expected `object`, got `null`" in d for d in report["differences"]), report


@pytest.mark.parametrize("member", ["rac", "variables", "limits", "lineage", "extensions"])
def test_a_workflow_member_that_is_null_is_no_absent_member(env: resign.Env, member: str) -> None:
    """Workflow lint read `"rac": null` as "no RAC list" (and the same for the other optional
    members); null is a value of the wrong type, named at its path."""
    from acxoci.workflow.lint import lint

    seed = resign.BY_KIND["workflow"].seeds(env)[0][1]
    result = lint({**seed, member: None})
    assert not result.ok
    assert any(i.path == f"$.{member}" for i in result.errors), [i.text() for i in result.issues]


@pytest.mark.parametrize("member", ["participants", "nodes", "edges", "rac", "limits"])
def test_a_missing_workflow_member_is_reported_and_printable(env: resign.Env, member: str) -> None:
    """Found by `make fuzz`: an absent required member's issue carried the internal absence
    marker as its value, and `workflow lint --json` could not print it (exit 70)."""
    seed = resign.BY_KIND["workflow"].seeds(env)[0][1]
    doc = {k: v for k, v in seed.items() if k != member}
    ran = resign.run(["workflow", "lint", str(_write(env, doc))])
    assert not ran.crashed, ran.out
    json.loads(ran.out)


def _write(env: resign.Env, doc: Any) -> Path:
    p = env.tmp / "w.cal.json"
    p.write_text(json.dumps(doc))
    return p
