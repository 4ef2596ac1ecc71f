"""Workflow verification, check by check: every envelope-shape refusal and every statement
binding is exercised with a signature that still verifies (the statement is re-signed with the
workflow's own key), so only the check under test can refuse it; each verdict is tampered and
its issue text is exact (`expected <JSON>, got <JSON>`, as the reference prints it). Written
against the survivors of `make mutate`."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from acxoci.attest.keys import PrivateKey
from acxoci.workflow.verify import WorkflowVerdict, verify_workflow
from tests.harness.workflows import NOW, TEAM_PUBLISHER, registry_for, restatement, signed_team, team_key

PUBLISHER = TEAM_PUBLISHER
KEY: PrivateKey = team_key()
SIGNED = signed_team()


def _verify(doc: dict[str, Any]) -> WorkflowVerdict:
    return verify_workflow(doc, registry=registry_for(KEY, PUBLISHER), now=NOW)


def test_the_unedited_document_is_trusted() -> None:
    v = _verify(SIGNED)
    assert (v.ok, v.trust) == (True, "trusted"), v
    assert _verify(restatement(lambda s: None)).trust == "trusted"  # re-signing alone changes nothing


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(stmt: dict[str, Any]) -> None:
        node: Any = stmt
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value

    return edit


BINDINGS: list[tuple[tuple[Any, ...], Any, str]] = [
    (("_type",), "https://in-toto.io/Statement/v0.1", '_type binding mismatch: expected '
                                                      '"https://in-toto.io/Statement/v1", got '
                                                      '"https://in-toto.io/Statement/v0.1"'),
    (("subject", 0, "digest", "sha256"), "00" * 32, "subject binding mismatch"),
    (("subject", 0, "name"), "urn:acx:workflow:other@1", 'subject name binding mismatch: expected '),
    (("predicateType",), "https://acx.dev/attestation/other/v1", "predicateType binding mismatch"),
    (("predicate", "acxSchemaVersion"), "acx.cal/2", 'acxSchemaVersion binding mismatch: expected '
                                                     '"acx.cal/1", got "acx.cal/2"'),
    (("predicate", "workflowId"), "other-é", 'workflowId binding mismatch: expected "vector-team", '
                                            'got "other-é"'),
    (("predicate", "workflowVersion"), "9.9.9", 'workflowVersion binding mismatch: expected "1.2.3", '
                                                'got "9.9.9"'),
    (("predicate", "workflowDigest"), "sha256:" + "00" * 32, "workflowDigest binding mismatch"),
    (("predicate", "publisherId"), "io.github.mallory", 'publisherId binding mismatch: expected '
                                                        '"io.github.example-acx", got "io.github.mallory"'),
    (("predicate", "signedAt"), "2026-01-01T00:00:00.000Z", "signedAt binding mismatch"),
    (("predicate", "participants"), "3", 'participants binding mismatch: expected 3, got "3"'),
    (("predicate", "participants"), True, "participants binding mismatch: expected 3, got true"),
    (("predicate", "nodes"), [5], "nodes binding mismatch: expected 5, got [5]"),
    (("predicate", "nodes"), {"n": 5, "m": 1}, 'nodes binding mismatch: expected 5, got {"m":1,"n":5}'),
]


@pytest.mark.parametrize(("path", "value", "issue"), BINDINGS, ids=[f"{b[0]}={b[1]!r}" for b in BINDINGS])
def test_each_statement_binding_is_checked(path: tuple[Any, ...], value: Any, issue: str) -> None:
    v = _verify(restatement(_set(path, value)))
    assert (v.ok, v.trust, v.status) == (False, "tampered", "invalid"), v
    assert len(v.issues) == 1 and v.issues[0].startswith(issue), v.issues


def test_a_missing_or_malformed_predicate_is_a_mismatch_not_a_crash() -> None:
    v = _verify(restatement(_set(("predicate",), ["not", "an", "object"])))
    assert v.trust == "tampered"
    assert "acxSchemaVersion binding mismatch: expected \"acx.cal/1\", got null" in v.issues
    v = _verify(restatement(_set(("subject", 0, "digest"), "sha256:abc")))
    assert v.trust == "tampered" and v.issues[0].startswith("subject binding mismatch: expected \""), v.issues
    assert v.issues[0].endswith("got null")


def _envelope(edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    doc = copy.deepcopy(SIGNED)
    out = edit(doc["integrity"]["envelope"])
    if out is not None:
        doc["integrity"]["envelope"] = out
    return doc


SHAPE_1 = "DSSE envelope must have exactly payloadType, payload and signatures"
SHAPE_2 = "DSSE payloadType must be application/vnd.in-toto+json"
SHAPE_3 = "DSSE envelope must carry exactly one {keyid, sig} signature"
SHAPE_4 = "DSSE payload, keyid and sig must be strings"


def _two_sigs(e: dict[str, Any]) -> None:
    e["signatures"] = [*e["signatures"], *e["signatures"]]


SHAPES: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("not-an-object", lambda e: ["x"], SHAPE_1),
    ("extra-member", lambda e: e.update(extra=1), SHAPE_1),
    ("missing-member", lambda e: e.pop("payload"), SHAPE_1),
    ("payload-type", lambda e: e.update(payloadType="application/json"), SHAPE_2),
    ("signatures-object", lambda e: e.update(signatures={"keyid": "k", "sig": "s"}), SHAPE_3),
    ("no-signature", lambda e: e.update(signatures=[]), SHAPE_3),
    ("two-signatures", _two_sigs, SHAPE_3),
    ("signature-not-object", lambda e: e.update(signatures=["sig"]), SHAPE_3),
    ("signature-extra-member", lambda e: e["signatures"][0].update(x=1), SHAPE_3),
    ("payload-not-string", lambda e: e.update(payload=1), SHAPE_4),
    ("sig-not-string", lambda e: e["signatures"][0].update(sig=1), SHAPE_4),
    ("keyid-not-string", lambda e: e["signatures"][0].update(keyid=None), SHAPE_4),
]


@pytest.mark.parametrize(("edit", "issue"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_each_envelope_shape_refusal(edit: Callable[[dict[str, Any]], Any], issue: str) -> None:
    v = _verify(_envelope(edit))
    assert (v.ok, v.trust) == (False, "tampered"), v
    assert v.issues == (issue,), v.issues


def test_integrity_schema_version_is_quoted_as_compact_json() -> None:
    doc = copy.deepcopy(SIGNED)
    doc["integrity"]["schemaVersion"] = {"v": "é", "n": [1, 2]}
    v = _verify(doc)
    assert v.issues == ('unexpected integrity schemaVersion {"v":"é","n":[1,2]}',), v.issues


def test_verdict_json_uses_the_reference_field_names() -> None:
    v = _verify(SIGNED)
    assert v.to_json() == {
        "ok": True, "signed": True, "status": "verified", "trust": "trusted", "digest": v.digest,
        "publisherId": PUBLISHER, "keyid": KEY.public().keyid(), "signedAt": SIGNED["integrity"]["signedAt"],
        "summary": v.summary, "issues": list(v.issues),
    }
    assert v.summary and not v.rejected
