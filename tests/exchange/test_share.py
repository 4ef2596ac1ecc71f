"""`acx share` places a verified cartridge, workflow and Agent Graph at their immutable Exchange
coordinates with the reference's card and PR body; `exchange index`, `exchange verify` and
`exchange mirror` accept the result, and the sample workflow and graph (both `review-team`
0.1.0) land at different OCI repositories. Hostile inputs are refused and nothing is written."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.cartridge.build import build_cartridge
from acxoci.exchange.coordinates import folder_path, repository_path
from acxoci.oci.layout import LayoutStore
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO
from tests.harness.installs import PUBLISHER, registry_entry, write_registry

CREATED = "2026-05-04T09:00:00.000Z"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def made(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    key = generate_ed25519()
    key_file = tmp_path / "k.pem"
    key_file.write_bytes(key.pkcs8_pem())
    agent = tmp_path / "pr-reviewer.acx"
    build_cartridge(
        REPO / "examples" / "agent-package", agent, publisher=PUBLISHER, key=key, created_at=CREATED
    )
    flow = tmp_path / "team.cal.json"
    graph = tmp_path / "team.agent-graph.json"
    for kind, src, out in (
        ("workflow", "workflow/review-team.cal.json", flow),
        ("graph", "graph/review-team.agent-graph.json", graph),
    ):
        code, res = acx_json(
            capsys,
            kind,
            "sign",
            str(REPO / "examples" / src),
            "--publisher",
            PUBLISHER,
            "--key",
            str(key_file),
            "--out" if kind == "graph" else "-o",
            str(out),
        )
        assert code == 0, res
    ex = tmp_path / "exchange"
    ex.mkdir()
    write_registry(ex / "trust-registry.json", [registry_entry(key, PUBLISHER)])
    return {
        "key": key,
        "key_file": key_file,
        "agent": agent,
        "flow": flow,
        "graph": graph,
        "ex": ex,
        "tmp": tmp_path,
    }


def test_share_index_verify_and_mirror_all_three_kinds(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ex: Path = made["ex"]
    code, plan = acx_json(
        capsys, "share", "agent", str(made["agent"]), "--registry", str(ex), "--publisher", PUBLISHER
    )
    assert code == 0 and plan["changed"] and plan["type"] == "agent", plan
    rel = folder_path("agent", PUBLISHER, "pr-reviewer", "1.0.0")
    assert (ex / rel).read_bytes() == made["agent"].read_bytes()
    card = (ex / rel).with_name("README.md").read_text()
    assert "| Class | Engineer |" in card and "| Registry trust at submission | `trusted` |" in card
    assert "`review`" in card and plan["entry"]["romHash"] in card
    assert "## Share ACX agent: Pull Request Reviewer" in plan["pullRequestBody"]
    for kind, f in (("workflow", made["flow"]), ("graph", made["graph"])):
        code, plan = acx_json(capsys, "share", kind, str(f), "--registry", str(ex))
        assert code == 0 and plan["changed"], plan
        assert "- [x] JCS digest and DSSE/in-toto signature verified" in plan["pullRequestBody"]
    assert (ex / "cals" / PUBLISHER / "review-team" / "0.1.0.cal.json").is_file()
    assert (ex / "graphs" / PUBLISHER / "review-team" / "0.1.0.agent-graph.json").is_file()
    # sharing again is a no-op; the folder is then an Exchange the gate accepts
    before = _tree(ex)
    code, again = acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex))
    assert code == 0 and not again["changed"] and _tree(ex) == before
    assert acx_json(capsys, "exchange", "index", str(ex))[0] == 0
    code, verdict = acx_json(capsys, "exchange", "verify", str(ex))
    assert code == 0 and verdict["ok"], verdict
    # mirror publishes all three; the workflow and the graph share id and version, not a repository
    layout = made["tmp"] / "mirror"
    code, out = acx_json(capsys, "exchange", "mirror", str(ex), f"oci-layout:{layout}")
    assert code == 0 and sorted(i["kind"] for i in out["items"]) == ["agent", "agent-graph", "workflow"]
    refs = {i["kind"]: i["reference"] for i in out["items"]}
    assert len(set(refs.values())) == 3
    for kind, rid in (("workflow", "review-team"), ("agent-graph", "review-team"), ("agent", "pr-reviewer")):
        repo = layout / repository_path(kind, PUBLISHER, rid)
        assert refs[kind].endswith(f"{kind}/{PUBLISHER}/{rid}:" + ("1.0.0" if kind == "agent" else "0.1.0"))
        assert LayoutStore(repo, create=False).resolve(refs[kind].rsplit(":", 1)[1]).digest
    code, again = acx_json(capsys, "exchange", "mirror", str(ex), f"oci-layout:{layout}")
    assert code == 0 and again["blobsSent"] == 0 and again["manifestsSent"] == 0


def test_a_published_coordinate_is_never_changed(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ex: Path = made["ex"]
    assert acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex))[0] == 0
    other = made["tmp"] / "other" / "pr-reviewer.acx"
    other.parent.mkdir()
    build_cartridge(
        REPO / "examples" / "agent-package",
        other,
        publisher=PUBLISHER,
        key=made["key"],
        created_at="2026-05-05T09:00:00.000Z",
    )
    before = _tree(ex)
    for force in ((), ("--force",)):
        code, err = acx_json(capsys, "share", "agent", str(other), "--registry", str(ex), *force)
        assert code == 9 and "immutable" in err["error"]["message"], err
    assert _tree(ex) == before
    # a hand-edited card is only rewritten with --force
    card = ex / folder_path("agent", PUBLISHER, "pr-reviewer", "1.0.0").replace("cartridge.acx", "README.md")
    card.write_text("edited")
    assert acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex))[0] == 9
    assert acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex), "--force")[0] == 0
    assert card.read_text().startswith("# Pull Request Reviewer")


def test_what_the_exchange_would_reject_is_not_shared(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ex: Path = made["ex"]
    tmp: Path = made["tmp"]
    tampered = tmp / "t" / "x.acx"
    tampered.parent.mkdir()
    shutil.copyfile(made["agent"], tampered)
    with sqlite3.connect(tampered) as db:
        db.execute("UPDATE sqlar SET data = CAST('evil' AS BLOB), sz = 4 WHERE name LIKE 'rom/knowledge/%'")
    field = tmp / "f" / "x.acx"
    field.parent.mkdir()
    build_cartridge(
        REPO / "examples" / "agent-package",
        field,
        publisher=PUBLISHER,
        key=made["key"],
        created_at=CREATED,
        include_field_learned=True,
    )
    unsigned = tmp / "u.cal.json"
    shutil.copyfile(REPO / "examples" / "workflow" / "review-team.cal.json", unsigned)
    cases = [
        (("agent", str(tampered)), 1, "reject"),
        (("agent", str(field)), 1, "SAVE zone"),
        (("workflow", str(unsigned)), 1, "not signed"),
        (("agent", str(made["agent"]), "--publisher", "io.github.someone-else"), 1, "signed publisher"),
        (("agent", str(made["agent"]), "--slug", "other"), 1, "ROM-bound"),
        (("workflow", str(made["agent"])), 2, ".cal.json"),
        (("agent", str(tmp / "missing.acx")), 4, "not found"),
        (("blob", str(made["agent"])), 2, "unknown artifact kind"),
    ]
    for args, want, needle in cases:
        code, err = acx_json(capsys, "share", *args, "--registry", str(ex))
        assert code == want and needle in err["error"]["message"], (args, err)
    code, plan = acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex), "--dry-run")
    assert code == 0 and plan["dryRun"] and plan["changed"]
    assert sorted(p.name for p in ex.iterdir()) == ["trust-registry.json"]  # nothing written at all
    # a symlink in the coordinate's path is never written through
    outside = tmp / "outside"
    outside.mkdir()
    (ex / "cartridges").symlink_to(outside)
    code, err = acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex))
    assert code == 3 and "symlink" in err["error"]["message"]
    assert list(outside.iterdir()) == []
    # without --registry, ./registry must be an Exchange checkout
    os.chdir(tmp)
    assert acx_json(capsys, "share", "agent", str(made["agent"]))[0] == 2
    human = run_acx(capsys, "share", "workflow", str(made["flow"]), "--registry", str(ex), "--dry-run")
    assert human.returncode == 0 and "SHARE PLAN workflow" in human.stdout


def test_a_share_whose_card_cannot_be_placed_places_nothing(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every destination is checked before anything is placed: a symlink (even dangling) or a
    folder standing where the agent card goes, or a card with other text without --force, leaves
    the coordinate as it was (no cartridge linked in without its card, nothing staged left)."""
    ex: Path = made["ex"]
    tmp: Path = made["tmp"]
    folder = (ex / folder_path("agent", PUBLISHER, "pr-reviewer", "1.0.0")).parent
    folder.mkdir(parents=True)
    outside = tmp / "outside"
    outside.mkdir()
    traps: list[tuple[str, int]] = [("dangling", 3), ("outside", 3), ("folder", 3), ("edited", 9)]
    for trap, want in traps:
        card = folder / "README.md"
        if trap == "dangling":
            card.symlink_to(outside / "README.md")
        elif trap == "outside":
            (outside / "README.md").write_text("theirs")
            card.symlink_to(outside / "README.md")
        elif trap == "folder":
            card.mkdir()
        else:
            card.write_text("edited by hand")
        before = _tree(ex), sorted(p.name for p in folder.iterdir())
        for force in ((), ("--force",)):
            if trap == "edited" and force:
                continue
            code, err = acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex), *force)
            assert code == want, (trap, force, err)
            assert (_tree(ex), sorted(p.name for p in folder.iterdir())) == before, (trap, force)
            assert not (folder / "cartridge.acx").exists()
        assert sorted(p.name for p in outside.iterdir()) == (["README.md"] if trap == "outside" else [])
        if trap == "outside":
            assert (outside / "README.md").read_text() == "theirs"
        if card.is_dir() and not card.is_symlink():
            card.rmdir()
        else:
            card.unlink()
        (outside / "README.md").unlink(missing_ok=True)
    # with the place clear, the cartridge and its card land together
    code, plan = acx_json(capsys, "share", "agent", str(made["agent"]), "--registry", str(ex))
    assert code == 0 and plan["changed"], plan
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "cartridge.acx"]


def test_the_reference_registry_build_accepts_a_shared_folder(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Opt-in (set ACX_REF_NODE and ACX_REF_CLI): the reference's tools/build-registry-index.mjs
    indexes what acx shared, with the same coordinates."""
    node, cli = os.environ.get("ACX_REF_NODE"), os.environ.get("ACX_REF_CLI")
    if not node or not cli:
        pytest.skip("set ACX_REF_NODE and ACX_REF_CLI to cross-check with the reference")
    ref = Path(cli).resolve().parents[1]
    checkout = made["tmp"] / "ref"
    shutil.copytree(ref, checkout, ignore=shutil.ignore_patterns("node_modules", ".git"))
    reg = checkout / "registry"
    for sub in ("cartridges", "cals", "graphs"):
        shutil.rmtree(reg / sub, ignore_errors=True)
    for kind, f in (("agent", made["agent"]), ("workflow", made["flow"]), ("graph", made["graph"])):
        assert acx_json(capsys, "share", kind, str(f), "--registry", str(reg))[0] == 0
    done = subprocess.run(
        [node, "--experimental-sqlite", "--no-warnings", "tools/build-registry-index.mjs"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"agent       {PUBLISHER}/pr-reviewer@1.0.0" in done.stdout
    assert f"agent-graph {PUBLISHER}/review-team@0.1.0 dependencies=resolved" in done.stdout


def test_mirror_says_which_release_it_is_on(made: dict[str, Any],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`exchange mirror` on a terminal names each release as it starts (n/total, kind, coordinate)."""
    from datetime import UTC, datetime

    from acxoci.exchange.mirror import mirror

    ex: Path = made["ex"]
    for kind, f in (("agent", made["agent"]), ("workflow", made["flow"]), ("graph", made["graph"])):
        code, out = acx_json(capsys, "share", kind, str(f), "--registry", str(ex), "--publisher", PUBLISHER)
        assert code == 0, out
    seen: list[str] = []
    mirror(ex, f"oci-layout:{made['tmp'] / 'm'}", now=datetime.now(UTC), note=seen.append)
    assert [s.split(" ", 1)[0] for s in seen] == ["1/3", "2/3", "3/3"], seen
    assert any(f"{PUBLISHER}/pr-reviewer:1.0.0" in s for s in seen), seen
