"""Level credentials end to end: issue → verify, revocation, freshness, anti-transplant, rejections."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest import dsse, statuslist
from acxoci.attest.canonical import jcs
from acxoci.attest.keys import PrivateKey, generate_ed25519, load_public_pem
from acxoci.attest.vc import sign as vc_sign
from acxoci.errors import InvalidInput, RefusedByPolicy, UsageError
from acxoci.level import status as st
from acxoci.level.benchmark import demo_suite
from acxoci.level.credential import REASON_MISMATCH, issue_credential, verify_credential
from acxoci.level.issuers import IssuerRegistry, did_web_publisher
from acxoci.level.run import TRAJECTORY_PREDICATE, RunResult, run_level
from acxoci.level.solver import ReferenceSolver
from tests.harness.levels import ADA, ISSUER, LIST_ID, REX, T0, World, issuers_doc, statement_env


@pytest.fixture(scope="module")
def played() -> tuple[PrivateKey, RunResult]:
    """One run of ada-ridge's ROM (immutable), shared by the module's tests: playing is the slow part."""
    key = generate_ed25519()  # the issuer signs the evidence too
    result = run_level(
        demo_suite(), cartridge=Path("ada-ridge.acx"), rom_digest=ADA, solver=ReferenceSolver(33), signer=key
    )
    return key, result


@pytest.fixture
def world(tmp_path: Path, played: tuple[PrivateKey, RunResult]) -> World:
    key, result = played
    return World(tmp_path, key, result)


def test_issued_credential_fields(world: World) -> None:
    vc = world.vc
    res = vc["credentialSubject"]["result"][0]
    assert vc["@context"][0] == "https://www.w3.org/ns/credentials/v2"
    assert vc["type"] == ["VerifiableCredential", "OpenBadgeCredential"]
    assert vc["issuer"] == {"id": ISSUER, "type": ["Profile"]}
    assert vc["credentialSubject"]["id"] == "urn:acx:cartridge:io.github.ridgeworks/ada-ridge@x"
    assert (res["acx:ratingMu"], res["acx:ratingSigma"], res["acx:passRate"]) == (32.087, 1.204, 0.567)
    assert (res["acx:acxLevel"], res["achievedLevel"], res["acx:gamesPlayed"]) == (28, "principal", 90)
    assert res["acx:cartridgeRomDigest"] == ADA
    assert vc["credentialStatus"] == {
        "id": f"{LIST_ID}#42",
        "type": "BitstringStatusListEntry",
        "statusPurpose": "revocation",
        "statusListIndex": "42",
        "statusListCredential": LIST_ID,
    }
    assert len(vc["evidence"]) == 90 and vc["evidence"][0]["acx:digestMultibase"].startswith("u")
    assert vc["validUntil"] == "2026-08-31T12:00:00.000Z"
    assert vc["proof"]["verificationMethod"] == f"{ISSUER}#key-1"


def test_issue_then_verify_passes(world: World) -> None:
    v = world.verify()
    assert v.state == "verified", v.reasons
    assert v.ok and v.variant == "w3c" and v.level == 28 and v.evidence_checked == 90
    assert v.status is not None and v.status.state == "valid"


def test_revoked_after_bit_flip(world: World) -> None:
    world.revoke()
    v = world.verify()
    assert v.state == "revoked" and not v.ok
    assert v.reasons[0].startswith("revoked")
    world.revoke(index=7)  # re-signing for another credential keeps ours set
    assert world.verify().state == "revoked"


def test_other_bits_do_not_revoke(world: World) -> None:
    world.revoke(index=41)
    assert world.verify().state == "verified"


def test_stale_list_fails_unless_offline_allowed(world: World) -> None:
    late = T0 + timedelta(days=3)
    v = world.verify(now=late)
    assert v.state == "invalid" and any("stale" in r for r in v.reasons)
    ok = world.verify(now=late, offline=True)
    assert ok.state == "verified" and ok.status is not None and ok.status.stale
    assert "offline allowed" in ok.status.reason


def test_unreachable_list_uses_cache_only_offline(world: World) -> None:
    assert world.verify().ok  # fills the cache
    world.list_path.unlink()
    v = world.verify()
    assert v.state == "invalid" and any("unreachable" in r for r in v.reasons)
    ok = world.verify(offline=True)
    assert ok.ok and ok.status is not None and ok.status.from_cache
    cached = list(world.cache.glob("*.json"))
    assert len(cached) == 1 and json.loads(cached[0].read_text())["fetchedAt"] == "2026-08-01T13:00:00.000Z"
    world.cache = world.tmp / "empty-cache"
    assert world.verify(offline=True).state == "invalid"


def test_same_vc_against_another_rom_is_a_binding_mismatch(world: World) -> None:
    v = world.verify(rom=REX)
    assert v.state == "invalid"
    assert any(r.startswith(REASON_MISMATCH) for r in v.reasons)


def test_self_issued_rejected(world: World) -> None:
    v = world.verify(subject_keyid=world.key.public().keyid())
    assert v.state == "invalid" and any("self-issuance rejected" in r for r in v.reasons)
    v2 = world.verify(subject_publisher="example.verifier/agents")
    assert any("self-issuance rejected" in r for r in v2.reasons)
    with pytest.raises(RefusedByPolicy, match="self-issuance"):
        issue_credential(
            world.result,
            cartridge_id="c",
            issuer=ISSUER,
            key=world.key,
            now=T0,
            status=world.entry,
            subject_keyid=world.key.public().keyid(),
        )


def test_expired_and_not_yet_valid(world: World) -> None:
    v = world.verify(now=T0 + timedelta(days=31), offline=True)
    assert v.state == "invalid" and any(r.startswith("expired: validUntil") for r in v.reasons)
    early = world.verify(now=T0 - timedelta(days=1), offline=True)
    assert any(r.startswith("not yet valid") for r in early.reasons)


def test_unknown_issuer_rejected(world: World) -> None:
    other = IssuerRegistry.from_json(issuers_doc((generate_ed25519().public(), "org.elsewhere")))
    v = world.verify(issuers=other)
    assert v.state == "invalid" and v.reasons[0].startswith("signer key is not in the trust registry")
    wrong_key = IssuerRegistry.from_json(issuers_doc((generate_ed25519().public(), "example.verifier")))
    v2 = world.verify(issuers=wrong_key)
    assert v2.state == "invalid" and "does not verify" in v2.reasons[0]


def test_ineligible_issuer_key_rejected(world: World) -> None:
    revoked = IssuerRegistry.from_json(
        issuers_doc((world.key.public(), "example.verifier"), status="revoked", reason="key-compromise")
    )
    v = world.verify(issuers=revoked)
    assert v.state == "invalid" and any("not eligible" in r for r in v.reasons)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["credentialSubject"]["result"][0].__setitem__("acx:acxLevel", 35),
        lambda d: d["credentialSubject"]["result"][0].__setitem__("acx:cartridgeRomDigest", REX),
        lambda d: d.__setitem__("validUntil", "2099-01-01T00:00:00.000Z"),
        lambda d: d["credentialStatus"].__setitem__("statusListIndex", "43"),
        lambda d: d["evidence"].pop(),
    ],
)
def test_tampered_vc_rejected(world: World, mutate: Any) -> None:
    doc = copy.deepcopy(world.vc)
    mutate(doc)
    v = world.verify(doc)
    assert v.state == "invalid" and "tampered credential" in v.reasons[0]


def test_tampered_status_list_rejected(world: World) -> None:
    doc = st.read_list_file(world.list_path)
    bits = statuslist.decode_list(doc["credentialSubject"]["encodedList"])
    statuslist.set_bit(bits, 42)
    doc["credentialSubject"]["encodedList"] = statuslist.encode_list(bits)  # bit flipped, not re-signed
    st.write_json_atomic(world.list_path, doc)
    v = world.verify()
    assert v.state == "invalid" and any("status list rejected" in r and "tampered" in r for r in v.reasons)


def test_status_list_from_another_issuer_rejected(world: World) -> None:
    mallory = generate_ed25519()
    path = world.tmp / "mallory.json"
    st.write_json_atomic(
        path, st.create_status_list(list_id=LIST_ID, issuer="did:web:mallory.example", key=mallory, now=T0)
    )
    v = world.verify(source=str(path))
    assert v.state == "invalid" and any("not in the issuer trust registry" in r for r in v.reasons)
    path2 = world.tmp / "other-id.json"
    st.write_json_atomic(
        path2,
        st.create_status_list(list_id="https://status.example/lists/2", issuer=ISSUER, key=world.key, now=T0),
    )
    v2 = world.verify(source=str(path2))
    assert any("is not the credential's statusListCredential" in r for r in v2.reasons)


def test_forged_evidence_rejected(world: World) -> None:
    # Re-sign a credential whose evidence was signed by a different key: the proof holds, evidence fails.
    stranger = run_level(
        demo_suite(),
        cartridge=Path("x"),
        rom_digest=ADA,
        solver=ReferenceSolver(33),
        signer=generate_ed25519(),
    )
    doc = issue_credential(
        stranger, cartridge_id="c", issuer=ISSUER, key=world.key, now=T0, status=world.entry
    )
    v = world.verify(doc)
    assert v.state == "invalid" and any(r.startswith("evidence[0]") for r in v.reasons)


def test_gate_refuses_issuance(world: World) -> None:
    short = run_level(
        demo_suite(),
        cartridge=Path("x"),
        rom_digest=ADA,
        solver=ReferenceSolver(33),
        signer=world.key,
        draw_count=20,
    )
    with pytest.raises(RefusedByPolicy, match=r"gating failed: sigma=\d+\.\d+ \(<1\.5\? no\), games=20"):
        issue_credential(short, cartridge_id="c", issuer=ISSUER, key=world.key, now=T0, status=world.entry)


def test_no_status_check_is_unresolved(world: World) -> None:
    v = verify_credential(world.vc, issuers=world.issuers, expected_rom_digest=ADA, now=T0)
    assert v.state == "unresolved" and not v.ok


def test_reference_vc_min_through_the_policy(vectors_dir: Path) -> None:
    doc = json.loads((vectors_dir / "level" / "vc-min.json").read_text())
    pub = load_public_pem((vectors_dir / "level" / "vc-min.pub.pem").read_bytes())
    reg = IssuerRegistry.from_json(issuers_doc((pub, "example.verifier")))
    rom = doc["credentialSubject"]["result"][0]["acx:cartridgeRomDigest"]
    v = verify_credential(doc, issuers=reg, expected_rom_digest=rom, now=T0)
    assert v.state == "unresolved" and v.variant == "acx" and v.level == 30
    bad = verify_credential(doc, issuers=reg, expected_rom_digest=ADA, now=T0)
    assert bad.state == "invalid" and any(r.startswith(REASON_MISMATCH) for r in bad.reasons)


def test_did_web_mapping() -> None:
    assert did_web_publisher("did:web:verifier.acx.dev") == "dev.acx.verifier"
    assert did_web_publisher("did:web:example.com:issuers:a") == "com.example/issuers/a"
    for bad in ("did:key:z6Mk", "did:web:localhost%3A8443", "did:web:UPPER..x"):
        with pytest.raises(InvalidInput):
            did_web_publisher(bad)


def test_http_sources_refused(world: World) -> None:
    with pytest.raises(UsageError):
        st.fetch_list("http://status.example/1", now=T0)


def test_verdict_json_view(world: World) -> None:
    v = world.verify()
    assert v.status is not None
    assert v.to_json() == {
        "state": "verified",
        "ok": True,
        "reasons": [],
        "issuer": ISSUER,
        "proofVariant": "w3c",
        "issuerKeyId": world.key.public().keyid(),
        "level": 28,
        "tier": "principal",
        "mu": 32.087,
        "sigma": 1.204,
        "games": 90,
        "romDigest": ADA,
        "evidenceChecked": 90,
        "status": v.status.to_json(),
    }
    assert v.to_json()["status"]["state"] == "valid"


def test_early_refusal_keeps_issuer_and_rom_digest(world: World) -> None:
    other = IssuerRegistry.from_json(issuers_doc((generate_ed25519().public(), "org.elsewhere")))
    v = world.verify(issuers=other)
    assert v.state == "invalid" and (v.issuer, v.rom_digest) == (ISSUER, ADA)
    assert v.to_json()["issuer"] == ISSUER and v.to_json()["romDigest"] == ADA


def test_impersonation_by_another_registered_issuer_is_named(world: World) -> None:
    # Mallory, registered for her own namespace after an unrelated issuer, signs as ISSUER: the
    # verdict names her key's registration, whatever other keys come before it in the registry.
    mallory = generate_ed25519()
    issuers = IssuerRegistry.from_json(
        issuers_doc(
            (world.key.public(), "example.verifier"),
            (generate_ed25519().public(), "org.unrelated"),
            (mallory.public(), "org.mallory"),
        )
    )
    forged = issue_credential(
        world.result, cartridge_id="c", issuer=ISSUER, key=mallory, now=T0, status=world.entry
    )
    v = world.verify(forged, issuers=issuers)
    assert v.state == "invalid" and len(v.reasons) == 1
    assert "org.mallory" in v.reasons[0] and "does not verify" not in v.reasons[0], v.reasons
    # forced to the ACX proof variant, Mallory's W3C proof verifies under no key: a plain refusal
    acx = world.verify(forged, issuers=issuers, variant="acx")
    assert acx.state == "invalid" and "tampered credential" in acx.reasons[0], acx.reasons


def _with_evidence(world: World, envelopes: dict[int, dict[str, Any]],
                   claims: dict[int, str] | None = None) -> dict[str, Any]:
    """world's credential with some evidence envelopes (and claimed digests) replaced, re-signed by
    the issuer: the proof holds, only the evidence check can object."""
    doc = copy.deepcopy(world.vc)
    doc.pop("proof")
    for i, env in envelopes.items():
        doc["evidence"][i]["acx:dsseEnvelope"] = env
    for i, claim in (claims or {}).items():
        doc["evidence"][i]["acx:trajectoryDigest"] = claim
    return vc_sign(doc, world.key, verification_method=f"{ISSUER}#key-1", created=st.iso(T0))


def test_every_bad_evidence_item_is_reported(world: World) -> None:
    stranger = generate_ed25519()
    forged = _with_evidence(world, {0: statement_env(world, 0, key=stranger),
                                    1: statement_env(world, 1, key=stranger)})
    v = world.verify(forged)
    assert v.state == "invalid" and v.evidence_checked == 88
    assert [r.split(":")[0] for r in v.reasons] == ["evidence[0]", "evidence[1]"], v.reasons


def test_evidence_must_be_an_acx_trajectory_statement(world: World) -> None:
    doc = _with_evidence(world, {
        0: statement_env(world, 0, predicate_type="https://example.com/other/v1"),
        1: statement_env(world, 1, trajectory=["not", "a", "trajectory"]),
        2: statement_env(world, 2, subject_digest="0" * 64),
        3: statement_env(world, 3, subject_digest="0" * 64),
    })
    v = world.verify(doc)
    assert v.state == "invalid" and v.evidence_checked == 86
    assert list(v.reasons) == [
        "evidence[0]: statement is not an ACX trajectory statement",
        "evidence[1]: statement is not an ACX trajectory statement",
        "evidence[2]: trajectory does not match its content address",
        "evidence[3]: trajectory does not match its content address",
    ]


def test_malformed_statement_evidence_is_reported_per_item(world: World) -> None:
    bad = {"_type": "https://in-toto.io/Statement/v1", "subject": [], "predicateType": TRAJECTORY_PREDICATE,
           "predicate": {}}
    env = dsse.sign(dsse.INTOTO_PAYLOAD_TYPE, jcs(bad), world.key, world.key.public().keyid()).to_json()
    v = world.verify(_with_evidence(world, {0: env, 1: env}))
    assert v.state == "invalid" and v.evidence_checked == 88
    assert [r.split(":")[0] for r in v.reasons] == ["evidence[0]", "evidence[1]"], v.reasons


def test_raw_trajectory_evidence_is_checked_against_its_claim(world: World) -> None:
    # the reference's form: the envelope's payload is the trajectory itself, not a statement
    def raw(i: int) -> dict[str, Any]:
        payload = jcs(world.result.games[i].trajectory)
        return dsse.sign("application/json", payload, world.key, world.key.public().keyid()).to_json()

    ok = world.verify(_with_evidence(world, {0: raw(0)}))
    assert ok.state == "verified" and ok.evidence_checked == 90, ok.reasons
    moved = world.verify(_with_evidence(world, {0: raw(1)}))  # item 0's claim, item 1's trajectory
    assert moved.state == "invalid" and moved.reasons[0].startswith("evidence[0]: digest "), moved.reasons


def test_malformed_credentials_are_invalid_with_a_reason(world: World) -> None:
    v = world.verify([world.vc])
    assert (v.state, v.reasons) == ("invalid", ("$: the credential is not a JSON object",))
    no_subject = {k: val for k, val in world.vc.items() if k != "credentialSubject"}
    v = world.verify(no_subject)
    assert v.state == "invalid" and v.reasons and all(r.startswith("schema ") for r in v.reasons)


def test_proof_method_must_be_the_issuers(world: World) -> None:
    doc = copy.deepcopy(world.vc)
    doc["proof"]["verificationMethod"] = "did:web:verifier.example.evil#key-1"
    v = world.verify(doc)
    assert v.state == "invalid" and v.reasons == (
        f"proof verificationMethod did:web:verifier.example.evil#key-1 is not the issuer {ISSUER}'s",)
    assert (v.issuer, v.rom_digest) == (ISSUER, ADA)


def test_valid_until_is_inclusive(world: World) -> None:
    until = T0 + timedelta(days=30)
    assert world.verify(now=until, offline=True).state in ("verified", "revoked")
    late = world.verify(now=until + timedelta(milliseconds=1), offline=True)
    assert late.state == "invalid" and any(r.startswith("expired: validUntil") for r in late.reasons)


def test_self_issuance_by_publisher_team(world: World) -> None:
    v = world.verify(subject_publisher="example.verifier/team-a")
    assert v.state == "invalid" and any("is the cartridge publisher" in r for r in v.reasons)
    assert world.verify(subject_publisher="org.other/example.verifier").state == "verified"
