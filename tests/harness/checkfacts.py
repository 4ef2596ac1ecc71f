"""Hand-made inputs of the pure install checks (acxoci/install/checks.py), shared by the check tests
(no tests here): evidence records and policies, each field overridable by keyword."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from acxoci.install import checks as C
from acxoci.install.vpolicy import VerificationPolicy, default_policy
from tests.harness.installs import PUBLISHER

NOW = datetime(2026, 11, 30, tzinfo=UTC)
ROM = "sha256:" + "a" * 64


def pol(**kw: Any) -> VerificationPolicy:
    """The default policy with the given fields replaced."""
    return dataclasses.replace(default_policy(), **kw)


def sig(**kw: Any) -> C.SignatureEvidence:
    """Signature evidence of a verified, trusted ROM signed for PUBLISHER, with the given fields replaced."""
    base: dict[str, Any] = {
        "status": "verified",
        "trust": "trusted",
        "summary": "ok",
        "keyid": "ed25519:" + "b" * 64,
        "publisher_id": PUBLISHER,
        "rom_digest": ROM,
    }
    base.update(kw)
    return C.SignatureEvidence(**base)


def cred(**kw: Any) -> C.CredentialFound:
    """A verified, unrevoked level-20 credential for ROM, with the given fields replaced."""
    base: dict[str, Any] = {
        "issuer": "did:web:v.example",
        "level": 20,
        "tier": "staff",
        "rom_digest": ROM,
        "verified": True,
        "status_list": "https://v.example/s/1",
        "status_index": 1,
        "revoked": False,
        "status_list_valid_from": NOW - timedelta(hours=1),
        "status_list_source": "fetched",
        "status_reason": "not revoked",
    }
    base.update(kw)
    return C.CredentialFound(**base)


def keyed_policy(key_publisher: str = PUBLISHER, **entry_over: Any) -> tuple[VerificationPolicy, str]:
    """A policy trusting PUBLISHER through a registry holding one key (for `key_publisher`)."""
    from acxoci.attest.keys import generate_ed25519
    from acxoci.attest.trust import TrustRegistry, make_key_entry
    from acxoci.install.vpolicy import TrustedPublisher

    pub = generate_ed25519().public()
    e = make_key_entry(pub, publisher_id=key_publisher, not_before=NOW - timedelta(days=300),
                       not_after=NOW + timedelta(days=300), verified_at=NOW - timedelta(days=300),
                       oidc_subject=None if not key_publisher.startswith("io.github.") else
                       f"repo:{key_publisher.split('.')[2]}/x")
    e.update(entry_over)
    reg = TrustRegistry.from_json({"schemaVersion": "acx.trust-registry/1", "keys": [e]})
    return pol(publishers=(TrustedPublisher(PUBLISHER, reg),)), pub.keyid()


SIGNED_AT = "2026-06-01T00:00:00Z"


def gathered(**kw: Any) -> C.Gathered:
    """Everything an install gathered for a passing ROM, with the given fields replaced."""
    base: dict[str, Any] = {
        "repository": "oci-layout:x", "content": C.ContentEvidence(ROM, ROM), "signature": sig(),
        "attestations": [], "credentials": [cred(rom_digest="sha256:" + "f" * 64), cred(level=3)],
        "harness": C.HarnessEvidence(False, ("tool:x",)), "host_given": True, "harness_available": True,
        "budget": None, "version": C.VersionEvidence("1.0.0", "1.0.0"),
    }
    base.update(kw)
    return C.Gathered(**base)
