"""Workflow digests and signing (`acx.workflow-signature/1`).

digest = `sha256:` + hex(sha256(JCS(document without its top-level `integrity`))); the signature
is a DSSE envelope over the JCS of an in-toto Statement that binds the digest, id, version,
publisher, time and counts. The integrity block has exactly seven fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PrivateKey
from acxoci.fsutil import atomic_write
from acxoci.workflow import signed
from acxoci.workflow.issues import ABSENT
from acxoci.workflow.lineage import check_lineage
from acxoci.workflow.lint import lint
from acxoci.workflow.model import PREDICATE_TYPE, SIGNATURE_SCHEMA_VERSION
from acxoci.workflow.signed import INTEGRITY_FIELDS, iso_millis, unsigned_view

__all__ = [
    "INTEGRITY_FIELDS",
    "KIND",
    "build_statement",
    "default_signed_name",
    "iso_millis",
    "render",
    "sign_workflow",
    "subject_name",
    "unsigned_view",
    "workflow_digest",
    "write_atomic",
]

#: The workflow's names in the shared signed-document machinery (`acxoci.workflow.signed`).
KIND = signed.SignedKind(
    label="workflow",
    urn="workflow",
    signature_schema=SIGNATURE_SCHEMA_VERSION,
    predicate_type=PREDICATE_TYPE,
    id_field="workflowId",
    version_field="workflowVersion",
    digest_field="workflowDigest",
    counts=(("participants", "participants"), ("nodes", "nodes")),
)


def workflow_digest(doc: Mapping[str, Any]) -> str:
    """The workflow digest: key order and whitespace do not matter, every value does."""
    return signed.document_digest(doc)


def subject_name(doc: Mapping[str, Any]) -> str:
    """`urn:acx:workflow:<id>@<version|unversioned>`."""
    return signed.subject_name(KIND, doc)


def build_statement(
    doc: Mapping[str, Any], *, digest: str, publisher_id: str, signed_at: str
) -> dict[str, Any]:
    """The in-toto Statement v1 a workflow signature covers."""
    return signed.build_statement(KIND, doc, digest=digest, publisher_id=publisher_id, signed_at=signed_at)


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

    def refusals(body: Mapping[str, Any]) -> list[str]:
        lineage_issues = check_lineage(
            body.get("lineage", ABSENT),
            artifact_type="workflow",
            publisher_id=publisher_id,
            artifact_id=body.get("id"),
            version=body.get("version"),
        )
        if lineage_issues:
            return [i.text() for i in lineage_issues]
        if require_publishable:
            result = lint(body, publish=True)
            if not result.ok:
                return [f"lint --publish: {i.text()}" for i in result.errors]
        return []

    return signed.sign_document(KIND, doc, publisher_id=publisher_id, key=key, now=now, refusals=refusals)


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
