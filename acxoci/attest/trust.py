"""ACX trust registry (`acx.trust-registry/1`): a strict loader and the pure signer judgement.

Shared by cartridge and workflow verification. No I/O: callers parse the JSON (with
`attest.canonical.loads_strict`) and pass the time in explicitly. The semantics follow the ACX
SPEC where the reference departs from it (see docs/decisions/0002-trust-semantics.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal

from msgspec import UnsetType

from acxoci.attest.documents.trust_registry import (
    TrustRegistryDoc,
    TrustRegistryDocKey,
    TrustRegistryDocNamespaceProof,
)
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import PublicKey, load_public_pem
from acxoci.attest.trustdecision import PUBLISHER_RE, SignerFacts, Standing, signer_facts
from acxoci.attest.trustdecision import standing as signer_standing
from acxoci.attest.typed import decode_as

__all__ = ["PUBLISHER_RE"]  # re-exported: the publisher-id grammar lives with the decision table
SCHEMA_VERSION = "acx.trust-registry/1"
GITHUB_OIDC_ISSUER = "https://token.actions.githubusercontent.com"

KEYID_RE = re.compile(r"^ed25519:[0-9a-f]{64}$")
RFC3339_RE = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})$"
)
"""The one RFC 3339 shape every document's timestamps are checked against: ASCII digits only
(`\\d` would also take other scripts' digits, which `int()` reads but other parsers refuse)."""

STATUSES = ("active", "revoked", "expired")
REVOCATION_REASONS = ("key-compromise", "superseded", "retired")
TOP_FIELDS = frozenset({"schemaVersion", "registryId", "updatedAt", "keys"})
KEY_REQUIRED = frozenset(
    {"keyid", "publisherId", "algorithm", "publicKeyPem", "status", "notBefore", "notAfter", "namespaceProof"}
)
KEY_OPTIONAL = frozenset({"rotatedFrom", "rotatedTo", "revokedAt", "revocationReason"})
PROOF_FIELDS = {
    "github-oidc": frozenset({"method", "oidcSubject", "oidcIssuer", "verifiedAt"}),
    "dns-txt": frozenset({"method", "txtRecord", "verifiedAt"}),
}

Trust = Literal["trusted", "portable", "tampered"]


def parse_rfc3339(value: Any, *, where: str = "date") -> datetime:
    """Parse an RFC 3339 timestamp (the brief's regex, then a real calendar check) to an aware datetime.

    Fractions beyond microseconds are truncated; raises MalformedError naming `where`.
    """
    if not isinstance(value, str):
        raise MalformedError(f"{where}: expected an RFC 3339 string, got {type(value).__name__}")
    m = RFC3339_RE.fullmatch(value)
    if not m:
        raise MalformedError(f"{where}: {value!r} is not RFC 3339")
    year, month, day, hour, minute, second, frac, tz = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    if tz == "Z":
        tzinfo: timezone = UTC
    else:
        sign = 1 if tz[0] == "+" else -1
        hh, mm = int(tz[1:3]), int(tz[4:])  # the pattern makes tz exactly ±HH:MM
        if hh > 23 or mm > 59:
            raise MalformedError(f"{where}: {value!r} has an invalid UTC offset")
        tzinfo = timezone(sign * timedelta(hours=hh, minutes=mm))
    try:
        parsed = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=tzinfo
        )
    except ValueError as exc:
        raise MalformedError(f"{where}: {value!r} is not a real date ({exc})") from exc
    try:  # 0001-01-01T00:00:00+14:00 is a real local date before year 1 in UTC: not comparable or printable
        parsed.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise MalformedError(f"{where}: {value!r} lies outside years 0001-9999 in UTC") from exc
    return parsed


def publisher_root(publisher_id: str) -> str:
    """The publisher id without its `/sub` namespace."""
    return publisher_id.partition("/")[0]


def expected_txt_record(publisher_id: str) -> str:
    """`_acx-challenge.` + the publisher root with its labels reversed (com.example.x → x.example.com)."""
    return "_acx-challenge." + ".".join(reversed(publisher_root(publisher_id).split(".")))


def github_owner(publisher_id: str) -> str | None:
    """The GitHub owner of an `io.github.<owner>…` publisher, else None."""
    labels = publisher_root(publisher_id).split(".")
    if len(labels) >= 3 and labels[0] == "io" and labels[1] == "github":
        return labels[2]
    return None


@dataclass(frozen=True)
class NamespaceProof:
    """The recorded proof that a publisher controls its namespace (shape only; no lookups)."""

    method: Literal["github-oidc", "dns-txt"]
    verified_at: datetime
    oidc_subject: str | None = None
    oidc_issuer: str | None = None
    txt_record: str | None = None


@dataclass(frozen=True)
class TrustKey:
    """One public key entry of a trust registry."""

    keyid: str
    publisher_id: str
    algorithm: str
    public_key_pem: str
    public_key: PublicKey
    status: Literal["active", "revoked", "expired"]
    not_before: datetime
    not_after: datetime
    namespace_proof: NamespaceProof
    rotated_from: str | None = None
    rotated_to: str | None = None
    revoked_at: datetime | None = None
    revocation_reason: str | None = None

    @property
    def compromised(self) -> bool:
        """True when the key is recorded as revoked for key-compromise."""
        return self.revocation_reason == "key-compromise"


@dataclass(frozen=True)
class SignerJudgement:
    """What a trust registry says about one signer, for one signed artifact, at one time."""

    trust: Trust
    summary: str
    issues: tuple[str, ...]
    in_registry: bool
    compromised: bool
    facts: SignerFacts | None
    standing: Standing


def _walk_strings(value: Any) -> Iterator[str]:
    """Every string in a JSON tree, object keys included (iterative: no recursion on its depth)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for k, v in node.items():
                yield str(k)
                stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)


def _exact_fields(
    obj: dict[str, Any], required: frozenset[str], optional: frozenset[str], where: str
) -> None:
    unknown = sorted(set(obj) - required - optional)
    if unknown:
        raise MalformedError(f"{where}: unknown field(s) {unknown}")
    missing = sorted(required - set(obj))
    if missing:
        raise MalformedError(f"{where}: missing field(s) {missing}")


def _member_names(raw_keys: Any) -> None:
    """Member names first (unknown, then missing, by name), the proof's by its method, before
    the model decodes the types: the messages say which member, not only where."""
    for i, raw in enumerate(raw_keys if isinstance(raw_keys, list) else []):
        if not isinstance(raw, dict):
            continue
        _exact_fields(raw, KEY_REQUIRED, KEY_OPTIONAL, f"keys[{i}]")
        proof = raw["namespaceProof"]
        if isinstance(proof, dict):
            method = proof.get("method")
            if not isinstance(method, str) or method not in PROOF_FIELDS:
                why = f"{method!r} is not github-oidc or dns-txt"
                raise MalformedError(f"keys[{i}].namespaceProof.method: {why}")
            _exact_fields(proof, PROOF_FIELDS[method], frozenset(), f"keys[{i}].namespaceProof")


def _str(v: str, name: str, where: str) -> str:
    if not v:
        raise MalformedError(f"{where}.{name}: expected a non-empty string")
    return v


def _opt_str(v: str | UnsetType | None, name: str, where: str) -> str | None:
    if v is None or isinstance(v, UnsetType):
        return None
    if not v:
        raise MalformedError(f"{where}.{name}: expected a non-empty string or null")
    return v


def _parse_proof(
    doc: TrustRegistryDocNamespaceProof, raw: dict[str, Any], publisher_id: str, where: str,
    now: datetime | None,
) -> NamespaceProof:
    method = doc.method
    if method not in PROOF_FIELDS:
        raise MalformedError(f"{where}.method: {method!r} is not github-oidc or dns-txt")
    _exact_fields(raw, PROOF_FIELDS[method], frozenset(), where)
    verified_at = parse_rfc3339(doc.verified_at, where=f"{where}.verifiedAt")
    if now is not None and verified_at > now:
        raise MalformedError(f"{where}.verifiedAt: {doc.verified_at} is in the future")
    owner = github_owner(publisher_id)
    if method == "github-oidc":
        if owner is None:
            raise MalformedError(
                f"{where}: github-oidc proof needs an io.github.<owner> publisher, got {publisher_id!r}"
            )
        assert not isinstance(doc.oidc_subject, UnsetType) and not isinstance(doc.oidc_issuer, UnsetType)
        subject = _str(doc.oidc_subject, "oidcSubject", where)
        issuer = _str(doc.oidc_issuer, "oidcIssuer", where)
        if not subject.startswith(f"repo:{owner}/"):
            raise MalformedError(f"{where}.oidcSubject: {subject!r} does not start with 'repo:{owner}/'")
        if issuer != GITHUB_OIDC_ISSUER:
            raise MalformedError(f"{where}.oidcIssuer: {issuer!r} is not {GITHUB_OIDC_ISSUER}")
        return NamespaceProof("github-oidc", verified_at, oidc_subject=subject, oidc_issuer=issuer)
    if owner is not None:
        raise MalformedError(
            f"{where}: publisher {publisher_id!r} is io.github.*, so the proof must be github-oidc"
        )
    assert not isinstance(doc.txt_record, UnsetType)
    txt = _str(doc.txt_record, "txtRecord", where)
    expected = expected_txt_record(publisher_id)
    if txt != expected:
        raise MalformedError(f"{where}.txtRecord: {txt!r} is not {expected!r}")
    return NamespaceProof("dns-txt", verified_at, txt_record=txt)


def _parse_key(doc: TrustRegistryDocKey, raw: dict[str, Any], where: str, now: datetime | None) -> TrustKey:
    keyid = _str(doc.keyid, "keyid", where)
    if not KEYID_RE.fullmatch(keyid):
        raise MalformedError(f"{where}.keyid: {keyid!r} is not ed25519:<64 hex>")
    publisher = _str(doc.publisher_id, "publisherId", where)
    if not PUBLISHER_RE.fullmatch(publisher):
        raise MalformedError(f"{where}.publisherId: {publisher!r} is not a valid publisher id")
    algorithm = _str(doc.algorithm, "algorithm", where)
    if algorithm != "ed25519":
        raise MalformedError(f"{where}.algorithm: {algorithm!r} is not ed25519")
    pem = _str(doc.public_key_pem, "publicKeyPem", where)
    try:
        pub = load_public_pem(pem)
    except MalformedError as exc:
        raise MalformedError(f"{where}.publicKeyPem: {exc}") from exc
    if pub.algorithm != "ed25519":
        raise MalformedError(f"{where}.publicKeyPem: key is {pub.algorithm}, not Ed25519")
    if pub.keyid() != keyid:
        raise MalformedError(f"{where}.keyid: {keyid} is not sha256(SPKI) of publicKeyPem ({pub.keyid()})")
    status = doc.status
    if status not in STATUSES:
        raise MalformedError(f"{where}.status: {status!r} is not one of {list(STATUSES)}")
    not_before = parse_rfc3339(doc.not_before, where=f"{where}.notBefore")
    not_after = parse_rfc3339(doc.not_after, where=f"{where}.notAfter")
    revoked_at = None
    if isinstance(doc.revoked_at, str):
        revoked_at = parse_rfc3339(doc.revoked_at, where=f"{where}.revokedAt")
    reason = None if isinstance(doc.revocation_reason, UnsetType) else doc.revocation_reason
    if reason is not None and reason not in REVOCATION_REASONS:
        raise MalformedError(f"{where}.revocationReason: {reason!r} is not one of {list(REVOCATION_REASONS)}")
    rotated_from = _opt_str(doc.rotated_from, "rotatedFrom", where)
    rotated_to = _opt_str(doc.rotated_to, "rotatedTo", where)
    for name, val in (("rotatedFrom", rotated_from), ("rotatedTo", rotated_to)):
        if val is not None and not KEYID_RE.fullmatch(val):
            raise MalformedError(f"{where}.{name}: {val!r} is not ed25519:<64 hex>")
    proof = _parse_proof(doc.namespace_proof, raw["namespaceProof"], publisher, f"{where}.namespaceProof",
                         now)
    return TrustKey(
        keyid=keyid,
        publisher_id=publisher,
        algorithm=algorithm,
        public_key_pem=pem,
        public_key=pub,
        status=status,  # type: ignore[arg-type]  # checked against STATUSES above
        not_before=not_before,
        not_after=not_after,
        namespace_proof=proof,
        rotated_from=rotated_from,
        rotated_to=rotated_to,
        revoked_at=revoked_at,
        revocation_reason=reason,
    )


@dataclass(frozen=True)
class TrustRegistry:
    """A parsed, validated `acx.trust-registry/1` document (public keys only)."""

    keys: tuple[TrustKey, ...]
    registry_id: str | None = None
    updated_at: datetime | None = None

    @classmethod
    def from_json(cls, doc: Any, *, now: datetime | None = None) -> TrustRegistry:
        """Decode (its model, `attest.documents.trust_registry`) and validate a registry document;
        raises MalformedError naming the field (a DocumentTypeError, with its JSON pointer, for a
        value of the wrong type). With `now`, a namespace proof verified in the future is refused."""
        if not isinstance(doc, dict):
            raise MalformedError("trust registry: $: the document is not a JSON object")
        for s in _walk_strings(doc):
            if "PRIVATE KEY" in s:
                raise MalformedError("trust registry: contains private key material")
        _exact_fields(doc, frozenset({"schemaVersion", "keys"}), TOP_FIELDS, "trust registry")
        _member_names(doc["keys"])
        m = decode_as(doc, TrustRegistryDoc, document="trust registry")
        if m.schema_version != SCHEMA_VERSION:
            raise MalformedError(
                f"trust registry.schemaVersion: {m.schema_version!r} is not {SCHEMA_VERSION!r}"
            )
        registry_id = _opt_str(m.registry_id, "registryId", "trust registry")
        updated_at = None
        if isinstance(m.updated_at, str):
            updated_at = parse_rfc3339(m.updated_at, where="trust registry.updatedAt")
        keys: list[TrustKey] = []
        seen: set[str] = set()
        for i, entry in enumerate(m.keys):
            key = _parse_key(entry, doc["keys"][i], f"keys[{i}]", now)
            if key.keyid in seen:
                raise MalformedError(f"keys[{i}].keyid: duplicate keyid {key.keyid}")
            seen.add(key.keyid)
            keys.append(key)
        by_id: dict[str | None, TrustKey] = {k.keyid: k for k in keys}
        for k in keys:
            succ = by_id.get(k.rotated_to)
            if succ is not None and succ.rotated_from not in (None, k.keyid):
                raise MalformedError(f"{k.keyid}: rotatedTo {succ.keyid}, whose rotatedFrom points elsewhere")
        return cls(keys=tuple(keys), registry_id=registry_id, updated_at=updated_at)

    def get(self, keyid: str | None) -> TrustKey | None:
        """The entry for `keyid`, or None."""
        if keyid is None:
            return None
        for k in self.keys:
            if k.keyid == keyid:
                return k
        return None


def merge_keys(groups: Iterable[tuple[str, Iterable[TrustKey]]]) -> tuple[TrustKey, ...]:
    """One list of the keys several registries name (`(source, keys)` pairs), failing closed: a
    keyid two sources describe differently (publisher, status, window or revocation) is refused,
    because which one won would depend on the order the files were given in."""
    seen: dict[str, tuple[str, TrustKey]] = {}
    for source, keys in groups:
        for k in keys:
            first = seen.get(k.keyid)
            if first is None:
                seen[k.keyid] = (source, k)
            elif _decision_fields(first[1]) != _decision_fields(k):
                raise MalformedError(f"conflicting trust registry entries for {k.keyid}: {first[0]} says "
                                     f"{_describe(first[1])}, {source} says {_describe(k)}")
    return tuple(k for _, k in seen.values())


def _decision_fields(k: TrustKey) -> tuple[object, ...]:
    return (k.publisher_id, k.status, k.not_before, k.not_after, k.revoked_at, k.revocation_reason)


def _describe(k: TrustKey) -> str:
    extra = f" ({k.revocation_reason})" if k.revocation_reason else ""
    return f"{k.status}{extra} for {k.publisher_id}"


def judge_signer(
    entry: TrustKey | None, *, signed_publisher: str, signed_at: str, now: datetime,
    independent_time: datetime | None = None,
) -> SignerJudgement:
    """Apply a registry entry to a verified signature through the one decision table
    (`attest.trustdecision`): trusted, portable or tampered (revoked or compromised).

    Call only after the signature itself verified. Times are compared as parsed datetimes.
    `independent_time` is a verified timestamp (transparency log, RFC 3161), never `signedAt`.
    """
    try:  # an unparsable signedAt is a fact (window "missing"), not an error: its message is not shown
        signed: datetime | None = parse_rfc3339(signed_at)
    except MalformedError:
        signed = None
    facts = signer_facts(entry, claimed_publisher=signed_publisher, signed_at=signed,
                         signed_at_text=signed_at if signed is not None else None, now=now,
                         independent_time=independent_time,
                         proof_future=entry is not None and entry.namespace_proof.verified_at > now)
    st, reason = signer_standing(facts)
    in_registry = entry is not None
    if facts.status == "compromised":
        return SignerJudgement("tampered", "Signer key is compromised (revoked).", (reason,), True, True,
                               facts, st)
    if st == "rejected":
        return SignerJudgement("tampered", "Signer key revoked.", (reason,), True, False, facts, st)
    if st == "unvouched" and entry is None:
        return SignerJudgement("portable", "Signature valid but signer not in trust registry.", (reason,),
                               False, False, facts, st)
    if st == "trusted":
        summary = f"Signed by trusted publisher {signed_publisher}."
        return SignerJudgement("trusted", summary, (), in_registry, False, facts, st)
    if facts.status in ("superseded", "retired"):
        summary = "Signer key later revoked (non-compromise); signed before revocation."
    else:
        summary = "Signer registry entry is not eligible for trusted status."
    return SignerJudgement("portable", summary, (reason,), in_registry, False, facts, st)


def format_rfc3339(when: datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SSZ` in UTC, the form registries are written in."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_key_entry(
    public: PublicKey,
    *,
    publisher_id: str,
    not_before: datetime,
    not_after: datetime,
    verified_at: datetime,
    oidc_subject: str | None = None,
) -> dict[str, Any]:
    """A registry key entry for an Ed25519 public key, with the namespace proof the publisher
    form calls for: github-oidc (needs `oidc_subject`) for `io.github.*`, dns-txt otherwise.

    The entry records what the registry operator verified; it is checked by `from_json`.
    """
    if public.algorithm != "ed25519":
        raise MalformedError("trust registry entries take Ed25519 keys only")
    proof: dict[str, Any]
    if github_owner(publisher_id) is not None:
        if not oidc_subject:
            raise MalformedError(f"publisher {publisher_id} needs a github-oidc proof: give the OIDC subject")
        proof = {"method": "github-oidc", "oidcSubject": oidc_subject, "oidcIssuer": GITHUB_OIDC_ISSUER,
                 "verifiedAt": format_rfc3339(verified_at)}
    else:
        proof = {"method": "dns-txt", "txtRecord": expected_txt_record(publisher_id),
                 "verifiedAt": format_rfc3339(verified_at)}
    return {
        "keyid": public.keyid(),
        "publisherId": publisher_id,
        "algorithm": "ed25519",
        "publicKeyPem": public.spki_pem(),
        "status": "active",
        "notBefore": format_rfc3339(not_before),
        "notAfter": format_rfc3339(not_after),
        "namespaceProof": proof,
    }


def add_key_entry(doc: dict[str, Any] | None, entry: dict[str, Any], *, now: datetime) -> dict[str, Any]:
    """Return a registry document with `entry` added (or replacing the same keyid), validated."""
    base: dict[str, Any] = dict(doc) if doc else {"schemaVersion": SCHEMA_VERSION, "keys": []}
    keys = [k for k in base.get("keys", []) if not (isinstance(k, dict) and k.get("keyid") == entry["keyid"])]
    base["keys"] = [*keys, entry]
    base["updatedAt"] = format_rfc3339(now)
    TrustRegistry.from_json(base, now=now)
    return base


def revoke_key_entry(doc: dict[str, Any], keyid: str, *, reason: str, revoked_at: datetime,
                     now: datetime) -> dict[str, Any]:
    """Return a registry document with `keyid` marked revoked for `reason` at `revoked_at`, validated
    (MalformedError when the key is not in it or the reason is not a known one)."""
    if reason not in REVOCATION_REASONS:
        raise MalformedError(f"revocation reason {reason!r} is not one of {list(REVOCATION_REASONS)}")
    raw = doc.get("keys")
    keys: list[Any] = raw if isinstance(raw, list) else []
    if not any(isinstance(k, dict) and k.get("keyid") == keyid for k in keys):
        raise MalformedError(f"{keyid} is not in the trust registry")
    base = dict(doc)
    base["keys"] = [{**k, "status": "revoked", "revokedAt": format_rfc3339(revoked_at),
                     "revocationReason": reason}
                    if isinstance(k, dict) and k.get("keyid") == keyid else k for k in keys]
    base["updatedAt"] = format_rfc3339(now)
    TrustRegistry.from_json(base, now=now)
    return base
