"""Signed JSON documents: what workflows (`acx.cal/1`) and Agent Graphs (`acx.agent-graph/1`) share.

One digest (`sha256:` + hex(sha256(JCS(document without its top-level `integrity`)))), one DSSE
signature over the JCS of an in-toto Statement that binds the digest, id, version, publisher, time
and the kind's counts, one seven-field integrity block, and one verification pipeline (ACX brief
§9.4, §9.5, §9.8). A `SignedKind` says what differs: names, predicate type and counted arrays.
Pure: documents, keys, registry and time are inputs; verdicts are values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from acxoci.attest import dsse
from acxoci.attest.canonical import jcs as canonical
from acxoci.attest.canonical import jcs_digest as canonical_digest
from acxoci.attest.canonical import loads_strict
from acxoci.attest.dsse import INTOTO_PAYLOAD_TYPE, Envelope
from acxoci.attest.errors import AttestError, MalformedError, SignatureError
from acxoci.attest.intoto import STATEMENT_V1
from acxoci.attest.keys import PrivateKey, PublicKey, load_public_pem
from acxoci.attest.trust import RFC3339_RE, TrustRegistry, judge_signer, parse_rfc3339
from acxoci.attest.trustdecision import R_FOREIGN
from acxoci.errors import InvalidInput, RefusedByPolicy
from acxoci.workflow.model import PUBLISHER_RE

INTEGRITY_FIELDS = ("schemaVersion", "digest", "publisherId", "keyid", "publicKeyPem", "signedAt", "envelope")
KEYID_RE = re.compile(r"^ed25519:[0-9a-f]{64}$")

Status = Literal["verified", "warning", "invalid"]
SignedTrust = Literal["trusted", "portable", "unsigned", "tampered"]
#: `precheck(unsigned body, signed publisherId or None)` -> issues that make a signed document tampered.
Precheck = Callable[[Mapping[str, Any], str | None], Sequence[str]]


@dataclass(frozen=True)
class SignedKind:
    """What one kind of signed document calls things (everything else is shared)."""

    label: str  # "workflow", "agent graph" (used in messages)
    urn: str  # subject `urn:acx:<urn>:<id>@<version>`
    signature_schema: str  # integrity.schemaVersion
    predicate_type: str
    id_field: str  # predicate key of the document id
    version_field: str
    digest_field: str
    counts: tuple[tuple[str, str], ...]  # (predicate key, top-level array whose length it holds)


def unsigned_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document without its top-level `integrity` (what the digest covers)."""
    return {k: v for k, v in doc.items() if k != "integrity"}


def document_digest(doc: Mapping[str, Any]) -> str:
    """The document digest: key order and whitespace do not matter, every value does."""
    return canonical_digest(unsigned_view(doc))


def iso_millis(when: datetime) -> str:
    """RFC 3339 UTC with milliseconds and `Z`, as JavaScript's toISOString writes it."""
    if when.tzinfo is None:
        raise ValueError("signing time must be timezone-aware")
    utc = when.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _version(doc: Mapping[str, Any]) -> str | None:
    v = doc.get("version")
    return v if isinstance(v, str) else None


def subject_name(kind: SignedKind, doc: Mapping[str, Any]) -> str:
    """`urn:acx:<kind>:<id>@<version|unversioned>`."""
    return f"urn:acx:{kind.urn}:{doc.get('id')}@{_version(doc) or 'unversioned'}"


def counts(kind: SignedKind, doc: Mapping[str, Any]) -> dict[str, int]:
    """The predicate's counts: the length of each counted array (0 when absent or not an array)."""
    out: dict[str, int] = {}
    for field, key in kind.counts:
        value = doc.get(key)
        out[field] = len(value) if isinstance(value, list) else 0
    return out


def build_statement(
    kind: SignedKind, doc: Mapping[str, Any], *, digest: str, publisher_id: str, signed_at: str
) -> dict[str, Any]:
    """The in-toto Statement v1 the signature covers."""
    return {
        "_type": STATEMENT_V1,
        "subject": [{"name": subject_name(kind, doc), "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": kind.predicate_type,
        "predicate": {
            "acxSchemaVersion": doc.get("schemaVersion"),
            kind.id_field: doc.get("id"),
            kind.version_field: _version(doc),
            "publisherId": publisher_id,
            kind.digest_field: digest,
            "signedAt": signed_at,
            **counts(kind, doc),
        },
    }


def sign_document(
    kind: SignedKind,
    doc: Mapping[str, Any],
    *,
    publisher_id: str,
    key: PrivateKey,
    now: datetime,
    refusals: Callable[[Mapping[str, Any]], Sequence[str]],
) -> dict[str, Any]:
    """A copy of `doc` with a fresh integrity block. Refuses a non-reverse-DNS publisher, a
    non-Ed25519 key, and whatever `refusals(unsigned body)` reports (lineage, publish lint)."""
    if not PUBLISHER_RE.fullmatch(publisher_id):
        raise InvalidInput(
            "publisher must be a reverse-DNS identifier (e.g. io.github.you)",
            where="--publisher",
            details={"value": publisher_id},
        )
    pub = key.public()
    if pub.algorithm != "ed25519":
        raise InvalidInput(f"{kind.label} signatures need an Ed25519 key, got {pub.algorithm}", where="--key")
    body = unsigned_view(doc)
    refused = list(refusals(body))
    if refused:
        raise RefusedByPolicy(
            f"refusing to sign: {len(refused)} issue(s): " + "; ".join(refused[:5]),
            details={"issues": refused},
        )
    digest = canonical_digest(body)
    signed_at = iso_millis(now)
    statement = build_statement(kind, body, digest=digest, publisher_id=publisher_id, signed_at=signed_at)
    keyid = pub.keyid()
    envelope = dsse.sign(INTOTO_PAYLOAD_TYPE, canonical(statement), key, keyid)
    out = dict(body)
    out["integrity"] = {
        "schemaVersion": kind.signature_schema,
        "digest": digest,
        "publisherId": publisher_id,
        "keyid": keyid,
        "publicKeyPem": pub.spki_pem(),
        "signedAt": signed_at,
        "envelope": envelope.to_json(),
    }
    return out


@dataclass(frozen=True)
class SignedVerdict:
    """`{ok, signed, status, trust, digest, publisherId, keyid, issues}` of one verification."""

    ok: bool
    signed: bool
    status: Status
    trust: SignedTrust
    digest: str
    publisher_id: str | None = None
    keyid: str | None = None
    signed_at: str | None = None
    issues: tuple[str, ...] = ()
    summary: str = ""

    @property
    def rejected(self) -> bool:
        """True when the document must not be used (invalid/tampered)."""
        return not self.ok

    def to_json(self) -> dict[str, Any]:
        """JSON form (reference field names)."""
        return {
            "ok": self.ok,
            "signed": self.signed,
            "status": self.status,
            "trust": self.trust,
            "digest": self.digest,
            "publisherId": self.publisher_id,
            "keyid": self.keyid,
            "signedAt": self.signed_at,
            "summary": self.summary,
            "issues": list(self.issues),
        }


def _j(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _short(v: Any) -> str:
    """A value for a message: strings as they are, anything else as JSON; bounded either way."""
    return (v if isinstance(v, str) else _j(v))[:100]


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def verify_document(
    kind: SignedKind,
    doc: Mapping[str, Any],
    *,
    registry: TrustRegistry | None,
    now: datetime,
    precheck: Precheck,
) -> SignedVerdict:
    """Unsigned → warning/unsigned (ok); a failed precheck or binding → invalid/tampered; a good
    signature → portable (signer unknown), trusted, warning/portable (not eligible) or tampered."""
    label = kind.label
    try:
        digest = document_digest(doc)
    except AttestError as exc:  # e.g. an integer outside the JCS domain: no digest, so no verdict
        raise InvalidInput(f"{label} cannot be canonicalised: {exc}") from exc
    integrity = doc.get("integrity")
    if integrity is None:
        return SignedVerdict(
            True,
            False,
            "warning",
            "unsigned",
            digest,
            issues=(f"{label} has no integrity signature",),
            summary=f"Unsigned {label} (no integrity block).",
        )
    idict = integrity if isinstance(integrity, dict) else {}
    pub_id = _str(idict.get("publisherId"))
    keyid, signed_at = _str(idict.get("keyid")), _str(idict.get("signedAt"))

    def tampered(*issues: str) -> SignedVerdict:
        return SignedVerdict(
            False,
            True,
            "invalid",
            "tampered",
            digest,
            pub_id,
            keyid,
            signed_at,
            tuple(issues),
            f"{label[:1].upper()}{label[1:]} signature does not verify.",
        )

    body = unsigned_view(doc)
    pre = list(precheck(body, pub_id))
    if pre:
        return tampered(*pre)
    if not isinstance(integrity, dict) or set(integrity) != set(INTEGRITY_FIELDS):
        return tampered(
            f"integrity must contain exactly the {kind.signature_schema} fields"
            + (f" (got {sorted(integrity)[:16]})" if isinstance(integrity, dict) else "")
        )
    if integrity["schemaVersion"] != kind.signature_schema:
        return tampered(f"unexpected integrity schemaVersion {_j(integrity['schemaVersion'])[:200]}")
    if pub_id is None or not PUBLISHER_RE.fullmatch(pub_id):
        return tampered("publisherId must be a reverse-DNS identifier")
    if keyid is None or not KEYID_RE.fullmatch(keyid):
        return tampered("keyid must identify an Ed25519 public key")
    if signed_at is None or not RFC3339_RE.fullmatch(signed_at):
        return tampered("signedAt must be an RFC 3339 date-time")
    try:
        parse_rfc3339(signed_at, where="integrity.signedAt")
    except MalformedError:
        return tampered("signedAt must be an RFC 3339 date-time")
    if integrity["digest"] != digest:
        return tampered(f"{label} digest mismatch: signed {_short(integrity['digest'])}, computed {digest}")
    env_doc = integrity["envelope"]
    shape = _envelope_shape(env_doc)
    if shape:
        return tampered(shape)
    try:
        env = Envelope.from_json(env_doc)
    except AttestError as exc:
        return tampered(f"DSSE envelope is malformed: {exc}")
    pem = integrity["publicKeyPem"]
    try:
        key: PublicKey = load_public_pem(pem if isinstance(pem, str) else "")
    except MalformedError as exc:
        return tampered(f"invalid public key: {exc}")
    if key.algorithm != "ed25519":
        return tampered(f"invalid public key: {key.algorithm} is not Ed25519")
    if not (key.keyid() == keyid == env.signatures[0].keyid):
        return tampered(
            "keyid does not match the public key and DSSE signature "
            f"(publicKeyPem {key.keyid()}, integrity {keyid}, envelope {_short(env.signatures[0].keyid)})"
        )
    entry = registry.get(keyid) if registry is not None else None
    if entry is not None and entry.public_key.keyid() != keyid:
        return tampered("registry public key does not match the signed keyid")
    try:
        env.verify(entry.public_key if entry is not None else key, index=0)
    except SignatureError as exc:
        return tampered(f"DSSE signature does not verify: {exc}")
    try:
        stmt = loads_strict(env.payload)
    except MalformedError as exc:
        return tampered(f"DSSE payload is not JSON: {exc}")
    if not isinstance(stmt, dict):
        return tampered("DSSE payload is not an in-toto Statement object")
    subjects = stmt.get("subject")
    if not isinstance(subjects, list) or len(subjects) != 1 or not isinstance(subjects[0], dict):
        return tampered(f"in-toto Statement must contain exactly one {label} subject")
    mismatches = _binding_mismatches(kind, doc, stmt, subjects[0], digest, integrity)
    if mismatches:
        return tampered(*mismatches)

    j = judge_signer(entry, signed_publisher=pub_id, signed_at=signed_at, now=now)

    def verdict(
        ok: bool, status: Status, trust: SignedTrust, summary: str, issues: tuple[str, ...]
    ) -> SignedVerdict:
        return SignedVerdict(ok, True, status, trust, digest, pub_id, keyid, signed_at, issues, summary)

    if not j.in_registry:
        # The reference reports an unknown workflow/graph signer as verified/portable (cartridges: warning).
        return verdict(True, "verified", "portable", "Signature valid; signer not in trust registry.",
                       j.issues)
    assert entry is not None
    if entry.publisher_id != pub_id:  # stricter than cartridges (a /sub too): the reference rejects it
        return verdict(False, "invalid", "tampered", "Trust registry publisher differs from the signed one.",
                       (R_FOREIGN.format(registered=entry.publisher_id, claimed=pub_id),))
    if j.trust == "tampered":  # revoked or compromised: never better than an unknown key
        return verdict(False, "invalid", "tampered", j.summary, j.issues)
    if j.trust == "trusted":
        return verdict(True, "verified", "trusted", j.summary, j.issues)
    return verdict(True, "warning", "portable", j.summary, j.issues)


def _envelope_shape(env: Any) -> str | None:
    if not isinstance(env, dict) or set(env) != {"payloadType", "payload", "signatures"}:
        return "DSSE envelope must have exactly payloadType, payload and signatures"
    if env["payloadType"] != INTOTO_PAYLOAD_TYPE:
        return f"DSSE payloadType must be {INTOTO_PAYLOAD_TYPE}"
    sigs = env["signatures"]
    if (
        not isinstance(sigs, list)
        or len(sigs) != 1
        or not isinstance(sigs[0], dict)
        or set(sigs[0]) != {"keyid", "sig"}
    ):
        return "DSSE envelope must carry exactly one {keyid, sig} signature"
    if (
        not isinstance(env["payload"], str)
        or not isinstance(sigs[0]["sig"], str)
        or not isinstance(sigs[0]["keyid"], str)
    ):
        return "DSSE payload, keyid and sig must be strings"
    return None


def _binding_mismatches(
    kind: SignedKind,
    doc: Mapping[str, Any],
    stmt: Mapping[str, Any],
    subject: Mapping[str, Any],
    digest: str,
    integrity: Mapping[str, Any],
) -> list[str]:
    pred = stmt.get("predicate") if isinstance(stmt.get("predicate"), dict) else {}
    assert isinstance(pred, dict)
    sdig = subject.get("digest") if isinstance(subject.get("digest"), dict) else {}
    assert isinstance(sdig, dict)
    checks: list[tuple[str, Any, Any]] = [
        ("_type", STATEMENT_V1, stmt.get("_type")),
        ("subject", digest.removeprefix("sha256:"), sdig.get("sha256")),
        ("subject name", subject_name(kind, doc), subject.get("name")),
        ("predicateType", kind.predicate_type, stmt.get("predicateType")),
        ("acxSchemaVersion", doc.get("schemaVersion"), pred.get("acxSchemaVersion")),
        (kind.id_field, doc.get("id"), pred.get(kind.id_field)),
        (kind.version_field, _version(doc), pred.get(kind.version_field)),
        (kind.digest_field, digest, pred.get(kind.digest_field)),
        ("publisherId", integrity.get("publisherId"), pred.get("publisherId")),
        ("signedAt", integrity.get("signedAt"), pred.get("signedAt")),
        *((f, n, pred.get(f)) for f, n in counts(kind, doc).items()),
    ]
    out: list[str] = []
    for name, expected, got in checks:
        if type(expected) is not type(got) or expected != got:
            out.append(f"{name} binding mismatch: expected {_j(expected)[:200]}, got {_j(got)[:200]}")
    return out
