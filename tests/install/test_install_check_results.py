"""Every install check's result exactly as `acx install --json` shows it (`checks[]`: order, id,
what, status, reason, kind, details), branch by branch: the reason a user acts on, the kind a
script matches, and each `details` key and value the report promises."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from acxoci.install import checks as C
from acxoci.policy.limits import ResourceLimits, effective_limits
from tests.harness.checkfacts import NOW, ROM, SIGNED_AT, cred, gathered, keyed_policy, pol, sig
from tests.harness.installs import BUDGET, PUBLISHER

ST = "https://slsa.dev/provenance/v1"
OTHER_ROM = "sha256:" + "f" * 64


def exact(r: C.CheckResult, cid: str, status: str, reason: str, kind: str | None = None, /,
          **details: Any) -> None:
    """`r` is exactly this result, and its --json view says so field by field."""
    assert r == C.CheckResult(cid, status, reason, kind, details), r  # type: ignore[arg-type]
    view: dict[str, Any] = {"order": C.CHECK_ORDER.index(cid) + 1, "id": cid, "what": C.CHECK_DOC[cid],
                            "status": status, "reason": reason}
    if kind is not None:
        view["kind"] = kind
    if details:
        view["details"] = details
    assert r.to_json() == view


def unavailable(r: C.CheckResult, cid: str, reason: str) -> None:
    exact(r, cid, "unavailable", reason, "unavailable")
    assert r.failed


# ---- skips carry no kind and empty details -------------------------------------------------


def test_skips_are_exact_and_carry_nothing_else() -> None:
    exact(C.check_staffing("cartridge", None), "staffing", "skip", "not a workflow")
    exact(C.check_attestations(None, pol()), "attestations", "skip", "the policy requires no attestation")
    exact(C.check_level(None, pol(), ROM), "level", "skip", "the policy requires no level")
    exact(C.check_revocation(None, pol(), ROM), "revocation", "skip",
          "no credential is relied on (the policy requires no level)")
    exact(C.check_revocation([], pol(level_minimum=1), ROM), "revocation", "skip",
          "no credential is relied on (see the level check)")
    skip = C.check_harness(None, pol(), host_given=False)
    assert skip.kind is None and dict(skip.details) == {} and not skip.failed


def test_each_unavailable_check_names_what_could_not_run() -> None:
    p = pol(attestation_formats=("bundle",), level_minimum=1)
    unavailable(C.check_signature(None), "signature", "no signature verdict (the verifier could not run)")
    unavailable(C.check_trust(None, p, NOW), "trust", "no signature verdict (the verifier could not run)")
    unavailable(C.check_attestations(None, p), "attestations", "attestation verification is not available")
    unavailable(C.check_level(None, p, ROM), "level", "level-credential verification is not available")
    unavailable(C.check_revocation(None, p, ROM), "revocation", "revocation checking is not available")
    unavailable(C.check_budget(None, p), "policy-budget", "loop + context policy validation is not available")
    unavailable(C.check_staffing("workflow", None), "staffing", "workflow readiness could not be assessed")


# ---- signature ------------------------------------------------------------------------------


def test_signature_failures_are_exact() -> None:
    kid = "ed25519:" + "b" * 64
    for over, kind in (({"status": "invalid", "trust": "tampered"}, "tampered"),
                       ({"status": "warning", "trust": "legacy"}, "unsigned"),
                       ({"status": "warning", "trust": "unverified"}, "bad_signature")):
        ev = sig(summary="what the verifier said", issues=("first", "second"), **over)
        exact(C.check_signature(ev), "signature", "fail", "what the verifier said", kind,
              status=over["status"], trust=over["trust"], summary="what the verifier said",
              issues=["first", "second"], keyid=kid, romDigest=ROM)


# ---- trust ----------------------------------------------------------------------------------


def _trust_details(kid: str | None, trust: str = "trusted", minimum: str = "trusted",
                   **more: Any) -> dict[str, Any]:
    return {"publisherId": PUBLISHER, "keyid": kid, "trust": trust, "minimumTrust": minimum, **more}


def test_trust_refuses_an_invalid_verdict_whatever_its_trust_label() -> None:
    p, kid = keyed_policy()
    ev = sig(keyid=kid, signed_at=SIGNED_AT, status="invalid", trust="portable")
    exact(C.check_trust(ev, p, NOW), "trust", "fail", "no trust without a valid signature (portable)",
          "untrusted_publisher", **_trust_details(kid, "portable"))


def test_trust_failures_are_exact() -> None:
    p, kid = keyed_policy()
    nobody = sig(keyid=kid, signed_at=SIGNED_AT, publisher_id="org.nobody")
    exact(C.check_trust(nobody, p, NOW), "trust", "fail",
          "publisher 'org.nobody' is not trusted by the policy", "untrusted_publisher",
          **dict(_trust_details(kid), publisherId="org.nobody"))
    low = C.check_trust(sig(keyid=kid, signed_at=None), p, NOW)
    exact(low, "trust", "fail", "signedAt is missing or not RFC 3339; the policy requires trusted",
          "trust_too_low", **_trust_details(kid, standing="portable"))
    stranger = sig(signed_at=SIGNED_AT)  # a key the policy does not hold
    exact(C.check_trust(stranger, p, NOW), "trust", "fail",
          f"signer key is not in the trust registry; the policy ties no usable key to {PUBLISHER}",
          "untrusted_publisher", **_trust_details(stranger.keyid, standing="unvouched"))


def test_a_compromised_key_is_a_revoked_key_not_an_unknown_one() -> None:
    p, kid = keyed_policy(status="revoked", revocationReason="key-compromise",
                           revokedAt="2026-09-01T00:00:00Z")
    ev = sig(keyid=kid, signed_at=SIGNED_AT, trust="portable", status="warning")
    for minimum in ("trusted", "portable"):
        r = C.check_trust(ev, dataclasses.replace(p, minimum_trust=minimum), NOW)
        exact(r, "trust", "fail", "signer key is revoked for key-compromise: never trusted; the policy ties "
              f"no usable key to {PUBLISHER}", "revoked_key",
              **_trust_details(kid, "portable", minimum, standing="rejected"))


def test_the_claimed_publishers_own_entry_for_a_shared_key_decides() -> None:
    """A key listed under two policy publishers is judged by the entry of the publisher it claims."""
    from acxoci.attest.keys import generate_ed25519
    from acxoci.attest.trust import TrustRegistry, make_key_entry
    from acxoci.install.vpolicy import TrustedPublisher

    pub = generate_ed25519().public()

    def registry(publisher: str) -> TrustRegistry:
        e = make_key_entry(pub, publisher_id=publisher, not_before=NOW - timedelta(days=300),
                           not_after=NOW + timedelta(days=300), verified_at=NOW - timedelta(days=300))
        return TrustRegistry.from_json({"schemaVersion": "acx.trust-registry/1", "keys": [e]})

    p = pol(publishers=(TrustedPublisher("org.first", registry("org.first")),
                        TrustedPublisher("org.second", registry("org.second"))))
    ev = sig(keyid=pub.keyid(), signed_at=SIGNED_AT, publisher_id="org.second")
    r = C.check_trust(ev, p, NOW)
    assert (r.status, r.reason) == ("pass", "org.second is trusted: signer key is active and registered to "
                                    "org.second")


def test_signer_decision_keeps_no_signing_time_it_could_not_parse() -> None:
    p, kid = keyed_policy()
    d = C.signer_decision(sig(keyid=kid, signed_at="yesterday"), p, NOW)
    assert d is not None and d.facts.signed_at is None and d.facts.window == "missing"
    d = C.signer_decision(sig(keyid=kid, signed_at=SIGNED_AT), p, NOW)
    assert d is not None and d.facts.signed_at == SIGNED_AT and d.standing == "trusted"


# ---- attestations ---------------------------------------------------------------------------


def _listing(*found: C.AttestationFound) -> list[dict[str, Any]]:
    return [{"format": a.format, "predicateType": a.predicate_type, "verified": a.verified,
             "reason": a.reason, "digest": a.digest, "keyid": a.keyid} for a in found]


def test_attestations_pass_lists_what_was_found() -> None:
    good = C.AttestationFound("bundle", ST, True, "", "sha256:" + "1" * 64, "ed25519:" + "2" * 64)
    bad = C.AttestationFound("legacy", "other", False, "bad signature", "sha256:" + "3" * 64, None)
    r = C.check_attestations([good, bad], pol(attestation_formats=("bundle",), predicate_types=(ST,)))
    exact(r, "attestations", "pass", "1 verified attestation(s) cover the policy",
          found=[{"format": "bundle", "predicateType": ST, "verified": True, "reason": "",
                  "digest": "sha256:" + "1" * 64, "keyid": "ed25519:" + "2" * 64},
                 {"format": "legacy", "predicateType": "other", "verified": False, "reason": "bad signature",
                  "digest": "sha256:" + "3" * 64, "keyid": None}])


def test_attestations_missing_names_each_gap_and_each_rejection() -> None:
    rejected = (C.AttestationFound("legacy", ST, False, "bad signature"),
                C.AttestationFound("bundle", ST, False, "expired certificate"))
    p = pol(attestation_formats=("legacy", "bundle"))  # formats only: a gap is the bare format
    exact(C.check_attestations(rejected, p), "attestations", "fail",
          "missing verified attestation(s): legacy, bundle (rejected: legacy:" + ST + ": bad signature; "
          "bundle:" + ST + ": expired certificate)", "missing_attestation",
          missing=["legacy", "bundle"], found=_listing(*rejected))
    p = pol(attestation_formats=("bundle",), predicate_types=(ST, "https://x.example/v1"))
    exact(C.check_attestations([], p), "attestations", "fail",
          f"missing verified attestation(s): bundle:{ST}, bundle:https://x.example/v1", "missing_attestation",
          missing=[f"bundle:{ST}", "bundle:https://x.example/v1"], found=[])


# ---- level ----------------------------------------------------------------------------------


def test_level_missing_is_exact_and_lists_every_credential_set_aside() -> None:
    p = pol(level_minimum="senior")
    creds = [cred(verified=False, reason="proof does not verify"), cred(rom_digest=OTHER_ROM)]
    why = ["did:web:v.example: proof does not verify",
           f"did:web:v.example: bound to ROM {OTHER_ROM}, not {ROM}"]
    exact(C.check_level(creds, p, ROM), "level", "fail",
          "no usable level credential (required senior): " + "; ".join(why), "level_missing",
          required="senior", setAside=why)


def test_level_too_low_is_exact() -> None:
    found = cred(level=3, tier="intern", digest="sha256:d", keyid="k")
    exact(C.check_level([found], pol(level_minimum="staff"), ROM), "level", "fail",
          "level 3 (intern) from did:web:v.example is below the required staff", "level_too_low",
          required="staff", level=3, tier="intern", issuer="did:web:v.example", credentialDigest="sha256:d",
          keyid="k")


def test_a_credential_without_a_level_is_judged_by_its_tier_alone() -> None:
    exact(C.check_level([cred(level=None, tier="intern")], pol(level_minimum="staff"), ROM), "level", "fail",
          "level None (intern) from did:web:v.example is below the required staff", "level_too_low",
          required="staff", level=None, tier="intern", issuer="did:web:v.example", credentialDigest=None,
          keyid=None)
    assert C.check_level([cred(level=None, tier="staff")], pol(level_minimum="staff"), ROM).status == "pass"
    # a number is met by the level only: no level meets no number, not even 0
    for floor in (0, 1, 20):
        r = C.check_level([cred(level=None, tier="staff")], pol(level_minimum=floor), ROM)
        assert (r.status, r.kind) == ("fail", "level_too_low"), floor
    assert C.check_level([cred(level=0, tier=None)], pol(level_minimum=0), ROM).status == "pass"


# ---- revocation -----------------------------------------------------------------------------


def _rev_details(c: C.CredentialFound, *, max_age: int = 86400, offline: bool = False) -> dict[str, Any]:
    return {"statusList": c.status_list, "index": c.status_index, "source": c.status_list_source,
            "validFrom": c.status_list_valid_from.isoformat() if c.status_list_valid_from else None,
            "maxAgeSeconds": max_age, "offlineAllowed": offline}


def test_revocation_failures_are_exact() -> None:
    p = pol(level_minimum=1, max_status_list_age=600)
    cases = [
        (cred(status_list=None, status_index=None, revoked=None, status_error="no credentialStatus"),
         "no credentialStatus", "status_unknown"),
        (cred(revoked=None, status_stale=True, status_error="status list is 2 days old"),
         "status list is 2 days old", "stale_status_list"),
        (cred(revoked=None, status_error="connection refused"),
         "status list https://v.example/s/1 could not be checked: connection refused", "status_unknown"),
        (cred(revoked=True, status_reason="revoked (index 1)"),
         "credential from did:web:v.example is revoked: revoked (index 1)", "revoked"),
    ]
    for c, reason, kind in cases:
        exact(C.check_revocation([c], p, ROM), "revocation", "fail", reason, kind,
              **_rev_details(c, max_age=600))
    ok = cred(status_list_source="cache", status_stale=True)
    offline = pol(level_minimum=1, allow_offline_cached=True)
    exact(C.check_revocation([ok], offline, ROM), "revocation", "pass", "not revoked",
          **_rev_details(ok, offline=True))


# ---- harness --------------------------------------------------------------------------------


def test_harness_required_but_not_given_is_exact() -> None:
    exact(C.check_harness(None, pol(require_host=True), host_given=False), "harness", "fail",
          "the policy requires a host descriptor and none was given", "harness_unmet")


# ---- policy-budget --------------------------------------------------------------------------


def test_budget_without_a_policy_or_with_errors_is_exact() -> None:
    exact(C.check_budget(C.BudgetEvidence(present=False), pol()), "policy-budget", "fail",
          "the cartridge has no loop + context policy", "invalid_policy")
    exact(C.check_budget(C.BudgetEvidence(("$.loop: bad", "$.context: bad")), pol()), "policy-budget", "fail",
          "the package is invalid (as `acx cartridge spec` says): $.loop: bad; $.context: bad",
          "invalid_policy",
          errors=["$.loop: bad", "$.context: bad"])


def test_budget_without_host_limits() -> None:
    budget = ResourceLimits.from_json(BUDGET)
    ev = C.BudgetEvidence((), budget, None)
    exact(C.check_budget(ev, pol(require_host_limits=True)), "policy-budget", "fail",
          "the policy requires host limits (--host-limits) and none were given", "budget_above_host")
    r = C.check_budget(ev, pol())
    exact(r, "policy-budget", "pass", "policy valid; no host limits given (the cartridge's budget applies)",
          effectiveLimits=effective_limits(None, budget).to_json(), aboveHost=[])
    # the cartridge's own budget is what applies (the install record's effectiveLimits)
    assert r.details["effectiveLimits"]["limits"]["tokenSpend"] == {"dailyPerProject": 1000,
                                                                    "dailyPerAgent": 500, "dailyGlobal": 5000}


def test_budget_against_host_limits() -> None:
    budget = ResourceLimits.from_json(BUDGET)
    above = ResourceLimits.from_json({"tokenSpend": {"dailyPerAgent": 100, "dailyGlobal": 4000},
                                      "timeouts": {"maxCommandSec": 9999}})
    over = ["tokenSpend.dailyPerAgent 500 > host 100", "tokenSpend.dailyGlobal 5000 > host 4000"]
    eff = effective_limits(above, budget).to_json()
    exact(C.check_budget(C.BudgetEvidence((), budget, above), pol()), "policy-budget", "fail",
          "policy budget is above the host's limits: " + "; ".join(over), "budget_above_host",
          effectiveLimits=eff, aboveHost=over)
    exact(C.check_budget(C.BudgetEvidence((), budget, above), pol(budget_above_host="cap")), "policy-budget",
          "pass", "budget capped to the host's limits: " + "; ".join(over), effectiveLimits=eff,
          aboveHost=over)
    roomy = ResourceLimits.from_json({"tokenSpend": {"dailyPerAgent": 100000}})
    r = C.check_budget(C.BudgetEvidence((), budget, roomy), pol())
    exact(r, "policy-budget", "pass", "policy valid; budget within the host's limits",
          effectiveLimits=effective_limits(roomy, budget).to_json(), aboveHost=[])
    # the cartridge's stricter number stands under a roomier host
    assert r.details["effectiveLimits"]["limits"]["tokenSpend"]["dailyPerAgent"] == 500


# ---- staffing -------------------------------------------------------------------------------


def test_staffing_is_exact() -> None:
    exact(C.check_staffing("workflow", {"ready": False, "reasons": ["no reviewer", "no tester"]}), "staffing",
          "fail", "NOT READY: no reviewer; no tester", "not_ready", reasons=["no reviewer", "no tester"])
    exact(C.check_staffing("workflow", {"ready": False}), "staffing", "fail", "NOT READY: ", "not_ready",
          reasons=[])
    exact(C.check_staffing("workflow", {"ready": True, "reasons": []}), "staffing", "pass",
          "READY: every required participant is staffed (from the installed cartridges and the host's "
          "--cartridges)")


# ---- version --------------------------------------------------------------------------------


def test_version_results_are_exact() -> None:
    exact(C.check_version(C.VersionEvidence("1.2.4", "1.2.3")), "version", "fail",
          "tag 1.2.3 does not name the signed version '1.2.4': the tag may have been re-pointed at another "
          "release", "rollback", signed="1.2.4", tag="1.2.3", installed=None)
    down = C.VersionEvidence("1.0.0", None, installed="2.0.0", installed_name="io.example/agent")
    exact(C.check_version(down), "version", "fail", "io.example/agent 2.0.0 is installed; 1.0.0 is older "
          "(pass --allow-downgrade to install it anyway)", "rollback", signed="1.0.0", tag=None,
          installed="2.0.0")
    exact(C.check_version(dataclasses.replace(down, allow_downgrade=True)), "version", "pass",
          "downgrade from 2.0.0 to 1.0.0 allowed (--allow-downgrade)", signed="1.0.0", tag=None,
          installed="2.0.0")


# ---- run_checks hands each check its own inputs -----------------------------------------------


def test_run_checks_judges_trust_at_the_time_it_is_given() -> None:
    from acxoci.attest.keys import generate_ed25519
    from acxoci.attest.trust import TrustRegistry, make_key_entry
    from acxoci.install.vpolicy import TrustedPublisher

    then = datetime(2020, 6, 1, tzinfo=UTC)  # a key valid only around then, long expired today
    pub = generate_ed25519().public()
    e = make_key_entry(pub, publisher_id="org.then", not_before=then - timedelta(days=1),
                       not_after=then + timedelta(days=1), verified_at=then - timedelta(days=1))
    reg = TrustRegistry.from_json({"schemaVersion": "acx.trust-registry/1", "keys": [e]})
    p = pol(publishers=(TrustedPublisher("org.then", reg),))
    g = gathered(signature=sig(keyid=pub.keyid(), publisher_id="org.then", signed_at="2020-06-01T00:00:00Z"))
    assert C.run_checks(g, p, then)[3].status == "pass"
    assert C.run_checks(g, p, then + timedelta(days=3))[3].kind == "trust_too_low"


def test_run_checks_judges_revocation_on_this_roms_credential() -> None:
    mine = cred(level=3, status_list="https://v.example/s/mine")
    elsewhere = cred(level=30, rom_digest=OTHER_ROM, status_list="https://v.example/s/other")
    p = pol(level_minimum=2)
    got = C.run_checks(gathered(credentials=[elsewhere, mine]), p, NOW)
    assert got[6] == C.check_revocation([mine], p, ROM)
    assert (got[6].status, got[6].details["statusList"]) == ("pass", "https://v.example/s/mine")


def test_run_checks_hands_the_budget_and_the_policy_to_the_budget_check() -> None:
    budget = ResourceLimits.from_json(BUDGET)
    g = gathered(budget=C.BudgetEvidence((), budget, None))
    for p in (pol(), pol(require_host_limits=True)):
        got = C.run_checks(g, p, NOW)
        assert got[8] == C.check_budget(g.budget, p)
    assert C.run_checks(g, pol(require_host_limits=True), NOW)[8].kind == "budget_above_host"
    assert C.run_checks(g, pol(), NOW)[8].status == "pass"
