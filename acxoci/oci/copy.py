"""`copy()`: one graph walk that moves a manifest, everything it references and (optionally) its
referrers between any two Targets (layout ↔ registry, registry ↔ registry, layout ↔ layout).

Children are copied before their parent so a destination never holds a manifest whose blobs
are missing; blobs the destination already has are skipped; registry→registry on one host
tries a cross-repository mount. With `referrers=True` referrers are followed recursively, and
cosign's legacy `sha256-<hex>.sig/.att/.sbom` tags are copied too (oras does not)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from acxoci.errors import NotFound
from acxoci.oci.descriptor import MANIFEST_TYPES, Descriptor, parse_manifest
from acxoci.oci.reference import fallback_tag
from acxoci.oci.target import ProgressFn, Target, fetch_bytes

COSIGN_LEGACY_SUFFIXES = (".sig", ".att", ".sbom")


@dataclass
class CopyReport:
    """What a copy did: root descriptor, blobs moved vs skipped, referrers and legacy tags copied."""

    root: Descriptor
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    referrers: list[str] = field(default_factory=list)
    legacy_tags: list[str] = field(default_factory=list)
    bytes_copied: int = 0


def _mount_hint(src: Target, dst: Target, desc: Descriptor) -> None:
    from acxoci.oci.registry import RegistryTarget

    if (
        isinstance(src, RegistryTarget)
        and isinstance(dst, RegistryTarget)
        and src.ref.api_host == dst.ref.api_host
        and src.repository != dst.repository
    ):
        dst.mount_from[desc.digest] = src.repository


def copy_graph(
    src: Target,
    dst: Target,
    root: Descriptor,
    report: CopyReport,
    progress: ProgressFn | None = None,
    _seen: set[str] | None = None,
) -> None:
    """Copy `root` and all it references (post-order), skipping what `dst` already has."""
    seen = _seen if _seen is not None else set()
    if root.digest in seen:
        return
    seen.add(root.digest)
    if root.media_type in MANIFEST_TYPES:
        data = fetch_bytes(src, root)
        m = parse_manifest(data, media_type=root.media_type, where=f"{src.name}@{root.digest}")
        if m.subject is None and dst.exists(root):
            report.skipped.append(root.digest)
            return
        for child in m.children():
            copy_graph(src, dst, child, report, progress, seen)
        plain = Descriptor(root.media_type, root.digest, root.size)
        dst.push(plain, io.BytesIO(data))
        report.copied.append(root.digest)
        return
    if dst.exists(root):
        report.skipped.append(root.digest)
        return
    _mount_hint(src, dst, root)
    with src.fetch(root) as reader:

        def count(n: int) -> None:
            report.bytes_copied += n
            if progress is not None:
                progress(root, n)

        reader.add_progress(count)
        dst.push(root, reader)
    report.copied.append(root.digest)


def copy(
    src: Target,
    dst: Target,
    ref: str,
    *,
    dst_tag: str | None = None,
    referrers: bool = True,
    progress: ProgressFn | None = None,
) -> CopyReport:
    """Copy the manifest at `ref` (tag or digest) from `src` to `dst`; tag it `dst_tag` (default:
    `ref` itself when it is a tag). With `referrers`, also every referrer (recursively) and
    cosign's legacy `.sig/.att/.sbom` tags."""
    root = src.resolve(ref)
    report = CopyReport(root=root)
    seen: set[str] = set()
    copy_graph(src, dst, root, report, progress, seen)
    tag = dst_tag if dst_tag is not None else (None if ref.startswith(("sha256:", "sha512:")) else ref)
    if tag:
        dst.tag(root, tag)
    if referrers:
        _copy_referrers(src, dst, root, report, progress, seen, set())
    return report


def _copy_referrers(
    src: Target,
    dst: Target,
    subject: Descriptor,
    report: CopyReport,
    progress: ProgressFn | None,
    seen: set[str],
    visited: set[str],
) -> None:
    if subject.digest in visited:
        return
    visited.add(subject.digest)
    for r in src.referrers(subject):
        copy_graph(src, dst, r.plain(), report, progress, seen)
        report.referrers.append(r.digest)
        _copy_referrers(src, dst, r.plain(), report, progress, seen, visited)
    base = fallback_tag(subject.digest)
    for suffix in COSIGN_LEGACY_SUFFIXES:
        tag = base + suffix
        try:
            legacy = src.resolve(tag)
        except NotFound:
            continue
        copy_graph(src, dst, legacy, report, progress, seen)
        dst.tag(legacy, tag)
        report.legacy_tags.append(tag)
