"""Workflow digests and signing (`acx.workflow-signature/1`).

digest = `sha256:` + hex(sha256(JCS(document without its top-level `integrity`))); the signature
is a DSSE envelope over the JCS of an in-toto Statement that binds the digest, id, version,
publisher, time and counts. The integrity block has exactly seven fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acxoci.errors import InvalidInput, RefusedByPolicy
from acxoci.fsutil import atomic_write
from acxoci.workflow.lineage import check_lineage
from acxoci.workflow.lint import lint
from acxoci.workflow.model import PREDICATE_TYPE, PUBLISHER_RE, SIGNATURE_SCHEMA_VERSION
from attest import dsse
from attest.canonical import jcs as canonical
from attest.canonical import jcs_digest as canonical_digest
from attest.intoto import STATEMENT_V1
from attest.keys import PrivateKey

INTEGRITY_FIELDS = ("schemaVersion", "digest", "publisherId", "keyid", "publicKeyPem", "signedAt", "envelope")


def unsigned_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document without its top-level `integrity` (what the digest covers)."""
    return {k: v for k, v in doc.items() if k != "integrity"}


def workflow_digest(doc: Mapping[str, Any]) -> str:
    """The workflow digest: key order and whitespace do not matter, every value does."""
    return canonical_digest(unsigned_view(doc))


def subject_name(doc: Mapping[str, Any]) -> str:
    """`urn:acx:workflow:<id>@<version|unversioned>`."""
    version = doc.get("version")
    return f"urn:acx:workflow:{doc.get('id')}@{version if isinstance(version, str) else 'unversioned'}"


def iso_millis(when: datetime) -> str:
    """RFC 3339 UTC with milliseconds and `Z`, as JavaScript's toISOString writes it."""
    if when.tzinfo is None:
        raise ValueError("signing time must be timezone-aware")
    utc = when.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def build_statement(
    doc: Mapping[str, Any], *, digest: str, publisher_id: str, signed_at: str
) -> dict[str, Any]:
    """The in-toto Statement v1 a workflow signature covers."""
    version = doc.get("version")
    participants = doc.get("participants")
    nodes = doc.get("nodes")
    return {
        "_type": STATEMENT_V1,
        "subject": [{"name": subject_name(doc), "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "acxSchemaVersion": doc.get("schemaVersion"),
            "workflowId": doc.get("id"),
            "workflowVersion": version if isinstance(version, str) else None,
            "publisherId": publisher_id,
            "workflowDigest": digest,
            "signedAt": signed_at,
            "participants": len(participants) if isinstance(participants, list) else 0,
            "nodes": len(nodes) if isinstance(nodes, list) else 0,
        },
    }


def sign_workflow(
    doc: Mapping[str, Any],
    *,
    publisher_id: str,
    key: PrivateKey,
    now: datetime,
    require_publishable: bool = True,
) -> dict[str, Any]:
    """Return a copy of `doc` with a fresh `integrity` block. Refuses a non-reverse-DNS publisher,
    a non-Ed25519 key, bad lineage, and (by default) anything the publish lint rejects."""
    if not PUBLISHER_RE.fullmatch(publisher_id):
        raise InvalidInput(
            "publisher must be a reverse-DNS identifier (e.g. io.github.you)",
            where="--publisher",
            details={"value": publisher_id},
        )
    pub = key.public()
    if pub.algorithm != "ed25519":
        raise InvalidInput(f"workflow signatures need an Ed25519 key, got {pub.algorithm}", where="--key")
    body = unsigned_view(doc)
    lineage_issues = check_lineage(
        body.get("lineage"),
        artifact_type="workflow",
        publisher_id=publisher_id,
        artifact_id=body.get("id"),
        version=body.get("version"),
    )
    if lineage_issues:
        raise RefusedByPolicy("refusing to sign: " + "; ".join(i.text() for i in lineage_issues))
    if require_publishable:
        result = lint(body, publish=True)
        if not result.ok:
            raise RefusedByPolicy(
                f"refusing to sign: lint --publish found {len(result.errors)} issue(s): "
                + "; ".join(i.text() for i in result.errors[:5]),
                details={"issues": [i.to_json() for i in result.errors]},
            )
    digest = canonical_digest(body)
    signed_at = iso_millis(now)
    statement = build_statement(body, digest=digest, publisher_id=publisher_id, signed_at=signed_at)
    keyid = pub.keyid()
    envelope = dsse.sign(dsse.INTOTO_PAYLOAD_TYPE, canonical(statement), key, keyid)
    out = dict(body)
    out["integrity"] = {
        "schemaVersion": SIGNATURE_SCHEMA_VERSION,
        "digest": digest,
        "publisherId": publisher_id,
        "keyid": keyid,
        "publicKeyPem": pub.spki_pem(),
        "signedAt": signed_at,
        "envelope": envelope.to_json(),
    }
    return out


def render(doc: Mapping[str, Any]) -> str:
    """The file form: 2-space indent, non-ASCII kept, final newline."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write text atomically (temp file in the same folder, fsync, rename)."""
    atomic_write(path.resolve(), text.encode("utf-8"))


def default_signed_name(source: Path) -> Path:
    """`<name>.signed.cal.json` next to the input (`x.cal.json` → `x.signed.cal.json`)."""
    name = source.name
    for suffix in (".cal.json", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith(".signed"):
        name = name[: -len(".signed")]
    return source.with_name(f"{name}.signed.cal.json")
