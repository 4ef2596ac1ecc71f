"""attest.intoto strict parsing, refusal by refusal: each malformed statement is refused with a
message that names what is wrong (users and logs rely on it), and what a valid statement leaves
optional gets its documented default. Written against the survivors of `make mutate`."""

from __future__ import annotations

from typing import Any

import pytest

from acxoci.attest.canonical import jcs
from acxoci.attest.errors import MalformedError
from acxoci.attest.intoto import STATEMENT_V01, STATEMENT_V1, Statement

DIGEST = {"sha256": "ab" * 32}


def _doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"_type": STATEMENT_V1, "subject": [{"name": "a", "digest": DIGEST}],
                           "predicateType": "https://acx.dev/p/v1", "predicate": {"k": 1}}
    doc.update(over)
    return {k: v for k, v in doc.items() if v is not DROP}


DROP = object()


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "in-toto statement is not a JSON object"),
        (_doc(_type="https://in-toto.io/Statement/v9"), "in-toto statement _type is 'https://in-toto.io/"
                                                        "Statement/v9', expected one of"),
        (_doc(subject=[]), "in-toto statement has no subject"),
        (_doc(subject={"name": "a"}), "in-toto statement has no subject"),
        (_doc(subject=[{"name": "a"}]), "in-toto subject[0] has no digest"),
        (_doc(subject=[{"name": "a", "digest": DIGEST}, "x"]), "in-toto subject[1] has no digest"),
        (_doc(subject=[{"name": "a", "digest": {"sha256": 5}}]),
         "in-toto subject[0].digest must map strings to strings"),
        (_doc(subject=[{"name": 7, "digest": DIGEST}]), "in-toto subject[0].name is not a string"),
        (_doc(predicateType=""), "in-toto statement has no predicateType"),
        (_doc(predicateType=DROP), "in-toto statement has no predicateType"),
        (_doc(predicate=[1]), "in-toto predicate is not an object"),
        (_doc(predicate=None), "in-toto predicate is not an object"),
    ],
)
def test_each_refusal_names_what_is_wrong(doc: Any, message: str) -> None:
    with pytest.raises(MalformedError) as info:
        Statement.from_json(doc)
    assert str(info.value).startswith(message), str(info.value)


def test_digest_values_must_be_strings_even_when_keys_are() -> None:
    with pytest.raises(MalformedError, match="map strings to strings"):
        Statement.from_json(_doc(subject=[{"name": "a", "digest": {"sha256": None}}]))


def test_optional_members_take_their_defaults_and_unknown_members_are_kept() -> None:
    st = Statement.from_json(_doc(subject=[{"digest": DIGEST}], predicate=DROP, note={"x": 1}))
    assert st.subjects[0].name == ""
    assert st.predicate == {}
    assert st.extra == {"note": {"x": 1}}
    assert st.type_ == STATEMENT_V1


def test_from_bytes_passes_the_allowed_types_through() -> None:
    v01 = jcs(_doc(_type=STATEMENT_V01))
    assert Statement.from_bytes(v01).type_ == STATEMENT_V01
    with pytest.raises(MalformedError, match="_type"):
        Statement.from_bytes(v01, allowed_types=(STATEMENT_V1,))


def test_nonconforming_statement_message_carries_the_reference_library_reason() -> None:
    st = Statement.from_json(_doc(subject=[{"name": "", "digest": {}}]))
    problems = st.conformance_errors()
    assert len(problems) == 1, problems
    with pytest.raises(MalformedError) as info:
        st.canonical_bytes()
    assert str(info.value) == f"in-toto statement does not conform: {problems[0]}"
