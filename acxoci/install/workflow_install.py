"""Installing a workflow: verify its signature and trust with the workflow verifier, then run
`ready` against the cartridges already installed in the store (and an optional roster folder) and
return the staffing for the install record. The decisions stay in `checks.py`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.install import checks as C
from acxoci.install.store import Store
from acxoci.install.vpolicy import VerificationPolicy
from attest.canonical import loads_strict
from attest.errors import MalformedError

CARTRIDGE_FILE = "cartridge.acx"
Levels = dict[str, tuple[int, str | None, str | None]]


class _RecordLevels:
    """Proven levels from the install records: an installed cartridge's level check passed (credential
    verified, issuer accepted, ROM-bound, not revoked at install time)."""

    def __init__(self, levels: Levels) -> None:
        self._levels = levels

    def proven_level(self, cartridge: Any) -> Any:
        from acxoci.workflow.ready import ProvenLevel

        got = self._levels.get(str(cartridge.path))
        if got is None:
            return None
        return ProvenLevel(got[0], got[1], got[2])


def store_roster(store: Store) -> tuple[list[tuple[str, Path]], Levels]:
    """The installed cartridges as a `ready` roster, and the levels their records prove."""
    roster: list[tuple[str, Path]] = []
    levels: Levels = {}
    for item in store.list():
        if item.record.get("kind") != "cartridge":
            continue
        path = item.path / CARTRIDGE_FILE
        roster.append((f"installed:{item.name}", path))
        lvl = item.record.get("level")
        if isinstance(lvl, dict) and isinstance(lvl.get("level"), int):
            levels[str(path)] = (lvl["level"], lvl.get("tier"), lvl.get("credentialDigest"))
    return roster, levels


def gather_graph(path: Path, policy: VerificationPolicy,
                 now: datetime) -> tuple[C.SignatureEvidence, dict[str, str]]:
    """Verify an Agent Graph (structure + publish profile + signature + trust against the policy's
    keys) with the graph verifier; a pulled layer that is not a graph fails this check."""
    from acxoci.errors import Tampered
    from acxoci.workflow.graph import MAX_GRAPH_BYTES, is_graph, verify_graph

    data = path.read_bytes()
    if len(data) > MAX_GRAPH_BYTES:
        raise Tampered(f"agent graph exceeds {MAX_GRAPH_BYTES} bytes", where=str(path))
    try:
        doc = loads_strict(data)
    except MalformedError as exc:
        raise Tampered(f"the artifact type says agent graph, but the content is not JSON: {exc}",
                       where=str(path)) from exc
    if not is_graph(doc):
        raise Tampered("the artifact type says agent graph, but the content is not one", where=str(path))
    verdict = verify_graph(doc, registry=policy.combined_registry(), now=now)
    sig = C.SignatureEvidence(status=verdict.status, trust=verdict.trust, summary=verdict.summary,
                              issues=tuple(verdict.issues), keyid=verdict.keyid,
                              publisher_id=verdict.publisher_id,
                              rom_digest=None, signed_at=verdict.signed_at)
    return sig, {"agentGraphId": str(doc.get("id") or ""), "digest": verdict.digest}


def gather_workflow(path: Path, policy: VerificationPolicy, store: Store, roster_dir: Path | None,
                    now: datetime) -> tuple[C.SignatureEvidence, dict[str, Any], dict[str, str]]:
    """Verify the workflow (signature + trust against the policy's keys) and staff it from the
    store's installed cartridges (plus `roster_dir`). Returns the signature evidence, the staffing
    report (JSON) and identity fields used to name the install."""
    from acxoci.workflow.model import Workflow
    from acxoci.workflow.ready import assess, directory_roster, load_roster
    from acxoci.workflow.verify import verify_workflow

    doc = loads_strict(path.read_bytes())
    verdict = verify_workflow(doc, registry=policy.combined_registry(), now=now)
    sig = C.SignatureEvidence(status=verdict.status, trust=verdict.trust, summary=verdict.summary,
                              issues=tuple(verdict.issues), keyid=verdict.keyid,
                              publisher_id=verdict.publisher_id,
                              rom_digest=None, signed_at=verdict.signed_at)
    roster, levels = store_roster(store)
    if roster_dir is not None:
        roster += directory_roster(roster_dir)
    from dataclasses import replace

    entries = [replace(e, minimum=policy.minimum_trust)
               for e in load_roster(roster, registry=policy.combined_registry(), now=now)]
    report = assess(Workflow.from_json(doc), entries, workflow_verdict=verdict,
                    level_resolver=_RecordLevels(levels))
    staffing = report.to_json()
    staffing["ready"] = report.ready
    meta = {"workflowId": str(doc.get("id") or doc.get("workflowId") or ""), "digest": verdict.digest}
    if verdict.ok and verdict.signed and isinstance(doc.get("version"), str):
        meta["acx.artifact_version"] = doc["version"]  # signed: the digest covers it
    return sig, staffing, meta
