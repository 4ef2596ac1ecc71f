"""How many HTTP requests `install` and `pull` make, and that the one manifest GET pins the digest:
a tag is resolved with one GET whose body's hash is the digest (no HEAD first), a subject's
referrers are listed once per install, a Docker-Content-Digest that disagrees with the body is
refused, and a tag that moves between requests cannot make install verify one manifest and
install another. Counted on our own loopback registry (tests/harness/memregistry.py), with and
without the Referrers API."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.errors import Tampered
from acxoci.install.install import install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.oci.copy import copy
from acxoci.oci.descriptor import EMPTY_DIGEST, OCI_MANIFEST, Descriptor
from acxoci.oci.errors import DigestMismatch, Unsupported
from acxoci.oci.layout import LayoutStore
from acxoci.oci.reference import fallback_tag, parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.target import ReadView, resolve_manifest
from tests.harness.cli import acx_json
from tests.harness.evilregistry import EvilServer, Reply, Request
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    attach_level,
    issue_level,
    level_policy,
    make_cartridge,
    push_cartridge,
    registry_entry,
    write_registry,
)
from tests.harness.memregistry import MemRegistry

OPTS = RemoteOptions(plain_http=True)
Hook = Callable[[Request], Reply | None]


@dataclass
class World:
    reg: MemRegistry
    tmp: Path
    policy: Path
    subject: Descriptor
    other: Descriptor
    layer: str
    other_layer: str
    credential: Descriptor
    credential_blob: str
    hook: list[Hook]

    @property
    def ref(self) -> str:
        return f"{self.reg.host}/acx/sample:v1"

    def wire(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.reg.seen]


def _start(reg: MemRegistry, hook: list[Hook]) -> None:
    """Serve `reg`, letting the test's hook (if any) answer a request first."""

    def script(req: Request) -> Reply:
        for h in hook:
            rep = h(req)
            if rep is not None:
                return rep
        return reg.script(req)

    reg.server = EvilServer(script)


def _no_referrers_api(req: Request) -> Reply | None:
    return Reply(404) if "/referrers/" in req.path else None


@pytest.fixture(params=["referrers-api", "fallback-tag"])
def world(request: pytest.FixtureRequest, tmp_path: Path, vectors_dir: Path) -> Iterator[World]:
    """A signed cartridge at :v1 with a level credential referrer (and a second cartridge at :v2)
    on a loopback registry that serves the Referrers API, or only the fallback tag."""
    hook: list[Hook] = [] if request.param == "referrers-api" else [_no_referrers_api]
    reg = MemRegistry()
    _start(reg, hook)
    try:
        key = generate_ed25519()
        acx_file = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
        other_file = make_cartridge(vectors_dir, tmp_path / "d.acx", key, version="2.0.0")
        layout = tmp_path / "layout"
        desc = push_cartridge(layout, acx_file, "v1")
        other = push_cartridge(layout, other_file, "v2")
        lv = issue_level(tmp_path, acx_file)
        cred = attach_level(layout, desc, lv.credential)
        trust = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
        dst = RegistryTarget(parse_reference(f"{reg.host}/acx/sample:v1"), OPTS)
        copy(LayoutStore(layout), dst, "v1")
        copy(LayoutStore(layout), dst, "v2")
        store = LayoutStore(layout)
        layer = json.loads(store.fetch(desc).read_all())["layers"][0]["digest"]
        other_layer = json.loads(store.fetch(other).read_all())["layers"][0]["digest"]
        cred_blob = json.loads(store.fetch(cred).read_all())["layers"][0]["digest"]
        if request.param == "fallback-tag":
            assert fallback_tag(desc.digest) in reg.tags  # the copy wrote the tag-schema index
        reg.reset_counts()
        from acxoci.oci.transport import Transport

        Transport._pool.clear()  # the install runs as a new `acx` process would: nothing known yet
        yield World(reg, tmp_path, level_policy(tmp_path, trust, lv, "mid"), desc, other, layer,
                    other_layer, cred, cred_blob, hook)
    finally:
        reg.stop()


def _install(w: World, ref: str | None = None) -> Any:
    return install(ref or w.ref, policy=load_policy(w.policy, now=NOW), store=Store(w.tmp / "store"), now=NOW,
                   remote=OPTS)


def test_install_requests_exactly_these(world: World) -> None:
    out = _install(world)
    assert out.status == "installed", [c.to_json() for c in out.failed]
    d = world.subject.digest
    assert world.wire() == [
        "GET /v2/acx/sample/manifests/v1",  # resolve + manifest in one GET (no HEAD)
        # one listing: lifecycle records and level credentials both come from it. Its sources are
        # the Referrers API (a 404 without it) and the fallback tag's index (read either way), and
        # each candidate's manifest is read to check its subject (the bytes are kept: not read again)
        f"GET /v2/acx/sample/referrers/{d}",
        f"GET /v2/acx/sample/manifests/{fallback_tag(d)}",
        f"GET /v2/acx/sample/manifests/{world.credential.digest}",
        f"GET /v2/acx/sample/blobs/{world.layer}",  # the empty config is known bytes
        f"GET /v2/acx/sample/blobs/{world.credential_blob}",
    ]
    assert out.record["digest"] == d and out.record["level"] is not None


def test_pull_requests_exactly_these(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(world.tmp / "out")
    code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", world.ref, "-o", out)
    assert code == 0, res
    assert res["digest"] == world.subject.digest
    assert world.wire() == ["GET /v2/acx/sample/manifests/v1", f"GET /v2/acx/sample/blobs/{world.layer}"]


def _lying_digest(w: World) -> Hook:
    """Tag v1 answers v1's bytes with v2's Docker-Content-Digest (a registry that lies)."""
    data = w.reg.manifests[w.subject.digest][1]

    def hook(req: Request) -> Reply | None:
        if req.path.endswith("/manifests/v1"):
            return Reply(200, {"Content-Type": OCI_MANIFEST, "Docker-Content-Digest": w.other.digest}, data)
        return None

    return hook


def test_a_digest_header_that_disagrees_with_the_body_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.hook.insert(0, _lying_digest(world))
    out = _install(world)
    assert out.status == "refused"
    content = next(c for c in out.checks if c.id == "content-digest")
    assert content.status == "fail" and "registry said" in content.reason
    assert world.wire() == ["GET /v2/acx/sample/manifests/v1"]  # nothing else was asked
    assert not (world.tmp / "store").exists() or not Store(world.tmp / "store").list()

    target = RegistryTarget(parse_reference(world.ref), OPTS)
    with pytest.raises(DigestMismatch):
        resolve_manifest(target, "v1")
    code, res = acx_json(capsys, "pull", "--plain-http", world.ref, "-o", str(world.tmp / "out"))
    assert code == Tampered.exit_code and res["error"]["kind"] == DigestMismatch.kind, res
    assert not (world.tmp / "out").exists()


def _moving_tag(w: World) -> Hook:
    """Tag v1 answers v1 the first time and v2 every time after (a tag moved mid-install)."""
    asked = [0]

    def hook(req: Request) -> Reply | None:
        if not req.path.endswith("/manifests/v1"):
            return None
        asked[0] += 1
        digest = w.subject.digest if asked[0] == 1 else w.other.digest
        mt, data = w.reg.manifests[digest]
        return Reply(200, {"Content-Type": mt, "Docker-Content-Digest": digest}, b"" if req.method == "HEAD"
                     else data, length=len(data))

    return hook


def test_a_tag_moving_between_requests_cannot_split_verify_from_install(world: World) -> None:
    world.hook.insert(0, _moving_tag(world))
    out = _install(world)
    assert out.status == "installed", [c.to_json() for c in out.failed]
    # what was verified, recorded and installed is the manifest of the one tag answer
    assert out.record["digest"] == world.subject.digest
    assert out.record["contentDigest"] == world.layer
    installed = Path(out.path) / "cartridge.acx"
    assert "sha256:" + hashlib.sha256(installed.read_bytes()).hexdigest() == world.layer
    assert [line for line in world.wire() if "/manifests/v1" in line] == ["GET /v2/acx/sample/manifests/v1"]
    assert f"GET /v2/acx/sample/blobs/{world.other_layer}" not in world.wire()


def test_read_view_refuses_writes_and_lists_once(world: World) -> None:
    view = ReadView(RegistryTarget(parse_reference(world.ref), OPTS))
    subject = world.subject.plain()
    assert [r.digest for r in view.referrers(subject, "application/vnd.acx.level-attestation.v1")] == [
        world.credential.digest]
    assert view.referrers(subject, "application/x.other") == []
    assert [r.digest for r in view.referrers(subject)] == [world.credential.digest]
    assert world.reg.referrer_lists.get(subject.digest, 0) <= 1
    with pytest.raises(Unsupported):
        view.push(world.credential, io.BytesIO(b""))
    with pytest.raises(Unsupported):
        view.tag(world.subject, "v9")
    with pytest.raises(Unsupported):
        view.delete(world.credential)


def test_a_registry_target_sees_a_referrer_it_just_pushed(world: World) -> None:
    """`release run` proves a referrer it pushed by listing again with the same reader: a
    RegistryTarget keeps no referrer listing between calls (only ReadView does, per install)."""
    reader = RegistryTarget(parse_reference(world.ref), OPTS)
    writer = RegistryTarget(parse_reference(world.ref), OPTS)
    subject = world.other.plain()
    assert reader.referrers(subject) == []
    empty = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/x.proof",
                "config": empty, "layers": [empty],
                "subject": {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size}}
    data = json.dumps(manifest).encode()
    desc = Descriptor(OCI_MANIFEST, "sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    writer.push(desc, io.BytesIO(data))
    assert [r.digest for r in reader.referrers(subject)] == [desc.digest]
    assert [r.digest for r in reader.referrers(subject, "application/x.proof")] == [desc.digest]


def test_read_view_reads_an_untyped_entry_once() -> None:
    """An entry listed without artifactType is typed from its manifest (config media type), and
    that manifest is read once per view however many subsets are asked for."""
    reg = MemRegistry().start()
    try:
        reg.add_blob(b"{}")
        empty = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
        base = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": empty, "layers": [empty]}
        subject, size = reg.add_manifest({**base, "artifactType": "application/x.subject"}, tag="v1")
        ref_to = {"mediaType": OCI_MANIFEST, "digest": subject, "size": size}
        untyped, _ = reg.add_manifest({**base, "config": {**empty, "mediaType": "application/x.typed"},
                                       "subject": ref_to})
        view = ReadView(RegistryTarget(parse_reference(f"{reg.host}/acx/u:v1"), OPTS))
        subj = Descriptor(OCI_MANIFEST, subject, size)
        for _ in range(3):
            assert [r.digest for r in view.referrers(subj, "application/x.typed")] == [untyped]
            assert view.referrers(subj, "application/x.other") == []
        assert [r.path for r in reg.seen] == [f"/v2/acx/u/referrers/{subject}",
                                              f"/v2/acx/u/manifests/{fallback_tag(subject)}",
                                              f"/v2/acx/u/manifests/{untyped}"]
    finally:
        reg.stop()
