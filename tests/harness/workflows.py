"""Shared helpers for the workflow tests (no tests here): run-time keys and trust registries (no private
key on disk), a small workflow pinned to a ROM digest, and the vector team workflow signed once."""

from __future__ import annotations

import base64
import copy
import functools
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.attest import dsse
from acxoci.attest.canonical import jcs
from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.trust import TrustRegistry
from acxoci.workflow.sign import sign_workflow
from tests.harness import env

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


#: the verified ROM digest of the vectors' sample cartridge
SAMPLE_ROM = "sha256:8ba92c59b173298b2e307b78daf9d82d89813fdb237f4d0ba738ce324efbdb5b"


def pinned_workflow(
    rom: str = SAMPLE_ROM, caps: list[str] | None = None, skills: list[str] | None = None
) -> dict[str, Any]:
    """A small publishable workflow whose one participant is pinned to `rom`."""
    return {
        "schemaVersion": "acx.cal/1",
        "id": "pinned-team",
        "version": "1.0.0",
        "name": "Pinned designer",
        "description": "One designer cartridge, pinned by its ROM digest, drafts a design document.",
        "license": "MIT",
        "authors": [{"name": "acxoci tests"}],
        "tags": ["test"],
        "participants": [{"alias": "designer", "bind": "hash", "romDigest": rom}],
        "start": "go",
        "nodes": [
            {"id": "go", "type": "event", "event": "start"},
            {
                "id": "draft",
                "type": "task",
                "agent": "designer",
                "requires": {
                    "capabilities": caps if caps is not None else ["build-dag"],
                    "skills": skills if skills is not None else ["expertise-designer"],
                },
                "completion": {"type": "artifact", "produces": "design-doc"},
            },
            {"id": "done", "type": "event", "event": "end"},
        ],
        "edges": [{"from": "go", "to": "draft"}, {"from": "draft", "to": "done"}],
    }


TEAM_PUBLISHER = "io.github.example-acx"


@functools.cache
def team_key() -> PrivateKey:
    """The one run-time key the vector team workflow is signed with (the same for every module)."""
    return generate_ed25519()


@functools.cache
def signed_team() -> dict[str, Any]:
    """The vector team workflow signed by team_key() for TEAM_PUBLISHER (shared: copy before editing)."""
    doc = json.loads((env.vectors() / "workflow" / "team.cal.json").read_text(encoding="utf-8"))
    return sign_workflow(doc, publisher_id=TEAM_PUBLISHER, key=team_key(), now=NOW)


def restatement(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """signed_team() with its statement edited by `edit` and signed again with the same key."""
    doc = copy.deepcopy(signed_team())
    envelope = doc["integrity"]["envelope"]
    stmt = json.loads(base64.b64decode(envelope["payload"]))
    edit(stmt)
    key = team_key()
    new = dsse.sign(dsse.INTOTO_PAYLOAD_TYPE, jcs(stmt), key, key.public().keyid()).to_json()
    doc["integrity"]["envelope"] = new
    return doc
