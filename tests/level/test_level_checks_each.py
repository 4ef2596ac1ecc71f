"""One test per level / status-list check that the issue-15 mutation run found unguarded: each
builds the one hostile document that only that check stops, so deleting the check makes the test
fail (see docs/trust-decisions.md, "How the checks are guarded")."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest import vc
from acxoci.attest.keys import PrivateKey, PublicKey, generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.install import checks as C
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.level import status as st
from acxoci.level.benchmark import demo_suite
from acxoci.level.credential import issue_credential, verify_credential
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.run import run_level
from acxoci.level.solver import ReferenceSolver
from acxoci.oci.errors import LimitExceeded
from tests.harness.levels import ADA, ISSUER, LIST_ID, REX, T0, World, issuers_doc
from tests.harness.servers import self_signed_cert

OTHER_ISSUER = "did:web:other.example"  # → publisher example.other
AT = T0 + timedelta(hours=1)


def two_issuers(a: PublicKey, b: PublicKey) -> IssuerRegistry:
    """A registry with two registered issuers: verifier.example (key a) and other.example (key b)."""
    return IssuerRegistry.from_json(issuers_doc((a, "example.verifier"), (b, "example.other")))


def resign(doc: dict[str, Any], key: PrivateKey, **kw: Any) -> dict[str, Any]:
    """Re-sign a credential after an edit (the proof verifies again; only the checked fact is wrong)."""
    unsigned = {k: v for k, v in doc.items() if k != "proof"}
    vm = doc["proof"]["verificationMethod"]
    return vc.sign(unsigned, key, verification_method=vm, created=doc["proof"]["created"], **kw)


@pytest.fixture(scope="module")
def mallory_run() -> tuple[PrivateKey, Any]:
    """A run whose evidence is signed by another registered issuer's key (so only the issuer
    binding can tell it apart)."""
    key = generate_ed25519()
    return key, run_level(demo_suite(), cartridge=Path("ada-ridge.acx"), rom_digest=ADA,
                          solver=ReferenceSolver(33), signer=key)


@pytest.fixture
def world(tmp_path: Path) -> World:
    key = generate_ed25519()
    result = run_level(demo_suite(), cartridge=Path("ada-ridge.acx"), rom_digest=ADA,
                       solver=ReferenceSolver(33), signer=key)
    return World(tmp_path, key, result)


# ---- credential (acxoci/level/credential.py, issuers.py) ---------------------------------------


def test_issuer_impersonation_by_another_registered_issuers_key(world: World,
                                                                 mallory_run: tuple[PrivateKey, Any]) -> None:
    """other.example's key signs a credential that names verifier.example as issuer: the key is
    registered, but not for that issuer (issuers.candidates filters by the DID's publisher)."""
    mkey, result = mallory_run
    reg = two_issuers(world.key.public(), mkey.public())
    forged = issue_credential(result, cartridge_id="c", issuer=ISSUER, key=mkey, now=T0, status=world.entry)
    v = world.verify(forged, issuers=reg)
    assert v.state == "invalid"
    assert v.reasons == ("signer key is registered to publisher example.other, not example.verifier",)
    honest = world.verify(issuers=reg)  # the registry itself is fine for the real issuer
    assert honest.state == "verified", honest.reasons


def test_proof_verification_method_must_be_the_issuers(world: World) -> None:
    doc = copy.deepcopy(world.vc)
    doc["proof"]["verificationMethod"] = OTHER_ISSUER + "#key-1"
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid" and "is not the issuer" in v.reasons[0]


def test_proof_purpose_must_be_assertion_method(world: World) -> None:
    doc = resign(world.vc, world.key, proof_purpose="authentication")
    v = world.verify(doc)
    assert v.state == "invalid"
    assert "proofPurpose authentication is not assertionMethod" in v.reasons


def test_tier_must_match_the_level(world: World) -> None:
    doc = copy.deepcopy(world.vc)
    doc["credentialSubject"]["result"][0]["acx:careerTier"] = "legend"
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid" and "careerTier legend does not match acxLevel 28" in v.reasons


@pytest.mark.parametrize("bad", [29.0, True])
def test_level_must_be_an_integer(world: World, bad: Any) -> None:
    """Issue 15: a float acxLevel (29.0) was accepted and skipped the tier check; bool is not int."""
    doc = copy.deepcopy(world.vc)
    doc["credentialSubject"]["result"][0]["acx:acxLevel"] = bad
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid" and any("acxLevel" in r for r in v.reasons), v.reasons


def test_evidence_digest_must_match_the_signed_trajectory(world: World) -> None:
    doc = copy.deepcopy(world.vc)
    doc["evidence"][3]["acx:trajectoryDigest"] = "sha256:" + "0" * 64
    doc["evidence"][3].pop("acx:digestMultibase", None)
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid"
    assert any(r.startswith("evidence[3]: digest sha256:000") for r in v.reasons), v.reasons


def test_evidence_rom_must_be_the_credentials_rom(world: World) -> None:
    """Trajectories played against another ROM (REX) in a credential bound to ADA."""
    rex = run_level(demo_suite(), cartridge=Path("rex.acx"), rom_digest=REX, solver=ReferenceSolver(33),
                    signer=world.key)
    doc = issue_credential(rex, cartridge_id="c", issuer=ISSUER, key=world.key, now=T0, status=world.entry)
    doc["credentialSubject"]["result"][0]["acx:cartridgeRomDigest"] = ADA
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid"
    assert any("trajectory ROM digest " + REX in r for r in v.reasons), v.reasons


def test_evidence_signed_by_another_key(world: World) -> None:
    stranger = run_level(demo_suite(), cartridge=Path("x"), rom_digest=ADA, solver=ReferenceSolver(33),
                         signer=generate_ed25519())
    doc = issue_credential(stranger, cartridge_id="c", issuer=ISSUER, key=world.key, now=T0,
                           status=world.entry)
    v = world.verify(doc)
    assert v.state == "invalid" and any(r.startswith("evidence[0]") for r in v.reasons)


def test_ineligible_credential_issuer_key_alone(world: World) -> None:
    """Only the credential's issuer key is judged (no status check): a retired key is refused."""
    doc = issuers_doc((world.key.public(), "example.verifier"), status="revoked", reason="retired")
    v = verify_credential(world.vc, issuers=IssuerRegistry.from_json(doc), expected_rom_digest=ADA, now=AT)
    assert v.state == "invalid"
    assert any(r.startswith(f"issuer key {world.key.public().keyid()} not eligible: signer key is revoked")
               for r in v.reasons), v.reasons
    fine = verify_credential(world.vc, issuers=world.issuers, expected_rom_digest=ADA, now=AT)
    assert fine.state == "unresolved", fine.reasons


def test_self_issued_to_its_own_did(world: World) -> None:
    """A credential about the issuer itself is refused by the shape (subject must be a cartridge)."""
    doc = copy.deepcopy(world.vc)
    doc["credentialSubject"]["id"] = ISSUER
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid" and "credentialSubject.id" in v.reasons[0], v.reasons


@pytest.mark.parametrize(("field", "value"), [("acx:ratingSigma", 2.0), ("acx:gamesPlayed", 12)])
def test_gate_is_rechecked_at_verify(world: World, field: str, value: Any) -> None:
    """A signed credential whose own numbers fail the gate (sigma < 1.5, games >= 30) is refused."""
    doc = copy.deepcopy(world.vc)
    doc["credentialSubject"]["result"][0][field] = value
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid" and any(r.startswith("gating failed") for r in v.reasons), v.reasons


# ---- status lists (acxoci/level/status.py, attest/statuslist.py) --------------------------------


def _list(world: World, *, key: PrivateKey | None = None, issuer: str = ISSUER, **kw: Any) -> str:
    path = world.tmp / f"list-{len(list(world.tmp.iterdir()))}.json"
    vm = kw.pop("verification_method", None)
    st.write_json_atomic(path, st.create_status_list(list_id=kw.pop("list_id", LIST_ID), issuer=issuer,
                                                     key=key or world.key, now=kw.pop("now", T0),
                                                     verification_method=vm, **kw))
    return str(path)


def test_status_list_signed_by_another_registered_issuer(world: World) -> None:
    """A list naming verifier.example as issuer but signed by other.example's (registered) key."""
    mallory = generate_ed25519()
    reg = two_issuers(world.key.public(), mallory.public())
    src = _list(world, key=mallory)
    v = world.verify(issuers=reg, source=src)
    assert v.state == "invalid"
    assert any("status list proof does not verify with any registered key" in r for r in v.reasons), v.reasons


def test_status_list_of_another_registered_issuer(world: World) -> None:
    """other.example's own, well-signed list cannot speak for verifier.example's credential."""
    mallory = generate_ed25519()
    reg = two_issuers(world.key.public(), mallory.public())
    src = _list(world, key=mallory, issuer=OTHER_ISSUER)
    v = world.verify(issuers=reg, source=src)
    assert v.state == "invalid"
    assert any(f"status list issuer {OTHER_ISSUER} is not the credential issuer" in r for r in v.reasons)


def test_status_purpose_must_match(world: World) -> None:
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=world.key, now=T0)
    doc["credentialSubject"]["statusPurpose"] = "suspension"
    path = world.tmp / "suspension.json"
    st.write_json_atomic(path, resign(doc, world.key))
    v = world.verify(source=str(path))
    assert v.state == "invalid"
    assert any("status list purpose suspension is not revocation" in r for r in v.reasons), v.reasons


def test_status_list_past_valid_until_is_stale(world: World) -> None:
    src = _list(world, valid_for=timedelta(minutes=30))
    v = world.verify(source=src, max_age=timedelta(days=30))
    assert v.state == "invalid" and any("status list expired at" in r for r in v.reasons), v.reasons


def test_status_list_valid_from_in_the_future_is_stale(world: World) -> None:
    """validFrom 5 h ahead while the proof is dated now: only the freshness check stops it (a proof
    dated ahead of now is refused by the issuer-key check, the trust table's `future` window)."""
    from acxoci.attest import statuslist

    doc = statuslist.status_list_credential(
        list_id=LIST_ID, issuer=ISSUER, encoded_list=statuslist.encode_list(statuslist.new_bitstring(
            statuslist.MIN_BITS)), valid_from=st.iso(T0 + timedelta(hours=5)))
    path = world.tmp / "list-future.json"
    st.write_json_atomic(path, vc.sign(doc, world.key, verification_method=f"{ISSUER}#key-1",
                                       created=st.iso(T0)))
    src = str(path)
    v = world.verify(source=src, max_age=timedelta(days=30))
    assert v.state == "invalid" and any("validFrom" in r and "in the future" in r for r in v.reasons)


def test_status_list_older_than_max_age_is_stale(world: World) -> None:
    v = world.verify(now=T0 + timedelta(hours=3), max_age=timedelta(hours=2))
    assert v.state == "invalid" and any("status list is stale" in r for r in v.reasons), v.reasons


def test_status_index_outside_the_list(world: World) -> None:
    doc = copy.deepcopy(world.vc)
    doc["credentialStatus"]["statusListIndex"] = str(10**9)
    v = world.verify(resign(doc, world.key))
    assert v.state == "invalid" and any("is outside the list" in r for r in v.reasons), v.reasons


def test_status_list_id_must_be_the_credentials(world: World) -> None:
    src = _list(world, list_id="https://status.example/lists/2")
    v = world.verify(source=src)
    assert any("is not the credential's statusListCredential" in r for r in v.reasons)


def test_status_list_vm_must_be_under_its_issuer(world: World) -> None:
    src = _list(world, verification_method=OTHER_ISSUER + "#key-1")
    v = world.verify(source=src)
    assert v.state == "invalid" and any("is not under issuer" in r for r in v.reasons), v.reasons


def test_ineligible_status_list_key(world: World) -> None:
    """A list signed by a registered but retired issuer key (decision 0014: no trust on signedAt)."""
    doc = issuers_doc((world.key.public(), "example.verifier"), status="revoked", reason="retired")
    reg = IssuerRegistry.from_json(doc)
    v = world.verify(issuers=reg)
    assert v.state == "invalid"
    assert any("status list issuer key" in r and "is not eligible" in r for r in v.reasons), v.reasons


class _Serve(BaseHTTPRequestHandler):
    code = 200
    body = b""

    def do_GET(self) -> None:
        self.send_response(self.code)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def https(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import ssl

    cert, key = self_signed_cert(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Serve)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/status/1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _check(url: str, key: PrivateKey, tmp: Path) -> st.StatusOutcome:
    reg = IssuerRegistry.from_json(issuers_doc((key.public(), "example.verifier")))
    return st.check_status(StatusEntry(url, 3, "revocation", None), source=url, issuers=reg, vc_issuer=ISSUER,
                           now=AT, cache_dir=tmp / "cache")


def test_non_200_status_list_response_is_not_used(https: str, tmp_path: Path) -> None:
    key = generate_ed25519()
    _Serve.code, _Serve.body = 500, json.dumps(st.create_status_list(list_id=https, issuer=ISSUER, key=key,
                                                                     now=T0)).encode()
    out = _check(https, key, tmp_path)
    assert out.state == "failed" and "HTTP 500" in out.reason
    _Serve.code = 200
    assert _check(https, key, tmp_path).state == "valid"  # the same body with a 200 is fine


def test_oversize_status_list_response_is_refused(https: str, tmp_path: Path) -> None:
    key = generate_ed25519()
    doc = json.dumps(st.create_status_list(list_id=https, issuer=ISSUER, key=key, now=T0)).encode()
    _Serve.code, _Serve.body = 200, doc[:-1] + b" " * (st.MAX_LIST_BYTES + 1) + b"}"
    with pytest.raises(LimitExceeded, match=rf"exceeds the {st.MAX_LIST_BYTES}-byte limit"):
        _check(https, key, tmp_path)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


# ---- install decisions (acxoci/install/checks.py) ------------------------------------------------


def _cred(**kw: Any) -> C.CredentialFound:
    base: dict[str, Any] = {"issuer": ISSUER, "level": 28, "tier": "principal", "rom_digest": ADA,
                            "verified": True, "status_list": LIST_ID, "status_index": 1, "revoked": False,
                            "status_list_valid_from": T0}
    base.update(kw)
    return C.CredentialFound(**base)


LEVEL_POLICY = VerificationPolicy(level_minimum="senior", level_issuers=(ISSUER,))


def test_invalid_credential_carrying_a_level_is_never_relied_on() -> None:
    bad = _cred(verified=False, reason="proof does not verify", level=35, tier="legend")
    r = C.check_level([bad], LEVEL_POLICY, ADA)
    assert r.status == "fail" and r.kind == "level_missing"
    assert C.check_level([bad, _cred()], LEVEL_POLICY, ADA).details["level"] == 28


def test_credential_of_an_issuer_the_policy_does_not_accept() -> None:
    r = C.check_level([_cred(issuer=OTHER_ISSUER)], LEVEL_POLICY, ADA)
    assert r.status == "fail" and "issuer not accepted by the policy" in r.reason


def test_credential_bound_to_another_rom_is_not_relied_on() -> None:
    r = C.check_level([_cred(rom_digest=REX)], LEVEL_POLICY, ADA)
    assert r.status == "fail" and f"bound to ROM {REX}" in r.reason


def test_level_below_the_policy_minimum() -> None:
    r = C.check_level([_cred(level=12, tier="mid")], LEVEL_POLICY, ADA)
    assert r.status == "fail" and r.kind == "level_too_low"


@pytest.mark.parametrize(("kw", "kind"), [
    ({"revoked": True}, "revoked"),
    ({"status_list": None}, "status_unknown"),
    ({"revoked": None, "status_error": "boom"}, "status_unknown"),
    ({"status_stale": True}, "stale_status_list"),
])
def test_revocation_refusals(kw: dict[str, Any], kind: str) -> None:
    r = C.check_revocation([_cred(**kw)], LEVEL_POLICY, ADA)
    assert r.status == "fail" and r.kind == kind, r


def test_stale_list_passes_only_when_offline_allowed() -> None:
    from dataclasses import replace

    stale = _cred(status_stale=True)
    assert C.check_revocation([stale], replace(LEVEL_POLICY, allow_offline_cached=True), ADA).status == "pass"


def test_credential_without_status_cannot_be_relied_on(world: World) -> None:
    doc = copy.deepcopy(world.vc)
    del doc["credentialStatus"]
    unsigned = {k: v for k, v in doc.items() if k != "proof"}
    signed = vc.sign(unsigned, world.key, verification_method=f"{ISSUER}#key-1",
                     created=doc["proof"]["created"])
    v = verify_credential(signed, issuers=world.issuers, expected_rom_digest=ADA, now=AT)
    assert v.state == "invalid" and any("no credentialStatus" in r for r in v.reasons)


# ---- attest/statuslist.py, attest/vc.py, schema strictness --------------------------------------


def test_status_entry_needs_a_purpose() -> None:
    from acxoci.attest.errors import MalformedError

    good = {"type": "BitstringStatusListEntry", "statusPurpose": "revocation", "statusListIndex": "4",
            "statusListCredential": LIST_ID}
    assert StatusEntry.from_json(good).purpose == "revocation"
    for bad in ({**good, "statusPurpose": ""}, {k: v for k, v in good.items() if k != "statusPurpose"}):
        with pytest.raises(MalformedError, match="statusPurpose"):
            StatusEntry.from_json(bad)


def test_status_list_must_be_a_bitstring_status_list_credential(world: World) -> None:
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=world.key, now=T0)
    doc["type"] = ["VerifiableCredential"]
    path = world.tmp / "untyped.json"
    st.write_json_atomic(path, resign(doc, world.key))
    v = world.verify(source=str(path))
    assert v.state == "invalid"
    assert any("type does not include BitstringStatusListCredential" in r for r in v.reasons), v.reasons


def test_proof_context_must_prefix_the_document_context(world: World) -> None:
    """A proof that carries its own @context binds the document's: a document whose @context was
    swapped (the proof's is no longer its prefix) is refused, though the hash would match."""
    from acxoci.attest.errors import SignatureError

    doc = {"@context": ["https://www.w3.org/ns/credentials/v2"], "type": ["VerifiableCredential"],
           "issuer": ISSUER, "credentialSubject": {"id": "urn:x"}}
    signed = vc.sign(doc, world.key, verification_method=f"{ISSUER}#key-1", created="2026-08-01T12:00:00Z")
    signed["proof"]["@context"] = list(doc["@context"])
    assert vc.verify(signed, world.key.public()).variant == "w3c"  # a proof @context that is a prefix is fine
    swapped = copy.deepcopy(signed)
    swapped["@context"] = ["https://evil.example/ctx"]
    with pytest.raises(SignatureError):
        vc.verify(swapped, world.key.public(), variant="w3c")


def test_schema_patterns_end_at_the_end_of_the_string(world: World) -> None:
    """Python's `$` matches before a final newline; schema patterns must not (ECMA-262 semantics)."""
    from acxoci.level.credential import schema_errors

    doc = copy.deepcopy(world.vc)
    assert schema_errors(doc) == []
    doc["credentialSubject"]["id"] = doc["credentialSubject"]["id"] + "\n"
    assert any("credentialSubject.id" in e for e in schema_errors(doc))
