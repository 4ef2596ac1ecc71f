"""The one trust-decision table: signer facts × requested minimum × command → verdict, exit, reason.

Pure (no I/O, no clock): callers gather the facts (registry entry, claimed publisher, signing time,
`now`) and every command that decides trust (`cartridge verify`, `verify`, `install`,
`workflow ready`, `level verify`, `release` read-back) asks `decide`. docs/trust-decisions.md is
the table in prose; docs/decisions/0013-one-trust-table.md says why it looks like this.

Rules in one line each:
- a revoked or compromised key is rejected everywhere (never better than an unknown key);
- an unknown key, or a key the registry ties to another publisher, is *unvouched*: the signature
  holds but nobody vouches for the publisher claim, so no command that accepts a publisher
  claim (`verify`, `install`, `workflow ready --trust-registry`, `level verify` issuers, `release`)
  lets it through;
- a superseded, retired or expired key gives `trusted` only when an independent time (a verified
  transparency-log or RFC 3161 timestamp) puts the signature inside its window, else `portable`:
  a self-asserted `signedAt` can be backdated (decision 0014);
- an active key signed outside its validity window is `portable`, and the reason names the date
  to pass to `acx key trust --not-before`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

#: A reverse-DNS publisher id with optional `/sub` (or `.sub`) namespaces, lower case ASCII only.
PUBLISHER_RE = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*(?:[./][a-z0-9][a-z0-9._-]*)*$"
)

KeyStatus = Literal["active", "expired", "superseded", "retired", "revoked", "compromised", "unknown"]
Minimum = Literal["none", "portable", "trusted"]
Command = Literal["cartridge verify", "verify", "install", "workflow ready", "level verify", "release"]
Standing = Literal["trusted", "portable", "unvouched", "rejected"]
Window = Literal["inside", "before", "after", "missing", "inverted", "future"]

KEY_STATUSES: tuple[KeyStatus, ...] = ("active", "expired", "superseded", "retired", "revoked",
                                       "compromised", "unknown")
MINIMUMS: tuple[Minimum, ...] = ("none", "portable", "trusted")
COMMANDS: tuple[Command, ...] = ("cartridge verify", "verify", "install", "workflow ready", "level verify",
                                 "release")

EXIT_OK = 0
EXIT_REJECTED = 1  # VerificationFailed: the signature or the signer must not be believed
EXIT_REFUSED = 8  # RefusedByPolicy: valid, but below what was asked for
EXIT_BLOCKED = 9  # Blocked: a release whose acceptance read-back was refused waits for a person

#: Per command: (exit when the signer is rejected, exit when it is below the minimum).
FAIL_EXITS: dict[Command, tuple[int, int]] = {
    "cartridge verify": (EXIT_REJECTED, EXIT_REFUSED),
    "verify": (EXIT_REJECTED, EXIT_REJECTED),
    "install": (EXIT_REFUSED, EXIT_REFUSED),
    "workflow ready": (EXIT_REJECTED, EXIT_REJECTED),  # NOT READY
    "level verify": (EXIT_REJECTED, EXIT_REJECTED),
    "release": (EXIT_BLOCKED, EXIT_BLOCKED),  # the verify effect is blocked (validation_failed)
}

# One reason per fact; every command prints exactly these texts.
R_TRUSTED = "signer key is active and registered to {publisher}"
R_TRUSTED_TIMESTAMPED = ("signer key was {status} but an independent timestamp ({when}) puts the signature "
                         "inside its validity window")
R_UNKNOWN = "signer key is not in the trust registry"
R_FOREIGN = "signer key is registered to publisher {registered}, not {claimed}"
R_COMPROMISED = "signer key is revoked for key-compromise: never trusted"
R_REVOKED = "signer key is revoked"
R_REVOKED_AFTER = "signer key is revoked since {revoked_at}; the artifact says it was signed after that"
R_SELF_ASSERTED = ("signer key is {status}; its signedAt ({signed_at}) is self-asserted and no independent "
                   "timestamp backs it, so it is not trusted")
R_BEFORE = ("artifact signed at {signed_at}, before the key's validity window ({not_before}): re-register "
            "the key with `acx key trust --not-before {signed_at}` or sign again")
R_AFTER = "artifact signed at {signed_at}, after the key's validity window ({not_after})"
R_MISSING = "signedAt is missing or not RFC 3339"
R_FUTURE = "artifact signed at {signed_at}, later than the time of verification ({now})"
#: How far a signing time may lie ahead of `now` (clocks of signer and verifier differ a little).
MAX_CLOCK_SKEW = timedelta(minutes=5)
R_INVERTED = "registry key validity window is inverted"
R_PROOF_FUTURE = "namespace proof verifiedAt is in the future"


class KeyEntry(Protocol):
    """The registry-entry fields the table reads (attest.trust.TrustKey has them)."""

    @property
    def publisher_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def not_before(self) -> datetime: ...
    @property
    def not_after(self) -> datetime: ...
    @property
    def revoked_at(self) -> datetime | None: ...
    @property
    def revocation_reason(self) -> str | None: ...


@dataclass(frozen=True)
class SignerFacts:
    """What is known about one verified signature's signer, reduced to the table's inputs."""

    status: KeyStatus
    publisher_match: bool
    window: Window
    claimed_publisher: str = ""
    registered_publisher: str | None = None
    signed_at: str | None = None
    not_before: str | None = None
    not_after: str | None = None
    revoked_at: str | None = None
    independent_time: str | None = None
    proof_future: bool = False
    signed_after_revocation: bool = False
    now: str | None = None


@dataclass(frozen=True)
class Decision:
    """The table's answer: what the signer earns, whether the command accepts it, exit code, reason."""

    standing: Standing
    accepted: bool
    exit_code: int
    reason: str
    facts: SignerFacts

    @property
    def trust_label(self) -> Literal["trusted", "portable", "tampered"]:
        """The SPEC trust taxonomy word for the standing (unvouched shows as portable)."""
        if self.standing == "rejected":
            return "tampered"
        return "trusted" if self.standing == "trusted" else "portable"


def _fmt(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _window(entry: KeyEntry, when: datetime | None, now: datetime) -> Window:
    if entry.not_before > entry.not_after:
        return "inverted"
    if when is None:
        return "missing"
    if when > now + MAX_CLOCK_SKEW:  # dated ahead of now: the key (or its window) is used before its time
        return "future"
    if when < entry.not_before:
        return "before"
    if when > entry.not_after:
        return "after"
    return "inside"


def key_status(entry: KeyEntry | None, *, signed_at: datetime | None, now: datetime) -> KeyStatus:
    """The key's status for this signature: a non-compromise revocation the artifact itself dates
    after `revokedAt` (or with no `revokedAt`) is plain `revoked`."""
    if entry is None:
        return "unknown"
    if entry.status == "revoked":
        reason = entry.revocation_reason
        if reason == "key-compromise":
            return "compromised"
        if reason in ("superseded", "retired") and entry.revoked_at is not None and signed_at is not None \
                and signed_at < entry.revoked_at:
            return "superseded" if reason == "superseded" else "retired"
        return "revoked"
    if entry.status == "expired" or now > entry.not_after:
        return "expired"
    return "active"


def publisher_covers(registered: str, claimed: str) -> bool:
    """A key registered to a publisher may sign for it and its `/sub` namespaces (the namespace
    proof is of the root); never for a sibling or a parent. A claim that is not a well-formed
    publisher id (`/..`, empty or upper-case segments, NUL, non-ASCII look-alikes) is covered by
    no key: its sub-namespace would be whatever a later reader makes of it."""
    if not PUBLISHER_RE.fullmatch(claimed) or not PUBLISHER_RE.fullmatch(registered):
        return False
    return claimed == registered or claimed.startswith(registered + "/")


def signer_facts(entry: KeyEntry | None, *, claimed_publisher: str, signed_at: datetime | None,
                 signed_at_text: str | None, now: datetime, independent_time: datetime | None = None,
                 proof_future: bool = False) -> SignerFacts:
    """Reduce a registry entry (None: not in the registry) and the signature's claims to facts."""
    when = independent_time if independent_time is not None else signed_at  # the best time we have
    status = key_status(entry, signed_at=when, now=now)
    if entry is None:
        return SignerFacts(status, False, "missing" if signed_at is None else "inside", claimed_publisher,
                           None, signed_at_text)
    window = _window(entry, when, now)
    match = publisher_covers(entry.publisher_id, claimed_publisher)
    after = entry.revoked_at is not None and when is not None and when >= entry.revoked_at
    return SignerFacts(status, match, window, claimed_publisher,
                       entry.publisher_id, signed_at_text, _fmt(entry.not_before), _fmt(entry.not_after),
                       _fmt(entry.revoked_at), _fmt(independent_time), proof_future, after, _fmt(now))


def standing(f: SignerFacts) -> tuple[Standing, str]:
    """What the signer earns, whatever the command: trusted, portable, unvouched or rejected."""
    if f.status == "compromised":
        return "rejected", R_COMPROMISED
    if f.status == "revoked":
        if f.signed_after_revocation:
            return "rejected", R_REVOKED_AFTER.format(revoked_at=f.revoked_at)
        return "rejected", R_REVOKED
    if f.status == "unknown":
        return "unvouched", R_UNKNOWN
    if not f.publisher_match:
        return "unvouched", R_FOREIGN.format(registered=f.registered_publisher, claimed=f.claimed_publisher)
    if f.window == "inverted":
        return "portable", R_INVERTED
    if f.proof_future:
        return "portable", R_PROOF_FUTURE
    if f.window == "future":
        return "portable", R_FUTURE.format(signed_at=f.signed_at, now=f.now)
    at = f.independent_time or f.signed_at  # the time the window was judged at (never both)
    if f.status in ("expired", "superseded", "retired"):
        if f.independent_time is not None and f.window == "inside":
            return "trusted", R_TRUSTED_TIMESTAMPED.format(status=f.status, when=f.independent_time)
        if f.window == "missing":
            return "portable", R_MISSING
        if f.window == "before":
            return "portable", R_BEFORE.format(signed_at=at, not_before=f.not_before)
        if f.window == "after":
            return "portable", R_AFTER.format(signed_at=at, not_after=f.not_after)
        return "portable", R_SELF_ASSERTED.format(status=f.status, signed_at=f.signed_at)
    if f.window == "missing":
        return "portable", R_MISSING
    if f.window == "before":
        return "portable", R_BEFORE.format(signed_at=at, not_before=f.not_before)
    if f.window == "after":
        return "portable", R_AFTER.format(signed_at=at, not_after=f.not_after)
    return "trusted", R_TRUSTED.format(publisher=f.registered_publisher)


def effective_minimum(command: Command, minimum: Minimum) -> Minimum:
    """The minimum a command enforces: `verify` always demands trusted (a registry key vouches
    for nothing less); `install`, `release` (its read-back is an install) and `level verify`
    never go below portable."""
    if command == "verify":
        return "trusted"
    if command in ("install", "release", "level verify") and minimum == "none":
        return "portable"
    return minimum


def decide(facts: SignerFacts, *, minimum: Minimum, command: Command) -> Decision:
    """The table: the signer's standing, then whether `command` under `minimum` accepts it.

    - rejected → the command's failure exit (FAIL_EXITS) whatever the minimum;
    - unvouched passes minimum `none` (no registry given: nothing vouches for anything, the label
      says portable) and, in `cartridge verify` only, `--require portable` (SPEC taxonomy);
    - portable passes minimum `none`/`portable`; trusted passes everything.
    """
    st, reason = standing(facts)
    need = effective_minimum(command, minimum)
    rejected_exit, refused_exit = FAIL_EXITS[command]
    if st == "rejected":
        return Decision(st, False, rejected_exit, reason, facts)
    if st == "trusted":
        return Decision(st, True, EXIT_OK, reason, facts)
    # `cartridge verify` reports on a file (SPEC taxonomy: a valid signature by any key is portable);
    # every other command accepts a publisher claim, so an unvouched key never counts as portable.
    as_portable = st == "portable" or (st == "unvouched" and command == "cartridge verify")
    ok = need == "none" or (need == "portable" and as_portable)
    if ok:
        return Decision(st, True, EXIT_OK, reason, facts)
    return Decision(st, False, refused_exit, reason, facts)
