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

from acxoci.errors import InvalidInput
from attest.canonical import loads_strict
from attest.errors import AttestError
from attest.trust import RFC3339_RE

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


def _identity_issues(identity: Any, path: str) -> list[str]:
    if not isinstance(identity, dict):
        return [f"{path} must be an object"]
    issues = [f"{path} contains unknown property {k!r}" for k in identity if k not in IDENTITY_KEYS]
    if identity.get("artifactType") not in ARTIFACT_TYPES:
        issues.append(f"{path}.artifactType is invalid")
    for key, rx in (
        ("publisherId", PUBLISHER_RE),
        ("id", ID_RE),
        ("version", SEMVER_RE),
        ("digest", DIGEST_RE),
    ):
        value = identity.get(key)
        if not isinstance(value, str) or not rx.match(value):
            issues.append(f"{path}.{key} is invalid")
    if identity.get("artifactType") == "agent" and not AGENT_ID_RE.fullmatch(str(identity.get("id") or "")):
        issues.append(f"{path}.id must be a lowercase agent registry slug")
    return issues


def ledger_issues(doc: Any) -> list[str]:
    """Every way `doc` breaks `acx.registry-status/1` (empty when valid)."""
    if not isinstance(doc, dict):
        return ["registry status must be an object"]
    issues = [
        f"registry status contains unknown property {k!r}"
        for k in doc
        if k not in ("schemaVersion", "updatedAt", "entries")
    ]
    if doc.get("schemaVersion") != SCHEMA:
        issues.append(f"registry status schemaVersion must be {SCHEMA}")
    if parse_time(doc.get("updatedAt")) is None:
        issues.append("registry status updatedAt must be RFC 3339")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        return [*issues, "registry status entries must be an array"]
    if len(entries) > MAX_ENTRIES:
        return [*issues, f"registry status has more than {MAX_ENTRIES} entries"]
    seen: set[tuple[str, ...]] = set()
    for i, e in enumerate(entries):
        path = f"entries[{i}]"
        if not isinstance(e, dict):
            issues.append(f"{path} must be an object")
            continue
        issues += [f"{path} contains unknown property {k!r}" for k in e if k not in ENTRY_KEYS]
        issues += _identity_issues(e.get("artifact"), f"{path}.artifact")
        if e.get("status") not in STATUSES:
            issues.append(f"{path}.status is invalid")
        reason = e.get("reason")
        if not isinstance(reason, str) or len(reason.strip()) < 10 or len(reason) > 1000:
            issues.append(f"{path}.reason must be a 10-1000 character string")
        if parse_time(e.get("recordedAt")) is None:
            issues.append(f"{path}.recordedAt must be RFC 3339")
        succ = e.get("successor")
        if succ is not None:
            issues += _identity_issues(succ, f"{path}.successor")
            art = e.get("artifact")
            if isinstance(art, dict) and isinstance(succ, dict):
                if succ.get("artifactType") != art.get("artifactType"):
                    issues.append(f"{path}.successor.artifactType must match the artifact's")
                if identity_key(succ) == identity_key(art):
                    issues.append(f"{path}.successor must differ from the artifact")
                if e.get("status") == "superseded" and identity_key(succ)[1:4] == identity_key(art)[1:4]:
                    issues.append(f"{path}.successor must use a different coordinate")
        if e.get("status") == "superseded" and not isinstance(succ, dict):
            issues.append(f"{path}.successor is required when status is superseded")
        adv = e.get("advisory")
        if adv is not None and (not isinstance(adv, str) or not re.match(r"^https://[^\s/]+", adv)):
            issues.append(f"{path}.advisory must be an absolute https URI")
        key = identity_key(e.get("artifact"))
        if key in seen:
            issues.append(f"{path}.artifact duplicates an earlier entry")
        seen.add(key)
    return list(dict.fromkeys(issues))


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
