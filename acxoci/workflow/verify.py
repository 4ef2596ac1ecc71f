"""Workflow signature verification: every binding check of the ACX brief §9.5, in its order,
then the trust registry through the same `attest.trust.judge_signer` cartridges use.

Pure: the document, the registry and the time are inputs; the verdict is a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from acxoci.attest.trust import TrustRegistry
from acxoci.workflow import signed
from acxoci.workflow.issues import ABSENT
from acxoci.workflow.lineage import check_lineage
from acxoci.workflow.sign import KIND
from acxoci.workflow.signed import KEYID_RE, SignedTrust, SignedVerdict, Status

__all__ = ["KEYID_RE", "Status", "WorkflowTrust", "WorkflowVerdict", "verify_workflow"]

WorkflowTrust = SignedTrust
#: A workflow verdict is the shared signed-document verdict.
WorkflowVerdict = SignedVerdict


def _lineage(body: Mapping[str, Any], publisher_id: str | None) -> list[str]:
    issues = check_lineage(
        body.get("lineage", ABSENT),
        artifact_type="workflow",
        publisher_id=publisher_id,
        artifact_id=body.get("id"),
        version=body.get("version"),
    )
    return [i.text() for i in issues]


def verify_workflow(
    doc: Mapping[str, Any], *, registry: TrustRegistry | None, now: datetime
) -> WorkflowVerdict:
    """Verify a workflow document: unsigned → warning/unsigned (ok); any failed binding →
    invalid/tampered; a good signature → portable, trusted or (compromised key) tampered."""
    return signed.verify_document(KIND, doc, registry=registry, now=now, precheck=_lineage)
