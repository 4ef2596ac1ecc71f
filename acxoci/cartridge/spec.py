"""`acx cartridge spec`: check a cartridge against the closed package-spec profile and the ROM
content rules (portable paths, memory shapes and tiers, capabilities, lance descriptor, required
files), and validate the harness and policy documents against our schemas, which the reference
does not do. Every issue names its rule and a JSON path (prefixed by the file or table)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acxoci.cartridge.capabilities import capability_issues
from acxoci.cartridge.constants import portable_path_problem
from acxoci.cartridge.manifest import compute_rom_manifest
from acxoci.cartridge.memory import record_issues
from acxoci.cartridge.reader import Cartridge, open_cartridge
from acxoci.policy import harness as harness_mod
from acxoci.policy import loop_context as policy_mod
from acxoci.policy._schema import ERROR, WARNING, Issue, schema_issues
from attest.canonical import loads_strict
from attest.errors import MalformedError

PATH_PACKAGE_SPEC = "rom/package-spec.json"
PATH_LANCE = "rom/schema/lance-memory.json"
PATH_SKILLSET = "rom/cal/skillset.json"
REQUIRED_FILES = (PATH_PACKAGE_SPEC, harness_mod.ROM_PATH, policy_mod.ROM_PATH, PATH_LANCE)
ROLES = (
    "identity",
    "memory-baseline",
    "memory-vectors",
    "skills",
    "capabilities",
    "harness",
    "loop-context",
    "level",
)
LANCE_COLUMNS = 14


@dataclass(frozen=True)
class SpecReport:
    """The package-spec summary (artifact rows) and every issue found; CLEAN when no error."""

    schema_version: str | None
    engine: Mapping[str, Any] | None
    artifacts: tuple[Mapping[str, Any], ...]
    issues: tuple[Issue, ...]

    @property
    def clean(self) -> bool:
        return not any(i.severity == ERROR for i in self.issues)

    def to_json(self) -> dict[str, Any]:
        return {
            "packageSpec": self.schema_version,
            "embeddingEngine": self.engine,
            "artifacts": list(self.artifacts),
            "clean": self.clean,
            "issues": [i.to_json() for i in self.issues],
        }


def _in(file: str, issues: list[Issue]) -> list[Issue]:
    return [Issue(i.rule, f"{file}:{i.path}", i.message, i.severity) for i in issues]


def _json_file(cart: Cartridge, name: str, issues: list[Issue]) -> Any:
    data = cart.sqlar_read(name)
    if data is None:
        return None
    try:
        return loads_strict(data)
    except MalformedError as exc:
        issues.append(Issue("rom.json", f"{name}:$", f"not valid JSON: {exc}"))
        return None


def _check_package_spec(cart: Cartridge, doc: Any, meta: Mapping[str, str], issues: list[Issue]) -> None:
    issues.extend(
        _in(
            PATH_PACKAGE_SPEC,
            schema_issues(doc, "acx.package-spec-1.schema.json", default_rule="package-spec.closed"),
        )
    )
    if not isinstance(doc, Mapping):
        return
    f = PATH_PACKAGE_SPEC
    if doc.get("cartridgeId") != meta.get("acx.cartridge_id"):
        issues.append(
            Issue("package-spec.cartridgeId", f"{f}:$.cartridgeId", "differs from meta acx.cartridge_id")
        )
    if doc.get("specVersion") != meta.get("acx.spec_version"):
        issues.append(
            Issue("package-spec.specVersion", f"{f}:$.specVersion", "differs from meta acx.spec_version")
        )
    try:
        engine = loads_strict(meta.get("acx.embedding_engine", "null"))
    except ValueError:
        engine = None
    if doc.get("embeddingEngine") != engine:
        issues.append(
            Issue(
                "package-spec.embeddingEngine",
                f"{f}:$.embeddingEngine",
                "differs from meta acx.embedding_engine",
            )
        )
    arts = doc.get("artifacts")
    if not isinstance(arts, list):
        return
    roles = [a.get("role") for a in arts if isinstance(a, Mapping)]
    for role in ROLES:
        if roles.count(role) != 1:
            issues.append(
                Issue(
                    "package-spec.artifacts.role",
                    f"{f}:$.artifacts",
                    f"role {role!r} appears {roles.count(role)} times (exactly once required)",
                )
            )
    skills = sum(
        1 for n in cart.iter_rom_sqlar_names() if n.startswith("rom/skills/") and n.endswith("/SKILL.md")
    )
    actual = {
        "memory-baseline": sum(1 for m in cart.memory() if m.zone == "rom"),
        "skills": skills,
        "capabilities": len(cart.capabilities()),
    }
    # `level` counts VCs present at export time; VCs attached after signing do not change it.
    for i, a in enumerate(arts):
        if (
            isinstance(a, Mapping)
            and a.get("role") in actual
            and isinstance(a.get("count"), int)
            and a["count"] != actual[str(a["role"])]
        ):
            issues.append(
                Issue(
                    "package-spec.count",
                    f"{f}:$.artifacts[{i}].count",
                    f"count {a['count']} but the cartridge holds {actual[str(a['role'])]}",
                )
            )


def _check_lance(doc: Any, meta: Mapping[str, str], issues: list[Issue]) -> None:
    f = PATH_LANCE
    if not isinstance(doc, Mapping):
        issues.append(Issue("lance.descriptor", f"{f}:$", "descriptor is not an object"))
        return
    try:
        dim = loads_strict(meta.get("acx.embedding_engine", "{}")).get("dim")
    except (ValueError, AttributeError):
        dim = None
    eng = doc.get("embeddingEngine")
    if not isinstance(eng, Mapping) or eng.get("dim") != dim:
        issues.append(
            Issue("lance.dim", f"{f}:$.embeddingEngine.dim", f"dim does not match the engine's {dim}")
        )
    cols = doc.get("columns")
    if not isinstance(cols, list) or len(cols) != LANCE_COLUMNS:
        issues.append(
            Issue(
                "lance.columns",
                f"{f}:$.columns",
                f"expected {LANCE_COLUMNS} columns, found {len(cols) if isinstance(cols, list) else 0}",
            )
        )


def _check_level_evidence(cart: Cartridge, issues: list[Issue]) -> None:
    atts = cart.attestations()
    known: set[str] = {a.att_id for a in atts}
    docs: list[tuple[str, Any]] = []
    for a in atts:
        try:
            d = loads_strict(a.document)
        except MalformedError:
            issues.append(Issue("level.document", f"attestations[{a.att_id}]:$", "document is not JSON"))
            continue
        docs.append((a.att_id, d))
        if isinstance(d, Mapping):
            if isinstance(d.get("id"), str):
                known.add(d["id"])
            cs = d.get("credentialStatus")
            for c in cs if isinstance(cs, list) else [cs]:
                if isinstance(c, Mapping) and isinstance(c.get("id"), str):
                    known.add(c["id"])
    for att_id, d in docs:
        evidence = d.get("evidence") if isinstance(d, Mapping) else None
        for j, ev in enumerate(evidence if isinstance(evidence, list) else []):
            ref = ev.get("id") if isinstance(ev, Mapping) else None
            if isinstance(ref, str) and ref not in known and not ref.startswith(("sha256:", "urn:", "http")):
                issues.append(
                    Issue(
                        "level.evidence-ref",
                        f"attestations[{att_id}]:$.evidence[{j}].id",
                        f"evidence ref {ref!r} resolves to no attestation, VC id or status id",
                    )
                )


def _check_skillset(cart: Cartridge, doc: Any, issues: list[Issue]) -> None:
    f = PATH_SKILLSET
    if not isinstance(doc, Mapping) or doc.get("schemaVersion") != "acx.cal-skillset/1":
        issues.append(Issue("skillset.schemaVersion", f"{f}:$.schemaVersion", "expected acx.cal-skillset/1"))
        return
    for key in ("plays", "references", "processes"):
        if not isinstance(doc.get(key), list):
            issues.append(Issue("skillset.shape", f"{f}:$.{key}", f"{key} must be an array"))
    names = {s.name for s in cart.skills()}
    for i, play in enumerate(doc.get("plays") or []):
        if not isinstance(play, Mapping) or not isinstance(play.get("role"), str):
            issues.append(Issue("skillset.shape", f"{f}:$.plays[{i}]", "a play needs a role"))
            continue
        for j, name in enumerate(play.get("canComplete") or []):
            if name not in names:
                issues.append(
                    Issue(
                        "skillset.canComplete",
                        f"{f}:$.plays[{i}].canComplete[{j}]",
                        f"skill {name!r} is not in the cartridge",
                        WARNING,
                    )
                )


def check_open(cart: Cartridge) -> SpecReport:
    """All spec findings for an open cartridge."""
    issues: list[Issue] = []
    meta = cart.meta()
    names: set[str] = set()
    for (raw,) in cart.query("SELECT CAST(name AS BLOB) FROM sqlar"):
        name = bytes(raw or b"").decode("utf-8", "replace")
        names.add(name)
        problem = portable_path_problem(name)
        if problem:
            issues.append(Issue("sqlar.portable-path", f"sqlar[{json.dumps(name)}]", problem))
    for req in REQUIRED_FILES:
        if req not in names:
            issues.append(
                Issue("rom.required-file", f"sqlar[{json.dumps(req)}]", "required ROM file is missing")
            )
    if any(i.rule == "sqlar.portable-path" for i in issues):
        # The reader refuses to serve any entry of a cartridge with an unsafe name: stop here.
        return SpecReport(None, None, (), tuple(issues))
    spec_doc = _json_file(cart, PATH_PACKAGE_SPEC, issues)
    if spec_doc is not None:
        _check_package_spec(cart, spec_doc, meta, issues)
    lance = _json_file(cart, PATH_LANCE, issues)
    if lance is not None:
        _check_lance(lance, meta, issues)
    for mem in cart.memory():
        try:
            rec = loads_strict(mem.payload)
        except MalformedError as exc:
            issues.append(Issue("memory.record", f"memory[{mem.id}]:$", f"payload is not JSON: {exc}"))
            continue
        for problem in record_issues(rec, row_zone=mem.zone):
            issues.append(Issue("memory.record", f"memory[{mem.id}]:$", problem))
        if isinstance(rec, Mapping) and rec.get("id") != mem.id:
            issues.append(
                Issue("memory.record", f"memory[{mem.id}]:$.id", "payload id differs from the row id")
            )
    for cap in cart.capabilities():
        for problem in capability_issues(cap.id, cap.json, cap.content_hash):
            issues.append(Issue("capability.record", f"capabilities[{cap.id}]:$", problem))
    _check_level_evidence(cart, issues)
    ignored = cart.count("acx_skill") - len(cart.skills())
    if ignored:
        issues.append(
            Issue("skill.rom", "acx_skill", f"{ignored} acx_skill row(s) match no ROM SKILL.md; ignored")
        )
    for problem in compute_rom_manifest(cart).uncovered:
        ref, _, why = problem.partition(": ")
        issues.append(Issue("rom.covered", f"objects[{json.dumps(ref)}]", why or problem))
    skillset = _json_file(cart, PATH_SKILLSET, issues)
    if skillset is not None:
        _check_skillset(cart, skillset, issues)
    harness_doc = _json_file(cart, harness_mod.ROM_PATH, issues)
    scopes: dict[str, tuple[str, ...]] | None = None
    if harness_doc is not None:
        h_issues = harness_mod.validate_harness(harness_doc)
        issues.extend(_in(harness_mod.ROM_PATH, h_issues))
        if not harness_mod.errors_only(h_issues):
            scopes = harness_mod.parse_harness(harness_doc).scopes_by_role()
    policy_doc = _json_file(cart, policy_mod.ROM_PATH, issues)
    if policy_doc is not None:
        issues.extend(_in(policy_mod.ROM_PATH, policy_mod.validate_policy(policy_doc, harness_scopes=scopes)))
        try:
            engine_id = loads_strict(meta.get("acx.embedding_engine", "{}")).get("id")
        except (ValueError, AttributeError):
            engine_id = None
        ctx = policy_doc.get("context") if isinstance(policy_doc, Mapping) else None
        if (
            isinstance(ctx, Mapping)
            and isinstance(ctx.get("embeddingEngineId"), str)
            and ctx["embeddingEngineId"] != engine_id
        ):
            issues.append(
                Issue(
                    "context.embeddingEngineId",
                    f"{policy_mod.ROM_PATH}:$.context.embeddingEngineId",
                    f"names {ctx['embeddingEngineId']!r}, the cartridge's engine is {engine_id!r}",
                )
            )
    arts = tuple(
        a
        for a in (spec_doc.get("artifacts", []) if isinstance(spec_doc, Mapping) else [])
        if isinstance(a, Mapping)
    )
    return SpecReport(
        spec_doc.get("schemaVersion") if isinstance(spec_doc, Mapping) else None,
        spec_doc.get("embeddingEngine") if isinstance(spec_doc, Mapping) else None,
        arts,
        tuple(issues),
    )


def check_spec(path: str | os.PathLike[str]) -> SpecReport:
    """Open `path` read-only and run every spec check."""
    with open_cartridge(path) as cart:
        return check_open(cart)
