"""W3C Bitstring Status List: bit order, GZIP + multibase base64url encoding, size limits."""

from __future__ import annotations

import base64
import gzip
import io
import tracemalloc
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acxoci.attest import statuslist
from acxoci.attest.errors import MalformedError


def _gz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(data)
    return buf.getvalue()


def _u(data: bytes) -> str:
    return "u" + base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_new_list_is_16kib_of_zero_bits() -> None:
    bits = statuslist.new_bitstring()
    assert len(bits) == 16 * 1024
    assert not any(bits)
    with pytest.raises(MalformedError):
        statuslist.new_bitstring(1024)
    with pytest.raises(MalformedError):
        statuslist.new_bitstring(statuslist.MIN_BITS + 3)


def test_bits_count_msb_first_from_byte_zero() -> None:
    bits = statuslist.new_bitstring()
    statuslist.set_bit(bits, 0)
    assert bits[0] == 0x80
    statuslist.set_bit(bits, 9)
    assert bits[1] == 0x40
    statuslist.set_bit(bits, 131071)
    assert bits[-1] == 0x01
    assert statuslist.get_bit(bits, 0) and statuslist.get_bit(bits, 9) and statuslist.get_bit(bits, 131071)
    assert not statuslist.get_bit(bits, 1)
    statuslist.set_bit(bits, 0, False)
    assert bits[0] == 0 and not statuslist.get_bit(bits, 0)
    for bad in (-1, 131072):
        with pytest.raises(MalformedError):
            statuslist.get_bit(bits, bad)


def test_encode_is_gzip_base64url_multibase_and_roundtrips() -> None:
    bits = statuslist.new_bitstring()
    statuslist.set_bit(bits, 7)
    statuslist.set_bit(bits, 4242)
    enc = statuslist.encode_list(bits)
    assert enc.startswith("u") and "=" not in enc and "+" not in enc and "/" not in enc
    raw = base64.urlsafe_b64decode(enc[1:] + "=" * (-len(enc[1:]) % 4))
    assert raw[:2] == b"\x1f\x8b"  # GZIP magic
    assert gzip.decompress(raw) == bytes(bits)
    dec = statuslist.decode_list(enc)
    assert dec == bits
    assert statuslist.get_bit(dec, 4242) and not statuslist.get_bit(dec, 4243)


def test_decode_accepts_an_independently_encoded_list() -> None:
    data = bytearray(16 * 1024)
    data[2] = 0b0010_0000  # index 18
    dec = statuslist.decode_list(_u(_gz(bytes(data))))
    assert statuslist.get_bit(dec, 18)
    assert sum(statuslist.get_bit(dec, i) for i in range(64)) == 1


def test_decompression_bomb_is_refused() -> None:
    bomb = _u(_gz(b"\x00" * (20 * 1024 * 1024)))  # 20 MiB of zeros compresses to ~20 KiB
    assert len(bomb) < 100_000
    with pytest.raises(MalformedError, match="decompression bomb"):
        statuslist.decode_list(bomb)


@pytest.mark.parametrize(
    ("encoded", "match"),
    [
        ("z" + "abc", "must start with 'u'"),
        ("u" + base64.b64encode(b"\xfb\xff\xfe" * 10).decode(), "base64url"),
        ("u!!!!", "base64url"),
        (_u(b"not gzip at all"), "GZIP"),
        (_u(_gz(b"\x00" * 1024)), "below"),
        (_u(_gz(b"\x00" * 16384) + b"junk"), "trailing"),
        (_u(_gz(b"\x00" * 16384)[:-12]), "truncated"),
    ],
)
def test_decode_rejects_bad_lists(encoded: str, match: str) -> None:
    with pytest.raises(MalformedError, match=match):
        statuslist.decode_list(encoded)


def test_status_entry_parse_and_credential_shape() -> None:
    entry = statuslist.StatusEntry.from_json(
        {
            "id": "https://s.example/1#5",
            "type": "BitstringStatusListEntry",
            "statusPurpose": "revocation",
            "statusListIndex": "5",
            "statusListCredential": "https://s.example/1",
        }
    )
    assert entry.index == 5 and entry.to_json()["statusListIndex"] == "5"
    for bad in (
        {"type": "Other"},
        {
            "type": "BitstringStatusListEntry",
            "statusListCredential": "x",
            "statusListIndex": 5,
            "statusPurpose": "revocation",
        },
    ):
        with pytest.raises(MalformedError):
            statuslist.StatusEntry.from_json(bad)
    doc = statuslist.status_list_credential(
        list_id="https://s.example/1",
        issuer="did:web:s.example",
        encoded_list=statuslist.encode_list(statuslist.new_bitstring()),
        valid_from="2026-01-01T00:00:00Z",
    )
    assert doc["type"] == ["VerifiableCredential", "BitstringStatusListCredential"]
    bits, purpose = statuslist.list_bits_from_credential(doc)
    assert purpose == "revocation" and len(bits) * 8 == statuslist.MIN_BITS


@settings(max_examples=50, deadline=None)
@given(st.sets(st.integers(min_value=0, max_value=statuslist.MIN_BITS - 1), max_size=40))
def test_set_bits_survive_encoding(indexes: set[int]) -> None:
    bits = statuslist.new_bitstring()
    for i in indexes:
        statuslist.set_bit(bits, i)
    dec = statuslist.decode_list(statuslist.encode_list(bits))
    assert {i for i in indexes if statuslist.get_bit(dec, i)} == indexes
    assert sum(bin(b).count("1") for b in dec) == len(indexes)


def test_clearing_a_bit_keeps_its_neighbours() -> None:
    bits = statuslist.new_bitstring()
    for i in (0, 1, 7):
        statuslist.set_bit(bits, i)
    statuslist.set_bit(bits, 1, False)
    assert bits[0] == 0x81 and statuslist.get_bit(bits, 0) and statuslist.get_bit(bits, 7)


_ENTRY = {
    "id": "https://s.example/1#5",
    "type": "BitstringStatusListEntry",
    "statusPurpose": "revocation",
    "statusListIndex": "5",
    "statusListCredential": "https://s.example/1",
}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"type": "StatusList2021Entry"}, "credentialStatus is not a BitstringStatusListEntry"),
        ({"statusListCredential": ""}, "credentialStatus.statusListCredential is missing"),
        ({"statusListCredential": 7}, "credentialStatus.statusListCredential is missing"),
        ({"statusListIndex": "abc"}, "credentialStatus.statusListIndex 'abc' is not a base-10 string"),
        ({"statusListIndex": "-1"}, "is not a base-10 string"),
        ({"statusListIndex": "1" * 13}, "is not a base-10 string"),
        ({"statusPurpose": ""}, "credentialStatus.statusPurpose is missing"),
    ],
)
def test_status_entry_refusals(change: dict[str, object], match: str) -> None:
    # every field is otherwise valid: each check must refuse on its own, with a typed error
    with pytest.raises(MalformedError, match=match):
        statuslist.StatusEntry.from_json({**_ENTRY, **change})


def test_status_entry_fields() -> None:
    entry = statuslist.StatusEntry.from_json({**_ENTRY, "statusListIndex": "9" * 12})
    assert entry == statuslist.StatusEntry("https://s.example/1", 999_999_999_999, "revocation",
                                           "https://s.example/1#5")
    assert statuslist.StatusEntry.from_json({**_ENTRY, "id": 5}).entry_id is None
    assert "id" not in statuslist.StatusEntry.from_json({**_ENTRY, "id": 5}).to_json()
    with pytest.raises(MalformedError):
        statuslist.StatusEntry.from_json(["BitstringStatusListEntry"])


def test_size_bounds_are_inclusive() -> None:
    assert len(statuslist.new_bitstring(statuslist.MAX_BITS)) == statuslist.MAX_BITS // 8
    with pytest.raises(MalformedError, match="exceeds"):
        statuslist.new_bitstring(statuslist.MAX_BITS + 8)
    with pytest.raises(MalformedError, match="below the 131072-bit minimum"):
        statuslist.encode_list(bytearray(statuslist.MIN_BITS // 8 - 1))
    with pytest.raises(MalformedError, match="status list of 131064 bits is below"):
        statuslist.decode_list(_u(_gz(bytes(statuslist.MIN_BITS // 8 - 1))))


def test_index_must_be_a_true_integer() -> None:
    bits = statuslist.new_bitstring()
    for bad in (True, False, 1.0, "1"):
        with pytest.raises(MalformedError, match=r"is outside 0\.\.131071"):
            statuslist.get_bit(bits, bad)  # type: ignore[arg-type]


def test_encoding_is_deterministic_gzip_with_zero_mtime() -> None:
    bits = statuslist.new_bitstring()
    statuslist.set_bit(bits, 3)
    expected = "u" + base64.urlsafe_b64encode(_gz(bytes(bits))).decode().rstrip("=")
    assert statuslist.encode_list(bits) == expected
    raw = base64.urlsafe_b64decode(expected[1:] + "=" * (-len(expected[1:]) % 4))
    assert raw[4:8] == b"\x00\x00\x00\x00"  # the GZIP header's MTIME field


def test_decode_max_bits_is_exact() -> None:
    data = bytes(statuslist.MIN_BITS // 8)
    assert len(statuslist.decode_list(_u(_gz(data)), max_bits=statuslist.MIN_BITS)) == len(data)
    with pytest.raises(MalformedError, match="decompression bomb"):
        statuslist.decode_list(_u(_gz(data + b"\x00")), max_bits=statuslist.MIN_BITS)


def test_decode_takes_gzip_only() -> None:
    data = bytes(statuslist.MIN_BITS // 8)
    with pytest.raises(MalformedError, match="is not GZIP data"):
        statuslist.decode_list(_u(zlib.compress(data)))  # a zlib stream, not a GZIP container


def test_decode_length_limit_is_inclusive() -> None:
    at_limit = "u" + "A" * (statuslist.MAX_ENCODED_CHARS - 1)
    with pytest.raises(MalformedError) as info:
        statuslist.decode_list(at_limit)
    assert "exceeds" not in str(info.value)
    with pytest.raises(MalformedError, match="exceeds"):
        statuslist.decode_list(at_limit + "A")


def test_four_character_body_is_not_a_padding_error() -> None:
    with pytest.raises(MalformedError, match="is not GZIP data"):
        statuslist.decode_list("uAAAA")


def test_inflation_is_capped_while_decoding() -> None:
    # 128 MiB of zeros in ~130 KiB: the decoder stops at the cap instead of inflating it all
    comp = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    chunk = bytes(1024 * 1024)
    bomb = b"".join(comp.compress(chunk) for _ in range(128)) + comp.flush()
    encoded = _u(bomb)
    tracemalloc.start()
    try:
        with pytest.raises(MalformedError, match="decompression bomb"):
            statuslist.decode_list(encoded)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, peak


def test_status_list_credential_shape() -> None:
    doc = statuslist.status_list_credential(list_id="https://s.example/1", issuer="did:web:s.example",
                                            encoded_list="uAAAA", valid_from="2026-01-01T00:00:00Z",
                                            valid_until="2026-02-01T00:00:00Z")
    assert doc == {
        "@context": ["https://www.w3.org/ns/credentials/v2"],
        "id": "https://s.example/1",
        "type": ["VerifiableCredential", "BitstringStatusListCredential"],
        "issuer": "did:web:s.example",
        "validFrom": "2026-01-01T00:00:00Z",
        "validUntil": "2026-02-01T00:00:00Z",
        "credentialSubject": {"id": "https://s.example/1#list", "type": "BitstringStatusList",
                              "statusPurpose": "revocation", "encodedList": "uAAAA"},
    }
    assert "validUntil" not in statuslist.status_list_credential(
        list_id="x", issuer="y", encoded_list="uAAAA", valid_from="2026-01-01T00:00:00Z")


def test_list_bits_shape_checks() -> None:
    good = statuslist.status_list_credential(list_id="x", issuer="y",
                                             encoded_list=statuslist.encode_list(statuslist.new_bitstring()),
                                             valid_from="2026-01-01T00:00:00Z")
    for change, match in (
        ({"type": ["VerifiableCredential"]}, "type does not include BitstringStatusListCredential"),
        ({"type": "BitstringStatusListCredential"}, "type does not include"),
        ({"credentialSubject": {**good["credentialSubject"], "type": "StatusList2021"}},
         "credentialSubject is not a BitstringStatusList"),
        ({"credentialSubject": [good["credentialSubject"]]}, "is not a BitstringStatusList"),
        ({"credentialSubject": {**good["credentialSubject"], "statusPurpose": 1}},
         "statusPurpose is missing"),
        ({"credentialSubject": {**good["credentialSubject"], "encodedList": 1}}, "encodedList is missing"),
    ):
        with pytest.raises(MalformedError, match=match):
            statuslist.list_bits_from_credential({**good, **change})
    with pytest.raises(MalformedError, match="status list credential is not a JSON object"):
        statuslist.list_bits_from_credential([good])


def test_entry_json_carries_its_id() -> None:
    entry = statuslist.StatusEntry("https://s.example/1", 5, "revocation", "https://s.example/1#5")
    assert entry.to_json() == {"id": "https://s.example/1#5", "type": "BitstringStatusListEntry",
                               "statusPurpose": "revocation", "statusListIndex": "5",
                               "statusListCredential": "https://s.example/1"}
