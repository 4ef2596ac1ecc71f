"""`attest.trust` field by field: every refusal of the registry loader with its whole message (it
names the entry and field a registry operator has to fix), every branch of the namespace proof,
the time parser's boundaries, `merge_keys` conflicts, `judge_signer`'s verdicts and the entries
`acx key trust` writes. Pure functions and keys generated at run time: no I/O, fast."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import PublicKey, generate_ed25519, generate_p256, load_public_pem
from acxoci.attest.trust import (
    NamespaceProof,
    SignerJudgement,
    TrustKey,
    TrustRegistry,
    add_key_entry,
    expected_txt_record,
    format_rfc3339,
    github_owner,
    judge_signer,
    make_key_entry,
    merge_keys,
    parse_rfc3339,
    publisher_root,
)
from acxoci.attest.trustdecision import R_COMPROMISED, R_FOREIGN, R_REVOKED, R_SELF_ASSERTED, R_UNKNOWN

NOW = datetime(2026, 11, 30, tzinfo=UTC)
GH = "io.github.example-acx"
DNS = "dev.acxoci.demo"
ISSUER = "https://token.actions.githubusercontent.com"
KEYS = [generate_ed25519().public() for _ in range(3)]
PUB, PUB2, PUB3 = KEYS


def entry(pub: PublicKey = PUB, publisher: str = GH, **over: Any) -> dict[str, Any]:
    """A valid registry entry for `pub`, with `over` replacing (or, as None, dropping) fields."""
    proof: dict[str, Any]
    if publisher.startswith("io.github."):
        proof = {
            "method": "github-oidc",
            "oidcSubject": "repo:example-acx/agents:ref:refs/heads/main",
            "oidcIssuer": ISSUER,
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
    for k, v in over.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def doc(*entries: Any, **top: Any) -> dict[str, Any]:
    return {"schemaVersion": "acx.trust-registry/1", "keys": list(entries), **top}


def refusal(document: Any, now: datetime | None = None) -> str:
    with pytest.raises(MalformedError) as exc:
        TrustRegistry.from_json(document, now=now)
    return str(exc.value)


def one(e: dict[str, Any], now: datetime | None = None) -> TrustKey:
    return TrustRegistry.from_json(doc(e), now=now).keys[0]




# ---- parse_rfc3339 ----------------------------------------------------------------------------


def test_rfc3339_parses_each_component_and_the_utc_offset() -> None:
    got = parse_rfc3339("2026-01-02T03:04:05Z")
    assert got == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC) and got.utcoffset() == timedelta(0)
    plus = parse_rfc3339("2026-01-02T03:04:05+05:30")
    assert plus.utcoffset() == timedelta(hours=5, minutes=30)
    assert plus == datetime(2026, 1, 1, 21, 34, 5, tzinfo=UTC)
    minus = parse_rfc3339("2026-01-02T03:04:05-05:30")
    assert minus.utcoffset() == -timedelta(hours=5, minutes=30)
    assert minus == datetime(2026, 1, 2, 8, 34, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "micro"),
    [
        ("2026-01-02T03:04:05Z", 0),
        ("2026-01-02T03:04:05.5Z", 500000),
        ("2026-01-02T03:04:05.000001Z", 1),
        ("2026-01-02T03:04:05.1234567Z", 123456),  # beyond microseconds: truncated, not rounded
    ],
)
def test_rfc3339_fractions(text: str, micro: int) -> None:
    assert parse_rfc3339(text).microsecond == micro


@pytest.mark.parametrize("offset", ["+23:59", "-23:59", "+00:00", "+23:00", "+00:59"])
def test_rfc3339_largest_offsets_are_accepted(offset: str) -> None:
    hh, mm = int(offset[1:3]), int(offset[4:6])
    sign = 1 if offset[0] == "+" else -1
    assert parse_rfc3339(f"2026-06-01T12:00:00{offset}").utcoffset() == sign * timedelta(hours=hh, minutes=mm)


@pytest.mark.parametrize("offset", ["+24:00", "-24:00", "+23:60", "+00:99"])
def test_rfc3339_impossible_offsets_are_refused_by_name(offset: str) -> None:
    value = f"2026-06-01T12:00:00{offset}"
    with pytest.raises(MalformedError) as exc:
        parse_rfc3339(value, where="keys[3].notAfter")
    assert str(exc.value) == f"keys[3].notAfter: {value!r} has an invalid UTC offset"


def test_rfc3339_refusals_name_the_field() -> None:
    with pytest.raises(MalformedError) as exc:
        parse_rfc3339(20260101, where="keys[0].notBefore")
    assert str(exc.value) == "keys[0].notBefore: expected an RFC 3339 string, got int"
    with pytest.raises(MalformedError) as exc:
        parse_rfc3339(None)
    assert str(exc.value) == "date: expected an RFC 3339 string, got NoneType"
    with pytest.raises(MalformedError) as exc:
        parse_rfc3339("2026-01-02 03:04:05Z")
    assert str(exc.value) == "date: '2026-01-02 03:04:05Z' is not RFC 3339"
    with pytest.raises(MalformedError) as exc:
        parse_rfc3339("2026-02-30T00:00:00Z", where="signedAt")
    assert (
        str(exc.value)
        == "signedAt: '2026-02-30T00:00:00Z' is not a real date (day is out of range for month)"
    )


@pytest.mark.parametrize(
    "value", ["0001-01-01T00:30:00+01:00", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-01:00"]
)
def test_rfc3339_refuses_instants_outside_the_calendar_in_utc(value: str, tokyo: None) -> None:
    with pytest.raises(MalformedError) as exc:
        parse_rfc3339(value, where="x")
    assert str(exc.value) == f"x: {value!r} lies outside years 0001-9999 in UTC"


def test_rfc3339_latest_and_earliest_representable_instants(tokyo: None) -> None:
    assert parse_rfc3339("0001-01-01T00:00:00Z") == datetime(1, 1, 1, tzinfo=UTC)
    assert parse_rfc3339("9999-12-31T23:59:59Z") == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert parse_rfc3339("0001-01-01T01:00:00+01:00") == datetime(1, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        "2026-01-02T03:04:05",
        "2026-1-02T03:04:05Z",
        "x2026-01-02T03:04:05Z",
        "2026-01-02T03:04:05Zx",
        "2026-01-02T03:04:05.Z",
        "2026-01-02T03:04:05+0530",
    ],
)
def test_rfc3339_shapes_that_are_not_rfc3339(value: str) -> None:
    with pytest.raises(MalformedError, match=r"is not RFC 3339$"):
        parse_rfc3339(value)


# ---- publisher helpers ------------------------------------------------------------------------


def test_publisher_root_txt_record_and_github_owner() -> None:
    assert publisher_root("com.example.x/sub/deeper") == "com.example.x"
    assert publisher_root("com.example.x") == "com.example.x"
    assert expected_txt_record("com.example.x/sub/deeper") == "_acx-challenge.x.example.com"
    assert expected_txt_record("dev.acxoci") == "_acx-challenge.acxoci.dev"
    assert github_owner("io.github.owner") == "owner"
    assert github_owner("io.github.owner.more/sub/x") == "owner"
    assert github_owner("io.github") is None
    assert github_owner("io.gitlab.owner") is None
    assert github_owner("dev.github.owner") is None
    assert github_owner("io.x.github") is None


# ---- the loader: top level --------------------------------------------------------------------


def test_top_level_refusals() -> None:
    assert refusal([]) == "trust registry: $: the document is not a JSON object"
    assert refusal({"keys": []}) == "trust registry: missing field(s) ['schemaVersion']"
    assert refusal({"schemaVersion": "acx.trust-registry/1"}) == "trust registry: missing field(s) ['keys']"
    assert refusal({}) == "trust registry: missing field(s) ['keys', 'schemaVersion']"
    assert refusal(doc(zeta=1, alpha=2)) == "trust registry: unknown field(s) ['alpha', 'zeta']"
    assert refusal({"extra": 1}) == "trust registry: unknown field(s) ['extra']"  # unknown reported first
    assert refusal(doc(schemaVersion="acx.trust-registry/2")) == (
        "trust registry.schemaVersion: 'acx.trust-registry/2' is not 'acx.trust-registry/1'"
    )
    assert (
        refusal({"schemaVersion": "acx.trust-registry/1", "keys": {}})
        == "trust registry: /keys: Expected `array`, got `object`"
    )
    assert refusal(doc(registryId="")) == "trust registry.registryId: expected a non-empty string or null"
    assert refusal(doc(registryId=7)) == "trust registry: /registryId: Expected `str | null`, got `int`"
    assert refusal(doc(updatedAt="yesterday")) == "trust registry.updatedAt: 'yesterday' is not RFC 3339"


def test_top_level_optional_fields_are_kept() -> None:
    reg = TrustRegistry.from_json(doc(registryId="acx-main", updatedAt="2026-05-06T07:08:09Z"))
    assert reg == TrustRegistry(
        keys=(), registry_id="acx-main", updated_at=datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)
    )
    bare = TrustRegistry.from_json(doc(registryId=None, updatedAt=None))
    assert (bare.registry_id, bare.updated_at, bare.keys) == (None, None, ())


@pytest.mark.parametrize("where", ["top-key", "nested-value", "in-a-list", "list-of-lists", "dict-key"])
def test_private_key_material_anywhere_is_refused(where: str) -> None:
    marker = "-----BEGIN " + "PRIVATE KEY-----"  # a label, no key (split for secret scanners)
    d: dict[str, Any] = doc(entry())
    if where == "top-key":
        d[marker] = 1
    elif where == "nested-value":
        d["keys"][0]["namespaceProof"]["oidcSubject"] = marker
    elif where == "in-a-list":
        d["keys"].append(marker)
    elif where == "list-of-lists":
        d["keys"].append([[7, marker]])
    else:
        d["keys"][0]["namespaceProof"][marker] = "x"
    assert refusal(d) == "trust registry: contains private key material"


# ---- the loader: one key entry ----------------------------------------------------------------


def test_a_valid_entry_is_parsed_field_for_field() -> None:
    e = entry(
        status="revoked",
        revokedAt="2026-03-04T05:06:07Z",
        revocationReason="superseded",
        rotatedFrom=PUB2.keyid(),
        rotatedTo=PUB3.keyid(),
        notBefore="2021-02-03T04:05:06Z",
        notAfter="2031-02-03T04:05:06+01:00",
    )
    k = one(e)
    assert k == TrustKey(
        keyid=PUB.keyid(),
        publisher_id=GH,
        algorithm="ed25519",
        public_key_pem=PUB.spki_pem(),
        public_key=load_public_pem(PUB.spki_pem()),
        status="revoked",
        not_before=datetime(2021, 2, 3, 4, 5, 6, tzinfo=UTC),
        not_after=datetime(2031, 2, 3, 3, 5, 6, tzinfo=UTC),
        namespace_proof=NamespaceProof(
            "github-oidc",
            datetime(2026, 1, 1, tzinfo=UTC),
            oidc_subject="repo:example-acx/agents:ref:refs/heads/main",
            oidc_issuer=ISSUER,
        ),
        rotated_from=PUB2.keyid(),
        rotated_to=PUB3.keyid(),
        revoked_at=datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),
        revocation_reason="superseded",
    )
    assert k.public_key.keyid() == PUB.keyid()
    plain = one(entry())
    assert (plain.rotated_from, plain.rotated_to, plain.revoked_at, plain.revocation_reason) == (None,) * 4
    assert plain.status == "active" and not plain.compromised
    assert one(entry(status="expired")).status == "expired"


def test_compromised_is_the_key_compromise_reason_only() -> None:
    assert one(entry(status="revoked", revocationReason="key-compromise")).compromised
    assert not one(entry(status="revoked", revocationReason="retired")).compromised
    assert not one(entry(status="revoked")).compromised


def test_optional_fields_given_as_null_are_absent() -> None:
    e = entry()
    e.update(rotatedFrom=None, rotatedTo=None, revokedAt=None, revocationReason=None)
    k = one(e)
    assert (k.rotated_from, k.rotated_to, k.revoked_at, k.revocation_reason) == (None,) * 4


P256 = generate_p256().public()


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"keyid": ""}, "keys[0].keyid: expected a non-empty string"),
        ({"keyid": 5}, "trust registry: /keys/0/keyid: Expected `str`, got `int`"),
        ({"publisherId": ""}, "keys[0].publisherId: expected a non-empty string"),
        ({"algorithm": 7}, "trust registry: /keys/0/algorithm: Expected `str`, got `int`"),
        ({"publicKeyPem": ""}, "keys[0].publicKeyPem: expected a non-empty string"),
        (
            {"keyid": "ed25519:" + "A" * 64},
            f"keys[0].keyid: {'ed25519:' + 'A' * 64!r} is not ed25519:<64 hex>",
        ),
        (
            {"keyid": "ed25519:" + "a" * 63},
            f"keys[0].keyid: {'ed25519:' + 'a' * 63!r} is not ed25519:<64 hex>",
        ),
        ({"publisherId": "Io.github.x"}, "keys[0].publisherId: 'Io.github.x' is not a valid publisher id"),
        ({"publisherId": "nodots"}, "keys[0].publisherId: 'nodots' is not a valid publisher id"),
        ({"algorithm": "ecdsa-p256"}, "keys[0].algorithm: 'ecdsa-p256' is not ed25519"),
        (
            {"publicKeyPem": "junk"},
            "keys[0].publicKeyPem: not a PEM public key (no readable PUBLIC KEY block)",
        ),
        ({"publicKeyPem": P256.spki_pem()}, "keys[0].publicKeyPem: key is ecdsa-secp256r1, not Ed25519"),
        (
            {"publicKeyPem": PUB2.spki_pem()},
            f"keys[0].keyid: {PUB.keyid()} is not sha256(SPKI) of publicKeyPem ({PUB2.keyid()})",
        ),
        (
            {"status": "suspended"},
            "keys[0].status: 'suspended' is not one of ['active', 'revoked', 'expired']",
        ),
        ({"status": ["active"]}, "trust registry: /keys/0/status: Expected `str`, got `array`"),
        ({"notBefore": "2020-01-01"}, "keys[0].notBefore: '2020-01-01' is not RFC 3339"),
        ({"notAfter": 2035}, "trust registry: /keys/0/notAfter: Expected `str`, got `int`"),
        ({"revokedAt": "soon"}, "keys[0].revokedAt: 'soon' is not RFC 3339"),
        (
            {"revocationReason": "lost"},
            "keys[0].revocationReason: 'lost' is not one of ['key-compromise', 'superseded', 'retired']",
        ),
        ({"rotatedFrom": ""}, "keys[0].rotatedFrom: expected a non-empty string or null"),
        ({"rotatedTo": 3}, "trust registry: /keys/0/rotatedTo: Expected `str | null`, got `int`"),
        ({"rotatedFrom": "ed25519:xyz"}, "keys[0].rotatedFrom: 'ed25519:xyz' is not ed25519:<64 hex>"),
        (
            {"rotatedTo": "sha256:" + "a" * 64},
            f"keys[0].rotatedTo: {'sha256:' + 'a' * 64!r} is not ed25519:<64 hex>",
        ),
        ({"status": None}, "keys[0]: missing field(s) ['status']"),
        ({"notBefore": None, "algorithm": None}, "keys[0]: missing field(s) ['algorithm', 'notBefore']"),
        ({"comment": "hi"}, "keys[0]: unknown field(s) ['comment']"),
    ],
)
def test_entry_refusals_name_the_field(over: dict[str, Any], message: str) -> None:
    assert refusal(doc(entry(**over))) == message


def test_entry_refusals_name_the_entry_index() -> None:
    assert refusal(doc(entry(), entry(PUB2, algorithm="rsa"))) == "keys[1].algorithm: 'rsa' is not ed25519"
    assert refusal(doc(entry(), "not an entry")) == "trust registry: /keys/1: Expected `object`, got `str`"
    assert refusal(doc(entry(), entry())) == f"keys[1].keyid: duplicate keyid {PUB.keyid()}"


def test_entries_keep_their_order_and_are_found_by_keyid() -> None:
    reg = TrustRegistry.from_json(doc(entry(PUB), entry(PUB2, DNS), entry(PUB3)))
    assert [k.keyid for k in reg.keys] == [PUB.keyid(), PUB2.keyid(), PUB3.keyid()]
    got = reg.get(PUB2.keyid())
    assert got is not None and got.publisher_id == DNS
    assert reg.get(PUB3.keyid()) is reg.keys[2]
    assert reg.get(None) is None
    assert reg.get("ed25519:" + "0" * 64) is None


# ---- namespace proofs -------------------------------------------------------------------------


def _proof(publisher: str = GH, **over: Any) -> dict[str, Any]:
    p = dict(entry(publisher=publisher)["namespaceProof"])
    for k, v in over.items():
        if v is None:
            p.pop(k, None)
        else:
            p[k] = v
    return p


@pytest.mark.parametrize(
    ("publisher", "proof", "message"),
    [
        (GH, "github", "trust registry: /keys/0/namespaceProof: Expected `object`, got `str`"),
        (GH, {"method": "x509"}, "keys[0].namespaceProof.method: 'x509' is not github-oidc or dns-txt"),
        (GH, {"method": 7}, "keys[0].namespaceProof.method: 7 is not github-oidc or dns-txt"),
        (
            GH,
            {"method": ["github-oidc"]},
            "keys[0].namespaceProof.method: ['github-oidc'] is not github-oidc or dns-txt",
        ),
        (GH, {}, "keys[0].namespaceProof.method: None is not github-oidc or dns-txt"),
        (GH, _proof(extra="1"), "keys[0].namespaceProof: unknown field(s) ['extra']"),
        (GH, _proof(txtRecord="_acx-challenge.x"), "keys[0].namespaceProof: unknown field(s) ['txtRecord']"),
        (GH, _proof(verifiedAt=None), "keys[0].namespaceProof: missing field(s) ['verifiedAt']"),
        (
            GH,
            _proof(verifiedAt="2026-13-01T00:00:00Z"),
            "keys[0].namespaceProof.verifiedAt: '2026-13-01T00:00:00Z' is not a real date "
            "(month must be in 1..12)",
        ),
        (GH, _proof(oidcSubject=""), "keys[0].namespaceProof.oidcSubject: expected a non-empty string"),
        (
            GH,
            _proof(oidcIssuer=5),
            "trust registry: /keys/0/namespaceProof/oidcIssuer: Expected `str`, got `int`",
        ),
        (
            GH,
            _proof(oidcSubject="repo:someone/agents"),
            "keys[0].namespaceProof.oidcSubject: 'repo:someone/agents' does not start with "
            "'repo:example-acx/'",
        ),
        (
            GH,
            _proof(oidcSubject="repo:example-acx"),
            "keys[0].namespaceProof.oidcSubject: 'repo:example-acx' does not start with 'repo:example-acx/'",
        ),
        (
            GH,
            _proof(oidcSubject="repo:example-acxx/agents"),
            "keys[0].namespaceProof.oidcSubject: 'repo:example-acxx/agents' does not start with "
            "'repo:example-acx/'",
        ),
        (
            GH,
            _proof(oidcIssuer="https://token.actions.githubusercontent.com/"),
            "keys[0].namespaceProof.oidcIssuer: 'https://token.actions.githubusercontent.com/' is not "
            "https://token.actions.githubusercontent.com",
        ),
        (
            DNS,
            _proof(GH),
            "keys[0].namespaceProof: github-oidc proof needs an io.github.<owner> publisher, "
            "got 'dev.acxoci.demo'",
        ),
        (
            GH,
            _proof(DNS),
            "keys[0].namespaceProof: publisher 'io.github.example-acx' is io.github.*, so the "
            "proof must be github-oidc",
        ),
        (
            DNS,
            _proof(DNS, txtRecord="_acx-challenge.dev.acxoci.demo"),
            "keys[0].namespaceProof.txtRecord: '_acx-challenge.dev.acxoci.demo' is not "
            "'_acx-challenge.demo.acxoci.dev'",
        ),
        (DNS, _proof(DNS, txtRecord=""), "keys[0].namespaceProof.txtRecord: expected a non-empty string"),
        (
            DNS,
            _proof(DNS, oidcSubject="repo:x/y"),
            "keys[0].namespaceProof: unknown field(s) ['oidcSubject']",
        ),
    ],
)
def test_proof_refusals(publisher: str, proof: Any, message: str) -> None:
    assert refusal(doc(entry(publisher=publisher, namespaceProof=proof))) == message


def test_dns_proof_of_a_sub_namespace_is_of_its_root() -> None:
    k = one(entry(PUB, "dev.acxoci.demo/team/agent"))
    assert k.namespace_proof == NamespaceProof(
        "dns-txt", datetime(2026, 1, 1, tzinfo=UTC), txt_record="_acx-challenge.demo.acxoci.dev"
    )
    g = one(entry(PUB2, "io.github.example-acx/agents"))
    assert g.namespace_proof.method == "github-oidc" and g.namespace_proof.txt_record is None


def test_a_proof_verified_after_now_is_refused_only_when_now_is_given() -> None:
    e = entry(namespaceProof=_proof(verifiedAt="2026-11-30T00:00:01Z"))
    assert (
        refusal(doc(e), now=NOW) == "keys[0].namespaceProof.verifiedAt: 2026-11-30T00:00:01Z is in the future"
    )
    assert one(e).namespace_proof.verified_at == NOW + timedelta(seconds=1)  # no `now`: not judged here
    at_now = entry(namespaceProof=_proof(verifiedAt="2026-11-30T00:00:00Z"))
    assert one(at_now, now=NOW).namespace_proof.verified_at == NOW


# ---- rotation links ---------------------------------------------------------------------------


def test_rotation_links_must_agree() -> None:
    a, b, c = PUB.keyid(), PUB2.keyid(), PUB3.keyid()
    assert refusal(doc(entry(PUB, rotatedTo=b), entry(PUB2, rotatedFrom=c))) == (
        f"{a}: rotatedTo {b}, whose rotatedFrom points elsewhere"
    )
    # the successor listed first: still checked
    assert refusal(doc(entry(PUB2, rotatedFrom=c), entry(PUB, rotatedTo=b))) == (
        f"{a}: rotatedTo {b}, whose rotatedFrom points elsewhere"
    )
    ok = TrustRegistry.from_json(doc(entry(PUB, rotatedTo=b), entry(PUB2, rotatedFrom=a)))
    assert [k.rotated_to for k in ok.keys] == [b, None]
    TrustRegistry.from_json(doc(entry(PUB, rotatedTo=b), entry(PUB2)))  # successor silent: fine
    TrustRegistry.from_json(doc(entry(PUB, rotatedTo=c), entry(PUB2, rotatedFrom=c)))  # successor absent


# ---- merge_keys -------------------------------------------------------------------------------


def test_merge_keeps_first_occurrence_order_and_drops_equal_duplicates() -> None:
    a, b, c = one(entry(PUB)), one(entry(PUB2, DNS)), one(entry(PUB3))
    a_again = dataclasses.replace(
        a, rotated_to=PUB3.keyid(), namespace_proof=dataclasses.replace(a.namespace_proof, verified_at=NOW)
    )
    merged = merge_keys([("one.json", [a, b]), ("two.json", [c, a_again])])
    assert merged == (a, b, c)
    assert merged[0] is a  # the first source's entry stands when the decision fields agree
    assert merge_keys([]) == ()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("publisher_id", DNS),
        ("status", "expired"),
        ("not_before", datetime(2020, 1, 2, tzinfo=UTC)),
        ("not_after", datetime(2035, 1, 2, tzinfo=UTC)),
        ("revoked_at", datetime(2026, 1, 2, tzinfo=UTC)),
        ("revocation_reason", "retired"),
    ],
)
def test_merge_refuses_any_decision_field_that_differs(field: str, value: Any) -> None:
    a = one(entry(PUB))
    other = dataclasses.replace(a, **{field: value})
    with pytest.raises(MalformedError) as exc:
        merge_keys([("a.json", [a]), ("b.json", [other])])
    said = (
        f"{other.status}{f' ({other.revocation_reason})' if other.revocation_reason else ''} for "
        f"{other.publisher_id}"
    )
    assert str(exc.value) == (
        f"conflicting trust registry entries for {PUB.keyid()}: a.json says active for "
        f"{GH}, b.json says {said}"
    )


def test_merge_conflict_message_names_both_files_and_both_readings() -> None:
    a = one(entry(PUB))
    revoked = one(entry(PUB, status="revoked", revocationReason="key-compromise"))
    with pytest.raises(MalformedError) as exc:
        merge_keys([("team.json", [revoked]), ("org.json", [a])])
    assert str(exc.value) == (
        f"conflicting trust registry entries for {PUB.keyid()}: team.json says revoked "
        f"(key-compromise) for {GH}, org.json says active for {GH}"
    )


# ---- judge_signer -----------------------------------------------------------------------------

SIGNED = "2026-04-03T13:35:46Z"


def test_judge_unknown_key_is_portable_and_not_in_registry() -> None:
    j = judge_signer(None, signed_publisher=GH, signed_at=SIGNED, now=NOW)
    assert (j.trust, j.summary, j.issues, j.in_registry, j.compromised, j.standing) == (
        "portable",
        "Signature valid but signer not in trust registry.",
        (R_UNKNOWN,),
        False,
        False,
        "unvouched",
    )
    assert j.facts is not None and j.facts.status == "unknown" and j.facts.signed_at == SIGNED


def test_judge_trusted_names_the_signed_publisher() -> None:
    k = one(entry(PUB, GH))
    j = judge_signer(k, signed_publisher=GH + "/agents", signed_at=SIGNED, now=NOW)
    assert j == SignerJudgement(
        "trusted", f"Signed by trusted publisher {GH}/agents.", (), True, False, j.facts, "trusted"
    )
    assert j.facts is not None and j.facts.claimed_publisher == GH + "/agents"
    assert j.facts.now == "2026-11-30T00:00:00Z" and j.facts.proof_future is False


def test_judge_compromised_and_revoked_are_tampered() -> None:
    comp = one(entry(status="revoked", revocationReason="key-compromise", revokedAt="2026-05-01T00:00:00Z"))
    j = judge_signer(comp, signed_publisher=GH, signed_at=SIGNED, now=NOW)
    assert (j.trust, j.summary, j.issues, j.in_registry, j.compromised, j.standing) == (
        "tampered",
        "Signer key is compromised (revoked).",
        (R_COMPROMISED,),
        True,
        True,
        "rejected",
    )
    rev = one(entry(status="revoked"))
    j = judge_signer(rev, signed_publisher=GH, signed_at=SIGNED, now=NOW)
    assert (j.trust, j.summary, j.issues, j.in_registry, j.compromised, j.standing) == (
        "tampered",
        "Signer key revoked.",
        (R_REVOKED,),
        True,
        False,
        "rejected",
    )


@pytest.mark.parametrize("reason", ["superseded", "retired"])
def test_judge_non_compromise_revocation_before_revoked_at(reason: str) -> None:
    k = one(entry(status="revoked", revocationReason=reason, revokedAt="2026-05-01T00:00:00Z"))
    j = judge_signer(k, signed_publisher=GH, signed_at=SIGNED, now=NOW)
    assert (j.trust, j.summary, j.issues, j.in_registry, j.compromised, j.standing) == (
        "portable",
        "Signer key later revoked (non-compromise); signed before revocation.",
        (R_SELF_ASSERTED.format(status=reason, signed_at=SIGNED),),
        True,
        False,
        "portable",
    )


def test_judge_expired_and_foreign_keys_are_not_eligible() -> None:
    exp = one(entry(status="expired"))
    j = judge_signer(exp, signed_publisher=GH, signed_at=SIGNED, now=NOW)
    assert (j.trust, j.summary, j.in_registry, j.compromised, j.standing) == (
        "portable",
        "Signer registry entry is not eligible for trusted status.",
        True,
        False,
        "portable",
    )
    assert j.issues == (R_SELF_ASSERTED.format(status="expired", signed_at=SIGNED),)
    foreign = one(entry(PUB, DNS))
    j = judge_signer(foreign, signed_publisher=GH, signed_at=SIGNED, now=NOW)
    assert (j.trust, j.summary, j.issues, j.in_registry, j.compromised, j.standing) == (
        "portable",
        "Signer registry entry is not eligible for trusted status.",
        (R_FOREIGN.format(registered=DNS, claimed=GH),),
        True,
        False,
        "unvouched",
    )


def test_judge_unparsable_signed_at_is_missing_not_an_error() -> None:
    k = one(entry())
    j = judge_signer(k, signed_publisher=GH, signed_at="last tuesday", now=NOW)
    assert j.trust == "portable" and j.issues == ("signedAt is missing or not RFC 3339",)
    assert j.facts is not None and j.facts.signed_at is None and j.facts.window == "missing"


def test_judge_uses_the_independent_time_and_the_proof_date() -> None:
    k = one(entry(status="expired", notAfter="2026-06-01T00:00:00Z"))
    logged = datetime(2026, 4, 3, 14, 0, 0, tzinfo=UTC)
    j = judge_signer(k, signed_publisher=GH, signed_at=SIGNED, now=NOW, independent_time=logged)
    assert j.trust == "trusted" and j.facts is not None and j.facts.independent_time == "2026-04-03T14:00:00Z"
    late = one(entry(namespaceProof=_proof(verifiedAt="2026-11-30T00:00:01Z")))
    j = judge_signer(late, signed_publisher=GH, signed_at=SIGNED, now=NOW)
    assert j.trust == "portable" and j.issues == ("namespace proof verifiedAt is in the future",)
    assert j.facts is not None and j.facts.proof_future is True
    on_time = one(entry(namespaceProof=_proof(verifiedAt="2026-11-30T00:00:00Z")))
    assert judge_signer(on_time, signed_publisher=GH, signed_at=SIGNED, now=NOW).trust == "trusted"


# ---- format_rfc3339, make_key_entry, add_key_entry --------------------------------------------


def test_format_rfc3339_is_utc_whatever_the_local_zone(tokyo: None) -> None:
    east = datetime(2026, 1, 2, 3, 4, 5, 999999, tzinfo=timezone(timedelta(hours=2)))
    assert format_rfc3339(east) == "2026-01-02T01:04:05Z"
    assert format_rfc3339(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"


def test_make_key_entry_dns_shape(tokyo: None) -> None:
    nb, na, va = (
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(2027, 1, 1, tzinfo=timezone(timedelta(hours=1))),
        datetime(2025, 12, 31, 12, tzinfo=UTC),
    )
    got = make_key_entry(PUB, publisher_id="dev.acxoci.demo/sub", not_before=nb, not_after=na, verified_at=va)
    assert got == {
        "keyid": PUB.keyid(),
        "publisherId": "dev.acxoci.demo/sub",
        "algorithm": "ed25519",
        "publicKeyPem": PUB.spki_pem(),
        "status": "active",
        "notBefore": "2026-01-01T00:00:00Z",
        "notAfter": "2026-12-31T23:00:00Z",
        "namespaceProof": {
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.demo.acxoci.dev",
            "verifiedAt": "2025-12-31T12:00:00Z",
        },
    }
    one(got)  # the loader accepts what it writes


def test_make_key_entry_github_shape_and_refusals() -> None:
    when: dict[str, Any] = {"not_before": NOW, "not_after": NOW, "verified_at": NOW - timedelta(days=1)}
    got = make_key_entry(PUB, publisher_id=GH, oidc_subject="repo:example-acx/a:ref:refs/heads/main", **when)
    assert got["namespaceProof"] == {
        "method": "github-oidc",
        "oidcSubject": "repo:example-acx/a:ref:refs/heads/main",
        "oidcIssuer": ISSUER,
        "verifiedAt": "2026-11-29T00:00:00Z",
    }
    one(got)
    for subject in (None, ""):
        with pytest.raises(MalformedError) as exc:
            make_key_entry(PUB, publisher_id=GH, oidc_subject=subject, **when)
        assert str(exc.value) == f"publisher {GH} needs a github-oidc proof: give the OIDC subject"
    with pytest.raises(MalformedError) as exc:
        make_key_entry(P256, publisher_id=DNS, **when)
    assert str(exc.value) == "trust registry entries take Ed25519 keys only"


def _new(pub: PublicKey, publisher: str = DNS, verified_at: datetime = NOW) -> dict[str, Any]:
    return make_key_entry(
        pub,
        publisher_id=publisher,
        not_before=NOW,
        not_after=NOW + timedelta(days=1),
        verified_at=verified_at,
    )


@pytest.mark.parametrize("start", [None, {}])
def test_add_to_nothing_starts_a_registry(start: dict[str, Any] | None) -> None:
    e = _new(PUB)
    assert add_key_entry(start, e, now=NOW) == {
        "schemaVersion": "acx.trust-registry/1",
        "keys": [e],
        "updatedAt": "2026-11-30T00:00:00Z",
    }


def test_add_to_a_registry_without_keys_gives_it_the_entry() -> None:
    e = _new(PUB)
    got = add_key_entry({"schemaVersion": "acx.trust-registry/1", "registryId": "r"}, e, now=NOW)
    assert got == {
        "schemaVersion": "acx.trust-registry/1",
        "registryId": "r",
        "keys": [e],
        "updatedAt": "2026-11-30T00:00:00Z",
    }


def test_add_replaces_in_place_of_the_old_and_keeps_the_rest() -> None:
    a, b, c = _new(PUB), _new(PUB2), _new(PUB3)
    start = {"schemaVersion": "acx.trust-registry/1", "keys": [a, b, c], "updatedAt": "2026-01-01T00:00:00Z"}
    before = copy.deepcopy(start)
    b2 = _new(PUB2, "dev.acxoci.other")
    got = add_key_entry(start, b2, now=NOW + timedelta(hours=1))
    assert got["keys"] == [a, c, b2] and got["updatedAt"] == "2026-11-30T01:00:00Z"
    assert start == before  # the caller's document is not changed


def test_add_refuses_a_non_object_entry_left_in_the_registry() -> None:
    start = {"schemaVersion": "acx.trust-registry/1", "keys": ["junk"]}
    with pytest.raises(MalformedError) as exc:
        add_key_entry(start, _new(PUB), now=NOW)
    assert str(exc.value) == "trust registry: /keys/0: Expected `object`, got `str`"


def test_add_validates_against_its_own_now() -> None:
    future = _new(PUB, verified_at=NOW + timedelta(seconds=1))
    with pytest.raises(MalformedError) as exc:
        add_key_entry(None, future, now=NOW)
    assert str(exc.value) == "keys[0].namespaceProof.verifiedAt: 2026-11-30T00:00:01Z is in the future"
    assert add_key_entry(None, future, now=NOW + timedelta(seconds=1))["keys"] == [future]
