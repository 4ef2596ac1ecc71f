"""The referrer graph walk every tree-shaped reader uses (`acx discover`): each subject's
referrers come from the one listing (`Target.referrer_listing`, listing.py), so the tree shows
exactly the referrers whose manifests name their subject, and the walk reports the strays
(entries a source listed that are gone, unreadable or name another subject) instead of drawing
them.

`referrer_tree` walks referrers of referrers breadth-first, iteratively, to a depth cap, listing
each subject once per walk however many paths reach it (a registry may list one manifest under
several subjects: a diamond would otherwise be listed again for every path)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from acxoci.oci.descriptor import Descriptor
from acxoci.oci.errors import LimitExceeded
from acxoci.oci.listing import ReferrerListing
from acxoci.oci.target import Target

MAX_TREE_DEPTH = 64
MAX_TREE_NODES = 10_000


@dataclass
class ReferrerTree:
    """Nested referrer nodes (as `acx discover` prints them), the walk's warnings, and every
    stray met on the way (each naming the subject it was listed under)."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    strays: list[dict[str, Any]] = field(default_factory=list)


def referrer_tree(
    target: Target,
    root: Descriptor,
    artifact_type: str | None,
    depth: int,
    *,
    max_depth: int = MAX_TREE_DEPTH,
) -> ReferrerTree:
    """The referrer tree of `root` to `depth` levels (`artifact_type` filters the first level).
    Asking deeper than `max_depth` is allowed; a chain that really goes past it is refused."""
    out = ReferrerTree()
    queue: deque[tuple[Descriptor, int, list[dict[str, Any]], frozenset[str]]] = deque(
        [(root, 0, out.nodes, frozenset({root.digest}))]
    )
    nodes = 0
    listings: dict[str, ReferrerListing] = {}  # one listing per subject
    while queue:
        subject, level, into, path = queue.popleft()
        if level >= depth:
            continue
        listing = listings.get(subject.digest)
        if listing is None:
            listing = listings[subject.digest] = target.referrer_listing(subject.plain())
            out.strays += [{"subject": subject.digest, **s.to_json()} for s in listing.strays]
            out.warnings += [w for w in listing.warnings if w not in out.warnings]
        found = listing.of_type(artifact_type if level == 0 else None)
        if found and level >= max_depth:
            raise LimitExceeded(
                f"referrers of referrers go deeper than {max_depth} levels",
                where=f"{target.name}@{subject.digest}",
            )
        for r in found:
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
            node["referrers"] = []
            into.append(node)
            if r.digest not in path:
                queue.append((r.plain(), level + 1, node["referrers"], path | {r.digest}))
    return out
