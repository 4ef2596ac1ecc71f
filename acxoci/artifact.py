"""Domain glue between ACX artifacts and OCI: detect a cartridge, workflow or Agent Graph file (by
SQLite magic or the JSON document's schemaVersion; anything else is refused), lint and verify it
before push and after pull, gather the facts for `oci.shapes`, and push/pull through any `Target`.
A pulled file reaches its final path only after its digest was proven, its content matched the
artifact type, and (unless disabled) the artifact verified."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.trust import TrustRegistry
from acxoci.errors import InvalidInput, RefusedByPolicy, Tampered, UsageError
from acxoci.fsutil import FileIdentity, file_identity, identity_of, open_regular, require_unchanged
from acxoci.oci.descriptor import EMPTY_DATA, EMPTY_DIGEST, EMPTY_JSON, Descriptor, Manifest, valid_title
from acxoci.oci.digest import file_descriptor
from acxoci.oci.scheduler import (
    DEFAULT_PULL_CONCURRENCY,
    DEFAULT_PUSH_CONCURRENCY,
    BlobScheduler,
    TransferCancelled,
)
from acxoci.oci.shapes import (
    ANNOTATION_ROM_HASH,
    CARTRIDGE_ARTIFACT_TYPE,
    CARTRIDGE_LAYER_TYPE,
    GRAPH_ARTIFACT_TYPE,
    GRAPH_LAYER_TYPE,
    WORKFLOW_ARTIFACT_TYPE,
    WORKFLOW_LAYER_TYPE,
    Built,
    cartridge_manifest,
    graph_manifest,
    workflow_manifest,
)
from acxoci.oci.staging import fetch_staged, resumable, staging_path
from acxoci.oci.target import Target, fetch_manifest, resolve_manifest

Kind = Literal["cartridge", "workflow", "agent-graph"]
#: schemaVersion of a JSON document -> its ACX kind (everything else is not pushed as ACX).
JSON_KINDS: dict[str, Kind] = {"acx.cal/1": "workflow", "acx.agent-graph/1": "agent-graph"}
#: The largest JSON artifact read for detection and verification.
MAX_JSON_ARTIFACT = 64 * 1024 * 1024
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
    # the file's identity when gathered: whoever reads it again checks it still holds
    identity: FileIdentity | None = field(default=None, compare=False)


def describe_json(doc: Any) -> str:
    """What a JSON document that is not an ACX workflow or graph looks like (for the refusal)."""
    if not isinstance(doc, dict):
        return f"a JSON {type(doc).__name__}, not an object"
    sv = doc.get("schemaVersion")
    if isinstance(sv, str):
        return f"a document with schemaVersion {sv[:80]!r}"
    types = doc.get("type")
    if "@context" in doc and (isinstance(types, list | str)):
        shown = [t for t in (types if isinstance(types, list) else [types]) if isinstance(t, str)][:4]
        return f"a JSON-LD document of type {shown} (a credential or status list, pushed with `acx attach`)"
    keys = sorted(str(k)[:40] for k in doc)[:8]
    return f"a JSON object without schemaVersion (keys {keys})"


def _read_json(path: Path) -> Any:
    with open_regular(path, "file") as fh:
        data = fh.read(MAX_JSON_ARTIFACT + 1)
    if len(data) > MAX_JSON_ARTIFACT:
        raise InvalidInput(f"JSON artifact exceeds {MAX_JSON_ARTIFACT} bytes", where=str(path))
    try:
        return loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=str(path)) from exc


def json_kind(doc: Any, where: str) -> Kind:
    """The ACX kind named by a JSON document's schemaVersion; InvalidInput naming what was found."""
    if (
        isinstance(doc, dict)
        and isinstance(doc.get("schemaVersion"), str)
        and doc["schemaVersion"] in JSON_KINDS
    ):
        return JSON_KINDS[doc["schemaVersion"]]
    raise InvalidInput(
        "not an ACX artifact: expected a cartridge (SQLite), a workflow (acx.cal/1) or an agent graph "
        f"(acx.agent-graph/1), found {describe_json(doc)}",
        where=where,
    )


def detect_kind(path: Path) -> Kind:
    """`cartridge` for an SQLite file; for JSON, the kind its schemaVersion names. InvalidInput
    (naming what was found) for anything else, so no JSON object is ever pushed as a workflow."""
    with open_regular(path, "file") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        return "cartridge"
    if head.lstrip()[:1] in (b"{", b"["):
        return json_kind(_read_json(path), str(path))
    raise InvalidInput("neither a cartridge (SQLite) nor a JSON workflow or agent graph", where=str(path))


def kind_of_manifest(m: Manifest) -> Kind | None:
    """The ACX kind of a pulled manifest, from artifactType or layer media type."""
    types = {m.artifact_type, *(layer.media_type for layer in m.layers)}
    if CARTRIDGE_ARTIFACT_TYPE in types or CARTRIDGE_LAYER_TYPE in types:
        return "cartridge"
    if WORKFLOW_ARTIFACT_TYPE in types or WORKFLOW_LAYER_TYPE in types:
        return "workflow"
    if GRAPH_ARTIFACT_TYPE in types or GRAPH_LAYER_TYPE in types:
        return "agent-graph"
    return None


def _verify_cartridge(
    path: Path, registry: TrustRegistry | None, now: datetime, identity: FileIdentity | None = None
) -> tuple[dict[str, Any], Any]:
    """Verify a cartridge file (Tampered when rejected); with `identity`, the file opened must be
    that one (not a file swapped in since it was hashed)."""
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.cartridge.verify import verify_open

    with open_cartridge(path) as cart:
        if identity is not None and cart.identity != identity:
            raise InvalidInput("the file changed while it was being verified; refusing it", where=str(path))
        v = verify_open(cart, registry=registry, now=now)
    if v.rejected:
        raise Tampered(
            f"cartridge does not verify: {v.summary}" + (f" ({v.issues[0]})" if v.issues else ""),
            where=str(path), details={"verdict": v.to_json()}
        )
    return v.to_json(), v


def _verify_document(
    kind: Kind, doc: dict[str, Any], path: Path, registry: TrustRegistry | None, now: datetime
) -> dict[str, Any]:
    """Verify a workflow or agent graph document (Tampered when rejected); its verdict as JSON."""
    if kind == "agent-graph":
        from acxoci.workflow.graph import verify_graph as verify
        what = "agent graph"
    else:
        from acxoci.workflow.verify import verify_workflow as verify
        what = "workflow"
    v = verify(doc, registry=registry, now=now)
    if v.rejected:
        raise Tampered(
            f"{what} does not verify: {v.summary}", where=str(path), details={"verdict": v.to_json()}
        )
    return v.to_json()


#: The signer trusts that meet each `--require` (the order `cartridge verify --require` uses).
MEETS: dict[str, frozenset[str]] = {"portable": frozenset({"portable", "trusted", "local"}),
                                    "trusted": frozenset({"trusted", "local"})}


def require_trust(verdict: dict[str, Any] | None, minimum: str | None, where: str) -> None:
    """RefusedByPolicy (exit 8) when a verified artifact's signer trust is below `minimum`
    (portable or trusted): `pull`/`push --require`, meaning what `cartridge verify --require` means."""
    if minimum is None or verdict is None:
        return
    trust = verdict.get("trust")
    if trust not in MEETS[minimum]:
        why = verdict.get("summary") or ""
        raise RefusedByPolicy(
            f"signer trust is {trust}, below the required {minimum}" + (f": {why}" if why else ""),
            where=where,
            hint="trust the signer's key (acx key trust) or pass --require portable to accept a valid "
            "signature nobody vouches for", details={"verdict": verdict})


def check_before_push(
    kind: Kind, doc: dict[str, Any], path: Path, registry: TrustRegistry | None, now: datetime
) -> dict[str, Any]:
    """A workflow or graph is pushed only when it lints (with the publish profile, which signing
    requires), is signed, and its signature verifies; otherwise a typed refusal naming why."""
    from acxoci.workflow.graph import lint_graph
    from acxoci.workflow.lint import lint

    label = "agent graph" if kind == "agent-graph" else "workflow"
    result = (lint_graph if kind == "agent-graph" else lint)(doc, publish=True)
    if not result.ok:
        raise InvalidInput(
            f"{label} does not lint ({len(result.errors)} issue(s)): "
            + "; ".join(i.text() for i in result.errors[:3]),
            where=str(path),
            details={"issues": [i.to_json() for i in result.errors[:100]]},
        )
    verdict = _verify_document(kind, doc, path, registry, now)
    if not verdict.get("signed"):
        raise RefusedByPolicy(
            f"{label} is unsigned; sign it first (acx {'graph' if kind == 'agent-graph' else 'workflow'} "
            "sign) or pass --no-verify",
            where=str(path),
            details={"verdict": verdict},
        )
    return verdict


def _load_workflow(path: Path, kind: Kind = "workflow") -> dict[str, Any]:
    doc = _read_json(path)
    found = json_kind(doc, str(path))
    if found != kind:
        raise Tampered(f"content is an ACX {found}, but it arrived as an ACX {kind}", where=str(path))
    assert isinstance(doc, dict)
    return doc


def gather(
    path: Path, *, verify: bool, registry: TrustRegistry | None, now: datetime, digest: bool = True,
    minimum: str | None = None,
) -> ArtifactFacts:
    """Detect, optionally verify (refusing a rejected artifact, or one whose signer trust is below
    `minimum`), and collect the manifest facts. `digest=False` leaves `facts.digest` empty for a
    caller that hashes while uploading."""
    title = path.name
    # every read goes through the real path: a symlink retargeted between two reads (hash one
    # file, verify another) would leave the file's own identity, ctime included, untouched
    path = path.resolve()
    identity = file_identity(path)  # digest, verdict and later reads must all be of this file
    kind = detect_kind(path)
    size = identity[2]
    file_dgst = file_descriptor(path, "application/octet-stream").digest if digest else ""
    if kind == "cartridge":
        verdict_json: dict[str, Any] | None = None
        rom: str | None = None
        signed_at: str | None = None
        if verify:
            verdict_json, v = _verify_cartridge(path, registry, now, identity)
            require_trust(verdict_json, minimum, str(path))
            rom, signed_at = v.rom_digest, v.signed_at
        elif size <= NO_VERIFY_FACTS_LIMIT:
            # --no-verify: the ROM hash and signing time are still wanted as annotations (best effort)
            try:
                from acxoci.cartridge.verify import verify_cartridge

                v = verify_cartridge(path, registry=registry, now=now)
                rom, signed_at = v.rom_digest, v.signed_at
            except Exception:
                pass
        require_unchanged(path, identity, doing="it was being hashed and verified")
        return ArtifactFacts(
            "cartridge",
            path,
            file_dgst,
            size,
            title,
            rom_digest=rom,
            signed_at=signed_at,
            verdict=verdict_json,
            identity=identity,
        )
    doc = _load_workflow(path, kind)
    wf_verdict = check_before_push(kind, doc, path, registry, now) if verify else None
    require_trust(wf_verdict, minimum, str(path))
    integrity = doc.get("integrity") if isinstance(doc.get("integrity"), dict) else {}
    assert isinstance(integrity, dict)
    wdigest: str | None = None
    try:
        from acxoci.workflow.signed import document_digest

        wdigest = document_digest(doc)
    except Exception:
        wdigest = None

    def s(v: object) -> str | None:
        return v if isinstance(v, str) and v else None

    file_dgst = file_dgst or wf_file_digest(path)
    require_unchanged(path, identity, doing="it was being hashed and verified")
    return ArtifactFacts(
        kind,
        path,
        file_dgst,
        size,
        title,
        signed_at=s(integrity.get("signedAt")),
        workflow_id=s(doc.get("id")),
        version=s(doc.get("version")),
        workflow_digest=wdigest,
        publisher=s(integrity.get("publisherId")),
        verdict=wf_verdict,
        identity=identity,
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
    if facts.kind == "agent-graph":
        return graph_manifest(
            file_digest=facts.digest,
            file_size=facts.size,
            title=facts.title,
            graph_id=facts.workflow_id,
            version=facts.version,
            graph_digest=facts.workflow_digest,
            publisher=facts.publisher,
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
    """A local file as an upload source that reports each piece read and stops (TransferCancelled)
    once another blob of its batch failed."""

    def __init__(
        self, fh: io.BufferedReader, desc: Descriptor, fn: ProgressFn | None, check: Callable[[], None]
    ) -> None:
        self._fh = fh
        self._desc = desc
        self._fn = fn
        self._check = check

    def read(self, n: int = -1, /) -> bytes:
        self._check()
        data = self._fh.read(n)
        if data and self._fn is not None:
            self._fn(self._desc, len(data))
        return data

    def readinto(self, buf: memoryview, /) -> int:
        self._check()
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


def _push_config(target: Target, config: Descriptor) -> None:
    if not target.exists(config):
        target.push(config, io.BytesIO(EMPTY_DATA))


def _push_layer(
    target: Target, layer: Descriptor, facts: ArtifactFacts, progress: ProgressFn | None,
    check: Callable[[], None],
) -> None:
    if not target.exists(layer):
        with facts.path.open("rb") as fh:
            if facts.identity is not None and identity_of(os.fstat(fh.fileno())) != facts.identity:
                raise InvalidInput("the file changed after it was verified; refusing to push it",
                                   where=str(facts.path))
            target.push(layer, _Progress(fh, layer, progress, check))
        if facts.identity is not None:  # written in place while uploading: the registry got other bytes
            require_unchanged(facts.path, facts.identity, doing="it was being pushed")


def push_file(
    target: Target,
    facts: ArtifactFacts,
    built: Built,
    tag: str | None,
    *,
    progress: ProgressFn | None = None,
    concurrency: int = DEFAULT_PUSH_CONCURRENCY,
    pushed: frozenset[str] = frozenset(),
) -> Descriptor:
    """Push config and the file layer `concurrency` at a time (skipping blobs already there, and
    those in `pushed`), then the manifest once every blob is in place, then tag."""
    config, layer = built.blobs[0], built.blobs[1]
    with BlobScheduler(concurrency) as sched:
        if config.digest not in pushed:
            sched.submit(_push_config, target, config)
        if layer.digest not in pushed:
            shown = Descriptor(layer.media_type, layer.digest, layer.size,
                               annotations={"org.opencontainers.image.title": facts.title})
            sched.submit(_push_layer, target, shown, facts, progress, sched.check)
    desc = Descriptor(built.descriptor.media_type, built.descriptor.digest, built.descriptor.size)
    target.push(desc, io.BytesIO(built.data))
    if tag:
        target.tag(desc, tag)
    return desc


def artifact_layer(m: Manifest, where: str) -> Descriptor:
    """The one content layer of an ACX artifact (or the single layer of any one-file artifact)."""
    known = [
        layer
        for layer in m.layers
        if layer.media_type in (CARTRIDGE_LAYER_TYPE, WORKFLOW_LAYER_TYPE, GRAPH_LAYER_TYPE)
    ]
    if len(known) == 1:
        return known[0]
    if len(m.layers) == 1:
        return m.layers[0]
    raise InvalidInput(f"manifest has {len(m.layers)} layers; expected one artifact layer", where=where)


def _check_arrived(path: Path, kind: Kind | None, where: str) -> None:
    """What arrived is what the artifact type says: a cartridge layer is SQLite, a workflow or
    graph layer is that JSON document (checked even with --no-verify; Tampered otherwise)."""
    if kind is None:
        return
    with open_regular(path, "pulled file", nofollow=True) as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if kind == "cartridge":
        if head != SQLITE_MAGIC:
            raise Tampered(
                "the artifact type says cartridge, but the layer is not an SQLite file", where=where
            )
        return
    if head == SQLITE_MAGIC:
        raise Tampered(f"the artifact type says {kind}, but the layer is an SQLite file", where=where)
    try:
        doc = _read_json(path)
        found = json_kind(doc, where)
    except InvalidInput as exc:
        raise Tampered(
            f"the artifact type says {kind}, but the layer is not: {exc.message}", where=where
        ) from None
    if found != kind:
        raise Tampered(f"the artifact type says {kind}, but the layer is an ACX {found}", where=where)


@dataclass(frozen=True)
class Pulled:
    """Result of a pull: manifest descriptor, the layer, where it was written, the verdict. A
    multi-file (non-ACX) artifact has no one `layer`; `path` is then its folder and `files`
    lists every (layer, path) written."""

    manifest: Descriptor
    layer: Descriptor | None
    path: Path
    kind: Kind | None
    verdict: dict[str, Any] | None
    files: tuple[tuple[Descriptor, Path], ...] = ()


def _safe_title(title: str | None, fallback: str) -> str:
    name = title or fallback  # held to the grammar as written: a title with a path is refused, not cut
    if not valid_title(name):  # the one title grammar (oci/descriptor.py): a plain file name
        raise InvalidInput(f"unsafe file name in the title annotation: {(title or '')[:80]!r}", where="layer")
    return name


TITLE = "org.opencontainers.image.title"


def _destinations(m: Manifest, kind: Kind | None, out: Path, where: str) -> list[tuple[Descriptor, Path]]:
    """Where each pulled layer goes: an ACX artifact's one artifact layer (or any one-layer
    artifact) to `out` or `out/<title>`; every layer of a multi-file artifact (as `oras push
    REF a.txt b.txt` makes) to `out/<title>`, `out` being a folder, each title safe and unique."""
    if kind is not None or len(m.layers) <= 1:
        layer = artifact_layer(m, where)
        if not out.is_dir():
            return [(layer, out)]
        fallback = {"cartridge": "artifact.acx", "agent-graph": "artifact.agent-graph.json"}.get(
            kind or "", "artifact.cal.json"
        )
        return [(layer, out / _safe_title(layer.annotations.get(TITLE), fallback))]
    if out.exists() and not out.is_dir():
        raise UsageError(f"the artifact has {len(m.layers)} files; -o must name a folder", where=str(out))
    dests: list[tuple[Descriptor, Path]] = []
    names: set[str] = set()
    for i, layer in enumerate(m.layers):
        title = layer.annotations.get(TITLE)
        if not title:
            raise InvalidInput(f"layer {i} of a multi-file artifact has no title to name its file",
                               where=f"{where} layers[{i}]")
        name = _safe_title(title, "")
        if name != title:  # a path (an oras folder layer, or a way out of -o): not a file name
            raise InvalidInput(f"layer title {title[:80]!r} is not a plain file name",
                               where=f"{where} layers[{i}]")
        if name.casefold() in names:
            raise InvalidInput(f"two layers are both titled {name!r}", where=f"{where} layers[{i}]")
        names.add(name.casefold())
        dests.append((layer, out / name))
    return dests


def pull_file(
    target: Target,
    reference: str,
    out: Path,
    *,
    verify: bool,
    registry: TrustRegistry | None,
    now: datetime,
    progress: ProgressFn | None = None,
    concurrency: int = DEFAULT_PULL_CONCURRENCY,
    minimum: str | None = None,
) -> Pulled:
    """Resolve, fetch the manifest, stream its layers (`concurrency` at a time) each into a
    digest-named staging file beside its destination (digest-checked), verify the artifact, then
    rename everything into place: nothing reaches a final name before every digest was proven.
    On a failure nothing is left behind but the staging files a rerun can resume (oci/staging.py)."""
    desc = resolve_manifest(target, reference)  # one GET: the digest is the hash of the body used
    m = fetch_manifest(target, desc)
    where = f"{target.name}@{desc.digest}"
    kind = kind_of_manifest(m)
    if verify and kind is None:
        raise RefusedByPolicy("not an ACX artifact; pass --no-verify to pull it anyway", where=where)
    dests = _destinations(m, kind, out, where)
    created: list[Path] = []  # folders this pull made, removed again if it fails and they stay empty
    for _, dest in dests:
        missing = [p for p in (dest.parent, *dest.parent.parents) if not p.exists()]
        dest.parent.mkdir(parents=True, exist_ok=True)
        created.extend(p for p in missing if p not in created)
    blobs: dict[str, tuple[Descriptor, Path]] = {}
    for layer, dest in dests:  # one download per digest, staged beside (the first of) its files
        blobs.setdefault(layer.digest, (layer, staging_path(dest.parent, layer)))
    staged: dict[str, Path] = {}
    made: list[Path] = []
    sched = BlobScheduler(concurrency, name="acx-pull")

    def keep(exc: BaseException) -> bool:
        """A transfer stopped because another blob failed keeps its bytes when that failure is
        one a rerun can get past (transient, interrupt)."""
        if resumable(exc):
            return True
        first = sched.failure
        return isinstance(exc, TransferCancelled) and (first is None or resumable(first))

    def fetch_one(layer: Descriptor, tmp: Path) -> None:
        def moved(n: int) -> None:
            sched.check()
            if progress is not None:
                progress(layer, n)

        staged[layer.digest] = fetch_staged(target, layer, tmp, moved, keep)

    try:
        with sched:
            for layer, tmp in blobs.values():
                sched.submit(fetch_one, layer, tmp)
        verdict: dict[str, Any] | None = None
        if len(dests) == 1:
            layer, _ = dests[0]
            tmp = staged[layer.digest]
            _check_arrived(tmp, kind, layer.digest)
            if verify and kind == "cartridge":
                verdict, v = _verify_cartridge(tmp, registry, now)
                want = layer.annotations.get(ANNOTATION_ROM_HASH)
                if want and v.rom_digest and want != v.rom_digest:
                    raise Tampered(
                        f"layer annotation says ROM {want}, cartridge has {v.rom_digest}", where=layer.digest
                    )
            elif verify and kind in ("workflow", "agent-graph"):
                assert kind is not None
                verdict = _verify_document(kind, _load_workflow(tmp, kind), tmp, registry, now)
            require_trust(verdict, minimum, where)  # below --require: refused before any rename
        # every digest is proven: now (and only now) the files take their names
        moves: list[tuple[Path, Path]] = []
        used: set[str] = set()
        for layer, dest in dests:
            src = staged[layer.digest]
            if layer.digest in used:  # the same bytes under a second name: a copy of the proven file
                fd, name = tempfile.mkstemp(prefix=".acx-copy-", dir=str(dest.parent))
                os.close(fd)
                made.append(Path(name))
                shutil.copyfile(src, name)
                src = Path(name)
            used.add(layer.digest)
            moves.append((src, dest))
        for src, dest in moves:
            os.chmod(src, 0o644)
            os.replace(src, dest)
    except BaseException as exc:
        if not resumable(exc):  # proven bytes that failed a later check, or a lie: nothing stays
            for path in [*staged.values(), *made]:
                path.unlink(missing_ok=True)
        else:
            for path in made:
                path.unlink(missing_ok=True)
        for folder in created:  # deepest first; one holding a resumable staging file stays
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    files = tuple(dests)
    if len(dests) == 1:
        return Pulled(replace(desc, data=None), dests[0][0], dests[0][1], kind, verdict, files)
    return Pulled(replace(desc, data=None), None, out, kind, verdict, files)


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
    concurrency: int = DEFAULT_PUSH_CONCURRENCY,
    minimum: str | None = None,
) -> tuple[Descriptor, ArtifactFacts, Built]:
    """gather + build + push_file in one call, the blobs `concurrency` at a time. A large file
    going to a registry is hashed while it uploads (one read pass saved), the config going up
    beside it; everything else takes the plain path."""
    from acxoci.oci.registry import RegistryTarget

    size = path.stat().st_size
    if not isinstance(target, RegistryTarget) or size <= HASH_WHILE_UPLOADING:
        facts = gather(path, verify=verify, registry=registry, now=now, minimum=minimum)
        built = build(facts, created)
        desc = push_file(target, facts, built, tag, progress=progress, concurrency=concurrency)
        return desc, facts, built
    facts = gather(path, verify=verify, registry=registry, now=now, digest=False, minimum=minimum)
    media = {"cartridge": CARTRIDGE_LAYER_TYPE, "agent-graph": GRAPH_LAYER_TYPE}.get(
        facts.kind, WORKFLOW_LAYER_TYPE
    )
    config = Descriptor(EMPTY_JSON, EMPTY_DIGEST, len(EMPTY_DATA))
    pending = Descriptor(media, "sha256:" + "0" * 64, size,
                         annotations={"org.opencontainers.image.title": path.name})
    with BlobScheduler(concurrency) as sched:
        fn = progress

        def moved(n: int) -> None:
            sched.check()
            if fn is not None:
                fn(pending, n)

        target.progress = moved
        try:
            sched.submit(_push_config, target, config)
            # facts.path: the real path gather verified
            hashed = sched.submit(target.push_file_hashing, facts.path, media)
            sched.settle()
        finally:
            target.progress = None
    layer = hashed.result()
    if facts.identity is not None:  # the bytes uploaded and hashed were those verified
        require_unchanged(facts.path, facts.identity, doing="it was being pushed")
    facts = replace(facts, digest=layer.digest)
    built = build(facts, created)
    desc = push_file(target, facts, built, tag, pushed=frozenset({config.digest, layer.digest}))
    return desc, facts, built
