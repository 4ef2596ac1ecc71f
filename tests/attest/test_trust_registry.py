"""acx.trust-registry/1: strict loader and signer judgement (SPEC semantics, explicit time)."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import generate_ed25519, generate_p256
from acxoci.attest.trust import TrustRegistry, expected_txt_record, judge_signer, parse_rfc3339
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.errors import InvalidInput

NOW = datetime(2026, 11, 30, tzinfo=UTC)
SIGNED = "2026-04-03T13:35:46.190Z"
PUB = "io.github.example-acx"


def entry(publisher: str = PUB, **over: Any) -> dict[str, Any]:
    pub = generate_ed25519().public()
    owner = publisher.split("/")[0].split(".")[2] if publisher.startswith("io.github.") else None
    proof: dict[str, Any]
    if owner:
        proof = {
            "method": "github-oidc",
            "oidcSubject": f"repo:{owner}/agents:ref:refs/heads/main",
            "oidcIssuer": "https://token.actions.githubusercontent.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        }
    else:
        proof = {
            "method": "dns-txt",
            "txtRecord": expected_txt_record(publisher),
            "verifiedAt": "2026-01-01T00:00:00Z",
        }
    e: dict[str, Any] = {
        "keyid": pub.keyid(),
        "publisherId": publisher,
        "algorithm": "ed25519",
        "publicKeyPem": pub.spki_pem(),
        "status": "active",
        "notBefore": "2020-01-01T00:00:00Z",
        "notAfter": "2035-01-01T00:00:00Z",
        "namespaceProof": proof,
    }
    e.update(over)
    return e


def reg(*entries: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"schemaVersion": "acx.trust-registry/1", "keys": list(entries), **top}


def judge(e: dict[str, Any], *, publisher: str = PUB, signed_at: str = SIGNED, now: datetime = NOW) -> Any:
    r = TrustRegistry.from_json(reg(e))
    return judge_signer(r.get(e["keyid"]), signed_publisher=publisher, signed_at=signed_at, now=now)


# --- loader ---


def test_valid_registry_loads_and_get() -> None:
    e = entry()
    r = TrustRegistry.from_json(reg(e, registryId="x", updatedAt="2026-01-01T00:00:00+02:00"))
    k = r.get(e["keyid"])
    assert k is not None and k.publisher_id == PUB and k.public_key.keyid() == e["keyid"]
    assert r.get("ed25519:" + "0" * 64) is None and r.get(None) is None


def test_dns_txt_publisher_loads() -> None:
    e = entry("com.example.teamx/agents")
    assert e["namespaceProof"]["txtRecord"] == "_acx-challenge.teamx.example.com"
    assert TrustRegistry.from_json(reg(e)).keys[0].namespace_proof.method == "dns-txt"


def _mutations() -> list[tuple[str, Any]]:
    def set_(path: list[Any], value: Any) -> Any:
        def f(doc: dict[str, Any]) -> None:
            cur: Any = doc
            for p in path[:-1]:
                cur = cur[p]
            if value is _DELETE:
                del cur[path[-1]]
            else:
                cur[path[-1]] = value

        return f

    k = ["keys", 0]
    return [
        ("schema", set_(["schemaVersion"], "acx.trust-registry/2")),
        ("unknown top", set_(["extra"], 1)),
        ("unknown key field", set_([*k, "comment"], "x")),
        ("missing notAfter", set_([*k, "notAfter"], _DELETE)),
        ("bad keyid", set_([*k, "keyid"], "ed25519:XYZ")),
        ("keyid not spki", set_([*k, "keyid"], "ed25519:" + "a" * 64)),
        ("bad publisher", set_([*k, "publisherId"], "Not A Publisher")),
        ("bad status", set_([*k, "status"], "suspended")),
        ("bad algorithm", set_([*k, "algorithm"], "rsa")),
        ("bad date", set_([*k, "notBefore"], "2020-13-01T00:00:00Z")),
        ("non-rfc3339 date", set_([*k, "notBefore"], "2020-01-01")),
        ("bad reason", set_([*k, "revocationReason"], "lost")),
        ("private key", set_([*k, "comment2"], "-----BEGIN " + "PRIVATE KEY-----")),
        (
            "bad pem",
            set_([*k, "publicKeyPem"], "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
        ),
        ("wrong issuer", set_([*k, "namespaceProof", "oidcIssuer"], "https://evil.example")),
        ("wrong owner", set_([*k, "namespaceProof", "oidcSubject"], "repo:someone-else/agents")),
        (
            "dns for github",
            set_(
                [*k, "namespaceProof"],
                {"method": "dns-txt", "txtRecord": "_acx-challenge.x", "verifiedAt": "2026-01-01T00:00:00Z"},
            ),
        ),
        ("proof extra", set_([*k, "namespaceProof", "extra"], 1)),
        ("proof method", set_([*k, "namespaceProof", "method"], "x509")),
        ("keys not list", set_(["keys"], {})),
        ("rotatedTo bad", set_([*k, "rotatedTo"], "nope")),
    ]


_DELETE = object()


@pytest.mark.parametrize(("name", "mutate"), _mutations(), ids=[m[0] for m in _mutations()])
def test_loader_rejects(name: str, mutate: Any) -> None:
    doc = reg(entry())
    TrustRegistry.from_json(copy.deepcopy(doc))  # the unmutated document loads
    mutate(doc)
    with pytest.raises(MalformedError):
        TrustRegistry.from_json(doc)


def test_loader_rejects_p256_and_duplicates_and_future_proof() -> None:
    p = generate_p256().public()
    e = entry(publicKeyPem=p.spki_pem(), keyid="ed25519:" + p.fingerprint_hex())
    with pytest.raises(MalformedError, match="not Ed25519"):
        TrustRegistry.from_json(reg(e))
    e = entry()
    with pytest.raises(MalformedError, match="duplicate"):
        TrustRegistry.from_json(reg(e, copy.deepcopy(e)))
    e = entry()
    e["namespaceProof"]["verifiedAt"] = "2027-01-01T00:00:00Z"
    TrustRegistry.from_json(reg(e))  # without `now` the future proof is judged later
    with pytest.raises(MalformedError, match="future"):
        TrustRegistry.from_json(reg(e), now=NOW)
    assert "namespace proof verifiedAt is in the future" in judge(e).issues


def test_private_key_text_anywhere_is_refused() -> None:
    doc = reg(entry(), registryId="-----BEGIN " + "PRIVATE KEY-----")
    with pytest.raises(MalformedError, match="private key"):
        TrustRegistry.from_json(doc)


def test_loader_rejects_dns_txt_mismatch() -> None:
    e = entry("com.example.teamx")
    e["namespaceProof"]["txtRecord"] = "_acx-challenge.com.example.teamx"
    with pytest.raises(MalformedError, match="txtRecord"):
        TrustRegistry.from_json(reg(e))


def test_rotation_links_must_point_back() -> None:
    a, b = entry(), entry()
    c = entry()
    a["rotatedTo"] = b["keyid"]
    b["rotatedFrom"] = c["keyid"]
    with pytest.raises(MalformedError, match="rotatedFrom"):
        TrustRegistry.from_json(reg(a, b, c))
    b["rotatedFrom"] = a["keyid"]
    assert len(TrustRegistry.from_json(reg(a, b, c)).keys) == 3


def test_load_file_errors_are_typed(tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_bytes(b'{"schemaVersion":"acx.trust-registry/1","keys":[],"keys":[]}')
    with pytest.raises(InvalidInput, match="duplicate"):
        load_trust_registry(bad)
    bad.write_bytes(b"\xff\xfe{}")
    with pytest.raises(InvalidInput, match="UTF-8"):
        load_trust_registry(bad)


def test_parse_rfc3339_offsets_and_fractions() -> None:
    a = parse_rfc3339("2026-04-03T15:35:46.190123456+02:00")
    b = parse_rfc3339("2026-04-03T13:35:46.190123Z")
    assert a == b
    for bad in ("2026-02-30T00:00:00Z", "2026-04-03 13:35:46Z", "2026-04-03T13:35:46", 5):
        with pytest.raises(MalformedError):
            parse_rfc3339(bad)


# --- judgement ---


def test_shared_vectors(vectors_dir: Path) -> None:
    kid = "ed25519:aed99efff8f08c8458bb412b28a6feba684701c9563692507eb2fe0767d56fbe"
    got = {}
    for name in ("active", "expired", "compromised"):
        r = load_trust_registry(vectors_dir / f"sample/trust-{name}.json")
        got[name] = judge_signer(r.get(kid), signed_publisher=PUB, signed_at=SIGNED, now=NOW)
    assert got["active"].trust == "trusted"
    assert got["expired"].trust == "portable"
    assert got["expired"].issues[0].startswith("artifact signed at 2026-04-03T13:35:46.190Z, after the key's")
    assert got["compromised"].trust == "tampered" and got["compromised"].compromised


def test_not_in_registry() -> None:
    j = judge_signer(None, signed_publisher=PUB, signed_at=SIGNED, now=NOW)
    assert (j.trust, j.in_registry, j.standing) == ("portable", False, "unvouched")
    assert j.summary == "Signature valid but signer not in trust registry."


def test_active_is_trusted_and_publisher_mismatch_is_not() -> None:
    assert judge(entry()).trust == "trusted"
    j = judge(entry(), publisher="io.github.other")
    assert j.trust == "portable" and j.standing == "unvouched"
    assert j.issues == (f"signer key is registered to publisher {PUB}, not io.github.other",)


def test_windows() -> None:
    j = judge(entry(notBefore="2026-05-01T00:00:00Z"))
    assert j.trust == "portable" and "acx key trust --not-before " + SIGNED in j.issues[0]
    j = judge(entry(notBefore="2036-01-01T00:00:00Z"))
    assert j.issues == ("registry key validity window is inverted",)
    j = judge(entry(notAfter="2026-06-01T00:00:00Z"))
    assert j.trust == "portable" and j.facts is not None and j.facts.status == "expired"


def test_times_compare_as_datetimes_not_strings() -> None:
    # As strings "2026-04-03T15:00:00+02:00" > "2026-04-03T13:35:46.190Z", but it is earlier in time.
    j = judge(entry(status="revoked", revokedAt="2026-04-03T15:00:00+02:00", revocationReason="superseded"))
    assert j.summary == "Signer key revoked." and j.trust == "tampered"
    j = judge(entry(status="revoked", revokedAt="2026-04-03T16:00:00+02:00", revocationReason="superseded"))
    assert j.trust == "portable" and j.facts is not None and j.facts.status == "superseded"


def test_revocation_semantics() -> None:
    """Decision 0014: a self-asserted signedAt before revokedAt gives portable, never trusted;
    signed after (or no revokedAt) is rejected like any revoked key."""
    before = entry(status="revoked", revokedAt="2026-05-01T00:00:00Z", revocationReason="superseded")
    assert judge(before).trust == "portable"
    assert judge(before).summary.startswith("Signer key later revoked")
    after = entry(status="revoked", revokedAt="2026-01-01T00:00:00Z", revocationReason="retired")
    assert judge(after).summary == "Signer key revoked." and judge(after).trust == "tampered"
    no_time = entry(status="revoked")
    assert judge(no_time).trust == "tampered" and not judge(no_time).compromised
    comp = entry(status="revoked", revokedAt="2027-01-01T00:00:00Z", revocationReason="key-compromise")
    j = judge(comp)
    assert j.trust == "tampered" and j.compromised  # never trusted, even "signed before"


def test_independent_time_restores_trust_for_a_retired_key() -> None:
    before = entry(status="revoked", revokedAt="2026-05-01T00:00:00Z", revocationReason="retired")
    r = TrustRegistry.from_json(reg(before))
    k = r.get(before["keyid"])
    stamp = parse_rfc3339("2026-04-03T13:35:47Z")
    assert judge_signer(k, signed_publisher=PUB, signed_at=SIGNED, now=NOW, independent_time=stamp).trust \
        == "trusted"
    late = parse_rfc3339("2026-06-01T00:00:00Z")  # the timestamp says it was used after the retirement
    assert judge_signer(k, signed_publisher=PUB, signed_at=SIGNED, now=NOW, independent_time=late).trust \
        == "tampered"


def test_rotation_no_longer_trusts_on_self_asserted_time() -> None:
    old = entry(notAfter="2026-06-01T00:00:00Z", status="expired")
    assert judge(old).trust == "portable"
    rotated = dict(old, rotatedTo="ed25519:" + "b" * 64)
    assert judge(rotated).trust == "portable"  # signedAt alone cannot prove it was signed in time


def test_unparseable_signed_at_is_not_trusted() -> None:
    j = judge(entry(), signed_at="yesterday")
    assert j.trust == "portable" and j.issues == ("signedAt is missing or not RFC 3339",)


def test_registry_round_trip_of_vector_json(vectors_dir: Path) -> None:
    doc = json.loads((vectors_dir / "sample/trust-active.json").read_text())
    assert TrustRegistry.from_json(doc, now=NOW).registry_id == "io.github.example-acx"


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2026-04-03T13:35:46Z", datetime(2026, 4, 3, 13, 35, 46, tzinfo=UTC)),
        ("2026-04-03T13:35:46.5Z", datetime(2026, 4, 3, 13, 35, 46, 500000, tzinfo=UTC)),
        ("2026-04-03T13:35:46.0000019Z", datetime(2026, 4, 3, 13, 35, 46, 1, tzinfo=UTC)),
        ("2026-04-03T23:05:46+12:45", datetime(2026, 4, 3, 10, 20, 46, tzinfo=UTC)),
        ("2026-04-03T01:10:46-11:25", datetime(2026, 4, 3, 12, 35, 46, tzinfo=UTC)),
        ("2026-04-03T13:35:46-00:00", datetime(2026, 4, 3, 13, 35, 46, tzinfo=UTC)),
        ("2026-04-03T13:35:46+23:59", datetime(2026, 4, 2, 13, 36, 46, tzinfo=UTC)),
    ],
)
def test_parse_rfc3339_instant(text: str, utc: datetime) -> None:
    got = parse_rfc3339(text)
    assert got == utc and got.utcoffset() is not None
    assert (got.year, got.month, got.day, got.hour, got.minute, got.second) == tuple(
        int(x) for x in (text[0:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19])
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("2026-04-03T13:35:46+24:00", "has an invalid UTC offset"),
        ("2026-04-03T13:35:46+23:60", "has an invalid UTC offset"),
        ("2026-04-03T13:35:46z", "is not RFC 3339"),
        ("2026-13-03T13:35:46Z", "is not a real date"),
        ("0001-01-01T00:00:00+14:00", "lies outside years 0001-9999 in UTC"),
    ],
)
def test_parse_rfc3339_refusals(text: str, match: str) -> None:
    with pytest.raises(MalformedError, match=f"^signedAt: '{re.escape(text)}' {match}"):
        parse_rfc3339(text, where="signedAt")
    with pytest.raises(MalformedError, match=r"^date: expected an RFC 3339 string, got int$"):
        parse_rfc3339(5)
