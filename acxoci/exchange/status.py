"""The lifecycle ledger `status.json` (`acx.registry-status/1`): parse it strictly, validate it, look
a release up by its immutable identity, and decide what an install does with that status (pure).

An identity is `(artifactType, publisherId, id, version, digest)`; artifactType is `agent`,
`workflow` or `agent-graph`. Statuses: `deprecated` (install warns), `superseded` (install warns
and names the successor), `withdrawn` (install refuses). A release without an entry is `active`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from msgspec import UnsetType

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.trust import RFC3339_RE
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.exchange_status import ExchangeStatusDoc, ExchangeStatusDocIdentity
from acxoci.documents.lifecycle import LifecycleRecordDocIdentity
from acxoci.errors import InvalidInput

SCHEMA = "acx.registry-status/1"
EPOCH_MS = "1970-01-01T00:00:00.000Z"
MAX_LEDGER_BYTES = 16 * 1024 * 1024
MAX_ENTRIES = 100_000
ARTIFACT_TYPES = ("agent", "workflow", "agent-graph")
STATUSES = ("deprecated", "withdrawn", "superseded")
SEVERITY = {"active": 0, "deprecated": 1, "superseded": 2, "withdrawn": 3}
ID_RE = re.compile(r"^[a-z][a-z0-9._-]{0,127}$")
AGENT_ID_RE = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
PUBLISHER_RE = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*(?:[./][a-z0-9][a-z0-9._-]*)*$"
)
SEMVER_RE = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+(?:[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$",
    re.ASCII,
)
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
IDENTITY_KEYS = ("artifactType", "publisherId", "id", "version", "digest")
#: An identity as a ledger entry or a lifecycle record carries it (the same members).
Identity = ExchangeStatusDocIdentity | LifecycleRecordDocIdentity
ENTRY_KEYS = ("artifact", "status", "reason", "recordedAt", "successor", "advisory")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime, or None when it is not one."""
    if not isinstance(value, str) or not RFC3339_RE.fullmatch(value):
        return None
    text = value.replace("Z", "+00:00")
    main, _, rest = text.partition(".")
    if rest:  # keep at most microseconds
        frac = re.match(r"[0-9]+", rest)
        assert frac is not None
        text = f"{main}.{frac.group(0)[:6].ljust(6, '0')}{rest[frac.end() :]}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def identity_key(identity: Any) -> tuple[str, ...]:
    """The lookup key of an identity (missing parts are empty)."""
    d = identity if isinstance(identity, dict) else {}
    return tuple(str(d.get(k) or "") for k in IDENTITY_KEYS)


def coordinate(identity: dict[str, Any]) -> str:
    """`publisher/id@version` for messages."""
    return f"{identity.get('publisherId')}/{identity.get('id')}@{identity.get('version')}"


def _identity_issues(identity: Identity, path: str) -> list[str]:
    issues = []
    if identity.artifact_type not in ARTIFACT_TYPES:
        issues.append(f"{path}.artifactType is invalid")
    for key, value, rx in (
        ("publisherId", identity.publisher_id, PUBLISHER_RE),
        ("id", identity.id, ID_RE),
        ("version", identity.version, SEMVER_RE),
        ("digest", identity.digest, DIGEST_RE),
    ):
        if not rx.match(value):
            issues.append(f"{path}.{key} is invalid")
    if identity.artifact_type == "agent" and not AGENT_ID_RE.fullmatch(identity.id):
        issues.append(f"{path}.id must be a lowercase agent registry slug")
    return issues


def _known(doc: dict[str, Any], keys: tuple[str, ...], path: str, issues: list[str]) -> dict[str, Any]:
    """`doc` without its unknown members, each reported by name."""
    issues += [f"{path} contains unknown property {k!r}" for k in doc if k not in keys]
    return {k: v for k, v in doc.items() if k in keys}


def _named(doc: dict[str, Any], issues: list[str]) -> dict[str, Any]:
    """The ledger with unknown members reported and left out, so the model decodes the rest."""
    out = _known(doc, ("schemaVersion", "updatedAt", "entries"), "registry status", issues)
    entries = out.get("entries")
    if isinstance(entries, list):
        kept: list[Any] = []
        for i, e in enumerate(entries[: MAX_ENTRIES + 1]):
            if isinstance(e, dict):
                e = _known(e, ENTRY_KEYS, f"entries[{i}]", issues)
                for k in ("artifact", "successor"):
                    if isinstance(e.get(k), dict):
                        e[k] = _known(e[k], IDENTITY_KEYS, f"entries[{i}].{k}", issues)
            kept.append(e)
        out["entries"] = kept
    return out


def ledger_issues(doc: Any) -> list[str]:
    """Every way `doc` breaks `acx.registry-status/1` (empty when valid). Unknown members are
    named; the rest is decoded into the ledger's model (a wrong type names its JSON pointer) and
    its values checked."""
    if not isinstance(doc, dict):
        return ["$: registry status must be an object"]
    issues: list[str] = []
    known = _named(doc, issues)
    entries_raw = known.get("entries")
    if isinstance(entries_raw, list) and len(entries_raw) > MAX_ENTRIES:
        return [*issues, f"registry status has more than {MAX_ENTRIES} entries"]
    try:
        ledger = decode_as(known, ExchangeStatusDoc, document="registry status")
    except DocumentTypeError as exc:
        return [*issues, str(exc)]
    if ledger.schema_version != SCHEMA:
        issues.append(f"registry status schemaVersion must be {SCHEMA}")
    if parse_time(ledger.updated_at) is None:
        issues.append("registry status updatedAt must be RFC 3339")
    seen: set[tuple[str, ...]] = set()
    for i, e in enumerate(ledger.entries):
        path = f"entries[{i}]"
        issues += _identity_issues(e.artifact, f"{path}.artifact")
        if e.status not in STATUSES:
            issues.append(f"{path}.status is invalid")
        if len(e.reason.strip()) < 10 or len(e.reason) > 1000:
            issues.append(f"{path}.reason must be a 10-1000 character string")
        if parse_time(e.recorded_at) is None:
            issues.append(f"{path}.recordedAt must be RFC 3339")
        succ = None if isinstance(e.successor, UnsetType) else e.successor
        art = _key(e.artifact)
        if succ is not None:
            issues += _identity_issues(succ, f"{path}.successor")
            if succ.artifact_type != e.artifact.artifact_type:
                issues.append(f"{path}.successor.artifactType must match the artifact's")
            if _key(succ) == art:
                issues.append(f"{path}.successor must differ from the artifact")
            if e.status == "superseded" and _key(succ)[1:4] == art[1:4]:
                issues.append(f"{path}.successor must use a different coordinate")
        if e.status == "superseded" and succ is None:
            issues.append(f"{path}.successor is required when status is superseded")
        adv = None if isinstance(e.advisory, UnsetType) else e.advisory
        if adv is not None and not re.match(r"^https://[^\s/]+", adv):
            issues.append(f"{path}.advisory must be an absolute https URI")
        if art in seen:
            issues.append(f"{path}.artifact duplicates an earlier entry")
        seen.add(art)
    return list(dict.fromkeys(issues))


def _key(identity: Identity) -> tuple[str, ...]:
    return (identity.artifact_type, identity.publisher_id, identity.id, identity.version, identity.digest)


@dataclass(frozen=True)
class Ledger:
    """A validated ledger: the document and its entries by identity."""

    doc: dict[str, Any]
    by_identity: dict[tuple[str, ...], dict[str, Any]]

    @property
    def updated_at(self) -> str:
        return str(self.doc.get("updatedAt"))

    @property
    def entries(self) -> list[dict[str, Any]]:
        return list(self.doc.get("entries") or [])

    def lifecycle(self, identity: dict[str, Any]) -> dict[str, Any]:
        """The index's `registryStatus` object for one release."""
        e = self.by_identity.get(identity_key(identity))
        if e is None:
            return {
                "status": "active",
                "reason": None,
                "recordedAt": None,
                "successor": None,
                "advisory": None,
            }
        return {
            "status": e["status"],
            "reason": e["reason"],
            "recordedAt": e["recordedAt"],
            "successor": e.get("successor"),
            "advisory": e.get("advisory"),
        }


def empty_ledger() -> Ledger:
    """What a folder without status.json means: nothing deprecated, updatedAt the epoch."""
    return Ledger({"schemaVersion": SCHEMA, "updatedAt": EPOCH_MS, "entries": []}, {})


def parse_ledger(data: bytes, where: str = "status.json") -> Ledger:
    """Parse (strict JSON: duplicate keys refused) and validate a ledger; InvalidInput otherwise."""
    if len(data) > MAX_LEDGER_BYTES:
        raise InvalidInput(f"ledger exceeds {MAX_LEDGER_BYTES} bytes", where=where)
    try:
        doc = loads_strict(data)
    except AttestError as exc:
        raise InvalidInput(f"ledger is not valid JSON: {exc}", where=where) from exc
    issues = ledger_issues(doc)
    if issues:
        raise InvalidInput(
            "invalid acx.registry-status/1 ledger: " + "; ".join(issues[:8]),
            where=where,
            details={"issues": issues[:100]},
        )
    assert isinstance(doc, dict)
    return Ledger(doc, {identity_key(e["artifact"]): e for e in doc["entries"]})


# ---- what an install does with a status (pure) ----------------------------------------------------


@dataclass(frozen=True)
class LifecycleVerdict:
    """`allow` (active), `warn` (deprecated/superseded) or `refuse` (withdrawn), with the message."""

    status: str
    action: str
    message: str
    successor: dict[str, Any] | None = None
    successor_reference: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "action": self.action,
            "message": self.message,
            "successor": self.successor,
            "successorReference": self.successor_reference,
        }


def decide(entries: list[dict[str, Any]], subject: str) -> LifecycleVerdict:
    """The verdict for a release from every lifecycle record found for it: the most severe wins
    (a later `deprecated` never lifts an earlier `withdrawn`; fail closed)."""
    if not entries:
        return LifecycleVerdict("active", "allow", f"{subject}: active")
    worst = max(entries, key=lambda e: SEVERITY.get(str(e.get("status")), 3))
    status = str(worst.get("status"))
    reason = str(worst.get("reason") or "")
    succ = worst.get("successor") if isinstance(worst.get("successor"), dict) else None
    succ_ref = worst.get("successorReference") if isinstance(worst.get("successorReference"), str) else None
    if status not in SEVERITY or status == "active":
        status = "withdrawn" if status not in SEVERITY else status
    if status == "withdrawn":
        return LifecycleVerdict(
            status, "refuse", f"{subject} is withdrawn from the Exchange: {reason}", succ, succ_ref
        )
    if status == "superseded" and succ is not None:
        where = f" ({succ_ref})" if succ_ref else ""
        return LifecycleVerdict(
            status, "warn", f"{subject} is superseded by {coordinate(succ)}{where}: {reason}", succ, succ_ref
        )
    if status == "active":
        return LifecycleVerdict("active", "allow", f"{subject}: active")
    return LifecycleVerdict(status, "warn", f"{subject} is {status}: {reason}", succ, succ_ref)
