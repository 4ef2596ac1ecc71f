"""The Exchange end to end on an OCI layout: a folder built at test time (cartridges and a workflow
made and signed by the tests, the reference CALs and cartridges at their coordinates, a lifecycle
ledger) is indexed and verified, hostile folders are refused within bounds, the folder is mirrored
into a layout (a rerun uploads nothing) and `acx install` honours the lifecycle."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.errors import InvalidInput
from acxoci.exchange import graphs as G
from acxoci.exchange import walk as W
from acxoci.exchange.errors import GraphSupportPending
from acxoci.exchange.index import derive, index_bytes
from acxoci.exchange.lifecycle import read_lifecycle
from acxoci.exchange.order import locale_key, semver_cmp
from acxoci.exchange.status import decide, ledger_issues, parse_ledger
from acxoci.oci.layout import LayoutStore
from tests.harness.cli import acx_json
from tests.harness.exchanges import REF_CARTRIDGES, Exchange, make_exchange
from tests.harness.installs import (
    PUBLISHER,
    registry_entry,
    rom_digest,
    trusting_policy,
    write_registry,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def ex(tmp_path: Path, vectors_dir: Path) -> dict[str, Any]:
    key = generate_ed25519()
    exchange = make_exchange(tmp_path, key, vectors_dir)
    trust = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    return {"ex": exchange, "key": key, "tmp": tmp_path, "policy": trusting_policy(tmp_path, trust)}


def test_index_then_verify_is_clean_and_carries_latest_and_lifecycle(
    capsys: pytest.CaptureFixture[str], ex: dict[str, Any]
) -> None:
    e: Exchange = ex["ex"]
    code, out = acx_json(capsys, "exchange", "verify", str(e.root))
    assert code == 1 and out["differences"] == ["index.json is missing"]
    code, out = acx_json(capsys, "exchange", "index", str(e.root))
    assert code == 0 and out["rejected"] == [], out
    written = (e.root / "index.json").read_bytes()
    doc = json.loads(written)
    assert written == (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()
    carts = {(c["id"], c["version"]): c for c in doc["cartridges"]}
    assert carts[("pr-reviewer", "1.1.0")]["latest"] and not carts[("pr-reviewer", "1.0.0")]["latest"]
    assert carts[("pr-reviewer", "1.0.0")]["registryStatus"]["status"] == "withdrawn"
    sup = carts[("pr-reviewer", "0.9.0")]["registryStatus"]
    assert sup["status"] == "superseded" and sup["successor"] == e.ids["1.1.0"]
    assert [c["version"] for c in doc["cartridges"] if c["id"] == "pr-reviewer"] == [
        "1.1.0",
        "1.0.0",
        "0.9.0",
    ]
    assert carts[("pr-reviewer", "1.1.0")]["digest"] == e.ids["1.1.0"]["digest"]
    assert {w["id"] for w in doc["workflows"]} == {"vector-team", "ship-a-feature", "research-council"}
    assert doc["generatedAt"] == "2026-11-30T12:00:00.000Z"  # the newest source: the workflow signature
    code, out = acx_json(capsys, "exchange", "verify", str(e.root))
    assert code == 0 and out["ok"] and out["identical"], out


def test_reference_artifacts_are_indexed_with_their_reference_facts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, vectors_dir: Path
) -> None:
    """The reference CALs and cartridges at their coordinates get the reference's own digests and
    verdicts; a cartridge acxoci's spec check does not accept is rejected with that reason, never
    indexed (the gate requires a clean package spec, as the reference's does)."""
    from acxoci.cartridge.spec import check_spec

    expected = json.loads((vectors_dir / "expected.json").read_text())
    e = make_exchange(tmp_path, generate_ed25519(), vectors_dir, reference_cartridges=False)
    shutil.rmtree(e.root / "cartridges" / PUBLISHER)
    (e.root / "status.json").unlink()
    shutil.rmtree(e.root / "cals" / PUBLISHER)
    for name, pub in REF_CARTRIDGES.items():
        dest = e.root / "cartridges" / pub / name / "1.0.0" / "cartridge.acx"
        dest.parent.mkdir(parents=True)
        shutil.copyfile(vectors_dir / "reference" / f"{name}.acx", dest)
    d = derive(e.root, now=NOW)
    flows = {w["id"]: w for w in d.index["workflows"]}
    for name in ("ship-a-feature", "research-council"):
        ref = expected[f"reference/{name}.cal.json"]["reference"]
        assert flows[name]["digest"] == ref["digest"] and flows[name]["trust"] == ref["trust"]
        assert (
            flows[name]["trustStatus"] == ref["status"]
            and flows[name]["registryStatus"]["status"] == "active"
        )
    assert [w["id"] for w in d.index["workflows"]] == ["research-council", "ship-a-feature"]
    carts = {c["id"]: c for c in d.index["cartridges"]}
    rejected = {r.path: r.reason for r in d.rejected}
    for name, pub in REF_CARTRIDGES.items():
        facts = expected[f"reference/{name}.acx"]
        rel = f"cartridges/{pub}/{name}/1.0.0/cartridge.acx"
        if check_spec(vectors_dir / "reference" / f"{name}.acx").clean:
            assert (
                carts[name]["digest"] == facts["romDigest"]
                and carts[name]["trust"] == facts["reference"]["trust"]
            )
            assert carts[name]["trustStatus"] == facts["reference"]["status"] and carts[name]["specClean"]
        else:
            assert name not in carts and rejected[rel].startswith("unclean package")
    # no ledger: generatedAt is the newest source timestamp (a workflow signature)
    assert d.index["generatedAt"] == "2026-07-18T15:27:30.680Z"


def test_verify_reports_changed_bytes_and_tampering(
    capsys: pytest.CaptureFixture[str], ex: dict[str, Any]
) -> None:
    from tests.harness.exchanges import build_version

    e: Exchange = ex["ex"]
    assert acx_json(capsys, "exchange", "index", str(e.root))[0] == 0
    # an immutable coordinate is rebuilt with other content (same publisher/id/version)
    (ex["tmp"] / "again").mkdir()
    other = build_version(ex["tmp"] / "again", ex["key"], "1.1.0", description="Quietly different now.")
    shutil.copyfile(other, e.root / "cartridges" / PUBLISHER / "pr-reviewer" / "1.1.0" / "cartridge.acx")
    code, out = acx_json(capsys, "exchange", "verify", str(e.root))
    assert code == 1
    changed = out["changedCoordinates"]
    assert [(c["id"], c["version"]) for c in changed] == [("pr-reviewer", "1.1.0")]
    assert changed[0]["indexedDigest"] == e.ids["1.1.0"]["digest"] != changed[0]["digest"]
    # a tampered cartridge is rejected, and `index` writes nothing
    import sqlite3

    target = e.root / "cartridges" / PUBLISHER / "pr-reviewer" / "0.9.0" / "cartridge.acx"
    conn = sqlite3.connect(target, isolation_level=None)
    conn.execute("UPDATE sqlar SET data = ?, sz = 4 WHERE name LIKE 'rom/skills/%'", (b"evil",))
    conn.close()
    before = (e.root / "index.json").read_bytes()
    code, out = acx_json(capsys, "exchange", "index", str(e.root))
    assert code == 1 and any(r["path"].endswith("0.9.0/cartridge.acx") for r in out["rejected"])
    assert (e.root / "index.json").read_bytes() == before


def test_hostile_folders_are_refused_within_bounds(
    capsys: pytest.CaptureFixture[str], ex: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    e: Exchange = ex["ex"]
    outside = ex["tmp"] / "outside.acx"
    outside.write_bytes(b"not a cartridge")
    link = e.root / "cartridges" / PUBLISHER / "pr-reviewer" / "2.0.0"
    link.mkdir()
    os.symlink(outside, link / "cartridge.acx")
    (e.root / "cals" / "leaked.key.pem").write_text(
        "-----BEGIN " + "PRIVATE KEY-----\nAAAA\n-----END " + "PRIVATE KEY-----\n"  # a label, no key
    )
    d = derive(e.root, now=NOW)
    reasons = {(r.type, r.path): r.reason for r in d.rejected}
    assert (
        reasons[("agent", "cartridges/io.github.example-acx/pr-reviewer/2.0.0/cartridge.acx")]
        == "symbolic links are forbidden"
    )
    assert any("private key material" in r.reason for r in d.rejected)
    assert any("secret-bearing filename" in r.reason for r in d.rejected)
    # bounded: too many entries or too deep is a typed refusal, not a hang
    monkeypatch.setattr(W, "MAX_ENTRIES", 20)
    with pytest.raises(InvalidInput, match="more than 20 entries"):
        derive(e.root, now=NOW)
    monkeypatch.setattr(W, "MAX_ENTRIES", 20_000)
    deep = e.root / "templates"
    for i in range(W.MAX_DEPTH + 1):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    code, out = acx_json(capsys, "exchange", "verify", str(e.root))
    assert code == 3 and "deeper than" in out["error"]["message"]
    # the folder itself must not be a symlink
    os.symlink(e.root, ex["tmp"] / "alias")
    assert acx_json(capsys, "exchange", "index", str(ex["tmp"] / "alias"))[0] == 3


def test_ledger_is_validated_strictly(ex: dict[str, Any]) -> None:
    e: Exchange = ex["ex"]
    good = json.loads((e.root / "status.json").read_text())
    assert ledger_issues(good) == []
    bad = json.loads(json.dumps(good))
    del bad["entries"][0]["successor"]  # superseded without a successor
    bad["entries"][1]["status"] = "revoked"
    bad["entries"][2]["reason"] = "short"
    bad["entries"].append(dict(good["entries"][1]))  # a duplicate identity
    bad["extra"] = True
    issues = ledger_issues(bad)
    for needle in (
        "successor is required",
        "entries[1].status is invalid",
        "10-1000 character",
        "duplicates an earlier entry",
        "unknown property 'extra'",
    ):
        assert any(needle in i for i in issues), (needle, issues)
    with pytest.raises(InvalidInput):
        parse_ledger(b'{"schemaVersion": "acx.registry-status/1", "schemaVersion": "x"}')
    (e.root / "status.json").write_text(json.dumps(bad))
    with pytest.raises(InvalidInput):
        derive(e.root, now=NOW)
    # a ledger entry naming an artifact that is not in the folder is a rejection
    orphan = json.loads(json.dumps(good))
    orphan["entries"][2]["artifact"]["digest"] = "sha256:" + "1" * 64
    (e.root / "status.json").write_text(json.dumps(orphan))
    assert any(r.type == "status" for r in derive(e.root, now=NOW).rejected)


def test_lifecycle_decision_fails_closed() -> None:
    assert decide([], "x").action == "allow"
    assert decide([{"status": "deprecated", "reason": "old"}], "x").action == "warn"
    succ = {"publisherId": "p.q", "id": "a", "version": "2.0.0"}
    v = decide(
        [{"status": "superseded", "reason": "newer", "successor": succ, "successorReference": "r:2"}], "x"
    )
    assert v.action == "warn" and "p.q/a@2.0.0 (r:2)" in v.message
    both = decide(
        [{"status": "withdrawn", "reason": "bad"}, {"status": "deprecated", "reason": "later"}], "x"
    )
    assert both.action == "refuse"  # the most severe record wins, whatever its order
    assert decide([{"status": "something-new"}], "x").action == "refuse"


def test_orders_match_the_reference() -> None:
    assert semver_cmp("1.10.0", "1.9.0") > 0 and semver_cmp("1.0.0-rc.1", "1.0.0") < 0
    assert semver_cmp("1.0.0-alpha.2", "1.0.0-alpha.10") < 0 and semver_cmp("1.0.0-1", "1.0.0-a") < 0
    assert semver_cmp("1.0.0+b1", "1.0.0+b2") == 0
    with pytest.raises(ValueError):
        semver_cmp("1.0", "1.0.0")
    names = ["b", "B", "a_b", "a-b", "a.b", "a1", "A"]
    assert sorted(names, key=locale_key) == ["A", "a_b", "a-b", "a.b", "a1", "b", "B"]


def test_graphs_are_refused_while_graph_support_is_pending(
    capsys: pytest.CaptureFixture[str], ex: dict[str, Any], vectors_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e: Exchange = ex["ex"]
    monkeypatch.setattr(G, "graph_support", lambda: None)
    dest = e.root / "graphs" / "io.github.lboel" / "product-delivery" / "1.0.0.agent-graph.json"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(vectors_dir / "graph" / "product-delivery.signed.agent-graph.json", dest)
    with pytest.raises(GraphSupportPending):
        derive(e.root, now=NOW)
    code, out = acx_json(capsys, "exchange", "index", str(e.root))
    assert code == 9 and "graph support pending" in out["error"]["message"]
    # the CLI no longer offers --without-graphs (graph support is in the tree); the library still can
    assert derive(e.root, now=NOW, allow_pending_graphs=True).pending_graphs == [
        dest.relative_to(e.root).as_posix()]


def test_graph_card_and_dependencies_follow_the_reference_shape(vectors_dir: Path) -> None:
    doc = json.loads((vectors_dir / "graph" / "product-delivery.signed.agent-graph.json").read_text())
    v = G.GraphVerdict(
        True, True, doc["integrity"]["digest"], doc["integrity"]["publisherId"], "portable", "verified"
    )
    card = G.graph_card(doc, v)
    assert card["actorCount"] == len(doc["actors"]) and card["loopCount"] == len(doc["loops"])
    assert card["intents"] == sorted({r["intent"] for r in doc["routes"]})
    flows = [
        {
            "publisher": lp["workflowPublisherId"],
            "id": lp["workflowId"],
            "version": lp["workflowVersion"],
            "digest": lp["digest"],
            "path": f"cals/{lp['workflowId']}",
            "registryStatus": {"status": "active"},
        }
        for lp in card["loops"]
    ]
    entry = {"path": "g", **card}
    assert G.resolve_dependencies([entry], flows) == [] and entry["dependenciesResolved"]
    flows[0]["digest"] = "sha256:" + "0" * 64
    problems = G.resolve_dependencies([entry], flows)
    assert len(problems) == 1 and "digest-mismatch" in problems[0][1] and not entry["dependenciesResolved"]


def _layout_files(root: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_mirror_into_a_layout_is_idempotent_and_install_honours_the_lifecycle(
    capsys: pytest.CaptureFixture[str], ex: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    e: Exchange = ex["ex"]
    layout = ex["tmp"] / "mirror"
    code, out = acx_json(capsys, "exchange", "mirror", str(e.root), f"oci-layout:{layout}")
    assert code == 0, out
    n = 3 + 3 + len(e.reference_cartridges)
    assert (
        len(out["items"]) == n and all(i["status"] == "pushed" for i in out["items"]) and out["blobsSent"] > 0
    )
    before = _layout_files(layout)
    code, again = acx_json(capsys, "exchange", "mirror", str(e.root), f"oci-layout:{layout}")
    assert code == 0 and again["blobsSent"] == 0 and again["manifestsSent"] == 0, again
    assert all(i["status"] == "unchanged" for i in again["items"])
    assert _layout_files(layout) == before  # nothing written at all
    # the lifecycle travelled as a referrer of the exact release
    repo = LayoutStore(layout / "agent" / PUBLISHER / "pr-reviewer", create=False)
    withdrawn = repo.resolve("1.0.0")
    assert [r["status"] for r in read_lifecycle(repo, withdrawn)] == ["withdrawn"]
    assert read_lifecycle(repo, repo.resolve("1.1.0")) == []
    # install refuses the withdrawn release and leaves no store behind
    store = ex["tmp"] / "store"
    ref = f"oci-layout:{layout / 'agent' / PUBLISHER / 'pr-reviewer'}"
    code, err = acx_json(
        capsys, "install", f"{ref}:1.0.0", "--policy", str(ex["policy"]), "--store", str(store)
    )
    assert code == 8 and "withdrawn" in err["error"]["message"], err
    assert not store.exists()
    # a superseded release installs with a warning naming its successor; then it activates
    home = ex["tmp"] / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    code, res = acx_json(
        capsys,
        "install",
        f"{ref}:0.9.0",
        "--policy",
        str(ex["policy"]),
        "--store",
        str(store),
        "--activate",
        "claude",
    )
    assert code == 0 and res["status"] == "installed", res
    life = res["lifecycle"]
    assert life["status"] == "superseded" and "io.github.example-acx/pr-reviewer@1.1.0" in life["message"]
    assert life["successorReference"] == f"oci-layout:{layout}/agent/{PUBLISHER}/pr-reviewer:1.1.0"
    assert (home / ".claude" / "skills" / "review-checklist" / "SKILL.md").is_file()
    code, res = acx_json(
        capsys, "install", f"{ref}:1.1.0", "--policy", str(ex["policy"]), "--store", str(store)
    )
    assert code == 0 and "lifecycle" not in res
    # the deprecated workflow carries its record too
    wrepo = LayoutStore(layout / "workflow" / PUBLISHER / "vector-team", create=False)
    assert [r["status"] for r in read_lifecycle(wrepo, wrepo.resolve("1.2.3"))] == ["deprecated"]
    # a coordinate that changed upstream is never overwritten in the mirror
    from tests.harness.exchanges import build_version

    (ex["tmp"] / "again").mkdir()
    other = build_version(ex["tmp"] / "again", ex["key"], "1.1.0", description="Quietly different now.")
    shutil.copyfile(other, e.root / "cartridges" / PUBLISHER / "pr-reviewer" / "1.1.0" / "cartridge.acx")
    code, err = acx_json(capsys, "exchange", "mirror", str(e.root), f"oci-layout:{layout}")
    assert code == 1 and "successor is not present" in json.dumps(err)  # the ledger pins the old bytes
    ledger = (e.root / "status.json").read_text().replace(e.ids["1.1.0"]["digest"], rom_digest(other))
    (e.root / "status.json").write_text(ledger)
    code, err = acx_json(capsys, "exchange", "mirror", str(e.root), f"oci-layout:{layout}")
    assert code == 9 and "immutable coordinate" in err["error"]["message"], err
    assert index_bytes({"a": 1.0, "b": "é"}) == '{\n  "a": 1,\n  "b": "é"\n}\n'.encode()


def test_garbage_artifacts_are_rejected_not_crashes(
    capsys: pytest.CaptureFixture[str], ex: dict[str, Any]
) -> None:
    e: Exchange = ex["ex"]
    bad = e.root / "cartridges" / PUBLISHER / "junk" / "1.0.0" / "cartridge.acx"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    flow = e.root / "cals" / PUBLISHER / "broken" / "1.0.0.cal.json"
    flow.parent.mkdir(parents=True)
    flow.write_text('{"id": "broken", "id": "twice"}')
    code, out = acx_json(capsys, "exchange", "verify", str(e.root))
    assert code == 1
    paths = {r["path"] for r in out["rejected"]}
    assert bad.relative_to(e.root).as_posix() in paths and flow.relative_to(e.root).as_posix() in paths
    (e.root / "status.json").write_bytes(b"\x00not json")
    code, out = acx_json(capsys, "exchange", "index", str(e.root))
    assert code == 3 and out["error"]["kind"] == "invalid_input"
    assert acx_json(capsys, "exchange", "verify", str(e.root / "nowhere"))[0] == 4
    code, out = acx_json(capsys, "exchange", "mirror", str(e.root), "127.0.0.1:5000/x:tag")
    assert code == 2
    for dest in ("oci-layout:", "oci-layout:/tmp/x:tag", "oci-layout:/tmp/x@sha256:00", "127.0.0.1:5000"):
        assert acx_json(capsys, "exchange", "mirror", str(e.root), dest)[0] == 2, dest


def test_a_file_changed_between_verification_and_push_is_not_pushed(ex: dict[str, Any]) -> None:
    from acxoci.errors import VerificationFailed
    from acxoci.exchange.mirror import mirror_release
    from acxoci.oci.target import RemoteOptions
    from tests.harness.exchanges import build_version

    e: Exchange = ex["ex"]
    derived = derive(e.root, now=NOW)
    release = next(r for r in derived.releases if r.kind == "agent" and r.version == "1.1.0")
    (ex["tmp"] / "again").mkdir()
    shutil.copyfile(
        build_version(ex["tmp"] / "again", ex["key"], "1.1.0", description="Swapped in."), release.path
    )
    layout = ex["tmp"] / "race"
    with pytest.raises(VerificationFailed, match="changed while mirroring"):
        mirror_release(release, derived, f"oci-layout:{layout}", RemoteOptions(), NOW)
    assert not layout.exists()  # nothing was even created
