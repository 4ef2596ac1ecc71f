"""Level credentials and status lists: each reason a verdict or a refusal carries, compared whole
(the user acts on it: it names the field, the evidence item, the list), every branch of the evidence
check (missing envelope, claim fallback, payload-type confusion, ROM per item), the proof variant
and candidate keys, and the sources a status list is fetched from (file, OCI layout, https)."""

from __future__ import annotations

import copy
import dataclasses
import json
import ssl
import stat
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from acxoci.attest import dsse, statuslist
from acxoci.attest.canonical import jcs, sha256_digest
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.attest.vc import sign as vc_sign
from acxoci.errors import (
    AcxError,
    InvalidInput,
    RefusedByPolicy,
    TransientError,
    UsageError,
    VerificationFailed,
)
from acxoci.level import status as st
from acxoci.level.benchmark import demo_suite
from acxoci.level.credential import LevelVerdict, issue_credential, verify_credential
from acxoci.level.gate import gate
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.oci import publish_status_list
from acxoci.level.run import RunResult, digest_multibase, run_level
from acxoci.level.solver import ReferenceSolver
from tests.harness.levels import (
    ADA,
    ISSUER,
    LIST_ID,
    REX,
    T0,
    World,
    issuers_doc,
    statement_env,
)
from tests.harness.servers import self_signed_cert

VM = f"{ISSUER}#key-1"


@pytest.fixture(scope="module")
def played() -> tuple[PrivateKey, RunResult]:
    """One run of ada-ridge's ROM shared by the module (the issuer signs the evidence too)."""
    key = generate_ed25519()
    return key, run_level(demo_suite(), cartridge=Path("ada-ridge.acx"), rom_digest=ADA,
                          solver=ReferenceSolver(33), signer=key)


@pytest.fixture
def world(tmp_path: Path, played: tuple[PrivateKey, RunResult]) -> World:
    return World(tmp_path, *played)


def _resign(world: World, change: Callable[[dict[str, Any]], None], key: PrivateKey | None = None,
            **kw: Any) -> dict[str, Any]:
    """world's credential changed and signed again by the issuer: only the policy can object."""
    doc = copy.deepcopy(world.vc)
    doc.pop("proof")
    change(doc)
    return vc_sign(doc, key or world.key, verification_method=VM, created=st.iso(T0), **kw)


def _result(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["credentialSubject"]["result"][0]  # type: ignore[no-any-return]


# verify_credential: the verdict's reasons, whole

def test_schema_reasons_are_capped_at_ten(world: World) -> None:
    doc = copy.deepcopy(world.vc)
    for ev in doc["evidence"][:12]:
        ev["type"] = "Evidence"  # not an array: one schema error per item
    v = world.verify(doc)
    assert v.state == "invalid" and len(v.reasons) == 10
    assert all(r.startswith("schema ") for r in v.reasons), v.reasons


def test_the_requested_proof_variant_is_the_only_one_tried(world: World) -> None:
    v = world.verify(variant="acx")  # the issuer signed the W3C variant
    assert (v.state, v.reasons) == (
        "invalid", (f"proof does not verify with any registered key of {ISSUER} (tampered credential)",))
    assert world.verify(variant="w3c").state == "verified"


def test_every_candidate_key_of_the_issuer_is_tried(world: World) -> None:
    old = generate_ed25519()
    issuers = IssuerRegistry.from_json(issuers_doc((old.public(), "example.verifier"),
                                                    (world.key.public(), "example.verifier")))
    v = world.verify(issuers=issuers)
    assert v.state == "verified", v.reasons
    assert v.keyid == world.key.public().keyid()


def test_proof_purpose_must_be_assertion(world: World) -> None:
    doc = _resign(world, lambda d: None, proof_purpose="authentication")
    v = world.verify(doc)
    assert (v.state, v.reasons) == ("invalid", ("proofPurpose authentication is not assertionMethod",))


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("validFrom", "2026-13-01T00:00:00.000Z",
         "validFrom: '2026-13-01T00:00:00.000Z' is not a real date (month must be in 1..12)"),
        ("validUntil", "2026-08-32T00:00:00.000Z",
         "validUntil: '2026-08-32T00:00:00.000Z' is not a real date (day is out of range for month)"),
    ],
)
def test_unreal_dates_name_the_field(world: World, field: str, value: str, reason: str) -> None:
    doc = _resign(world, lambda d: d.__setitem__(field, value))  # the schema's pattern lets them pass
    v = world.verify(doc)
    assert (v.state, v.reasons) == ("invalid", (reason,))


def test_gate_and_tier_reasons(world: World) -> None:
    sigma = _resign(world, lambda d: _result(d).__setitem__("acx:ratingSigma", 2.0))
    v = world.verify(sigma)
    assert (v.state, v.reasons) == ("invalid", (gate(2.0, 90).message,))
    assert v.reasons[0].startswith("gating failed: sigma=2.000")
    tier = _resign(world, lambda d: _result(d).__setitem__("acx:careerTier", "legend"))
    assert world.verify(tier).reasons == ("careerTier legend does not match acxLevel 28",)


def test_missing_or_unreadable_credential_status(world: World) -> None:
    gone = _resign(world, lambda d: d.pop("credentialStatus"))
    v = world.verify(gone)
    assert (v.state, v.reasons) == (
        "invalid", ("credential has no credentialStatus (revocation cannot be checked)",))
    assert v.status is None
    empty = _resign(world, lambda d: d["credentialStatus"].__setitem__("statusPurpose", ""))
    v2 = world.verify(empty)
    assert (v2.state, v2.reasons) == (
        "invalid", ("credentialStatus: credentialStatus.statusPurpose is missing",))


def test_no_status_check_leaves_no_outcome(world: World) -> None:
    v = verify_credential(world.vc, issuers=world.issuers, expected_rom_digest=ADA, now=T0)
    assert (v.state, v.reasons, v.status) == (
        "unresolved", ("revocation status not checked (no status list given)",), None)
    assert v.to_json()["status"] is None


def test_revocation_leads_the_reasons(world: World) -> None:
    world.revoke()
    v = world.verify(subject_publisher="example.verifier")
    assert v.state == "revoked" and len(v.reasons) == 2, v.reasons
    assert v.reasons[0] == f"revoked (status list {LIST_ID} index 42)"
    assert v.reasons[1].startswith("self-issuance rejected")


def test_self_issuance_compares_the_publisher_namespace(world: World, tmp_path: Path) -> None:
    issuer = "did:web:verifier.example:team"
    key = world.key
    reg = issuers_doc((key.public(), "example.verifier"))
    reg["keys"][0]["publisherId"] = "example.verifier/team"
    issuers = IssuerRegistry.from_json(reg)
    doc = _resign(world, lambda d: d.__setitem__("issuer", {"id": issuer, "type": ["Profile"]}))
    doc.pop("proof")
    doc = vc_sign(doc, key, verification_method=f"{issuer}#key-1", created=st.iso(T0))
    v = verify_credential(doc, issuers=issuers, expected_rom_digest=ADA, now=T0 + timedelta(hours=1),
                          subject_publisher="example.verifier/agents")
    assert v.reasons == ("self-issuance rejected (issuer == subject): issuer example.verifier/team is the "
                         "cartridge publisher",), v.reasons


# the evidence check, branch by branch

def _evidence(world: World, change: Callable[[list[dict[str, Any]]], None]) -> LevelVerdict:
    return world.verify(_resign(world, lambda d: change(d["evidence"])))


def test_evidence_without_an_envelope_is_skipped_not_fatal(world: World) -> None:
    v = _evidence(world, lambda ev: ev[0].pop("acx:dsseEnvelope"))
    assert v.state == "verified" and v.evidence_checked == 89, v.reasons
    none = world.verify(_resign(world, lambda d: d.pop("evidence")))
    assert none.state == "verified" and none.evidence_checked == 0


def test_the_claimed_digest_falls_back_to_digest_multibase(world: World) -> None:
    def unclaimed(ev: list[dict[str, Any]]) -> None:
        for e in ev[:2]:
            e.pop("acx:trajectoryDigest")

    v = _evidence(world, unclaimed)
    assert v.state == "verified" and v.evidence_checked == 90, v.reasons
    wrong = "sha256:" + "0" * 64

    def lie(ev: list[dict[str, Any]]) -> None:
        for e in ev[:2]:
            e["acx:trajectoryDigest"] = wrong  # digestMultibase still right: the primary claim wins

    v2 = _evidence(world, lie)
    assert v2.reasons == tuple(f"evidence[{i}]: digest {wrong} does not match the signed trajectory"
                               for i in (0, 1))
    assert v2.evidence_checked == 88


def test_each_evidence_item_with_another_rom_is_named(world: World) -> None:
    games = world.result.games

    def elsewhere(ev: list[dict[str, Any]]) -> None:
        for i in (0, 1):
            traj = {**games[i].trajectory, "romDigest": REX}
            ev[i]["acx:dsseEnvelope"] = statement_env(world, i, trajectory=traj)
            ev[i]["acx:trajectoryDigest"] = sha256_digest(jcs(traj))

    v = _evidence(world, elsewhere)
    assert v.reasons == tuple(f"evidence[{i}]: trajectory ROM digest {REX} is not {ADA}" for i in (0, 1))
    assert v.evidence_checked == 88


def test_a_statement_is_only_read_under_the_in_toto_payload_type(world: World) -> None:
    # a signed in-toto statement relabelled `application/json` is a raw payload: the statement
    # itself is hashed, which matches no trajectory claim
    def relabel(ev: list[dict[str, Any]]) -> None:
        stmt = dsse.Envelope.from_json(ev[0]["acx:dsseEnvelope"]).payload
        ev[0]["acx:dsseEnvelope"] = dsse.sign("application/json", stmt, world.key,
                                              world.key.public().keyid()).to_json()

    v = _evidence(world, relabel)
    claim = world.vc["evidence"][0]["acx:trajectoryDigest"]
    assert v.reasons == (f"evidence[0]: digest {claim} does not match the signed trajectory",)


def test_a_raw_payload_that_is_not_an_object_is_an_empty_trajectory(world: World) -> None:
    payload = jcs([1, 2, 3])

    def array(ev: list[dict[str, Any]]) -> None:
        ev[0]["acx:dsseEnvelope"] = dsse.sign("application/json", payload, world.key,
                                              world.key.public().keyid()).to_json()
        ev[0]["acx:trajectoryDigest"] = sha256_digest(payload)

    v = _evidence(world, array)
    claim = sha256_digest(payload)
    assert v.reasons == (f"evidence[0]: digest {claim} does not match the signed trajectory",)


# status lists: the refusals, whole

def _issuers(key: PrivateKey) -> IssuerRegistry:
    return IssuerRegistry.from_json(issuers_doc((key.public(), "example.verifier")))


def _list(key: PrivateKey, change: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    doc = statuslist.status_list_credential(
        list_id=LIST_ID, issuer=ISSUER, encoded_list=statuslist.encode_list(statuslist.new_bitstring()),
        valid_from=st.iso(T0), valid_until=st.iso(T0 + timedelta(days=1)))
    if change is not None:
        change(doc)
    return vc_sign(doc, key, verification_method=VM, created=st.iso(T0))


def _refusal(exc_type: type[AcxError], fn: Callable[..., Any], *args: Any, **kw: Any) -> str:
    with pytest.raises(exc_type) as err:
        fn(*args, **kw)
    assert type(err.value) is exc_type
    return err.value.message


def test_status_list_issuer_may_be_an_object() -> None:
    key = generate_ed25519()
    doc = _list(key, lambda d: d.__setitem__("issuer", {"id": ISSUER, "type": ["Profile"]}))
    listed = st.verify_status_list(doc, issuers=_issuers(key), now=T0)
    assert (listed.issuer, listed.list_id, listed.keyid) == (ISSUER, LIST_ID, key.public().keyid())


@pytest.mark.parametrize(("issuer", "message"), [
    ("", "status list credential has no issuer"),
    ({"id": ""}, "status list credential has no issuer"),
    ({"name": ISSUER}, "status list credential: /issuer/id: Object missing required field `id`"),
    (7, "status list credential: /issuer: Expected `str | object`, got `int`"),
])
def test_status_list_without_issuer(issuer: Any, message: str) -> None:
    key = generate_ed25519()
    doc = _list(key, lambda d: d.__setitem__("issuer", issuer))
    assert _refusal(InvalidInput, st.verify_status_list, doc, issuers=_issuers(key), now=T0) == message


def test_status_list_shape_refusals() -> None:
    key = generate_ed25519()
    reg = _issuers(key)
    assert _refusal(InvalidInput, st.verify_status_list, [], issuers=reg,
                    now=T0) == "$: the status list credential is not a JSON object"
    unsigned = {k: v for k, v in _list(key).items() if k != "proof"}
    assert _refusal(InvalidInput, st.verify_status_list, unsigned, issuers=reg,
                    now=T0) == "status list credential: document has no single proof object"
    for list_id, message in (("", "status list credential has no id"),
                             (5, "status list credential: /id: Expected `str`, got `int`")):
        doc = _list(key, lambda d, i=list_id: d.__setitem__("id", i))  # type: ignore[misc]
        assert _refusal(InvalidInput, st.verify_status_list, doc, issuers=reg, now=T0) == message
    tampered = _list(key)
    tampered["validFrom"] = st.iso(T0 + timedelta(seconds=1))
    assert _refusal(VerificationFailed, st.verify_status_list, tampered, issuers=reg, now=T0) == (
        f"status list proof does not verify with any registered key of {ISSUER} (tampered status list)")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("validFrom", "2026-13-01T00:00:00Z",
         "status list validFrom: '2026-13-01T00:00:00Z' is not a real date (month must be in 1..12)"),
        ("validUntil", "tomorrow", "status list validUntil: 'tomorrow' is not RFC 3339"),
    ],
)
def test_status_list_dates_name_the_field(field: str, value: str, message: str) -> None:
    key = generate_ed25519()
    doc = _list(key, lambda d: d.__setitem__(field, value))
    assert _refusal(InvalidInput, st.verify_status_list, doc, issuers=_issuers(key), now=T0) == message


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("validUntil", "2026-08-32T00:00:00Z",
         "validUntil: '2026-08-32T00:00:00Z' is not a real date (day is out of range for month)"),
        ("validFrom", "2026-13-01T00:00:00Z",
         "validFrom: '2026-13-01T00:00:00Z' is not a real date (month must be in 1..12)"),
    ],
)
def test_set_status_names_the_unreadable_window(field: str, value: str, message: str) -> None:
    key = generate_ed25519()
    doc = _list(key, lambda d: d.__setitem__(field, value))
    with pytest.raises(MalformedError) as err:
        st.set_status(doc, 3, key=key, now=T0)
    assert str(err.value) == message


def test_unreadable_list_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_bytes(b'{"a":1,}')
    assert _refusal(InvalidInput, st.read_list_file, path) == (
        f"{path}: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 8 (char 7)")


def test_corrupt_cache_time_names_the_cache_file(tmp_path: Path) -> None:
    source = "https://status.example/lists/9"
    st.store_cache(tmp_path, st.Fetched({"id": "x"}, source, T0, False))
    path = next(tmp_path.glob("*.json"))
    entry = json.loads(path.read_text())
    entry["fetchedAt"] = "soon"
    path.write_text(json.dumps(entry))
    assert _refusal(InvalidInput, st.load_cache, tmp_path, source) == (
        f"status list cache {path} is corrupt: {path}.fetchedAt: 'soon' is not RFC 3339")


def test_a_rejected_cached_list_says_it_came_from_the_cache(tmp_path: Path) -> None:
    key, other = generate_ed25519(), generate_ed25519()
    source = str(tmp_path / "gone.json")
    cache = tmp_path / "cache"
    st.store_cache(cache, st.Fetched(_list(other), source, T0, False))
    out = st.check_status(StatusEntry(LIST_ID, 5, "revocation", None), source=source, issuers=_issuers(key),
                          vc_issuer=ISSUER, now=T0, allow_offline=True, cache_dir=cache)
    assert out == st.StatusOutcome("failed", out.reason, 5, source, T0, None, True)
    assert out.reason.startswith("status list rejected: status list proof does not verify")


# fetch_list: every source form

def test_fetch_from_a_file_and_an_oci_layout(tmp_path: Path) -> None:
    key = generate_ed25519()
    doc = _list(key)
    path = tmp_path / "list.json"
    st.write_json_atomic(path, doc)
    assert st.fetch_list(str(path), now=T0) == st.Fetched(doc, str(path), T0, False)
    layout = f"oci-layout:{tmp_path / 'layout'}:status"
    publish_status_list(layout, doc, now=T0)
    for ref in (layout, f"oci://{layout}"):
        assert st.fetch_list(ref, now=T0) == st.Fetched(doc, ref, T0, False)


@pytest.mark.parametrize("source", ["http://127.0.0.1:9/lists/1", "ftp://127.0.0.1:9/lists/1",
                                    "file:///tmp/list.json"])
def test_other_url_schemes_are_refused_by_name(source: str) -> None:
    assert _refusal(UsageError, st.fetch_list, source, now=T0) == (
        f"status list source {source!r}: use a file, an https:// URL, host/repo[:tag], "
        "oci-layout:PATH[:tag] or oci://REF")


class _Server(BaseHTTPRequestHandler):
    body = b""
    delay = 0.0
    accepts: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).accepts.append(self.headers.get("Accept", ""))
        if self.delay:
            time.sleep(self.delay)
        self.send_response(200)
        self.send_header("Content-Type", "application/vc")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def https_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    cert, key = self_signed_cert(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Server.body, _Server.delay, _Server.accepts = b"", 0.0, []
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/lists/1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_https_fetch_asks_for_a_status_list_and_returns_it(https_url: str) -> None:
    doc = _list(generate_ed25519())
    _Server.body = json.dumps(doc).encode()
    assert st.fetch_list(https_url, now=T0) == st.Fetched(doc, https_url, T0, False)
    assert _Server.accepts == [f"{st.MEDIA_TYPE}, application/vc, application/json"]


def test_https_bodies_that_are_not_a_list(https_url: str) -> None:
    _Server.body = b"[1, 2]"
    assert _refusal(InvalidInput, st.fetch_list, https_url,
                    now=T0) == f"status list {https_url} is not a JSON object"
    _Server.body = b'{"a": 1,}'
    assert _refusal(InvalidInput, st.fetch_list, https_url, now=T0) == (
        f"status list {https_url}: invalid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 9 (char 8)")


def test_https_fetch_keeps_to_its_timeout(https_url: str) -> None:
    # the server answers after 3 s: a 0.5 s timeout gives up (the default, 15 s, would have waited)
    _Server.body, _Server.delay = json.dumps(_list(generate_ed25519())).encode(), 3.0
    with pytest.raises(TransientError) as err:
        st.fetch_list(https_url, now=T0, timeout=0.5)
    assert err.value.message.startswith(f"status list {https_url} unreachable: ")


# issuing: what the credential says, and the refusals

def test_issued_achievement_and_evidence_are_complete(world: World) -> None:
    r = world.result
    ach = world.vc["credentialSubject"]["achievement"]
    assert ach == {
        "id": f"https://acx.dev/achievement/{r.benchmark_id}/{r.benchmark_version}",
        "type": ["Achievement"],
        "name": f"ACX Level — {r.benchmark_name}",
        "criteria": {"narrative": (
            f"Independently re-executed on a sealed held-out slice of {r.benchmark_name} "
            f"({r.benchmark_version}); TrueSkill conservative rating R=mu-3sigma gated at sigma<1.5 "
            "over >=30 games.")},
        "resultDescription": [
            {"id": "career-tier", "type": ["ResultDescription"], "name": "Career Tier",
             "resultType": "RubricCriterionLevel"},
            {"id": "rating", "type": ["ResultDescription"], "name": "Conservative rating (0-50)",
             "resultType": "ScaledScore"},
            {"id": "passrate", "type": ["ResultDescription"], "name": "Held-out pass@1",
             "resultType": "Percent"},
        ],
    }
    g = r.games[0]
    assert world.vc["evidence"][0] == {
        "id": f"https://acx.dev/evidence/{r.benchmark_id}/{g.task.id}",
        "type": ["Evidence"],
        "acx:digestMultibase": digest_multibase(jcs(g.trajectory)),
        "acx:trajectoryDigest": g.trajectory_digest,
        "acx:dsseEnvelope": g.envelope,
    }


def test_gate_refusal_carries_the_numbers(world: World) -> None:
    short = dataclasses.replace(world.result, games=world.result.games[:20])
    with pytest.raises(RefusedByPolicy) as err:
        issue_credential(short, cartridge_id="c", issuer=ISSUER, key=world.key, now=T0, status=world.entry)
    decision = gate(short.rating.sigma, 20)
    assert err.value.message == decision.message
    assert err.value.details == {"sigma": decision.sigma, "games": 20}


def test_open_ended_credential_has_no_valid_until(world: World) -> None:
    doc = issue_credential(world.result, cartridge_id="c", issuer=ISSUER, key=world.key, now=T0,
                           status=world.entry, validity=None)
    assert "validUntil" not in doc and doc["validFrom"] == st.iso(T0)
    assert world.verify(doc).state == "verified"


def test_issuing_a_credential_outside_the_schema_is_refused(world: World) -> None:
    bad = dataclasses.replace(world.result, rom_digest="sha256:x", benchmark_digest="md5:1",
                              held_out_digest="")
    entry = StatusEntry("", -1, "revocation", None)
    with pytest.raises(InvalidInput) as err:
        issue_credential(bad, cartridge_id="", issuer="verifier.example", key=world.key, now=T0, status=entry)
    msg = err.value.message
    prefix = "level credential would violate its schema: "
    assert msg.startswith(prefix)
    parts = msg[len(prefix):].split("; ")
    assert len(parts) == 5 and all(p.startswith("$.") for p in parts), parts


# status.write_json_atomic: what revoking writes

def test_status_files_are_indented_utf8_json_readable_by_all(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    st.write_json_atomic(path, {"a": "ø", "b": [1]})
    assert path.read_bytes() == '{\n  "a": "ø",\n  "b": [\n    1\n  ]\n}\n'.encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    st.write_json_atomic(path, {}, mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_impersonation_by_a_revoked_key_is_judged_at_the_proof_time(world: World) -> None:
    # Mallory's key, retired (superseded) on 2026-02-01, signs as ISSUER on T0: the verdict says it
    # was signed after the revocation, which only the proof's `created` time can tell
    mallory = generate_ed25519()
    doc = issuers_doc((world.key.public(), "example.verifier"))
    doc["keys"] += issuers_doc((mallory.public(), "org.mallory"), status="revoked",
                                reason="superseded")["keys"]
    forged = issue_credential(world.result, cartridge_id="c", issuer=ISSUER, key=mallory, now=T0,
                              status=world.entry)
    v = world.verify(forged, issuers=IssuerRegistry.from_json(doc))
    assert (v.state, v.reasons) == ("invalid", (
        "signer key is revoked since 2026-02-01T00:00:00Z; the artifact says it was signed after that",))
