"""The two web pages in a real browser (Debian's chromium, through chromedriver): the Studio served
by `acx builder` (create, see a lint error come and go, import a signed parent, remix, export; a
workflow and an agent graph; a hostile document executes nothing) and the catalog built by
`acx exchange site` from an Exchange folder and from its mirror (every artifact with the CLI's
verdict, search and filters without a server, hostile names inert), by keyboard and on a narrow
screen. One browser and one builder for the whole module; screenshots go to build/screenshots
(`make screenshots` writes them to docs/img)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.catalogs import HOSTILE, CatalogExchange, hostile_workflow_doc, make_catalog_exchange
from tests.harness.cli import acx_json
from tests.harness.web import Builder, chromium, console, screenshot, start_builder, wait_for

NOW = "2026-11-30T12:00:00Z"
VERIFY = {"agent": "cartridge", "workflow": "workflow", "agent-graph": "graph"}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser")


@pytest.fixture(scope="module")
def driver(work: Path) -> Iterator[Any]:
    downloads = work / "downloads"
    downloads.mkdir()
    with chromium(downloads) as d:
        d.downloads = downloads
        yield d


@pytest.fixture(scope="module")
def builder(work: Path) -> Iterator[Builder]:
    home = work / "builder"
    home.mkdir()
    b = start_builder(home)
    yield b
    assert b.stop() == 0


@pytest.fixture(scope="module")
def ex(work: Path, vectors_dir: Path) -> CatalogExchange:
    return make_catalog_exchange(work / "exchange", vectors_dir)


def no_console_errors(driver: Any) -> None:
    """Nothing failed, and nothing was blocked by the CSP (a blocked inline script is an error)."""
    bad = [e for e in console(driver) if e["level"] in ("SEVERE", "WARNING")]
    assert bad == [], bad


def nothing_ran(driver: Any) -> None:
    """No string from a document became a script, an image or a frame."""
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert driver.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0
    scripts = driver.execute_script("return Array.from(document.scripts, s => s.getAttribute('src'))")
    assert all(isinstance(s, str) and not s.startswith(("data:", "blob:", "javascript:")) for s in scripts)
    assert driver.execute_script(
        "return Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes))"
        ".filter(a => a.name.startsWith('on')).length") == 0


def fits(driver: Any) -> None:
    """No sideways scrolling of the page itself (wide pictures scroll inside their own box)."""
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")


# ---- the Studio ---------------------------------------------------------------------------------


def by(driver: Any, css: str) -> Any:
    return driver.find_element("css selector", css)


def lint_settled(driver: Any, prefix: str) -> str:
    """Wait until the lint answer for the latest edit is shown and starts with `prefix`."""
    def done() -> str | None:
        text: str = by(driver, "#lint-headline").text
        busy = driver.execute_script("return document.body.dataset.lint") != "done"
        return text if not busy and text.startswith(prefix) else None
    return str(wait_for(done, what=f"a lint headline starting {prefix!r}"))


def type_into(driver: Any, css: str, text: str) -> None:
    from selenium.webdriver.common.keys import Keys

    field = by(driver, css)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text)


def exported(driver: Any, name: str) -> Path:
    path = driver.downloads / name
    path.unlink(missing_ok=True)
    by(driver, "#export").click()
    wait_for(lambda: path.is_file() and path.stat().st_size > 0, what=f"the download {name}")
    return Path(path)


def open_studio(driver: Any, builder: Builder) -> None:
    driver.get(builder.url)
    wait_for(lambda: driver.execute_script("return document.body.dataset.ready") == "true", what="the Studio")


def test_studio_workflow_create_lint_remix_export(driver: Any, builder: Builder, vectors_dir: Path,
                                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    open_studio(driver, builder)
    # keyboard only: the skip link, then "New workflow", pressed with Enter
    ActionChains(driver).send_keys(Keys.TAB, Keys.TAB).perform()
    assert driver.switch_to.active_element.get_attribute("id") == "new-workflow"
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    lint_settled(driver, "VALID ✓ — structure passes")
    assert driver.find_elements("css selector", "#graph svg .node") != []
    # a lint error appears: the start names no node; the issues are the CLI's, word for word
    type_into(driver, "[name='start']", "nowhere")
    lint_settled(driver, "INVALID")
    shown = [li.text for li in driver.find_elements("css selector", "#lint-issues li")]
    draft = tmp_path / "draft.cal.json"
    draft.write_text(by(driver, "#json").get_attribute("value"))
    code, cli = acx_json(capsys, "workflow", "lint", str(draft))
    assert code == 1 and shown == [i["text"] for i in cli["issues"]] and shown
    # … and goes away
    type_into(driver, "[name='start']", "begin")
    lint_settled(driver, "VALID ✓")
    assert driver.find_elements("css selector", "#lint-issues li") == []
    # import the shared signed workflow: the Studio remixes it into a draft
    parent = vectors_dir / "workflow" / "team.signed.cal.json"
    by(driver, "#import-parent").send_keys(str(parent))
    wait_for(lambda: "Draft: remix of io.github.example-acx/vector-team@1.2.3" in by(driver, "#message").text,
             what="the remix")
    by(driver, "#publish").click()
    lint_settled(driver, "VALID ✓ — structure and publish profile pass")
    type_into(driver, "[name='version']", "1.3.0")
    lint_settled(driver, "VALID ✓ — structure and publish profile pass")
    assert "remix of workflow io.github.example-acx/vector-team@1.2.3" in by(driver, "#lineage").text
    screenshot(driver, "studio-workflow")
    out = exported(driver, "vector-team.cal.json")
    code, result = acx_json(capsys, "workflow", "lint", str(out), "--publish")
    assert code == 0 and result["ok"], result
    doc = json.loads(out.read_text())
    _, digest = acx_json(capsys, "workflow", "digest", str(parent))
    assert "integrity" not in doc and doc["version"] == "1.3.0"
    assert doc["lineage"]["parents"] == [{"artifactType": "workflow", "publisherId": "io.github.example-acx",
                                          "id": "vector-team", "version": "1.2.3", "digest": digest["digest"],
                                          "relation": "remix"}]
    no_console_errors(driver)


def test_studio_agent_graph_create_remix_export(driver: Any, builder: Builder, vectors_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    open_studio(driver, builder)
    by(driver, "#new-graph").click()
    lint_settled(driver, "VALID ✓")
    type_into(driver, "[name='routes[0].from']", "nobody")
    lint_settled(driver, "INVALID")
    type_into(driver, "[name='routes[0].from']", "lead")
    lint_settled(driver, "VALID ✓")
    parent = vectors_dir / "graph" / "product-delivery.signed.agent-graph.json"
    by(driver, "#relation").send_keys("fork")
    by(driver, "#import-parent").send_keys(str(parent))
    wait_for(lambda: "Draft: fork of io.github.lboel/product-delivery@1.0.0" in by(driver, "#message").text,
             what="the remix")
    lint_settled(driver, "VALID ✓")
    assert len(driver.find_elements("css selector", "#graph svg .node-actor")) == 3
    screenshot(driver, "studio-graph")
    out = exported(driver, "product-delivery.agent-graph.json")
    code, result = acx_json(capsys, "graph", "lint", str(out), "--publish")
    assert code == 0 and result["ok"], result
    _, digest = acx_json(capsys, "graph", "digest", str(parent))
    (p,) = json.loads(out.read_text())["lineage"]["parents"]
    assert p["artifactType"] == "agent-graph" and p["digest"] == digest["digest"] and p["relation"] == "fork"
    no_console_errors(driver)


def test_studio_shows_a_hostile_document_as_text(driver: Any, builder: Builder, vectors_dir: Path,
                                                 tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.cal.json"
    hostile.write_text(json.dumps(hostile_workflow_doc(vectors_dir)))
    open_studio(driver, builder)
    by(driver, "#open-file").send_keys(str(hostile))
    lint_settled(driver, "VALID ✓")
    assert by(driver, "[name='name']").get_attribute("value") == HOSTILE
    labels = driver.execute_script(
        "return Array.from(document.querySelectorAll('#graph svg title'), t => t.textContent)")
    assert any("<script>window.__pwned=7</script>" in t for t in labels)
    nothing_ran(driver)
    no_console_errors(driver)


# ---- the catalog --------------------------------------------------------------------------------


def build(capsys: pytest.CaptureFixture[str], source: str, out: str, *opts: str) -> dict[str, Any]:
    """`acx exchange site`, run where the Exchange's folder is (relative paths, as an operator
    would type them: the pages, and so the screenshots, name no machine path)."""
    code, report = acx_json(capsys, "exchange", "site", source, "--out", out, "--now", NOW, *opts)
    assert code == 0, report
    doc: dict[str, Any] = json.loads(Path(out, "catalog.json").read_text())
    return doc


@pytest.fixture
def at_exchange(ex: CatalogExchange, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory is the folder that holds the Exchange (`registry/`, `trust.json`)."""
    monkeypatch.chdir(ex.root.parent)
    return ex.root.parent


def cards(driver: Any) -> dict[str, tuple[str, bool]]:
    """Each card's page link → (verdict, shown)."""
    out: dict[str, tuple[str, bool]] = {}
    for li in driver.find_elements("css selector", "#results > li"):
        href = li.find_element("css selector", "h3 a").get_attribute("href")
        out[href.rsplit("/items/", 1)[1]] = (li.get_attribute("data-verdict"), li.is_displayed())
    return out


def test_catalog_of_the_folder_shows_the_cli_verdicts_and_filters_offline(
    driver: Any, ex: CatalogExchange, at_exchange: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    out = at_exchange / "site-folder"
    doc = build(capsys, "registry", "site-folder", "--trust-registry", "trust.json",
                "--title", "Exchange catalog")
    ledger = json.loads((ex.root / "status.json").read_text())["entries"]
    withdrawn = {e["artifact"]["digest"] for e in ledger if e["status"] == "withdrawn"}
    expected: dict[str, str] = {}
    for a in doc["artifacts"]:
        code, cli = acx_json(capsys, VERIFY[a["kind"]], "verify", str(ex.root / a["location"]),
                             "--trust-registry", str(ex.trust), "--require", "portable")
        # the gate rejects what does not verify and takes a portable signer; what it accepts carries
        # the verifier's trust word, unless the folder's ledger withdrew it
        word = cli["trust"] if code == 0 else "rejected"
        if cli.get("romDigest", cli.get("digest")) in withdrawn:
            word = "withdrawn"
        expected[a["page"].removeprefix("items/")] = word
    driver.get((out / "index.html").as_uri())
    wait_for(lambda: driver.execute_script("return document.body.dataset.ready") == "true", what="the index")
    assert {k: v for k, (v, _) in cards(driver).items()} == expected
    nothing_ran(driver)
    screenshot(driver, "catalog-index")
    # search and filters, by keyboard, with no server: the skip link, then the search box
    ActionChains(driver).send_keys(Keys.TAB, Keys.TAB).perform()
    assert driver.switch_to.active_element.get_attribute("id") == "q"
    ActionChains(driver).send_keys("hostile").perform()
    wait_for(lambda: sum(s for _, s in cards(driver).values()) == 2, what="two hostile artifacts")
    assert by(driver, "#count").text == f"2 of {len(expected)} shown"
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys(Keys.DELETE).perform()
    by(driver, "#f-verdict").send_keys("rejected")
    wait_for(lambda: [k for k, (_, s) in cards(driver).items() if s] ==
             [k for k, v in expected.items() if v == "rejected"], what="the rejected filter")
    # the hostile workflow's page: its name is text, nothing runs
    page = next(a["page"] for a in doc["artifacts"] if "hostile-team" in a["location"])
    driver.get((out / page).as_uri())
    assert by(driver, "h1").text == HOSTILE
    nothing_ran(driver)
    page = next(a["page"] for a in doc["artifacts"] if "vector-team" in a["location"])
    driver.get((out / page).as_uri())
    assert driver.find_elements("css selector", ".graph-box svg .node-gateway")
    driver.execute_script("document.getElementById('about-title').scrollIntoView()")
    screenshot(driver, "catalog-workflow")
    no_console_errors(driver)


def test_catalog_of_the_mirror_shows_the_install_verdicts(
    driver: Any, ex: CatalogExchange, at_exchange: Path, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(ex.root, "clean")
    Path("clean", ex.tampered.relative_to(ex.root)).unlink()
    code, res = acx_json(capsys, "exchange", "mirror", "clean", "oci-layout:mirror")
    assert code == 0, res
    out = at_exchange / "site-mirror"
    doc = build(capsys, "oci-layout:mirror", "site-mirror", "--policy", "policy.yaml",
                "--title", "Mirror catalog")
    expected: dict[str, str] = {}
    for n, a in enumerate(doc["artifacts"]):
        code, cli = acx_json(capsys, "install", a["location"], "--policy", str(ex.policy),
                             "--store", str(work / f"store-{n}"))
        failed = {c["id"] for c in cli["checks"] if c["status"] in ("fail", "unavailable")} - {"staffing"}
        word = "withdrawn" if "lifecycle" in failed else "refused" if failed else "verified"
        expected[a["page"].removeprefix("items/")] = word
    assert sorted(expected.values()).count("verified") == 5
    driver.get((out / "index.html").as_uri())
    wait_for(lambda: driver.execute_script("return document.body.dataset.ready") == "true", what="the index")
    assert {k: v for k, (v, _) in cards(driver).items()} == expected
    nothing_ran(driver)
    page = next(a["page"] for a in doc["artifacts"] if "pr-reviewer:1.1.0" in a["location"])
    driver.get((out / page).as_uri())
    assert by(driver, "pre.command").text.startswith("acx install oci-layout:")
    no_console_errors(driver)


def test_both_pages_read_well_on_a_narrow_screen(
    driver: Any, builder: Builder, at_exchange: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = at_exchange / "site-narrow"
    doc = build(capsys, "registry", "site-narrow", "--trust-registry", "trust.json")
    driver.set_window_size(390, 844)
    try:
        open_studio(driver, builder)
        by(driver, "#new-workflow").click()
        lint_settled(driver, "VALID ✓")
        fits(driver)
        driver.get((out / "index.html").as_uri())
        fits(driver)
        screenshot(driver, "catalog-narrow")
        page = next(a["page"] for a in doc["artifacts"] if "product-delivery" in a["location"])
        driver.get((out / page).as_uri())
        fits(driver)
        no_console_errors(driver)
    finally:
        driver.set_window_size(1360, 1000)
