"""The ACX content side of an attestation: gather a cartridge's / workflow's facts to attest, and
check pulled content against an attested predicate (ROM digest, layer digest, workflow digest).

Cartridges are recomputed through the cartridge verifier, never trusted from recorded columns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attestation.statements import (
    CARTRIDGE_PREDICATE_TYPE,
    GRAPH_PREDICATE_TYPE,
    WORKFLOW_PREDICATE_TYPE,
    CartridgeFacts,
    graph_facts,
    workflow_facts,
)
from acxoci.cartridge.constants import META_CARTRIDGE_ID
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import CartridgeVerdict, pick_signature, verify_cartridge
from acxoci.errors import InvalidInput, RefusedByPolicy


def cartridge_verdict(path: str | os.PathLike[str], *, now: datetime) -> CartridgeVerdict:
    """Verify the cartridge file itself (no trust registry: the attestation key is judged separately)."""
    return verify_cartridge(path, registry=None, now=now)


def cartridge_facts(path: str | os.PathLike[str], layer_digest: str, *, now: datetime) -> CartridgeFacts:
    """The facts a cartridge attestation carries; refuses a cartridge that does not verify."""
    verdict = cartridge_verdict(path, now=now)
    if verdict.rejected or verdict.rom_digest is None:
        raise RefusedByPolicy(f"cartridge does not verify ({verdict.summary}); refusing to attest it",
                              where=str(path), details={"issues": list(verdict.issues)})
    if verdict.status in ("legacy",):
        raise RefusedByPolicy("cartridge is unsigned; sign it before attesting", where=str(path))
    with open_cartridge(path) as cart:
        cid = cart.meta().get(META_CARTRIDGE_ID)
    return CartridgeFacts(
        rom_digest=verdict.rom_digest,
        manifest_hash=verdict.recorded_hash or verdict.rom_digest,
        publisher_id=verdict.publisher_id or "",
        checksum_hash=verdict.checksum_hash or "",
        file_count=verdict.file_count if verdict.file_count is not None else 0,
        signed_at=verdict.signed_at or "",
        layer_digest=layer_digest,
        cartridge_id=cid,
        signer_keyid=verdict.keyid,
    )


def embedded_envelope(path: str | os.PathLike[str]) -> bytes | None:
    """The cartridge's own DSSE envelope bytes (the newest rom-manifest signature), or None."""
    with open_cartridge(path) as cart:
        sig = pick_signature(cart.signatures())
    return sig.envelope if sig is not None else None


@dataclass(frozen=True)
class ContentCheck:
    """Result of checking pulled content against an attested predicate."""

    ok: bool
    reasons: tuple[str, ...]
    facts: dict[str, Any]


def _cmp(pred: dict[str, Any], name: str, actual: Any, reasons: list[str], label: str | None = None) -> None:
    if name not in pred:
        reasons.append(f"predicate has no {name}")
    elif pred[name] != actual:
        reasons.append(f"attested {label or name} {pred[name]} != {actual} of the pulled content")


def check_cartridge_content(pred: dict[str, Any], path: Path, layer_digest: str, *,
                            now: datetime) -> ContentCheck:
    """Recompute the pulled cartridge and compare it with the attested ROM facts."""
    reasons: list[str] = []
    _cmp(pred, "layerDigest", layer_digest, reasons, "layer digest")
    verdict = cartridge_verdict(path, now=now)
    if verdict.rom_digest is None:
        reasons.append(f"pulled cartridge: ROM digest cannot be recomputed ({verdict.summary})")
    else:
        _cmp(pred, "romDigest", verdict.rom_digest, reasons, "ROM digest")
    if verdict.rejected:
        reasons.append(f"pulled cartridge does not verify: {verdict.summary}")
    if verdict.checksum_hash is not None and "checksumHash" in pred:
        _cmp(pred, "checksumHash", verdict.checksum_hash, reasons, "checksumHash")
    if verdict.file_count is not None and "fileCount" in pred:
        _cmp(pred, "fileCount", verdict.file_count, reasons, "fileCount")
    facts = {"romDigest": verdict.rom_digest, "layerDigest": layer_digest, "cartridgeStatus": verdict.status}
    return ContentCheck(not reasons, tuple(reasons), facts)


def check_workflow_content(pred: dict[str, Any], data: bytes, layer_digest: str) -> ContentCheck:
    """Recompute the pulled workflow's JCS digest and compare it with the attested one."""
    reasons: list[str] = []
    try:
        facts = workflow_facts(data, layer_digest)
    except InvalidInput as exc:
        return ContentCheck(False, (f"pulled workflow is not valid JSON: {exc.message}",), {})
    _cmp(pred, "layerDigest", layer_digest, reasons, "layer digest")
    _cmp(pred, "workflowDigest", facts.workflow_digest, reasons, "workflow digest")
    return ContentCheck(not reasons, tuple(reasons),
                        {"workflowDigest": facts.workflow_digest, "layerDigest": layer_digest})


def check_graph_content(pred: dict[str, Any], data: bytes, layer_digest: str) -> ContentCheck:
    """Recompute the pulled Agent Graph's JCS digest and compare it with the attested one."""
    reasons: list[str] = []
    try:
        facts = graph_facts(data, layer_digest)
    except InvalidInput as exc:
        return ContentCheck(False, (f"pulled agent graph is not valid JSON: {exc.message}",), {})
    _cmp(pred, "layerDigest", layer_digest, reasons, "layer digest")
    _cmp(pred, "agentGraphDigest", facts.graph_digest, reasons, "agent graph digest")
    return ContentCheck(not reasons, tuple(reasons),
                        {"agentGraphDigest": facts.graph_digest, "layerDigest": layer_digest})


CONTENT_CHECKED = (CARTRIDGE_PREDICATE_TYPE, WORKFLOW_PREDICATE_TYPE, GRAPH_PREDICATE_TYPE)
