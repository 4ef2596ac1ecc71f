"""Lineage of workflows and graphs: the closed `lineage{parents[1..8], note?}` shape, its rules,
and the remix operation that turns a signed parent into a digest-pinned draft."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from acxoci.attest.canonical import jcs_digest as canonical_digest
from acxoci.errors import InvalidInput, Tampered
from acxoci.workflow.issues import ABSENT, Issue, one_of
from acxoci.workflow.model import DIGEST_RE, IDENT_RE, PUBLISHER_RE, SEMVER_RE

ARTIFACT_TYPES = frozenset({"agent", "workflow", "agent-graph"})
RELATIONS = ("fork", "remix", "derived-from", "supersedes")
PARENT_KEYS = frozenset({"artifactType", "publisherId", "id", "version", "digest", "relation", "source"})
LINEAGE_KEYS = frozenset({"parents", "note"})
MAX_PARENTS = 8
_WS = re.compile(r"\s")


def _source_ok(src: Any) -> bool:
    if not isinstance(src, str) or len(src) > 2048 or _WS.search(src):
        return False
    try:
        parts = urlsplit(src)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.hostname) and "@" not in parts.netloc


def check_lineage(
    lineage: Any,
    *,
    artifact_type: str,
    publisher_id: str | None,
    artifact_id: Any,
    version: Any,
    path: str = "$.lineage",
) -> list[Issue]:
    """Every lineage rule. `publisher_id` is the artifact's own publisher (None for an unsigned
    draft, in which case the self-collision rule cannot apply yet)."""
    if lineage is ABSENT:
        return []
    issues: list[Issue] = []
    if not isinstance(lineage, dict):
        return [Issue("lineage-shape", path, "lineage must be an object", lineage)]
    for k in sorted(set(lineage) - LINEAGE_KEYS):
        issues.append(Issue("unknown-property", f"{path}.{k}", "lineage contains an unknown property", k))
    if "note" in lineage:
        note = lineage["note"]
        if not isinstance(note, str) or not 1 <= len(note) <= 1000:
            issues.append(
                Issue("lineage-note", f"{path}.note", "note must be a 1-1000 character string", note)
            )
    parents = lineage.get("parents")
    if not isinstance(parents, list) or not 1 <= len(parents) <= MAX_PARENTS:
        issues.append(
            Issue(
                "lineage-parents",
                f"{path}.parents",
                f"parents must be an array of 1-{MAX_PARENTS} entries",
                parents,
            )
        )
        return issues
    seen: set[tuple[str, str, str, str, str]] = set()
    for i, parent in enumerate(parents):
        p = f"{path}.parents[{i}]"
        if not isinstance(parent, dict):
            issues.append(Issue("lineage-parent", p, "a lineage parent must be an object", parent))
            continue
        for k in sorted(set(parent) - PARENT_KEYS):
            issues.append(
                Issue("unknown-property", f"{p}.{k}", "lineage parent contains an unknown property", k)
            )
        ok = True
        if not one_of(parent.get("artifactType"), ARTIFACT_TYPES):
            issues.append(
                Issue(
                    "lineage-parent",
                    f"{p}.artifactType",
                    f"artifactType must be one of {', '.join(sorted(ARTIFACT_TYPES))}",
                    parent.get("artifactType"),
                )
            )
            ok = False
        pub = parent.get("publisherId")
        if not isinstance(pub, str) or not PUBLISHER_RE.fullmatch(pub):
            issues.append(
                Issue(
                    "lineage-parent",
                    f"{p}.publisherId",
                    "publisherId must be reverse-DNS",
                    parent.get("publisherId"),
                )
            )
            ok = False
        if not isinstance(parent.get("id"), str) or not IDENT_RE.fullmatch(parent["id"]):
            issues.append(
                Issue(
                    "lineage-parent", f"{p}.id", "id must match ^[a-z][a-z0-9._-]{0,127}$", parent.get("id")
                )
            )
            ok = False
        if "version" in parent and (
            not isinstance(parent["version"], str) or not SEMVER_RE.fullmatch(parent["version"])
        ):
            issues.append(
                Issue("lineage-parent", f"{p}.version", "version must be SemVer", parent["version"])
            )
            ok = False
        if not isinstance(parent.get("digest"), str) or not DIGEST_RE.fullmatch(parent["digest"]):
            issues.append(
                Issue("lineage-parent", f"{p}.digest", "digest must be sha256:<64 hex>", parent.get("digest"))
            )
            ok = False
        if not one_of(parent.get("relation"), RELATIONS):
            issues.append(
                Issue(
                    "lineage-parent",
                    f"{p}.relation",
                    f"relation must be one of {', '.join(RELATIONS)}",
                    parent.get("relation"),
                )
            )
            ok = False
        if "source" in parent and not _source_ok(parent["source"]):
            issues.append(
                Issue(
                    "lineage-source",
                    f"{p}.source",
                    "source must be an https URL of at most 2048 characters, without whitespace or userinfo",
                    parent["source"],
                )
            )
        if not ok:
            continue
        ident = (
            parent["artifactType"],
            parent["publisherId"],
            parent["id"],
            parent.get("version", ""),
            parent["digest"],
        )
        if ident in seen:
            issues.append(
                Issue("lineage-duplicate", p, "lineage lists the same parent twice", "/".join(ident))
            )
        seen.add(ident)
        pv = parent.get("version")
        if (
            publisher_id is not None
            and parent["artifactType"] == artifact_type
            and parent["publisherId"] == publisher_id
            and parent["id"] == artifact_id
            and (pv is None or version is None or pv == version)
        ):
            issues.append(
                Issue(
                    "lineage-self",
                    p,
                    "a lineage parent collides with the artifact's own registry identity "
                    "(same type, publisher and id; bump the version or change the id)",
                    f"{parent['publisherId']}/{parent['id']}@{pv or version or ''}",
                )
            )
    return issues


def remix(
    signed: Mapping[str, Any],
    relation: str,
    *,
    new_id: str | None = None,
    new_version: str | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """Make an unsigned draft from a signed workflow: drop its integrity and record it as the
    one lineage parent, pinned by its recomputed digest (which must equal the signed digest)."""
    if relation not in RELATIONS:
        raise InvalidInput(f"relation must be one of {', '.join(RELATIONS)}", where="--relation")
    integrity = signed.get("integrity")
    if not isinstance(integrity, dict):
        raise InvalidInput("only a signed workflow can be remixed (no integrity block)", where="integrity")
    publisher = integrity.get("publisherId")
    if not isinstance(publisher, str) or not PUBLISHER_RE.fullmatch(publisher):
        raise InvalidInput("parent integrity.publisherId is not reverse-DNS", where="integrity.publisherId")
    draft = {k: copy.deepcopy(v) for k, v in signed.items() if k != "integrity"}
    digest = canonical_digest(draft)
    if integrity.get("digest") != digest:
        raise Tampered(
            f"parent digest mismatch: signed {integrity.get('digest')}, computed {digest}",
            where="integrity.digest",
        )
    parent: dict[str, Any] = {"artifactType": "workflow", "publisherId": publisher, "id": signed.get("id")}
    if isinstance(signed.get("version"), str):
        parent["version"] = signed["version"]
    parent["digest"] = digest
    parent["relation"] = relation
    if source is not None:
        parent["source"] = source
    draft["lineage"] = {"parents": [parent]}
    if new_id is not None:
        draft["id"] = new_id
    if new_version is not None:
        draft["version"] = new_version
    issues = check_lineage(
        draft["lineage"],
        artifact_type="workflow",
        publisher_id=None,
        artifact_id=draft.get("id"),
        version=draft.get("version"),
    )
    if issues:
        raise InvalidInput("remix produced invalid lineage: " + "; ".join(i.text() for i in issues))
    return draft
