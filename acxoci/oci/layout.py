"""OCI image-layout 1.0 store (`oci-layout`, `index.json`, `blobs/<alg>/<hex>`), readable and
writable interchangeably with `oras --oci-layout`.

Like oras, every pushed manifest gets an `index.json` entry: tagged ones carry
`org.opencontainers.image.ref.name`, the rest (referrers, children) are untagged entries.
Referrers are found by scanning the listed manifests' `subject`. index.json updates are
serialised with a file lock and written atomically; blobs go to a temp file, are verified,
then renamed, so a reader never sees an unproven blob."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from acxoci.fsutil import atomic_write
from acxoci.oci.descriptor import (
    ANNOTATION_REF_NAME,
    MANIFEST_TYPES,
    OCI_INDEX,
    Descriptor,
    Manifest,
    is_digest,
    parse_manifest,
    referrer_entry,
)
from acxoci.oci.digest import Readable, VerifyingReader
from acxoci.oci.errors import BlobNotFound, LimitExceeded, MalformedManifest, ManifestNotFound, Unsupported
from acxoci.oci.reference import fallback_tag, valid_tag
from attest.canonical import loads_strict
from attest.errors import MalformedError

LAYOUT_FILE = "oci-layout"
LAYOUT_VERSION = {"imageLayoutVersion": "1.0.0"}


class LayoutStore:
    """One OCI image layout directory as a Target (see target.py for the contract)."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        self.root = Path(root)
        self._create = create
        self._manifest_cache: dict[str, Manifest] = {}

    # -- helpers ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"oci-layout:{self.root}"

    def _blob_path(self, digest: str) -> Path:
        if not is_digest(digest):
            raise MalformedManifest(f"invalid digest {digest!r}", where=self.name)
        alg, _, hexpart = digest.partition(":")
        return self.root / "blobs" / alg / hexpart

    def _lock(self) -> FileLock:
        return FileLock(str(self.root / ".index.json.lock"), timeout=60)

    def _ensure(self) -> None:
        if (self.root / LAYOUT_FILE).exists():
            return
        if not self._create:
            raise ManifestNotFound("not an OCI layout (no oci-layout file)", where=str(self.root))
        (self.root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        _atomic_write(self.root / LAYOUT_FILE, json.dumps(LAYOUT_VERSION).encode())
        if not (self.root / "index.json").exists():
            _atomic_write(
                self.root / "index.json",
                _index_bytes({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}),
            )

    def _read_index(self) -> dict[str, Any]:
        path = self.root / "index.json"
        if not path.exists():
            if not (self.root / LAYOUT_FILE).exists():
                raise ManifestNotFound("not an OCI layout (no index.json)", where=str(self.root))
            return {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
        try:
            obj = loads_strict(path.read_bytes())
        except MalformedError as exc:
            raise MalformedManifest(str(exc), where=str(path)) from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("manifests", []), list):
            raise MalformedManifest("index.json is not an image index", where=str(path))
        obj.setdefault("manifests", [])
        for i, entry in enumerate(obj["manifests"]):
            Descriptor.from_json(entry, f"{path}.manifests[{i}]")
        return obj

    def _update_index(self, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]) -> None:
        """Read-modify-write index.json under the file lock; `change` returns the new list or None."""
        self._ensure()
        with self._lock():
            index = self._read_index()
            new = change(list(index["manifests"]))
            if new is None:
                return
            index["manifests"] = new
            _atomic_write(self.root / "index.json", _index_bytes(index))

    def entries(self) -> list[Descriptor]:
        """All index.json entries (tagged and untagged)."""
        index = self._read_index()
        return [
            Descriptor.from_json(e, f"index.json.manifests[{i}]") for i, e in enumerate(index["manifests"])
        ]

    def _manifest(self, desc: Descriptor) -> Manifest | None:
        cached = self._manifest_cache.get(desc.digest)
        if cached is not None:
            return cached
        path = self._blob_path(desc.digest)
        if not path.exists():
            return None
        with self.fetch(desc) as reader:
            data = reader.read_all()
        m = parse_manifest(data, media_type=desc.media_type, where=str(path))
        self._manifest_cache[desc.digest] = m
        return m

    # -- Target ----------------------------------------------------------------------------
    def resolve(self, reference: str) -> Descriptor:
        """Tag (ref.name) or digest → descriptor (from index.json, else from the blob itself)."""
        entries = self.entries()
        if is_digest(reference):
            for e in entries:
                if e.digest == reference:
                    return Descriptor(e.media_type, e.digest, e.size, e.artifact_type, e.annotations)
            path = self._blob_path(reference)
            if path.exists() and path.stat().st_size <= 4 * 1024 * 1024:
                probe = Descriptor("application/octet-stream", reference, path.stat().st_size)
                with self.fetch(probe) as reader:
                    data = reader.read_all()
                m = parse_manifest(data, where=reference)
                return Descriptor(m.media_type, reference, len(data), m.artifact_type)
            raise ManifestNotFound(
                "no manifest with this digest in the layout", where=f"{self.name}@{reference}"
            )
        found: Descriptor | None = None
        for e in entries:
            if e.annotations.get(ANNOTATION_REF_NAME) == reference:
                found = e
        if found is None:
            raise ManifestNotFound("tag not found", where=f"{self.name}:{reference}")
        return Descriptor(
            found.media_type,
            found.digest,
            found.size,
            found.artifact_type,
            {k: v for k, v in found.annotations.items() if k != ANNOTATION_REF_NAME},
        )

    def fetch(self, desc: Descriptor) -> VerifyingReader:
        path = self._blob_path(desc.digest)
        try:
            fh = path.open("rb")
        except FileNotFoundError:
            raise BlobNotFound("blob not in the layout", where=f"{self.name}@{desc.digest}") from None
        return VerifyingReader(fh, desc, where=f"{self.name}@{desc.digest}", on_close=fh.close)

    def exists(self, desc: Descriptor) -> bool:
        path = self._blob_path(desc.digest)
        try:
            return path.stat().st_size == desc.size
        except FileNotFoundError:
            return False

    def push(self, desc: Descriptor, content: Readable) -> None:
        """Write the blob via a verified temp file; manifests are also listed in index.json."""
        self._ensure()
        path = self._blob_path(desc.digest)
        if not self.exists(desc):
            path.parent.mkdir(parents=True, exist_ok=True)
            if (
                isinstance(content, VerifyingReader)
                and content.desc.digest == desc.digest
                and content.desc.size == desc.size
            ):
                reader = content  # already verifying this descriptor: hash once, pipelined copy
            else:
                reader = VerifyingReader(content, desc, where=f"{self.name}@{desc.digest}")
            fd, tmp_name = tempfile.mkstemp(prefix=".", suffix=".part", dir=str(path.parent))
            tmp = Path(tmp_name)
            try:
                with os.fdopen(fd, "wb") as fh:
                    reader.copy_to(fh)
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        if desc.media_type in MANIFEST_TYPES:
            m = self._manifest(desc)
            if m is None:  # pragma: no cover - just written
                raise BlobNotFound("manifest vanished after write", where=desc.digest)
            entry = referrer_entry(desc, m).to_json()

            def add(entries: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
                if any(e.get("digest") == desc.digest for e in entries):
                    return None
                return [*entries, entry]

            self._update_index(add)

    def tag(self, desc: Descriptor, tag: str) -> None:
        """Point `tag` at `desc` (moves it if it pointed elsewhere; the old manifest stays untagged)."""
        if not valid_tag(tag):
            raise MalformedManifest(f"invalid tag {tag!r}", where=self.name)
        if not self.exists(desc):
            raise ManifestNotFound("cannot tag a manifest that is not in the layout", where=desc.digest)
        m = self._manifest(desc)
        base = referrer_entry(desc, m).to_json() if m is not None else desc.plain().to_json()

        def retag(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            for e in entries:
                name = (e.get("annotations") or {}).get(ANNOTATION_REF_NAME)
                if name == tag or (name is None and e.get("digest") == desc.digest):
                    continue
                out.append(e)
            tagged = dict(base)
            tagged["annotations"] = {**(base.get("annotations") or {}), ANNOTATION_REF_NAME: tag}
            out.append(tagged)
            listed = {e.get("digest") for e in out}
            for e in entries:  # a manifest that lost its last tag stays listed, untagged
                if e.get("digest") not in listed:
                    ann = {k: v for k, v in (e.get("annotations") or {}).items() if k != ANNOTATION_REF_NAME}
                    kept = {k: v for k, v in e.items() if k != "annotations"}
                    if ann:
                        kept["annotations"] = ann
                    out.append(kept)
                    listed.add(e.get("digest"))
            return out

        self._update_index(retag)

    def tags(self) -> list[str]:
        names = {e.annotations.get(ANNOTATION_REF_NAME) for e in self.entries()}
        return sorted(n for n in names if n)

    def referrers(self, desc: Descriptor, artifact_type: str | None = None) -> list[Descriptor]:
        """Listed manifests whose subject is `desc` (as oras lists them), merged with the entries of
        a `sha256-<hex>` fallback tag if the layout carries one (skopeo copies do): one listing for
        discover and verify. Fallback entries whose manifest is absent are kept (callers report
        them missing). At most MAX_REFERRERS entries (LimitExceeded past that)."""
        out: list[Descriptor] = []
        seen: set[str] = set()
        entries = self.entries()
        for e in entries:
            if e.media_type not in MANIFEST_TYPES or e.digest in seen:
                continue
            seen.add(e.digest)
            m = self._manifest(e)
            if m is None or m.subject is None or m.subject.digest != desc.digest:
                continue
            entry = referrer_entry(e.plain(), m)
            if artifact_type and entry.artifact_type != artifact_type:
                continue
            out.append(entry)
            _check_count(len(out), self.name)
        listed = {d.digest for d in out}
        for extra in self._fallback_entries(desc, entries):
            if extra.digest in listed:
                continue
            listed.add(extra.digest)
            if artifact_type and extra.artifact_type != artifact_type:
                m = self._manifest(extra) if extra.media_type in MANIFEST_TYPES else None
                if m is None or m.effective_artifact_type() != artifact_type:
                    continue
            out.append(extra)
            _check_count(len(out), self.name)
        return out

    def _fallback_entries(self, subject: Descriptor, entries: list[Descriptor]) -> list[Descriptor]:
        tag = fallback_tag(subject.digest)
        found = [e for e in entries if e.annotations.get(ANNOTATION_REF_NAME) == tag]
        if not found or not self.exists(found[-1]):
            return []
        index = self._manifest(found[-1])
        if index is None or not index.is_index:
            raise MalformedManifest(
                "referrers fallback tag does not hold an index", where=f"{self.name}:{tag}"
            )
        return [
            Descriptor(d.media_type, d.digest, d.size, d.artifact_type, d.annotations)
            for d in index.manifests
        ]

    def delete(self, desc: Descriptor) -> None:
        """Remove a manifest's index entries and its blob (blobs it references are left)."""
        if desc.media_type not in MANIFEST_TYPES:
            raise Unsupported("only manifests can be deleted from a layout", where=desc.digest)
        self._update_index(lambda entries: [e for e in entries if e.get("digest") != desc.digest])
        self._blob_path(desc.digest).unlink(missing_ok=True)
        self._manifest_cache.pop(desc.digest, None)


MAX_REFERRERS = 1000


def _check_count(n: int, where: str) -> None:
    if n > MAX_REFERRERS:
        raise LimitExceeded(f"more than {MAX_REFERRERS} referrers listed", where=where)


def _index_bytes(index: dict[str, Any]) -> bytes:
    return json.dumps(index, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _atomic_write(path: Path, data: bytes) -> None:
    atomic_write(path, data)
