"""`cp -r` between every pair of target kinds, on real parts: distribution 2.8 (fallback tag only),
acx-refreg (ggcr with the Referrers API) and an OCI layout. Each source holds S with one true
referrer and a manifest naming X planted into S's `sha256-<hex>` fallback tag (the one place a
real registry lets anyone list an entry under another subject); every copy relays exactly the
true referrer, reports the planted one as a stray and never writes it to the destination."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acxoci.errors import NotFound
from acxoci.oci.descriptor import EMPTY_DATA, EMPTY_DIGEST, EMPTY_JSON, OCI_INDEX, OCI_MANIFEST, Descriptor
from acxoci.oci.layout import LayoutStore
from acxoci.oci.reference import fallback_tag, parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.target import Target, push_bytes
from tests.harness.cli import acx_json
from tests.harness.hostilelayout import bounded
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop
OPTS = RemoteOptions(plain_http=True)
CONFIG = {"mediaType": EMPTY_JSON, "digest": EMPTY_DIGEST, "size": 2}


def _manifest(target: Target, artifact_type: str, subject: Descriptor | None = None) -> Descriptor:
    push_bytes(target, EMPTY_DATA, EMPTY_JSON)
    m: dict[str, object] = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
                            "config": CONFIG, "layers": [CONFIG]}
    if subject is not None:
        m["subject"] = {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size}
    return push_bytes(target, json.dumps(m).encode(), OCI_MANIFEST).plain()


def _plant(target: Target, s: Descriptor, x: Descriptor) -> tuple[Descriptor, Descriptor]:
    """S's true referrer, and a referrer of X listed in S's fallback tag as well."""
    true = _manifest(target, "application/x.true", s)
    planted = _manifest(target, "application/x.planted", x)
    tag = fallback_tag(s.digest)
    try:
        with target.fetch(target.resolve(tag)) as reader:
            held = json.loads(reader.read_all())["manifests"]
    except NotFound:  # no tag yet (the API is served, or a layout)
        held = []
    index = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
        *held, {"mediaType": OCI_MANIFEST, "digest": planted.digest, "size": planted.size,
                "artifactType": "application/x.planted"}]}).encode()
    target.tag(push_bytes(target, index, OCI_INDEX).plain(), tag)
    return true, planted


def _open(kind: str, regs: dict[str, Registry], tmp: Path, repo: str) -> tuple[str, Target]:
    if kind == "layout":
        return f"oci-layout:{tmp / repo}", LayoutStore(tmp / repo)
    ref = f"{regs[kind].host}/acx/{repo}"
    return ref, RegistryTarget(parse_reference(ref + ":v1"), OPTS)


KINDS = ("distribution", "refreg", "layout")


def test_cp_r_between_every_pair_copies_exactly_the_verified_set(
    distribution_registry: Registry, refreg: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    regs = {"distribution": distribution_registry, "refreg": refreg}
    for i, src_kind in enumerate(KINDS):
        src_ref, src = _open(src_kind, regs, tmp_path, f"src{i}")
        s = _manifest(src, "application/x.subject")
        x = _manifest(src, "application/x.other")
        src.tag(s, "v1")
        true, planted = _plant(src, s, x)
        for j, dst_kind in enumerate(KINDS):
            dst_ref, dst = _open(dst_kind, regs, tmp_path, f"dst{i}{j}")
            with bounded():
                code, res = acx_json(capsys, "cp", "--from-plain-http", "--to-plain-http", "-r",
                                     f"{src_ref}:v1", f"{dst_ref}:v1")
            where = f"{src_kind} -> {dst_kind}"
            assert code == 0, (where, res)
            assert res["referrers"] == [true.digest], where
            strays = [(t["digest"], t["kind"]) for t in res["strays"]]
            assert strays == [(planted.digest, "subject_mismatch")], where
            assert [r.digest for r in dst.referrers(dst.resolve("v1"))] == [true.digest], where
            assert not dst.exists(planted), where
