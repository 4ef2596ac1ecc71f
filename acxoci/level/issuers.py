"""Issuer trust for level credentials: an `acx.trust-registry/1` document whose entries are looked
up by DID verification method. A `did:web:<host>[:path…]` issuer maps to the registry publisherId
made of the host's labels reversed (`did:web:verifier.acx.dev` → `dev.acx.verifier`), the same
naming the registry's dns-txt namespace proof (`_acx-challenge.verifier.acx.dev`) attests.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.trust import TrustKey, TrustRegistry, judge_signer
from acxoci.attest.trustdecision import decide
from acxoci.errors import InvalidInput
from acxoci.fsutil import read_bytes

_HOST_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$")
_SEG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def issuer_did(verification_method: str) -> str:
    """The DID of a verification method (the part before `#`)."""
    return verification_method.split("#", 1)[0]


def did_web_publisher(did: str) -> str:
    """`did:web:verifier.acx.dev[:a:b]` → `dev.acx.verifier[/a/b]`; InvalidInput for anything else."""
    if not did.startswith("did:web:"):
        raise InvalidInput(f"issuer {did!r} is not a did:web DID")
    parts = did[len("did:web:"):].split(":")
    host = urllib.parse.unquote(parts[0]).lower()
    if not _HOST_RE.fullmatch(host):
        raise InvalidInput(f"issuer {did!r}: did:web host {host!r} is not a domain name "
                           "(ports are not supported)")
    segs = [urllib.parse.unquote(p) for p in parts[1:]]
    if any(not _SEG_RE.fullmatch(s) for s in segs):
        raise InvalidInput(f"issuer {did!r}: unsupported did:web path")
    publisher = ".".join(reversed(host.split(".")))
    return publisher + "".join("/" + s for s in segs)


@dataclass(frozen=True)
class IssuerMatch:
    """A registry entry that verified a proof, and what the registry says about it now."""

    entry: TrustKey
    eligible: bool
    issues: tuple[str, ...]


@dataclass(frozen=True)
class IssuerRegistry:
    """A trust registry used to decide which DIDs may issue level credentials and status lists."""

    registry: TrustRegistry

    @classmethod
    def from_json(cls, doc: Any, *, now: datetime | None = None,
                  where: str = "issuer registry") -> IssuerRegistry:
        """Validate with the shared `acx.trust-registry/1` loader."""
        try:
            return cls(TrustRegistry.from_json(doc, now=now))
        except AttestError as exc:
            raise InvalidInput(f"{where}: {exc}") from exc

    @classmethod
    def load(cls, path: Path, *, now: datetime | None = None) -> IssuerRegistry:
        """Read and validate a registry file."""
        data = read_bytes(path, "issuer registry")
        try:
            doc = loads_strict(data)
        except AttestError as exc:
            raise InvalidInput(f"{path}: {exc}") from exc
        return cls.from_json(doc, now=now, where=str(path))

    def publisher_of(self, verification_method: str) -> str:
        """The registry publisherId a method's did:web DID maps to (the DID itself if it maps to none)."""
        did = issuer_did(verification_method)
        try:
            return did_web_publisher(did)
        except InvalidInput:
            return did

    def candidates(self, verification_method: str) -> list[TrustKey]:
        """Entries whose publisherId is the did:web mapping of the method's DID (any status)."""
        try:
            publisher = did_web_publisher(issuer_did(verification_method))
        except InvalidInput:
            return []
        return [k for k in self.registry.keys if k.publisher_id == publisher]

    def judge(self, entry: TrustKey, *, signed_at: str, now: datetime) -> IssuerMatch:
        """Is this entry eligible to issue now (active, in window, not compromised)?"""
        j = judge_signer(entry, signed_publisher=entry.publisher_id, signed_at=signed_at,
                         now=now.astimezone(UTC))
        assert j.facts is not None
        d = decide(j.facts, minimum="trusted", command="level verify")  # issuers must be trusted
        if d.accepted:
            return IssuerMatch(entry, True, ())
        return IssuerMatch(entry, False, (d.reason,))
