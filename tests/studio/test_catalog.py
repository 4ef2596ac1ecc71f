"""`acx exchange site` without a browser: every artifact of an Exchange folder and of its mirror
is listed with the verdict the command line gives for it (exchange verify + cartridge/workflow/
graph verify for the folder, `acx install` for the layout), nothing unverified is shown as
verified or shows its contents, every hostile string is escaped, the output is deterministic,
and a folder acx did not write is never replaced."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from acxoci.catalog.judges import FolderGate
from acxoci.catalog.model import Candidate, Verdict
from acxoci.catalog.site import build_site
from acxoci.catalog.sources import folder_candidates
from tests.harness.catalogs import HOSTILE, HOSTILE_SKILL, TAMPER_MARK, CatalogExchange, make_catalog_exchange
from tests.harness.cli import acx_json
from tests.harness.installs import tree_hash

NOW = "2026-11-30T12:00:00Z"
VERIFY = {"agent": "cartridge", "workflow": "workflow", "agent-graph": "graph"}


@pytest.fixture(scope="module")
def ex(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> CatalogExchange:
    return make_catalog_exchange(tmp_path_factory.mktemp("catalog"), vectors_dir)


def site(capsys: pytest.CaptureFixture[str], source: str, out: Path, *opts: str) -> dict[str, Any]:
    code, report = acx_json(capsys, "exchange", "site", source, "--out", str(out), "--now", NOW, *opts)
    assert code == 0, report
    doc: dict[str, Any] = json.loads((out / "catalog.json").read_text())
    assert [a["location"] for a in doc["artifacts"]] == [e["location"] for e in report["entries"]]
    return doc


class Tags(HTMLParser):
    """The elements a browser would build from a page, and any event-handler attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []
        self.handlers: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, dict(attrs).get("src") or ""))
        self.handlers += [(tag, k) for k, _ in attrs if k.lower().startswith("on")]


def coordinate(location: str) -> tuple[str, str, str, str]:
    """(kind, publisher, id, version) of a folder path or of a mirror reference."""
    if location.startswith("oci-layout:"):
        repo, version = location.rsplit(":", 1)
        kind, publisher, aid = repo.split("/")[-3:]
        return kind, publisher, aid, version
    folder, publisher, aid, rest = location.split("/", 3)
    kind = {"cartridges": "agent", "cals": "workflow", "graphs": "agent-graph"}[folder]
    version = rest.split("/")[0].removesuffix(".cal.json").removesuffix(".agent-graph.json")
    return kind, publisher, aid, version


def tamper_content(layout: Path) -> str:
    """Flip one byte of the content layer of the layout's only manifest; returns its digest."""
    index = json.loads((layout / "index.json").read_text())
    mdigest = next(m["digest"] for m in index["manifests"] if "annotations" in m)
    manifest = json.loads((layout / "blobs" / "sha256" / mdigest.split(":")[1]).read_text())
    digest = manifest["layers"][0]["digest"]
    blob = layout / "blobs" / "sha256" / digest.split(":")[1]
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x20
    blob.write_bytes(bytes(data))
    return str(digest)


def test_folder_catalog_shows_every_artifact_with_the_cli_verdict(
    ex: CatalogExchange, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = site(capsys, str(ex.root), tmp_path / "site", "--trust-registry", str(ex.trust))
    files = {c.location for c in folder_candidates(ex.root)}
    assert {a["location"] for a in doc["artifacts"]} == files and len(files) == 12
    code, gate = acx_json(capsys, "exchange", "verify", str(ex.root))
    rejected = {r["path"] for r in gate["rejected"]}
    assert code == 1 and rejected == {ex.tampered.relative_to(ex.root).as_posix()}
    for a in doc["artifacts"]:
        path = ex.root / a["location"]
        _, cli = acx_json(capsys, VERIFY[a["kind"]], "verify", str(path), "--trust-registry", str(ex.trust))
        if a["location"] in rejected:
            assert not a["verified"] and a["verdict"] == "rejected" and cli["trust"] == "tampered"
            continue
        if a["lifecycle"] == "withdrawn":  # accepted by the gate, but never offered as verified
            assert not a["verified"] and a["verdict"] == "withdrawn" and a["trust"] == cli["trust"]
            continue
        assert a["verified"] and a["trust"] == cli["trust"] == a["verdict"], a["location"]
        assert a["digest"] == (cli.get("romDigest") or cli["digest"]), a["location"]
        assert a["publisherId"] == cli["publisherId"]
    statuses = {a["location"].split("/")[3]: a["lifecycle"]
                for a in doc["artifacts"] if "pr-reviewer" in a["location"]}
    assert statuses == {"0.9.0": "superseded", "1.0.0": "withdrawn", "1.1.0": "active"}


def test_mirror_catalog_shows_the_install_verdict(
    ex: CatalogExchange, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tmp_path / "clean"
    shutil.copytree(ex.root, clean)
    (clean / ex.tampered.relative_to(ex.root)).unlink()  # mirror mirrors nothing from a folder that fails
    mirror = tmp_path / "mirror"
    code, out = acx_json(capsys, "exchange", "mirror", str(clean), f"oci-layout:{mirror}")
    assert code == 0, out
    pushed = {i["reference"] for i in out["items"]}
    # a registry that changed bytes after the mirror: the content layer of the hostile workflow
    ref = next(r for r in pushed if "hostile-team" in r)
    layer = tamper_content(Path(ref.removeprefix("oci-layout:").rsplit(":", 1)[0]))
    doc = site(capsys, f"oci-layout:{mirror}", tmp_path / "site", "--policy", str(ex.policy))
    assert {a["location"] for a in doc["artifacts"]} == pushed and len(pushed) == 11
    bad = next(a for a in doc["artifacts"] if a["location"] == ref)
    assert not bad["verified"] and bad["verdict"] == "refused" and "content-digest" in bad["summary"], layer
    for n, a in enumerate(doc["artifacts"]):
        code, cli = acx_json(capsys, "install", a["location"], "--policy", str(ex.policy),
                             "--store", str(tmp_path / f"store-{n}"))
        failed = [c["id"] for c in cli["checks"] if c["status"] in ("fail", "unavailable")]
        if "lifecycle" in failed:  # install refuses a withdrawn release before pulling it
            assert code == 8 and a["verdict"] == "withdrawn" and not a["verified"]
            assert a["lifecycle"] == "withdrawn"
            continue
        assert a["verified"] == (failed in ([], ["staffing"])), (a["location"], failed)
        assert a["digest"] == cli["digest"]
        if failed == ["staffing"]:  # a workflow: the host's roster decides, not the artifact
            assert a["kind"] == "workflow" and any(c["status"] == "note" for c in a["checks"])
        if a["verified"]:
            assert a["verdict"] == "verified" and a["install"].startswith(f"acx install {a['location']}")
        else:
            assert a["verdict"] == "refused" and a["summary"].startswith(failed[0])
    # the same catalog from a trust registry alone: install's verdict under `policy init`'s policy
    doc2 = site(capsys, f"oci-layout:{mirror}", tmp_path / "site2", "--trust-registry", str(ex.trust))
    assert [(a["location"], a["verdict"]) for a in doc2["artifacts"]] == \
        [(a["location"], a["verdict"]) for a in doc["artifacts"]]
    # the folder judged under the same policy says what the mirror says, release by release (but
    # for the release whose bytes the mirror changed), and its pages name the mirror's coordinates
    folder = site(capsys, str(clean), tmp_path / "site3", "--policy", str(ex.policy),
                  "--mirror", f"oci-layout:{mirror}")
    from_folder = {coordinate(a["location"]): a for a in folder["artifacts"]}
    for a in doc["artifacts"]:
        f = from_folder[coordinate(a["location"])]
        if a["location"] == ref:
            assert f["verified"]
            continue
        assert (f["verdict"], f["verified"]) == (a["verdict"], a["verified"]), a["location"]
        if f["verified"]:
            assert f["install"] == a["install"]
    # a folder's cartridge, judged as `acx load FILE --print-only` judges it
    for f in folder["artifacts"]:
        if f["kind"] == "agent" and f["verdict"] in ("verified", "refused"):
            code, out = acx_json(capsys, "load", str(clean / f["location"]), "--print-only",
                                 "--skills-dir", str(tmp_path / "skills"), "--policy", str(ex.policy))
            assert (code == 0) == f["verified"], (f["location"], out)
            assert f["judgedAs"].startswith("acx load ")


def test_nothing_unverified_is_shown_and_every_string_is_escaped(
    ex: CatalogExchange, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    doc = site(capsys, str(ex.root), out, "--trust-registry", str(ex.trust))
    pages = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*.html")}
    everything = "".join(pages.values())
    assert TAMPER_MARK not in everything and TAMPER_MARK not in (out / "catalog.json").read_text()
    tampered = next(a for a in doc["artifacts"] if not a["verified"])
    assert "Not verified." in pages[tampered["page"]] and ">verified<" not in pages[tampered["page"]]
    for name, html in pages.items():
        # the only script is the catalog's own, on the index; no artifact string became markup
        tags = Tags()
        tags.feed(html)
        ours = [("script", "catalog.js")] if name == "index.html" else []
        assert [t for t in tags.seen if t[0] in ("script", "img", "iframe", "b")] == ours, name
        assert tags.handlers == [], name
    hostile = next(a for a in doc["artifacts"] if "hostile-team" in a["location"])
    page = pages[hostile["page"]]
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "\\u202e" in page and "\u202e" not in page  # the bidi override is shown, not obeyed
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in page  # the workflow's picture, escaped inside
    agent = pages[next(a for a in doc["artifacts"] if "hostile-agent" in a["location"])["page"]]
    assert "&lt;script&gt;window.__pwned=5&lt;/script&gt;" in agent
    assert HOSTILE not in everything and HOSTILE_SKILL not in everything


def test_output_is_deterministic_and_only_ever_replaces_a_catalog(
    ex: CatalogExchange, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    site(capsys, str(ex.root), a, "--trust-registry", str(ex.trust))
    site(capsys, str(ex.root), b, "--trust-registry", str(ex.trust))
    assert tree_hash(a) == tree_hash(b)
    site(capsys, str(ex.root), a, "--trust-registry", str(ex.trust))  # an earlier catalog is replaced whole
    assert tree_hash(a) == tree_hash(b)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, out = acx_json(capsys, "exchange", "site", str(ex.root), "--out", str(mine), "--trust-registry",
                         str(ex.trust))
    assert code == 3 and out["error"]["kind"] == "invalid_input"
    assert (mine / "notes.txt").read_text() == "keep me"
    link = tmp_path / "link"
    link.symlink_to(a, target_is_directory=True)
    code, out = acx_json(capsys, "exchange", "site", str(ex.root), "--out", str(link), "--trust-registry",
                         str(ex.trust))
    assert code == 3 and link.is_symlink()
    code, out = acx_json(capsys, "exchange", "site", str(ex.root), "--out", str(tmp_path / "x"))
    assert code == 2  # exactly one of --trust-registry and --policy
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no leftovers


def test_the_judge_is_injected_and_its_verdict_is_what_the_page_says(
    ex: CatalogExchange, tmp_path: Path
) -> None:
    """The catalog shows whatever the judge decides: a judge that refuses everything leaves no
    verified entry and no card (the switch to another acceptance decision is the judge passed)."""
    gate = FolderGate(ex.root, str(ex.root), __import__("datetime").datetime.now(), None, "--policy p")

    def refuse_all(c: Candidate) -> Verdict:
        v = gate(c)
        return Verdict(False, "refused", v.trust, "refused by the test judge", "test", v.kind)

    built = build_site(folder_candidates(ex.root), refuse_all, out=tmp_path / "s", title="t", built=NOW,
                       basis="test", findings=())
    assert built.verified == 0 and all(e.card is None for e in built.entries)
    html = "".join(p.read_text() for p in (tmp_path / "s").rglob("*.html"))
    assert ">verified<" not in html and "Reviews pull requests" not in html
