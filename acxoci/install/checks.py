"""The checks `acx install` runs, in one fixed, documented order (docs/install.md), as pure
decisions over inputs gathered beforehand (`install.py` does the I/O). Each check says pass, fail,
skip or unavailable; a failed or unavailable check names a reason and a kind, and refuses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from acxoci.attest.errors import AttestError
from acxoci.attest.trust import parse_rfc3339
from acxoci.attest.trustdecision import Decision, decide, signer_facts
from acxoci.install import semver
from acxoci.install.vpolicy import TIER_FLOOR, VerificationPolicy
from acxoci.policy.limits import NUMERIC_FIELDS, ResourceLimits, effective_limits

CheckStatus = Literal["pass", "fail", "skip", "unavailable"]

CHECK_ORDER: tuple[str, ...] = (
    "registry", "content-digest", "signature", "trust", "attestations", "level", "revocation", "harness",
    "policy-budget", "staffing", "version", "lifecycle", "provenance",
)
"""The fixed order. Every check runs (so a refusal lists every failure), even after a failure."""

CHECK_DOC: dict[str, str] = {
    "registry": "the repository matches the policy's allowed registries",
    "content-digest": "the pulled manifest and every blob hash to the digests resolved and referenced",
    "signature": "the cartridge's DSSE signature verifies over the recomputed ROM (nothing tampered)",
    "trust": "the signer is a trusted publisher of the policy, at the policy's minimum trust or better",
    "attestations": "every required attestation format and predicate type is attached and verifies",
    "provenance": "a verified SLSA provenance attestation, signed keylessly by the CI run, names the "
                  "policy's repository, ref and signer workflow in its certificate and its predicate",
    "level": "a level credential from an accepted issuer proves the required level for this ROM",
    "revocation": "the relied-on credential is not revoked, per a fresh enough status list",
    "harness": "the host descriptor satisfies the cartridge's harness requirements",
    "policy-budget": "the package passes `acx cartridge spec` (loop + context policy, harness document, "
                     "skills) and its budget fits the host's limits",
    "staffing": "a workflow's team can be staffed from the installed cartridges and the host's --cartridges "
                "(workflow `ready`)",
    "version": "a SemVer tag names the signed version, and no newer version of the name is replaced",
    "lifecycle": "the release is not withdrawn in the Exchange it came from (newest record seen)",
}

# failure kinds (stable strings, shown with every failed check)
K_REGISTRY = "registry_not_allowed"
K_TAMPERED = "tampered"
K_DIGEST = "digest_mismatch"
K_BAD_SIGNATURE = "bad_signature"
K_UNSIGNED = "unsigned"
K_UNTRUSTED = "untrusted_publisher"
K_REVOKED_KEY = "revoked_key"
K_ROLLBACK = "rollback"
K_TRUST_LOW = "trust_too_low"
K_MISSING_ATT = "missing_attestation"
K_PROVENANCE = "provenance_unmet"
K_LEVEL_LOW = "level_too_low"
K_LEVEL_MISSING = "level_missing"
K_REVOKED = "revoked"
K_STALE = "stale_status_list"
K_STATUS_UNKNOWN = "status_unknown"
K_HARNESS = "harness_unmet"
K_BUDGET = "budget_above_host"
K_POLICY_INVALID = "invalid_policy"
K_UNAVAILABLE = "unavailable"
K_NOT_READY = "not_ready"
K_WITHDRAWN = "withdrawn"
K_DEMO_LEVEL = "demo_level"
K_VERIFIER = "verifier_not_accepted"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: what, status, why, the failure kind, and what it looked at."""

    id: str
    status: CheckStatus
    reason: str
    kind: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def order(self) -> int:
        return CHECK_ORDER.index(self.id) + 1

    @property
    def failed(self) -> bool:
        """Fail and unavailable both refuse: a check that could not run never passes."""
        return self.status in ("fail", "unavailable")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"order": self.order, "id": self.id, "what": CHECK_DOC[self.id],
                               "status": self.status, "reason": self.reason}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.details:
            out["details"] = dict(self.details)
        return out


def _pass(cid: str, reason: str, **details: Any) -> CheckResult:
    return CheckResult(cid, "pass", reason, None, details)


def _fail(cid: str, kind: str, reason: str, **details: Any) -> CheckResult:
    return CheckResult(cid, "fail", reason, kind, details)


def _skip(cid: str, reason: str) -> CheckResult:
    return CheckResult(cid, "skip", reason)


def unavailable(cid: str, reason: str) -> CheckResult:
    """A check whose verifier is missing or could not run: reported, and it refuses."""
    return CheckResult(cid, "unavailable", reason, K_UNAVAILABLE)


# ---- gathered inputs --------------------------------------------------------------------------


@dataclass(frozen=True)
class ContentEvidence:
    """What the pull saw: the digest the reference resolved to, the digest of the manifest bytes
    received, and the first blob that failed verification (if any)."""

    resolved_digest: str
    manifest_digest: str | None
    error: str | None = None
    blobs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SignatureEvidence:
    """The cartridge (or workflow) verifier's verdict, reduced to what the decisions need."""

    status: str
    trust: str
    summary: str
    issues: tuple[str, ...] = ()
    keyid: str | None = None
    publisher_id: str | None = None
    rom_digest: str | None = None
    signed_at: str | None = None


@dataclass(frozen=True)
class AttestationFound:
    """One attestation attached to the artifact and what its verifier said."""

    format: str
    predicate_type: str
    verified: bool
    reason: str = ""
    digest: str | None = None
    keyid: str | None = None
    signer: dict[str, Any] | None = None  # sigstore-verified signer facts (acxoci.attestation)
    provenance: Any = None  # a verified SLSA provenance: acxoci.attestation.provenance.VerifiedProvenance


@dataclass(frozen=True)
class Measurement:
    """How a level was measured, as its (verified) credential says: the benchmark, the solver that
    ran the cartridge, and the verifier that ran the benchmark."""

    benchmark_id: str | None = None
    benchmark_digest: str | None = None
    solver: str | None = None
    verifier: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"benchmarkId": self.benchmark_id, "benchmarkDigest": self.benchmark_digest,
                "solver": self.solver, "verifier": self.verifier}


def measurement_of(doc: Mapping[str, Any]) -> Measurement:
    """The measurement fields of a level credential (absent ones are None)."""
    from acxoci.level.constants import measurement_fields

    return Measurement(**measurement_fields(doc))


@dataclass(frozen=True)
class CredentialFound:
    """One level credential and what the level verifier said (revocation included)."""

    issuer: str
    level: int | None
    tier: str | None
    rom_digest: str | None
    verified: bool
    reason: str = ""
    digest: str | None = None
    keyid: str | None = None
    status_list: str | None = None
    status_index: int | None = None
    revoked: bool | None = None
    status_list_valid_from: datetime | None = None
    status_list_source: str | None = None
    status_stale: bool = False
    status_error: str | None = None
    status_reason: str | None = None
    measurement: Measurement | None = None


@dataclass(frozen=True)
class LifecycleEvidence:
    """The release's Exchange lifecycle: allow, warn (deprecated, superseded), refuse (withdrawn)
    or unknown (could not be read, and no fresh enough record was seen before)."""

    action: str
    message: str
    verdict: Mapping[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class HarnessEvidence:
    """The harness negotiation outcome against the host descriptor."""

    accepted: bool
    unmet: tuple[str, ...] = ()
    descriptor: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class BudgetEvidence:
    """The cartridge's loop + context policy findings and budget, and the host's limits (if given)."""

    policy_errors: tuple[str, ...] = ()
    budget: ResourceLimits | None = None
    host: ResourceLimits | None = None
    present: bool = True


# ---- the decisions --------------------------------------------------------------------------


def check_registry(repo: str, policy: VerificationPolicy) -> CheckResult:
    """Is the repository one the policy allows?"""
    if policy.registry_allowed(repo):
        return _pass("registry", f"{repo} is allowed", repository=repo)
    return _fail("registry", K_REGISTRY, f"{repo} matches none of the allowed registries "
                 f"{list(policy.allowed_registries)}", repository=repo)


def check_content(ev: ContentEvidence | None) -> CheckResult:
    """Did the manifest and every blob hash to what was asked for?"""
    cid = "content-digest"
    if ev is None:
        return unavailable(cid, "nothing was pulled")
    if ev.error is not None:
        return _fail(cid, K_TAMPERED, ev.error, resolvedDigest=ev.resolved_digest)
    if ev.manifest_digest != ev.resolved_digest:
        return _fail(cid, K_DIGEST, f"manifest digest {ev.manifest_digest} != resolved {ev.resolved_digest}",
                     resolvedDigest=ev.resolved_digest)
    return _pass(cid, f"manifest and {len(ev.blobs)} blob(s) match their digests",
                 resolvedDigest=ev.resolved_digest, blobs=[{"role": r, "digest": d} for r, d in ev.blobs])


def check_signature(ev: SignatureEvidence | None) -> CheckResult:
    """Does the signature verify over the content (not tampered, not unsigned, key available)?"""
    cid = "signature"
    if ev is None:
        return unavailable(cid, "no signature verdict (the verifier could not run)")
    details = {"status": ev.status, "trust": ev.trust, "summary": ev.summary, "issues": list(ev.issues),
               "keyid": ev.keyid, "romDigest": ev.rom_digest}
    if ev.status == "invalid" or ev.trust == "tampered":
        return _fail(cid, K_TAMPERED, ev.summary, **details)
    if ev.trust in ("legacy", "unsigned"):
        return _fail(cid, K_UNSIGNED, ev.summary, **details)
    if ev.trust == "unverified" or ev.keyid is None:
        return _fail(cid, K_BAD_SIGNATURE, ev.summary, **details)
    return _pass(cid, ev.summary, **details)


def signer_decision(ev: SignatureEvidence, policy: VerificationPolicy, now: datetime) -> Decision | None:
    """The trust table's answer for this signer under the policy (None: no policy publisher claimed).

    Only the keys the policy ties to the claimed publisher (its registries' entries for it, or keys
    pinned under it) can vouch; any other key is unknown here, whatever the cartridge carries."""
    pub = policy.publisher_for(ev.publisher_id)
    if pub is None or ev.publisher_id is None:
        return None
    # a key the policy ties to another of its publishers is named as such (same reason as everywhere)
    entry = pub.registry.get(ev.keyid) or policy.combined_registry().get(ev.keyid)
    try:  # an unparseable time is no time (the parse error's text is not shown)
        signed: datetime | None = parse_rfc3339(ev.signed_at)
    except AttestError:
        signed = None
    facts = signer_facts(entry, claimed_publisher=ev.publisher_id, signed_at=signed,
                         signed_at_text=ev.signed_at if signed is not None else None, now=now,
                         proof_future=entry is not None and entry.namespace_proof.verified_at > now)
    return decide(facts, minimum=policy.minimum_trust, command="install")


def check_trust(ev: SignatureEvidence | None, policy: VerificationPolicy,
                now: datetime | None = None) -> CheckResult:
    """Is the signer's key tied by the policy to the claimed publisher, at the policy's minimum trust?"""
    cid = "trust"
    if ev is None:
        return unavailable(cid, "no signature verdict (the verifier could not run)")
    details: dict[str, Any] = {"publisherId": ev.publisher_id, "keyid": ev.keyid, "trust": ev.trust,
                               "minimumTrust": policy.minimum_trust}
    at = now if now is not None else datetime.now(UTC)
    if ev.status == "invalid" or ev.trust in ("tampered", "legacy", "unsigned", "unverified"):
        reason = ev.issues[0] if ev.trust == "tampered" and ev.issues else ev.trust
        named = signer_decision(ev, policy, at) if ev.keyid is not None else None
        if named is not None and named.standing == "rejected":  # a revoked key: say so by name
            details["standing"] = named.standing
            return _fail(cid, K_REVOKED_KEY, f"{named.reason}; no trust without a valid signature", **details)
        return _fail(cid, K_UNTRUSTED, f"no trust without a valid signature ({reason})", **details)
    d = signer_decision(ev, policy, at)
    if d is None:
        return _fail(cid, K_UNTRUSTED, f"publisher {ev.publisher_id!r} is not trusted by the policy",
                     **details)
    details["standing"] = d.standing
    if d.accepted:
        return _pass(cid, f"{ev.publisher_id} is {d.standing}: {d.reason}", **details)
    if d.standing == "portable":
        return _fail(cid, K_TRUST_LOW, f"{d.reason}; the policy requires {policy.minimum_trust}", **details)
    kind = K_REVOKED_KEY if d.standing == "rejected" else K_UNTRUSTED
    return _fail(cid, kind, f"{d.reason}; the policy ties no usable key to {ev.publisher_id}", **details)


def check_attestations(found: Sequence[AttestationFound] | None, policy: VerificationPolicy) -> CheckResult:
    """Is every required format and predicate type present with at least one verified attestation?"""
    cid = "attestations"
    if not policy.attestation_formats and not policy.predicate_types:
        return _skip(cid, "the policy requires no attestation")
    if found is None:
        return unavailable(cid, "attestation verification is not available")
    from acxoci.attestation.evidence import missing_evidence

    ok = [a for a in found if a.verified]
    listing = [{"format": a.format, "predicateType": a.predicate_type, "verified": a.verified,
                "reason": a.reason, "digest": a.digest, "keyid": a.keyid} for a in found]
    # the one evidence rule (plain `acx verify` applies it too): a rejected attestation is no veto
    missing = missing_evidence([(a.format, a.predicate_type) for a in ok], policy.attestation_formats,
                               policy.predicate_types)
    if missing:
        bad = [f"{a.format}:{a.predicate_type}: {a.reason}" for a in found if not a.verified]
        why = f"missing verified attestation(s): {', '.join(missing)}"
        if bad:
            why += f" (rejected: {'; '.join(bad)})"
        return _fail(cid, K_MISSING_ATT, why, missing=missing, found=listing)
    return _pass(cid, f"{len(ok)} verified attestation(s) cover the policy", found=listing)


def check_provenance_requirement(found: Sequence[AttestationFound] | None,
                                 policy: VerificationPolicy) -> CheckResult:
    """Does a verified SLSA provenance attestation meet the policy's `provenance` (decision 0036)?"""
    from acxoci.attestation.provenance import check_provenance

    cid = "provenance"
    if policy.provenance is None:
        return _skip(cid, "the policy requires no provenance")
    if found is None:
        return unavailable(cid, "attestation verification is not available")
    verdict = check_provenance(policy.provenance,
                               [a.provenance for a in found if a.verified and a.provenance is not None])
    if not verdict.ok:
        return _fail(cid, K_PROVENANCE, "; ".join(verdict.reasons), required=policy.provenance.to_json())
    return _pass(cid, f"SLSA provenance {verdict.matched} names {policy.provenance.to_json()}",
                 required=policy.provenance.to_json())


def measurement_refusal(m: Measurement | None, policy: VerificationPolicy) -> str | None:
    """Why a level measured this way does not count under the policy (None: it counts): the demo
    solver or the demo benchmark, unless the policy allows demo levels; a verifier the policy does
    not name, when it names verifiers."""
    from acxoci.level.constants import DEMO_SOLVER_PREFIX, is_demo_measurement

    m = m or Measurement()
    if not policy.level_allow_demo and is_demo_measurement(m.solver, m.benchmark_digest, m.benchmark_id):
        demo_solver = m.solver is not None and m.solver.strip().lower().startswith(DEMO_SOLVER_PREFIX)
        what = f"solver {m.solver}" if demo_solver else "the demo benchmark"
        return (f"level measured by {what}, a demonstration (the policy's level.allowDemo is false)")
    if policy.level_verifiers and m.verifier not in policy.level_verifiers:
        return (f"level measured by verifier {m.verifier or '(not named)'}, not one the policy accepts "
                f"({', '.join(policy.level_verifiers)})")
    return None


def _tier_rank(tier: str | None) -> int:
    return TIER_FLOOR.get(tier or "", -1)


def relied_credential(creds: Sequence[CredentialFound], policy: VerificationPolicy,
                      rom_digest: str | None) -> tuple[CredentialFound | None, list[str]]:
    """The best verified credential from an accepted issuer bound to this ROM, and why others were
    set aside. Revocation is judged separately (check_revocation) on the credential relied on."""
    why: list[str] = []
    usable: list[CredentialFound] = []
    for c in creds:
        if policy.level_issuers and c.issuer not in policy.level_issuers:
            why.append(f"{c.issuer}: issuer not accepted by the policy")
        elif not c.verified:
            why.append(f"{c.issuer}: {c.reason or 'credential does not verify'}")
        elif rom_digest is not None and c.rom_digest != rom_digest:
            why.append(f"{c.issuer}: bound to ROM {c.rom_digest}, not {rom_digest}")
        elif (unmeasured := measurement_refusal(c.measurement, policy)) is not None:
            why.append(f"{c.issuer}: {unmeasured}")
        else:
            usable.append(c)
    floor = policy.level_floor

    def rank(c: CredentialFound) -> tuple[bool, bool, int]:
        level = c.level if c.level is not None else -1
        meets = floor is not None and (level >= floor or _tier_rank(c.tier) >= floor)
        return meets, c.revoked is False, level

    usable.sort(key=rank, reverse=True)  # one that meets the floor and is not revoked, if any
    return (usable[0] if usable else None), why


def check_level(creds: Sequence[CredentialFound] | None, policy: VerificationPolicy,
                rom_digest: str | None) -> CheckResult:
    """Does a verified, ROM-bound credential from an accepted issuer prove the required level?"""
    cid = "level"
    floor = policy.level_floor
    if floor is None:
        return _skip(cid, "the policy requires no level")
    if creds is None:
        return unavailable(cid, "level-credential verification is not available")
    best, why = relied_credential(creds, policy, rom_digest)
    required = policy.level_minimum
    if best is None:
        reason = f"no usable level credential (required {required})"
        if why:
            reason += ": " + "; ".join(why)
        return _fail(cid, K_LEVEL_MISSING, reason, required=required, setAside=why)
    level = best.level if best.level is not None else -1
    if isinstance(required, str):
        ok = _tier_rank(best.tier) >= TIER_FLOOR[required] or level >= TIER_FLOOR[required]
    else:
        ok = level >= floor
    details = {"required": required, "level": best.level, "tier": best.tier, "issuer": best.issuer,
               "credentialDigest": best.digest, "keyid": best.keyid}
    if not ok:
        return _fail(cid, K_LEVEL_LOW, f"level {best.level} ({best.tier}) from {best.issuer} is below the "
                     f"required {required}", **details)
    return _pass(cid, f"level {best.level} ({best.tier}) from {best.issuer} meets {required}", **details)


def check_revocation(creds: Sequence[CredentialFound] | None, policy: VerificationPolicy,
                     rom_digest: str | None) -> CheckResult:
    """Is the relied-on credential unrevoked, per a status list the level verifier judged fresh
    enough (policy max age) or, where the policy allows, a cached copy?"""
    cid = "revocation"
    if policy.level_floor is None:
        return _skip(cid, "no credential is relied on (the policy requires no level)")
    if creds is None:
        return unavailable(cid, "revocation checking is not available")
    best, _ = relied_credential(creds, policy, rom_digest)
    if best is None:
        return _skip(cid, "no credential is relied on (see the level check)")
    details: dict[str, Any] = {
        "statusList": best.status_list, "index": best.status_index, "source": best.status_list_source,
        "validFrom": best.status_list_valid_from.isoformat() if best.status_list_valid_from else None,
        "maxAgeSeconds": policy.max_status_list_age, "offlineAllowed": policy.allow_offline_cached}
    if best.status_list is None:
        return _fail(cid, K_STATUS_UNKNOWN, best.status_error or "the credential has no status list entry, "
                     "so it cannot be shown to be unrevoked", **details)
    if best.status_stale and (best.revoked is None or not policy.allow_offline_cached):
        return _fail(cid, K_STALE, best.status_error or best.status_reason or "the status list is stale",
                     **details)
    if best.revoked is None:
        return _fail(cid, K_STATUS_UNKNOWN, f"status list {best.status_list} could not be checked: "
                     f"{best.status_error or 'unknown'}", **details)
    if best.revoked:
        return _fail(cid, K_REVOKED, f"credential from {best.issuer} is revoked: {best.status_reason}",
                     **details)
    return _pass(cid, best.status_reason or f"not revoked per {best.status_list}", **details)


def check_harness(ev: HarnessEvidence | None, policy: VerificationPolicy, *, host_given: bool,
                  available: bool = True) -> CheckResult:
    """Does the host satisfy the harness requirements (or is no host given and none required)?"""
    cid = "harness"
    if not host_given:
        if policy.require_host:
            return _fail(cid, K_HARNESS, "the policy requires a host descriptor and none was given")
        return _skip(cid, "no host descriptor given")
    if not available or ev is None:
        return unavailable(cid, "harness negotiation is not available")
    if not ev.accepted:
        return _fail(cid, K_HARNESS, "host does not meet the harness requirements: " + ", ".join(ev.unmet),
                     unmet=list(ev.unmet))
    return _pass(cid, "host satisfies the harness requirements")


def check_budget(ev: BudgetEvidence | None, policy: VerificationPolicy) -> CheckResult:
    """Is the loop + context policy valid, and does its budget stay within the host's limits?"""
    cid = "policy-budget"
    if ev is None:
        return unavailable(cid, "loop + context policy validation is not available")
    if not ev.present:
        return _fail(cid, K_POLICY_INVALID, "the cartridge has no loop + context policy")
    if ev.policy_errors:
        return _fail(cid, K_POLICY_INVALID, "the package is invalid (as `acx cartridge spec` says): "
                     + "; ".join(ev.policy_errors), errors=list(ev.policy_errors))
    if ev.host is None:
        if policy.require_host_limits:
            return _fail(cid, K_BUDGET, "the policy requires host limits (--host-limits) and none were given")
        return _pass(cid, "policy valid; no host limits given (the cartridge's budget applies)",
                     effectiveLimits=effective_limits(None, ev.budget).to_json(), aboveHost=[])
    above = []
    for name in NUMERIC_FIELDS:
        hv = ev.host.get(name)
        cv = ev.budget.get(name) if ev.budget else None
        if hv is not None and cv is not None and cv > hv:
            above.append(f"{name} {cv} > host {hv}")
    eff = effective_limits(ev.host, ev.budget)
    details = {"effectiveLimits": eff.to_json(), "aboveHost": above}
    if above and policy.budget_above_host == "refuse":
        return _fail(cid, K_BUDGET, "policy budget is above the host's limits: " + "; ".join(above),
                     **details)
    if above:
        return _pass(cid, "budget capped to the host's limits: " + "; ".join(above), **details)
    return _pass(cid, "policy valid; budget within the host's limits", **details)


def check_staffing(kind: str | None, staffing: Mapping[str, Any] | None) -> CheckResult:
    """For a workflow: is every required participant staffed (workflow `ready`)?"""
    cid = "staffing"
    if kind != "workflow":
        return _skip(cid, "not a workflow")
    if staffing is None:
        return unavailable(cid, "workflow readiness could not be assessed")
    if not staffing.get("ready"):
        reasons = staffing.get("reasons") or []
        return _fail(cid, K_NOT_READY, "NOT READY: " + "; ".join(map(str, reasons)), reasons=list(reasons))
    return _pass(cid, "READY: every required participant is staffed (from the installed cartridges and the "
                 "host's --cartridges)")


@dataclass(frozen=True)
class VersionEvidence:
    """The signed version (cartridge `acx.artifact_version`, workflow `version`), the tag asked
    for, and the version currently installed under the same name (if any)."""

    signed: str | None
    tag: str | None
    installed: str | None = None
    installed_name: str | None = None
    allow_downgrade: bool = False


def check_version(ev: VersionEvidence | None) -> CheckResult:
    """Anti-rollback: a SemVer-looking tag must equal the signed version (a re-pointed tag is a
    rollback), and the install may not replace a newer installed version unless allowed."""
    cid = "version"
    if ev is None:
        return _skip(cid, "nothing was verified to take a version from")
    details = {"signed": ev.signed, "tag": ev.tag, "installed": ev.installed}
    tag_v = semver.parse(ev.tag)
    if tag_v is not None:
        signed_v = semver.parse(ev.signed)
        if signed_v is None or not signed_v.same_as(tag_v):
            return _fail(cid, K_ROLLBACK, f"tag {ev.tag} does not name the signed version {ev.signed!r}: "
                         "the tag may have been re-pointed at another release", **details)
    if semver.is_downgrade(ev.signed, ev.installed):
        if not ev.allow_downgrade:
            return _fail(cid, K_ROLLBACK, f"{ev.installed_name} {ev.installed} is installed; {ev.signed} is "
                         "older (pass --allow-downgrade to install it anyway)", **details)
        return _pass(cid, f"downgrade from {ev.installed} to {ev.signed} allowed (--allow-downgrade)",
                     **details)
    return _pass(cid, f"version {ev.signed}" if ev.signed else "no signed version", **details)


def check_lifecycle(ev: LifecycleEvidence | None) -> CheckResult:
    """Is the release still published (not withdrawn) in the Exchange it came from?"""
    cid = "lifecycle"
    if ev is None:
        return _skip(cid, "not from a registry or layout (no lifecycle records)")
    details = {"lifecycle": dict(ev.verdict)} if ev.verdict is not None else {}
    if ev.action == "refuse":
        return _fail(cid, K_WITHDRAWN, ev.message, **details)
    if ev.action == "unknown":
        return CheckResult(cid, "unavailable", ev.message, K_UNAVAILABLE)
    if ev.action == "warn":
        return _pass(cid, f"warning: {ev.message}", **details)
    return _pass(cid, ev.message, **details)


@dataclass(frozen=True)
class Gathered:
    """Everything the checks decide on (None = that input could not be gathered)."""

    repository: str
    content: ContentEvidence | None
    signature: SignatureEvidence | None
    attestations: Sequence[AttestationFound] | None
    credentials: Sequence[CredentialFound] | None
    harness: HarnessEvidence | None
    host_given: bool
    harness_available: bool
    budget: BudgetEvidence | None
    kind: str | None = "cartridge"
    staffing: Mapping[str, Any] | None = None
    version: VersionEvidence | None = None
    lifecycle: LifecycleEvidence | None = None
    unavailable: Mapping[str, CheckResult] = field(default_factory=dict)
    local_file: bool = False  # judged from a local file: no registry copy to hold to a digest


def run_checks(g: Gathered, policy: VerificationPolicy, now: datetime) -> list[CheckResult]:
    """The one acceptance decision: every check in CHECK_ORDER over what was gathered (pure). A
    check whose input could not be gathered is `unavailable` (and refuses). Checks that only apply
    to cartridges are skipped for workflows and graphs, and the reverse."""
    rom = g.signature.rom_digest if g.signature else None
    cartridge_only = g.kind in ("workflow", "agent-graph")
    na = f"does not apply to {'an agent graph' if g.kind == 'agent-graph' else 'a workflow'}"
    results = [
        check_registry(g.repository, policy),
        _skip("content-digest", "a local file: no registry copy to hold to a digest") if g.local_file
        else check_content(g.content),
        check_signature(g.signature),
        check_trust(g.signature, policy, now),
        check_attestations(g.attestations, policy),
        _skip("level", na) if cartridge_only else check_level(g.credentials, policy, rom),
        _skip("revocation", na) if cartridge_only else check_revocation(g.credentials, policy, rom),
        _skip("harness", na) if cartridge_only else
        check_harness(g.harness, policy, host_given=g.host_given, available=g.harness_available),
        _skip("policy-budget", na) if cartridge_only else check_budget(g.budget, policy),
        check_staffing(g.kind, g.staffing),
        check_version(g.version),
        check_lifecycle(g.lifecycle),
        check_provenance_requirement(g.attestations, policy),
    ]
    assert [r.id for r in results] == list(CHECK_ORDER), [r.id for r in results]
    return [g.unavailable.get(r.id, r) for r in results]


def failures(results: Sequence[CheckResult]) -> list[CheckResult]:
    """The results that refuse."""
    return [r for r in results if r.failed]
