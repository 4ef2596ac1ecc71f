"""The Exchange's lifecycle in OCI: each `status.json` entry of a mirrored release travels as a
referrer of the release's manifest (artifactType `application/vnd.acx.registry-status.v1`, one JSON
layer), so a status can be added after publication without touching the release's digest.

`lifecycle_verdict` is what the one acceptance decision reads (acxoci/install/judge.py): those
referrers, never older than the newest record seen, through `status.decide` (withdrawn refuses,
deprecated warns, superseded warns and names the successor).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.typed import decode_as
from acxoci.documents.lifecycle import LifecycleRecordDoc
from acxoci.errors import AcxError, InvalidInput, NotFound
from acxoci.exchange.coordinates import KINDS, repository_path
from acxoci.exchange.status import SEVERITY, LifecycleVerdict, decide
from acxoci.freshness import HighWater
from acxoci.oci.descriptor import EMPTY_DATA, Descriptor, descriptor_for, parse_manifest
from acxoci.oci.reference import parse_reference
from acxoci.oci.shapes import referrer_manifest
from acxoci.oci.target import Target, fetch_bytes, push_bytes

ARTIFACT_TYPE = "application/vnd.acx.registry-status.v1"
LAYER_TYPE = "application/vnd.acx.registry-status.v1+json"
RECORD_SCHEMA = "acx.registry-lifecycle/1"
ANNOTATION_STATUS = "vnd.acx.registry-status"
ANNOTATION_SUCCESSOR = "vnd.acx.registry-successor"
MAX_RECORDS = 64
CLOCK_SKEW = 300.0
MAX_RECORD_BYTES = 64 * 1024
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def lifecycle_record(entry: dict[str, Any], successor_path: str | None) -> bytes:
    """The referrer's layer: the ledger entry as is, plus where the successor sits relative to the
    mirror's prefix (`<kind>/<publisher>/<id>:<tag>`, so the record names no registry host and a copied
    mirror stays right). JCS: the same entry always gives the same bytes."""
    doc: dict[str, Any] = {
        "schemaVersion": RECORD_SCHEMA,
        **{k: v for k, v in entry.items() if v is not None},
    }
    if successor_path is not None:
        doc["successorPath"] = successor_path
    return jcs(doc)


def push_lifecycle(
    target: Target, subject: Descriptor, entry: dict[str, Any], successor_path: str | None
) -> tuple[Descriptor, int]:
    """Attach one lifecycle record to `subject` unless it is already there; returns the referrer
    and how many objects were uploaded (0 when it already existed)."""
    data = lifecycle_record(entry, successor_path)
    layer = descriptor_for(data, LAYER_TYPE)
    ann = {ANNOTATION_STATUS: str(entry.get("status"))}
    succ = entry.get("successor")
    if isinstance(succ, dict):
        ann[ANNOTATION_SUCCESSOR] = f"{succ.get('publisherId')}/{succ.get('id')}@{succ.get('version')}"
    built = referrer_manifest(
        subject=subject.plain(),
        artifact_type=ARTIFACT_TYPE,
        file_digest=layer.digest,
        file_size=layer.size,
        media_type=LAYER_TYPE,
        title="registry-status.json",
        created=str(entry.get("recordedAt")),
        annotations=ann,
    )
    manifest = Descriptor(OCI_MANIFEST, built.descriptor.digest, built.descriptor.size)
    if target.exists(manifest):
        return manifest, 0
    sent = 0
    for desc, body in ((built.blobs[0], EMPTY_DATA), (layer, data)):
        if not target.exists(desc):
            target.push(desc, io.BytesIO(body))
            sent += 1
    push_bytes(target, built.data, OCI_MANIFEST, artifact_type=ARTIFACT_TYPE)
    return manifest, sent + 1


def read_lifecycle(target: Target, subject: Descriptor) -> list[dict[str, Any]]:
    """Every lifecycle record attached to `subject` (bounded). A record that cannot be parsed counts
    as `withdrawn`: an unreadable status must never let a withdrawn release through. Bytes that do
    not match their digest (Tampered) and transport failures propagate to the caller."""
    try:
        # the one listing: only referrers whose own manifest names `subject`, typed by it, so a
        # record of another release listed here (a planted fallback entry) cannot withdraw this one
        found = target.referrers(subject.plain(), ARTIFACT_TYPE)
    except NotFound:
        return []
    out: list[dict[str, Any]] = []
    for entry in found[:MAX_RECORDS]:
        try:
            m = parse_manifest(fetch_bytes(target, entry), media_type=entry.media_type, where=entry.digest)
            layers = [la for la in m.layers if la.media_type == LAYER_TYPE]
            if len(layers) != 1:
                raise NotFound("no lifecycle layer")
            doc = loads_strict(fetch_bytes(target, layers[0], limit=MAX_RECORD_BYTES))
            if not isinstance(doc, dict) or doc.get("schemaVersion") != RECORD_SCHEMA:
                raise NotFound("not a lifecycle record")
            decode_as(doc, LifecycleRecordDoc, document="lifecycle record")  # a wrong type is unreadable
            out.append(doc)
        except (InvalidInput, NotFound, AttestError) as exc:  # Tampered and transport errors propagate
            out.append(
                {"status": "withdrawn", "reason": f"lifecycle record {entry.digest} unreadable: {exc}"}
            )
    if len(found) > MAX_RECORDS:
        out.append({"status": "withdrawn", "reason": f"more than {MAX_RECORDS} lifecycle records"})
    return out


def _successor_reference(record: dict[str, Any], reference: str) -> str | None:
    """Where the successor is in the mirror `reference` came from: its repository with the last
    `<kind>/<publisher>/<id>` replaced by the record's successor path."""
    path, art = record.get("successorPath"), record.get("artifact")
    if not isinstance(path, str) or not isinstance(art, dict) or art.get("artifactType") not in KINDS:
        return None
    try:
        repo = parse_reference(reference, require_ref=False).repo_string()
    except AcxError:
        return None
    tail = "/" + repository_path(str(art["artifactType"]), str(art.get("publisherId")), str(art.get("id")))
    return f"{repo[: -len(tail)]}/{path}" if repo.endswith(tail) else None


def seen_key(repository: str, digest: str) -> str:
    """Where the records seen for a release are remembered: per repository and digest. A record is
    an unsigned statement of the repository it was read from, so one that another repository (a
    hostile mirror) served never counts for this one."""
    return f"{repository}@{digest}"


def _repository(name: str, target: Target) -> str:
    try:
        return parse_reference(name, require_ref=False).repo_string()
    except AcxError:
        return target.name


def lifecycle_verdict(target: Target, subject: Descriptor, name: str, high_water: HighWater | None,
                      now: datetime | None = None) -> LifecycleVerdict:
    """The release's lifecycle verdict (withdrawn refuses, deprecated/superseded warn), never older
    than the newest record `high_water` has seen for it in this repository. `name` is the
    reference as typed."""
    records = read_lifecycle(target, subject)
    if high_water is not None:
        key = seen_key(_repository(name, target), subject.digest)
        records = high_water.lifecycle(key, records, now or datetime.now(UTC),
                                       lambda r: SEVERITY.get(str(r.get("status")), 3))
    return _decide(records, name)


def lifecycle_from_high_water(key: str, name: str, high_water: HighWater,
                              now: datetime, max_age: float | None) -> LifecycleVerdict | None:
    """The verdict from the newest record seen under `key` (`seen_key`), when the registry cannot be
    read: None when nothing was ever seen, or when it was checked longer than `max_age` seconds
    ago (None: any age)."""
    seen = high_water.lifecycle_seen(key)
    if seen is None:
        return None
    records, checked = seen
    if checked > now.timestamp() + CLOCK_SKEW:  # a check stamped in the future proves nothing now
        return None
    if max_age is not None and now.timestamp() - checked > max_age:
        return None
    return _decide(records, name)


def _decide(records: list[dict[str, Any]], name: str) -> LifecycleVerdict:
    for r in records:
        ref = _successor_reference(r, name)
        if ref is not None:
            r["successorReference"] = ref
    return decide(records, name)
