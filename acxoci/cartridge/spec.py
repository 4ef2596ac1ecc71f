"""`acx cartridge spec`: check a cartridge against the closed package-spec profile and the ROM
content rules (portable paths, memory shapes and tiers, capabilities, lance descriptor, required
files), and validate the harness and policy documents against our schemas, which the reference
does not do. Every issue names its rule and a JSON path (prefixed by the file or table)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from msgspec import UnsetType

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.cartridge.capabilities import capability_issues
from acxoci.cartridge.constants import portable_path_problem
from acxoci.cartridge.manifest import compute_rom_manifest
from acxoci.cartridge.memory import record_issues
from acxoci.cartridge.reader import Cartridge, open_cartridge
from acxoci.documents.lance import LanceDescriptorDoc
from acxoci.documents.level_credential import LevelCredentialDoc
from acxoci.documents.package_spec import PackageSpecDoc
from acxoci.documents.package_spec import PackageSpecDocEmbeddingEngine as EngineDoc
from acxoci.documents.skillset import SkillsetDoc
from acxoci.policy import harness as harness_mod
from acxoci.policy import loop_context as policy_mod
from acxoci.policy._schema import ERROR, WARNING, Issue, decode_issues, schema_issues

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
META_ENGINE = 'cartridge["acx.embedding_engine"]'
T = TypeVar("T")


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


class _Absent:
    """No such file (a file holding JSON `null` is a document, and not an object)."""


ABSENT = _Absent()


def _json_file(cart: Cartridge, name: str, issues: list[Issue]) -> Any:
    """The parsed JSON of a ROM file, ABSENT when there is no such file (or it is not JSON)."""
    data = cart.sqlar_read(name)
    if data is None:
        return ABSENT
    try:
        return loads_strict(data)
    except MalformedError as exc:
        issues.append(Issue("rom.json", f"{name}:$", f"not valid JSON: {exc}"))
        return ABSENT


def _decode(doc: Any, model: type[T], file: str, rule: str, issues: list[Issue], *, schema: bool) -> T | None:
    """`doc` as `model`; when it does not decode, the type issue (unless the schema check, which ran
    first, already reported the document) and None."""
    decoded, type_issues = decode_issues(doc, model, document=file, rule=rule)
    if decoded is None and not schema:
        issues.extend(_in(file, type_issues))
    return decoded


def _meta_engine(meta: Mapping[str, str], issues: list[Issue]) -> tuple[Any, EngineDoc | None]:
    """The cartridge's embedding engine from meta: (parsed JSON or None, decoded or None)."""
    text = meta.get("acx.embedding_engine")
    if text is None:
        return None, None
    try:
        raw = loads_strict(text)
    except MalformedError as exc:
        issues.append(Issue("meta.embedding_engine", META_ENGINE, f"not JSON: {exc}"))
        return None, None
    engine, found = decode_issues(raw, EngineDoc, document=META_ENGINE, rule="meta.embedding_engine")
    issues.extend(Issue(i.rule, f"{META_ENGINE}:{i.path}", i.message) for i in found)
    return raw, engine


def _check_package_spec(
    cart: Cartridge, doc: Any, meta: Mapping[str, str], engine: Any, issues: list[Issue]
) -> PackageSpecDoc | None:
    f = PATH_PACKAGE_SPEC
    found = _in(f, schema_issues(doc, "acx.package-spec-1.schema.json", default_rule="package-spec.closed"))
    issues.extend(found)
    spec = _decode(doc, PackageSpecDoc, f, "package-spec.closed", issues, schema=bool(found))
    if spec is None:
        return None
    if spec.cartridge_id != meta.get("acx.cartridge_id"):
        issues.append(
            Issue("package-spec.cartridgeId", f"{f}:$.cartridgeId", "differs from meta acx.cartridge_id")
        )
    if spec.spec_version != meta.get("acx.spec_version"):
        issues.append(
            Issue("package-spec.specVersion", f"{f}:$.specVersion", "differs from meta acx.spec_version")
        )
    if msgspec.to_builtins(spec.embedding_engine) != engine:
        issues.append(Issue("package-spec.embeddingEngine", f"{f}:$.embeddingEngine",
                            "differs from meta acx.embedding_engine"))
    roles = [a.role for a in spec.artifacts]
    for role in ROLES:
        if roles.count(role) != 1:
            issues.append(Issue("package-spec.artifacts.role", f"{f}:$.artifacts",
                                f"role {role!r} appears {roles.count(role)} times (exactly once required)"))
    skills = sum(
        1 for n in cart.iter_rom_sqlar_names() if n.startswith("rom/skills/") and n.endswith("/SKILL.md")
    )
    actual = {
        "memory-baseline": sum(1 for m in cart.memory() if m.zone == "rom"),
        "skills": skills,
        "capabilities": len(cart.capabilities()),
    }
    # `level` counts VCs present at export time; VCs attached after signing do not change it.
    for i, a in enumerate(spec.artifacts):
        if a.role in actual and not isinstance(a.count, UnsetType) and a.count != actual[a.role]:
            issues.append(Issue("package-spec.count", f"{f}:$.artifacts[{i}].count",
                                f"count {a.count} but the cartridge holds {actual[a.role]}"))
    return spec


def _check_lance(doc: Any, engine: EngineDoc | None, issues: list[Issue]) -> None:
    f = PATH_LANCE
    if not isinstance(doc, Mapping):
        issues.append(Issue("lance.descriptor", f"{f}:$", "descriptor is not an object"))
        return
    lance = _decode(doc, LanceDescriptorDoc, f, "lance.descriptor", issues, schema=False)
    if lance is None:
        return
    dim = engine.dim if engine is not None else None
    eng = lance.embedding_engine
    if isinstance(eng, UnsetType) or isinstance(eng.dim, UnsetType) or eng.dim != dim:
        why = f"dim does not match the engine's {dim}"
        issues.append(Issue("lance.dim", f"{f}:$.embeddingEngine.dim", why))
    cols = lance.columns
    if isinstance(cols, UnsetType) or len(cols) != LANCE_COLUMNS:
        found = 0 if isinstance(cols, UnsetType) else len(cols)
        why = f"expected {LANCE_COLUMNS} columns, found {found}"
        issues.append(Issue("lance.columns", f"{f}:$.columns", why))


def _check_level_evidence(cart: Cartridge, issues: list[Issue]) -> None:
    atts = cart.attestations()
    known: set[str] = {a.att_id for a in atts}
    docs: list[tuple[str, LevelCredentialDoc]] = []
    for a in atts:
        where = f"attestations[{a.att_id}]"
        try:
            raw = loads_strict(a.document)
        except MalformedError:
            issues.append(Issue("level.document", f"{where}:$", "document is not JSON"))
            continue
        if a.type != "vc-2.0":
            continue
        vc, type_issues = decode_issues(raw, LevelCredentialDoc, document=where, rule="level.document")
        issues.extend(_in(where, type_issues))
        if vc is None:
            continue
        docs.append((a.att_id, vc))
        if not isinstance(vc.id, UnsetType):
            known.add(vc.id)
        status = vc.credential_status
        if not isinstance(status, UnsetType) and not isinstance(status.id, UnsetType):
            known.add(status.id)
    for att_id, vc in docs:
        for j, ev in enumerate(() if isinstance(vc.evidence, UnsetType) else vc.evidence):
            ref = ev.id
            if ref not in known and not ref.startswith(("sha256:", "urn:", "http")):
                issues.append(Issue("level.evidence-ref", f"attestations[{att_id}]:$.evidence[{j}].id",
                                    f"evidence ref {ref!r} resolves to no attestation, VC id or status id"))


def _check_skillset(cart: Cartridge, doc: Any, issues: list[Issue]) -> None:
    f = PATH_SKILLSET
    if not isinstance(doc, Mapping) or doc.get("schemaVersion") != "acx.cal-skillset/1":
        issues.append(Issue("skillset.schemaVersion", f"{f}:$.schemaVersion", "expected acx.cal-skillset/1"))
        return
    found = _in(f, schema_issues(doc, "acx.cal-skillset-1.schema.json", default_rule="skillset.shape"))
    issues.extend(found)
    skillset = _decode(doc, SkillsetDoc, f, "skillset.shape", issues, schema=bool(found))
    if skillset is None:
        return
    names = {s.name for s in cart.skills()}
    for i, play in enumerate(skillset.plays):
        for j, name in enumerate(() if isinstance(play.can_complete, UnsetType) else play.can_complete):
            if name not in names:
                issues.append(Issue("skillset.canComplete", f"{f}:$.plays[{i}].canComplete[{j}]",
                                    f"skill {name!r} is not in the cartridge", WARNING))


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
    engine_json, engine = _meta_engine(meta, issues)
    spec_doc = _json_file(cart, PATH_PACKAGE_SPEC, issues)
    spec = None if spec_doc is ABSENT else _check_package_spec(cart, spec_doc, meta, engine_json, issues)
    lance = _json_file(cart, PATH_LANCE, issues)
    if lance is not ABSENT:
        _check_lance(lance, engine, issues)
    for mem in cart.memory():
        try:
            rec = loads_strict(mem.payload)
        except MalformedError as exc:
            issues.append(Issue("memory.record", f"memory[{mem.id}]:$", f"payload is not JSON: {exc}"))
            continue
        problems = record_issues(rec, row_zone=mem.zone)
        for problem in problems:
            issues.append(Issue("memory.record", f"memory[{mem.id}]:$", problem))
        if not problems and isinstance(rec, Mapping) and rec.get("id") != mem.id:
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
    if skillset is not ABSENT:
        _check_skillset(cart, skillset, issues)
    harness_doc = _json_file(cart, harness_mod.ROM_PATH, issues)
    scopes: dict[str, tuple[str, ...]] | None = None
    if harness_doc is not ABSENT:
        h_issues = harness_mod.validate_harness(harness_doc)
        issues.extend(_in(harness_mod.ROM_PATH, h_issues))
        if not harness_mod.errors_only(h_issues):
            scopes = harness_mod.parse_harness(harness_doc).scopes_by_role()
    policy_doc = _json_file(cart, policy_mod.ROM_PATH, issues)
    if policy_doc is not ABSENT:
        issues.extend(_in(policy_mod.ROM_PATH, policy_mod.validate_policy(policy_doc, harness_scopes=scopes)))
        policy = policy_mod.decoded_policy(policy_doc)
        engine_id = engine.id if engine is not None else None
        if policy is not None and policy.context.embedding_engine_id != engine_id:
            issues.append(
                Issue(
                    "context.embeddingEngineId",
                    f"{policy_mod.ROM_PATH}:$.context.embeddingEngineId",
                    f"names {policy.context.embedding_engine_id!r}, the cartridge's engine is {engine_id!r}",
                )
            )
    return SpecReport(
        spec.schema_version if spec is not None else None,
        msgspec.to_builtins(spec.embedding_engine) if spec is not None else None,
        tuple(msgspec.to_builtins(a) for a in spec.artifacts) if spec is not None else (),
        tuple(issues),
    )


def check_spec(path: str | os.PathLike[str]) -> SpecReport:
    """Open `path` read-only and run every spec check."""
    with open_cartridge(path) as cart:
        return check_open(cart)
