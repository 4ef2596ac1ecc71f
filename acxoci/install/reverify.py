"""`acx installed verify [NAME]`: re-check an installed item against its install record — every
file's digest, no file added — and re-check revocation of the level credential relied on at
install time, so a credential revoked since install is reported."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from acxoci.errors import AcxError
from acxoci.install.store import RECORD, InstalledItem, file_digest
from acxoci.install.vpolicy import VerificationPolicy
from attest.canonical import loads_strict, sha256_digest
from attest.errors import AttestError


@dataclass(frozen=True)
class ItemCheck:
    """The re-verification of one installed item."""

    name: str
    digest: str
    files_ok: bool
    revocation: str  # not-applicable | not-revoked | revoked | unknown
    problems: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    signer_ok: bool = True

    @property
    def ok(self) -> bool:
        return self.files_ok and self.signer_ok and self.revocation in ("not-applicable", "not-revoked")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "digest": self.digest, "ok": self.ok, "filesOk": self.files_ok,
                "revocation": self.revocation, "problems": list(self.problems), **self.details}


def file_problems(item: InstalledItem) -> list[str]:
    """Files missing, changed or added since install (record.json itself is the reference)."""
    problems: list[str] = []
    listed = item.record.get("files") or []
    names = set()
    for f in listed:
        rel = str(f.get("path"))
        names.add(rel)
        p = item.path / rel
        if not p.is_file():
            problems.append(f"{rel}: missing")
        elif file_digest(p) != f.get("digest"):
            problems.append(f"{rel}: digest changed (recorded {f.get('digest')}, now {file_digest(p)})")
    for p in sorted(item.path.rglob("*")):
        rel = p.relative_to(item.path).as_posix()
        if p.is_file() and rel != RECORD and rel not in names:
            problems.append(f"{rel}: not in the install record")
    return problems


def _relied_credential(item: InstalledItem) -> tuple[dict[str, Any], str] | None:
    level = item.record.get("level")
    if not isinstance(level, dict) or not level.get("credentialDigest"):
        return None
    folder = item.path / "credentials"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = p.read_bytes()
        if sha256_digest(data) == level["credentialDigest"]:
            doc = loads_strict(data)
            if isinstance(doc, dict):
                return doc, str(level.get("issuer") or "")
    return None


def revocation_now(item: InstalledItem, policy: VerificationPolicy,
                   now: datetime) -> tuple[str, str, dict[str, Any]]:
    """Re-check the relied-on credential's status list now: (state, reason, details)."""
    if not item.record.get("statusLists") and not item.record.get("level"):
        return "not-applicable", "no credential was relied on at install", {}
    try:
        from acxoci.level.issuers import IssuerRegistry
        from acxoci.level.status import check_status
        from attest.statuslist import StatusEntry
        from attest.trust import TrustRegistry
    except ImportError as exc:
        return "unknown", f"revocation checking not available: {exc}", {}
    got = _relied_credential(item)
    if got is None:
        return "unknown", "the relied-on credential is missing from the installed item", {}
    doc, issuer = got
    try:
        entry = StatusEntry.from_json(doc.get("credentialStatus"))
    except (AttestError, AcxError) as exc:
        return "unknown", f"credentialStatus: {exc}", {}
    source = policy.status_list_sources.get(entry.list_credential, entry.list_credential)
    issuers = IssuerRegistry(policy.issuer_registry or TrustRegistry(()))
    outcome = check_status(entry, source=source, issuers=issuers,
                           vc_issuer=issuer, now=now, max_age=timedelta(seconds=policy.max_status_list_age),
                           allow_offline=policy.allow_offline_cached,
                           cache_dir=Path(policy.status_list_cache) if policy.status_list_cache else None)
    details = {"statusList": outcome.to_json()}
    if outcome.state == "revoked":
        return "revoked", f"credential revoked since install: {outcome.reason}", details
    if outcome.state == "valid":
        return "not-revoked", outcome.reason, details
    return "unknown", f"revocation status unavailable: {outcome.reason}", details


def signer_now(item: InstalledItem, policy: VerificationPolicy, now: datetime) -> tuple[bool, dict[str, Any]]:
    """Re-judge the recorded signer (keyid, publisher, signedAt) through install's trust check,
    under the policy as it is now: a key revoked (or no longer tied to the publisher) since
    install is reported. The minimum is portable: a key that merely expired since is not a fault."""
    from dataclasses import replace

    from acxoci.install.checks import SignatureEvidence, check_trust

    kind = item.record.get("kind")
    signer = next((k for k in item.record.get("keys") or []
                   if isinstance(k, dict) and k.get("role") == f"{kind}-signer"), None)
    if signer is None or not isinstance(signer.get("keyid"), str):
        return False, {"status": "unknown", "reason": "the install record names no signer key"}
    pub, signed_at = signer.get("publisherId"), signer.get("signedAt")
    ev = SignatureEvidence("verified", str(item.record.get("trust") or "portable"), "", keyid=signer["keyid"],
                           publisher_id=pub if isinstance(pub, str) else None,
                           signed_at=signed_at if isinstance(signed_at, str) else None)
    result = check_trust(ev, replace(policy, minimum_trust="portable"), now)
    return not result.failed, {"status": result.status, "reason": result.reason, "kind": result.kind,
                               "standing": result.details.get("standing")}


def verify_item(item: InstalledItem, policy: VerificationPolicy, now: datetime) -> ItemCheck:
    """Files against the record, the signer against the policy's registries now, then revocation now."""
    from acxoci.install.install import record_errors

    problems = file_problems(item)
    problems += [f"record.json: {e}" for e in record_errors(item.record)]
    files_ok = not problems
    signer_ok, signer = signer_now(item, policy, now)
    if not signer_ok:
        problems.append(f"signer: {signer['reason']}")
    state, reason, details = revocation_now(item, policy, now)
    if state in ("revoked", "unknown"):
        problems.append(reason)
    details["revocationReason"] = reason
    details["signer"] = signer
    return ItemCheck(item.name, item.digest, files_ok, state, tuple(problems), details, signer_ok)
