"""The level verifier as `workflow ready`'s `LevelResolver`: a roster cartridge's level is proven
only by a level credential that verifies against the cartridge's VERIFIED ROM digest, a trusted
issuer and its revocation status. Credentials come from (a) the cartridge's own `attestations`
table and (b), for a registry / OCI-layout roster entry, the level referrers of the cartridge
manifest it was pulled from. Results (and why a level is unproven) are cached per cartridge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.cartridge.reader import open_cartridge
from acxoci.errors import AcxError
from acxoci.level.binding import CartridgeBinding
from acxoci.level.credential import MEDIA_TYPE, StatusCheck
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.oci import find_credentials, looks_like_reference
from acxoci.level.policy import LevelCheck, check_documents
from acxoci.oci.reference import parse_reference
from acxoci.oci.target import RemoteOptions, open_target
from acxoci.workflow.ready import ProvenLevel, RosterCartridge


def binding_of(cartridge: RosterCartridge) -> CartridgeBinding | None:
    """The verified binding of a staffable roster entry (its ROM digest was recomputed and its
    signature checked by `load_roster`); None when it is not staffable."""
    v = cartridge.verdict
    rom = cartridge.verified_rom_digest
    if v is None or rom is None:
        return None
    return CartridgeBinding(Path(cartridge.path), rom, cartridge.cartridge_id or f"rom:{rom}", v.keyid,
                            v.publisher_id, v.trust)


def embedded_credentials(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Level credentials stored in the cartridge's `attestations` table (`application/vc` rows)."""
    out: list[tuple[str, dict[str, Any]]] = []
    with open_cartridge(path) as cart:
        rows = cart.attestations()
    for row in rows:
        if row.media_type != MEDIA_TYPE and row.type != "vc-2.0":
            continue
        label = f"attestations[{row.att_id}]"
        try:
            doc = loads_strict(row.document)
        except AttestError:
            doc = None  # an unparsable row still counts as a credential that does not verify
        out.append((label, doc if isinstance(doc, dict) else {"_invalid": label}))
    return out


def referrer_credentials(cartridge: RosterCartridge,
                         options: RemoteOptions | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Level credentials attached (OCI referrers) to the manifest a roster entry was pulled from.

    Only for entries loaded by `load_registry_roster`: the source label is re-opened and the
    manifest digest recorded at pull time is used (no tag is re-resolved)."""
    if cartridge.manifest_digest is None or not looks_like_reference(cartridge.source):
        return []
    try:
        ref = parse_reference(cartridge.source)
    except AcxError:
        return []
    target, _ = open_target(ref, options, create=False)
    subject = target.resolve(cartridge.manifest_digest)
    return [(f"referrer {desc.digest}", doc) for desc, doc in find_credentials(target, subject)]


@dataclass
class VerifiedLevelResolver:
    """`LevelResolver` backed by `acxoci.level`: issuer registry, time and revocation check are fixed
    at construction; `why_unproven` says why a cartridge has no proven level."""

    issuers: IssuerRegistry
    now: datetime
    status_check: StatusCheck | None
    oci_referrers: bool = True
    options: RemoteOptions | None = None
    allow_demo: bool = False
    _checks: dict[str, LevelCheck | str] = field(default_factory=dict)

    def check(self, cartridge: RosterCartridge) -> LevelCheck | str:
        """Every credential's verdict for `cartridge` (cached), or why none could be checked."""
        key = f"{cartridge.source}\0{cartridge.path}"
        if key not in self._checks:
            self._checks[key] = self._check(cartridge)
        return self._checks[key]

    def _check(self, cartridge: RosterCartridge) -> LevelCheck | str:
        binding = binding_of(cartridge)
        if binding is None:
            return f"cartridge not verified: {cartridge.why_not()}"
        try:
            docs = embedded_credentials(binding.path)
        except AcxError as exc:
            return f"cannot read embedded credentials: {exc.one_line()}"
        if self.oci_referrers:
            try:
                docs += referrer_credentials(cartridge, self.options)
            except AcxError as exc:
                if not docs:
                    return f"cannot read level referrers: {exc.one_line()}"
        return check_documents(docs, binding, issuers=self.issuers, now=self.now,
                               status_check=self.status_check, allow_demo=self.allow_demo)

    def proven_level(self, cartridge: RosterCartridge) -> ProvenLevel | None:
        """The highest verified, unrevoked level bound to the cartridge's ROM digest, or None."""
        res = self.check(cartridge)
        if isinstance(res, str) or not res.ok:
            return None
        best = res.best
        if best is None or best.level is None:
            return None
        label = next(lbl for lbl, v in res.verdicts if v is best)
        return ProvenLevel(best.level, best.tier, label)

    def why_unproven(self, cartridge: RosterCartridge) -> str | None:
        """Why no level is proven (None when one is)."""
        res = self.check(cartridge)
        if isinstance(res, str):
            return res
        return None if res.ok else res.reason()
