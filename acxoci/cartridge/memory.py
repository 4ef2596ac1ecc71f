"""The memory baseline: portable records go to ROM, field-learned ones (with a repoId) are
quarantined unless asked for and then go to SAVE under a privacy-preserving codebase
fingerprint. A fail-closed scrub gate refuses portable records that carry codebase secrets."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import UnsetType

from acxoci.attest.canonical import jcs, sha256_digest
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.memory_record import MemoryRecordDoc
from acxoci.errors import InvalidInput, RefusedByPolicy

PORTABLE_LABEL = "portable-core"
FIELD_LABEL = "field-learned"
FINGERPRINT_FIELDS = (
    "title",
    "summary",
    "sourceType",
    "repoId",
    "projectLabel",
    "timestamp",
    "impact",
    "xpAwarded",
    "tags",
)
_LOWERED = ("title", "summary", "sourceType", "projectLabel", "impact")
REQUIRED_RECORD_KEYS = (
    "id",
    "title",
    "summary",
    "sourceType",
    "portable",
    "codebaseFingerprint",
    "timestamp",
    "impact",
    "xpAwarded",
    "tags",
    "artifactFingerprint",
    "zone",
)
IMPACTS = ("positive", "neutral", "negative")
MEMORY_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
#: What the scrub gate refuses in a portable (ROM) record: each pattern has a reason.
SCRUB_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key material", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    (
        "an access token",
        re.compile(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
            r"xox[baprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9]{20,})"
        ),
    ),
    ("a cloud access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    (
        "an absolute local path",
        re.compile(r"(?:^|[\s(\"'`])(?:/(?:home|Users|root|var|srv|opt|tmp)/|[A-Za-z]:\\)"),
    ),
    ("a credential in a URL", re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.I)),
    ("an e-mail address", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
)


@dataclass(frozen=True)
class MemoryEntry:
    """One record as it will be stored: zone, payload (JCS text), oid and fingerprints."""

    id: str
    zone: str
    record: Mapping[str, Any]
    payload: bytes
    oid: str
    artifact_fingerprint: str
    codebase_fingerprint: str | None
    created_at: str


@dataclass(frozen=True)
class MemoryPartition:
    """The baseline split: ROM entries, SAVE entries, and how many field-learned were quarantined."""

    rom: tuple[MemoryEntry, ...]
    save: tuple[MemoryEntry, ...]
    quarantined: tuple[str, ...]


def artifact_fingerprint(record: Mapping[str, Any]) -> str:
    """First 10 hex of sha1(JCS of the fingerprint fields); text fields trimmed and lowercased
    (the timestamp is kept as is), tags lowercased and sorted."""
    d: dict[str, Any] = {k: record.get(k) for k in FINGERPRINT_FIELDS}
    for k in _LOWERED:
        if isinstance(d[k], str):
            d[k] = d[k].strip().lower()
    tags = d.get("tags")
    d["tags"] = sorted(str(t).lower() for t in tags) if isinstance(tags, list) else []
    return hashlib.sha1(jcs(d)).hexdigest()[:10]


def codebase_fingerprint(salt: bytes, repo: str) -> str:
    """`cbf1_` + the first 40 hex of HMAC-SHA256(salt, repo): names a codebase without revealing it."""
    return "cbf1_" + hmac.new(salt, repo.encode("utf-8"), hashlib.sha256).hexdigest()[:40]


def scrub_problems(record: Mapping[str, Any]) -> list[str]:
    """Why a record may not be published in ROM (empty list = clean)."""
    out: list[str] = []
    for key in ("title", "summary", "markdownPath", "tags"):
        val = record.get(key)
        texts = (
            [val]
            if isinstance(val, str)
            else [t for t in val if isinstance(t, str)]
            if isinstance(val, list)
            else []
        )
        for text in texts:
            for reason, pat in SCRUB_PATTERNS:
                if pat.search(text):
                    out.append(f"{key} contains {reason}")
    return out


def _check_source(i: int, rec: Mapping[str, Any]) -> None:
    where = f"memory-records.json[{i}]"
    rid = rec.get("id")
    if not isinstance(rid, str) or not MEMORY_ID_RE.fullmatch(rid):
        raise InvalidInput(f"record id {rid!r} must match {MEMORY_ID_RE.pattern}", where=f"{where}.id")
    for key in ("title", "summary", "sourceType", "timestamp"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            raise InvalidInput(f"record {rid!r}: {key} must be a non-empty string", where=f"{where}.{key}")
    if rec.get("impact", "neutral") not in IMPACTS:
        raise InvalidInput(f"record {rid!r}: impact must be one of {list(IMPACTS)}", where=f"{where}.impact")
    xp = rec.get("xpAwarded", 0)
    if not isinstance(xp, int) or isinstance(xp, bool):
        raise InvalidInput(f"record {rid!r}: xpAwarded must be an integer", where=f"{where}.xpAwarded")
    tags = rec.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput(f"record {rid!r}: tags must be an array of strings", where=f"{where}.tags")


def _entry(record: dict[str, Any], zone: str, cbf: str | None) -> MemoryEntry:
    payload = jcs(record)
    return MemoryEntry(
        record["id"],
        zone,
        record,
        payload,
        sha256_digest(payload),
        record["artifactFingerprint"],
        cbf,
        record["timestamp"],
    )


def partition(
    records: Sequence[Mapping[str, Any]], *, include_field_learned: bool, salt: bytes
) -> MemoryPartition:
    """Split and normalise the package's records. Raises RefusedByPolicy (the scrub gate, fail-closed)
    if a portable record carries a secret, path or address; InvalidInput for malformed records."""
    rom: list[MemoryEntry] = []
    save: list[MemoryEntry] = []
    quarantined: list[str] = []
    seen: set[str] = set()
    for i, src in enumerate(records):
        _check_source(i, src)
        rid = str(src["id"])
        if rid in seen:
            raise InvalidInput(f"memory record id {rid!r} is repeated", where=f"memory-records.json[{i}].id")
        seen.add(rid)
        repo = src.get("repoId")
        field_learned = repo is not None and repo != ""
        base: dict[str, Any] = {
            "id": rid,
            "title": src["title"],
            "summary": src["summary"],
            "sourceType": src["sourceType"],
            "timestamp": src["timestamp"],
            "impact": src.get("impact", "neutral"),
            "xpAwarded": src.get("xpAwarded", 0),
            "tags": list(src.get("tags", [])),
            "markdownPath": f"knowledge/{rid}.md",
            "origin": "native",
            "repoId": None,
        }
        if not field_learned:
            problems = scrub_problems(base)
            if problems:
                raise RefusedByPolicy(
                    f"scrub gate: portable memory record {rid!r} cannot go to ROM: " + "; ".join(problems),
                    where=f"memory-records.json[{i}]",
                    hint="remove the data, or mark the record field-learned with a repoId",
                )
            base.update(
                {
                    "projectLabel": PORTABLE_LABEL,
                    "repoLabel": PORTABLE_LABEL,
                    "portable": True,
                    "codebaseFingerprint": None,
                    "zone": "rom",
                }
            )
            base["artifactFingerprint"] = artifact_fingerprint(base)
            rom.append(_entry(base, "rom", None))
            continue
        if not include_field_learned:
            quarantined.append(rid)
            continue
        cbf = codebase_fingerprint(salt, str(repo))
        base.update(
            {
                "projectLabel": FIELD_LABEL,
                "repoLabel": FIELD_LABEL,
                "portable": False,
                "codebaseFingerprint": cbf,
                "zone": "save",
            }
        )
        base["artifactFingerprint"] = artifact_fingerprint(base)
        save.append(_entry(base, "save", cbf))
    return MemoryPartition(
        tuple(sorted(rom, key=lambda e: e.id)), tuple(sorted(save, key=lambda e: e.id)), tuple(quarantined)
    )


def fingerprint_view(record: MemoryRecordDoc) -> dict[str, Any]:
    """The fingerprint fields of a decoded record, as `artifact_fingerprint` reads them."""
    def opt(v: Any) -> Any:
        return None if isinstance(v, UnsetType) else v

    return {
        "title": record.title, "summary": record.summary, "sourceType": record.source_type,
        "repoId": opt(record.repo_id), "projectLabel": opt(record.project_label),
        "timestamp": record.timestamp, "impact": record.impact, "xpAwarded": record.xp_awarded,
        "tags": list(record.tags),
    }


def record_issues(record: Any, *, row_zone: str) -> list[str]:
    """Shape and tier problems of a stored memory payload (used by `acx cartridge spec`)."""
    if not isinstance(record, Mapping):
        return ["payload is not a JSON object"]
    out = [f"missing key {k!r}" for k in REQUIRED_RECORD_KEYS if k not in record]
    if out:
        return out
    try:
        rec = decode_as(record, MemoryRecordDoc, document="memory record")
    except DocumentTypeError as exc:
        return [f"{exc.pointer}: {str(exc).removeprefix(f'memory record: {exc.pointer}: ')}"]
    if rec.impact not in IMPACTS:
        out.append(f"impact {rec.impact!r} is not one of {list(IMPACTS)}")
    if rec.zone != row_zone:
        out.append(f"payload zone {rec.zone!r} differs from row zone {row_zone!r}")
    if row_zone == "rom" and (rec.portable is not True or rec.codebase_fingerprint is not None):
        out.append("a ROM record must be portable:true with codebaseFingerprint null")
    if row_zone == "save" and (rec.portable is not False or rec.codebase_fingerprint is None):
        out.append("a SAVE record must be portable:false with a codebaseFingerprint")
    if rec.artifact_fingerprint != artifact_fingerprint(fingerprint_view(rec)):
        out.append("artifactFingerprint does not match the record")
    return out
