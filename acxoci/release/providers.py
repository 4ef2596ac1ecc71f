"""Providers: how the release reaches the outside world to OBSERVE it (registries, mirrors, status
lists) and to JUDGE what it published. They normalise what they see into small typed facts; they
decide nothing about the goal (the kernel does: monitors.py, quota.py, audit.py).

`accept` is the acceptance read-back: one call, (reference, digest, consumer policy) → verdict.
It judges the published reference the way a consumer will (today: `acx install`'s checks into a
throwaway store, reached through the tag exactly as a consumer reaches it); it is the one place
to wire the project's single acceptance decision into the release."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.errors import AcxError, AuthError, NotFound, TransientError
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.oci.reference import parse_reference
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.target import Target, open_target
from attest.canonical import jcs_digest


@dataclass(frozen=True)
class Verdict:
    """The acceptance decision for one published reference: accepted or not, each check's status,
    the failed checks, and whether the reference did not even hold the released digest."""

    reference: str
    digest: str
    accepted: bool
    policy_digest: str
    checks: dict[str, str] = field(default_factory=dict)
    failed: tuple[dict[str, Any], ...] = ()
    mismatch: bool = False
    found: Any = None

    def reasons(self) -> str:
        return "; ".join(f"{c.get('id')}: {c.get('reason')}" for c in self.failed)

    def to_json(self) -> dict[str, Any]:
        return {"reference": self.reference, "digest": self.digest, "accepted": self.accepted,
                "policyDigest": self.policy_digest, "checks": self.checks, "failed": list(self.failed),
                "mismatch": self.mismatch}


def accept(reference: str, digest: str, policy: VerificationPolicy, *, remote: RemoteOptions,
           now: datetime) -> Verdict:
    """Would a consumer under `policy` accept `reference` (REPO:TAG, or REPO@DIGEST), and is it the
    released `digest`? Registry trouble raises its AcxError (the caller classifies it)."""
    from acxoci.install.install import install
    from acxoci.install.store import Store

    ref = parse_reference(reference)
    if ref.tag is not None and ref.digest is None:  # the consumer's tag must hold the released digest
        target, _ = open_target(ref.repo_string(), remote, create=False)
        got = resolve_digest(target, ref.tag)
        if got != digest:
            why = f"{reference} resolves to {got or 'nothing'}, not the released {digest}"
            return Verdict(reference, digest, False, policy.digest, {},
                           ({"id": "content-digest", "reason": why},), mismatch=True)
    try:
        with tempfile.TemporaryDirectory(prefix="acx-release-accept-") as tmp:
            outcome = install(reference, policy=policy, store=Store(Path(tmp) / "store"), now=now,
                              remote=remote)
    except (TransientError, AuthError):
        raise  # the registry could not be asked: no verdict
    except AcxError as exc:  # what the reference holds is no installable artifact: a refusal
        return Verdict(reference, digest, False, policy.digest, {},
                       ({"id": exc.kind, "reason": exc.one_line()},))
    checks: dict[str, str] = {c.id: str(c.status) for c in outcome.checks}
    failed = tuple(c.to_json() for c in outcome.failed)
    got = outcome.digest
    if got is not None and got != digest:
        moved = {"id": "content-digest",
                 "reason": f"{reference} resolves to {got}, not the released {digest}"}
        return Verdict(reference, digest, False, policy.digest, checks, (*failed, moved), mismatch=True)
    found = next((c.details.get("found") for c in outcome.checks if c.id == "attestations"), None)
    mismatch = any(c.id == "content-digest" for c in outcome.failed)
    return Verdict(reference, digest, outcome.status == "installed", policy.digest, checks, failed, mismatch,
                   found)


def resolve_digest(target: Target, reference: str) -> str | None:
    """The digest `reference` (a tag, or a digest) resolves to at a replica, or None when it is
    absent there. Registry trouble raises (host_failure for the caller)."""
    try:
        return target.resolve(reference).digest
    except NotFound:
        return None


def status_list_facts(url: str, now: datetime) -> tuple[str | None, str]:
    """The `validFrom` and JCS digest of the status list at `url` (https URL or OCI reference),
    fetched by the one status-list fetcher."""
    from acxoci.level.status import fetch_list

    doc = fetch_list(url, now=now).doc
    valid_from = doc.get("validFrom")
    return (valid_from if isinstance(valid_from, str) else None), jcs_digest(doc)


def probe(target: Target) -> None:
    """Is the registry behind `target` answering (GET /v2/)? Raises its AcxError when not; an OCI
    layout always answers."""
    transport = getattr(target, "transport", None)
    if transport is not None:
        transport.ping()


def registry_of(repository: str) -> str | None:
    """The host of a repository string (None for an OCI layout)."""
    ref = parse_reference(repository)
    return None if ref.layout_path is not None else ref.host
