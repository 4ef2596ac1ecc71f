"""What a level credential binds to: the ROM digest recomputed and signature-verified by the
cartridge verifier (never the unsigned `acx.rom_manifest_hash` meta value)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from acxoci.attest.trust import TrustRegistry
from acxoci.cartridge.constants import META_CARTRIDGE_ID
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import VerificationFailed


@dataclass(frozen=True)
class CartridgeBinding:
    """A cartridge whose signature verified: its ROM digest, id and signer."""

    path: Path
    rom_digest: str
    cartridge_id: str
    keyid: str | None
    publisher_id: str | None
    trust: str


def bind_cartridge(path: Path, *, now: datetime, registry: TrustRegistry | None = None) -> CartridgeBinding:
    """Verify the cartridge and return its verified ROM digest; refuses tampered, unsigned or
    unverifiable cartridges (their ROM digest is not proven)."""
    verdict = verify_cartridge(path, registry=registry, now=now)
    if verdict.rom_digest is None or not verdict.meets("portable"):  # meets() is False when rejected
        raise VerificationFailed(f"cartridge {path} did not verify ({verdict.trust}): {verdict.summary}",
                                 details={"issues": list(verdict.issues)})
    with open_cartridge(path) as cart:
        cartridge_id = cart.meta().get(META_CARTRIDGE_ID) or f"rom:{verdict.rom_digest}"
    return CartridgeBinding(path, verdict.rom_digest, cartridge_id, verdict.keyid, verdict.publisher_id,
                            verdict.trust)
