"""Revocation for level credentials with W3C Bitstring Status List credentials: create and sign a
list, allocate indexes, flip a bit to revoke, fetch a list (file or https URL) with an on-disk cache,
and decide a credential's status with explicit freshness rules.

Freshness: a list is stale when `now − validFrom > max_age` or past its `validUntil`. A stale or
unreachable list is a failure unless the caller allows offline use, in which case a cached (or the
stale) list is used and the outcome says so.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import platformdirs
from filelock import FileLock

from acxoci.attest import statuslist, vc
from acxoci.attest.canonical import jcs_digest, loads_strict
from acxoci.attest.documents.status_list import StatusListDoc
from acxoci.attest.errors import AttestError
from acxoci.attest.keys import PrivateKey
from acxoci.attest.statuslist import StatusEntry
from acxoci.attest.trust import parse_rfc3339
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.errors import InvalidInput, NotFound, TransientError, UsageError, VerificationFailed
from acxoci.fsutil import atomic_write, read_bytes
from acxoci.level.constants import STATUS_MEDIA_TYPE
from acxoci.level.constants import iso as iso  # re-exported: callers use status.iso
from acxoci.level.issuers import IssuerRegistry, issuer_did
from acxoci.oci.fetch import get_url

MEDIA_TYPE: Final = STATUS_MEDIA_TYPE
DEFAULT_MAX_AGE: Final = timedelta(days=1)
MAX_LIST_BYTES: Final = 8 * 1024 * 1024
FETCH_TIMEOUT: Final = 15.0

StatusState = Literal["valid", "revoked", "failed"]


def default_cache_dir() -> Path:
    """platformdirs user cache dir for acxoci status lists."""
    return Path(platformdirs.user_cache_dir("acxoci")) / "status-lists"


def write_json_atomic(path: Path, doc: Any, mode: int = 0o644) -> None:
    """Write JSON (2-space indent, final newline) atomically."""
    atomic_write(path, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), mode=mode)


def create_status_list(*, list_id: str, issuer: str, key: PrivateKey, now: datetime,
                       size_bits: int = statuslist.MIN_BITS, valid_for: timedelta | None = None,
                       verification_method: str | None = None) -> dict[str, Any]:
    """A signed, all-clear BitstringStatusListCredential (revocation purpose)."""
    bits = statuslist.new_bitstring(size_bits)
    return _sign_list(list_id, issuer, bits, key, now, valid_for, verification_method or f"{issuer}#key-1")


def _sign_list(list_id: str, issuer: str, bits: bytearray, key: PrivateKey, now: datetime,
               valid_for: timedelta | None, vm: str) -> dict[str, Any]:
    doc = statuslist.status_list_credential(
        list_id=list_id, issuer=issuer, encoded_list=statuslist.encode_list(bits), valid_from=iso(now),
        valid_until=iso(now + valid_for) if valid_for is not None else None)
    return vc.sign(doc, key, verification_method=vm, created=iso(now))


@dataclass(frozen=True)
class VerifiedList:
    """A status list whose proof verified under a trusted issuer key."""

    doc: dict[str, Any]
    list_id: str
    issuer: str
    bits: bytearray
    purpose: str
    valid_from: datetime
    valid_until: datetime | None
    keyid: str
    verification_method: str


def _issuer_id(doc: dict[str, Any]) -> str:
    iss = doc.get("issuer")
    if isinstance(iss, dict):
        iss = iss.get("id")
    if not isinstance(iss, str) or not iss:
        raise InvalidInput("status list credential has no issuer")
    return iss


def verify_status_list(doc: Any, *, issuers: IssuerRegistry, now: datetime) -> VerifiedList:
    """Check shape, proof and issuer trust of a status list credential (not its freshness).

    Raises VerificationFailed (tampered / untrusted) or InvalidInput (malformed)."""
    if not isinstance(doc, dict):
        raise InvalidInput("$: the status list credential is not a JSON object")
    try:
        decode_as(doc, StatusListDoc, document="status list credential")
    except DocumentTypeError as exc:
        raise InvalidInput(str(exc), details={"pointer": exc.pointer}) from exc
    try:
        bits, purpose = statuslist.list_bits_from_credential(doc)
        _, options, _ = vc.split_proof(doc)
    except AttestError as exc:
        raise InvalidInput(f"status list credential: {exc}") from exc
    issuer = _issuer_id(doc)
    list_id = doc.get("id")
    if not isinstance(list_id, str) or not list_id:
        raise InvalidInput("status list credential has no id")
    vm = options.get("verificationMethod")
    if not isinstance(vm, str) or issuer_did(vm) != issuer:
        raise VerificationFailed(f"status list proof verificationMethod {vm!r} is not under issuer {issuer}")
    created = options.get("created")
    entries = issuers.candidates(vm)
    if not entries:
        raise VerificationFailed(f"status list issuer {issuer} is not in the issuer trust registry")
    for entry in entries:
        try:
            vc.verify(doc, entry.public_key)
        except AttestError:
            continue
        match = issuers.judge(entry, signed_at=created if isinstance(created, str) else "", now=now)
        if not match.eligible:
            raise VerificationFailed(f"status list issuer key {entry.keyid} is not eligible: "
                                     + "; ".join(match.issues))
        try:
            valid_from = parse_rfc3339(doc.get("validFrom"), where="status list validFrom")
            vu = doc.get("validUntil")
            valid_until = parse_rfc3339(vu, where="status list validUntil") if vu is not None else None
        except AttestError as exc:
            raise InvalidInput(str(exc)) from exc
        return VerifiedList(doc, list_id, issuer, bits, purpose, valid_from, valid_until, entry.keyid, vm)
    raise VerificationFailed(f"status list proof does not verify with any registered key of {issuer} "
                             "(tampered status list)")


def set_status(doc: dict[str, Any], index: int, *, key: PrivateKey, now: datetime,
               value: bool = True, valid_for: timedelta | None = None) -> dict[str, Any]:
    """Flip bit `index` (revoke) and re-sign; the key must be the one that signed the current list."""
    try:
        vc.verify(doc, key.public())
        bits, _purpose = statuslist.list_bits_from_credential(doc)
        _, options, _ = vc.split_proof(doc)
    except AttestError as exc:
        raise VerificationFailed(f"status list {doc.get('id')!r} is not signed by this issuer key: "
                                 f"{exc}") from exc
    statuslist.set_bit(bits, index, value)
    if valid_for is None and "validUntil" in doc and "validFrom" in doc:
        valid_for = (parse_rfc3339(doc["validUntil"], where="validUntil")
                     - parse_rfc3339(doc["validFrom"], where="validFrom"))
    # a new list is always later than the one it replaces: consumers refuse a list that is not
    # (acxoci/freshness.py), so one re-issued within the same millisecond moves on by one
    if isinstance(doc.get("validFrom"), str):
        before = parse_rfc3339(doc["validFrom"], where="validFrom")
        now = max(now, before + timedelta(milliseconds=1))
    return _sign_list(str(doc["id"]), _issuer_id(doc), bits, key, now, valid_for,
                      str(options["verificationMethod"]))


def read_list_file(path: Path) -> dict[str, Any]:
    """Read a status list credential file (size-bounded, strict JSON)."""
    data = read_bytes(path, "status list", limit=MAX_LIST_BYTES + 1)
    try:
        doc = loads_strict(data, max_bytes=MAX_LIST_BYTES)
    except AttestError as exc:
        raise InvalidInput(f"{path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path}: status list is not a JSON object")
    return doc


def allocate_index(list_path: Path, size_bits: int) -> int:
    """Next free index for `list_path`, kept in a locked sidecar `<list>.alloc.json`."""
    side = list_path.with_name(list_path.name + ".alloc.json")
    with FileLock(str(side) + ".lock"):
        nxt = 0
        if side.exists():
            doc = loads_strict(read_bytes(side, "status list allocation file", limit=1 << 16))
            if not isinstance(doc, dict) or not isinstance(doc.get("next"), int) or doc["next"] < 0:
                raise InvalidInput(f"{side}: malformed allocation file")
            nxt = doc["next"]
        if nxt >= size_bits:
            raise InvalidInput(f"status list {list_path} is full ({size_bits} entries)")
        write_json_atomic(side, {"next": nxt + 1})
    return nxt


@dataclass(frozen=True)
class Fetched:
    """A status list document and when/where it was obtained."""

    doc: dict[str, Any]
    source: str
    fetched_at: datetime
    from_cache: bool


def _cache_path(cache_dir: Path, source: str) -> Path:
    return cache_dir / (hashlib.sha256(source.encode("utf-8")).hexdigest() + ".json")


def fetch_list(source: str, *, now: datetime, timeout: float = FETCH_TIMEOUT) -> Fetched:
    """Fetch from a file path, an https URL or an OCI reference (`oci://REF`, `oci-layout:…`);
    TransientError when unreachable."""
    if source.startswith("https://"):
        try:  # the one transport setup (CA, registries file, deadline, capped body)
            body = get_url(source, accept=f"{MEDIA_TYPE}, application/vc, application/json",
                           limit=MAX_LIST_BYTES, timeout=timeout)
        except TransientError as exc:
            raise TransientError(f"status list {source} unreachable: {exc.message}", hint=exc.hint) from exc
        try:
            doc = loads_strict(body)
        except AttestError as exc:
            raise InvalidInput(f"status list {source}: {exc}") from exc
        if not isinstance(doc, dict):
            raise InvalidInput(f"status list {source} is not a JSON object")
        return Fetched(doc, source, now, False)
    if "://" in source and not source.startswith("oci://"):
        raise UsageError(f"status list source {source!r}: use a file, an https:// URL, "
                         "host/repo[:tag], oci-layout:PATH[:tag] or oci://REF")
    from acxoci.level.oci import fetch_status_list, looks_like_reference

    if looks_like_reference(source):
        # Every reference form the CLI accepts; a missing list stays NotFound (a person must
        # publish it), only a flaky registry is "retry later".
        return Fetched(fetch_status_list(source), source, now, False)
    return Fetched(read_list_file(Path(source)), source, now, False)


def is_fetched_source(source: str) -> bool:
    """True for a list fetched from elsewhere (https, a registry, a layout), False for a local file."""
    if source.startswith(("https://", "oci://", "oci-layout:")):
        return True
    from acxoci.level.oci import looks_like_reference

    return looks_like_reference(source)


def store_cache(cache_dir: Path, fetched: Fetched) -> None:
    """Remember a verified list with its fetch time."""
    write_json_atomic(_cache_path(cache_dir, fetched.source),
                      {"source": fetched.source, "fetchedAt": iso(fetched.fetched_at),
                       "document": fetched.doc})


def load_cache(cache_dir: Path, source: str) -> Fetched | None:
    """The cached list for `source`, or None."""
    path = _cache_path(cache_dir, source)
    if not path.exists():
        return None
    try:
        doc = loads_strict(read_bytes(path, "status list cache", limit=MAX_LIST_BYTES + 4096, nofollow=True),
                           max_bytes=MAX_LIST_BYTES + 4096)
        fetched_at = parse_rfc3339(doc["fetchedAt"], where=f"{path}.fetchedAt")
    except (AttestError, KeyError, TypeError) as exc:
        raise InvalidInput(f"status list cache {path} is corrupt: {exc}") from exc
    if not isinstance(doc.get("document"), dict) or doc.get("source") != source:
        raise InvalidInput(f"status list cache {path} is corrupt")
    return Fetched(doc["document"], source, fetched_at, True)


@dataclass(frozen=True)
class StatusOutcome:
    """The revocation decision for one credential, with how it was reached."""

    state: StatusState
    reason: str
    index: int | None = None
    source: str | None = None
    fetched_at: datetime | None = None
    list_valid_from: datetime | None = None
    from_cache: bool = False
    stale: bool = False
    offline: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON view for --json output."""
        return {"state": self.state, "reason": self.reason, "index": self.index, "source": self.source,
                "fetchedAt": iso(self.fetched_at) if self.fetched_at else None,
                "listValidFrom": iso(self.list_valid_from) if self.list_valid_from else None,
                "fromCache": self.from_cache, "stale": self.stale, "offline": self.offline}


def decide_status(entry: StatusEntry, listed: VerifiedList, *, vc_issuer: str, now: datetime,
                  max_age: timedelta, allow_offline: bool, fetched: Fetched) -> StatusOutcome:
    """Pure: bind the list to the entry and the credential's issuer, check freshness, read the bit."""
    base = StatusOutcome("failed", "", entry.index, fetched.source, fetched.fetched_at, listed.valid_from,
                         fetched.from_cache)
    if listed.list_id != entry.list_credential:
        return replace(base, reason=f"status list id {listed.list_id} is not the credential's "
                       f"statusListCredential {entry.list_credential}")
    if listed.issuer != vc_issuer:
        return replace(base, reason=f"status list issuer {listed.issuer} is not the credential issuer "
                       f"{vc_issuer}")
    if listed.purpose != entry.purpose:
        return replace(base, reason=f"status list purpose {listed.purpose} is not {entry.purpose}")
    if entry.index >= len(listed.bits) * 8:
        return replace(base, reason=f"statusListIndex {entry.index} is outside the list")
    age = now - listed.valid_from
    stale_reason = None
    if listed.valid_from > now:
        stale_reason = f"status list validFrom {iso(listed.valid_from)} is in the future"
    elif listed.valid_until is not None and now > listed.valid_until:
        stale_reason = f"status list expired at {iso(listed.valid_until)}"
    elif age > max_age:
        stale_reason = (f"status list is stale: issued {iso(listed.valid_from)}, "
                        f"{int(age.total_seconds())}s old > max {int(max_age.total_seconds())}s")
    if stale_reason is not None and not allow_offline:
        return replace(base, reason=stale_reason, stale=True)
    note = ""
    if stale_reason is not None:
        note = f" (offline allowed: {stale_reason})"
    elif fetched.from_cache:
        note = f" (offline: cached list fetched {iso(fetched.fetched_at)})"
    where = f"status list {listed.list_id} index {entry.index}"
    stale = stale_reason is not None
    out = replace(base, stale=stale, offline=stale or fetched.from_cache)
    if statuslist.get_bit(listed.bits, entry.index):
        return replace(out, state="revoked", reason=f"revoked ({where}){note}")
    return replace(out, state="valid", reason=f"not revoked ({where}){note}")


def check_status(entry: StatusEntry, *, source: str, issuers: IssuerRegistry, vc_issuer: str, now: datetime,
                 max_age: timedelta = DEFAULT_MAX_AGE, allow_offline: bool = False,
                 cache_dir: Path | None = None) -> StatusOutcome:
    """Fetch (or, offline, take from cache), verify and read the status of `entry`.

    Unreachable without offline permission, a bad proof, or a stale list are all `failed`."""
    cdir = cache_dir if cache_dir is not None else default_cache_dir()
    try:
        fetched = fetch_list(source, now=now)
    except (TransientError, NotFound) as exc:
        cached = load_cache(cdir, source) if allow_offline else None
        if cached is None:
            why = "no cached list" if allow_offline else "offline use not allowed"
            return StatusOutcome("failed", f"{exc.one_line()} ({why})", entry.index, source)
        fetched = cached
    try:
        listed = verify_status_list(fetched.doc, issuers=issuers, now=now)
    except (VerificationFailed, InvalidInput) as exc:
        return StatusOutcome("failed", f"status list rejected: {exc.message}", entry.index, source,
                             fetched.fetched_at, None, fetched.from_cache)
    if is_fetched_source(source):  # a list named by a local file is the user's own
        from acxoci.freshness import HighWater

        rollback = HighWater(cdir).status_list(listed.list_id, listed.valid_from, jcs_digest(fetched.doc))
        if rollback is not None:
            return StatusOutcome("failed", rollback, entry.index, source, fetched.fetched_at,
                                 listed.valid_from, fetched.from_cache)
    if not fetched.from_cache:
        store_cache(cdir, fetched)
    return decide_status(entry, listed, vc_issuer=vc_issuer, now=now, max_age=max_age,
                         allow_offline=allow_offline, fetched=fetched)
