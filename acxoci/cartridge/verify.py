"""Cartridge verification (brief §4): the reference order, plus the checks the reference misses.

Reading is split from deciding, as for install (acxoci/install/checks.py): `read_cartridge` (or
`read_open` on an opened cartridge) does all the I/O and structural checks and returns
`CartridgeFacts`; `decide(facts, registry, now)` is pure and returns the `CartridgeVerdict`, the
integrity part that every acceptance decision calls. `verify_cartridge` is the two together: it
never raises for a merely bad cartridge, only InvalidInput/NotFound when the file is not a
readable cartridge at all.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from acxoci.attest.canonical import loads_strict
from acxoci.attest.dsse import Envelope
from acxoci.attest.errors import AttestError, MalformedError, SignatureError
from acxoci.attest.intoto import Statement
from acxoci.attest.keys import PublicKey, load_public_pem
from acxoci.attest.trust import SignerJudgement, TrustRegistry, judge_signer
from acxoci.cartridge.constants import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    MAX_ENVELOPE_BYTES,
    META_CARTRIDGE_ID,
    META_PUBLISHER,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    SIGNATURE_TARGET,
    STATEMENT_TYPE,
)
from acxoci.cartridge.manifest import RomManifest, compute_rom_manifest
from acxoci.cartridge.reader import Cartridge, SignatureRow, open_cartridge
from acxoci.cartridge.sqlar import BadEntry
from acxoci.errors import InvalidInput

Status = Literal["verified", "warning", "invalid"]
TrustLevel = Literal["trusted", "local", "portable", "unverified", "legacy", "tampered"]

# SPEC order of the trust taxonomy, worst first.
TRUST_ORDER: tuple[TrustLevel, ...] = ("tampered", "legacy", "unverified", "portable", "trusted", "local")

S_UNSIGNED = "Unsigned cartridge (no DSSE envelope)."
S_MALFORMED_ENV = "Malformed DSSE envelope."
S_DIVERGES = "ROM content diverges from signed manifest (object hash mismatch)."
S_UNCOVERED = "ROM holds content not covered by the signed manifest."
S_MALFORMED_CONTENT = "Cartridge content is malformed."
S_DSSE_FAILED = "DSSE verification failed."
S_UNVERIFIED = "Signature present but UNVERIFIED (no public key available)."
S_SUBJECT = "ROM manifest hash mismatch (content changed after signing)."
S_RECORDED = "Recorded manifest hash differs from recomputed ROM."
S_STATEMENT = "Signed statement does not describe this cartridge."
S_KEYID = "Signer keyid does not match the verifying key."


@dataclass(frozen=True)
class CartridgeVerdict:
    """The outcome of verifying one cartridge: status, trust, why, and what was bound."""

    status: Status
    trust: TrustLevel
    summary: str
    issues: tuple[str, ...] = ()
    rom_digest: str | None = None
    keyid: str | None = None
    publisher_id: str | None = None
    signed_at: str | None = None
    file: str | None = None
    key_source: Literal["registry", "cartridge"] | None = None
    in_registry: bool = False
    compromised: bool = False
    checksum_hash: str | None = None
    file_count: int | None = None
    recorded_hash: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.issues

    @property
    def rejected(self) -> bool:
        """True when the verdict is a rejection (the reference's exit 1)."""
        return self.status == "invalid" or self.trust == "tampered"

    def meets(self, require: str | None) -> bool:
        """Whether the trust level satisfies `--require` (None, 'portable' or 'trusted')."""
        if self.rejected:
            return False
        if require is None:
            return True
        if require not in TRUST_ORDER:
            raise ValueError(f"unknown trust level {require!r}")
        return TRUST_ORDER.index(self.trust) >= TRUST_ORDER.index(require)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status, "trust": self.trust, "summary": self.summary, "issues": list(self.issues),
            "romDigest": self.rom_digest, "keyId": self.keyid, "publisherId": self.publisher_id,
            "signedAt": self.signed_at, "inRegistry": self.in_registry, "keySource": self.key_source,
            "checksumHash": self.checksum_hash, "fileCount": self.file_count,
        }
        if self.compromised:
            out["compromised"] = True
        if self.file is not None:
            out["file"] = self.file
        return out


def _status_for(trust: TrustLevel) -> Status:
    if trust == "tampered":
        return "invalid"
    if trust in ("trusted", "local"):
        return "verified"
    return "warning"


def pick_signature(rows: list[SignatureRow]) -> SignatureRow | None:
    """The first `rom-manifest` row by created_at DESC (rows arrive in that order)."""
    return next((r for r in rows if r.target == SIGNATURE_TARGET), None)


def _statement_issues(
    doc: Any, manifest: RomManifest, meta: dict[str, str]
) -> tuple[list[str], list[str], dict[str, Any]]:
    """Check the signed Statement. Returns (subject-hash issues, other binding issues, predicate)."""
    subject_issues: list[str] = []
    issues: list[str] = []
    if not isinstance(doc, dict):
        return [], ["statement is not a JSON object"], {}
    if doc.get("_type") != STATEMENT_TYPE:
        issues.append(f"_type is {doc.get('_type')!r}, expected {STATEMENT_TYPE}")
    if doc.get("predicateType") != PREDICATE_TYPE:
        issues.append(f"predicateType is {doc.get('predicateType')!r}, expected {PREDICATE_TYPE}")
    extra = sorted(set(doc) - {"_type", "subject", "predicateType", "predicate"})
    if extra:
        issues.append(f"statement has unexpected field(s) {extra}")
    try:
        stmt = Statement.from_json(doc, allowed_types=(STATEMENT_TYPE,))
    except MalformedError as exc:
        issues.append(f"statement: {exc}")
        pred = doc.get("predicate")
        return subject_issues, issues, pred if isinstance(pred, dict) else {}
    if len(stmt.subjects) != 1:
        issues.append(f"statement has {len(stmt.subjects)} subjects, expected exactly 1")
    subj = stmt.subjects[0]
    got = subj.digest.get("sha256")
    if got is None:
        issues.append("subject[0].digest.sha256 is missing")
    elif got != manifest.hex:  # the recomputed hex is 64 lower-case digits: nothing else equals it
        subject_issues.append(f"subject.digest {got} != recomputed {manifest.hex}")
    if set(subj.digest) - {"sha256"}:
        issues.append(
            f"subject[0].digest has unexpected algorithm(s) {sorted(set(subj.digest) - {'sha256'})}"
        )
    cid = meta.get(META_CARTRIDGE_ID)
    if subj.name != cid:
        issues.append(f"subject[0].name {subj.name!r} != meta {META_CARTRIDGE_ID} {cid!r}")
    pred = stmt.predicate
    pub = pred.get("publisherId")
    if pub != meta.get(META_PUBLISHER):
        issues.append(f"predicate.publisherId {pub!r} != meta {META_PUBLISHER} {meta.get(META_PUBLISHER)!r}")
    for name in ("romDigest", "manifestHash"):
        if name in pred and pred[name] != manifest.hash:
            subject_issues.append(f"predicate.{name} {pred[name]} != recomputed {manifest.hash}")
    if "checksumHash" in pred and pred["checksumHash"] != manifest.checksum_hash:
        issues.append(f"predicate.checksumHash {pred['checksumHash']} != recomputed {manifest.checksum_hash}")
    if "fileCount" in pred and pred["fileCount"] != manifest.file_count:
        issues.append(f"predicate.fileCount {pred['fileCount']} != recomputed {manifest.file_count}")
    return subject_issues, issues, pred


def _canonical_b64(text: str, data: bytes) -> bool:
    """True if `text` is one of the four canonical base64 spellings of `data` (standard or URL-safe,
    padded or not), so no other spelling of the same bytes passes as an untouched envelope."""
    std = base64.b64encode(data).decode("ascii")
    url = base64.urlsafe_b64encode(data).decode("ascii")
    return text in (std, std.rstrip("="), url, url.rstrip("="))


def _envelope_shape_issues(doc: Any, env: Envelope) -> list[str]:
    """Exactly `{payloadType, payload, signatures:[{keyid?, sig}]}` with canonical base64."""
    issues: list[str] = []
    extra = sorted(set(doc) - {"payloadType", "payload", "signatures"})
    if extra:
        issues.append(f"envelope has unexpected field(s) {extra}")
    if not _canonical_b64(doc["payload"], env.payload):
        issues.append("payload is not canonical base64")
    for i, raw in enumerate(doc["signatures"]):  # env.signatures parsed these, one for one
        extra_sig = sorted(set(raw) - {"keyid", "sig"})
        if extra_sig:
            issues.append(f"signatures[{i}] has unexpected field(s) {extra_sig}")
        if not _canonical_b64(raw["sig"], env.signatures[i].sig):
            issues.append(f"signatures[{i}].sig is not canonical base64")
    return issues


@dataclass(frozen=True)
class CartridgeFacts:
    """Everything a verdict rests on, read from one cartridge: the signature row picked (or why
    the signatures could not be read), the meta table, the rebuilt ROM manifest or why the content
    could not be read (a malformed entry, BadEntry; or a file unreadable as a cartridge, raised
    where the reference's order reads it), and whether the file was changed while it was read."""

    file: str
    signature: SignatureRow | None = None
    signature_error: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    manifest: RomManifest | None = None
    content_problem: InvalidInput | None = None
    changed: bool = False


def read_open(cart: Cartridge) -> CartridgeFacts:
    """The facts of an opened cartridge: signatures first (a malformed row is decided on alone),
    then the meta table, the side tables, every index and the ROM manifest."""
    try:
        sig = pick_signature(cart.signatures())
    except BadEntry as exc:
        return CartridgeFacts(cart.label, signature_error=exc.message)
    try:
        meta = cart.meta()
        cart.check_side_tables()
        cart.check_indexes()
        manifest = compute_rom_manifest(cart)
    except InvalidInput as exc:
        return CartridgeFacts(cart.label, sig, content_problem=exc, changed=_changed(cart))
    return CartridgeFacts(cart.label, sig, meta=meta, manifest=manifest, changed=_changed(cart))


def _changed(cart: Cartridge) -> bool:
    try:
        cart.require_unchanged()
    except InvalidInput:
        return True
    return False


def read_cartridge(
    path: str | os.PathLike[str], *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> CartridgeFacts:
    """Open `path` read-only and read its facts. Raises only if it is not an acceptable cartridge
    file (header, sidecars, schema: InvalidInput naming the field, table or column)."""
    with open_cartridge(path, max_decompressed=max_decompressed) as cart:
        return read_open(cart)


def _content_problem(facts: CartridgeFacts) -> str:
    """The malformed entry that left no manifest; a file unreadable as a cartridge raises here."""
    problem = facts.content_problem
    if isinstance(problem, BadEntry):
        return problem.message
    if problem is None:
        raise InvalidInput("the ROM manifest was not read", where=facts.file)
    raise problem.with_traceback(None)  # the facts may be decided again: no traceback piles up


def decide(facts: CartridgeFacts, *, registry: TrustRegistry | None, now: datetime) -> CartridgeVerdict:
    """The verdict on one cartridge's facts (pure: no I/O; time and registry are inputs)."""

    def verdict(
        trust: TrustLevel, summary: str, issues: list[str] | tuple[str, ...] = (), **kw: Any
    ) -> CartridgeVerdict:
        return CartridgeVerdict(_status_for(trust), trust, summary, tuple(issues), file=facts.file, **kw)

    # 1. signature row (before any content check: an unsigned file is legacy, never tampered)
    if facts.signature_error is not None:
        return verdict("tampered", S_MALFORMED_ENV, [facts.signature_error])
    sig, manifest = facts.signature, facts.manifest
    if sig is None:
        issues = ["Missing rom-manifest signature"]
        if manifest is not None:
            issues += list(manifest.mismatches) + list(manifest.uncovered)
        else:
            issues.append(_content_problem(facts))
        return verdict("legacy", S_UNSIGNED, issues, rom_digest=manifest.hash if manifest else None)

    # 2. envelope
    try:
        env_doc = loads_strict(sig.envelope, max_bytes=MAX_ENVELOPE_BYTES)
        env = Envelope.from_json(env_doc)
    except AttestError as exc:
        return verdict("tampered", S_MALFORMED_ENV, [str(exc)], keyid=sig.keyid)
    shape = _envelope_shape_issues(env_doc, env)
    if shape:
        return verdict("tampered", S_MALFORMED_ENV, shape, keyid=sig.keyid)

    # 3. signer
    keyid = env.signatures[0].keyid or sig.keyid
    binding: list[str] = []
    if env.signatures[0].keyid and sig.keyid and env.signatures[0].keyid != sig.keyid:
        binding.append(f"envelope keyid {env.signatures[0].keyid} != signatures.keyid {sig.keyid}")
    entry = registry.get(keyid) if registry is not None else None

    # 4. ROM objects (and the coverage the reference misses)
    if manifest is None:
        return verdict("tampered", S_MALFORMED_CONTENT, [_content_problem(facts)], keyid=keyid)
    common: dict[str, Any] = dict(rom_digest=manifest.hash, keyid=keyid, checksum_hash=manifest.checksum_hash,
                                  file_count=manifest.file_count, recorded_hash=sig.manifest_hash)
    if manifest.mismatches:
        return verdict("tampered", S_DIVERGES, manifest.mismatches, **common)
    if manifest.uncovered:
        return verdict("tampered", S_UNCOVERED, manifest.uncovered, **common)

    # 5. DSSE with the registry key, else the cartridge's key; keyid must be sha256(SPKI) of it
    key: PublicKey | None = None
    key_source: Literal["registry", "cartridge"] | None = None
    if entry is not None:
        key, key_source = entry.public_key, "registry"
    elif sig.public_key_pem:
        key_source = "cartridge"
        try:
            key = load_public_pem(sig.public_key_pem)
        except MalformedError as exc:
            return verdict("tampered", S_DSSE_FAILED, [f"public_key_pem: {exc}"], key_source=key_source,
                           **common)
    common["key_source"] = key_source
    if env.payload_type != PAYLOAD_TYPE:
        why = f"payloadType is {env.payload_type!r}, expected {PAYLOAD_TYPE}"
        return verdict("tampered", S_DSSE_FAILED, [why], **common)
    if key is not None:
        if key.keyid() != keyid:
            why = f"keyid {keyid} != sha256(SPKI) of the verifying key {key.keyid()}"
            return verdict("tampered", S_KEYID, [why], **common)
        try:
            env.verify(key, index=0)
        except SignatureError as exc:
            return verdict("tampered", S_DSSE_FAILED, [str(exc)], **common)
    if binding:
        return verdict("tampered", S_KEYID, binding, **common)

    # 6. subject and statement binding (checked even when unverified: an inconsistent file is rejected)
    try:
        stmt_doc = loads_strict(env.payload, max_bytes=MAX_ENVELOPE_BYTES)
    except MalformedError as exc:
        return verdict("tampered", S_DSSE_FAILED, [f"payload: {exc}"], **common)
    subject_issues, stmt_issues, pred = _statement_issues(stmt_doc, manifest, facts.meta)
    publisher = pred.get("publisherId") if isinstance(pred.get("publisherId"), str) else None
    raw_signed = pred.get("signedAt")
    signed_at: str = raw_signed if isinstance(raw_signed, str) else sig.created_at
    common.update(publisher_id=publisher, signed_at=signed_at)
    if subject_issues:
        return verdict("tampered", S_SUBJECT, subject_issues, **common)
    if stmt_issues:
        return verdict("tampered", S_STATEMENT, stmt_issues, **common)

    # 7. recorded hash
    if sig.manifest_hash != manifest.hash:
        why = f"signatures.manifest_hash {sig.manifest_hash} != {manifest.hash}"
        return verdict("tampered", S_RECORDED, [why], **common)

    if key is None:
        return verdict("unverified", S_UNVERIFIED, ["no public key in the cartridge or the trust registry"],
                       **common)

    # 8. registry
    j: SignerJudgement = judge_signer(entry, signed_publisher=publisher or "", signed_at=signed_at, now=now)
    return verdict(j.trust, j.summary, j.issues, in_registry=j.in_registry, compromised=j.compromised,
                   extra={"signerFacts": j.facts}, **common)


def _accepted(facts: CartridgeFacts, verdict: CartridgeVerdict) -> CartridgeVerdict:
    """The verdict, unless the file was written or replaced while it was read: then no verdict
    that accepts it is given (a TAMPERED one stands as it is)."""
    if facts.changed and verdict.trust != "tampered":
        raise InvalidInput("the file changed while it was being verified; refusing it", where=facts.file)
    return verdict


def verify_open(cart: Cartridge, *, registry: TrustRegistry | None, now: datetime) -> CartridgeVerdict:
    """Verify an already opened cartridge (see `verify_cartridge`)."""
    facts = read_open(cart)
    return _accepted(facts, decide(facts, registry=registry, now=now))


def verify_cartridge(
    path: str | os.PathLike[str],
    *,
    registry: TrustRegistry | None,
    now: datetime,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> CartridgeVerdict:
    """Open `path` read-only and verify it. Raises only if it is not an acceptable cartridge file
    (header, sidecars, schema: InvalidInput naming the field, table or column)."""
    facts = read_cartridge(path, max_decompressed=max_decompressed)
    return _accepted(facts, decide(facts, registry=registry, now=now))
