"""Re-derive an Exchange folder's `index.json` (`acx.registry-index/1`) from its artifacts, verifying
every one with acxoci's own verifiers, with the reference builder's rules: which artifacts are
accepted (canonical coordinate path, signature not tampered/legacy/invalid, clean package spec,
ROM-only cartridges; signed, publishable workflows), the discovery card of each, `latest`, the
sort orders, lifecycle from `status.json`, and `generatedAt` (the newest source timestamp).

The bytes are `JSON.stringify(index, null, 2) + "\\n"`, which `index_bytes` reproduces.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from msgspec import UNSET, UnsetType

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import AttestError
from acxoci.attest.typed import DocumentTypeError, decode_as
from acxoci.cartridge.capabilities import read_capability
from acxoci.documents.exchange_index import ExchangeIndexDoc
from acxoci.documents.level_credential import LevelCredentialDoc
from acxoci.errors import AcxError, InvalidInput
from acxoci.exchange import graphs as G
from acxoci.exchange.coordinates import folder_path
from acxoci.exchange.errors import GraphSupportPending
from acxoci.exchange.order import locale_key, semver_cmp, semver_key
from acxoci.exchange.status import (
    AGENT_ID_RE,
    ID_RE,
    SEMVER_RE,
    Ledger,
    empty_ledger,
    identity_key,
    parse_ledger,
    parse_time,
)
from acxoci.exchange.walk import Walk, walk
from acxoci.fsutil import read_bytes

INDEX_SCHEMA = "acx.registry-index/1"
INDEX_FILE = "index.json"
STATUS_FILE = "status.json"
TRUST_FILE = "trust-registry.json"
MAX_DOC_BYTES = 16 * 1024 * 1024
PUBLISHER_SEGMENT_RE = __import__("re").compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*$")
TEMPLATE_DESCRIPTION = "An editable ACX starter package. Inspect and personalize every file before export."


@dataclass(frozen=True)
class Rejected:
    """An artifact (or ledger entry, or policy finding) the gate does not accept."""

    type: str
    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"type": self.type, "path": self.path, "reason": self.reason}


@dataclass
class Release:
    """One accepted artifact: where it is, its identity, and its index entry."""

    kind: str  # agent | workflow | agent-graph
    path: Path
    rel: str
    entry: dict[str, Any]
    timestamp: str | None = None

    @property
    def publisher(self) -> str:
        return str(self.entry["publisher"])

    @property
    def id(self) -> str:
        return str(self.entry["id"])

    @property
    def version(self) -> str:
        return str(self.entry["version"])

    @property
    def digest(self) -> str:
        return str(self.entry["digest"])

    def identity(self) -> dict[str, str]:
        return {
            "artifactType": self.kind,
            "publisherId": self.publisher,
            "id": self.id,
            "version": self.version,
            "digest": self.digest,
        }


@dataclass
class Derived:
    """The re-derived index, what was rejected, the accepted releases and the ledger."""

    index: dict[str, Any]
    rejected: list[Rejected]
    releases: list[Release]
    ledger: Ledger
    pending_graphs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.rejected


# ---- output ------------------------------------------------------------------------------------


def _floats_as_js(value: Any) -> Any:
    """Floats that JavaScript prints as integers (`28.0` → `28`) become ints (iterative: the
    index holds values read from artifacts, so its depth is theirs)."""

    def conv(v: Any) -> Any:
        if isinstance(v, float):
            return int(v) if v == int(v) and abs(v) < 1e21 else v
        if isinstance(v, list):
            return list(v)
        if isinstance(v, dict):
            return dict(v)
        return v

    root = conv(value)
    stack = [root]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items):
            node[k] = conv(v)
            if isinstance(node[k], dict | list):
                stack.append(node[k])
    return root


def index_bytes(index: dict[str, Any]) -> bytes:
    """The bytes the reference writes: two-space JSON, non-ASCII kept, one trailing newline."""
    return (json.dumps(_floats_as_js(index), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# ---- helpers -----------------------------------------------------------------------------------


def _json_array(value: str | None) -> list[Any]:
    if value is None:
        return []
    try:
        doc = loads_strict(value)
    except AttestError:
        return []
    return doc if isinstance(doc, list) else []


def _trust_registry(root: Path, now: datetime) -> Any:
    """The folder's trust-registry.json when present and valid; otherwise nobody is trusted."""
    path = root / TRUST_FILE
    if not path.is_file() or path.is_symlink():
        return None
    from acxoci.cartridge.trust_file import load_trust_registry

    try:
        return load_trust_registry(path)
    except AcxError:
        return None


def _ledger(root: Path) -> Ledger:
    path = root / STATUS_FILE
    if not path.exists():
        return empty_ledger()
    if path.is_symlink():
        raise InvalidInput("status.json is a symlink", where=str(path))
    return parse_ledger(read_bytes(path, "lifecycle ledger", limit=16 * 1024 * 1024), where=str(path))


def _read_json(path: Path, what: str) -> Any:
    try:
        return loads_strict(read_bytes(path, what, limit=MAX_DOC_BYTES))
    except AttestError as exc:
        raise InvalidInput(f"{what} is not valid JSON: {exc}", where=str(path)) from exc


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _rank(state: str) -> int:
    return {"verified": 4, "revoked": 3, "invalid": 2, "unresolved": 1}.get(state, 0)


# ---- cartridges --------------------------------------------------------------------------------


def _attestation_evidence(cart: Any) -> list[dict[str, Any]]:
    """Each embedded level credential (decoded into its model) as a claim: level, tier,
    references and a state. Without issuer keys and live revocation nothing is proven, so the
    state is `unresolved` (or `invalid` when the credential does not decode or cannot even name a
    controlled verification method)."""
    rows = [r for r in cart.attestations() if r.type == "vc-2.0"] if cart.has_table("attestations") else []
    rows.sort(key=lambda r: (r.created_at, r.att_id))
    out: list[dict[str, Any]] = []
    for r in rows:
        try:
            vc = decode_as(loads_strict(r.document), LevelCredentialDoc, document=f"attestation {r.att_id}")
        except AttestError:
            out.append({"acxLevel": None, "careerTier": None, "state": "invalid",
                        "refs": [x for x in [r.att_id] if x]})
            continue
        result = vc.credential_subject.result[0] if vc.credential_subject.result else None
        status = vc.credential_status
        refs: list[str | UnsetType] = [
            r.att_id, vc.id, UNSET if isinstance(status, UnsetType) else status.id,
        ]
        level = result.acx_acx_level if result is not None else None
        tier = result.acx_career_tier if result is not None else None
        issuer_id, method = vc.issuer.id, vc.proof.verification_method
        named = isinstance(issuer_id, str) and bool(issuer_id and method)
        state = "unresolved"
        if not named or (method != issuer_id and not method.startswith(f"{issuer_id}#")):
            state = "invalid"
        out.append(
            {
                "acxLevel": level,
                "careerTier": tier,
                "state": state,
                "refs": list(dict.fromkeys(x for x in refs if isinstance(x, str) and x)),
            }
        )
    return out


def _level_claim(atts: list[dict[str, Any]]) -> dict[str, Any]:
    claimed = None
    for a in atts:
        if a["acxLevel"] is None and a["careerTier"] is None:
            continue
        lvl = a["acxLevel"] if a["acxLevel"] is not None else -1
        if claimed is None or lvl > (claimed["acxLevel"] if claimed["acxLevel"] is not None else -1):
            claimed = a
    strongest = None
    for a in atts:
        if strongest is None or _rank(a["state"]) > _rank(strongest["state"]):
            strongest = a
    selected = claimed or strongest
    return {
        "acxLevel": claimed["acxLevel"] if claimed else None,
        "careerTier": claimed["careerTier"] if claimed else None,
        "verificationState": selected["state"] if selected else "unresolved",
    }


def _capabilities(cart: Any, atts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each capability row (decoded into its model; one that does not decode is left out, and the
    package-spec gate has refused the cartridge already) as a card with its evidence's state."""
    out = []
    for row in sorted(cart.capabilities(), key=lambda r: r.id.encode("utf-8")):
        cap = read_capability(row.json)
        if cap is None:
            continue
        states = [
            match["state"]
            for ev in cap.evidence_refs
            if ev.kind == "level-attestation"
            for match in [next((a for a in atts if ev.ref in a["refs"]), None)]
            if match is not None
        ]
        state = max(states, key=_rank) if states else "unresolved"
        out.append(
            {
                "taskType": cap.task_type,
                "stack": list(cap.stack),
                "domain": cap.domain or None,
                "claimedVerified": cap.proficiency.verified is True,
                "verified": False,
                "verificationState": state,
            }
        )
    return out


def summarize_cartridge(
    path: Path, rel: str, ledger: Ledger, registry: Any, now: datetime
) -> tuple[Release | None, Rejected | None]:
    """Verify one cartridge and build its index card; (release, None) or (None, rejection)."""
    from acxoci.cartridge.reader import open_cartridge
    from acxoci.cartridge.spec import check_open
    from acxoci.cartridge.verify import verify_open

    try:
        with open_cartridge(path) as cart:
            meta = cart.meta()
            verdict = verify_open(cart, registry=registry, now=now)
            spec = check_open(cart)
            atts = _attestation_evidence(cart)
            caps = _capabilities(cart, atts)
            save = {
                "memory": cart.count("memory", "WHERE zone = 'save'"),
                "files": cart.count("sqlar", "WHERE name GLOB 'save/*'"),
                "objects": cart.count("objects", "WHERE zone = 'save'"),
                "vectors": cart.count("vectors", "WHERE zone = 'save'"),
            }
    except AcxError as exc:
        return None, Rejected("agent", rel, f"cannot read the cartridge: {exc.one_line()}")
    publisher, aid, version = (
        meta.get("acx.publisher_id"),
        meta.get("acx.artifact_id"),
        meta.get("acx.artifact_version"),
    )
    parts = rel.split("/")[1:]
    expected = folder_path("agent", str(publisher), str(aid), str(version))
    consistent = str(meta.get("acx.cartridge_id") or "").startswith(f"{publisher}/{aid}@")
    canonical = (
        len(parts) == 4
        and parts == [publisher, aid, version, "cartridge.acx"]
        and rel == expected
        and bool(PUBLISHER_SEGMENT_RE.fullmatch(publisher or ""))
        and bool(AGENT_ID_RE.fullmatch(aid or ""))
        and bool(SEMVER_RE.fullmatch(version or ""))
        and consistent
    )
    missing = [
        k
        for k in ("acx.agent_name", "acx.role", "acx.provider", "acx.model", "acx.rom_manifest_hash")
        if not isinstance(meta.get(k), str)
    ]
    reason = None
    if not aid or not AGENT_ID_RE.fullmatch(aid):
        reason = "missing or invalid ROM-bound acx.artifact_id"
    elif not version or not SEMVER_RE.fullmatch(version):
        reason = "missing or invalid ROM-bound acx.artifact_version"
    elif not consistent:
        reason = "ROM-bound acx.cartridge_id conflicts with publisher/artifact identity"
    elif not canonical:
        reason = f"non-canonical cartridge path (expected {expected})"
    elif verdict.trust in ("tampered", "legacy") or verdict.status == "invalid":
        reason = verdict.summary or f"signature {verdict.trust}"
    elif not spec.clean:
        reason = "unclean package: " + "; ".join(str(i) for i in spec.issues if i.severity == "error")
    elif sum(save.values()) > 0:
        reason = (
            "public registry cartridges must be ROM-only; SAVE zone contains data ("
            + ", ".join(f"{k}={v}" for k, v in save.items())
            + ")"
        )
    elif missing:
        reason = "missing ROM-bound meta: " + ", ".join(missing)
    if reason is not None:
        return None, Rejected("agent", rel, reason)
    assert publisher is not None and aid is not None and version is not None
    role = meta.get("acx.role") or "agent"
    entry: dict[str, Any] = {
        "id": aid,
        "slug": f"{publisher}__{aid}",
        "path": rel,
        "name": meta["acx.agent_name"],
        "publisher": publisher,
        "role": meta["acx.role"],
        "provider": meta["acx.provider"],
        "model": meta["acx.model"],
        "version": version,
        "description": meta.get("acx.description") or f"A portable {role.replace('_', ' ')} cartridge.",
        "license": meta.get("acx.license") or None,
        "authors": _json_array(meta.get("acx.authors")),
        "tags": _json_array(meta.get("acx.tags")),
        "homepage": meta.get("acx.homepage") or None,
        "trust": verdict.trust,
        "trustStatus": verdict.status,
        "specClean": spec.clean,
        "romHash": meta["acx.rom_manifest_hash"],
        "digest": meta["acx.rom_manifest_hash"],
        "bytes": path.stat().st_size,
        "capabilities": caps,
        "level": None,
        "levelClaim": _level_claim(atts),
    }
    rel_obj = Release("agent", path, rel, entry, meta.get("acx.created_at"))
    entry["registryStatus"] = ledger.lifecycle(rel_obj.identity())
    return rel_obj, None


# ---- workflows ---------------------------------------------------------------------------------


LINEAGE_KEYS = ("artifactType", "publisherId", "id", "version", "digest", "relation", "source")


def _lineage(lineage: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The card's lineage: each parent with every key (absent ones null), from the decoded view."""
    parents = lineage.get("parents", []) if lineage is not None else []
    return [{k: p.get(k) for k in LINEAGE_KEYS} for p in parents]


def summarize_workflow(
    path: Path, rel: str, ledger: Ledger, registry: Any, now: datetime
) -> tuple[Release | None, Rejected | None]:
    """Verify one workflow (signature, publication profile, canonical path), decode it into its
    model and build its card from the model."""
    from acxoci.workflow.lint import lint
    from acxoci.workflow.model import Workflow
    from acxoci.workflow.verify import verify_workflow

    try:
        doc = _read_json(path, rel)
    except AcxError as exc:
        return None, Rejected("workflow", rel, exc.one_line())
    if not isinstance(doc, dict):
        return None, Rejected("workflow", rel, "workflow is not a JSON object")
    profile = [i.text() for i in lint(doc, publish=True).errors]
    v = verify_workflow(doc, registry=registry, now=now)
    expected = folder_path("workflow", str(v.publisher_id), str(doc.get("id")), str(doc.get("version")))
    issues = [*v.issues, *profile]
    if rel != expected:
        issues.append(f"non-canonical workflow path (expected {expected})")
    if not (v.ok and v.signed and not profile and rel == expected):
        return None, Rejected("workflow", rel, "; ".join(issues) or "workflow was not accepted")
    try:
        wf = Workflow.from_json(doc, where=rel)
    except AcxError as exc:
        return None, Rejected("workflow", rel, exc.one_line())
    caps = {c for n in wf.nodes for c in n.requires_capabilities}
    entry: dict[str, Any] = {
        "path": rel,
        "id": wf.id,
        "version": wf.version,
        "name": wf.name or wf.id,
        "description": wf.description or "",
        "license": wf.license or None,
        "tags": list(wf.tags),
        "publisher": v.publisher_id,
        "trust": v.trust,
        "trustStatus": v.status,
        "digest": v.digest,
        "participants": [
            {
                "alias": p.alias,
                "bind": p.bind,
                "role": p.slot.role if p.slot is not None else None,
                "romDigest": p.rom_digest,
            }
            for p in wf.participants
        ],
        "participantCount": len(wf.participants),
        "nodeCount": len(wf.nodes),
        "capabilities": sorted(caps),
        "lineage": _lineage(wf.lineage),
        "publishable": True,
        "signed": v.signed,
    }
    signed_at = wf.integrity.get("signedAt") if wf.integrity is not None else None
    rel_obj = Release("workflow", path, rel, entry, signed_at if isinstance(signed_at, str) else None)
    entry["registryStatus"] = ledger.lifecycle(rel_obj.identity())
    return rel_obj, None


# ---- templates ---------------------------------------------------------------------------------


def templates(root: Path, w: Walk) -> list[dict[str, Any]]:
    """Unsigned agent-package starters under templates/<id>/ (never verified; listed as such)."""
    base = root / "templates"
    if not base.is_dir() or base.is_symlink():
        return []
    out = []
    for d in sorted((p for p in base.iterdir()), key=lambda p: locale_key(p.name)):
        if d.is_symlink() or not d.is_dir() or not ID_RE.fullmatch(d.name):
            continue
        manifest = d / "manifest.json"
        if not manifest.is_file() or manifest.is_symlink():
            continue
        doc = _read_json(manifest, f"templates/{d.name}/manifest.json")
        doc = doc if isinstance(doc, dict) else {}
        files = sorted(f.removeprefix(f"templates/{d.name}/") for f in w.under(f"templates/{d.name}", ""))
        name = str(doc["name"]) if isinstance(doc.get("name"), str) else ""
        import re

        display = (
            " ".join(word[:1].upper() + word[1:] for word in re.split(r"[-_]", d.name))
            if re.match(r"^TODO\b", name, re.I)
            else (name or d.name)
        )
        out.append(
            {
                "id": d.name,
                "version": doc.get("packageVersion") or doc.get("schemaVersion") or None,
                "name": display,
                "description": TEMPLATE_DESCRIPTION,
                "license": "Apache-2.0",
                "tags": ["agent", "portable", "starter", "template"],
                "publisher": "ACX community",
                "path": f"templates/{d.name}/manifest.json",
                "fileCount": len(files),
                "files": files,
                "signed": False,
                "trust": "unsigned",
                "trustStatus": "warning",
            }
        )
    return out


# ---- the whole index ---------------------------------------------------------------------------


def _mark_latest(releases: list[Release]) -> None:
    best: dict[tuple[str, str], Release] = {}
    for r in releases:
        cur = best.get((r.publisher, r.id))
        if cur is None or semver_cmp(r.version, cur.version) > 0:
            best[(r.publisher, r.id)] = r
    for r in releases:
        r.entry["latest"] = best[(r.publisher, r.id)] is r


def _duplicates(releases: list[Release], kind: str, rejected: list[Rejected]) -> None:
    seen: dict[tuple[str, str, str], str] = {}
    for r in releases:
        key = (r.publisher, r.id, r.version)
        if key in seen:
            rejected.append(
                Rejected(kind, r.rel, f"duplicate immutable coordinate also present at {seen[key]}")
            )
        else:
            seen[key] = r.rel


FOLDER_TRUST: Any = object()
"""`derive`'s default trust: the folder's own trust-registry.json (the Exchange's gate)."""


def derive(
    root: Path, *, now: datetime, allow_pending_graphs: bool = False, registry: Any = FOLDER_TRUST
) -> Derived:
    """Walk `root`, verify every artifact and build the index (nothing is written). Signers are
    judged against the folder's trust-registry.json, or against `registry` when one is given
    (a consumer's view of the same gate: `acx exchange site --trust-registry`)."""
    root = Path(root)
    w = walk(root)
    ledger = _ledger(root)
    if registry is FOLDER_TRUST:
        registry = _trust_registry(root, now)
    rejected = [Rejected("policy", r.split(":", 1)[0], r) for r in w.policy]
    stamps: list[str | None] = [ledger.updated_at]
    accepted: set[tuple[str, ...]] = set()

    def collect(
        kind: str,
        folder: str,
        suffix: str,
        fn: Callable[..., tuple[Release | None, Rejected | None]],
    ) -> list[Release]:
        out: list[Release] = []
        for rel in w.symlinks_under(folder):
            if rel.endswith(suffix):
                rejected.append(Rejected(kind, rel, "symbolic links are forbidden"))
        for rel in w.under(folder, suffix):
            try:
                release, rej = fn(root / rel, rel, ledger, registry, now)
            except AcxError as exc:
                release, rej = None, Rejected(kind, rel, exc.one_line())
            except Exception as exc:  # one file's bug is that file's rejection, not the folder's end
                release, rej = None, Rejected(
                    kind, rel, f"could not be checked (internal error {type(exc).__name__}: "
                    f"{str(exc)[:200]}; please report it)")
            if rej is not None:
                rejected.append(rej)
                continue
            assert release is not None
            out.append(release)
            stamps.append(release.timestamp)
            accepted.add(identity_key(release.identity()))
        return out

    carts = collect("agent", "cartridges", ".acx", summarize_cartridge)
    _duplicates(carts, "agent", rejected)
    _mark_latest(carts)
    carts.sort(key=lambda r: (locale_key(r.entry["name"]), locale_key(r.publisher), locale_key(r.id)))
    carts = _stable_version_desc(carts, lambda r: (r.entry["name"], r.publisher, r.id))
    flows = collect("workflow", "cals", ".cal.json", summarize_workflow)
    _duplicates(flows, "workflow", rejected)
    _mark_latest(flows)
    flows.sort(key=lambda r: (locale_key(r.publisher), locale_key(r.id)))
    flows = _stable_version_desc(flows, lambda r: (r.publisher, r.id))
    graph_files = w.under("graphs", ".agent-graph.json")
    pending: list[str] = []
    graph_entries: list[Release] = []
    support = G.graph_support()
    if graph_files and support is None:
        if not allow_pending_graphs:
            raise GraphSupportPending(
                f"graph support pending: {len(graph_files)} Agent Graph(s) under graphs/ cannot be verified "
                "yet, so the index cannot be derived",
                where=str(root),
                hint="pass --without-graphs to handle cartridges and workflows only",
                details={"graphs": graph_files[:50]},
            )
        pending = graph_files
    elif graph_files and support is not None:
        graph_entries = collect(
            "agent-graph",
            "graphs",
            ".agent-graph.json",
            lambda p, r, led, reg, t: G.summarize_graph(support, p, r, led, reg, t),
        )
        _duplicates(graph_entries, "agent-graph", rejected)
        _mark_latest(graph_entries)
        graph_entries.sort(key=lambda r: (locale_key(r.publisher), locale_key(r.id)))
        graph_entries = _stable_version_desc(graph_entries, lambda r: (r.publisher, r.id))
        for r in G.resolve_dependencies([g.entry for g in graph_entries], [f.entry for f in flows]):
            rejected.append(Rejected("agent-graph", r[0], r[1]))
    for e in ledger.entries:
        art = e["artifact"]
        if identity_key(art) not in accepted and not (pending and art.get("artifactType") == "agent-graph"):
            rejected.append(
                Rejected(
                    "status",
                    STATUS_FILE,
                    "status entry targets an artifact not present with "
                    f"the exact digest: {art['publisherId']}/{art['id']}",
                )
            )
        succ = e.get("successor")
        if (
            isinstance(succ, dict)
            and identity_key(succ) not in accepted
            and not (pending and succ.get("artifactType") == "agent-graph")
        ):
            rejected.append(
                Rejected(
                    "status",
                    STATUS_FILE,
                    "status successor is not present with the exact "
                    f"identity and digest: {succ['publisherId']}/{succ['id']}@{succ['version']}",
                )
            )
    temps = templates(root, w)
    index = {
        "schemaVersion": INDEX_SCHEMA,
        "generatedAt": _newest(stamps),
        "artifactCount": len(carts) + len(flows) + len(graph_entries) + len(temps),
        "count": len(carts),
        "cartridges": [r.entry for r in carts],
        "workflowCount": len(flows),
        "workflows": [r.entry for r in flows],
        "agentGraphCount": len(graph_entries),
        "agentGraphs": [r.entry for r in graph_entries],
        "templateCount": len(temps),
        "templates": temps,
    }
    return Derived(index, rejected, carts + flows + graph_entries, ledger, pending)


def _stable_version_desc(items: list[Release], group: Callable[[Release], tuple[str, ...]]) -> list[Release]:
    """Within runs of equal `group`, order by version, newest first (the last sort key)."""
    out: list[Release] = []
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and group(items[j]) == group(items[i]):
            j += 1
        out += sorted(items[i:j], key=lambda r: semver_key(r.version), reverse=True)
        i = j
    return out


def _newest(stamps: list[str | None]) -> str:
    """The newest parseable timestamp, as written (the last one among equals)."""
    best: tuple[datetime, str] | None = None
    for s in stamps:
        t = parse_time(s)
        if t is not None and s is not None and (best is None or t >= best[0]):
            best = (t, s)
    return best[1] if best is not None else "1970-01-01T00:00:00.000Z"


# ---- comparing with the committed index ----------------------------------------------------------


def _key(kind: str, e: dict[str, Any]) -> tuple[str, str, str, str]:
    return (kind, str(e.get("publisher")), str(e.get("id")), str(e.get("version")))


def compare(derived: dict[str, Any], committed: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """(differences as JSON paths, coordinates whose bytes changed) between the derived and the
    committed index. A coordinate changed when the same publisher/id/version has another digest or
    size: an immutable release was overwritten."""
    try:
        decode_as(committed, ExchangeIndexDoc, document="index.json")
    except DocumentTypeError as exc:  # not an acx.registry-index/1 document: nothing to compare
        return [str(exc)], []
    diffs: list[str] = []
    _diff(derived, committed, "$", diffs)
    changed: list[dict[str, Any]] = []
    if isinstance(committed, dict):
        for kind, coll in (
            ("agent", "cartridges"),
            ("workflow", "workflows"),
            ("agent-graph", "agentGraphs"),
        ):
            old = {_key(kind, e): e for e in committed.get(coll) or [] if isinstance(e, dict)}
            for e in derived.get(coll) or []:
                prev = old.get(_key(kind, e))
                if prev is None:
                    continue
                if prev.get("digest") != e.get("digest") or (
                    "bytes" in e and prev.get("bytes") != e.get("bytes")
                ):
                    changed.append(
                        {
                            "artifactType": kind,
                            "publisherId": e.get("publisher"),
                            "id": e.get("id"),
                            "version": e.get("version"),
                            "path": e.get("path"),
                            "indexedDigest": prev.get("digest"),
                            "digest": e.get("digest"),
                        }
                    )
    return diffs, changed


def _diff(a: Any, b: Any, path: str, out: list[str], limit: int = 200) -> None:
    """Every difference between two JSON trees, as JSON paths (iterative, at most `limit`)."""
    stack: list[tuple[Any, Any, str]] = [(a, b, path)]
    while stack and len(out) < limit:
        x, y, p = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if list(x) != list(y):
                out.extend(f"{p}.{k}: missing from the committed index" for k in x if k not in y)
                out.extend(f"{p}.{k}: not derivable from the artifacts" for k in y if k not in x)
                if set(x) == set(y):
                    out.append(f"{p}: keys in another order")
            stack.extend((x[k], y[k], f"{p}.{k}") for k in reversed(list(x)) if k in y)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                out.append(f"{p}: {len(x)} derived, {len(y)} committed")
            pairs = list(enumerate(zip(x, y, strict=False)))
            stack.extend((u, w, f"{p}[{i}]") for i, (u, w) in reversed(pairs))
        elif x != y or type(x) is not type(y):
            out.append(f"{p}: derived {json.dumps(x)[:120]}, committed {json.dumps(y)[:120]}")
    del out[limit:]
