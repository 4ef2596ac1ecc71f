"""Providers: how the release reaches the outside world to OBSERVE it (registries, mirrors, status
lists) and to JUDGE what it published. They normalise what they see into small typed facts; they
decide nothing about the goal (the kernel does: monitors.py, quota.py, audit.py).

`accept` is the acceptance read-back: one call, (reference, digest, consumer policy) → verdict,
asking the project's one acceptance decision (`acxoci/install/judge.py: judge_reference`, the
same one `acx install` and `acx verify REF --policy` ask) about the published reference, reached
through the tag exactly as a consumer reaches it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import jcs_digest
from acxoci.errors import AcxError, AuthError, NotFound, Tampered, TransientError
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.oci.reference import parse_reference
from acxoci.oci.settings import RemoteOptions
from acxoci.oci.target import Target, fetch_bytes, resolve_manifest


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
           now: datetime, roster: Sequence[str] = ()) -> Verdict:
    """Does the project's one acceptance decision (`install.judge.judge_reference`, what `acx install`
    and `acx verify --policy` ask) accept `reference` (REPO:TAG, or REPO@DIGEST) under the consumer
    `policy`, and does the reference hold the released `digest`? Registry trouble raises its AcxError
    (the caller classifies it). A workflow is staffed from `roster` (cartridge references)."""
    import tempfile

    from acxoci.install.judge import Context, judge_reference
    from acxoci.workflow.roster_oci import load_registry_roster

    try:
        with tempfile.TemporaryDirectory(prefix="acx-release-roster-") as tmp:
            pulled = tuple(load_registry_roster(roster, Path(tmp), registry=policy.combined_registry(),
                                                now=now, options=remote)) if roster else ()
            j = judge_reference(reference, Context(policy, now, remote=remote, pulled=pulled))
    except (TransientError, AuthError):
        raise  # the registry could not be asked: no verdict
    except AcxError as exc:  # what the reference holds is no installable artifact: a refusal
        held = _held(reference, remote)
        return Verdict(reference, digest, False, policy.digest, {},
                       ({"id": exc.kind, "reason": exc.one_line()},), mismatch=held not in (None, digest))
    checks: dict[str, str] = {c.id: str(c.status) for c in j.checks}
    failed = tuple(c.to_json() for c in j.failed)
    if j.digest is not None and j.digest != digest:
        moved = {"id": "content-digest",
                 "reason": f"{reference} resolves to {j.digest}, not the released {digest}"}
        return Verdict(reference, digest, False, policy.digest, checks, (*failed, moved), mismatch=True)
    found = next((c.details.get("found") for c in j.checks if c.id == "attestations"), None)
    mismatch = any(c.id == "content-digest" for c in j.failed)
    return Verdict(reference, digest, j.ok, policy.digest, checks, failed, mismatch, found)


def _held(reference: str, remote: RemoteOptions) -> str | None:
    """The digest a tag reference resolves to (None for a digest reference, or when absent)."""
    from acxoci.oci.target import open_target

    ref = parse_reference(reference)
    if ref.tag is None or ref.digest is not None:
        return None
    target, _ = open_target(ref.repo_string(), remote, create=False)
    try:
        return read_back(target, ref.tag)
    except Tampered:
        return "bytes that do not hash to the digest the registry named"


def read_back(target: Target, reference: str) -> str | None:
    """The one read-back of a published or mirrored reference (a tag, or a digest): the digest it
    resolves to, proven by fetching the manifest and hashing the bytes read (`resolve_manifest`'s
    GET; a HEAD header proves nothing: a registry can answer any digest and serve nothing), or None
    when it is absent. Bytes that do not hash to what the registry said raise Tampered; registry
    trouble raises its AcxError (host_failure for the caller)."""
    try:
        desc = resolve_manifest(target, reference)
        if desc.data is None:  # a layout resolves by its index: read the manifest through the verifier
            fetch_bytes(target, desc)
    except NotFound:
        return None
    return desc.digest


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

