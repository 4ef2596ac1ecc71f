"""The one referrer rule every Target applies (docs/decisions/0012, 0004): a listing is a set of
*candidates* gathered from the sources a target has (the Referrers API, the `sha256-<hex>`
fallback tag, a layout's index.json); each candidate's manifest is read within the manifest cap
and kept only when its `subject` is the queried digest. What is kept carries the type and
annotations of its manifest (never what the listing claimed) and the manifest's verified bytes,
so a reader that parses it next fetches nothing. Every other candidate is a typed `Stray`:
reported (discover, verify and cp show them under --json), never listed, never copied.

`check_candidates` is pure but for the one `read` callback the target hands it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.errors import InvalidInput, NotFound, Tampered
from acxoci.oci.descriptor import (
    INDEX_TYPES,
    MANIFEST_LIMIT,
    MANIFEST_TYPES,
    Descriptor,
    is_digest,
    parse_manifest,
    referrer_entry,
)
from acxoci.oci.errors import LimitExceeded, MalformedManifest

Source = Literal["referrers-api", "fallback-tag", "layout-index"]
SOURCE_API: Source = "referrers-api"
SOURCE_TAG: Source = "fallback-tag"
SOURCE_INDEX: Source = "layout-index"

MAX_LISTING_BYTES = 32 * 1024 * 1024
"""Most manifest bytes one listing reads to check its candidates (1,000 honest referrers take
about 1 MiB); past it the listing is refused (LimitExceeded), not cut short."""

MAX_ATTESTATION_LAYERS = 64
"""Most attestation documents read for one artifact: the layers of one cosign `.att` manifest
(all of them, counted as listed), and the distinct documents (bundle referrers + `.att` layers)
judged for one subject. Past it the manifest or the artifact is refused (LimitExceeded), not cut
short: every reader (verify, install, release, cp -r) applies `check_attestation_layers`."""
MAX_ATTESTATION_BYTES = 64 * 1024 * 1024
"""Most bytes of attestation documents read for one artifact (declared sizes, each distinct digest
once); one document is at most 16 MiB (attestation.verify.MAX_ATTESTATION_BYTES)."""


def check_attestation_layers(layers: Sequence[Descriptor], *, where: str) -> None:
    """Refuse attestation layers past MAX_ATTESTATION_LAYERS or MAX_ATTESTATION_BYTES, before any is
    fetched (`where` names the manifest or subject)."""
    if len(layers) > MAX_ATTESTATION_LAYERS:
        raise LimitExceeded(f"{len(layers)} attestation layers (at most {MAX_ATTESTATION_LAYERS} are read)",
                            where=where)
    total = sum(d.size for d in {d.digest: d for d in layers}.values())
    if total > MAX_ATTESTATION_BYTES:
        raise LimitExceeded(f"attestation layers of {total} bytes (at most {MAX_ATTESTATION_BYTES} are "
                            "read)", where=where)


@dataclass(frozen=True)
class Stray:
    """A candidate that is not a referrer of the subject: where it was listed and why it is out.
    `kind`: `subject_mismatch` (its manifest names another subject), `no_subject`, `not_a_manifest`,
    or the error kind its read ended in (`not_found` for a manifest that is gone,
    `manifest_too_large`, `digest_mismatch`, `malformed_manifest`, ...)."""

    digest: str
    source: Source
    kind: str
    reason: str
    claimed_type: str | None = None
    """The artifactType the listing claimed (untrusted: shown, never used)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"digest": self.digest, "source": self.source, "kind": self.kind,
                               "reason": self.reason}
        if self.claimed_type is not None:
            out["claimedArtifactType"] = self.claimed_type
        return out


@dataclass(frozen=True)
class ReferrerListing:
    """The referrers of `subject` (subject checked, typed from their manifests) and the strays."""

    subject: Descriptor
    referrers: tuple[Descriptor, ...] = ()
    strays: tuple[Stray, ...] = ()
    warnings: tuple[str, ...] = ()

    def of_type(self, artifact_type: str | None) -> list[Descriptor]:
        """The referrers whose manifest's artifactType (else config type) is `artifact_type`."""
        if not artifact_type:
            return list(self.referrers)
        return [r for r in self.referrers if r.artifact_type == artifact_type]


def index_entries(data: bytes, where: str) -> list[Any]:
    """The raw `manifests` of a listing index (a Referrers API page, a fallback tag's index): the
    index itself must be strict JSON of the index shape (MalformedManifest otherwise); its
    entries are checked one by one (`candidates`), so one bad entry is a stray, not a failure."""
    try:
        obj = loads_strict(data, max_bytes=MANIFEST_LIMIT)
    except MalformedError as exc:
        raise MalformedManifest(str(exc), where=where) from exc
    if not isinstance(obj, dict) or obj.get("schemaVersion") != 2:
        raise MalformedManifest("a referrers listing is not an image index (schemaVersion 2)", where=where)
    mt = obj.get("mediaType")
    if mt is not None and mt not in INDEX_TYPES:
        raise MalformedManifest(f"a referrers listing has mediaType {str(mt)[:80]!r}", where=where)
    entries = obj.get("manifests")
    if not isinstance(entries, list):
        raise MalformedManifest("a referrers listing has no manifests list", where=where)
    return entries


def listed_candidates(entries: Iterable[Any], source: Source, where: str
               ) -> tuple[list[tuple[Descriptor, Source]], list[Stray]]:
    """Each listed entry as a candidate, or as a stray when it is not a descriptor of our grammar
    (its digest named when it has a well-formed one)."""
    out: list[tuple[Descriptor, Source]] = []
    strays: list[Stray] = []
    for i, e in enumerate(entries):
        try:
            out.append((Descriptor.from_json(e, f"{where}.manifests[{i}]"), source))
        except MalformedManifest as exc:
            digest = e.get("digest") if isinstance(e, dict) else None
            named = digest if isinstance(digest, str) and is_digest(digest) else f"manifests[{i}]"
            strays.append(Stray(named, source, exc.kind, exc.message))
    return out, strays


def check_candidates(
    subject: Descriptor,
    candidates: Iterable[tuple[Descriptor, Source]],
    read: Callable[[Descriptor], bytes],
    *,
    where: str,
    max_entries: int,
    warnings: tuple[str, ...] = (),
    strays: Iterable[Stray] = (),
) -> ReferrerListing:
    """Apply the rule to `candidates` (first source wins for a digest listed twice). `read(desc)`
    returns the digest-verified bytes of a manifest of at most MANIFEST_LIMIT bytes; NotFound,
    Tampered and InvalidInput from it make a stray, anything else (transport, auth) propagates."""
    seen: set[str] = set()
    kept: list[Descriptor] = []
    out_strays: list[Stray] = list(strays)
    spent = 0
    for desc, source in candidates:
        if desc.digest in seen:
            continue
        seen.add(desc.digest)
        if len(seen) > max_entries:
            raise LimitExceeded(f"more than {max_entries} referrers listed", where=where,
                                hint="a subject with this many referrers is refused (options.max_referrers)")

        def stray(kind: str, reason: str, d: Descriptor = desc, s: Source = source) -> None:
            out_strays.append(Stray(d.digest, s, kind, reason, d.artifact_type))

        if desc.media_type not in MANIFEST_TYPES:
            stray("not_a_manifest", f"listed with media type {desc.media_type}")
            continue
        if desc.size > MANIFEST_LIMIT:
            stray("manifest_too_large", f"listed with {desc.size} bytes, over the {MANIFEST_LIMIT}-byte cap")
            continue
        spent += desc.size
        if spent > MAX_LISTING_BYTES:
            raise LimitExceeded(f"the listed referrers' manifests exceed {MAX_LISTING_BYTES} bytes",
                                where=where)
        try:
            data = read(desc.plain())
            m = parse_manifest(data, media_type=desc.media_type, where=f"{where}@{desc.digest}")
        except (NotFound, Tampered, InvalidInput) as exc:
            stray(exc.kind, exc.message)
            continue
        if m.subject is None:
            stray("no_subject", "its manifest has no subject")
            continue
        if m.subject.digest != subject.digest:
            stray("subject_mismatch", f"its manifest's subject is {m.subject.digest}")
            continue
        kept.append(replace(referrer_entry(desc.plain(), m), data=data))
    return ReferrerListing(subject, tuple(kept), tuple(out_strays), warnings)
