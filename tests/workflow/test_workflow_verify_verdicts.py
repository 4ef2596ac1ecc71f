"""Workflow verdicts, branch by branch, compared whole (`to_json()`): unsigned, each kind of
tampered (fields that are not strings are reported as null), portable (no registry, or a key
the registry no longer vouches for), trusted, a registry naming another publisher, and a key
revoked for compromise. Written against the survivors of `make mutate`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from acxoci.attest.trust import TrustRegistry
from acxoci.workflow.verify import verify_workflow
from tests.harness.workflows import NOW, TEAM_PUBLISHER, registry_for, restatement, signed_team, team_key

PUBLISHER = TEAM_PUBLISHER
KEY = team_key()
SIGNED = signed_team()
KEYID = KEY.public().keyid()
SIGNED_AT = SIGNED["integrity"]["signedAt"]
BAD = "Workflow signature does not verify."


def _json(doc: dict[str, Any], registry: TrustRegistry | None) -> dict[str, Any]:
    out = verify_workflow(doc, registry=registry, now=NOW).to_json()
    out.pop("digest")
    return out


def _verdict(ok: bool, status: str, trust: str, summary: str, issues: list[str], *,
             pub: str | None = PUBLISHER, keyid: str | None = KEYID, signed_at: str | None = SIGNED_AT,
             signed: bool = True) -> dict[str, Any]:
    return {"ok": ok, "signed": signed, "status": status, "trust": trust, "publisherId": pub, "keyid": keyid,
            "signedAt": signed_at, "summary": summary, "issues": issues}


def _with(**integrity: Any) -> dict[str, Any]:
    doc = copy.deepcopy(SIGNED)
    doc["integrity"].update(integrity)
    return doc


def test_unsigned() -> None:
    doc = {k: v for k, v in SIGNED.items() if k != "integrity"}
    want = _verdict(True, "warning", "unsigned", "Unsigned workflow (no integrity block).",
                    ["workflow has no integrity signature"], pub=None, keyid=None, signed_at=None,
                    signed=False)
    assert _json(doc, None) == want


def test_portable_without_a_registry() -> None:
    assert _json(SIGNED, None) == _verdict(True, "verified", "portable",
                                           "Signature valid; signer not in trust registry.",
                                           ["signer key is not in the trust registry"])


def test_trusted() -> None:
    got = _json(SIGNED, registry_for(KEY, PUBLISHER))
    assert got == _verdict(True, "verified", "trusted", got["summary"], got["issues"])
    assert got["summary"] and PUBLISHER in got["summary"]


def test_registry_for_another_publisher() -> None:
    other = "io.github.other"
    assert _json(SIGNED, registry_for(KEY, other)) == _verdict(
        False, "invalid", "tampered", "Trust registry publisher differs from the signed one.",
        [f"signer key is registered to publisher {other}, not {PUBLISHER}"])


def test_key_revoked_for_compromise() -> None:
    got = _json(SIGNED, registry_for(KEY, PUBLISHER, status="revoked", reason="key-compromise"))
    issues = ["signer key is revoked for key-compromise: never trusted"]
    assert got == _verdict(False, "invalid", "tampered", got["summary"], issues)
    assert got["summary"]


def test_key_past_its_validity_is_portable_with_a_warning() -> None:
    got = _json(SIGNED, registry_for(KEY, PUBLISHER, not_after="2026-06-01T00:00:00Z"))
    assert got == _verdict(True, "warning", "portable", got["summary"], got["issues"])
    assert got["summary"] and got["issues"]


@pytest.mark.parametrize(
    ("doc", "issue", "pub", "keyid", "signed_at"),
    [
        (_with(publisherId=5), "publisherId must be a reverse-DNS identifier", None, KEYID, SIGNED_AT),
        (_with(keyid=["k"]), "keyid must identify an Ed25519 public key", PUBLISHER, None, SIGNED_AT),
        (_with(signedAt=1), "signedAt must be an RFC 3339 date-time", PUBLISHER, KEYID, None),
        (_with(signedAt="2026-13-40T00:00:00Z"), "signedAt must be an RFC 3339 date-time", PUBLISHER, KEYID,
         "2026-13-40T00:00:00Z"),
        (_with(extra=1), "integrity must contain exactly the acx.workflow-signature/1 fields (got ['digest', "
                         "'envelope', 'extra', 'keyid', 'publicKeyPem', 'publisherId', 'schemaVersion', "
                         "'signedAt'])", PUBLISHER, KEYID, SIGNED_AT),
        ({**SIGNED, "integrity": "signed"},
         "integrity must contain exactly the acx.workflow-signature/1 fields", None, None, None),
        (_with(publicKeyPem=7), "invalid public key: not a PEM public key", PUBLISHER, KEYID, SIGNED_AT),
    ],
    # fixed ids: the key (and so the keyid) is made at import time, and mutmut names tests by id
    ids=["publisherId", "keyid", "signedAt-type", "signedAt-date", "extra-field", "integrity-string",
         "publicKeyPem"],
)
def test_tampered_verdicts_keep_only_string_fields(doc: dict[str, Any], issue: str, pub: str | None,
                                                  keyid: str | None, signed_at: str | None) -> None:
    got = _json(doc, registry_for(KEY, PUBLISHER))
    assert got["issues"] and got["issues"][0].startswith(issue), got["issues"]
    assert got == _verdict(False, "invalid", "tampered", BAD, got["issues"], pub=pub, keyid=keyid,
                           signed_at=signed_at)


@pytest.mark.parametrize(
    ("edit", "issue"),
    [
        (lambda s: s.update(subject=[*s["subject"], *s["subject"]]),
         "in-toto Statement must contain exactly one workflow subject"),
        (lambda s: s.update(subject=["x"]), "in-toto Statement must contain exactly one workflow subject"),
        (lambda s: s.update(subject={}), "in-toto Statement must contain exactly one workflow subject"),
    ],
)
def test_statement_subjects(edit: Any, issue: str) -> None:
    got = _json(restatement(edit), registry_for(KEY, PUBLISHER))
    assert got == _verdict(False, "invalid", "tampered", BAD, [issue])


def test_a_payload_that_is_not_a_statement_object() -> None:
    from acxoci.attest import dsse

    doc = copy.deepcopy(SIGNED)
    doc["integrity"]["envelope"] = dsse.sign(dsse.INTOTO_PAYLOAD_TYPE, b"[1]", KEY, KEYID).to_json()
    got = _json(doc, registry_for(KEY, PUBLISHER))
    want = _verdict(False, "invalid", "tampered", BAD, ["DSSE payload is not an in-toto Statement object"])
    assert got == want
