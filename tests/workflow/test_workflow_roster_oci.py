"""`workflow ready --roster`: staffing from an OCI target (an on-disk OCI layout: no server needed)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from acxoci.cli import main as cli_main
from acxoci.cli.output import OPTS
from acxoci.oci.descriptor import EMPTY_DATA, EMPTY_JSON
from acxoci.oci.digest import file_descriptor
from acxoci.oci.layout import LayoutStore
from acxoci.oci.shapes import CARTRIDGE_LAYER_TYPE, cartridge_manifest
from acxoci.oci.target import Target, open_target, push_bytes
from acxoci.workflow.model import Workflow
from acxoci.workflow.ready import assess
from acxoci.workflow.roster_oci import load_registry_roster
from acxoci.workflow.sign import render, sign_workflow
from tests.harness.servers import Registry
from tests.harness.workflows import NOW, SAMPLE_ROM, new_key, pinned_workflow


def _push(store: Target, cartridge: Path, tag: str) -> str:
    """Push one cartridge as an ACX cartridge artifact and tag it; returns the layer digest."""
    layer = file_descriptor(cartridge, CARTRIDGE_LAYER_TYPE)
    with cartridge.open("rb") as fh:
        store.push(layer, fh)
    push_bytes(store, EMPTY_DATA, EMPTY_JSON)
    built = cartridge_manifest(
        file_digest=layer.digest,
        file_size=layer.size,
        title=cartridge.name,
        rom_digest=SAMPLE_ROM,
        created="2026-11-30T00:00:00Z",
    )
    store.push(built.descriptor, io.BytesIO(built.data))
    store.tag(built.descriptor, tag)
    return layer.digest


def _ready(refs: list[str], tmp_path: Path) -> tuple[bool, list[str], list[str]]:
    doc = sign_workflow(pinned_workflow(), publisher_id="io.github.tester", key=new_key(), now=NOW)
    roster = load_registry_roster(refs, tmp_path / "pulled", registry=None, now=NOW)
    report = assess(Workflow.from_json(doc), roster)
    return report.ready, list(report.reasons), list(report.rejected_cartridges)


def test_registry_roster_staffs_a_verified_cartridge(vectors_dir: Path, tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "layout")
    _push(store, vectors_dir / "sample" / "sample.acx", "v1")
    ready, reasons, rejected = _ready([f"oci-layout:{tmp_path / 'layout'}:v1"], tmp_path)
    assert ready, reasons
    assert rejected == []


def test_every_tag_of_a_repository_and_a_tampered_push(vectors_dir: Path, tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "layout")
    _push(store, vectors_dir / "sample" / "tampered" / "rom-data.acx", "bad")
    ready, reasons, rejected = _ready([f"oci-layout:{tmp_path / 'layout'}"], tmp_path)
    assert not ready
    assert len(rejected) == 1 and "tampered" in rejected[0]
    _push(store, vectors_dir / "sample" / "sample.acx", "good")
    ready, reasons, rejected = _ready([f"oci-layout:{tmp_path / 'layout'}"], tmp_path)
    assert ready and len(rejected) == 1, reasons


def test_blob_tampered_after_push_is_refused(vectors_dir: Path, tmp_path: Path) -> None:
    store = LayoutStore(tmp_path / "layout")
    digest = _push(store, vectors_dir / "sample" / "sample.acx", "v1")
    blob = tmp_path / "layout" / "blobs" / "sha256" / digest.removeprefix("sha256:")
    data = bytearray(blob.read_bytes())
    data[-100] ^= 0xFF
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    ready, reasons, rejected = _ready([f"oci-layout:{tmp_path / 'layout'}:v1"], tmp_path)
    assert not ready
    assert "participant 'designer' unresolved" in reasons[0]
    assert len(rejected) == 1 and "not usable: tampered" in rejected[0]
    assert not list((tmp_path / "pulled").glob("*.acx"))  # nothing unverified landed on disk


def test_cli_ready_with_roster(vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    OPTS.json = False
    store = LayoutStore(tmp_path / "layout")
    _push(store, vectors_dir / "sample" / "sample.acx", "v1")
    wf = tmp_path / "pinned.signed.cal.json"
    wf.write_text(
        render(sign_workflow(pinned_workflow(), publisher_id="io.github.tester", key=new_key(), now=NOW)),
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as ex:
        cli_main.main(["workflow", "ready", str(wf), "--roster", f"oci-layout:{tmp_path / 'layout'}:v1"])
    out = capsys.readouterr().out
    assert ex.value.code == 0, out
    assert out.startswith("READY ✓")


@pytest.mark.interop
def test_real_registry_roster_refuses_a_blob_tampered_after_push(
    vectors_dir: Path, tmp_path: Path, distribution_registry: Registry
) -> None:
    repo = f"{distribution_registry.host}/acx/roster"
    target, _ = open_target(f"{repo}:v1")
    digest = _push(target, vectors_dir / "sample" / "sample.acx", "v1")
    _push(target, vectors_dir / "sample" / "tampered" / "bound-meta.acx", "v2")
    ready, reasons, rejected = _ready([repo], tmp_path / "a")  # every tag of the repository
    assert ready, reasons
    assert len(rejected) == 1 and "tampered" in rejected[0] and ":v2" in rejected[0]
    hexpart = digest.removeprefix("sha256:")
    blob = (
        distribution_registry.root / "data/docker/registry/v2/blobs/sha256" / hexpart[:2] / hexpart / "data"
    )
    data = bytearray(blob.read_bytes())
    data[-100] ^= 0xFF
    blob.write_bytes(bytes(data))
    ready, reasons, rejected = _ready([f"{repo}:v1"], tmp_path / "b")
    assert not ready
    assert len(rejected) == 1 and "not usable: tampered" in rejected[0], rejected
