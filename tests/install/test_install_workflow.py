"""Installing a workflow: signature + trust, then `ready` against the store's installed cartridges
(minLevel slots use the levels proven at cartridge install), and the staffing in the record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.install.install import install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    attach_level,
    issue_level,
    level_policy,
    make_cartridge,
    push_cartridge,
    registry_entry,
    tree_hash,
    trusting_policy,
    write_registry,
)


def signed_workflow(vectors: Path, key: PrivateKey, min_level: int | None) -> dict[str, Any]:
    """The vector team workflow, every slot asking for a `designer` (the sample's role)."""
    from acxoci.workflow.sign import sign_workflow

    doc = json.loads((vectors / "workflow" / "team.cal.json").read_text())
    for p in doc["participants"]:
        p["slot"] = {"role": "designer", **({"minLevel": {"acxLevel": min_level}} if min_level else {})}
    for n in doc["nodes"]:
        n.get("requires", {}).pop("capabilities", None)
    return sign_workflow(doc, publisher_id=PUBLISHER, key=key, now=NOW, require_publishable=False)


def push_workflow(layout: Path, doc: dict[str, Any], tag: str, tmp: Path) -> str:
    from acxoci.artifact import build, gather, push_file
    from acxoci.oci.layout import LayoutStore

    path = tmp / f"{tag}.cal.json"
    path.write_text(json.dumps(doc))
    facts = gather(path, verify=False, registry=None, now=NOW)
    return push_file(LayoutStore(layout), facts, build(facts), tag).digest


@pytest.fixture
def setup(tmp_path: Path, vectors_dir: Path) -> dict[str, Any]:
    key = generate_ed25519()
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    return {
        "tmp": tmp_path,
        "key": key,
        "reg": reg,
        "layout": tmp_path / "layout",
        "store": Store(tmp_path / "s"),
        "vectors": vectors_dir,
    }


def test_workflow_refused_until_its_team_is_installed(setup: dict[str, Any]) -> None:
    s = setup
    pol = load_policy(trusting_policy(s["tmp"], s["reg"]), now=NOW)
    push_workflow(s["layout"], signed_workflow(s["vectors"], s["key"], None), "wf", s["tmp"])
    ref = f"oci-layout:{s['layout']}:wf"
    out = install(ref, policy=pol, store=s["store"], now=NOW)
    assert out.status == "refused" and out.kind == "workflow"
    failed = {c.id: c for c in out.failed}
    assert list(failed) == ["staffing"] and failed["staffing"].kind == "not_ready"
    assert not s["store"].root.exists()
    acx = make_cartridge(s["vectors"], s["tmp"] / "c.acx", s["key"])
    push_cartridge(s["layout"], acx, "c1")
    assert (
        install(f"oci-layout:{s['layout']}:c1", policy=pol, store=s["store"], now=NOW).status == "installed"
    )
    out = install(ref, policy=pol, store=s["store"], now=NOW)
    assert out.status == "installed", [c.to_json() for c in out.failed]
    assert out.record is not None and out.record["staffing"]["ready"] is True
    staffed = {p["alias"]: p["cartridge"]["source"] for p in out.record["staffing"]["participants"]}
    assert set(staffed.values()) == {"installed:io.github.example-acx/scenario-research-designer"}
    assert {c["id"]: c["status"] for c in out.record["checks"]}["signature"] == "pass"


def test_workflow_signature_and_trust_are_checked(setup: dict[str, Any]) -> None:
    s = setup
    doc = signed_workflow(s["vectors"], s["key"], None)
    doc["name"] = "edited after signing"
    push_workflow(s["layout"], doc, "bad", s["tmp"])
    pol = load_policy(trusting_policy(s["tmp"], s["reg"]), now=NOW)
    out = install(f"oci-layout:{s['layout']}:bad", policy=pol, store=s["store"], now=NOW)
    assert {c.id: c.kind for c in out.failed}["signature"] == "tampered"
    push_workflow(s["layout"], signed_workflow(s["vectors"], generate_ed25519(), None), "other", s["tmp"])
    out = install(f"oci-layout:{s['layout']}:other", policy=pol, store=s["store"], now=NOW)
    assert {c.id: c.kind for c in out.failed}["trust"] == "untrusted_publisher"  # key not tied to it


def test_min_level_slots_use_levels_proven_at_install(setup: dict[str, Any]) -> None:
    s = setup
    acx = make_cartridge(s["vectors"], s["tmp"] / "c.acx", s["key"])
    desc = push_cartridge(s["layout"], acx, "c1")
    lv = issue_level(s["tmp"], acx)
    attach_level(s["layout"], desc, lv.credential)
    pol = load_policy(level_policy(s["tmp"], s["reg"], lv, "mid"), now=NOW)
    cart = install(f"oci-layout:{s['layout']}:c1", policy=pol, store=s["store"], now=NOW)
    assert cart.status == "installed" and cart.record is not None
    proven = cart.record["level"]["level"]
    push_workflow(s["layout"], signed_workflow(s["vectors"], s["key"], proven), "ok", s["tmp"])
    ok = install(f"oci-layout:{s['layout']}:ok", policy=pol, store=s["store"], now=NOW)
    assert ok.status == "installed", [c.to_json() for c in ok.failed]
    push_workflow(s["layout"], signed_workflow(s["vectors"], s["key"], proven + 1), "high", s["tmp"])
    before = tree_hash(s["store"].root)
    high = install(f"oci-layout:{s['layout']}:high", policy=pol, store=s["store"], now=NOW, name="team/high")
    assert high.status == "refused" and [c.id for c in high.failed] == ["staffing"]
    assert tree_hash(s["store"].root) == before


def test_staffing_judges_each_member_now_not_the_record(setup: dict[str, Any],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: after the level credential of an installed cartridge was revoked, a workflow whose
    slot needs that level was installed READY (the level came from the install record). Now every
    member is judged again, so install and `workflow ready --policy --store` both say NOT READY."""
    from datetime import timedelta

    from tests.harness.cli import acx_json
    from tests.harness.installs import revoke

    s = setup
    acx = make_cartridge(s["vectors"], s["tmp"] / "c.acx", s["key"])
    desc = push_cartridge(s["layout"], acx, "c1")
    lv = issue_level(s["tmp"], acx)
    attach_level(s["layout"], desc, lv.credential)
    pol_path = level_policy(s["tmp"], s["reg"], lv, "mid")
    pol = load_policy(pol_path, now=NOW)
    cart = install(f"oci-layout:{s['layout']}:c1", policy=pol, store=s["store"], now=NOW)
    assert cart.status == "installed" and cart.record is not None
    doc = signed_workflow(s["vectors"], s["key"], cart.record["level"]["level"])
    push_workflow(s["layout"], doc, "team", s["tmp"])
    wf = s["tmp"] / "team.cal.json"
    at = ("--now", NOW.isoformat())
    code, out = acx_json(capsys, "workflow", "ready", str(wf), "--policy", str(pol_path), "--store",
                         str(s["store"].root), *at)
    assert code == 0 and out["ok"], out
    revoke(lv, now=NOW + timedelta(minutes=1))
    later = NOW + timedelta(minutes=2)
    out2 = install(f"oci-layout:{s['layout']}:team", policy=load_policy(pol_path, now=later),
                   store=s["store"], now=later)
    assert out2.status == "refused" and [c.id for c in out2.failed] == ["staffing"], out2.to_json()
    assert "revoked" in out2.failed[0].reason
    code, out = acx_json(capsys, "workflow", "ready", str(wf), "--policy", str(pol_path), "--store",
                         str(s["store"].root), "--now", later.isoformat())
    assert code == 1 and not out["ok"] and any("revoked" in r for r in out["reasons"]), out
