"""Capability records (`acx.capability/1`): what the agent can do, with a TrueSkill proficiency
that starts unverified. Stored as JCS in the `capabilities` table and covered by the ROM."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import UnsetType

from acxoci.attest.canonical import jcs, loads_strict, sha256_digest
from acxoci.attest.errors import MalformedError
from acxoci.attest.trust import RFC3339_RE as _DATE_RE
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.capability import CapabilityDoc
from acxoci.errors import InvalidInput

SCHEMA_VERSION = "acx.capability/1"
SCALE = "acx.proficiency/trueskill-1"
DEFAULT_LICENSE = "LicenseRef-acx-proprietary"
PURL_ALIASES = {
    "airflow": "pkg:pypi/apache-airflow",
    "dbt": "pkg:pypi/dbt-core",
    "postgres": "pkg:generic/postgresql",
}
RECORD_KEYS = frozenset(
    {
        "schemaVersion",
        "id",
        "taskType",
        "stack",
        "domain",
        "proficiency",
        "evidenceRefs",
        "sampleCount",
        "lastDemonstratedAt",
        "license",
        "createdAt",
        "updatedAt",
    }
)
PROFICIENCY_KEYS = frozenset({"scale", "mu", "sigma", "score", "confidence", "verified"})
#: A seed token (`build-dag`) or a reverse-DNS-namespaced extension (`dev.acx.x:generate-terraform`).
TASK_RE = re.compile(r"^([a-z0-9]+(-[a-z0-9]+)*|[a-z0-9.-]+:[a-z0-9]+(-[a-z0-9]+)*)$")
#: The closed SkillDomain set a capability's `domain` must come from.
DOMAINS = frozenset(
    {"frontend", "backend", "infrastructure", "testing", "architecture", "leadership", "product"}
)
EVIDENCE_KINDS = frozenset({"level-attestation", "memory-artifact", "trajectory"})
#: acxoci's default task type and domain for a role when the package declares no capabilities.
ROLE_DEFAULTS: dict[str, tuple[str, str]] = {
    "reviewer": ("review", "testing"),
    "designer": ("design-experience", "product"),
    "architect": ("design-api", "architecture"),
    "security_expert": ("harden-security", "infrastructure"),
    "tester": ("test-authoring", "testing"),
    "writer": ("write-docs", "product"),
    "devops": ("deploy", "infrastructure"),
    "frontend": ("implement-feature", "frontend"),
}
DEFAULT_TASK = ("implement-feature", "backend")


@dataclass(frozen=True)
class Capability:
    """One stored capability row: id, JCS text and its content hash."""

    id: str
    record: Mapping[str, Any]
    json: bytes
    content_hash: str


def purl(name: str) -> str:
    """A package URL for a stack entry: known aliases, an existing purl, else `pkg:generic/<slug>`."""
    n = name.strip()
    if n.startswith("pkg:"):
        return n
    low = n.lower()
    if low in PURL_ALIASES:
        return PURL_ALIASES[low]
    return "pkg:generic/" + (re.sub(r"[^a-z0-9.+-]+", "-", low).strip("-") or "unknown")


def capability_id(task_type: str, stack: Iterable[str], domain: str) -> str:
    """`cap-` + the first 16 hex of sha256(`taskType|sorted(stack).join(",")|domain`)."""
    text = f"{task_type}|{','.join(sorted(stack))}|{domain}"
    return "cap-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def make_capability(
    task_type: str,
    stack: Iterable[str],
    domain: str,
    *,
    at: str,
    license_id: str = DEFAULT_LICENSE,
    where: str = "capability",
) -> Capability:
    """Build a default (unverified, mu 25, sigma 8.333) capability record dated `at`."""
    if not TASK_RE.fullmatch(task_type):
        raise InvalidInput(f"taskType {task_type!r} must match {TASK_RE.pattern}", where=where)
    if domain not in DOMAINS:
        raise InvalidInput(f"domain {domain!r} must be one of {sorted(DOMAINS)}", where=where)
    purls = sorted({purl(s) for s in stack})
    record: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "id": capability_id(task_type, purls, domain),
        "taskType": task_type,
        "stack": purls,
        "domain": domain,
        "proficiency": {
            "scale": SCALE,
            "mu": 25,
            "sigma": 8.333,
            "score": 0,
            "confidence": 0,
            "verified": False,
        },
        "evidenceRefs": [],
        "sampleCount": 0,
        "lastDemonstratedAt": at,
        "license": license_id,
        "createdAt": at,
        "updatedAt": at,
    }
    text = jcs(record)
    return Capability(record["id"], record, text, sha256_digest(text))


def capabilities_for(
    role: str, tech_stack: Sequence[str], declared: Sequence[Mapping[str, Any]] | None, *, at: str
) -> list[Capability]:
    """The package's declared capabilities (`capabilities.json`: [{taskType, stack, domain}]) or one
    default derived from the role and tech stack; sorted by id, duplicates refused."""
    out: list[Capability] = []
    if declared is not None:
        for i, d in enumerate(declared):
            w = f"capabilities.json[{i}]"
            tt, st, dom = d.get("taskType"), d.get("stack", []), d.get("domain", DEFAULT_TASK[1])
            if not isinstance(tt, str) or not isinstance(st, list) or not isinstance(dom, str):
                raise InvalidInput(
                    "a capability needs taskType (string), stack (array), domain (string)", where=w
                )
            out.append(make_capability(tt, [str(s) for s in st], dom, at=at, where=w))
    else:
        tt, dom = ROLE_DEFAULTS.get(role, DEFAULT_TASK)
        out.append(make_capability(tt, tech_stack, dom, at=at))
    ids = [c.id for c in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InvalidInput(f"capabilities {dup} are declared twice", where="capabilities.json")
    return sorted(out, key=lambda c: c.id)


def read_capability(json_text: bytes | str) -> CapabilityDoc | None:
    """A stored capability row as its model, or None when it is not JSON or not well-typed (the
    spec check names why; readers that only use capabilities skip such a row)."""
    try:
        return decode_as(loads_strict(json_text), CapabilityDoc, document="capability")
    except (MalformedError, DocumentTypeError):
        return None


def capability_issues(cap_id: str, json_text: bytes, content_hash: str) -> list[str]:
    """Structural problems of a stored capability row (used by `acx cartridge spec`)."""
    try:
        doc = loads_strict(json_text)
    except ValueError:
        return ["json column is not JSON"]
    out: list[str] = []
    if sha256_digest(json_text) != content_hash:
        out.append("content_hash does not match the json column")
    if not isinstance(doc, dict):
        return [*out, "record is not an object"]
    extra, missing = set(doc) - RECORD_KEYS, RECORD_KEYS - set(doc) - {"license"}
    if extra:
        out.append(f"unknown keys {sorted(extra)}")
    if missing:
        out.append(f"missing keys {sorted(missing)}")
    if extra or missing:
        return out
    try:
        rec = decode_as(doc, CapabilityDoc, document="capability")
    except DocumentTypeError as exc:
        return [*out, f"{exc.pointer}: {str(exc).removeprefix(f'capability: {exc.pointer}: ')}"]
    if rec.schema_version != SCHEMA_VERSION:
        out.append(f"schemaVersion is {rec.schema_version!r}")
    if rec.id != cap_id:
        out.append(f"record id {rec.id!r} differs from row id")
    prof = rec.proficiency
    if prof.scale != SCALE:
        out.append(
            "proficiency must be {scale: acx.proficiency/trueskill-1, mu, sigma, score, confidence, verified}"
        )
    if not all(s.startswith("pkg:") for s in rec.stack):
        out.append("stack must be an array of purls")
    elif capability_id(rec.task_type, rec.stack, rec.domain) != rec.id:
        out.append("id does not match taskType|stack|domain")
    refs = rec.evidence_refs
    if not all(e.kind in EVIDENCE_KINDS and e.ref.strip() for e in refs):
        out.append("evidenceRefs must be [{kind: level-attestation|memory-artifact|trajectory, ref}]")
    elif prof.verified and not any(e.kind == "level-attestation" for e in refs):
        out.append("verified proficiency without level-attestation evidence")
    if not TASK_RE.fullmatch(rec.task_type):
        out.append("taskType is invalid")
    if rec.domain not in DOMAINS:
        out.append(f"domain {rec.domain!r} is not one of {sorted(DOMAINS)}")
    if not all(math.isfinite(v) for v in (prof.mu, prof.sigma, prof.score, prof.confidence)):
        out.append("proficiency numbers must be numbers")
    else:
        if prof.sigma < 0:
            out.append(f"$.proficiency.sigma: {prof.sigma} must be >= 0")
        out += [f"$.proficiency.{k}: {v} must be within 0..1"
                for k, v in (("score", prof.score), ("confidence", prof.confidence)) if not 0 <= v <= 1]
    if rec.sample_count < 0:
        out.append("sampleCount must be a non-negative integer")
    for k, v in (("lastDemonstratedAt", rec.last_demonstrated_at), ("createdAt", rec.created_at),
                 ("updatedAt", rec.updated_at)):
        if not _DATE_RE.fullmatch(v):
            out.append(f"{k} must be RFC 3339")
    if not isinstance(rec.license, UnsetType) and not rec.license.strip():
        out.append("license must be a non-empty string")
    return out
