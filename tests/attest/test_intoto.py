"""attest.intoto: statements we sign conform to in-toto v1 as the in-toto reference library
judges it; parsing accepts cosign's v0.1 and rejects malformed statements."""

from __future__ import annotations

import pytest

from acxoci.attest.canonical import jcs
from acxoci.attest.errors import MalformedError
from acxoci.attest.intoto import STATEMENT_V01, STATEMENT_V1, Statement, Subject

DIGEST = {"sha256": "ab" * 32}


def test_signable_bytes_are_jcs_of_a_conforming_statement() -> None:
    st = Statement((Subject("x", DIGEST),), "https://acx.dev/attestation/test/v1", {"k": 1})
    assert st.canonical_bytes() == jcs(st.to_json())
    assert Statement.from_bytes(st.canonical_bytes()) == st


@pytest.mark.parametrize(
    ("subjects", "ptype", "pred", "why"),
    [
        ((Subject("", {}),), "https://a/b", {"k": 1}, "name, URI, or digest"),
        ((Subject("x", DIGEST),), "", {"k": 1}, "Predicate type"),
            ((), "https://a/b", {"k": 1}, "subject"),
    ],
)
def test_nonconforming_v1_is_refused_before_signing(
    subjects: tuple[Subject, ...], ptype: str, pred: dict[str, int], why: str
) -> None:
    with pytest.raises(MalformedError, match=why):
        Statement(subjects, ptype, pred).canonical_bytes()


def test_empty_predicate_is_allowed_as_the_v1_spec_says() -> None:
    assert Statement((Subject("x", DIGEST),), "https://a/b", {}).conformance_errors() == []


def test_cosign_v01_statements_parse() -> None:
    doc = {
        "_type": STATEMENT_V01,
        "predicateType": "t",
        "subject": [{"name": "r", "digest": DIGEST}],
        "predicate": {},
    }
    st = Statement.from_json(doc)
    assert st.type_ == STATEMENT_V01 and st.conformance_errors() == []


@pytest.mark.parametrize(
    "doc",
    [
        {"_type": "https://example/other", "subject": [{"digest": DIGEST}], "predicateType": "t"},
        {"_type": STATEMENT_V1, "subject": [], "predicateType": "t"},
        {"_type": STATEMENT_V1, "subject": [{"digest": "x"}], "predicateType": "t"},
        {"_type": STATEMENT_V1, "subject": [{"digest": DIGEST}], "predicateType": ""},
        [1, 2],
    ],
)
def test_parse_rejects(doc: object) -> None:
    with pytest.raises(MalformedError):
        Statement.from_json(doc)
