"""One referrer listing for every reader (discover, verify, copy): the target's referrers (the
Referrers API, or the `sha256-<hex>` fallback tag, or a layout's index.json merged with a
fallback tag a skopeo copy left behind), with entries whose manifest is gone (a registry's
garbage collection after the fallback index was written) reported as missing, not dropped.

`referrer_tree` walks referrers of referrers breadth-first, iteratively, to a depth cap, listing
each subject once per walk however many paths reach it (a registry may list one manifest under
several subjects: a diamond would otherwise be listed again for every path)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from acxoci.oci.descriptor import Descriptor
from acxoci.oci.errors import LimitExceeded
from acxoci.oci.registry import RegistryTarget
from acxoci.oci.target import Target

MAX_TREE_DEPTH = 64
MAX_TREE_NODES = 10_000


@dataclass
class Listing:
    """Referrers of one subject: present ones, listed-but-missing ones, and warnings."""

    subject: Descriptor
    referrers: list[Descriptor] = field(default_factory=list)
    missing: list[Descriptor] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def list_referrers(target: Target, subject: Descriptor, artifact_type: str | None = None) -> Listing:
    """The referrers of `subject`; entries that came from a fallback index are checked to exist."""
    out = Listing(subject)
    entries = target.referrers(subject.plain(), artifact_type)
    from_index = True
    if isinstance(target, RegistryTarget):
        from_index = not target.referrers_api(subject.plain())
        if from_index:
            out.warnings.append(
                f"{target.name} does not serve the Referrers API; referrers were read from the "
                f"fallback tag (a cache or mirror in between may hide referrers)"
            )
    for e in entries:
        if from_index and not target.exists(e.plain()):
            out.missing.append(e)
        else:
            out.referrers.append(e)
    return out


def referrer_tree(
    target: Target,
    root: Descriptor,
    artifact_type: str | None,
    depth: int,
    *,
    max_depth: int = MAX_TREE_DEPTH,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Nested referrer nodes (as `acx discover` prints them) to `depth` levels, and warnings.
    Asking deeper than `max_depth` is allowed; a chain that really goes past it is refused."""
    top: list[dict[str, Any]] = []
    warnings: list[str] = []
    queue: deque[tuple[Descriptor, int, list[dict[str, Any]], frozenset[str]]] = deque(
        [(root, 0, top, frozenset({root.digest}))]
    )
    nodes = 0
    listings: dict[tuple[str, str | None], Listing] = {}  # one listing per subject (and filter)
    while queue:
        subject, level, into, path = queue.popleft()
        if level >= depth:
            continue
        key = (subject.digest, artifact_type if level == 0 else None)
        listing = listings.get(key)
        if listing is None:
            listing = listings[key] = list_referrers(target, subject, key[1])
        for w in listing.warnings:
            if w not in warnings:
                warnings.append(w)
        if (listing.referrers or listing.missing) and level >= max_depth:
            raise LimitExceeded(
                f"referrers of referrers go deeper than {max_depth} levels",
                where=f"{target.name}@{subject.digest}",
            )
        for r, missing in [(r, False) for r in listing.referrers] + [(r, True) for r in listing.missing]:
            nodes += 1
            if nodes > MAX_TREE_NODES:
                raise LimitExceeded(f"more than {MAX_TREE_NODES} referrers in the tree", where=target.name)
            node: dict[str, Any] = {
                "reference": f"{target.name}@{r.digest}",
                "mediaType": r.media_type,
                "digest": r.digest,
                "size": r.size,
                "artifactType": r.artifact_type,
            }
            if r.annotations:
                node["annotations"] = dict(r.annotations)
            if missing:
                node["missing"] = True
            node["referrers"] = []
            into.append(node)
            if not missing and r.digest not in path:
                queue.append((r.plain(), level + 1, node["referrers"], path | {r.digest}))
    return top, warnings
