"""The pure install checks and the verification policy: each decision on hand-made inputs, the
fixed order, and policy loading (schema, defaults, pinned keys, registry patterns)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.errors import InvalidInput
from acxoci.install import checks as C
from acxoci.install.vpolicy import VerificationPolicy, default_policy, load_policy, schema_errors
from acxoci.policy.limits import ResourceLimits
from tests.harness.checkfacts import NOW, ROM, SIGNED_AT, cred, gathered, keyed_policy, pol, sig
from tests.harness.installs import BUDGET, PUBLISHER, write_policy


def trusted_policy(**kw: Any) -> VerificationPolicy:
    from acxoci.attest.trust import TrustRegistry
    from acxoci.install.vpolicy import TrustedPublisher

    return pol(publishers=(TrustedPublisher(PUBLISHER, TrustRegistry(keys=())),), **kw)


def test_order_is_fixed_and_every_check_runs() -> None:
    g = C.Gathered("oci-layout:x", None, None, None, None, None, False, True, None)
    results = C.run_checks(g, default_policy(), NOW)
    assert [r.id for r in results] == list(C.CHECK_ORDER)
    assert [r.order for r in results] == list(range(1, len(C.CHECK_ORDER) + 1))
    failed = {r.id: r.status for r in C.failures(results)}
    assert failed == {
        "content-digest": "unavailable",
        "signature": "unavailable",
        "trust": "unavailable",
        "policy-budget": "unavailable",
    }
    assert all(r.kind for r in C.failures(results))


def test_content() -> None:
    assert C.check_content(C.ContentEvidence(ROM, ROM)).status == "pass"
    r = C.check_content(C.ContentEvidence(ROM, "sha256:" + "c" * 64))
    assert (r.status, r.kind) == ("fail", "digest_mismatch")
    r = C.check_content(C.ContentEvidence(ROM, ROM, "content hashes to sha256:ffff"))
    assert (r.status, r.kind) == ("fail", "tampered") and "ffff" in r.reason


@pytest.mark.parametrize(
    ("status", "trust", "kind"),
    [
        ("invalid", "tampered", "tampered"),
        ("warning", "legacy", "unsigned"),
        ("warning", "unsigned", "unsigned"),
        ("warning", "unverified", "bad_signature"),
    ],
)
def test_signature_failures(status: str, trust: str, kind: str) -> None:
    r = C.check_signature(sig(status=status, trust=trust))
    assert (r.status, r.kind) == ("fail", kind)


def test_signature_without_key_is_not_a_pass() -> None:
    assert C.check_signature(sig(trust="portable", status="warning", keyid=None)).kind == "bad_signature"
    assert C.check_signature(sig(trust="portable", status="warning")).status == "pass"


def test_trust() -> None:
    p, kid = keyed_policy()
    good = sig(keyid=kid, signed_at=SIGNED_AT)
    assert C.check_trust(good, p, NOW).status == "pass"
    team = sig(publisher_id=PUBLISHER + "/team", keyid=kid, signed_at=SIGNED_AT)
    assert C.check_trust(team, p, NOW).status == "pass"
    assert C.check_trust(sig(publisher_id=PUBLISHER + "x", keyid=kid), p, NOW).kind == "untrusted_publisher"
    assert C.check_trust(good, default_policy(), NOW).kind == "untrusted_publisher"
    # the evidence's trust label is never believed: the policy's own keys decide
    assert C.check_trust(sig(signed_at=SIGNED_AT), p, NOW).kind == "untrusted_publisher"
    retired, rkid = keyed_policy(status="revoked", revocationReason="retired",
                                  revokedAt="2026-09-01T00:00:00Z")
    old = sig(keyid=rkid, signed_at=SIGNED_AT, trust="portable", status="warning")
    assert C.check_trust(old, retired, NOW).kind == "trust_too_low"
    assert C.check_trust(old, dataclasses.replace(retired, minimum_trust="portable"), NOW).status == "pass"
    assert (
        C.check_trust(
            sig(trust="tampered", status="invalid"), dataclasses.replace(p, minimum_trust="portable")
        ).status
        == "fail"
    )


def test_attestations() -> None:
    st = "https://slsa.dev/provenance/v1"
    p = pol(attestation_formats=("legacy", "bundle"), predicate_types=(st,))
    assert C.check_attestations(None, pol()).status == "skip"
    assert C.check_attestations(None, p).status == "unavailable"
    both = [C.AttestationFound("legacy", st, True), C.AttestationFound("bundle", st, True)]
    assert C.check_attestations(both, p).status == "pass"
    one = [C.AttestationFound("legacy", st, True), C.AttestationFound("bundle", st, False, "bad signature")]
    r = C.check_attestations(one, p)
    assert r.kind == "missing_attestation" and r.details["missing"] == [f"bundle:{st}"]
    assert "bad signature" in r.reason
    assert (
        C.check_attestations([C.AttestationFound("bundle", "other", True)], pol(predicate_types=(st,))).kind
        == "missing_attestation"
    )
    assert (
        C.check_attestations(
            [C.AttestationFound("bundle", "other", True)], pol(attestation_formats=("bundle",))
        ).status
        == "pass"
    )


def test_level() -> None:
    assert C.check_level(None, pol(), ROM).status == "skip"
    assert C.check_level(None, pol(level_minimum=5), ROM).status == "unavailable"
    assert C.check_level([cred()], pol(level_minimum="staff"), ROM).status == "pass"
    assert C.check_level([cred()], pol(level_minimum="principal"), ROM).kind == "level_too_low"
    assert C.check_level([cred()], pol(level_minimum=21), ROM).kind == "level_too_low"
    assert C.check_level([cred(level=3), cred(level=22)], pol(level_minimum=21), ROM).status == "pass"
    assert (
        C.check_level([cred()], pol(level_minimum=1, level_issuers=("did:web:x",)), ROM).kind
        == "level_missing"
    )
    assert (
        C.check_level([cred(rom_digest="sha256:" + "f" * 64)], pol(level_minimum=1), ROM).kind
        == "level_missing"
    )
    assert (
        C.check_level([cred(verified=False, reason="proof")], pol(level_minimum=1), ROM).kind
        == "level_missing"
    )


def test_revocation() -> None:
    p = pol(level_minimum=1)
    assert C.check_revocation([cred()], pol(), ROM).status == "skip"
    assert C.check_revocation([cred()], p, ROM).status == "pass"
    assert C.check_revocation([cred(revoked=True)], p, ROM).kind == "revoked"
    stale = cred(revoked=None, status_stale=True, status_error="status list is stale")
    assert C.check_revocation([stale], p, ROM).kind == "stale_status_list"
    assert (
        C.check_revocation([cred(revoked=None, status_error="unreachable")], p, ROM).kind == "status_unknown"
    )
    assert C.check_revocation([cred(status_list=None, revoked=None)], p, ROM).kind == "status_unknown"
    # a stale list read offline passes only when the policy allows offline use
    offline = cred(status_stale=True, status_list_source="cache")
    assert C.check_revocation([offline], p, ROM).kind == "stale_status_list"
    assert (
        C.check_revocation([offline], pol(level_minimum=1, allow_offline_cached=True), ROM).status == "pass"
    )


def test_harness() -> None:
    assert C.check_harness(None, pol(), host_given=False).status == "skip"
    assert C.check_harness(None, pol(require_host=True), host_given=False).kind == "harness_unmet"
    assert C.check_harness(None, pol(), host_given=True).status == "unavailable"
    r = C.check_harness(C.HarnessEvidence(False, ("tool:acx:dispatch",)), pol(), host_given=True)
    assert r.kind == "harness_unmet" and "acx:dispatch" in r.reason
    assert C.check_harness(C.HarnessEvidence(True), pol(), host_given=True).status == "pass"


def test_budget() -> None:
    budget = ResourceLimits.from_json(BUDGET)
    host = ResourceLimits.from_json(
        {"tokenSpend": {"dailyPerAgent": 100}, "timeouts": {"maxCommandSec": 9999}}
    )
    r = C.check_budget(C.BudgetEvidence((), budget, host), pol())
    assert r.kind == "budget_above_host" and r.details["aboveHost"] == [
        "tokenSpend.dailyPerAgent 500 > host 100"
    ]
    r = C.check_budget(C.BudgetEvidence((), budget, host), pol(budget_above_host="cap"))
    assert r.status == "pass" and r.details["effectiveLimits"]["limits"]["tokenSpend"]["dailyPerAgent"] == 100
    assert C.check_budget(C.BudgetEvidence((), budget, None), pol()).status == "pass"
    assert C.check_budget(C.BudgetEvidence((), budget, None), pol(require_host_limits=True)).status == "fail"
    assert C.check_budget(C.BudgetEvidence(("bad",), budget, None), pol()).kind == "invalid_policy"
    assert C.check_budget(C.BudgetEvidence(present=False), pol()).kind == "invalid_policy"


def test_staffing() -> None:
    assert C.check_staffing("cartridge", None).status == "skip"
    assert C.check_staffing("workflow", None).status == "unavailable"
    assert C.check_staffing("workflow", {"ready": False, "reasons": ["x unresolved"]}).kind == "not_ready"
    assert C.check_staffing("workflow", {"ready": True}).status == "pass"


def test_policy_schema_and_defaults(tmp_path: Path) -> None:
    d = default_policy()
    assert d.publishers == () and d.minimum_trust == "trusted" and d.allowed_registries == ("*",)
    assert d.max_status_list_age == 86400 and not d.allow_offline_cached and d.budget_above_host == "refuse"
    assert schema_errors({"schemaVersion": "acx.verification-policy/1", "minimumTrust": "legacy"})
    assert schema_errors({"schemaVersion": "acx.verification-policy/1", "surprise": 1})
    assert schema_errors({"schemaVersion": "acx.verification-policy/1", "level": {"minimum": "boss"}})
    bad = write_policy(tmp_path / "bad.yaml", {"minimumTrust": "sometimes"})
    with pytest.raises(InvalidInput, match="minimumTrust"):
        load_policy(bad, now=NOW)
    dup = tmp_path / "dup.json"
    dup.write_text(
        '{"schemaVersion": "acx.verification-policy/1", "minimumTrust": "trusted", '
        '"minimumTrust": "portable"}'
    )
    with pytest.raises(InvalidInput):
        load_policy(dup, now=NOW)
    p = load_policy(
        write_policy(tmp_path / "r.yaml", {"registries": {"allowed": ["ghcr.io/acx/*"]}}), now=NOW
    )
    assert p.registry_allowed("ghcr.io/acx/agent") and not p.registry_allowed("docker.io/acx/agent")
    assert p.digest.startswith("sha256:") and p.digest != d.digest


def test_pinned_key_makes_the_sample_trusted(tmp_path: Path, vectors_dir: Path) -> None:
    from acxoci.cartridge.verify import verify_cartridge

    pem = (vectors_dir / "sample" / "sample.pub.pem").read_text()
    p = load_policy(
        write_policy(
            tmp_path / "p.yaml",
            {
                "publishers": [
                    {
                        "id": PUBLISHER,
                        "keys": [{"publicKeyFile": str(vectors_dir / "sample" / "sample.pub.pem")}],
                    }
                ]
            },
        ),
        now=NOW,
    )
    v = verify_cartridge(vectors_dir / "sample" / "sample.acx", registry=p.combined_registry(), now=NOW)
    assert v.trust == "trusted"
    assert (
        C.check_trust(
            C.SignatureEvidence(v.status, v.trust, v.summary, keyid=v.keyid, publisher_id=v.publisher_id,
                                signed_at=v.signed_at), p, NOW
        ).status
        == "pass"
    )
    wrong = write_policy(
        tmp_path / "w.yaml",
        {"publishers": [{"id": PUBLISHER, "keys": [{"publicKeyPem": pem, "keyid": "ed25519:" + "0" * 64}]}]},
    )
    with pytest.raises(InvalidInput, match="keyid"):
        load_policy(wrong, now=NOW)
    # keys of another publisher in a listed registry do not count for this one
    other = write_policy(
        tmp_path / "o.yaml",
        {
            "publishers": [
                {
                    "id": "io.github.nobody",
                    "trustRegistries": [str(vectors_dir / "sample" / "trust-active.json")],
                }
            ]
        },
    )
    assert load_policy(other, now=NOW).combined_registry().keys == ()


def test_relied_credential_prefers_one_that_passes() -> None:
    p = pol(level_minimum=10)
    revoked_high = cred(level=30, tier="distinguished", revoked=True)
    good_low = cred(level=12, tier="mid")
    too_low = cred(level=3, tier="intern")
    assert C.relied_credential([revoked_high, good_low, too_low], p, ROM)[0] is good_low
    assert C.check_level([revoked_high, good_low], p, ROM).status == "pass"
    assert C.check_revocation([revoked_high, good_low], p, ROM).status == "pass"
    assert C.check_revocation([revoked_high, too_low], p, ROM).kind == "revoked"


def _proof_policy(verified_at: datetime) -> tuple[VerificationPolicy, str]:
    """A policy trusting PUBLISHER through one key whose namespace proof was made at `verified_at`."""
    from acxoci.attest.keys import generate_ed25519
    from acxoci.attest.trust import TrustRegistry, make_key_entry
    from acxoci.install.vpolicy import TrustedPublisher

    pub = generate_ed25519().public()
    e = make_key_entry(pub, publisher_id=PUBLISHER, not_before=NOW - timedelta(days=300),
                       not_after=NOW + timedelta(days=300), verified_at=verified_at,
                       oidc_subject="repo:example-acx/x")
    reg = TrustRegistry.from_json({"schemaVersion": "acx.trust-registry/1", "keys": [e]})
    return pol(publishers=(TrustedPublisher(PUBLISHER, reg),)), pub.keyid()


def test_trust_refuses_a_namespace_proof_from_the_future() -> None:
    future, fkid = _proof_policy(NOW + timedelta(seconds=1))
    r = C.check_trust(sig(keyid=fkid, signed_at=SIGNED_AT), future, NOW)
    assert (r.status, r.kind) == ("fail", "trust_too_low")
    assert r.reason == "namespace proof verifiedAt is in the future; the policy requires trusted"
    exact, ekid = _proof_policy(NOW)  # made at the very moment of verification: not in the future
    assert C.check_trust(sig(keyid=ekid, signed_at=SIGNED_AT), exact, NOW).status == "pass"


def test_trust_judges_the_signing_time() -> None:
    p, kid = keyed_policy()
    for bad in ("garbage", None):
        r = C.check_trust(sig(keyid=kid, signed_at=bad), p, NOW)
        assert (r.kind, r.reason) == (
            "trust_too_low", "signedAt is missing or not RFC 3339; the policy requires trusted"
        ), bad
    later = C.check_trust(sig(keyid=kid, signed_at="2027-06-01T00:00:00Z"), p, NOW)
    assert later.kind == "trust_too_low"
    assert later.reason.startswith("artifact signed at 2027-06-01T00:00:00Z, later than the time of")


def test_trust_names_a_key_of_another_policy_publisher() -> None:
    from acxoci.install.vpolicy import TrustedPublisher

    p, _ = keyed_policy()
    other, okid = keyed_policy(key_publisher="org.other")
    both = pol(publishers=(p.publishers[0], TrustedPublisher("org.other", other.publishers[0].registry)))
    r = C.check_trust(sig(keyid=okid, signed_at=SIGNED_AT), both, NOW)
    assert r.kind == "untrusted_publisher"
    assert r.reason.startswith(f"signer key is registered to publisher org.other, not {PUBLISHER}"), r.reason


def test_check_result_json_view() -> None:
    r = C.check_harness(C.HarnessEvidence(False, ("tool:a", "tool:b")), pol(), host_given=True)
    assert r.to_json() == {
        "order": 8, "id": "harness", "what": C.CHECK_DOC["harness"], "status": "fail",
        "reason": "host does not meet the harness requirements: tool:a, tool:b", "kind": "harness_unmet",
        "details": {"unmet": ["tool:a", "tool:b"]},
    }
    ok = C.check_harness(C.HarnessEvidence(True), pol(), host_given=True).to_json()
    assert ok == {"order": 8, "id": "harness", "what": C.CHECK_DOC["harness"], "status": "pass",
                  "reason": "host satisfies the harness requirements"}


def test_harness_reasons() -> None:
    assert C.check_harness(None, pol(), host_given=False).reason == "no host descriptor given"
    assert C.check_harness(None, pol(require_host=True), host_given=False).reason == (
        "the policy requires a host descriptor and none was given"
    )
    for r in (C.check_harness(None, pol(), host_given=True),
              C.check_harness(C.HarnessEvidence(True), pol(), host_given=True, available=False)):
        assert (r.id, r.status, r.kind, r.reason) == (
            "harness", "unavailable", "unavailable", "harness negotiation is not available"
        )


def test_relied_credential_floor_is_inclusive_by_level_or_tier() -> None:
    p = pol(level_minimum=10)
    # at the floor exactly (by level, or by tier alone): preferred over a clean one below it
    for at_floor in (cred(level=10, tier=None, revoked=True), cred(level=None, tier="mid", revoked=True)):
        below = cred(level=9, tier=None)
        assert C.relied_credential([below, at_floor], p, ROM)[0] is at_floor
    # no level and no tier never meets a floor, even a floor of 0 or 1
    for floor in (0, 1):
        bare, low = cred(level=None, tier=None), cred(level=floor, tier=None, revoked=True)
        assert C.relied_credential([bare, low], pol(level_minimum=floor), ROM)[0] is low


def test_relied_credential_says_why_others_were_set_aside() -> None:
    p = pol(level_minimum=1, level_issuers=("did:web:v.example",))
    creds = [cred(verified=False, reason=""), cred(verified=False, reason="proof does not verify"),
             cred(issuer="did:web:x.example"), cred(rom_digest="sha256:" + "f" * 64)]
    assert C.relied_credential(creds, p, ROM) == (None, [
        "did:web:v.example: credential does not verify",
        "did:web:v.example: proof does not verify",
        "did:web:x.example: issuer not accepted by the policy",
        f"did:web:v.example: bound to ROM sha256:{'f' * 64}, not {ROM}",
    ])


@pytest.mark.parametrize("trust", ["tampered", "legacy", "unsigned", "unverified"])
def test_trust_needs_a_valid_signature_whatever_the_status(trust: str) -> None:
    p, kid = keyed_policy()
    r = C.check_trust(sig(keyid=kid, signed_at=SIGNED_AT, trust=trust, status="warning"), p, NOW)
    assert (r.status, r.kind, r.reason) == ("fail", "untrusted_publisher",
                                            f"no trust without a valid signature ({trust})")
    tampered = sig(keyid=kid, trust="tampered", status="invalid", issues=("ROM changed", "other"))
    assert C.check_trust(tampered, p, NOW).reason == "no trust without a valid signature (ROM changed)"


def test_trust_details_and_the_default_clock() -> None:
    p, kid = keyed_policy()
    good = sig(keyid=kid, signed_at=SIGNED_AT)
    r = C.check_trust(good, p)  # today's clock: the key's window spans it
    assert (r.status, r.reason) == ("pass", f"{PUBLISHER} is trusted: signer key is active and registered to "
                                    f"{PUBLISHER}")
    assert dict(r.details) == {"publisherId": PUBLISHER, "keyid": kid, "trust": "trusted",
                               "minimumTrust": "trusted", "standing": "trusted"}
    unknown = C.check_trust(sig(keyid=kid, signed_at=SIGNED_AT, publisher_id="org.nobody"), p, NOW)
    assert unknown.reason == "publisher 'org.nobody' is not trusted by the policy"
    assert C.check_trust(None, p, NOW).reason == "no signature verdict (the verifier could not run)"


def test_revocation_is_judged_on_the_credential_bound_to_this_rom() -> None:
    p = pol(level_minimum=10)
    elsewhere = cred(level=30, rom_digest="sha256:" + "f" * 64)  # unrevoked, but for another ROM
    revoked_here = cred(level=12, revoked=True, status_reason="revoked (index 1)")
    r = C.check_revocation([elsewhere, revoked_here], p, ROM)
    assert r.kind == "revoked"
    assert r.reason == "credential from did:web:v.example is revoked: revoked (index 1)"
    assert dict(r.details) == {"statusList": "https://v.example/s/1", "index": 1, "source": "fetched",
                               "validFrom": (NOW - timedelta(hours=1)).isoformat(), "maxAgeSeconds": 86400,
                               "offlineAllowed": False}


def test_revocation_reasons() -> None:
    p = pol(level_minimum=1)
    assert C.check_revocation([cred()], pol(), ROM).reason == (
        "no credential is relied on (the policy requires no level)"
    )
    assert C.check_revocation(None, p, ROM).reason == "revocation checking is not available"
    assert C.check_revocation([], p, ROM).reason == "no credential is relied on (see the level check)"
    assert C.check_revocation([cred(status_reason="")], p, ROM).reason == "not revoked per https://v.example/s/1"
    assert C.check_revocation([cred()], p, ROM).reason == "not revoked"
    assert C.check_revocation([cred(status_list=None, revoked=None)], p, ROM).reason == (
        "the credential has no status list entry, so it cannot be shown to be unrevoked"
    )
    assert C.check_revocation([cred(revoked=None, status_error="")], p, ROM).reason == (
        "status list https://v.example/s/1 could not be checked: unknown"
    )
    stale = cred(revoked=None, status_stale=True, status_reason="")
    assert C.check_revocation([stale], p, ROM).reason == "the status list is stale"
    assert C.check_revocation([cred(revoked=None, status_stale=True)], p, ROM).reason == "not revoked"
    bare = C.check_revocation([cred(status_list_valid_from=None)], p, ROM)
    assert bare.details["validFrom"] is None


def test_version_check() -> None:
    assert C.check_version(None).reason == "nothing was verified to take a version from"
    ok = C.check_version(C.VersionEvidence("1.2.3", "1.2.3"))
    assert (ok.status, ok.reason, dict(ok.details)) == (
        "pass", "version 1.2.3", {"signed": "1.2.3", "tag": "1.2.3", "installed": None}
    )
    assert C.check_version(C.VersionEvidence(None, None)).reason == "no signed version"
    assert C.check_version(C.VersionEvidence("1.0.0", "latest")).status == "pass"  # not a version tag
    for signed in ("1.2.4", None):
        r = C.check_version(C.VersionEvidence(signed, "1.2.3"))
        assert (r.status, r.kind) == ("fail", "rollback")
        assert r.reason == (f"tag 1.2.3 does not name the signed version {signed!r}: the tag may have been "
                            "re-pointed at another release")
    down = C.VersionEvidence("1.0.0", "1.0.0", installed="2.0.0", installed_name="io.example/agent")
    r = C.check_version(down)
    assert (r.status, r.kind) == ("fail", "rollback")
    assert r.reason == ("io.example/agent 2.0.0 is installed; 1.0.0 is older (pass --allow-downgrade to "
                        "install it anyway)")
    assert dict(r.details) == {"signed": "1.0.0", "tag": "1.0.0", "installed": "2.0.0"}
    allowed = C.check_version(dataclasses.replace(down, allow_downgrade=True))
    assert allowed.status == "pass"
    assert allowed.reason == "downgrade from 2.0.0 to 1.0.0 allowed (--allow-downgrade)"
    assert C.check_version(C.VersionEvidence("2.0.0", None, installed="1.0.0")).status == "pass"


def test_run_checks_passes_each_check_its_inputs() -> None:
    p, kid = keyed_policy()
    p = dataclasses.replace(p, level_minimum=2)
    g = gathered(signature=sig(keyid=kid, signed_at=SIGNED_AT))
    got = C.run_checks(g, p, NOW)
    assert got == [
        C.check_registry(g.repository, p), C.check_content(g.content), C.check_signature(g.signature),
        C.check_trust(g.signature, p, NOW), C.check_attestations(g.attestations, p),
        C.check_level(g.credentials, p, ROM), C.check_revocation(g.credentials, p, ROM),
        C.check_harness(g.harness, p, host_given=True, available=True), C.check_budget(None, p),
        C.check_staffing("cartridge", None), C.check_version(g.version), C.check_lifecycle(None),
        C.check_provenance_requirement(g.attestations, p),
    ]
    # the credential bound to another ROM is set aside: only the ROM's own (level 3) counts
    assert got[5].status == "pass" and got[3].status == "pass" and got[7].kind == "harness_unmet"
    unsigned = C.run_checks(gathered(signature=None), p, NOW)
    assert unsigned[5] == C.check_level(g.credentials, p, None)


@pytest.mark.parametrize(("kind", "why"), [("workflow", "does not apply to a workflow"),
                                           ("agent-graph", "does not apply to an agent graph")])
def test_run_checks_skips_cartridge_checks_for_documents(kind: str, why: str) -> None:
    got = {r.id: r for r in C.run_checks(gathered(kind=kind), pol(level_minimum=1), NOW)}
    for cid in ("level", "revocation", "harness", "policy-budget"):
        assert (got[cid].status, got[cid].reason) == ("skip", why), cid
    assert got["version"].status == "pass" and got["signature"].status == "pass"


def test_budget_equal_to_the_host_is_within_it() -> None:
    budget = ResourceLimits.from_json(BUDGET)
    host = ResourceLimits.from_json(
        {"tokenSpend": {"dailyPerAgent": 500}, "timeouts": {"maxCommandSec": 600}}
    )
    r = C.check_budget(C.BudgetEvidence((), budget, host), pol())
    assert (r.status, r.reason) == ("pass", "policy valid; budget within the host's limits")
    assert r.details["aboveHost"] == []
    nobudget = C.check_budget(C.BudgetEvidence((), None, host), pol())
    assert nobudget.status == "pass" and nobudget.details["aboveHost"] == []
    capped = C.check_budget(C.BudgetEvidence((), budget, ResourceLimits.from_json(
        {"tokenSpend": {"dailyPerAgent": 100}})), pol(budget_above_host="cap"))
    assert capped.reason == "budget capped to the host's limits: tokenSpend.dailyPerAgent 500 > host 100"
    bad = C.check_budget(C.BudgetEvidence(("a", "b"), budget, None), pol())
    assert bad.reason == "the package is invalid (as `acx cartridge spec` says): a; b"
    assert dict(bad.details) == {"errors": ["a", "b"]}


def test_level_floor_is_inclusive() -> None:
    assert C.check_level([cred(level=20, tier=None)], pol(level_minimum=20), ROM).status == "pass"
    assert C.check_level([cred(level=19, tier=None)], pol(level_minimum=20), ROM).kind == "level_too_low"
    # a tier floor is met by the tier or by the level, each inclusively
    staff = pol(level_minimum="staff")
    assert C.check_level([cred(level=None, tier="staff")], staff, ROM).status == "pass"
    assert C.check_level([cred(level=20, tier="intern")], staff, ROM).status == "pass"
    assert C.check_level([cred(level=19, tier="senior")], staff, ROM).kind == "level_too_low"
    found = cred(level=20, tier="staff", digest="sha256:d", keyid="k")
    r = C.check_level([found], pol(level_minimum=20), ROM)
    assert r.reason == "level 20 (staff) from did:web:v.example meets 20"
    assert dict(r.details) == {"required": 20, "level": 20, "tier": "staff", "issuer": "did:web:v.example",
                               "credentialDigest": "sha256:d", "keyid": "k"}
    low = C.check_level([cred(level=3, tier="intern")], pol(level_minimum=20), ROM)
    assert low.reason == "level 3 (intern) from did:web:v.example is below the required 20"
    none = C.check_level([cred(verified=False, reason="proof")], pol(level_minimum=1), ROM)
    assert none.reason == "no usable level credential (required 1): did:web:v.example: proof"
    assert none.details["setAside"] == ["did:web:v.example: proof"]
    assert C.check_level([], pol(level_minimum=1), ROM).reason == "no usable level credential (required 1)"


def test_run_checks_hands_over_attestations_staffing_and_harness_availability() -> None:
    p = pol(attestation_formats=("sigstore-bundle",))
    found = [C.AttestationFound("sigstore-bundle", "https://slsa.dev/provenance/v1", True)]
    g = gathered(attestations=found, harness_available=False, kind="workflow",
                  staffing={"ready": False, "reasons": ["no reviewer"]})
    got = {r.id: r for r in C.run_checks(g, p, NOW)}
    assert got["attestations"] == C.check_attestations(found, p) and got["attestations"].status == "pass"
    assert (got["staffing"].status, got["staffing"].reason) == ("fail", "NOT READY: no reviewer")
    cart = {r.id: r for r in C.run_checks(gathered(harness_available=False), pol(), NOW)}
    assert cart["harness"].status == "unavailable"


def test_registry_content_and_signature_results_exactly() -> None:
    allow = pol(allowed_registries=("ghcr.io/acx/*",))
    assert C.check_registry("ghcr.io/acx/agent", allow) == C.CheckResult(
        "registry", "pass", "ghcr.io/acx/agent is allowed", None, {"repository": "ghcr.io/acx/agent"})
    assert C.check_registry("evil.example/agent", allow) == C.CheckResult(
        "registry", "fail", "evil.example/agent matches none of the allowed registries ['ghcr.io/acx/*']",
        "registry_not_allowed", {"repository": "evil.example/agent"})
    blobs = (("config", "sha256:" + "1" * 64), ("layer", "sha256:" + "2" * 64))
    assert C.check_content(C.ContentEvidence(ROM, ROM, None, blobs)) == C.CheckResult(
        "content-digest", "pass", "manifest and 2 blob(s) match their digests", None,
        {"resolvedDigest": ROM, "blobs": [{"role": "config", "digest": "sha256:" + "1" * 64},
                                          {"role": "layer", "digest": "sha256:" + "2" * 64}]})
    assert C.check_content(C.ContentEvidence(ROM, ROM, "blob layer hashes to x")) == C.CheckResult(
        "content-digest", "fail", "blob layer hashes to x", "tampered", {"resolvedDigest": ROM})
    other = "sha256:" + "c" * 64
    assert C.check_content(C.ContentEvidence(ROM, other)) == C.CheckResult(
        "content-digest", "fail", f"manifest digest {other} != resolved {ROM}", "digest_mismatch",
        {"resolvedDigest": ROM})
    assert C.check_content(None) == C.CheckResult("content-digest", "unavailable", "nothing was pulled",
                                                  "unavailable")
    ev = sig(summary="Signed by x.", issues=("i",))
    details = {"status": "verified", "trust": "trusted", "summary": "Signed by x.", "issues": ["i"],
               "keyid": ev.keyid, "romDigest": ROM}
    assert C.check_signature(ev) == C.CheckResult("signature", "pass", "Signed by x.", None, details)
    for over, kind in (({"trust": "tampered", "status": "warning"}, "tampered"),
                       ({"status": "invalid", "trust": "portable"}, "tampered"),
                       ({"trust": "legacy", "status": "warning"}, "unsigned"),
                       ({"trust": "unverified", "status": "warning"}, "bad_signature"),
                       ({"keyid": None}, "bad_signature")):
        r = C.check_signature(dataclasses.replace(ev, **over))
        assert (r.status, r.kind, r.reason) == ("fail", kind, "Signed by x."), over
        assert r.details["trust"] == over.get("trust", "trusted")
