"""Workflow signature verification: every binding check of the ACX brief §9.5, in its order,
then the trust registry through the same `attest.trust.judge_signer` cartridges use.

Pure: the document, the registry and the time are inputs; the verdict is a value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from acxoci.errors import InvalidInput
from acxoci.workflow.lineage import check_lineage
from acxoci.workflow.model import PREDICATE_TYPE, PUBLISHER_RE, RFC3339_RE, SIGNATURE_SCHEMA_VERSION
from acxoci.workflow.sign import INTEGRITY_FIELDS, subject_name, unsigned_view, workflow_digest
from attest.canonical import loads_strict
from attest.dsse import INTOTO_PAYLOAD_TYPE, Envelope
from attest.errors import AttestError, MalformedError, SignatureError
from attest.intoto import STATEMENT_V1
from attest.keys import PublicKey, load_public_pem
from attest.trust import TrustRegistry, judge_signer, parse_rfc3339

Status = Literal["verified", "warning", "invalid"]
WorkflowTrust = Literal["trusted", "portable", "unsigned", "tampered"]

KEYID_RE = re.compile(r"^ed25519:[0-9a-f]{64}$")


@dataclass(frozen=True)
class WorkflowVerdict:
    """`{ok, signed, status, trust, digest, publisherId, keyid, issues}` of one verification."""

    ok: bool
    signed: bool
    status: Status
    trust: WorkflowTrust
    digest: str
    publisher_id: str | None = None
    keyid: str | None = None
    signed_at: str | None = None
    issues: tuple[str, ...] = ()
    summary: str = ""

    @property
    def rejected(self) -> bool:
        """True when the workflow must not be used (invalid/tampered)."""
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


def verify_workflow(
    doc: Mapping[str, Any], *, registry: TrustRegistry | None, now: datetime
) -> WorkflowVerdict:
    """Verify a workflow document: unsigned → warning/unsigned (ok); any failed binding →
    invalid/tampered; a good signature → portable, trusted or (compromised key) tampered."""
    try:
        digest = workflow_digest(doc)
    except AttestError as exc:  # e.g. an integer outside the JCS domain: no digest, so no verdict
        raise InvalidInput(f"workflow cannot be canonicalised: {exc}") from exc
    integrity = doc.get("integrity")
    if integrity is None:
        return WorkflowVerdict(
            True,
            False,
            "warning",
            "unsigned",
            digest,
            issues=("workflow has no integrity signature",),
            summary="Unsigned workflow (no integrity block).",
        )
    pub_id = integrity.get("publisherId") if isinstance(integrity, dict) else None
    keyid = integrity.get("keyid") if isinstance(integrity, dict) else None
    signed_at = integrity.get("signedAt") if isinstance(integrity, dict) else None

    def tampered(*issues: str) -> WorkflowVerdict:
        return WorkflowVerdict(
            False,
            True,
            "invalid",
            "tampered",
            digest,
            pub_id if isinstance(pub_id, str) else None,
            keyid if isinstance(keyid, str) else None,
            signed_at if isinstance(signed_at, str) else None,
            tuple(issues),
            "Workflow signature does not verify.",
        )

    body = unsigned_view(doc)
    lineage_issues = check_lineage(
        body.get("lineage"),
        artifact_type="workflow",
        publisher_id=pub_id if isinstance(pub_id, str) else None,
        artifact_id=body.get("id"),
        version=body.get("version"),
    )
    if lineage_issues:
        return tampered(*(i.text() for i in lineage_issues))
    if not isinstance(integrity, dict) or set(integrity) != set(INTEGRITY_FIELDS):
        return tampered(
            "integrity must contain exactly the acx.workflow-signature/1 fields"
            + (f" (got {sorted(integrity)})" if isinstance(integrity, dict) else "")
        )
    if integrity["schemaVersion"] != SIGNATURE_SCHEMA_VERSION:
        return tampered(f"unexpected integrity schemaVersion {_j(integrity['schemaVersion'])}")
    if not isinstance(pub_id, str) or not PUBLISHER_RE.match(pub_id):
        return tampered("publisherId must be a reverse-DNS identifier")
    if not isinstance(keyid, str) or not KEYID_RE.match(keyid):
        return tampered("keyid must identify an Ed25519 public key")
    if not isinstance(signed_at, str) or not RFC3339_RE.match(signed_at):
        return tampered("signedAt must be an RFC 3339 date-time")
    try:
        parse_rfc3339(signed_at, where="integrity.signedAt")
    except MalformedError:
        return tampered("signedAt must be an RFC 3339 date-time")
    if integrity["digest"] != digest:
        return tampered(f"workflow digest mismatch: signed {integrity['digest']}, computed {digest}")
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
            f"(publicKeyPem {key.keyid()}, integrity {keyid}, envelope {env.signatures[0].keyid})"
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
        return tampered("in-toto Statement must contain exactly one workflow subject")
    mismatches = _binding_mismatches(doc, stmt, subjects[0], digest, integrity)
    if mismatches:
        return tampered(*mismatches)

    j = judge_signer(entry, signed_publisher=pub_id, signed_at=signed_at, now=now)

    def verdict(
        ok: bool, status: Status, trust: WorkflowTrust, summary: str, issues: tuple[str, ...]
    ) -> WorkflowVerdict:
        return WorkflowVerdict(ok, True, status, trust, digest, pub_id, keyid, signed_at, issues, summary)

    if not j.in_registry:
        # The reference reports an unknown workflow signer as verified/portable (cartridges: warning).
        return verdict(
            True,
            "verified",
            "portable",
            "Signature valid; signer not in trust registry.",
            ("signer keyid not in trust registry",),
        )
    assert entry is not None
    if entry.publisher_id != pub_id:
        return verdict(
            False,
            "invalid",
            "tampered",
            "Trust registry publisher differs from the signed one.",
            (f"registry publisherId {entry.publisher_id} does not match signed publisherId {pub_id}",),
        )
    if j.compromised:
        return verdict(False, "invalid", "tampered", j.summary, ("signer key revoked due to key compromise",))
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
    version = doc.get("version")
    participants = doc.get("participants")
    nodes = doc.get("nodes")
    checks: list[tuple[str, Any, Any]] = [
        ("_type", STATEMENT_V1, stmt.get("_type")),
        ("subject", digest.removeprefix("sha256:"), sdig.get("sha256")),
        ("subject name", subject_name(doc), subject.get("name")),
        ("predicateType", PREDICATE_TYPE, stmt.get("predicateType")),
        ("acxSchemaVersion", doc.get("schemaVersion"), pred.get("acxSchemaVersion")),
        ("workflowId", doc.get("id"), pred.get("workflowId")),
        ("workflowVersion", version if isinstance(version, str) else None, pred.get("workflowVersion")),
        ("workflowDigest", digest, pred.get("workflowDigest")),
        ("publisherId", integrity.get("publisherId"), pred.get("publisherId")),
        ("signedAt", integrity.get("signedAt"), pred.get("signedAt")),
        (
            "participants",
            len(participants) if isinstance(participants, list) else 0,
            pred.get("participants"),
        ),
        ("nodes", len(nodes) if isinstance(nodes, list) else 0, pred.get("nodes")),
    ]
    out: list[str] = []
    for name, expected, got in checks:
        if type(expected) is not type(got) or expected != got:
            out.append(f"{name} binding mismatch: expected {_j(expected)}, got {_j(got)}")
    return out
