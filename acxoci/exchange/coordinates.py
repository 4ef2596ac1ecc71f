"""The Exchange's coordinate rule, in one place (docs/exchange.md, "Coordinates"): where a release
sits in an Exchange folder and at which OCI repository and tag it is published. The artifact kind
is part of both, so a workflow and an Agent Graph with the same publisher, id and version never
share a coordinate. Pure: string building only."""

from __future__ import annotations

from typing import Final

#: The artifact kinds of an Exchange (`artifactType` of a release's identity), in index order.
KINDS: Final = ("agent", "workflow", "agent-graph")
#: The folder of each kind inside an Exchange folder (the reference's layout).
FOLDERS: Final = {"agent": "cartridges", "workflow": "cals", "agent-graph": "graphs"}


def _kind(kind: str) -> str:
    if kind not in FOLDERS:
        raise ValueError(f"unknown Exchange artifact kind {kind!r}")
    return kind


def folder_path(kind: str, publisher: str, artifact_id: str, version: str) -> str:
    """The release's path relative to the Exchange folder (`cartridges/P/ID/V/cartridge.acx`,
    `cals/P/ID/V.cal.json`, `graphs/P/ID/V.agent-graph.json`)."""
    base = f"{FOLDERS[_kind(kind)]}/{publisher}/{artifact_id}"
    if kind == "agent":
        return f"{base}/{version}/cartridge.acx"
    return f"{base}/{version}.cal.json" if kind == "workflow" else f"{base}/{version}.agent-graph.json"


def card_path(publisher: str, artifact_id: str, version: str) -> str:
    """The generated agent card beside a shared cartridge (`…/V/README.md`)."""
    return f"{FOLDERS['agent']}/{publisher}/{artifact_id}/{version}/README.md"


def version_tag(version: str) -> str:
    """An OCI tag for a SemVer: `+` (build metadata) is not a tag character, `_` takes its place
    (SemVer never contains `_`, so no two versions share a tag)."""
    return version.replace("+", "_")


def repository_path(kind: str, publisher: str, artifact_id: str) -> str:
    """The release's repository below a mirror prefix: `<kind>/<publisher>/<id>`."""
    return f"{_kind(kind)}/{publisher}/{artifact_id}"


def tagged_path(kind: str, publisher: str, artifact_id: str, version: str) -> str:
    """`<kind>/<publisher>/<id>:<tag>`: a release relative to the prefix (lifecycle successors)."""
    return f"{repository_path(kind, publisher, artifact_id)}:{version_tag(version)}"
