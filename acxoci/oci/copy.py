"""`copy()`: one graph walk that moves a manifest, everything it references and (optionally) its
referrers between any two Targets (layout ↔ registry, registry ↔ registry, layout ↔ layout).

Children are copied before their parent so a destination never holds a manifest whose blobs
are missing; blobs the destination already has are skipped; registry→registry on one host
tries a cross-repository mount; the blobs of a manifest move `concurrency` at a time (default 3,
like oras cp) through the one blob scheduler (scheduler.py) that push and pull use too. With
`referrers=True` referrers are followed, and cosign's legacy `sha256-<hex>.sig/.att/.sbom` tags
are copied too (oras does not). The referrers relayed are exactly the source's one listing
(`Target.referrer_listing`): a listed entry whose manifest names another subject is reported in
`CopyReport.strays` and never copied, so a source cannot plant a referrer on another artifact of
the destination; for the same reason a manifest reached as an index's child may not carry a
`subject` of its own (refused).

Both walks are iterative with a depth cap (`max_depth` levels of index nesting or of referrers
of referrers): a hostile graph ends in LimitExceeded, never in a RecursionError."""

from __future__ import annotations

import dataclasses
import io
import threading
from collections import deque
from dataclasses import dataclass, field

from acxoci.errors import NotFound
from acxoci.oci.descriptor import MANIFEST_TYPES, Descriptor, parse_manifest
from acxoci.oci.errors import LimitExceeded, MalformedManifest
from acxoci.oci.listing import check_attestation_layers
from acxoci.oci.reference import fallback_tag
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.scheduler import DEFAULT_COPY_CONCURRENCY, BlobScheduler
from acxoci.oci.target import ProgressFn, Target, fetch_bytes

COSIGN_LEGACY_SUFFIXES = (".sig", ".att", ".sbom")
DEFAULT_CONCURRENCY = DEFAULT_COPY_CONCURRENCY
MAX_DEPTH = 64
MAX_NODES = 100_000
"""Most manifests and blobs one copy visits."""


@dataclass
class CopyReport:
    """What a copy did: root descriptor, blobs moved vs skipped, referrers and legacy tags copied."""

    root: Descriptor
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    referrers: list[str] = field(default_factory=list)
    strays: list[dict[str, object]] = field(default_factory=list)
    legacy_tags: list[str] = field(default_factory=list)
    bytes_copied: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def _mount_hint(src: Target, dst: Target, desc: Descriptor) -> None:
    if (
        isinstance(src, RegistryTarget)
        and isinstance(dst, RegistryTarget)
        and src.ref.api_host == dst.ref.api_host
        and src.repository != dst.repository
    ):
        dst.mount_from[desc.digest] = src.repository


def _copy_blob(
    src: Target,
    dst: Target,
    desc: Descriptor,
    report: CopyReport,
    progress: ProgressFn | None,
    sched: BlobScheduler,
) -> None:
    if dst.exists(desc):
        with report._lock:
            report.skipped.append(desc.digest)
        return
    _mount_hint(src, dst, desc)
    with src.fetch(desc) as reader:

        def count(n: int) -> None:
            sched.check()  # another blob failed: stop this one at its next chunk
            with report._lock:
                report.bytes_copied += n
            if progress is not None:
                progress(desc, n)

        reader.add_progress(count)
        dst.push(desc, reader)
    with report._lock:
        report.copied.append(desc.digest)


def copy_graph(
    src: Target,
    dst: Target,
    root: Descriptor,
    report: CopyReport,
    progress: ProgressFn | None = None,
    _seen: set[str] | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_depth: int = MAX_DEPTH,
) -> None:
    """Copy `root` and all it references (post-order), skipping what `dst` already has."""
    seen = _seen if _seen is not None else set()
    # (descriptor, depth, manifest bytes once expanded)
    stack: list[tuple[Descriptor, int, bytes | None]] = [(root, 0, None)]
    with BlobScheduler(concurrency, name="acx-copy") as sched:
        while stack:
            desc, depth, data = stack.pop()
            if data is not None:  # post-order: every child is in place, push the manifest
                sched.settle()
                dst.push(Descriptor(desc.media_type, desc.digest, desc.size), io.BytesIO(data))
                report.copied.append(desc.digest)
                continue
            if desc.digest in seen:
                continue
            seen.add(desc.digest)
            if len(seen) > MAX_NODES:
                raise LimitExceeded(f"the graph has more than {MAX_NODES} nodes", where=src.name)
            if desc.media_type not in MANIFEST_TYPES:
                sched.submit(_copy_blob, src, dst, desc, report, progress, sched)
                continue
            if depth > max_depth:
                raise LimitExceeded(
                    f"indexes nest deeper than {max_depth} levels", where=f"{src.name}@{desc.digest}"
                )
            body = fetch_bytes(src, desc)
            m = parse_manifest(body, media_type=desc.media_type, where=f"{src.name}@{desc.digest}")
            if m.subject is not None and depth > 0:
                raise MalformedManifest(
                    f"an index's child names a subject ({m.subject.digest}): copying it would make it "
                    "a referrer of that artifact in the destination", where=f"{src.name}@{desc.digest}")
            if m.subject is None and dst.exists(desc):
                report.skipped.append(desc.digest)
                continue
            stack.append((desc, depth, body))
            for child in reversed(m.children()):
                stack.append((child, depth + 1, None))


def copy(
    src: Target,
    dst: Target,
    ref: str,
    *,
    dst_tag: str | None = None,
    referrers: bool = True,
    progress: ProgressFn | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_depth: int = MAX_DEPTH,
) -> CopyReport:
    """Copy the manifest at `ref` (tag or digest) from `src` to `dst`; tag it `dst_tag` (default:
    `ref` itself when it is a tag). With `referrers`, also every referrer (to `max_depth` levels)
    and cosign's legacy `.sig/.att/.sbom` tags."""
    root = src.resolve(ref)
    report = CopyReport(root=root)
    seen: set[str] = set()
    copy_graph(src, dst, root, report, progress, seen, concurrency=concurrency, max_depth=max_depth)
    tag = dst_tag if dst_tag is not None else (None if ref.startswith(("sha256:", "sha512:")) else ref)
    if tag:
        dst.tag(root, tag)
    if referrers:
        _copy_referrers(src, dst, root, report, progress, seen, concurrency, max_depth)
    return report


def _tags(src: Target) -> list[str]:
    """The source's tags (empty when it cannot list them: then no legacy tag is copied)."""
    try:
        return src.tags()
    except NotFound:
        return []


def _copy_referrers(
    src: Target,
    dst: Target,
    root: Descriptor,
    report: CopyReport,
    progress: ProgressFn | None,
    seen: set[str],
    concurrency: int,
    max_depth: int,
) -> None:
    """Breadth-first over referrers of referrers; a chain deeper than `max_depth` is refused."""
    visited: set[str] = set()
    queue: deque[tuple[Descriptor, int]] = deque([(root, 0)])
    legacy_tags: set[str] | None = None  # the source's tags, listed once when a subject needs them
    while queue:
        subject, depth = queue.popleft()
        if subject.digest in visited:
            continue
        visited.add(subject.digest)
        listing = src.referrer_listing(subject)
        report.strays += [{"subject": subject.digest, **s.to_json()} for s in listing.strays]
        found = listing.referrers
        if found and depth >= max_depth:
            raise LimitExceeded(
                f"referrers of referrers go deeper than {max_depth} levels",
                where=f"{src.name}@{subject.digest}",
            )
        for r in found:
            copy_graph(  # `r` carries its verified manifest bytes: not fetched again
                src, dst, r, report, progress, seen, concurrency=concurrency, max_depth=max_depth
            )
            report.referrers.append(r.digest)
            queue.append((r.plain(), depth + 1))
        base = fallback_tag(subject.digest)
        if legacy_tags is None:  # one tag listing instead of a lookup per suffix and subject
            legacy_tags = {t for t in _tags(src) if t.endswith(COSIGN_LEGACY_SUFFIXES)}
        for suffix in COSIGN_LEGACY_SUFFIXES:
            tag = base + suffix
            if tag not in legacy_tags:
                continue
            try:
                legacy = src.resolve(tag)
            except NotFound:
                continue
            if suffix == ".att":  # relayed only within the caps every attestation reader applies
                body = fetch_bytes(src, legacy)
                m = parse_manifest(body, media_type=legacy.media_type, where=f"{src.name}@{legacy.digest}")
                check_attestation_layers(m.layers, where=f"{src.name}:{tag} (manifest {legacy.digest})")
                legacy = dataclasses.replace(legacy, data=body)  # read once: copy_graph reuses the bytes
            copy_graph(src, dst, legacy, report, progress, seen, concurrency=concurrency, max_depth=max_depth)
            dst.tag(legacy.plain(), tag)
            report.legacy_tags.append(tag)
