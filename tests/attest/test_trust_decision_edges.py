"""`attest.trustdecision` branch by branch: the facts `signer_facts` reduces an entry to (each
field), the window boundaries (`notBefore`/`notAfter` inclusive, five minutes of clock skew), the
key status rules, every reason text in full as a user reads it, the effective minimum per command
and the whole command × minimum × standing grid of `decide` against literal exit codes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest

from acxoci.attest.trustdecision import (
    COMMANDS,
    MINIMUMS,
    PUBLISHER_RE,
    Command,
    Decision,
    Minimum,
    SignerFacts,
    decide,
    effective_minimum,
    key_status,
    publisher_covers,
    signer_facts,
    standing,
)

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
NB = datetime(2026, 1, 1, tzinfo=UTC)
NA = datetime(2027, 1, 1, tzinfo=UTC)
PUB = "io.github.example-acx"
OTHER = "io.github.someone-else"


@dataclass(frozen=True)
class Entry:
    """A registry entry as the table reads it (the KeyEntry protocol)."""

    publisher_id: str = PUB
    status: str = "active"
    not_before: datetime = NB
    not_after: datetime = NA
    revoked_at: datetime | None = None
    revocation_reason: str | None = None


def facts(
    entry: Entry | None,
    signed: datetime | None = NOW - timedelta(days=1),
    *,
    claimed: str = PUB,
    now: datetime = NOW,
    independent: datetime | None = None,
    proof_future: bool = False,
) -> SignerFacts:
    text = None if signed is None else signed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return signer_facts(
        entry,
        claimed_publisher=claimed,
        signed_at=signed,
        signed_at_text=text,
        now=now,
        independent_time=independent,
        proof_future=proof_future,
    )




# ---- signer_facts -----------------------------------------------------------------------------


def test_facts_of_an_unknown_key() -> None:
    when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert facts(None, when) == SignerFacts("unknown", False, "inside", PUB, None, "2026-03-04T05:06:07Z")
    assert facts(None, None) == SignerFacts("unknown", False, "missing", PUB, None, None)
    # an unknown key's window is "inside" whenever a signedAt exists, however far off
    assert facts(None, NOW + timedelta(days=400)).window == "inside"


def test_facts_of_a_registered_key_field_for_field(tokyo: None) -> None:
    east = timezone(timedelta(hours=3))
    e = Entry(
        status="revoked",
        revocation_reason="superseded",
        not_before=datetime(2026, 1, 1, 3, tzinfo=east),
        not_after=datetime(2027, 1, 1, tzinfo=UTC),
        revoked_at=datetime(2026, 6, 1, 3, tzinfo=east),
    )
    signed = datetime(2026, 5, 1, tzinfo=UTC)
    logged = datetime(2026, 5, 1, 0, 10, tzinfo=UTC)
    got = facts(e, signed, claimed=PUB + "/agents", independent=logged, proof_future=True)
    assert got == SignerFacts(
        status="superseded",
        publisher_match=True,
        window="inside",
        claimed_publisher=PUB + "/agents",
        registered_publisher=PUB,
        signed_at="2026-05-01T00:00:00Z",
        not_before="2026-01-01T00:00:00Z",
        not_after="2027-01-01T00:00:00Z",
        revoked_at="2026-06-01T00:00:00Z",
        independent_time="2026-05-01T00:10:00Z",
        proof_future=True,
        signed_after_revocation=False,
        now="2026-11-30T12:00:00Z",
    )
    plain = facts(Entry())
    assert (plain.revoked_at, plain.independent_time, plain.proof_future, plain.signed_after_revocation) == (
        None,
        None,
        False,
        False,
    )


def test_signed_after_revocation_is_at_or_after_revoked_at() -> None:
    at = datetime(2026, 6, 1, tzinfo=UTC)
    e = Entry(status="revoked", revocation_reason="retired", revoked_at=at)
    assert facts(e, at).signed_after_revocation is True
    assert facts(e, at + timedelta(seconds=1)).signed_after_revocation is True
    assert facts(e, at - timedelta(seconds=1)).signed_after_revocation is False
    assert facts(e, None).signed_after_revocation is False
    assert facts(Entry(status="revoked"), at).signed_after_revocation is False  # no revokedAt
    # the independent time, not signedAt, is the time judged
    assert facts(e, at - timedelta(days=1), independent=at).signed_after_revocation is True
    assert facts(e, at, independent=at - timedelta(days=1)).signed_after_revocation is False


# ---- the validity window ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "window"),
    [
        (NB, "inside"),
        (NB - timedelta(seconds=1), "before"),
        (NB + timedelta(seconds=1), "inside"),
        (None, "missing"),
    ],
)
def test_window_lower_edge(when: datetime | None, window: str) -> None:
    assert facts(Entry(), when).window == window


@pytest.mark.parametrize(
    ("when", "window"),
    [
        (NOW + timedelta(minutes=5), "inside"),
        (NOW + timedelta(minutes=5, seconds=1), "future"),
        (NOW - timedelta(days=3000), "before"),
    ],
)
def test_window_clock_skew_is_five_minutes(when: datetime, window: str) -> None:
    assert facts(Entry(), when).window == window


def test_window_upper_edge_and_inverted() -> None:
    old_now = datetime(2027, 6, 1, tzinfo=UTC)  # now past notAfter: still judged on the window
    assert facts(Entry(), NA, now=old_now).window == "inside"
    assert facts(Entry(), NA + timedelta(seconds=1), now=old_now).window == "after"
    inverted = Entry(not_before=NA, not_after=NB)
    assert facts(inverted, NOW).window == "inverted"
    assert facts(inverted, None).window == "inverted"  # inverted is reported before a missing time
    assert facts(Entry(not_before=NB, not_after=NB), NB).window == "inside"  # a one-instant window
    assert facts(Entry(), NOW + timedelta(days=40)).window == "future"  # future before "after"


def test_window_is_judged_at_the_independent_time() -> None:
    assert facts(Entry(), NB - timedelta(days=1), independent=NB).window == "inside"
    assert facts(Entry(), NB, independent=NB - timedelta(days=1)).window == "before"


# ---- key status -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "signed", "status"),
    [
        (None, NOW, "unknown"),
        (Entry(), NOW, "active"),
        (Entry(status="expired"), NOW, "expired"),
        (Entry(not_after=NOW - timedelta(seconds=1)), NOW, "expired"),
        (Entry(not_after=NOW), NOW, "active"),  # notAfter itself is still valid
        (
            Entry(status="revoked", revocation_reason="key-compromise", revoked_at=NOW),
            NOW - timedelta(days=9),
            "compromised",
        ),
        (Entry(status="revoked", revocation_reason="key-compromise"), None, "compromised"),
        (
            Entry(status="revoked", revocation_reason="superseded", revoked_at=NOW),
            NOW - timedelta(seconds=1),
            "superseded",
        ),
        (
            Entry(status="revoked", revocation_reason="retired", revoked_at=NOW),
            NOW - timedelta(seconds=1),
            "retired",
        ),
        (Entry(status="revoked", revocation_reason="retired", revoked_at=NOW), NOW, "revoked"),
        (Entry(status="revoked", revocation_reason="superseded"), NOW, "revoked"),
        (Entry(status="revoked", revocation_reason="superseded", revoked_at=NOW), None, "revoked"),
        (Entry(status="revoked", revoked_at=NOW), NOW - timedelta(days=1), "revoked"),
        (
            Entry(status="revoked", revocation_reason="lost", revoked_at=NOW),
            NOW - timedelta(days=1),
            "revoked",
        ),
        (Entry(status="revoked", not_after=NOW - timedelta(days=1)), NOW, "revoked"),  # revoked beats expired
    ],
)
def test_key_status(entry: Entry | None, signed: datetime | None, status: str) -> None:
    assert key_status(entry, signed_at=signed, now=NOW) == status
    assert facts(entry, signed).status == status


# ---- publishers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pid", ["a.b", "io.github.example-acx", "a.b/c", "a.b/c/d", "a.b.c/d_e.f-g", "a1.b2", "a-b.c", "x.y/0"]
)
def test_publisher_ids_that_are_well_formed(pid: str) -> None:
    assert PUBLISHER_RE.fullmatch(pid)
    assert publisher_covers(pid, pid)


@pytest.mark.parametrize(
    "pid",
    [
        "a",
        "A.b",
        "a.B",
        "-a.b",
        "a-.b",
        "a.b/",
        "a.b//c",
        "a.b/..",
        "a.b/-x",
        "a..b",
        ".a.b",
        "a.b/C",
        "a.b\x00",
        "a.b/\u0435",
        "",
    ],
)
def test_publisher_ids_that_are_not(pid: str) -> None:
    assert not PUBLISHER_RE.fullmatch(pid)
    assert not publisher_covers(pid, pid)


@pytest.mark.parametrize(
    ("registered", "claimed", "covered"),
    [
        (PUB, PUB, True),
        (PUB, PUB + "/agents", True),
        (PUB, PUB + "/agents/deeper", True),
        (PUB + "/agents", PUB, False),  # a parent
        (PUB, PUB + "x", False),  # a sibling sharing the prefix
        (PUB, PUB + ".x", False),
        (PUB, OTHER, False),
        (PUB, PUB + "/..", False),
        (PUB, PUB + "/A", False),
        ("IO.github.example-acx", "IO.github.example-acx/x", False),
    ],
)
def test_publisher_covers(registered: str, claimed: str, covered: bool) -> None:
    assert publisher_covers(registered, claimed) is covered
    assert facts(Entry(publisher_id=registered), claimed=claimed).publisher_match is covered


# ---- standing: every reason in full ------------------------------------------------------------

SIGNED = NOW - timedelta(days=1)
S = "2026-11-29T12:00:00Z"


def _st(entry: Entry | None, signed: datetime | None = SIGNED, **kw: object) -> tuple[str, str]:
    return standing(facts(entry, signed, **kw))  # type: ignore[arg-type]


def test_standing_rejected_reasons() -> None:
    comp = Entry(status="revoked", revocation_reason="key-compromise", publisher_id=OTHER)
    assert _st(comp) == ("rejected", "signer key is revoked for key-compromise: never trusted")
    assert _st(Entry(status="revoked", publisher_id=OTHER)) == ("rejected", "signer key is revoked")
    after = Entry(status="revoked", revocation_reason="retired", revoked_at=SIGNED)
    assert _st(after) == (
        "rejected",
        f"signer key is revoked since {S}; the artifact says it was signed after that",
    )


def test_standing_unvouched_reasons() -> None:
    assert _st(None) == ("unvouched", "signer key is not in the trust registry")
    assert _st(None, None) == ("unvouched", "signer key is not in the trust registry")
    assert _st(Entry(publisher_id=OTHER, not_before=NA, not_after=NB)) == (
        "unvouched",
        f"signer key is registered to publisher {OTHER}, not {PUB}",
    )


def test_standing_portable_reasons_of_an_active_key() -> None:
    assert _st(Entry(not_before=NA, not_after=NB)) == ("portable", "registry key validity window is inverted")
    assert _st(Entry(), proof_future=True) == ("portable", "namespace proof verifiedAt is in the future")
    ahead = NOW + timedelta(hours=1)
    assert _st(Entry(), ahead) == (
        "portable",
        "artifact signed at 2026-11-30T13:00:00Z, later than the time of verification (2026-11-30T12:00:00Z)",
    )
    assert _st(Entry(), None) == ("portable", "signedAt is missing or not RFC 3339")
    early = datetime(2025, 12, 31, tzinfo=UTC)
    assert _st(Entry(), early) == (
        "portable",
        "artifact signed at 2025-12-31T00:00:00Z, before the key's validity window "
        "(2026-01-01T00:00:00Z): re-register the key with `acx key trust --not-before "
        "2025-12-31T00:00:00Z` or sign again",
    )
    end = datetime(2026, 12, 1, tzinfo=UTC)
    assert _st(Entry(not_after=end), end + timedelta(seconds=1), now=end + timedelta(seconds=1)) == (
        "portable",
        "artifact signed at 2026-12-01T00:00:01Z, after the key's validity window (2026-12-01T00:00:00Z)",
    )
    assert _st(Entry()) == ("trusted", f"signer key is active and registered to {PUB}")
    assert _st(Entry(), claimed=PUB + "/x") == ("trusted", f"signer key is active and registered to {PUB}")


def test_standing_order_of_the_portable_checks() -> None:
    """Inverted, then a future proof, then a future signing time: the first that holds is the reason."""
    inverted = Entry(not_before=NA, not_after=NB)
    assert (
        _st(inverted, NOW + timedelta(hours=1), proof_future=True)[1]
        == "registry key validity window is inverted"
    )
    assert (
        _st(Entry(), NOW + timedelta(hours=1), proof_future=True)[1]
        == "namespace proof verifiedAt is in the future"
    )


@pytest.mark.parametrize("status", ["expired", "superseded", "retired"])
def test_standing_of_keys_that_need_an_independent_time(status: str) -> None:
    revoked_at = datetime(2026, 11, 30, tzinfo=UTC)
    e = {
        "expired": Entry(status="expired"),
        "superseded": Entry(status="revoked", revocation_reason="superseded", revoked_at=revoked_at),
        "retired": Entry(status="revoked", revocation_reason="retired", revoked_at=revoked_at),
    }[status]
    assert _st(e) == (
        "portable",
        f"signer key is {status}; its signedAt ({S}) is self-asserted and no "
        "independent timestamp backs it, so it is not trusted",
    )
    logged = datetime(2026, 11, 29, 12, 30, tzinfo=UTC)
    assert _st(e, independent=logged) == (
        "trusted",
        f"signer key was {status} but an independent timestamp (2026-11-29T12:30:00Z) puts the "
        "signature inside its validity window",
    )
    early = datetime(2025, 6, 1, tzinfo=UTC)
    assert _st(e, SIGNED, independent=early) == (
        "portable",
        "artifact signed at 2025-06-01T00:00:00Z, before the key's validity window "
        "(2026-01-01T00:00:00Z): re-register the key with `acx key trust --not-before "
        "2025-06-01T00:00:00Z` or sign again",
    )
    assert _st(e, early) == (
        "portable",
        "artifact signed at 2025-06-01T00:00:00Z, before the key's validity window "
        "(2026-01-01T00:00:00Z): re-register the key with `acx key trust --not-before "
        "2025-06-01T00:00:00Z` or sign again",
    )
    if status == "expired":
        assert _st(e, None) == ("portable", "signedAt is missing or not RFC 3339")


def test_standing_of_an_expired_key_signed_after_its_window() -> None:
    e = Entry(not_after=datetime(2026, 6, 1, tzinfo=UTC))  # expired by the clock: now > notAfter
    late = datetime(2026, 7, 1, tzinfo=UTC)
    assert _st(e, late) == (
        "portable",
        "artifact signed at 2026-07-01T00:00:00Z, after the key's validity window (2026-06-01T00:00:00Z)",
    )
    assert _st(e, SIGNED, independent=late) == (
        "portable",
        "artifact signed at 2026-07-01T00:00:00Z, after the key's validity window (2026-06-01T00:00:00Z)",
    )
    assert _st(e, late - timedelta(days=60)) == (
        "portable",
        "signer key is expired; its signedAt (2026-05-02T00:00:00Z) is self-asserted and no "
        "independent timestamp backs it, so it is not trusted",
    )


def test_standing_of_an_active_key_judged_at_its_independent_time() -> None:
    early = datetime(2025, 6, 1, tzinfo=UTC)
    assert _st(Entry(), SIGNED, independent=early)[1].startswith(
        "artifact signed at 2025-06-01T00:00:00Z, before"
    )
    assert _st(Entry(), early, independent=SIGNED) == (
        "trusted",
        f"signer key is active and registered to {PUB}",
    )


# ---- effective minimum and decide --------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "given", "enforced"),
    [
        ("verify", "none", "trusted"),
        ("verify", "portable", "trusted"),
        ("verify", "trusted", "trusted"),
        ("install", "none", "portable"),
        ("install", "portable", "portable"),
        ("install", "trusted", "trusted"),
        ("release", "none", "portable"),
        ("release", "portable", "portable"),
        ("release", "trusted", "trusted"),
        ("level verify", "none", "portable"),
        ("level verify", "portable", "portable"),
        ("level verify", "trusted", "trusted"),
        ("cartridge verify", "none", "none"),
        ("cartridge verify", "portable", "portable"),
        ("cartridge verify", "trusted", "trusted"),
        ("workflow ready", "none", "none"),
        ("workflow ready", "portable", "portable"),
        ("workflow ready", "trusted", "trusted"),
    ],
)
def test_effective_minimum(command: Command, given: Minimum, enforced: Minimum) -> None:
    assert effective_minimum(command, given) == enforced


ROWS: dict[str, SignerFacts] = {
    "trusted": facts(Entry()),
    "portable": facts(Entry(status="expired")),
    "unvouched": facts(None),
    "rejected": facts(Entry(status="revoked")),
}
#: exit code per (command, minimum) for each standing, written out rather than derived.
GRID: dict[str, dict[str, tuple[int, int, int]]] = {  # (none, portable, trusted)
    "trusted": {c: (0, 0, 0) for c in COMMANDS},
    "portable": {
        "cartridge verify": (0, 0, 8),
        "verify": (1, 1, 1),
        "install": (0, 0, 8),
        "workflow ready": (0, 0, 1),
        "level verify": (0, 0, 1),
        "release": (0, 0, 9),
    },
    "unvouched": {
        "cartridge verify": (0, 0, 8),
        "verify": (1, 1, 1),
        "install": (8, 8, 8),
        "workflow ready": (0, 1, 1),
        "level verify": (1, 1, 1),
        "release": (9, 9, 9),
    },
    "rejected": {
        "cartridge verify": (1, 1, 1),
        "verify": (1, 1, 1),
        "install": (8, 8, 8),
        "workflow ready": (1, 1, 1),
        "level verify": (1, 1, 1),
        "release": (9, 9, 9),
    },
}


@pytest.mark.parametrize("st", list(ROWS))
@pytest.mark.parametrize("command", COMMANDS)
def test_decide_grid(st: str, command: Command) -> None:
    f = ROWS[st]
    want_standing, want_reason = standing(f)
    assert want_standing == st
    for minimum, code in zip(MINIMUMS, GRID[st][command], strict=True):
        d = decide(f, minimum=minimum, command=command)
        assert d == Decision(st, code == 0, code, want_reason, f), (command, minimum)


def test_trust_labels() -> None:
    label = {st: decide(f, minimum="none", command="cartridge verify").trust_label for st, f in ROWS.items()}
    assert label == {
        "trusted": "trusted",
        "portable": "portable",
        "unvouched": "portable",
        "rejected": "tampered",
    }


def test_an_active_key_signed_in_the_skew_after_its_window_is_portable() -> None:
    """notAfter is now, the signature is dated two minutes later (inside the clock skew, so not
    "future"): the key is still active, but the signature lies after its window."""
    e = Entry(not_after=NOW)
    assert key_status(e, signed_at=NOW + timedelta(minutes=2), now=NOW) == "active"
    assert _st(e, NOW + timedelta(minutes=2)) == (
        "portable",
        "artifact signed at 2026-11-30T12:02:00Z, after the key's validity window (2026-11-30T12:00:00Z)",
    )
    assert _st(e, NOW) == ("trusted", f"signer key is active and registered to {PUB}")
