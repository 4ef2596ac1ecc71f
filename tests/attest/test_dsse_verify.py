"""attest.dsse: PAE bytes, envelope parsing and which signatures `verify` looks at. The ACX rule
(index=0) checks the first signature only, so a valid second signature must not rescue an
envelope whose first one is bad; index=None tries them all, in order. Refusals say what failed.
Written against the survivors of `make mutate`."""

from __future__ import annotations

import pytest

from acxoci.attest import dsse
from acxoci.attest.errors import MalformedError, SignatureError
from acxoci.attest.keys import PrivateKey, generate_ed25519

KEY = generate_ed25519()
OTHER = generate_ed25519()
PT = "application/vnd.in-toto+json"


def _env(*keys: PrivateKey) -> dsse.Envelope:
    sigs = tuple(dsse.sign(PT, b"{}", k, k.public().keyid()).signatures[0] for k in keys)
    return dsse.Envelope(PT, b"{}", sigs)


def test_pae_is_the_dsse_v1_encoding() -> None:
    assert dsse.pae("t/é", b"ab") == b"DSSEv1 4 t/\xc3\xa9 2 ab"
    assert dsse.pae("", b"") == b"DSSEv1 0  0 "


def test_index_zero_checks_only_the_first_signature() -> None:
    env = _env(OTHER, KEY)  # first by another key, second by KEY
    with pytest.raises(SignatureError) as info:
        env.verify(KEY.public())
    assert str(info.value) == "DSSE signature does not verify with the given key"
    assert env.verify(KEY.public(), index=1).keyid == KEY.public().keyid()
    assert env.verify(KEY.public(), index=None).keyid == KEY.public().keyid()  # any, in order


def test_index_none_keeps_looking_after_a_bad_signature() -> None:
    env = _env(OTHER, OTHER, KEY)
    assert env.verify(KEY.public(), index=None).keyid == KEY.public().keyid()
    with pytest.raises(SignatureError, match=r"^DSSE signature does not verify with the given key$"):
        _env(OTHER, OTHER).verify(KEY.public(), index=None)


def test_an_index_past_the_signatures_has_nothing_to_check() -> None:
    with pytest.raises(SignatureError) as info:
        _env(KEY).verify(KEY.public(), index=1)
    assert str(info.value) == "DSSE envelope has no signature to check"
    with pytest.raises(SignatureError, match=r"^DSSE signature does not verify with the given key$"):
        _env(OTHER, KEY).verify(KEY.public(), index=0)  # only the first of the slice [0:1]


def test_envelope_json_round_trip_and_keyid_choice() -> None:
    env = _env(KEY)
    doc = env.to_json()
    assert set(doc) == {"payloadType", "payload", "signatures"}
    assert doc["signatures"][0]["keyid"] == KEY.public().keyid()
    assert dsse.Envelope.from_json(doc) == env
    bare = env.to_json(include_keyid=False)
    assert bare["signatures"] == [{"sig": doc["signatures"][0]["sig"]}]
    anon = dsse.Envelope(PT, b"{}", (dsse.Signature(None, b"\x01"),))
    assert anon.to_json()["signatures"][0]["keyid"] == ""


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "DSSE envelope is not a JSON object"),
        ({"payload": "e30=", "signatures": [{"sig": "AA=="}]}, "DSSE envelope has no payloadType"),
        ({"payloadType": "", "payload": "e30=", "signatures": [{"sig": "AA=="}]},
         "DSSE envelope has no payloadType"),
        ({"payloadType": PT, "signatures": [{"sig": "AA=="}]}, "DSSE envelope has no payload"),
        ({"payloadType": PT, "payload": 1, "signatures": [{"sig": "AA=="}]}, "DSSE envelope has no payload"),
        ({"payloadType": PT, "payload": "e30=", "signatures": []}, "DSSE envelope has no signatures"),
        ({"payloadType": PT, "payload": "e30=", "signatures": {}}, "DSSE envelope has no signatures"),
        ({"payloadType": PT, "payload": "e30=", "signatures": [{"sig": "AA=="}, {"keyid": "k"}]},
         "DSSE signatures[1] has no sig"),
        ({"payloadType": PT, "payload": "e30=", "signatures": [{"sig": "AA==", "keyid": 5}]},
         "DSSE signatures[0].keyid is not a string"),
    ],
)
def test_from_json_refusals_name_the_member(doc: object, message: str) -> None:
    with pytest.raises(MalformedError) as info:
        dsse.Envelope.from_json(doc)
    assert str(info.value) == message
