"""A `workflow ready` roster from OCI: cartridge references, or every tag of a repository.

Each cartridge manifest is resolved, its one cartridge layer is pulled through the verifying
reader into a work directory (a blob that does not match its digest never lands on disk), and
the file is then verified like any local cartridge. Problems become unstaffable roster entries
with the reason, never a crash of the whole roster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from acxoci.attest.trust import TrustRegistry
from acxoci.errors import AcxError, InvalidInput
from acxoci.oci.digest import copy_verified
from acxoci.oci.shapes import CARTRIDGE_ARTIFACT_TYPE, CARTRIDGE_LAYER_TYPE
from acxoci.oci.target import RemoteOptions, Target, fetch_manifest, open_target
from acxoci.workflow.ready import RosterCartridge, describe_error, load_roster_entry


def _pull_one(target: Target, label: str, reference: str, workdir: Path) -> tuple[Path, str] | None:
    """Pull the cartridge layer of `reference`: (file, manifest digest), or None when the manifest
    is not a cartridge."""
    desc = target.resolve(reference)
    manifest = fetch_manifest(target, desc)
    if manifest.is_index or manifest.effective_artifact_type() != CARTRIDGE_ARTIFACT_TYPE:
        return None
    layers = [la for la in manifest.layers if la.media_type == CARTRIDGE_LAYER_TYPE]
    if len(layers) != 1:
        raise InvalidInput(
            f"cartridge manifest {desc.digest} has {len(layers)} cartridge layers, expected 1", where=label
        )
    dest = workdir / f"{desc.digest.replace(':', '-')}.acx"
    with target.fetch(layers[0]) as reader:
        copy_verified(reader, dest)
    return dest, desc.digest


def load_registry_roster(
    refs: Iterable[str],
    workdir: Path,
    *,
    registry: TrustRegistry | None,
    now: datetime,
    options: RemoteOptions | None = None,
) -> list[RosterCartridge]:
    """Every cartridge named by `refs`: `host/repo:tag`, `host/repo@sha256:…`, `oci-layout:DIR:tag`,
    or a bare repository (then every tag that holds a cartridge manifest)."""
    out: list[RosterCartridge] = []
    workdir.mkdir(parents=True, exist_ok=True)
    for text in refs:
        try:
            target, ref = open_target(text, options, create=False)
            wanted = (
                [ref.reference]
                if ref.reference
                else [t for t in target.tags() if not t.startswith("sha256-")]
            )
        except AcxError as exc:
            out.append(RosterCartridge(text, text, None, error=describe_error(exc)))
            continue
        for reference in wanted:
            sep = "@" if reference.startswith("sha256:") else ":"
            label = f"{ref.repo_string()}{sep}{reference}"
            try:
                pulled = _pull_one(target, label, reference, workdir)
            except AcxError as exc:
                out.append(RosterCartridge(label, label, None, error=describe_error(exc)))
                continue
            if pulled is not None:
                path, manifest_digest = pulled
                entry = load_roster_entry(label, path, registry=registry, now=now)
                out.append(dataclasses.replace(entry, manifest_digest=manifest_digest))
    return out
