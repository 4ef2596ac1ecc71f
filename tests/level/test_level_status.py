"""The status-list operations a revoking issuer and a verifier rely on: re-signing keeps the list's
identity and validity window, index allocation never hands out an index twice or past the end,
the cache refuses a corrupt or foreign entry, and the JSON views carry every field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acxoci.attest import statuslist, vc
from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.errors import InvalidInput, NotFound, VerificationFailed
from acxoci.level import status as st
from acxoci.level.issuers import IssuerRegistry
from tests.harness.levels import issuers_doc

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
ISSUER = "did:web:verifier.example"
LIST_ID = "https://status.example/lists/7"
VM = f"{ISSUER}#key-2"


def _bits(doc: dict[str, object]) -> bytearray:
    bits, _ = statuslist.list_bits_from_credential(doc)
    return bits


def test_set_status_flips_one_bit_and_keeps_identity_and_window() -> None:
    key = generate_ed25519()
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0,
                                valid_for=timedelta(days=7), verification_method=VM)
    later = T0 + timedelta(hours=5)
    new = st.set_status(doc, 42, key=key, now=later)
    vc.verify(new, key.public())  # re-signed by the same key
    bits = _bits(new)
    assert statuslist.get_bit(bits, 42) and sum(bin(b).count("1") for b in bits) == 1
    assert (new["id"], new["issuer"], new["proof"]["verificationMethod"]) == (LIST_ID, ISSUER, VM)
    assert new["validFrom"] == st.iso(later)
    assert new["validUntil"] == st.iso(later + timedelta(days=7))  # the window carries over
    assert new["proof"]["created"] == st.iso(later)
    cleared = st.set_status(new, 42, key=key, now=later, value=False)
    assert not any(_bits(cleared))
    explicit = st.set_status(doc, 1, key=key, now=later, valid_for=timedelta(hours=1))
    assert explicit["validUntil"] == st.iso(later + timedelta(hours=1))


def test_set_status_without_window_stays_open_ended() -> None:
    key = generate_ed25519()
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0)
    new = st.set_status(doc, 3, key=key, now=T0 + timedelta(minutes=1))
    assert "validUntil" not in new and statuslist.get_bit(_bits(new), 3)


def test_set_status_refuses_another_key() -> None:
    key = generate_ed25519()
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0)
    with pytest.raises(VerificationFailed, match=f"status list '{LIST_ID}' is not signed by this issuer key"):
        st.set_status(doc, 1, key=generate_ed25519(), now=T0)


def test_allocate_index_counts_up_and_stops_at_the_end(tmp_path: Path) -> None:
    lst = tmp_path / "sl.json"
    assert [st.allocate_index(lst, 3) for _ in range(3)] == [0, 1, 2]
    side = tmp_path / "sl.json.alloc.json"
    assert json.loads(side.read_text()) == {"next": 3}
    with pytest.raises(InvalidInput, match=r"is full \(3 entries\)"):
        st.allocate_index(lst, 3)
    assert json.loads(side.read_text()) == {"next": 3}  # a refusal allocates nothing
    assert st.allocate_index(lst, 4) == 3
    # concurrent allocators (other processes, other working directories) meet on one lock file
    assert (tmp_path / "sl.json.alloc.json.lock").exists()


def test_allocate_index_takes_a_fresh_sidecar(tmp_path: Path) -> None:
    (tmp_path / "sl.json.alloc.json").write_text('{"next": 0}')
    assert st.allocate_index(tmp_path / "sl.json", 2) == 0


@pytest.mark.parametrize("body", ['{"next": -1}', '{"next": "1"}', "[1]", '{"nxt": 1}'])
def test_allocate_index_refuses_a_malformed_sidecar(tmp_path: Path, body: str) -> None:
    lst = tmp_path / "sl.json"
    (tmp_path / "sl.json.alloc.json").write_text(body)
    with pytest.raises(InvalidInput, match="malformed allocation file"):
        st.allocate_index(lst, 10)


def test_read_list_file_errors_are_typed(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="status list not found"):
        st.read_list_file(tmp_path / "missing.json")
    arr = tmp_path / "arr.json"
    arr.write_text("[]")
    with pytest.raises(InvalidInput, match="not a JSON object"):
        st.read_list_file(arr)
    dup = tmp_path / "dup.json"
    dup.write_text('{"a": 1, "a": 2}')
    with pytest.raises(InvalidInput):
        st.read_list_file(dup)


def test_read_list_file_is_bounded(tmp_path: Path) -> None:
    at_limit = tmp_path / "at.json"
    at_limit.write_bytes(b"{}" + b" " * (st.MAX_LIST_BYTES - 2))
    assert st.read_list_file(at_limit) == {}
    over = tmp_path / "over.json"
    over.write_bytes(b"{}" + b" " * (st.MAX_LIST_BYTES - 1))
    with pytest.raises(InvalidInput):
        st.read_list_file(over)


def test_cache_round_trip_and_refusals(tmp_path: Path) -> None:
    src = "https://status.example/lists/7"
    assert st.load_cache(tmp_path, src) is None
    doc = {"id": LIST_ID}
    st.store_cache(tmp_path, st.Fetched(doc, src, T0, False))
    got = st.load_cache(tmp_path, src)
    assert got == st.Fetched(doc, src, T0, True)
    path = next(tmp_path.iterdir())
    entry = json.loads(path.read_text())
    for bad in ({**entry, "source": "https://elsewhere.example/x"}, {**entry, "document": [1]},
                {k: v for k, v in entry.items() if k != "fetchedAt"}, {**entry, "fetchedAt": "yesterday"}):
        path.write_text(json.dumps(bad))
        with pytest.raises(InvalidInput, match=f"status list cache {path} is corrupt"):
            st.load_cache(tmp_path, src)
    path.write_text("[]")
    with pytest.raises(InvalidInput, match="is corrupt"):
        st.load_cache(tmp_path, src)


def test_default_cache_dir_is_under_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert st.default_cache_dir() == tmp_path / "acxoci" / "status-lists"


def test_outcome_json_view() -> None:
    out = st.StatusOutcome("revoked", "revoked (x)", 42, "sl.json", T0, T0 - timedelta(hours=1),
                           from_cache=True, stale=True, offline=True)
    assert out.to_json() == {"state": "revoked", "reason": "revoked (x)", "index": 42, "source": "sl.json",
                             "fetchedAt": "2026-08-01T12:00:00.000Z",
                             "listValidFrom": "2026-08-01T11:00:00.000Z",
                             "fromCache": True, "stale": True, "offline": True}
    bare = st.StatusOutcome("failed", "unreachable")
    assert bare.to_json() == {"state": "failed", "reason": "unreachable", "index": None, "source": None,
                              "fetchedAt": None, "listValidFrom": None,
                              "fromCache": False, "stale": False, "offline": False}


def _listed(*, issuer: str = ISSUER, purpose: str = "revocation", valid_from: datetime = T0,
            valid_until: datetime | None = None, size_bits: int = statuslist.MIN_BITS) -> st.VerifiedList:
    bits = statuslist.new_bitstring(size_bits)
    statuslist.set_bit(bits, 5)
    return st.VerifiedList({}, LIST_ID, issuer, bits, purpose, valid_from, valid_until, "k", VM)


def _decide(listed: st.VerifiedList, index: int = 5, *, now: datetime = T0 + timedelta(hours=1),
            max_age: timedelta = timedelta(days=1), offline: bool = False,
            fetched: st.Fetched | None = None) -> st.StatusOutcome:
    entry = statuslist.StatusEntry(LIST_ID, index, "revocation", None)
    got = fetched or st.Fetched({}, "sl.json", T0 + timedelta(minutes=5), False)
    return st.decide_status(entry, listed, vc_issuer=ISSUER, now=now, max_age=max_age, allow_offline=offline,
                            fetched=got)


def test_decide_status_binds_list_to_entry_and_issuer() -> None:
    fetched_at = T0 + timedelta(minutes=5)
    for listed, reason in (
        (_listed(issuer="did:web:other.example"),
         f"status list issuer did:web:other.example is not the credential issuer {ISSUER}"),
        (_listed(purpose="suspension"), "status list purpose suspension is not revocation"),
    ):
        assert _decide(listed) == st.StatusOutcome("failed", reason, 5, "sl.json", fetched_at, T0)
    last = statuslist.MIN_BITS - 1
    assert _decide(_listed(), last).state == "valid"
    outside = _decide(_listed(), last + 1)
    assert (outside.state, outside.reason) == ("failed", f"statusListIndex {last + 1} is outside the list")


def test_decide_status_reads_the_bit() -> None:
    revoked = _decide(_listed())
    assert revoked == st.StatusOutcome("revoked", f"revoked (status list {LIST_ID} index 5)", 5, "sl.json",
                                       T0 + timedelta(minutes=5), T0)
    assert _decide(_listed(), 6).reason == f"not revoked (status list {LIST_ID} index 6)"


def test_decide_status_freshness_boundaries() -> None:
    day = timedelta(days=1)
    assert _decide(_listed(valid_from=T0), now=T0).state == "revoked"  # issued this instant: fresh
    assert _decide(_listed(), now=T0 + day).state == "revoked"  # exactly max_age old: still fresh
    assert _decide(_listed(valid_until=T0 + day), now=T0 + day).state == "revoked"  # until is inclusive
    future = _decide(_listed(valid_from=T0 + timedelta(seconds=1)), now=T0)
    assert (future.state, future.stale) == ("failed", True)
    assert future.reason == "status list validFrom 2026-08-01T12:00:01.000Z is in the future"
    expired = _decide(_listed(valid_until=T0 + timedelta(hours=1)), now=T0 + timedelta(hours=2))
    assert (expired.state, expired.reason) == ("failed", "status list expired at 2026-08-01T13:00:00.000Z")
    old = _decide(_listed(), now=T0 + day + timedelta(seconds=1))
    assert (old.state, old.stale) == ("failed", True)
    assert old.reason == "status list is stale: issued 2026-08-01T12:00:00.000Z, 86401s old > max 86400s"


def test_decide_status_offline_notes() -> None:
    late = T0 + timedelta(days=2)
    stale = _decide(_listed(), now=late, offline=True)
    assert (stale.state, stale.stale, stale.offline) == ("revoked", True, True)
    assert stale.reason.endswith("(offline allowed: status list is stale: issued 2026-08-01T12:00:00.000Z, "
                                 "172800s old > max 86400s)")
    cached = st.Fetched({}, "sl.json", T0 + timedelta(minutes=5), True)
    fresh_cached = _decide(_listed(), fetched=cached)
    assert (fresh_cached.stale, fresh_cached.offline, fresh_cached.from_cache) == (False, True, True)
    assert fresh_cached.reason.endswith("(offline: cached list fetched 2026-08-01T12:05:00.000Z)")


def test_cache_file_bound(tmp_path: Path) -> None:
    src = "sl.json"
    st.store_cache(tmp_path, st.Fetched({"id": LIST_ID}, src, T0, False))
    path = next(tmp_path.iterdir())
    body = path.read_bytes().rstrip()
    limit = st.MAX_LIST_BYTES + 4096
    path.write_bytes(body + b" " * (limit - len(body)))
    loaded = st.load_cache(tmp_path, src)
    assert loaded is not None and loaded.doc == {"id": LIST_ID}
    path.write_bytes(body + b" " * (limit + 1 - len(body)))
    with pytest.raises(InvalidInput, match="status list cache exceeds"):
        st.load_cache(tmp_path, src)


def _issuers(*keys: PrivateKey) -> IssuerRegistry:
    return IssuerRegistry.from_json(issuers_doc(*((k.public(), "example.verifier") for k in keys)))


def test_verify_status_list_returns_what_was_signed() -> None:
    old, key = generate_ed25519(), generate_ed25519()
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0,
                                valid_for=timedelta(days=7), verification_method=VM)
    # the issuer's older key comes first in the registry: every candidate is tried
    got = st.verify_status_list(doc, issuers=_issuers(old, key), now=T0 + timedelta(hours=1))
    assert got == st.VerifiedList(doc, LIST_ID, ISSUER, _bits(doc), "revocation", T0, T0 + timedelta(days=7),
                                  key.public().keyid(), VM)
    open_ended = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0)
    assert st.verify_status_list(open_ended, issuers=_issuers(key), now=T0).valid_until is None


def test_verify_status_list_refusals() -> None:
    key = generate_ed25519()
    issuers = _issuers(key)
    with pytest.raises(InvalidInput, match="status list credential is not a JSON object"):
        st.verify_status_list([1], issuers=issuers, now=T0)
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0)
    no_id = {k: v for k, v in doc.items() if k != "id"}
    with pytest.raises(InvalidInput, match="status list credential: /id: Object missing required field"):
        st.verify_status_list(no_id, issuers=issuers, now=T0)
    foreign_vm = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0,
                                       verification_method="did:web:other.example#key-1")
    with pytest.raises(VerificationFailed, match=r"is not under issuer did:web:verifier\.example"):
        st.verify_status_list(foreign_vm, issuers=issuers, now=T0)
    with pytest.raises(VerificationFailed, match="does not verify with any registered key"):
        st.verify_status_list(doc, issuers=_issuers(generate_ed25519()), now=T0)


def test_verify_status_list_refuses_an_ineligible_key() -> None:
    key = generate_ed25519()
    revoked = IssuerRegistry.from_json(issuers_doc((key.public(), "example.verifier"), status="revoked",
                                                    reason="key-compromise"))
    doc = st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0)
    with pytest.raises(VerificationFailed) as info:
        st.verify_status_list(doc, issuers=revoked, now=T0)
    assert info.value.message.startswith(f"status list issuer key {key.public().keyid()} is not eligible: ")


@pytest.mark.parametrize("field", ["validFrom", "validUntil"])
def test_verify_status_list_signed_with_a_bad_time(field: str) -> None:
    key = generate_ed25519()
    doc = statuslist.status_list_credential(list_id=LIST_ID, issuer=ISSUER,
                                            encoded_list=statuslist.encode_list(statuslist.new_bitstring()),
                                            valid_from=st.iso(T0), valid_until=st.iso(T0 + timedelta(days=1)))
    doc[field] = "yesterday"
    signed = vc.sign(doc, key, verification_method=f"{ISSUER}#key-1", created=st.iso(T0))
    with pytest.raises(InvalidInput, match=f"status list {field}"):
        st.verify_status_list(signed, issuers=_issuers(key), now=T0)


def test_check_status_failures_say_where_and_why(tmp_path: Path) -> None:
    key = generate_ed25519()
    entry = statuslist.StatusEntry(LIST_ID, 5, "revocation", None)
    missing = str(tmp_path / "gone.json")
    common = {"issuers": _issuers(key), "vc_issuer": ISSUER, "now": T0, "cache_dir": tmp_path / "cache"}
    assert st.check_status(entry, source=missing, **common) == st.StatusOutcome(
        "failed", f"{missing}: status list not found (offline use not allowed)", 5, missing)
    assert st.check_status(entry, source=missing, allow_offline=True, **common) == st.StatusOutcome(
        "failed", f"{missing}: status list not found (no cached list)", 5, missing)
    foreign = tmp_path / "foreign.json"
    other = generate_ed25519()
    st.write_json_atomic(foreign, st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=other, now=T0))
    got = st.check_status(entry, source=str(foreign), **common)
    assert got == st.StatusOutcome("failed", got.reason, 5, str(foreign), T0, None, False)
    assert got.reason.startswith("status list rejected: status list proof does not verify")
    assert not (tmp_path / "cache").exists()  # a rejected list is never cached


def test_check_status_caches_in_the_user_cache_by_default(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    key = generate_ed25519()
    lst = tmp_path / "sl.json"
    st.write_json_atomic(lst, st.create_status_list(list_id=LIST_ID, issuer=ISSUER, key=key, now=T0))
    entry = statuslist.StatusEntry(LIST_ID, 5, "revocation", None)
    out = st.check_status(entry, source=str(lst), issuers=_issuers(key), vc_issuer=ISSUER, now=T0)
    assert out.state == "valid"
    assert st.load_cache(tmp_path / "xdg" / "acxoci" / "status-lists", str(lst)) is not None
