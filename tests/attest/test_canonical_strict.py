"""attest.canonical edge by edge: the fast JCS path must agree with RFC 8785 exactly where it is
used (astral-plane keys sort by UTF-16 code units; lone surrogates are refused the same way),
and `loads_strict` refusals carry their exact reasons and inclusive size limits. Written against
the survivors of `make mutate`."""

from __future__ import annotations

import pytest

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.errors import MalformedError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"\uffff": 1, "\U00010000": 2}, '{"\U00010000":2,"\uffff":1}'),  # D800 DC00 sorts before FFFF
        ({"\uffff": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\uffff":1}'),
        ({"\ue000": 1, "\ud7ff": 2}, '{"\ud7ff":2,"\ue000":1}'),  # just outside the surrogate block
        (["\U0010ffff", "é"], '["\U0010ffff","é"]'),
    ],
)
def test_non_ascii_strings_canonicalise_as_rfc8785_says(value: object, expected: str) -> None:
    assert jcs(value) == expected.encode("utf-8")


@pytest.mark.parametrize("s", ["\ud800", "\udfff", "a\udbff", "\udc00z"])
def test_lone_surrogates_are_refused_by_the_rfc8785_rule(s: str) -> None:
    with pytest.raises(MalformedError) as info:
        jcs({"k": s})
    assert str(info.value) == "value cannot be canonicalised: input contains non-UTF-8 codepoints"


def test_size_limits_are_inclusive() -> None:
    assert loads_strict(b"12", max_bytes=2) == 12
    assert loads_strict("12", max_bytes=2) == 12
    with pytest.raises(MalformedError) as info:
        loads_strict(b"123", max_bytes=2)
    assert str(info.value) == "JSON document of 3 bytes exceeds the 2-byte limit"
    with pytest.raises(MalformedError) as info:
        loads_strict("123", max_bytes=2)
    assert str(info.value) == "JSON document of 3 characters exceeds the limit"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a":1}\xff', "JSON is not valid UTF-8 (byte 7)"),
        ("\ufeff{}", "JSON starts with a byte-order mark"),
        (b"\xef\xbb\xbf{}", "JSON starts with a byte-order mark"),
        (b"NaN", "non-standard JSON constant NaN"),
        (b"[-Infinity]", "non-standard JSON constant -Infinity"),
        (b'{"a":1,"a":2}', "duplicate JSON key 'a'"),
        (b"{", "invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ],
)
def test_loads_strict_refusals_say_why(data: bytes | str, message: str) -> None:
    with pytest.raises(MalformedError) as info:
        loads_strict(data)
    assert str(info.value) == message


def test_text_input_is_parsed_like_bytes() -> None:
    assert loads_strict('{"é":[1,true,null]}') == loads_strict('{"é":[1,true,null]}'.encode()) == {
        "é": [1, True, None]
    }


def test_digest_helpers() -> None:
    from acxoci.attest.canonical import jcs_digest, sha256_digest, sha256_hex

    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_hex(b"") == empty and sha256_digest(b"") == "sha256:" + empty
    assert jcs_digest({"b": 1, "a": [True]}) == sha256_digest(b'{"a":[true],"b":1}')


def test_number_length_bound_is_inclusive() -> None:
    at = "1." + "0" * 398  # 400 characters
    assert loads_strict(f"[{at}]".encode()) == [1.0]
    with pytest.raises(MalformedError, match="JSON number of 401 characters is too long"):
        loads_strict(f"[{at}0]".encode())
