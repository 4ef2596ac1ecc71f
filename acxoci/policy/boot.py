"""The boot handshake over a cartridge file (SPEC §8.5 steps 1-5): verify the signed ROM, read
its harness requirements, negotiate against a host descriptor. Opens the cartridge read-only
(immutable), so a refusal can never activate the ROM or touch SAVE."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.cartridge.verify import CartridgeVerdict, verify_cartridge
from acxoci.errors import RefusedByPolicy
from acxoci.policy import harness as h
from acxoci.policy.files import load_document
from attest.trust import TrustRegistry


@dataclass(frozen=True)
class Handshake:
    """The verdict on the cartridge and the compliance descriptor the host emits."""

    verdict: CartridgeVerdict
    descriptor: h.ComplianceDescriptor

    @property
    def accepted(self) -> bool:
        return self.descriptor.accepted

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mediaType": h.COMPLIANCE_MEDIA_TYPE,
            "descriptor": self.descriptor.to_json(),
            "trust": self.verdict.trust,
        }
        err = self.descriptor.jsonrpc_error()
        if err is not None:
            out["error"] = err
        return out


def handshake(
    cartridge: str | os.PathLike[str], host_doc: Any, *, registry: TrustRegistry | None, now: datetime
) -> Handshake:
    """Verify `cartridge` (RefusedByPolicy if rejected), then negotiate its harness against
    `host_doc` (an `acx.host.v1` document). InvalidInput for a bad harness or host document."""
    verdict = verify_cartridge(cartridge, registry=registry, now=now)
    if verdict.rejected:
        raise RefusedByPolicy(
            f"cartridge signature does not verify ({verdict.trust}): {verdict.summary}",
            where=str(cartridge),
            details={"issues": list(verdict.issues)},
        )
    loaded = load_document(Path(cartridge), h.ROM_PATH)
    requirements = h.parse_harness(loaded.doc, where=loaded.source)
    host = h.parse_host(host_doc)
    return Handshake(verdict, h.negotiate(requirements, host, loaded.digest))
