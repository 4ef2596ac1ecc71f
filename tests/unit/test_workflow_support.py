"""Shared helpers for the workflow tests: run-time keys and trust registries (no private key on disk)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.trust import TrustRegistry

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def load(path: Path) -> dict[str, Any]:
    """Read a JSON document."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def team(vectors: Path) -> dict[str, Any]:
    """A fresh copy of the unsigned vector workflow."""
    return copy.deepcopy(load(vectors / "workflow" / "team.cal.json"))


def registry_for(
    key: PrivateKey,
    publisher: str,
    *,
    status: str = "active",
    reason: str | None = None,
    not_after: str = "2035-01-01T00:00:00Z",
) -> TrustRegistry:
    """A one-key `acx.trust-registry/1` for `key` (github-oidc proof for io.github.<owner>)."""
    owner = publisher.split(".")[2]
    entry: dict[str, Any] = {
        "keyid": key.public().keyid(),
        "publisherId": publisher,
        "algorithm": "ed25519",
        "publicKeyPem": key.public().spki_pem(),
        "status": status,
        "notBefore": "2020-01-01T00:00:00Z",
        "notAfter": not_after,
        "namespaceProof": {
            "method": "github-oidc",
            "oidcSubject": f"repo:{owner}/flows:ref:refs/heads/main",
            "oidcIssuer": "https://token.actions.githubusercontent.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    }
    if status == "revoked":
        entry["revokedAt"] = "2026-06-01T00:00:00Z"
        entry["revocationReason"] = reason
    return TrustRegistry.from_json({"schemaVersion": "acx.trust-registry/1", "keys": [entry]}, now=NOW)


def new_key() -> PrivateKey:
    """A fresh Ed25519 key for this test run."""
    return generate_ed25519()
