"""A registry that lies (tests/harness/evilregistry.py planting into our loopback registry,
tests/harness/memregistry.py): for each rule, `discover`, `verify`, `cp -r`, `install`, `pull`,
`tags` and `attach` end typed or drop the lying entry, never exit 70, within 5 s and 150 MB; and
`cp -r` between every pair of target kinds (registry with the Referrers API, registry with only
the fallback tag, OCI layout) copies exactly the verified referrer set."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.oci.copy import copy
from acxoci.oci.layout import LayoutStore
from acxoci.oci.reference import parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.settings import RemoteOptions
from tests.harness import evilregistry as E
from tests.harness.cli import acx_json
from tests.harness.hostilelayout import bounded
from tests.harness.installs import (
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    trusting_policy,
    write_registry,
)
from tests.harness.memregistry import MemRegistry

OPTS = RemoteOptions(plain_http=True)
COMMANDS = ("discover", "verify", "cp", "install", "pull", "tags", "attach")
OK = (0, None)
NO_ATTESTATION = (1, None)
PROTOCOL = (3, "registry_protocol")


@dataclass
class World:
    reg: MemRegistry
    subject: tuple[str, int]
    other: tuple[str, int]
    carts: dict[str, Path]

    @property
    def repo(self) -> str:
        return f"{self.reg.host}/acx/r"


@pytest.fixture(scope="module")
def carts(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("carts")
    key = generate_ed25519()
    layout = d / "layout"
    push_cartridge(layout, make_cartridge(vectors_dir, d / "s.acx", key), "v1")
    push_cartridge(layout, make_cartridge(vectors_dir, d / "x.acx", key, version="2.0.0"), "v2")
    (d / "key.pub").write_text(key.public().spki_pem())
    return {"layout": layout, "pub": d / "key.pub",
            "policy": trusting_policy(d, write_registry(d / "trust.json", [registry_entry(key, PUBLISHER)]))}


def _world(carts: dict[str, Path], *, api: bool = True, script: Callable[[E.Script], E.Script] | None = None
           ) -> World:
    reg = MemRegistry(referrers_api=api)
    reg.server = E.EvilServer(script(reg.script) if script else reg.script)
    dst = RegistryTarget(parse_reference(f"{reg.host}/acx/r:v1"), OPTS)
    src = LayoutStore(carts["layout"])
    for tag in ("v1", "v2"):
        copy(src, dst, tag)
    s, x = (reg.tags[t] for t in ("v1", "v2"))
    return World(reg, (s, len(reg.manifests[s][1])), (x, len(reg.manifests[x][1])), carts)


@pytest.fixture
def world(carts: dict[str, Path]) -> Iterator[World]:
    w = _world(carts)
    yield w
    w.reg.stop()


def _run(w: World, cmd: str, tmp: Path, capsys: pytest.CaptureFixture[str]
         ) -> tuple[tuple[int, str | None], Any]:
    ref = f"{w.repo}:v1"
    note = tmp / "note.txt"
    note.write_text("a note")
    args = {
        "discover": ["discover", ref],
        "verify": ["verify", ref, "--key", str(w.carts["pub"])],
        "cp": ["cp", "-r", ref, f"oci-layout:{tmp / 'copy'}:v1"],
        "install": ["install", ref, "--policy", str(w.carts["policy"]), "--store", str(tmp / "store")],
        "pull": ["pull", "--no-verify", ref, "-o", str(tmp / "pulled.acx")],
        "tags": ["tags", w.repo],
        "attach": ["attach", ref, str(note), "--artifact-type", "application/x.note"],
    }[cmd]
    flag = "--from-plain-http" if cmd == "cp" else "--plain-http"
    with bounded(seconds=5, mb=150):
        code, res = acx_json(capsys, args[0], flag, *args[1:])
    assert code != 70, (cmd, res)
    return (code, res["error"]["kind"] if isinstance(res, dict) and "error" in res else None), res


STRAY_RULES: dict[str, tuple[Callable[[World], object], str, str]] = {
    "stray-by-api": (lambda w: E.plant_stray(w.reg, w.subject, w.other, "application/x.planted"),
                     "subject_mismatch", "referrers-api"),
    "stray-by-fallback-tag": (
        lambda w: E.plant_stray(w.reg, w.subject, w.other, "application/x.planted", via="tag"),
        "subject_mismatch", "fallback-tag"),
    "withdrawn-record-of-another": (
        lambda w: E.plant_stray(w.reg, w.subject, w.other, "application/vnd.acx.registry-status.v1"),
        "subject_mismatch", "referrers-api"),
    "gone": (lambda w: E.plant_gone(w.reg, w.subject), "not_found", "referrers-api"),
    "600MB-referrer": (lambda w: E.plant_oversized(w.reg, w.subject), "manifest_too_large", "referrers-api"),
    "entry-outside-grammar": (lambda w: E.plant_malformed_entry(w.reg, w.subject), "malformed_manifest",
                              "referrers-api"),
}


@pytest.mark.parametrize("name", list(STRAY_RULES))
def test_a_lying_listing_entry_is_dropped_and_reported(
    name: str, world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plant, kind, source = STRAY_RULES[name]
    plant(world)
    got, res = {}, {}
    for cmd in COMMANDS:
        got[cmd], res[cmd] = _run(world, cmd, tmp_path, capsys)
    assert got == {c: NO_ATTESTATION if c == "verify" else OK for c in COMMANDS}
    for cmd in ("discover", "verify", "cp"):
        assert [(s["kind"], s["source"]) for s in res[cmd]["strays"]] == [(kind, source)], (cmd, res[cmd])
    assert res["discover"]["referrers"] == [] and res["cp"]["referrers"] == []
    assert LayoutStore(tmp_path / "copy").referrer_listing(
        LayoutStore(tmp_path / "copy").resolve("v1")).referrers == ()
    assert res["install"]["status"] == "installed"  # a withdrawn record of X withdraws nothing of S


@pytest.mark.parametrize("token", ["abc\r\nX-Injected: 1", "two words", "tok\x00en", "ünïcode"])
def test_a_token_outside_its_grammar_never_becomes_a_header(
    token: str, carts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = _world(carts)
    try:
        assert w.reg.server is not None
        w.reg.server.script = E.bearer_token_server(token, w.reg.script)
        got = {cmd: _run(w, cmd, tmp_path, capsys)[0] for cmd in COMMANDS}
        assert got == {c: PROTOCOL for c in COMMANDS}
        assert not any(r.auth and "X-Injected" in r.auth for r in w.reg.seen)
    finally:
        w.reg.stop()


def test_a_good_token_is_used(carts: dict[str, Path], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    w = _world(carts)
    try:
        assert w.reg.server is not None
        w.reg.server.script = E.bearer_token_server("eyJhbGciOi.J9-_~+/abc==", w.reg.script)
        assert _run(w, "tags", tmp_path, capsys)[0] == OK
        assert any(r.auth == "Bearer eyJhbGciOi.J9-_~+/abc==" for r in w.reg.seen)
    finally:
        w.reg.stop()


def test_a_tag_outside_its_grammar_is_refused(world: World, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    world.reg.tags["v1\nforged"] = world.subject[0]
    assert _run(world, "tags", tmp_path, capsys)[0] == PROTOCOL


def test_a_multi_file_title_that_is_a_path_is_refused(world: World, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    layers = []
    for title in ("ok.txt", "../../escaped.txt"):
        digest = world.reg.add_blob(title.encode())
        layers.append({"mediaType": "text/plain", "digest": digest, "size": len(title),
                       "annotations": {"org.opencontainers.image.title": title}})
    world.reg.add_manifest({"schemaVersion": 2, "mediaType": E.OCI_MANIFEST,
                            "artifactType": "application/x.f", "config": E.CONFIG, "layers": layers},
                           tag="files")
    out = tmp_path / "into"
    with bounded():
        code, res = acx_json(capsys, "pull", "--plain-http", "--no-verify", f"{world.repo}:files", "-o",
                             str(out))
    assert (code, res["error"]["kind"]) == (3, "invalid_input"), res
    assert not (tmp_path / "escaped.txt").exists()


# -- cp -r between every pair of target kinds ----------------------------------------------------
KINDS = ("registry-api", "registry-fallback", "layout")


def _source(kind: str, carts: dict[str, Path], tmp: Path, stop: list[MemRegistry]
            ) -> tuple[str, set[str], str]:
    """A source of this kind holding S with one true referrer and one planted stray (a manifest
    naming X, listed under S); returns (S's reference, the true referrer set, the stray)."""
    if kind == "layout":
        from tests.harness import hostilelayout as H

        kit = H.build(tmp / "src")
        true = kit.manifest(artifact_type="application/x.true", subject=kit.subject)
        planted = H.stray_in_fallback_tag(kit)
        return f"{kit.ref}:v1", {true.digest}, planted.digest
    w = _world(carts, api=kind == "registry-api")
    stop.append(w.reg)
    true = w.reg.add_manifest(E.referrer_json(w.subject, "application/x.true"))
    if kind == "registry-fallback":  # a fallback-tag registry lists only what its tag's index says
        E.plant_fallback_index(w.reg, w.subject, [E.entry(*true, "application/x.true")])
    planted = E.plant_stray(w.reg, w.subject, w.other, "application/x.planted",
                            via="api" if kind == "registry-api" else "tag")
    return f"{w.repo}:v1", {true[0]}, planted[0]


def _destination(kind: str, tmp: Path, stop: list[MemRegistry]
                 ) -> tuple[str, Callable[[], list[str]], Callable[[str], bool]]:
    """A destination of this kind, a reader of the referrers of what lands at its v1, and whether
    it holds a manifest."""
    if kind == "layout":
        root = tmp / "dst"

        def listed() -> list[str]:
            store = LayoutStore(root)
            return sorted(r.digest for r in store.referrers(store.resolve("v1")))

        return f"oci-layout:{root}:v1", listed, lambda d: (root / "blobs" / "sha256" / d[7:]).exists()
    reg = MemRegistry(referrers_api=kind == "registry-api").start()
    stop.append(reg)

    def listed_reg() -> list[str]:
        t = RegistryTarget(parse_reference(f"{reg.host}/acx/d:v1"), OPTS)
        return sorted(r.digest for r in t.referrers(t.resolve("v1")))

    return f"{reg.host}/acx/d:v1", listed_reg, lambda d: d in reg.manifests


@pytest.mark.parametrize("src_kind", KINDS)
@pytest.mark.parametrize("dst_kind", KINDS)
def test_cp_r_copies_exactly_the_verified_referrer_set(
    src_kind: str, dst_kind: str, carts: dict[str, Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    stop: list[MemRegistry] = []
    try:
        src, true, planted = _source(src_kind, carts, tmp_path, stop)
        dst, listed, holds = _destination(dst_kind, tmp_path, stop)
        with bounded():
            code, res = acx_json(capsys, "cp", "--from-plain-http", "--to-plain-http", "-r", src, dst)
        assert code == 0, res
        assert set(res["referrers"]) == true, res
        assert [(s["digest"], s["kind"]) for s in res["strays"]] == [(planted, "subject_mismatch")]
        assert listed() == sorted(true)
        assert not holds(planted)  # never copied, so never a referrer of X there
    finally:
        for reg in stop:
            reg.stop()
