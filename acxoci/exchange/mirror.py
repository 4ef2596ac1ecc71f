"""`exchange mirror DIR DEST`: publish every accepted release of an Exchange folder as an OCI artifact
at `DEST/<kind>/<publisher>/<id>:<version>` (a registry prefix, or `oci-layout:DIR` → one layout
per `<kind>/<publisher>/<id>`; the rule is `acxoci.exchange.coordinates`), with its attestations
(the cartridge's own DSSE envelope, its embedded level credentials) and its lifecycle record,
through the existing push and attach machinery.

Idempotent: a release whose tag already holds the same manifest is not pushed again and every
referrer is looked up before it is written, so a rerun uploads nothing. A tag holding *other*
bytes is an immutable coordinate overwritten upstream: Blocked, never replaced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.errors import AttestError
from acxoci.errors import Blocked, NotFound, UsageError, VerificationFailed
from acxoci.exchange.coordinates import repository_path, tagged_path, version_tag
from acxoci.exchange.index import Derived, Release, derive
from acxoci.exchange.lifecycle import push_lifecycle
from acxoci.exchange.status import identity_key
from acxoci.oci.descriptor import MANIFEST_TYPES, Descriptor
from acxoci.oci.digest import Readable, VerifyingReader
from acxoci.oci.reference import parse_reference
from acxoci.oci.target import ReferrerListing, RemoteOptions, Target, open_target

LAYOUT = "oci-layout:"


class CountingTarget:
    """A Target that counts what it uploads (blobs and manifests), delegating everything."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self.blobs = 0
        self.manifests = 0
        self.tag_count = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def resolve(self, reference: str) -> Descriptor:
        return self.inner.resolve(reference)

    def fetch(self, desc: Descriptor) -> VerifyingReader:
        return self.inner.fetch(desc)

    def exists(self, desc: Descriptor) -> bool:
        return self.inner.exists(desc)

    def push(self, desc: Descriptor, content: Readable) -> None:
        if desc.media_type in MANIFEST_TYPES:
            self.manifests += 1
        else:
            self.blobs += 1
        self.inner.push(desc, content)

    def tag(self, desc: Descriptor, tag: str) -> None:
        self.tag_count += 1
        self.inner.tag(desc, tag)

    def tags(self) -> list[str]:
        return self.inner.tags()

    def referrer_listing(self, desc: Descriptor) -> ReferrerListing:
        return self.inner.referrer_listing(desc)

    def referrers(self, desc: Descriptor, artifact_type: str | None = None) -> list[Descriptor]:
        return self.inner.referrers(desc, artifact_type)

    def delete(self, desc: Descriptor) -> None:
        self.inner.delete(desc)


def destination(dest: str, kind: str, publisher: str, artifact_id: str, version: str) -> str:
    """Where one release goes: `DEST/<kind>/<publisher>/<id>:<tag>`."""
    tail = tagged_path(kind, publisher, artifact_id, version)
    if dest.startswith(LAYOUT):
        return f"{LAYOUT}{dest[len(LAYOUT) :].rstrip('/')}/{tail}"
    return f"{dest.rstrip('/')}/{tail}"


def check_destination(dest: str) -> None:
    """DEST is a registry prefix (`host[:port]/path`) or `oci-layout:DIR`, without a tag or digest."""
    if dest.startswith(LAYOUT):
        if not dest[len(LAYOUT) :] or "@" in dest or ":" in dest[len(LAYOUT) :]:
            raise UsageError(f"bad destination {dest!r}", hint="oci-layout:DIR")
        return
    if "@" in dest or "/" not in dest.strip("/"):
        raise UsageError(f"bad destination {dest!r}", hint="REGISTRY/PREFIX, e.g. 127.0.0.1:5000/exchange")
    last = dest.rstrip("/").rsplit("/", 1)[-1]
    if ":" in last:
        raise UsageError(f"destination {dest!r} must not carry a tag", hint="REGISTRY/PREFIX")
    parse_reference(destination(dest, "agent-graph", "io.example", "probe", "1.0.0"))


@dataclass
class MirrorItem:
    """One release mirrored: where, its manifest digest, and what this run uploaded for it."""

    kind: str
    coordinate: str
    reference: str
    digest: str
    status: str  # pushed | unchanged
    blobs_sent: int = 0
    manifests_sent: int = 0
    referrers: list[dict[str, Any]] = field(default_factory=list)
    lifecycle: str = "active"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "coordinate": self.coordinate,
            "reference": self.reference,
            "digest": self.digest,
            "status": self.status,
            "blobsSent": self.blobs_sent,
            "manifestsSent": self.manifests_sent,
            "referrers": self.referrers,
            "lifecycle": self.lifecycle,
        }


@dataclass
class MirrorReport:
    """Every release mirrored, the totals, and the graphs left out (graph support pending)."""

    destination: str
    items: list[MirrorItem]
    pending_graphs: list[str]

    @property
    def blobs_sent(self) -> int:
        return sum(i.blobs_sent for i in self.items)

    @property
    def manifests_sent(self) -> int:
        return sum(i.manifests_sent for i in self.items)

    def to_json(self) -> dict[str, Any]:
        return {
            "destination": self.destination,
            "items": [i.to_json() for i in self.items],
            "blobsSent": self.blobs_sent,
            "manifestsSent": self.manifests_sent,
            "pendingGraphs": self.pending_graphs,
        }


def _embedded_credentials(path: Path) -> list[dict[str, Any]]:
    from acxoci.cartridge.reader import open_cartridge

    out = []
    with open_cartridge(path) as cart:
        if not cart.has_table("attestations"):
            return []
        for row in cart.attestations():
            if row.type != "vc-2.0":
                continue
            try:
                doc = loads_strict(row.document)
            except AttestError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("credentialSubject"), dict):
                out.append(doc)
    return out


def _credential_time(cred: dict[str, Any]) -> datetime:
    """A fixed `created` for a credential's referrer (its validFrom), so a rerun builds the same one."""
    from acxoci.exchange.status import parse_time

    t = parse_time(cred.get("validFrom")) or parse_time(cred.get("issuanceDate"))
    return t or datetime(1970, 1, 1, tzinfo=UTC)


def _attach(target: CountingTarget, subject: Descriptor, release: Release, item: MirrorItem) -> None:
    """The release's attestations: the cartridge's own envelope and embedded level credentials."""
    if release.kind != "agent":
        return
    from acxoci.attestation.attach import attach_envelope
    from acxoci.attestation.content import embedded_envelope
    from acxoci.level.oci import attach_credential, find_credentials

    env = embedded_envelope(release.path)
    if env is not None:
        item.referrers.append({"kind": "dsse-envelope", "digest": attach_envelope(target, subject, env)})
    creds = _embedded_credentials(release.path)
    if not creds:
        return
    have = {hashlib.sha256(jcs(doc)).hexdigest(): d for d, doc in find_credentials(target, subject)}
    for cred in creds:
        key = hashlib.sha256(jcs(cred)).hexdigest()
        desc = have.get(key)
        if desc is None:
            desc = attach_credential(target, subject, cred, now=_credential_time(cred))
        item.referrers.append({"kind": "level-credential", "digest": desc.digest})


def mirror_release(
    release: Release, derived: Derived, dest: str, remote: RemoteOptions, now: datetime
) -> MirrorItem:
    """Push one release (unless already there), then its attestations and lifecycle record."""
    from acxoci.artifact import build, gather, push_file

    ref_text = destination(dest, release.kind, release.publisher, release.id, release.version)
    facts = gather(release.path, verify=True, registry=None, now=now)
    pushed_identity = facts.rom_digest if release.kind == "agent" else facts.workflow_digest
    if pushed_identity != release.digest:  # the file changed between verification and push
        raise VerificationFailed(
            f"{release.rel} changed while mirroring ({pushed_identity} is not the "
            f"verified {release.digest}); nothing pushed for it",
            where=str(release.path),
        )
    built = build(facts)
    inner, _ref = open_target(ref_text, remote, create=True)
    target = CountingTarget(inner)
    tag = version_tag(release.version)
    want = Descriptor(built.descriptor.media_type, built.descriptor.digest, built.descriptor.size)
    try:
        existing: Descriptor | None = target.resolve(tag)
    except NotFound:
        existing = None
    if existing is not None and existing.digest != want.digest:
        raise Blocked(
            f"{ref_text} already holds {existing.digest}, not this release's {want.digest}: an "
            "immutable coordinate changed",
            where=ref_text,
            hint="publish a new version in the Exchange; a mirrored release is never replaced",
        )
    status = "unchanged"
    if existing is None:
        push_file(target, facts, built, tag)
        status = "pushed"
    item = MirrorItem(
        release.kind,
        f"{repository_path(release.kind, release.publisher, release.id)}@{release.version}",
        ref_text,
        want.digest,
        status,
    )
    _attach(target, want, release, item)
    entry = derived.ledger.by_identity.get(identity_key(release.identity()))
    if entry is not None:
        succ = entry.get("successor")
        succ_path = (
            tagged_path(str(succ["artifactType"]), succ["publisherId"], succ["id"], succ["version"])
            if isinstance(succ, dict)
            else None
        )
        desc, _sent = push_lifecycle(target, want, entry, succ_path)
        item.referrers.append({"kind": "lifecycle", "digest": desc.digest, "status": entry["status"]})
        item.lifecycle = str(entry["status"])
    item.blobs_sent, item.manifests_sent = target.blobs, target.manifests
    return item


def mirror(
    root: Path, dest: str, *, now: datetime, remote: RemoteOptions | None = None,
    without_graphs: bool = False, note: Callable[[str], None] | None = None,
) -> MirrorReport:
    """Verify the whole folder (as `exchange verify` does), refuse if anything is rejected, then
    mirror every release (`note` is told which one, n of total, as each starts)."""
    check_destination(dest)
    derived = derive(root, now=now, allow_pending_graphs=without_graphs)
    if derived.rejected:
        raise VerificationFailed(
            f"the exchange does not verify ({len(derived.rejected)} rejected); nothing was mirrored",
            where=str(root),
            details={"rejected": [r.to_json() for r in derived.rejected[:100]]},
        )
    opts = remote or RemoteOptions()
    items = []
    for n, r in enumerate(derived.releases, 1):
        if note is not None:
            note(f"{n}/{len(derived.releases)} {r.kind} {r.publisher}/{r.id}:{r.version}")
        items.append(mirror_release(r, derived, dest, opts, now))
    return MirrorReport(dest, items, derived.pending_graphs)
