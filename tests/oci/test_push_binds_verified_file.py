"""`acx push` and `release run` publish exactly the bytes they verified: the file hashed, the file
verified and the file uploaded (or copied for publishing) are one file, by identity (device,
inode, size, mtime, ctime; acxoci/fsutil.py). Each race is made deterministic here by doing the
swap from inside the step it races with."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import acxoci.artifact as artifact
from acxoci.artifact import build, gather, push_file
from acxoci.cartridge import verify as cverify
from acxoci.errors import InvalidInput
from acxoci.fsutil import file_identity
from acxoci.oci.layout import LayoutStore
from tests.harness.cartridges import NOW, SAMPLE, copy_vector


@pytest.fixture
def good(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "agent.acx")


@pytest.fixture
def evil(vectors_dir: Path, tmp_path: Path) -> Path:
    """A same-size cartridge with other ROM content (it would never verify)."""
    path = copy_vector(vectors_dir, SAMPLE, tmp_path / "evil.acx")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE sqlar SET mtime = mtime + 1 WHERE name LIKE 'rom/%'")
    conn.commit()
    conn.close()
    return path


def _swap_in(evil: Path, good: Path) -> None:
    spare = good.with_suffix(".spare")
    shutil.copyfile(evil, spare)
    os.replace(spare, good)


def _nothing_pushed(layout: Path) -> None:
    assert not layout.exists() or LayoutStore(layout).tags() == []


def test_swapped_between_hashing_and_verifying(
    good: Path, evil: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = artifact.file_descriptor

    def hash_then_swap(path: Path, media: str) -> Any:
        desc = real(path, media)
        _swap_in(evil, good)  # the verdict would be of another file than the digest
        return desc

    monkeypatch.setattr(artifact, "file_descriptor", hash_then_swap)
    with pytest.raises(InvalidInput, match="changed"):
        gather(good, verify=True, registry=None, now=NOW)


def test_swapped_while_verifying(good: Path, evil: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real: Callable[..., Any] = cverify.verify_open

    def verify_then_swap(*a: Any, **k: Any) -> Any:
        out = real(*a, **k)
        _swap_in(evil, good)
        return out

    monkeypatch.setattr(cverify, "verify_open", verify_then_swap)
    with pytest.raises(InvalidInput, match="changed"):
        gather(good, verify=True, registry=None, now=NOW)


@pytest.mark.parametrize("how", ["replaced", "written-in-place-mtime-restored", "renamed-back"])
def test_changed_after_verifying_is_not_pushed(good: Path, evil: Path, tmp_path: Path, how: str) -> None:
    facts = gather(good, verify=True, registry=None, now=NOW)
    assert facts.identity == file_identity(good)
    st = good.stat()
    if how == "replaced":
        _swap_in(evil, good)
    elif how == "written-in-place-mtime-restored":
        data = bytearray(good.read_bytes())
        data[-1] ^= 1
        with good.open("r+b") as fh:
            fh.write(data)
        os.utime(good, ns=(st.st_atime_ns, st.st_mtime_ns))  # only ctime still tells
    else:
        aside = tmp_path / "aside.acx"
        os.rename(good, aside)
        os.rename(aside, good)  # the same inode and bytes, but it was moved: ctime tells
    layout = tmp_path / "layout"
    with pytest.raises(InvalidInput, match="changed"):
        push_file(LayoutStore(layout), facts, build(facts), "v1")
    _nothing_pushed(layout)


def test_unchanged_file_is_pushed(good: Path, tmp_path: Path) -> None:
    facts = gather(good, verify=True, registry=None, now=NOW)
    layout = tmp_path / "layout"
    desc = push_file(LayoutStore(layout), facts, build(facts), "v1")
    assert LayoutStore(layout).resolve("v1").digest == desc.digest


def _retarget(link: Path, to: Path) -> None:
    """Point the symlink `link` at `to` (atomically, as an attacker in its folder would): the file
    it named before is not touched, so its identity (ctime included) stays as it was."""
    spare = link.with_name(link.name + ".new")
    spare.symlink_to(to)
    os.replace(spare, link)


def test_a_symlink_retargeted_while_hashing_does_not_publish_other_bytes(
    good: Path, evil: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the registry (here a layout) already holds the attacker's blob, so a manifest naming its
    # digest is published without any upload: only the digest taken in gather decides
    layout = tmp_path / "layout"
    evil_facts = gather(evil, verify=False, registry=None, now=NOW)
    push_file(LayoutStore(layout), evil_facts, build(evil_facts), None)
    link = tmp_path / "link.acx"
    link.symlink_to(good)
    real = artifact.file_descriptor

    def hash_through_retargeted_link(path: Path, media: str) -> Any:
        _retarget(link, evil)
        try:
            return real(path, media)
        finally:
            _retarget(link, good)

    monkeypatch.setattr(artifact, "file_descriptor", hash_through_retargeted_link)
    try:
        facts = gather(link, verify=True, registry=None, now=NOW)
    except InvalidInput as exc:
        assert "changed" in exc.message
        return
    assert facts.verdict is not None and facts.verdict["trust"] != "tampered"  # good was verified
    push_file(LayoutStore(layout), facts, build(facts), "v1")
    published = LayoutStore(layout).resolve("v1")
    with LayoutStore(layout).fetch(published) as r:
        manifest = r.read_all()
    assert evil_facts.digest.encode() not in manifest, "the verified file's tag names the other file's bytes"
    assert file_descriptor_of(good).digest.encode() in manifest


def file_descriptor_of(path: Path) -> Any:
    return artifact.file_descriptor(path, "application/octet-stream")


def test_a_symlink_retargeted_while_uploading_a_large_file_does_not_publish_other_bytes(
    good: Path, evil: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, distribution_registry: Any
) -> None:
    # a large file is hashed while it uploads (push_path): that read, too, must be of the file
    # verified, not of whatever a retargeted symlink names by then
    from acxoci.oci.reference import parse_reference
    from acxoci.oci.registry import RegistryTarget, Transport
    from acxoci.oci.target import RemoteOptions, fetch_manifest

    monkeypatch.setattr(artifact, "HASH_WHILE_UPLOADING", 1024)
    host = distribution_registry.host
    opts = RemoteOptions(plain_http=True)
    target = RegistryTarget(parse_reference(f"{host}/r/x:v1"), opts, transport=Transport(host, opts))
    link = tmp_path / "link.acx"
    link.symlink_to(good)
    real = RegistryTarget.push_file_hashing

    def upload_through_retargeted_link(self: RegistryTarget, path: Path, media: str) -> Any:
        _retarget(link, evil)
        try:
            return real(self, path, media)
        finally:
            _retarget(link, good)

    monkeypatch.setattr(RegistryTarget, "push_file_hashing", upload_through_retargeted_link)
    try:
        desc, _, _ = artifact.push_path(target, link, "v1", verify=True, registry=None, now=NOW)
    except InvalidInput as exc:
        assert "changed" in exc.message
        return
    layer = fetch_manifest(target, desc).layers[0]
    assert layer.digest == file_descriptor_of(good).digest, "the registry got bytes that were never verified"


def test_release_attests_the_bytes_it_publishes(
    tmp_path: Path, vectors_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the input is rewritten in place (another cartridge that verifies) after it was copied for
    # publishing and checked: the signed attestation must still state the facts of the copy
    import acxoci.attestation.content as content
    import acxoci.release.interpreter as interpreter
    from acxoci.release.plan import load_plan
    from tests.harness.releases import make_world

    layout = tmp_path / "layout"
    w = make_world(tmp_path / "w", vectors_dir, [f"oci-layout:{layout}"])
    published_rom = cverify.verify_cartridge(w.cartridge, registry=None, now=NOW).rom_digest
    other = vectors_dir / "reference" / "ada-ridge.acx"
    real = content.cartridge_facts
    stated: list[Any] = []

    def rewrite_then_attest(path: Any, layer_digest: str, *, now: Any) -> Any:
        with w.cartridge.open("r+b") as fh:  # same inode: only its identity could tell
            fh.write(other.read_bytes())
            fh.truncate()
        facts = real(path, layer_digest, now=now)
        stated.append(facts)
        return facts

    monkeypatch.setattr(content, "cartridge_facts", rewrite_then_attest)
    result = interpreter.run_goal(load_plan(w.plan), root=w.state)
    assert stated, "no cartridge attestation was made"
    assert all(f.rom_digest == published_rom for f in stated), (published_rom, stated)
    assert result.exit_code() == 0 and result.status.state == "done"  # its read-back agrees
