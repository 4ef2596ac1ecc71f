"""Level credentials: VC 2.0 + Open Badges 3.0 (fields per ACX brief §10), bound to the verified
ROM digest, signed with eddsa-jcs-2022 (W3C variant), and the verifier's policy check.

Verification order: shape → issuer in registry → proof (W3C or ACX variant) → issuer key eligible →
self-issuance → validity window → gate numbers → ROM binding (anti-transplant) → evidence →
revocation. States: verified, revoked, invalid, unresolved (no status check was possible).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal

import msgspec
from msgspec import UnsetType

from acxoci import jsonschemas
from acxoci.attest import vc
from acxoci.attest.canonical import jcs, loads_strict, sha256_digest
from acxoci.attest.dsse import INTOTO_PAYLOAD_TYPE, Envelope
from acxoci.attest.errors import AttestError
from acxoci.attest.intoto import Statement
from acxoci.attest.keys import PrivateKey, PublicKey
from acxoci.attest.statuslist import StatusEntry
from acxoci.attest.trust import TrustKey, judge_signer, parse_rfc3339
from acxoci.attest.trustdecision import R_UNKNOWN
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.documents.level_credential import LevelCredentialDoc
from acxoci.errors import InvalidInput, RefusedByPolicy
from acxoci.level import trueskill
from acxoci.level.constants import CREDENTIAL_MEDIA_TYPE, LEVEL_ARTIFACT_TYPE, iso
from acxoci.level.gate import gate
from acxoci.level.issuers import IssuerRegistry, issuer_did
from acxoci.level.run import TRAJECTORY_PREDICATE, RunResult, digest_multibase
from acxoci.level.status import StatusOutcome

MEDIA_TYPE: Final = CREDENTIAL_MEDIA_TYPE
ARTIFACT_TYPE: Final = LEVEL_ARTIFACT_TYPE
SCHEMA_FILE: Final = "acx.level-credential-1.schema.json"
CONTEXTS: Final = ["https://www.w3.org/ns/credentials/v2",
                   "https://purl.imsglobal.org/spec/ob/v3p0/context-3.0.3.json",
                   "https://acx.dev/ns/level/v1"]
DEFAULT_VALIDITY: Final = timedelta(days=365)
REASON_MISMATCH: Final = "ROM digest binding mismatch"
REASON_SELF: Final = "self-issuance rejected (issuer == subject)"

State = Literal["verified", "revoked", "invalid", "unresolved"]
StatusCheck = Callable[[StatusEntry, str], StatusOutcome]


def schema_errors(doc: Any) -> list[str]:
    """Schema violations of a level credential, as `$.path: message` strings (empty when valid)."""
    return jsonschemas.schema_errors(SCHEMA_FILE, doc)


def build_credential(result: RunResult, *, cartridge_id: str, issuer: str, valid_from: datetime,
                     valid_until: datetime | None, status: StatusEntry,
                     verifier: str | None = None) -> dict[str, Any]:
    """The unsigned level credential for a run (numbers rounded to 3 decimals). It says how the level
    was measured: the benchmark and held-out slice digests, the solver, and the verifier (default:
    the issuer) that ran the benchmark."""
    bench, ver = result.benchmark_id, result.benchmark_version
    name = result.benchmark_name
    level, tier = result.level, result.tier
    achievement = {
        "id": f"https://acx.dev/achievement/{bench}/{ver}",
        "type": ["Achievement"],
        "name": f"ACX Level — {name}",
        "criteria": {"narrative": (
            f"Independently re-executed on a sealed held-out slice of {name} ({ver}); TrueSkill "
            "conservative rating R=mu-3sigma gated at sigma<1.5 over >=30 games.")},
        "resultDescription": [
            {"id": "career-tier", "type": ["ResultDescription"], "name": "Career Tier",
             "resultType": "RubricCriterionLevel"},
            {"id": "rating", "type": ["ResultDescription"], "name": "Conservative rating (0-50)",
             "resultType": "ScaledScore"},
            {"id": "passrate", "type": ["ResultDescription"], "name": "Held-out pass@1",
             "resultType": "Percent"},
        ],
    }
    res = {
        "type": ["Result"],
        "achievedLevel": tier,
        "acx:ratingMu": trueskill.round3(result.rating.mu),
        "acx:ratingSigma": trueskill.round3(result.rating.sigma),
        "acx:gamesPlayed": result.games_played,
        "acx:acxLevel": level,
        "acx:careerTier": tier,
        "acx:passRate": trueskill.round3(result.pass_rate),
        "acx:cartridgeRomDigest": result.rom_digest,
        "acx:benchmarkId": bench,
        "acx:benchmarkVersion": ver,
        "acx:benchmarkDigest": result.benchmark_digest,
        "acx:heldOutSliceDigest": result.held_out_digest,
        "acx:solver": result.solver,
        "acx:verifier": verifier or issuer,
    }
    evidence = [{
        "id": f"https://acx.dev/evidence/{bench}/{g.task.id}",
        "type": ["Evidence"],
        "acx:digestMultibase": digest_multibase(jcs(g.trajectory)),
        "acx:trajectoryDigest": g.trajectory_digest,
        "acx:dsseEnvelope": g.envelope,
    } for g in result.games]
    doc: dict[str, Any] = {
        "@context": list(CONTEXTS),
        "type": ["VerifiableCredential", "OpenBadgeCredential"],
        "issuer": {"id": issuer, "type": ["Profile"]},
        "validFrom": iso(valid_from),
    }
    if valid_until is not None:
        doc["validUntil"] = iso(valid_until)
    doc["credentialSubject"] = {"type": ["AchievementSubject"], "id": f"urn:acx:cartridge:{cartridge_id}",
                                "achievement": achievement, "result": [res]}
    doc["evidence"] = evidence
    doc["credentialStatus"] = status.to_json()
    return doc


def issue_credential(result: RunResult, *, cartridge_id: str, issuer: str, key: PrivateKey, now: datetime,
                     status: StatusEntry, validity: timedelta | None = DEFAULT_VALIDITY,
                     subject_keyid: str | None = None, verification_method: str | None = None,
                     verifier: str | None = None) -> dict[str, Any]:
    """Gate, build and sign (W3C eddsa-jcs-2022). Refuses a failed gate or a self-issued credential."""
    decision = gate(result.rating.sigma, result.games_played)
    if not decision.ok:
        raise RefusedByPolicy(decision.message, details={"sigma": decision.sigma, "games": decision.games})
    if subject_keyid is not None and key.public().keyid() == subject_keyid:
        raise RefusedByPolicy(f"{REASON_SELF}: the issuer key signed the cartridge ({subject_keyid})")
    doc = build_credential(result, cartridge_id=cartridge_id, issuer=issuer, valid_from=now,
                           valid_until=now + validity if validity is not None else None, status=status,
                           verifier=verifier)
    signed = vc.sign(doc, key, verification_method=verification_method or f"{issuer}#key-1", created=iso(now))
    errors = schema_errors(signed)
    if errors:
        raise InvalidInput("level credential would violate its schema: " + "; ".join(errors[:5]))
    return signed


@dataclass(frozen=True)
class LevelVerdict:
    """The outcome of verifying one level credential."""

    state: State
    reasons: tuple[str, ...]
    issuer: str | None = None
    variant: str | None = None
    keyid: str | None = None
    level: int | None = None
    tier: str | None = None
    mu: float | None = None
    sigma: float | None = None
    games: int | None = None
    rom_digest: str | None = None
    evidence_checked: int = 0
    status: StatusOutcome | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Only `verified` passes."""
        return self.state == "verified"

    def to_json(self) -> dict[str, Any]:
        """JSON view for --json output."""
        return {"state": self.state, "ok": self.ok, "reasons": list(self.reasons), "issuer": self.issuer,
                "proofVariant": self.variant, "issuerKeyId": self.keyid, "level": self.level,
                "tier": self.tier,
                "mu": self.mu, "sigma": self.sigma, "games": self.games, "romDigest": self.rom_digest,
                "evidenceChecked": self.evidence_checked,
                "status": self.status.to_json() if self.status else None}


def _evidence_issues(doc: dict[str, Any], key: PublicKey, rom: str | None) -> tuple[int, list[str]]:
    """Check every evidence envelope: issuer signature, content address, same ROM digest."""
    checked, issues = 0, []
    evidence = doc.get("evidence", [])
    for i, ev in enumerate(evidence if isinstance(evidence, list) else []):
        if not isinstance(ev, dict) or "acx:dsseEnvelope" not in ev:
            continue
        where = f"evidence[{i}]"
        try:
            env = Envelope.from_json(ev["acx:dsseEnvelope"])
            env.verify(key)
            payload = loads_strict(env.payload)
        except AttestError as exc:
            issues.append(f"{where}: {exc}")
            continue
        if isinstance(payload, dict) and payload.get("_type") and env.payload_type == INTOTO_PAYLOAD_TYPE:
            try:
                stmt = Statement.from_json(payload)
            except AttestError as exc:
                issues.append(f"{where}: {exc}")
                continue
            traj = stmt.predicate.get("trajectory")
            if stmt.predicate_type != TRAJECTORY_PREDICATE or not isinstance(traj, dict):
                issues.append(f"{where}: statement is not an ACX trajectory statement")
                continue
            digest = sha256_digest(jcs(traj))
            if stmt.subjects[0].digest.get("sha256") != digest.removeprefix("sha256:"):
                issues.append(f"{where}: trajectory does not match its content address")
                continue
        else:  # the reference's raw trajectory payload
            traj = payload if isinstance(payload, dict) else {}
            digest = sha256_digest(jcs(traj))
        claimed = ev.get("acx:trajectoryDigest", ev.get("acx:digestMultibase"))
        if claimed not in (digest, digest_multibase(jcs(traj))):
            issues.append(f"{where}: digest {claimed} does not match the signed trajectory")
            continue
        if rom is not None and traj.get("romDigest") != rom:
            issues.append(f"{where}: trajectory ROM digest {traj.get('romDigest')} is not {rom}")
            continue
        checked += 1
    return checked, issues


def verify_credential(doc: Any, *, issuers: IssuerRegistry, expected_rom_digest: str, now: datetime,
                      status_check: StatusCheck | None = None, subject_publisher: str | None = None,
                      subject_keyid: str | None = None,
                      variant: vc.Variant | Literal["auto"] = "auto") -> LevelVerdict:
    """Verify a level credential against the verified ROM digest, the issuer registry and `now`.

    Never raises for a bad credential: the verdict carries the state and every reason."""
    if not isinstance(doc, dict):
        return LevelVerdict("invalid", ("$: the credential is not a JSON object",))
    shape = schema_errors(doc)
    if shape:
        return LevelVerdict("invalid", tuple(f"schema {e}" for e in shape[:10]))
    try:
        cred = decode_as(doc, LevelCredentialDoc, document="level credential")
    except DocumentTypeError as exc:  # the schema accepted it: the model and the schema disagree
        return LevelVerdict("invalid", (str(exc),))
    issuer = cred.issuer.id if isinstance(cred.issuer.id, str) and cred.issuer.id else None
    if not cred.credential_subject.result:
        return LevelVerdict("invalid", ("credentialSubject.result is empty",))
    res = cred.credential_subject.result[0]
    vm = cred.proof.verification_method
    base = LevelVerdict("invalid", (), issuer=issuer, rom_digest=res.acx_cartridge_rom_digest)
    if issuer is None or (vm != issuer and not vm.startswith(issuer + "#")):
        return _with(base, f"proof verificationMethod {vm} is not the issuer {issuer}'s")
    entries = issuers.candidates(vm)
    proof = None
    entry = entries[0] if entries else None
    for cand in entries:
        try:
            proof = vc.verify(doc, cand.public_key, variant=variant)
        except AttestError:
            continue
        entry = cand
        break
    if proof is None or entry is None:
        foreign = _foreign_signer(doc, issuers, entries, variant)
        if foreign is not None:  # another registered issuer's key: impersonation; the table says why
            created = cred.proof.created
            j = judge_signer(foreign, signed_publisher=issuers.publisher_of(vm),
                             signed_at=created if isinstance(created, str) else "", now=now)
            return _with(base, j.issues[0] if j.issues else "issuer key is registered to another issuer")
        if not entries:
            return _with(base, f"{R_UNKNOWN}: no key of issuer {issuer_did(vm)}")
        return _with(base, f"proof does not verify with any registered key of {issuer} (tampered credential)")
    reasons: list[str] = []
    match = issuers.judge(entry, signed_at=proof.created or "", now=now)
    if not match.eligible:
        reasons.append(f"issuer key {entry.keyid} not eligible: " + "; ".join(match.issues))
    if proof.proof_purpose != "assertionMethod":
        reasons.append(f"proofPurpose {proof.proof_purpose} is not assertionMethod")
    # Self-issuance: the issuer controls the subject (signed the cartridge / same publisher). The
    # schema already makes the subject a `urn:acx:cartridge:` id, so it can never be the issuer DID.
    if subject_keyid is not None and entry.keyid == subject_keyid:
        reasons.append(f"{REASON_SELF}: the issuer key also signed the cartridge")
    elif subject_publisher is not None and \
            entry.publisher_id.split("/")[0] == subject_publisher.split("/")[0]:
        reasons.append(f"{REASON_SELF}: issuer {entry.publisher_id} is the cartridge publisher")
    try:
        valid_from = parse_rfc3339(cred.valid_from, where="validFrom")
        if now < valid_from:
            reasons.append(f"not yet valid: validFrom {cred.valid_from}")
        if isinstance(cred.valid_until, str):
            valid_until = parse_rfc3339(cred.valid_until, where="validUntil")
            if now > valid_until:
                reasons.append(f"expired: validUntil {cred.valid_until}")
    except AttestError as exc:
        reasons.append(str(exc))
    sigma, games, level = res.acx_rating_sigma, res.acx_games_played, res.acx_acx_level
    decision = gate(sigma, games)
    if not decision.ok:
        reasons.append(decision.message)
    tier = res.acx_career_tier
    if tier != trueskill.career_tier(level):
        reasons.append(f"careerTier {tier} does not match acxLevel {level}")
    rom = res.acx_cartridge_rom_digest
    if rom != expected_rom_digest:
        reasons.append(f"{REASON_MISMATCH}: credential is bound to {rom}, "
                       f"cartridge ROM is {expected_rom_digest}")
    checked, ev_issues = _evidence_issues(doc, entry.public_key, rom)
    reasons.extend(ev_issues)
    status_outcome = None
    state: State = "verified"
    if isinstance(cred.credential_status, UnsetType):
        reasons.append("credential has no credentialStatus (revocation cannot be checked)")
    elif status_check is not None:
        try:
            entry_s = StatusEntry.from_json(msgspec.to_builtins(cred.credential_status))
        except AttestError as exc:
            reasons.append(f"credentialStatus: {exc}")
        else:
            status_outcome = status_check(entry_s, issuer)
            if status_outcome.state == "revoked":
                state = "revoked"
                reasons.insert(0, status_outcome.reason)
            elif status_outcome.state == "failed":
                reasons.append(f"revocation status unavailable: {status_outcome.reason}")
    else:
        state = "unresolved"
    if reasons and state != "revoked":
        state = "invalid"
    if not reasons and state == "unresolved":
        reasons.append("revocation status not checked (no status list given)")
    return LevelVerdict(state, tuple(reasons), issuer, proof.variant, entry.keyid, level, tier,
                        res.acx_rating_mu, sigma, games, rom, checked, status_outcome)


def _foreign_signer(doc: dict[str, Any], issuers: IssuerRegistry, own: list[Any],
                    variant: vc.Variant | Literal["auto"]) -> TrustKey | None:
    """The registry entry of another issuer whose key made this proof, if any (only to name the
    impersonation: such a proof is never accepted)."""
    for k in issuers.registry.keys:
        if k in own:
            continue
        try:
            vc.verify(doc, k.public_key, variant=variant)
        except AttestError:
            continue
        return k
    return None


def _with(base: LevelVerdict, reason: str) -> LevelVerdict:
    return LevelVerdict(base.state, (*base.reasons, reason), issuer=base.issuer, rom_digest=base.rom_digest)
