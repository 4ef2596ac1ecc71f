"""Signing and verifying workflows: the integrity block, every binding check, trust, remix."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.canonical import jcs
from acxoci.attest.keys import generate_p256
from acxoci.errors import InvalidInput, RefusedByPolicy, Tampered
from acxoci.workflow.lineage import remix
from acxoci.workflow.sign import (
    INTEGRITY_FIELDS,
    default_signed_name,
    iso_millis,
    sign_workflow,
    workflow_digest,
)
from acxoci.workflow.verify import verify_workflow
from tests.harness.workflows import NOW, new_key, registry_for, team

PUB = "io.github.tester"


def _signed(vectors: Path, publisher: str = PUB) -> tuple[dict[str, Any], Any]:
    key = new_key()
    return sign_workflow(team(vectors), publisher_id=publisher, key=key, now=NOW), key


def _statement(doc: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(base64.b64decode(doc["integrity"]["envelope"]["payload"]))
    assert isinstance(out, dict)
    return out


def test_sign_produces_exactly_the_seven_fields_and_a_bound_statement(vectors_dir: Path) -> None:
    doc, key = _signed(vectors_dir)
    integ = doc["integrity"]
    assert list(integ) == list(INTEGRITY_FIELDS)
    assert integ["schemaVersion"] == "acx.workflow-signature/1"
    assert integ["digest"] == workflow_digest(team(vectors_dir))
    assert integ["keyid"] == key.public().keyid()
    assert integ["publicKeyPem"] == key.public().spki_pem()
    assert integ["signedAt"] == "2026-11-30T12:00:00.000Z"
    env = integ["envelope"]
    assert set(env) == {"payloadType", "payload", "signatures"}
    assert env["payloadType"] == "application/vnd.in-toto+json"
    assert [set(s) for s in env["signatures"]] == [{"keyid", "sig"}]
    payload = base64.b64decode(env["payload"])
    stmt = _statement(doc)
    assert payload == jcs(stmt)  # the payload bytes are the JCS of the Statement
    assert stmt["subject"] == [
        {
            "name": "urn:acx:workflow:vector-team@1.2.3",
            "digest": {"sha256": integ["digest"].removeprefix("sha256:")},
        }
    ]
    assert stmt["predicateType"] == "https://acx.dev/attestation/workflow/v1"
    assert stmt["predicate"] == {
        "acxSchemaVersion": "acx.cal/1",
        "workflowId": "vector-team",
        "workflowVersion": "1.2.3",
        "publisherId": PUB,
        "workflowDigest": integ["digest"],
        "signedAt": integ["signedAt"],
        "participants": 3,
        "nodes": 5,
    }


def test_statement_shape_matches_the_reference_signature(vectors_dir: Path) -> None:
    """Our Statement for the same document, publisher and time equals the reference's payload."""
    ref = json.loads((vectors_dir / "workflow" / "team.signed.cal.json").read_text(encoding="utf-8"))
    ours = sign_workflow(
        team(vectors_dir), publisher_id=ref["integrity"]["publisherId"], key=new_key(), now=NOW
    )
    ref_stmt = _statement(ref)
    our_stmt = _statement(ours)
    our_stmt["predicate"]["signedAt"] = ref_stmt["predicate"]["signedAt"]
    assert jcs(our_stmt) == base64.b64decode(ref["integrity"]["envelope"]["payload"])


def test_own_signature_verifies_portable_then_trusted_with_registry(vectors_dir: Path) -> None:
    doc, key = _signed(vectors_dir)
    v = verify_workflow(doc, registry=None, now=NOW)
    assert (v.ok, v.signed, v.status, v.trust) == (True, True, "verified", "portable")
    assert v.issues == ("signer key is not in the trust registry",)
    t = verify_workflow(doc, registry=registry_for(key, PUB), now=NOW)
    assert (t.ok, t.status, t.trust) == (True, "verified", "trusted")


def test_registry_outcomes(vectors_dir: Path) -> None:
    doc, key = _signed(vectors_dir)
    compromised = verify_workflow(
        doc, registry=registry_for(key, PUB, status="revoked", reason="key-compromise"), now=NOW
    )
    assert (compromised.ok, compromised.trust) == (False, "tampered")
    assert compromised.issues == ("signer key is revoked for key-compromise: never trusted",)
    other = verify_workflow(doc, registry=registry_for(key, "io.github.someone-else"), now=NOW)
    assert (other.ok, other.trust) == (False, "tampered")
    assert other.issues == (f"signer key is registered to publisher io.github.someone-else, not {PUB}",)
    expired = verify_workflow(doc, registry=registry_for(key, PUB, not_after="2026-01-02T00:00:00Z"), now=NOW)
    assert (expired.ok, expired.status, expired.trust) == (True, "warning", "portable")
    assert expired.issues[0].startswith("artifact signed at 2026-11-30T12:00:00.000Z, after the key's")
    revoked = verify_workflow(doc, registry=registry_for(key, PUB, status="revoked"), now=NOW)
    # a revoked key never fares better than an unknown one
    assert (revoked.ok, revoked.status, revoked.trust) == (False, "invalid", "tampered")


def _mutate(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("limits", "maxSteps"), 25, "workflow digest mismatch"),
        (("integrity", "publisherId"), "io.github.mallory", "publisherId binding mismatch"),
        (("integrity", "signedAt"), "2026-11-30T12:00:01.000Z", "signedAt binding mismatch"),
        (("integrity", "extra"), 1, "integrity must contain exactly the acx.workflow-signature/1 fields"),
        (("integrity", "schemaVersion"), "acx.workflow-signature/2", "unexpected integrity schemaVersion"),
        (("integrity", "publisherId"), "Not_RDNS", "publisherId must be a reverse-DNS identifier"),
        (("integrity", "keyid"), "rsa:abc", "keyid must identify an Ed25519 public key"),
        (("integrity", "signedAt"), "yesterday", "signedAt must be an RFC 3339 date-time"),
        (("integrity", "publicKeyPem"), "not a pem", "invalid public key"),
        (("integrity", "envelope", "payloadType"), "text/plain", "DSSE payloadType"),
    ],
)
def test_each_binding_check_catches_its_edit(
    vectors_dir: Path, path: tuple[str, ...], value: Any, expected: str
) -> None:
    doc, _ = _signed(vectors_dir)
    v = verify_workflow(_mutate(doc, path, value), registry=None, now=NOW)
    assert (v.ok, v.status, v.trust) == (False, "invalid", "tampered")
    assert any(expected in i for i in v.issues), v.issues


def test_keyid_rewrite_and_foreign_key_and_bad_signature_are_tampered(vectors_dir: Path) -> None:
    doc, _ = _signed(vectors_dir)
    fake = "ed25519:" + "ab" * 32
    rewritten = _mutate(
        _mutate(doc, ("integrity", "keyid"), fake),
        ("integrity", "envelope", "signatures"),
        [{"keyid": fake, "sig": doc["integrity"]["envelope"]["signatures"][0]["sig"]}],
    )
    v = verify_workflow(rewritten, registry=None, now=NOW)
    assert v.trust == "tampered" and "keyid does not match" in v.issues[0]
    other = new_key().public()
    swapped = _mutate(
        _mutate(doc, ("integrity", "publicKeyPem"), other.spki_pem()), ("integrity", "keyid"), other.keyid()
    )
    swapped["integrity"]["envelope"]["signatures"][0]["keyid"] = other.keyid()
    v = verify_workflow(swapped, registry=None, now=NOW)
    assert v.trust == "tampered" and "DSSE signature does not verify" in v.issues[0]
    sig = bytearray(base64.b64decode(doc["integrity"]["envelope"]["signatures"][0]["sig"]))
    sig[0] ^= 1
    flipped = copy.deepcopy(doc)
    flipped["integrity"]["envelope"]["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    v = verify_workflow(flipped, registry=None, now=NOW)
    assert v.trust == "tampered" and "DSSE signature does not verify" in v.issues[0]


def test_digest_ignores_key_order_and_whitespace(vectors_dir: Path) -> None:
    doc = team(vectors_dir)
    reordered = json.loads(json.dumps(dict(reversed(list(doc.items())))))
    assert workflow_digest(reordered) == workflow_digest(doc)
    changed = copy.deepcopy(doc)
    changed["nodes"][0]["action"] += " "
    assert workflow_digest(changed) != workflow_digest(doc)


def test_sign_refusals(vectors_dir: Path) -> None:
    doc = team(vectors_dir)
    with pytest.raises(InvalidInput):
        sign_workflow(doc, publisher_id="Not A Publisher", key=new_key(), now=NOW)
    with pytest.raises(InvalidInput):
        sign_workflow(doc, publisher_id=PUB, key=generate_p256(), now=NOW)
    bad = copy.deepcopy(doc)
    bad["description"] = "too short"
    with pytest.raises(RefusedByPolicy):
        sign_workflow(bad, publisher_id=PUB, key=new_key(), now=NOW)


def test_remix_keeps_digest_pinned_lineage_through_resigning(vectors_dir: Path) -> None:
    parent, _ = _signed(vectors_dir)
    draft = remix(parent, "fork", new_version="2.0.0")
    assert "integrity" not in draft
    assert draft["lineage"] == {
        "parents": [
            {
                "artifactType": "workflow",
                "publisherId": PUB,
                "id": "vector-team",
                "version": "1.2.3",
                "digest": parent["integrity"]["digest"],
                "relation": "fork",
            }
        ]
    }
    child = sign_workflow(draft, publisher_id="io.github.remixer", key=new_key(), now=NOW)
    assert child["lineage"] == draft["lineage"]
    v = verify_workflow(child, registry=None, now=NOW)
    assert v.ok and v.trust == "portable"
    # lineage is signed content: editing it breaks the signature
    edited = copy.deepcopy(child)
    edited["lineage"]["parents"][0]["relation"] = "remix"
    assert verify_workflow(edited, registry=None, now=NOW).trust == "tampered"
    # the same publisher re-signing the same coordinate collides with its own identity
    same = remix(parent, "remix")
    with pytest.raises(RefusedByPolicy):
        sign_workflow(same, publisher_id=PUB, key=new_key(), now=NOW)


def test_remix_refuses_a_tampered_parent(vectors_dir: Path) -> None:
    parent, _ = _signed(vectors_dir)
    parent["limits"]["maxSteps"] = 99
    with pytest.raises(Tampered):
        remix(parent, "remix")


def test_helpers() -> None:
    assert default_signed_name(Path("a/my-team.cal.json")) == Path("a/my-team.signed.cal.json")
    assert default_signed_name(Path("x.signed.cal.json")) == Path("x.signed.cal.json")
    assert iso_millis(NOW.replace(microsecond=123999)) == "2026-11-30T12:00:00.123Z"


