"""Domain glue between ACX artifacts and OCI: detect a cartridge or workflow file, verify it
before push and after pull (cartridge/workflow verifiers), gather the facts for `oci.shapes`,
and push/pull through any `Target`. A pulled file reaches its final path only after its
digest was proven and (unless disabled) the artifact verified."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from acxoci.errors import InvalidInput, NotFound, RefusedByPolicy, Tampered
from acxoci.oci.descriptor import EMPTY_DATA, Descriptor, Manifest
from acxoci.oci.digest import file_descriptor
from acxoci.oci.shapes import (
    ANNOTATION_ROM_HASH,
    CARTRIDGE_ARTIFACT_TYPE,
    CARTRIDGE_LAYER_TYPE,
    WORKFLOW_ARTIFACT_TYPE,
    WORKFLOW_LAYER_TYPE,
    Built,
    cartridge_manifest,
    workflow_manifest,
)
from acxoci.oci.staging import fetch_staged, staging_path
from acxoci.oci.target import Target, fetch_manifest
from attest.canonical import loads_strict
from attest.errors import MalformedError
from attest.trust import TrustRegistry

Kind = Literal["cartridge", "workflow"]
SQLITE_MAGIC = b"SQLite format 3\x00"
EPOCH = "1970-01-01T00:00:00Z"
NO_VERIFY_FACTS_LIMIT = 64 * 1024 * 1024
ProgressFn = Callable[[Descriptor, int], None]


@dataclass(frozen=True)
class ArtifactFacts:
    """What push needs to know about a local artifact file (and what verification said)."""

    kind: Kind
    path: Path
    digest: str
    size: int
    title: str
    rom_digest: str | None = None
    signed_at: str | None = None
    workflow_id: str | None = None
    version: str | None = None
    workflow_digest: str | None = None
    publisher: str | None = None
    verdict: dict[str, Any] | None = field(default=None, compare=False)


def detect_kind(path: Path) -> Kind:
    """`cartridge` for an SQLite file, `workflow` for a JSON object document; InvalidInput otherwise."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        raise NotFound("file not found", where=str(path)) from None
    if head == SQLITE_MAGIC:
        return "cartridge"
    if head.lstrip()[:1] == b"{":
        return "workflow"
    raise InvalidInput("neither a cartridge (SQLite) nor a workflow (.cal.json)", where=str(path))


def kind_of_manifest(m: Manifest) -> Kind | None:
    """The ACX kind of a pulled manifest, from artifactType or layer media type."""
    types = {m.artifact_type, *(layer.media_type for layer in m.layers)}
    if CARTRIDGE_ARTIFACT_TYPE in types or CARTRIDGE_LAYER_TYPE in types:
        return "cartridge"
    if WORKFLOW_ARTIFACT_TYPE in types or WORKFLOW_LAYER_TYPE in types:
        return "workflow"
    return None


def _verify_cartridge(
    path: Path, registry: TrustRegistry | None, now: datetime
) -> tuple[dict[str, Any], Any]:
    from acxoci.cartridge.verify import verify_cartridge

    v = verify_cartridge(path, registry=registry, now=now)
    if v.rejected:
        raise Tampered(
            f"cartridge does not verify: {v.summary}", where=str(path), details={"verdict": v.to_json()}
        )
    return v.to_json(), v


def _verify_workflow(
    doc: dict[str, Any], path: Path, registry: TrustRegistry | None, now: datetime
) -> dict[str, Any]:
    from acxoci.workflow.verify import verify_workflow

    v = verify_workflow(doc, registry=registry, now=now)
    if v.rejected:
        raise Tampered(
            f"workflow does not verify: {v.summary}", where=str(path), details={"verdict": v.to_json()}
        )
    return v.to_json()


def _load_workflow(path: Path) -> dict[str, Any]:
    try:
        doc = loads_strict(path.read_bytes())
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc
    if not isinstance(doc, dict):
        raise InvalidInput("workflow document is not a JSON object", where=str(path))
    return doc


def gather(
    path: Path, *, verify: bool, registry: TrustRegistry | None, now: datetime, digest: bool = True
) -> ArtifactFacts:
    """Detect, optionally verify (refusing a rejected artifact), and collect the manifest facts.
    `digest=False` leaves `facts.digest` empty for a caller that hashes while uploading."""
    kind = detect_kind(path)
    size = path.stat().st_size
    file_dgst = file_descriptor(path, "application/octet-stream").digest if digest else ""
    title = path.name
    if kind == "cartridge":
        verdict_json: dict[str, Any] | None = None
        rom: str | None = None
        signed_at: str | None = None
        if verify:
            verdict_json, v = _verify_cartridge(path, registry, now)
            rom, signed_at = v.rom_digest, v.signed_at
        elif size <= NO_VERIFY_FACTS_LIMIT:
            # --no-verify: the ROM hash and signing time are still wanted as annotations (best effort)
            try:
                from acxoci.cartridge.verify import verify_cartridge

                v = verify_cartridge(path, registry=registry, now=now)
                rom, signed_at = v.rom_digest, v.signed_at
            except Exception:
                pass
        return ArtifactFacts(
            "cartridge",
            path,
            file_dgst,
            size,
            title,
            rom_digest=rom,
            signed_at=signed_at,
            verdict=verdict_json,
        )
    doc = _load_workflow(path)
    wf_verdict = _verify_workflow(doc, path, registry, now) if verify else None
    integrity = doc.get("integrity") if isinstance(doc.get("integrity"), dict) else {}
    assert isinstance(integrity, dict)
    wdigest: str | None = None
    try:
        from acxoci.workflow.sign import workflow_digest

        wdigest = workflow_digest(doc)
    except Exception:
        wdigest = None

    def s(v: object) -> str | None:
        return v if isinstance(v, str) and v else None

    return ArtifactFacts(
        "workflow",
        path,
        file_dgst or wf_file_digest(path),
        size,
        title,
        signed_at=s(integrity.get("signedAt")),
        workflow_id=s(doc.get("id")),
        version=s(doc.get("version")),
        workflow_digest=wdigest,
        publisher=s(integrity.get("publisherId")),
        verdict=wf_verdict,
    )


def wf_file_digest(path: Path) -> str:
    """Digest of a (small) workflow file."""
    return file_descriptor(path, "application/octet-stream").digest


def build(facts: ArtifactFacts, created: str | None = None) -> Built:
    """The OCI manifest for the artifact; `created` defaults to its signing time (else the epoch),
    so pushing the same file twice yields the same manifest digest."""
    when = created or facts.signed_at or EPOCH
    if facts.kind == "cartridge":
        return cartridge_manifest(
            file_digest=facts.digest,
            file_size=facts.size,
            title=facts.title,
            rom_digest=facts.rom_digest,
            created=when,
        )
    return workflow_manifest(
        file_digest=facts.digest,
        file_size=facts.size,
        title=facts.title,
        workflow_id=facts.workflow_id,
        version=facts.version,
        workflow_digest=facts.workflow_digest,
        publisher=facts.publisher,
        created=when,
    )


class _Progress:
    def __init__(self, fh: io.BufferedReader, desc: Descriptor, fn: ProgressFn | None) -> None:
        self._fh = fh
        self._desc = desc
        self._fn = fn

    def read(self, n: int = -1, /) -> bytes:
        data = self._fh.read(n)
        if data and self._fn is not None:
            self._fn(self._desc, len(data))
        return data

    def readinto(self, buf: memoryview, /) -> int:
        n = self._fh.readinto(buf)
        if n and self._fn is not None:
            self._fn(self._desc, n)
        return n

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._fh.seek(pos, whence)

    def tell(self) -> int:
        return self._fh.tell()


def push_file(
    target: Target, facts: ArtifactFacts, built: Built, tag: str | None, *, progress: ProgressFn | None = None
) -> Descriptor:
    """Push config, the file layer and the manifest (skipping blobs already there), then tag."""
    config = built.blobs[0]
    if not target.exists(config):
        target.push(config, io.BytesIO(EMPTY_DATA))
    layer = built.blobs[1]
    if not target.exists(layer):
        with facts.path.open("rb") as fh:
            target.push(layer, _Progress(fh, layer, progress))
    desc = Descriptor(built.descriptor.media_type, built.descriptor.digest, built.descriptor.size)
    target.push(desc, io.BytesIO(built.data))
    if tag:
        target.tag(desc, tag)
    return desc


def artifact_layer(m: Manifest, where: str) -> Descriptor:
    """The one content layer of an ACX artifact (or the single layer of any one-file artifact)."""
    known = [layer for layer in m.layers if layer.media_type in (CARTRIDGE_LAYER_TYPE, WORKFLOW_LAYER_TYPE)]
    if len(known) == 1:
        return known[0]
    if len(m.layers) == 1:
        return m.layers[0]
    raise InvalidInput(f"manifest has {len(m.layers)} layers; expected one artifact layer", where=where)


@dataclass(frozen=True)
class Pulled:
    """Result of a pull: manifest descriptor, the layer, where it was written, the verdict."""

    manifest: Descriptor
    layer: Descriptor
    path: Path
    kind: Kind | None
    verdict: dict[str, Any] | None


def _safe_title(title: str | None, fallback: str) -> str:
    name = os.path.basename(title or "") or fallback
    if name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise InvalidInput(f"unsafe file name in the title annotation: {title!r}", where="layer")
    return name


def pull_file(
    target: Target,
    reference: str,
    out: Path,
    *,
    verify: bool,
    registry: TrustRegistry | None,
    now: datetime,
    progress: ProgressFn | None = None,
) -> Pulled:
    """Resolve, fetch the manifest, stream the layer into a temp file beside `out` (digest-checked),
    verify the artifact, then rename into place. On any failure nothing is left behind."""
    desc = target.resolve(reference)
    m = fetch_manifest(target, desc)
    layer = artifact_layer(m, f"{target.name}@{desc.digest}")
    kind = kind_of_manifest(m)
    dest = out
    if out.is_dir():
        fallback = "artifact.acx" if kind == "cartridge" else "artifact.cal.json"
        dest = out / _safe_title(layer.annotations.get("org.opencontainers.image.title"), fallback)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_path(dest.parent, layer)
    fetched = False
    try:
        # a digest-named staging file: a pull cut off mid-blob resumes there (oci/staging.py)
        tmp = fetch_staged(target, layer, tmp, (lambda n: progress(layer, n)) if progress else None)
        fetched = True
        verdict: dict[str, Any] | None = None
        if verify and kind == "cartridge":
            verdict, v = _verify_cartridge(tmp, registry, now)
            want = layer.annotations.get(ANNOTATION_ROM_HASH)
            if want and v.rom_digest and want != v.rom_digest:
                raise Tampered(
                    f"layer annotation says ROM {want}, cartridge has {v.rom_digest}", where=layer.digest
                )
        elif verify and kind == "workflow":
            verdict = _verify_workflow(_load_workflow(tmp), tmp, registry, now)
        elif verify:
            raise RefusedByPolicy(
                "not an ACX artifact; pass --no-verify to pull it anyway",
                where=f"{target.name}@{desc.digest}",
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        if fetched:  # proven bytes that failed a later check: nothing stays (an unfinished fetch
            tmp.unlink(missing_ok=True)  # keeps its staging file only when it can resume)
        raise
    return Pulled(desc, layer, dest, kind, verdict)


HASH_WHILE_UPLOADING = 64 * 1024 * 1024
"""Files larger than this are hashed during a registry upload instead of in a separate pass."""


def push_path(
    target: Target,
    path: Path,
    tag: str | None,
    *,
    verify: bool,
    registry: TrustRegistry | None,
    now: datetime,
    created: str | None = None,
    progress: ProgressFn | None = None,
) -> tuple[Descriptor, ArtifactFacts, Built]:
    """gather + build + push_file in one call. A large file going to a registry is hashed
    while it uploads (one read pass saved); everything else takes the plain path."""
    from acxoci.oci.registry import RegistryTarget

    size = path.stat().st_size
    if not isinstance(target, RegistryTarget) or size <= HASH_WHILE_UPLOADING:
        facts = gather(path, verify=verify, registry=registry, now=now)
        built = build(facts, created)
        return push_file(target, facts, built, tag, progress=progress), facts, built
    facts = gather(path, verify=verify, registry=registry, now=now, digest=False)
    if progress is not None:
        fn = progress
        pending = Descriptor(CARTRIDGE_LAYER_TYPE, "sha256:" + "0" * 64, size,
                             annotations={"org.opencontainers.image.title": path.name})
        target.progress = lambda n: fn(pending, n)
    media = CARTRIDGE_LAYER_TYPE if facts.kind == "cartridge" else WORKFLOW_LAYER_TYPE
    layer = target.push_file_hashing(path, media)
    target.progress = None
    facts = replace(facts, digest=layer.digest)
    built = build(facts, created)
    return push_file(target, facts, built, tag), facts, built
