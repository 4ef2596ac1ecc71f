"""A hostile OCI layout kit: each function plants one hostile trait, at test time, into a real
layout that `Kit` first builds honestly (S tagged `v1`, X tagged `v2`, each a small manifest or
a signed cartridge, and a folder outside the layout for symlinks and victims). The traits are
what a layout handed to us (a download, a mirror, a colleague's folder) could carry: referrer
listings that name other subjects, declared sizes far beyond the caps, special files, symlinks
out of the root, and names outside their grammar.

`bounded()` runs a block and fails past its wall time or its growth of peak resident memory, for
the "within 5 s and 150 MB" rule."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acxoci.oci.descriptor import ANNOTATION_REF_NAME, EMPTY_DIGEST, OCI_INDEX, OCI_MANIFEST, Descriptor
from acxoci.oci.layout import LayoutStore
from acxoci.oci.reference import fallback_tag
from acxoci.oci.target import push_bytes

EMPTY = {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST, "size": 2}
LIFECYCLE_TYPE = "application/vnd.acx.registry-status.v1"
LIFECYCLE_LAYER = "application/vnd.acx.registry-status.v1+json"
MiB = 1024 * 1024


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _bytes(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


@dataclass
class Kit:
    """One layout (`root`) with S at `v1` and X at `v2`, and a folder `outside` it."""

    root: Path
    outside: Path
    subject: Descriptor = field(init=False)
    other: Descriptor = field(init=False)

    @property
    def store(self) -> LayoutStore:
        return LayoutStore(self.root)

    @property
    def ref(self) -> str:
        return f"oci-layout:{self.root}"

    def blob(self, digest: str) -> Path:
        return self.root / "blobs" / "sha256" / digest.split(":", 1)[1]

    def put_blob(self, data: bytes) -> str:
        """A blob file written directly (no index.json entry): as a hostile tool would."""
        d = _digest(data)
        path = self.blob(d)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return d

    def manifest(self, *, artifact_type: str = "application/x.kit", subject: Descriptor | None = None,
                 layers: list[dict[str, Any]] | None = None, annotations: dict[str, str] | None = None,
                 listed: bool = True) -> Descriptor:
        """A manifest's blob (and, when `listed`, an untagged index.json entry for it)."""
        self.put_blob(b"{}")
        m: dict[str, Any] = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
                             "config": EMPTY, "layers": layers if layers is not None else [EMPTY]}
        if subject is not None:
            m["subject"] = {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size}
        if annotations:
            m["annotations"] = annotations
        data = _bytes(m)
        desc = Descriptor(OCI_MANIFEST, self.put_blob(data), len(data))
        if listed:
            self.add_entry({"mediaType": OCI_MANIFEST, "digest": desc.digest, "size": desc.size,
                            "artifactType": artifact_type})
        return desc

    def index(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.root / "index.json").read_text())
        return doc

    def write_index(self, doc: dict[str, Any]) -> None:
        (self.root / "index.json").write_text(json.dumps(doc))

    def add_entry(self, entry: dict[str, Any]) -> None:
        doc = self.index()
        doc["manifests"].append(entry)
        self.write_index(doc)

    def fallback_index(self, subject: Descriptor, entries: list[dict[str, Any]]) -> Descriptor:
        """A `sha256-<hex>` tag for `subject` holding an index of its present entries and `entries`
        (as skopeo leaves one)."""
        tag = fallback_tag(subject.digest)
        doc = self.index()
        held = [e for e in doc["manifests"] if (e.get("annotations") or {}).get(ANNOTATION_REF_NAME) == tag]
        before = json.loads(self.blob(held[-1]["digest"]).read_bytes())["manifests"] if held else []
        data = _bytes({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [*before, *entries]})
        desc = Descriptor(OCI_INDEX, self.put_blob(data), len(data))
        doc["manifests"] = [e for e in doc["manifests"] if e not in held]
        self.write_index(doc)
        self.add_entry({"mediaType": OCI_INDEX, "digest": desc.digest, "size": desc.size,
                        "annotations": {ANNOTATION_REF_NAME: tag}})
        return desc


def build(tmp: Path, subject: Path | None = None, other: Path | None = None) -> Kit:
    """An honest layout: S at v1 and X at v2 (the cartridge files if given, pushed as acx does;
    else small manifests), and an empty folder outside it."""
    from tests.harness.installs import push_cartridge

    kit = Kit(tmp / "layout", tmp / "outside")
    kit.outside.mkdir(parents=True, exist_ok=True)
    push_bytes(LayoutStore(kit.root), b"{}", "application/vnd.oci.empty.v1+json")  # an empty, valid layout
    if subject is not None and other is not None:
        kit.subject = push_cartridge(kit.root, subject, "v1").plain()
        kit.other = push_cartridge(kit.root, other, "v2").plain()
        return kit
    for name, tag in (("subject", "v1"), ("other", "v2")):
        desc = kit.manifest(artifact_type=f"application/x.{name}", listed=False)
        kit.store.tag(desc, tag)
        setattr(kit, name, desc)
    return kit


# -- traits ------------------------------------------------------------------------------------
def stray_in_fallback_tag(kit: Kit, artifact_type: str = "application/x.planted") -> Descriptor:
    """S's fallback tag lists a manifest whose subject is X (and which index.json does not list)."""
    planted = kit.manifest(artifact_type=artifact_type, subject=kit.other, listed=False)
    kit.fallback_index(kit.subject, [{"mediaType": OCI_MANIFEST, "digest": planted.digest,
                                      "size": planted.size, "artifactType": artifact_type}])
    return planted


def withdrawn_on_other(kit: Kit) -> Descriptor:
    """The issue's attack: a `withdrawn` lifecycle record whose subject is X, listed only in S's
    fallback tag (claiming the lifecycle type), so a copy of S would plant it on X."""
    record = _bytes({"schemaVersion": "acx.registry-lifecycle/1", "status": "withdrawn",
                     "reason": "planted by a hostile source", "recordedAt": "2026-01-01T00:00:00Z"})
    layer = {"mediaType": LIFECYCLE_LAYER, "digest": kit.put_blob(record), "size": len(record)}
    planted = kit.manifest(artifact_type=LIFECYCLE_TYPE, subject=kit.other, layers=[layer], listed=False)
    kit.fallback_index(kit.subject, [{"mediaType": OCI_MANIFEST, "digest": planted.digest,
                                      "size": planted.size, "artifactType": LIFECYCLE_TYPE}])
    return planted


def gone_in_fallback_tag(kit: Kit) -> str:
    """S's fallback tag lists a manifest whose blob is not in the layout."""
    gone = "sha256:" + "ab" * 32
    kit.fallback_index(kit.subject, [{"mediaType": OCI_MANIFEST, "digest": gone, "size": 321,
                                      "artifactType": "application/x.gone"}])
    return gone


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk (reading it would still take `size` bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(size)


def huge_manifest_entry(kit: Kit, size: int = 600 * MiB) -> str:
    """An untagged index.json entry declaring a manifest of `size` bytes (a sparse file of that
    size is there): the issue's 651 MB read."""
    digest = "sha256:" + "cd" * 32
    sparse(kit.blob(digest), size)
    kit.add_entry({"mediaType": OCI_MANIFEST, "digest": digest, "size": size})
    return digest


def huge_tagged(kit: Kit, tag: str = "big", size: int = 600 * MiB) -> str:
    """Tag `tag` names a manifest of `size` bytes."""
    digest = "sha256:" + "ef" * 32
    sparse(kit.blob(digest), size)
    kit.add_entry({"mediaType": OCI_MANIFEST, "digest": digest, "size": size,
                   "annotations": {ANNOTATION_REF_NAME: tag}})
    return digest


def huge_index_json(kit: Kit, size: int = 5 * MiB) -> None:
    """index.json past the 4 MiB cap (valid JSON, padded with whitespace)."""
    text = json.dumps(kit.index())
    (kit.root / "index.json").write_text(text[:-1] + " " * size + "}")


def fifo(kit: Kit, which: str) -> Path:
    """`index.json`, or the blob of S's manifest, replaced by a FIFO nobody writes to."""
    path = kit.root / "index.json" if which == "index.json" else kit.blob(kit.subject.digest)
    path.unlink()
    os.mkfifo(path)
    return path


def directory_blob(kit: Kit) -> Path:
    """S's manifest blob replaced by a folder."""
    path = kit.blob(kit.subject.digest)
    path.unlink()
    path.mkdir()
    return path


def symlink_out(kit: Kit, which: str) -> Path:
    """A symlink leading out of the layout: S's manifest blob to a copy outside, `index.json` to a
    copy outside, or the whole `blobs/sha256` folder to a folder outside (for writes), or S's
    blob to /dev/zero (a device). Returns the outside path."""
    if which == "device":
        path = kit.blob(kit.subject.digest)
        path.unlink()
        path.symlink_to("/dev/zero")
        return Path("/dev/zero")
    if which == "blobs-dir":
        target = kit.outside / "blobs-sha256"
        src = kit.root / "blobs" / "sha256"
        os.rename(src, target)
        src.symlink_to(target)
        return target
    path = kit.root / "index.json" if which == "index.json" else kit.blob(kit.subject.digest)
    target = kit.outside / path.name
    os.rename(path, target)
    path.symlink_to(target)
    return target


def lock_symlink(kit: Kit) -> Path:
    """The index lock file planted as a symlink to a victim file outside (which an O_TRUNC open
    following it would empty)."""
    victim = kit.outside / "victim.txt"
    victim.write_text("precious\n")
    lock = kit.root / ".index.json.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim)
    return victim


def bad_ref_name(kit: Kit, name: str = "v1\nforged line") -> None:
    """An index.json entry whose ref.name is outside the grammar."""
    kit.add_entry({"mediaType": OCI_MANIFEST, "digest": kit.other.digest, "size": kit.other.size,
                   "annotations": {ANNOTATION_REF_NAME: name}})


def bad_title(kit: Kit, title: str = "../escaped.txt", tag: str = "titled") -> Descriptor:
    """A manifest (tagged `tag`) whose one layer's title is outside the title grammar."""
    data = b"payload"
    layer = {"mediaType": "application/octet-stream", "digest": kit.put_blob(data), "size": len(data),
             "annotations": {"org.opencontainers.image.title": title}}
    desc = kit.manifest(artifact_type="application/x.titled", layers=[layer], listed=False)
    kit.store.tag(desc, tag)
    return desc


# -- bounds ------------------------------------------------------------------------------------
@dataclass
class Spent:
    seconds: float = 0.0
    peak_mb: float = 0.0
    """Growth of the process's peak resident memory over the block (MiB)."""


def _status_kb(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise LookupError(field_name)


@contextlib.contextmanager
def bounded(seconds: float = 5.0, mb: float = 150.0) -> Iterator[Spent]:
    """Run the block and fail past `seconds` of wall time or `mb` of growth of the process's peak
    resident memory (Linux: the peak, VmHWM, is reset before the block through clear_refs, so any
    body read whole inside it shows; elsewhere the peak of Python allocations, by tracemalloc)."""
    spent = Spent()
    try:
        Path("/proc/self/clear_refs").write_text("5")
        base, traced = _status_kb("VmRSS"), False
    except OSError:
        base, traced = 0, True
        tracemalloc.start()
    t0 = time.monotonic()
    try:
        yield spent
    finally:
        spent.seconds = time.monotonic() - t0
        if traced:
            spent.peak_mb = tracemalloc.get_traced_memory()[1] / MiB
            tracemalloc.stop()
        else:
            spent.peak_mb = (_status_kb("VmHWM") - base) / 1024
    assert spent.seconds < seconds, f"took {spent.seconds:.1f}s (bound {seconds}s)"
    assert spent.peak_mb < mb, f"peak grew by {spent.peak_mb:.0f} MB (bound {mb} MB)"
