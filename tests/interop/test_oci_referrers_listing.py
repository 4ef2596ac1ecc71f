"""Referrers in the real world: one listing for discover and verify (a layout carrying a
`sha256-<hex>` fallback tag, as skopeo copies make), fallback entries gone after a registry's
garbage collection reported as strays (`not_found`) and never drawn, a warning when the
Referrers API is absent, `--fallback-tag` writing the tag index even where the API is served,
and oras 1.3 listing the same referrers as acx where a layout's fallback tag lies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import requests

from acxoci.oci.descriptor import OCI_INDEX, manifest_bytes
from acxoci.oci.digest import file_descriptor
from acxoci.oci.layout import LayoutStore
from acxoci.oci.reference import fallback_tag
from tests.harness.cli import acx_json
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

DSSE = "application/vnd.dsse.envelope.v1+json"


def _ok(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, data = acx_json(capsys, *args)
    assert code == 0, f"acx {' '.join(args)} -> {code}: {data}"
    return data


@pytest.fixture
def work(tmp_path: Path, vectors_dir: Path) -> Path:
    shutil.copy(vectors_dir / "sample" / "sample.acx", tmp_path / "cart.acx")
    (tmp_path / "env.json").write_text(
        json.dumps({"payloadType": "application/vnd.in-toto+json", "payload": "e30=", "signatures": []})
    )
    return tmp_path


def test_gc_removed_referrer_is_reported_missing_with_api_warning(
    distribution_registry: Registry, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reg = distribution_registry
    ref = f"{reg.host}/acx/gc:v1"
    digest = _ok(capsys, "push", str(work / "cart.acx"), ref)["digest"]
    att = _ok(
        capsys, "attach", f"{reg.host}/acx/gc@{digest}", str(work / "env.json"), "--artifact-type", DSSE
    )
    # a garbage collection (or a tool) removes the referrer manifest but not the fallback index entry
    r = requests.delete(f"{reg.url}/v2/acx/gc/manifests/{att['digest']}", timeout=10)
    assert r.status_code == 202
    tree = _ok(capsys, "discover", ref)
    assert tree["referrers"] == []
    assert [(s["digest"], s["kind"], s["source"]) for s in tree["strays"]] == [
        (att["digest"], "not_found", "fallback-tag")]
    assert any("Referrers API" in w for w in tree["warnings"])


def test_layout_fallback_tag_one_listing_for_discover_and_verify(
    tmp_path: Path, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A layout whose referrer is reachable only through a `sha256-<hex>` tag (index.json lists
    it under that tag, the referrer manifest itself has no entry): discover lists it, and the
    listing verify reads (Target.referrers) is the same."""
    layout = tmp_path / "l"
    digest = _ok(capsys, "push", str(work / "cart.acx"), f"oci-layout:{layout}:v1")["digest"]
    att = _ok(
        capsys, "attach", f"oci-layout:{layout}@{digest}", str(work / "env.json"), "--artifact-type", DSSE
    )
    store = LayoutStore(layout)
    entry = next(e for e in store.entries() if e.digest == att["digest"])
    # rewrite as skopeo would: drop the referrer's own index.json entry, add the fallback tag index
    index_data = manifest_bytes({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [entry.to_json()]})
    idx_file = tmp_path / "idx.json"
    idx_file.write_bytes(index_data)
    idx = file_descriptor(idx_file, OCI_INDEX)
    with idx_file.open("rb") as fh:
        store.push(idx, fh)
    store.tag(idx, fallback_tag(digest))
    doc = json.loads((layout / "index.json").read_text())
    doc["manifests"] = [m for m in doc["manifests"] if m["digest"] != att["digest"]]
    (layout / "index.json").write_text(json.dumps(doc))
    listed = [d.digest for d in LayoutStore(layout).referrers(store.resolve(digest))]
    assert listed == [att["digest"]]
    tree = _ok(capsys, "discover", f"oci-layout:{layout}:v1")
    assert [n["digest"] for n in tree["referrers"]] == listed and tree["strays"] == []
    # and when the referrer manifest is gone too, it is reported as a stray rather than drawn
    (layout / "blobs" / "sha256" / att["digest"][7:]).unlink()
    tree = _ok(capsys, "discover", f"oci-layout:{layout}:v1")
    assert tree["referrers"] == []
    assert [(s["digest"], s["kind"]) for s in tree["strays"]] == [(att["digest"], "not_found")]


def test_fallback_tag_flag_writes_the_tag_where_the_api_is_served(
    refreg: Registry, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = f"{refreg.host}/acx/ft:v1"
    digest = _ok(capsys, "push", str(work / "cart.acx"), ref)["digest"]
    subject = f"{refreg.host}/acx/ft@{digest}"
    _ok(capsys, "attach", subject, str(work / "env.json"), "--artifact-type", DSSE)
    tag = fallback_tag(digest)
    assert tag not in _ok(capsys, "tags", f"{refreg.host}/acx/ft")["tags"]  # API served: no tag by default
    att = _ok(
        capsys,
        "attach",
        subject,
        str(work / "env.json"),
        "--artifact-type",
        DSSE,
        "-a",
        "n=2",
        "--fallback-tag",
    )
    assert tag in _ok(capsys, "tags", f"{refreg.host}/acx/ft")["tags"]
    index = _ok(capsys, "manifest", "get", f"{refreg.host}/acx/ft:{tag}")["manifest"]
    assert att["digest"] in [m["digest"] for m in index["manifests"]]
    assert _ok(capsys, "discover", ref)["warnings"] == []  # the API is there: no warning


def test_oras_13_and_acx_list_the_same_referrers_of_a_lying_layout(
    tmp_path: Path, oras13: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A layout whose S has one true referrer, and a fallback tag listing a manifest that names X
    and a manifest that is gone: oras 1.3 lists neither stray, and neither does acx."""
    from tests.harness import hostilelayout as H

    kit = H.build(tmp_path)
    true = kit.manifest(artifact_type="application/x.true", subject=kit.subject)
    H.stray_in_fallback_tag(kit)
    H.gone_in_fallback_tag(kit)
    ours = _ok(capsys, "discover", f"{kit.ref}:v1")
    assert [n["digest"] for n in ours["referrers"]] == [true.digest]
    assert sorted(s["kind"] for s in ours["strays"]) == ["not_found", "subject_mismatch"]
    theirs = oras13.referrer_digests(f"{kit.root}@{kit.subject.digest}", layout=True)
    assert theirs == [true.digest]
