"""The in-toto statements acxoci attests: cartridge, workflow, or any predicate.

The subject is always the OCI manifest digest (named by the repository), so stock cosign
accepts it; the predicate binds that registry object to the ROM / workflow content. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acxoci.attest.canonical import jcs_digest, loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.intoto import STATEMENT_V1, Statement, Subject
from acxoci.errors import InvalidInput

CARTRIDGE_PREDICATE_TYPE = "https://acx.dev/attestation/cartridge/v1"
WORKFLOW_PREDICATE_TYPE = "https://acx.dev/attestation/workflow/v1"
GRAPH_PREDICATE_TYPE = "https://acx.dev/attestation/agent-graph/v1"
ACX_PREDICATE_TYPES = (CARTRIDGE_PREDICATE_TYPE, WORKFLOW_PREDICATE_TYPE, GRAPH_PREDICATE_TYPE)
OCI_BINDING = "oci-manifest"


@dataclass(frozen=True)
class CartridgeFacts:
    """The cartridge's signed facts plus the registry layer that carries the file."""

    rom_digest: str
    manifest_hash: str
    publisher_id: str
    checksum_hash: str
    file_count: int
    signed_at: str
    layer_digest: str
    cartridge_id: str | None = None
    signer_keyid: str | None = None

    def predicate(self) -> dict[str, Any]:
        """The `https://acx.dev/attestation/cartridge/v1` predicate (OCI binding form)."""
        out: dict[str, Any] = {
            "binding": OCI_BINDING,
            "romDigest": self.rom_digest,
            "manifestHash": self.manifest_hash,
            "publisherId": self.publisher_id,
            "checksumHash": self.checksum_hash,
            "fileCount": self.file_count,
            "signedAt": self.signed_at,
            "layerDigest": self.layer_digest,
        }
        if self.cartridge_id is not None:
            out["cartridgeId"] = self.cartridge_id
        if self.signer_keyid is not None:
            out["cartridgeKeyId"] = self.signer_keyid
        return out


@dataclass(frozen=True)
class WorkflowFacts:
    """A workflow's identity and JCS digest (sha256 of JCS of the document without `integrity`)."""

    workflow_digest: str
    layer_digest: str
    workflow_id: str | None = None
    workflow_version: str | None = None
    publisher_id: str | None = None
    signed_at: str | None = None

    def predicate(self) -> dict[str, Any]:
        """The `https://acx.dev/attestation/workflow/v1` predicate (OCI binding form). `signedAt` is
        the workflow's own signing time, like the cartridge predicate's (the trust table needs it)."""
        out: dict[str, Any] = {
            "binding": OCI_BINDING,
            "workflowDigest": self.workflow_digest,
            "workflowId": self.workflow_id,
            "workflowVersion": self.workflow_version,
            "publisherId": self.publisher_id,
            "layerDigest": self.layer_digest,
        }
        if self.signed_at is not None:
            out["signedAt"] = self.signed_at
        return out


@dataclass(frozen=True)
class GraphFacts:
    """An Agent Graph's identity and JCS digest (computed as for workflows)."""

    graph_digest: str
    layer_digest: str
    graph_id: str | None = None
    graph_version: str | None = None
    publisher_id: str | None = None

    def predicate(self) -> dict[str, Any]:
        """The `https://acx.dev/attestation/agent-graph/v1` predicate (OCI binding form)."""
        return {
            "binding": OCI_BINDING,
            "agentGraphDigest": self.graph_digest,
            "agentGraphId": self.graph_id,
            "agentGraphVersion": self.graph_version,
            "publisherId": self.publisher_id,
            "layerDigest": self.layer_digest,
        }


def _subject(subject_digest: str, name: str) -> Subject:
    alg, sep, hexpart = subject_digest.partition(":")
    if not sep or alg != "sha256" or len(hexpart) != 64:
        raise InvalidInput(f"subject digest {subject_digest!r} is not sha256:<64 hex>")
    return Subject(name, {"sha256": hexpart})


def oci_statement(subject_digest: str, name: str, predicate_type: str,
                  predicate: dict[str, Any]) -> Statement:
    """A Statement v1 about the OCI manifest `subject_digest`."""
    if not predicate_type:
        raise InvalidInput("predicate type is empty")
    return Statement((_subject(subject_digest, name),), predicate_type, dict(predicate), STATEMENT_V1)


def cartridge_statement(subject_digest: str, repository: str, facts: CartridgeFacts) -> Statement:
    """Cartridge attestation: subject = OCI manifest digest, predicate = the signed ROM facts."""
    return oci_statement(subject_digest, repository, CARTRIDGE_PREDICATE_TYPE, facts.predicate())


def workflow_statement(subject_digest: str, repository: str, facts: WorkflowFacts) -> Statement:
    """Workflow attestation: subject = OCI manifest digest, predicate carries the workflow digest."""
    return oci_statement(subject_digest, repository, WORKFLOW_PREDICATE_TYPE, facts.predicate())


def workflow_digest(document: Any) -> str:
    """`sha256:` + hex(sha256(JCS(document without its top-level integrity))) (brief §9.4)."""
    if not isinstance(document, dict):
        raise InvalidInput("workflow document is not a JSON object")
    return jcs_digest({k: v for k, v in document.items() if k != "integrity"})


def workflow_facts(data: bytes, layer_digest: str, *, where: str = "workflow") -> WorkflowFacts:
    """Parse a workflow document and compute its facts."""
    try:
        doc = loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=where) from exc
    if not isinstance(doc, dict):
        raise InvalidInput("workflow document is not a JSON object", where=where)
    integ = doc.get("integrity")
    publisher = integ.get("publisherId") if isinstance(integ, dict) else None
    signed_at = integ.get("signedAt") if isinstance(integ, dict) else None
    wid, ver = doc.get("id"), doc.get("version")
    return WorkflowFacts(workflow_digest(doc), layer_digest, wid if isinstance(wid, str) else None,
                         ver if isinstance(ver, str) else None,
                         publisher if isinstance(publisher, str) else None,
                         signed_at if isinstance(signed_at, str) else None)


def graph_statement(subject_digest: str, repository: str, facts: GraphFacts) -> Statement:
    """Agent Graph attestation: subject = OCI manifest digest, predicate carries the graph digest."""
    return oci_statement(subject_digest, repository, GRAPH_PREDICATE_TYPE, facts.predicate())


def graph_facts(data: bytes, layer_digest: str, *, where: str = "agent graph") -> GraphFacts:
    """Parse an Agent Graph document and compute its facts (same digest rule as a workflow)."""
    f = workflow_facts(data, layer_digest, where=where)
    return GraphFacts(f.workflow_digest, layer_digest, f.workflow_id, f.workflow_version, f.publisher_id)


def parse_predicate_file(data: bytes, *, where: str) -> dict[str, Any]:
    """A `--predicate` file: a JSON object (strict parse)."""
    try:
        doc = loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=where) from exc
    if not isinstance(doc, dict):
        raise InvalidInput("predicate must be a JSON object", where=where)
    return doc


def subject_matches(statement: Statement, subject_digest: str) -> bool:
    """True if any statement subject has `digest.sha256` equal to the manifest digest (cosign's rule)."""
    hexpart = subject_digest.removeprefix("sha256:")
    return any(s.digest.get("sha256") == hexpart for s in statement.subjects)
