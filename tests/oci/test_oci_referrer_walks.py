"""A registry that lists C under both A and B (a diamond) although C's manifest names A: the one
listing keeps C under A only and reports it as a stray of B (subject_mismatch), so the walk is a
tree again; `discover` and `cp -r` each ask the registry for the referrers of every subject
exactly once (the caps on entries, pages and depth still hold)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.cli import acx_json
from tests.harness.evilregistry import EMPTY, EMPTY_DIGEST, OCI_MANIFEST
from tests.harness.memregistry import MemRegistry

CONFIG = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}


def _manifest(n: str, subject: tuple[str, int] | None) -> dict[str, object]:
    m: dict[str, object] = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                            "artifactType": "application/x.node", "config": CONFIG, "layers": [CONFIG],
                            "annotations": {"n": n}}
    if subject is not None:
        m["subject"] = {"mediaType": OCI_MANIFEST, "digest": subject[0], "size": subject[1]}
    return m


@pytest.fixture
def diamond() -> Iterator[tuple[MemRegistry, dict[str, tuple[str, int]]]]:
    """root <- A, root <- B, A <- C (and B's listing also names C), C <- D, D <- E."""
    reg = MemRegistry().start()
    reg.add_blob(EMPTY)
    nodes: dict[str, tuple[str, int]] = {}
    nodes["root"] = reg.add_manifest(_manifest("root", None), tag="v1")
    nodes["A"] = reg.add_manifest(_manifest("A", nodes["root"]))
    nodes["B"] = reg.add_manifest(_manifest("B", nodes["root"]))
    nodes["C"] = reg.add_manifest(_manifest("C", nodes["A"]))
    nodes["D"] = reg.add_manifest(_manifest("D", nodes["C"]))
    nodes["E"] = reg.add_manifest(_manifest("E", nodes["D"]))
    reg.extra_referrers[nodes["B"][0]] = [{"mediaType": OCI_MANIFEST, "digest": nodes["C"][0],
                                           "size": nodes["C"][1], "artifactType": "application/x.node"}]
    yield reg, nodes
    reg.stop()


def test_discover_lists_each_subject_once(
    diamond: tuple[MemRegistry, dict[str, tuple[str, int]]], capsys: pytest.CaptureFixture[str]
) -> None:
    reg, nodes = diamond
    code, res = acx_json(capsys, "discover", "--plain-http", f"{reg.host}/acx/d:v1")
    assert code == 0, res
    by_digest = {d: name for name, (d, _) in nodes.items()}
    assert {by_digest[d]: n for d, n in reg.referrer_lists.items()} == {
        "root": 1, "A": 1, "B": 1, "C": 1, "D": 1, "E": 1}
    tops = {by_digest[n["digest"]]: n for n in res["referrers"]}
    assert set(tops) == {"A", "B"}
    (c,) = tops["A"]["referrers"]  # C (and below it D, E) under its own subject only
    assert by_digest[c["digest"]] == "C"
    assert by_digest[c["referrers"][0]["digest"]] == "D"
    assert by_digest[c["referrers"][0]["referrers"][0]["digest"]] == "E"
    assert tops["B"]["referrers"] == []
    strays = [(by_digest[s["subject"]], by_digest[s["digest"]], s["kind"], s["source"])
              for s in res["strays"]]
    assert strays == [("B", "C", "subject_mismatch", "referrers-api")]


def test_cp_r_lists_each_subject_once(
    diamond: tuple[MemRegistry, dict[str, tuple[str, int]]], capsys: pytest.CaptureFixture[str]
) -> None:
    reg, nodes = diamond
    dst = MemRegistry().start()
    try:
        code, res = acx_json(capsys, "cp", "-r", "--from-plain-http", "--to-plain-http",
                             f"{reg.host}/acx/d:v1", f"{dst.host}/acx/copy:v1")
        assert code == 0, res
        assert sorted(reg.referrer_lists.values()) == [1] * len(nodes)
        assert set(dst.manifests) == {d for d, _ in nodes.values()}
        by_digest = {d: name for name, (d, _) in nodes.items()}
        assert [(by_digest[s["subject"]], by_digest[s["digest"]]) for s in res["strays"]] == [("B", "C")]
        assert dst.referrers_index(nodes["B"][0])["manifests"] == []  # nothing planted under B
    finally:
        dst.stop()
