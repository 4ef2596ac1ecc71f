"""An OCI layout is untrusted input, like a registry (issue 30): for every trait of the hostile
layout kit (tests/harness/hostilelayout.py), built at test time into a layout holding two signed
cartridges, each of `discover`, `verify`, `cp -r`, `install`, `pull`, `tags` and `attach` ends in
its typed refusal or drops the hostile entry, never exit 70, within 5 s and 150 MB of peak
resident memory. The table below says which, per trait and command."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519
from acxoci.oci.layout import LayoutStore
from tests.harness import hostilelayout as H
from tests.harness.cli import acx_json
from tests.harness.installs import (
    PUBLISHER,
    make_cartridge,
    registry_entry,
    trusting_policy,
    write_registry,
)

OK = (0, None)
TOO_LARGE = (3, "manifest_too_large")
NOT_REGULAR = (3, "invalid_input")
MALFORMED = (3, "malformed_manifest")
NO_ATTESTATION = (1, None)  # verify's verdict: nothing attested (the kit signs no attestation)
COMMANDS = ("discover", "verify", "cp", "install", "pull", "tags", "attach")


@dataclass
class Trait:
    plant: Callable[[H.Kit], Any]
    expect: dict[str, tuple[int, str | None]]
    strays: str | None = None
    """The stray kind discover, verify and cp report for S (None: no stray)."""


def _all(outcome: tuple[int, str | None], **but: tuple[int, str | None]) -> dict[str, tuple[int, str | None]]:
    return {c: but.get(c, outcome) for c in COMMANDS}


READS_OK = {"discover": OK, "verify": NO_ATTESTATION, "tags": OK, "attach": OK}
"""What needs only index.json (S's manifest itself unreadable): the listing of S, verify's verdict
(no attestation to check S's content against), the tags, and a referrer attached to S."""
TRAITS: dict[str, Trait] = {
    # listings: entries that name another subject, or are gone, are left out and reported
    "stray-in-fallback-tag": Trait(H.stray_in_fallback_tag, _all(OK, verify=NO_ATTESTATION),
                                   "subject_mismatch"),
    "withdrawn-record-of-another": Trait(H.withdrawn_on_other, _all(OK, verify=NO_ATTESTATION),
                                         "subject_mismatch"),
    "gone-in-fallback-tag": Trait(H.gone_in_fallback_tag, _all(OK, verify=NO_ATTESTATION), "not_found"),
    # sizes: refused before a byte is read
    "600MB-entry-elsewhere": Trait(H.huge_manifest_entry, _all(OK, verify=NO_ATTESTATION)),
    "600MB-manifest-at-v1": Trait(lambda k: H.huge_tagged(k, tag="v1"),
                                  {**READS_OK, "cp": TOO_LARGE, "install": TOO_LARGE,
                                   "pull": TOO_LARGE}),
    "5MB-index.json": Trait(H.huge_index_json, _all(TOO_LARGE)),
    # special files and symlinks out of the root: only regular files inside it are read
    "fifo-index.json": Trait(lambda k: H.fifo(k, "index.json"), _all(NOT_REGULAR)),
    "fifo-manifest": Trait(lambda k: H.fifo(k, "blob"), {**READS_OK, "cp": NOT_REGULAR,
                                                           "install": NOT_REGULAR, "pull": NOT_REGULAR}),
    "folder-manifest": Trait(H.directory_blob, {**READS_OK, "cp": NOT_REGULAR,
                                               "install": NOT_REGULAR, "pull": NOT_REGULAR}),
    "device-manifest": Trait(lambda k: H.symlink_out(k, "device"),
                             {**READS_OK, "cp": NOT_REGULAR, "install": NOT_REGULAR,
                              "pull": NOT_REGULAR}),
    "manifest-links-out": Trait(lambda k: H.symlink_out(k, "blob"),
                                {**READS_OK, "cp": NOT_REGULAR, "install": NOT_REGULAR,
                                 "pull": NOT_REGULAR}),
    "index.json-links-out": Trait(lambda k: H.symlink_out(k, "index.json"), _all(NOT_REGULAR)),
    "blobs-folder-links-out": Trait(lambda k: H.symlink_out(k, "blobs-dir"),
                                    {**READS_OK, "cp": NOT_REGULAR,
                                     "install": NOT_REGULAR, "pull": NOT_REGULAR, "attach": NOT_REGULAR}),
    "lock-links-out": Trait(H.lock_symlink, _all(OK, verify=NO_ATTESTATION, attach=NOT_REGULAR)),
    # names held to their grammar
    "ref.name-with-newline": Trait(H.bad_ref_name, _all(MALFORMED)),
    "title-with-newline": Trait(lambda k: H.bad_title(k, title="evil\nname.txt", tag="titled"),
                                _all(OK, verify=NO_ATTESTATION)),
}


@pytest.fixture(scope="module")
def carts(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> dict[str, Path]:
    """Two signed cartridges (S, X), a key that signed them, a policy trusting it."""
    d = tmp_path_factory.mktemp("carts")
    key = generate_ed25519()
    out = {"S": make_cartridge(vectors_dir, d / "s.acx", key),
           "X": make_cartridge(vectors_dir, d / "x.acx", key, version="2.0.0")}
    (d / "key.pub").write_text(key.public().spki_pem())
    out["pub"] = d / "key.pub"
    out["policy"] = trusting_policy(d, write_registry(d / "trust.json", [registry_entry(key, PUBLISHER)]))
    return out


def _command(cmd: str, kit: H.Kit, carts: dict[str, Path], tmp: Path) -> list[str]:
    ref = f"{kit.ref}:v1"
    note = tmp / "note.txt"
    note.write_text("a note")
    return {
        "discover": ["discover", ref],
        "verify": ["verify", ref, "--key", str(carts["pub"])],
        "cp": ["cp", "-r", ref, f"oci-layout:{tmp / 'copy'}:v1"],
        "install": ["install", ref, "--policy", str(carts["policy"]), "--store", str(tmp / "store")],
        "pull": ["pull", "--no-verify", ref, "-o", str(tmp / "pulled.acx")],
        "tags": ["tags", kit.ref],
        "attach": ["attach", ref, str(note), "--artifact-type", "application/x.note"],
    }[cmd]


def _outside(kit: H.Kit) -> dict[str, bytes]:
    return {str(p.relative_to(kit.outside)): p.read_bytes() if p.is_file() else b"/"
            for p in sorted(kit.outside.rglob("*"))}


@pytest.mark.parametrize("name", list(TRAITS))
def test_a_hostile_layout_is_refused_typed_or_its_entry_dropped(
    name: str, carts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trait = TRAITS[name]
    kit = H.build(tmp_path, carts["S"], carts["X"])
    trait.plant(kit)
    before = _outside(kit)
    got: dict[str, tuple[int, str | None]] = {}
    results: dict[str, Any] = {}
    for cmd in COMMANDS:
        with H.bounded(seconds=5, mb=150):
            code, res = acx_json(capsys, *_command(cmd, kit, carts, tmp_path))
        assert code != 70, (cmd, res)
        got[cmd] = (code, res["error"]["kind"] if isinstance(res, dict) and "error" in res else None)
        results[cmd] = res
    assert got == trait.expect
    assert _outside(kit) == before  # nothing outside the layout was written, truncated or created
    if trait.strays is not None:
        for cmd in ("discover", "verify", "cp"):
            assert [s["kind"] for s in results[cmd]["strays"]] == [trait.strays], (cmd, results[cmd])
        assert results["discover"]["referrers"] == [] and results["cp"]["referrers"] == []
        assert LayoutStore(tmp_path / "copy").referrers(kit.other) == []  # nothing planted on X


def test_a_withdrawn_record_of_another_artifact_withdraws_nothing(
    carts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's attack: S's fallback tag lists a `withdrawn` record whose subject is X. The
    install of S ignores it; `cp -r` of S does not carry it, so the mirror's X installs."""
    kit = H.build(tmp_path, carts["S"], carts["X"])
    H.withdrawn_on_other(kit)
    policy, store = str(carts["policy"]), str(tmp_path / "store")
    code, res = acx_json(capsys, "install", f"{kit.ref}:v1", "--policy", policy, "--store", store)
    assert code == 0 and res["status"] == "installed", res
    mirror = f"oci-layout:{tmp_path / 'mirror'}"
    for tag in ("v1", "v2"):
        code, res = acx_json(capsys, "cp", "-r", f"{kit.ref}:{tag}", f"{mirror}:{tag}")
        assert code == 0, res
    code, res = acx_json(capsys, "install", f"{mirror}:v2", "--policy", policy, "--store", store)
    assert code == 0 and res["status"] == "installed", res


@pytest.mark.parametrize("title", ["evil\nname.txt", "../../evil.acx", "sub/evil.acx"])
def test_a_bad_title_is_refused_where_it_would_name_a_file(
    carts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], title: str
) -> None:
    """A title is held to the file-name grammar as written: one with a path is refused (as oras
    does), never cut down to its last part."""
    kit = H.build(tmp_path, carts["S"], carts["X"])
    H.bad_title(kit, title=title, tag="titled")
    out = tmp_path / "into"
    out.mkdir()
    code, res = acx_json(capsys, "pull", "--no-verify", f"{kit.ref}:titled", "-o", str(out))
    assert (code, res["error"]["kind"]) == (3, "invalid_input"), res
    assert list(out.iterdir()) == []


def test_concurrent_writers_through_the_hardened_lock_keep_every_entry(tmp_path: Path) -> None:
    """The index lock is now our own flock on an O_NOFOLLOW file: 12 writers, 12 entries."""
    import threading

    kit = H.build(tmp_path)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            store = LayoutStore(kit.root)
            desc = kit.manifest(artifact_type="application/x.sig", subject=kit.subject, listed=False,
                                annotations={"n": str(i)})
            with (kit.blob(desc.digest)).open("rb") as fh:
                store.push(desc, fh)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(kit.store.referrers(kit.subject)) == 12
    assert json.loads((kit.root / "index.json").read_text())["manifests"]
    shutil.rmtree(kit.root)


def test_a_folder_where_a_blob_goes_ends_a_copy_typed(
    carts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Writing into a layout whose blob name is taken by a folder: typed, never exit 70."""
    src = H.build(tmp_path / "a", carts["S"], carts["X"])
    dst = H.build(tmp_path / "b")
    m = json.loads(src.blob(src.subject.digest).read_bytes())
    dst.blob(m["layers"][0]["digest"]).mkdir(parents=True)
    with H.bounded():
        code, res = acx_json(capsys, "cp", f"{src.ref}:v1", f"{dst.ref}:copied")
    assert (code, res["error"]["kind"]) == (3, "invalid_input"), res


def test_an_index_child_naming_a_subject_is_not_copied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index whose child manifest names X as its subject: copying the index would make the
    child a referrer of X in the destination, so the copy refuses it (typed)."""
    kit = H.build(tmp_path)
    child = kit.manifest(artifact_type="application/x.child", subject=kit.other, listed=False)
    index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                        "manifests": [child.to_json()]}).encode()
    digest = kit.put_blob(index)
    kit.add_entry({"mediaType": "application/vnd.oci.image.index.v1+json", "digest": digest,
                   "size": len(index), "annotations": {"org.opencontainers.image.ref.name": "idx"}})
    with H.bounded():
        code, res = acx_json(capsys, "cp", f"{kit.ref}:idx", f"oci-layout:{tmp_path / 'dst'}:idx")
    assert (code, res["error"]["kind"]) == (3, "malformed_manifest"), res
    assert "subject" in res["error"]["message"]
