"""The one seam between acxoci and OCI storage: the `Target` protocol, implemented by
`LayoutStore` (on-disk OCI image layout, the embedded default) and `RegistryTarget` (one
repository of any OCI 1.1 registry), plus small helpers that work on any Target.

Contract (every implementation):
- `fetch(desc)` returns a `VerifyingReader`: reading it to EOF proves digest and size, and it
  raises `DigestMismatch`/`SizeMismatch` (Tampered) otherwise. Use it as a context manager.
- `push(desc, content)` stores exactly `desc.size` bytes hashing to `desc.digest` (manifests too:
  manifest media types go to the manifest store). Pushing what exists is a cheap no-op.
- A manifest whose JSON has a `subject` becomes a referrer of that subject when pushed
  (layout: an untagged index.json entry; registry: Referrers API or the `sha256-<hex>` tag).
- `referrer_listing(desc)` is the one referrer rule (listing.py): candidates from every source
  the target has, each kept only when its own manifest's subject is `desc`, typed from that
  manifest; the rest are reported as strays. `referrers()` is its kept set, so no reader can
  see an entry that names another subject.
- Errors are `acxoci.oci.errors` types (NotFound, AuthError, Tampered, TransientError, ...).

Typical use:
    target, ref = open_target("oci-layout:./store:v1")           # or "127.0.0.1:5000/acx/demo:v1"
    desc = target.resolve(ref.reference or "latest")
    manifest = fetch_manifest(target, desc)
    for child in manifest.children(): ...
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from acxoci.oci.descriptor import (
    MANIFEST_LIMIT,
    Descriptor,
    Manifest,
    descriptor_for,
    parse_manifest,
)
from acxoci.oci.digest import Readable, VerifyingReader
from acxoci.oci.errors import ManifestTooLarge, Unsupported
from acxoci.oci.layout import LayoutStore
from acxoci.oci.listing import ReferrerListing, Stray
from acxoci.oci.reference import Reference, parse_reference
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.settings import RemoteOptions, active_options

__all__ = [
    "ProgressFn",
    "ReadView",
    "ReferrerListing",
    "RemoteOptions",
    "Stray",
    "Target",
    "fetch_bytes",
    "fetch_manifest",
    "open_target",
    "push_bytes",
    "resolve_manifest",
]


@runtime_checkable
class Target(Protocol):
    """Content-addressed storage with tags and referrers (one registry repository or one layout)."""

    @property
    def name(self) -> str:
        """Human name: `host/repo` or `oci-layout:PATH`."""
        ...

    def resolve(self, reference: str) -> Descriptor:
        """Tag or digest → the manifest's descriptor (mediaType, digest, size). NotFound if absent."""
        ...

    def fetch(self, desc: Descriptor) -> VerifyingReader:
        """Open a streaming, digest+size-verifying reader for a blob or manifest."""
        ...

    def exists(self, desc: Descriptor) -> bool:
        """True if the blob/manifest with this digest is present."""
        ...

    def push(self, desc: Descriptor, content: Readable) -> None:
        """Store `content` (exactly desc.size bytes hashing to desc.digest) as a blob or manifest."""
        ...

    def tag(self, desc: Descriptor, tag: str) -> None:
        """Point `tag` at the (already pushed) manifest `desc`."""
        ...

    def tags(self) -> list[str]:
        """All tags, sorted."""
        ...

    def referrer_listing(self, desc: Descriptor) -> ReferrerListing:
        """The one referrer listing of `desc`: referrers whose manifest's subject is `desc` (typed
        and annotated from that manifest, its bytes in `data`) and the strays (listing.py)."""
        ...

    def referrers(self, desc: Descriptor, artifact_type: str | None = None) -> list[Descriptor]:
        """`referrer_listing(desc)`'s referrers whose manifest's artifactType is `artifact_type`."""
        ...

    def delete(self, desc: Descriptor) -> None:
        """Delete a manifest (untagging it) where the target allows it; Unsupported otherwise."""
        ...


def open_target(
    text: str | Reference, options: RemoteOptions | None = None, *, create: bool = True
) -> tuple[Target, Reference]:
    """Parse a reference and open its Target (LayoutStore for `oci-layout:`, else RegistryTarget);
    without `options`, the running command's transport setup (settings.active_options)."""
    ref = text if isinstance(text, Reference) else parse_reference(text)
    if ref.layout_path is not None:
        return LayoutStore(Path(ref.layout_path), create=create, options=options), ref
    return RegistryTarget(ref, options or active_options()), ref


def resolve_manifest(target: Target, reference: str) -> Descriptor:
    """Resolve `reference` when its manifest is fetched next (install, pull): a registry answers
    with one GET whose body's hash is the digest and whose bytes ride in `data` (so the manifest
    verified is the one resolved, however the tag moves meanwhile); other targets resolve as usual.
    Where only the digest is wanted (tags, existence checks), `target.resolve` HEADs instead."""
    by_get = getattr(target, "resolve_manifest", None)
    if callable(by_get):
        desc = by_get(reference)
        if not isinstance(desc, Descriptor):  # pragma: no cover - a Target wrapper's bug
            raise TypeError("resolve_manifest must return a Descriptor")
        return desc
    return target.resolve(reference)


class ReadView:
    """A read-only view of a Target for one read-only flow (one `install`, one `verify`): each
    subject's referrers are listed once and every artifactType subset is derived from that one
    listing (lifecycle records, attestations, level credentials), so the flow decides on one
    answer and asks once. Writes are refused, so nothing it remembers can go stale under its own
    writes; make a new view per call (never keep one across a write, as `release run` proves its
    pushes by listing again)."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self._listings: dict[str, ReferrerListing] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def resolve(self, reference: str) -> Descriptor:
        return self.inner.resolve(reference)

    def resolve_manifest(self, reference: str) -> Descriptor:
        """See the module function `resolve_manifest` (one GET on a registry)."""
        return resolve_manifest(self.inner, reference)

    def fetch(self, desc: Descriptor) -> VerifyingReader:
        return self.inner.fetch(desc)

    def exists(self, desc: Descriptor) -> bool:
        return self.inner.exists(desc)

    def tags(self) -> list[str]:
        return self.inner.tags()

    def referrer_listing(self, desc: Descriptor) -> ReferrerListing:
        """The subject's one listing, made on first use."""
        listing = self._listings.get(desc.digest)
        if listing is None:
            listing = self._listings[desc.digest] = self.inner.referrer_listing(desc.plain())
        return listing

    def referrers(self, desc: Descriptor, artifact_type: str | None = None) -> list[Descriptor]:
        """The subject's one listing, filtered to `artifact_type` (by the manifests' own types)."""
        return self.referrer_listing(desc).of_type(artifact_type)

    def push(self, desc: Descriptor, content: Readable) -> None:
        raise Unsupported("a read-only view does not push", where=self.name)

    def tag(self, desc: Descriptor, tag: str) -> None:
        raise Unsupported("a read-only view does not tag", where=self.name)

    def delete(self, desc: Descriptor) -> None:
        raise Unsupported("a read-only view does not delete", where=self.name)


def fetch_bytes(target: Target, desc: Descriptor, *, limit: int = MANIFEST_LIMIT) -> bytes:
    """Fetch a small object fully into memory (verified); refuses anything over `limit`."""
    if desc.size > limit:
        raise ManifestTooLarge(f"{desc.size} bytes exceeds the {limit}-byte limit", where=desc.digest)
    if desc.data is not None:
        return desc.data
    with target.fetch(desc) as reader:
        return reader.read_all()


def fetch_manifest(target: Target, desc: Descriptor) -> Manifest:
    """Fetch and strictly parse a manifest or index (digest-checked, ≤ 4 MiB)."""
    return parse_manifest(fetch_bytes(target, desc), media_type=desc.media_type, where=desc.digest)


def push_bytes(
    target: Target,
    data: bytes,
    media_type: str,
    *,
    artifact_type: str | None = None,
    skip_existing: bool = True,
) -> Descriptor:
    """Push in-memory bytes (a config, a manifest) and return their descriptor."""
    desc = descriptor_for(data, media_type, artifact_type=artifact_type)
    if skip_existing and target.exists(desc):
        return desc
    target.push(desc, io.BytesIO(data))
    return desc


ProgressFn = Callable[[Descriptor, int], None]
"""Progress callback: (descriptor being moved, bytes just moved)."""
