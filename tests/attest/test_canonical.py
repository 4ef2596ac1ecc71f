"""attest.canonical: JCS bytes equal the RFC 8785 reference encoder on every JSON value
(the fast stdlib path included), and strict parsing rejects what it must."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.attest.canonical import fast_path_ok, jcs, loads_strict
from acxoci.attest.errors import MalformedError

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_jcs_equals_rfc8785(value: Any) -> None:
    try:
        expected = bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, ValueError, TypeError):
        with pytest.raises(MalformedError):
            jcs(value)
        return
    assert jcs(value) == expected


@pytest.mark.parametrize(
    ("value", "fast"),
    [
        ({"b": 1, "a": [True, None, "x"]}, True),
        ({"a": 1.5}, False),  # floats: ECMAScript number form, not Python repr
        ({"a": 2**53}, False),  # beyond the safe-integer range
        ({"\U0001f600": 1}, False),  # key outside the BMP sorts differently in UTF-16
        ({"k": "é—ø"}, True),
    ],
)
def test_fast_path_boundaries(value: Any, fast: bool) -> None:
    assert fast_path_ok(value) is fast
    try:
        expected = bytes(rfc8785.dumps(value))
    except rfc8785.CanonicalizationError:  # e.g. integers outside the IEEE-754 safe range
        with pytest.raises(MalformedError):
            jcs(value)
        return
    assert jcs(value) == expected


def test_known_vector() -> None:
    assert jcs({"b": [1, "—"], "a": 1e-7, "c": 25.0}) == '{"a":1e-7,"b":[1,"—"],"c":25}'.encode()


@pytest.mark.parametrize("raw", [b'{"a":1,"a":2}', b"\xff\xfe", b'{"a": NaN}', b"\xef\xbb\xbf{}", b"[1,"])
def test_loads_strict_rejects(raw: bytes) -> None:
    with pytest.raises(MalformedError):
        loads_strict(raw)


def test_loads_strict_size_limit() -> None:
    with pytest.raises(MalformedError, match="exceeds"):
        loads_strict(b"[" + b"1," * 100 + b"1]", max_bytes=50)


@pytest.mark.parametrize(
    "raw",
    [
        "1" * 5000,  # past Python's 4,300-digit int conversion limit: must not escape as ValueError
        "[" + "9" * 4301 + "]",
        "1e400",
        "-1e400",
        "[1" + "0" * 500 + ".0]",
        "9007199254740992",
        "-9007199254740992",
        '"x\\ud800"',
        '"\\udc00y"',
        '{"\\ud800":1}',
        "[" * 257 + "]" * 257,
        "[" * 100_000 + "]" * 100_000,
        '{"a":{"b":1,"b":2}}',
    ],
)
def test_loads_strict_refuses_what_two_readers_would_read_differently(raw: str) -> None:
    with pytest.raises(MalformedError):
        loads_strict(raw.encode())


def test_loads_strict_accepts_the_edges() -> None:
    assert loads_strict(b"[9007199254740991, -9007199254740991, 1e308, -0.0]") == [
        2**53 - 1,
        -(2**53 - 1),
        1e308,
        -0.0,
    ]
    assert loads_strict(b'"\\ud83d\\ude00"') == "\U0001f600"
    assert loads_strict(("[" * 256 + "]" * 256).encode()) is not None


def test_no_json_loads_outside_canonical() -> None:
    """One strict JSON entry point: nothing in acxoci/ calls json.load(s) directly."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"\bjson\.loads?\(|\bfrom json import\b|\bimport json as\b|\b_json\.loads?\(")
    offenders = [
        f"{p.relative_to(root)}:{n}"
        for p in sorted((root / "acxoci").rglob("*.py"))
        if p.name != "canonical.py" or p.parent.name != "attest"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
