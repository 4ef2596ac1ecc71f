"""Build a signed cartridge from an agent package directory, deterministically: the same package,
key and created-at give the same ROM digest and the same file bytes (docs/decisions/0003).

Layout follows brief §1–§3 and §6: header words, the tables, ROM sqlar files stored uncompressed
(mode 420, mtime 0), the memory baseline and its SAVE partition, capabilities, the skill index,
every ROM source covered by one `objects` row, and the DSSE signature. No private key is written."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.keys import PrivateKey
from acxoci.attest.trust import RFC3339_RE
from acxoci.cartridge import capabilities as caps_mod
from acxoci.cartridge.constants import (
    APPLICATION_ID,
    PUBLISHER_RE,
    SPEC_VERSION,
    USER_VERSION,
    check_portable_path,
)
from acxoci.cartridge.memory import MemoryPartition, partition
from acxoci.cartridge.package import AgentPackage, read_package, slug
from acxoci.cartridge.schema import DDL as SCHEMA_DDL
from acxoci.cartridge.sign import SignResult, refresh_rom_objects, sign_connection
from acxoci.cartridge.skills import Skill, expertise_skill, load_skill
from acxoci.errors import InvalidInput, NotFound
from acxoci.policy import harness as harness_mod
from acxoci.policy import loop_context as policy_mod
from acxoci.policy._schema import Issue
from acxoci.policy.loop_context import errors_only

ENGINE_ID = "local-hash-128"
ENGINE_DIM = 128
SQLAR_MODE = 420
EXEC_MODE = 0o755
PAGE_SIZE = 4096
#: Namespace of the deterministic cartridge-id UUIDv5 (docs/decisions/0003-deterministic-build.md).
CARTRIDGE_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://acxoci.dev/ns/cartridge-id")
PATH_PACKAGE_SPEC = "rom/package-spec.json"
PATH_LANCE = "rom/schema/lance-memory.json"
PATH_SKILLSET = "rom/cal/skillset.json"

DDL = SCHEMA_DDL  # the one definition of the tables (acxoci/cartridge/schema.py)


@dataclass(frozen=True)
class BuildResult:
    """What was built: where, the signature facts, and the memory partition counts."""

    path: Path
    signature: SignResult
    rom_memory: int
    save_memory: int
    quarantined: tuple[str, ...]
    rom_files: tuple[str, ...]
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            **self.signature.to_json(),
            "romMemory": self.rom_memory,
            "saveMemory": self.save_memory,
            "quarantined": list(self.quarantined),
            "fieldLearned": "included" if self.save_memory else "quarantined (default)",
            "romFiles": list(self.rom_files),
            "notes": list(self.notes),
        }


def pretty_json(doc: Any) -> bytes:
    """The producer form of ROM JSON files: 2-space indent, no final newline."""
    return json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")


def format_time(t: datetime) -> str:
    """RFC 3339 UTC with milliseconds and `Z` (the form the reference writes)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.astimezone(UTC).microsecond // 1000:03d}Z"


def check_time(value: str, *, where: str) -> str:
    """Return `value` if it is RFC 3339 and a real date, else raise InvalidInput."""
    ok = bool(RFC3339_RE.fullmatch(value))
    if ok:
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            ok = False
    if not ok:
        raise InvalidInput(f"{value!r} is not an RFC 3339 date-time", where=where)
    return value


def cartridge_id(publisher: str, artifact_id: str, version: str, created_at: str) -> str:
    """`<publisher>/<artifactId>@<uuid>`: the UUID is a v5 over publisher, artifact, version and
    created-at, so a rebuild reproduces it and two releases never share one."""
    name = f"{publisher}/{artifact_id}@{version}#{created_at}"
    return f"{publisher}/{artifact_id}@{uuid.uuid5(CARTRIDGE_ID_NAMESPACE, name)}"


def lance_descriptor(dim: int) -> dict[str, Any]:
    """`rom/schema/lance-memory.json` (acx.lance-memory/1): how a host materialises vectors."""

    def col(name: str, typ: str, nullable: bool = False, **extra: Any) -> dict[str, Any]:
        return {"name": name, "type": typ, "nullable": nullable, **extra}

    return {
        "schemaVersion": "acx.lance-memory/1",
        "format": "lancedb",
        "table": "memories",
        "partitionBy": "zone",
        "distanceMetric": "cosine",
        "embeddingEngine": {"id": ENGINE_ID, "dim": dim},
        "textTemplate": 'title + "\\n\\n" + summary',
        "columns": [
            col("id", "utf8"),
            col("zone", "utf8", enum=["rom", "save"]),
            col("portable", "bool"),
            col("artifact_fingerprint", "utf8"),
            col("codebase_fingerprint", "utf8", True),
            col("title", "utf8"),
            col("summary", "utf8"),
            col("source_type", "utf8"),
            col("tags", "list<utf8>"),
            col("impact", "utf8", enum=["positive", "neutral", "negative"]),
            col("xp_awarded", "int32"),
            col("timestamp", "utf8"),
            col("text", "utf8"),
            col("vector", f"fixed_size_list<float32, {dim}>", sizeFromEngine=True),
        ],
    }


def package_spec(
    cid: str, engine: Mapping[str, Any], *, memory: int, skills: int, capabilities: int, levels: int = 0
) -> dict[str, Any]:
    """`rom/package-spec.json`: the closed eight-role profile (brief §6)."""
    return {
        "schemaVersion": "acx.package-spec/1",
        "cartridgeId": cid,
        "specVersion": SPEC_VERSION,
        "embeddingEngine": dict(engine),
        "artifacts": [
            {"role": "identity", "kind": "meta", "schema": "acx.cartridge-meta/1", "required": True},
            {
                "role": "memory-baseline",
                "kind": "table",
                "table": "memory",
                "mediaType": "application/json",
                "schema": "acx.memory-record.v1",
                "required": True,
                "count": memory,
            },
            {
                "role": "memory-vectors",
                "kind": "lance",
                "path": "vectors/memories.lance",
                "schema": "acx.lance-memory/1",
                "required": False,
                "signed": False,
                "reindexOnImport": True,
                "descriptor": PATH_LANCE,
            },
            {
                "role": "skills",
                "kind": "sqlar",
                "path": "rom/skills/",
                "schema": "acx.skill/1",
                "required": False,
                "count": skills,
            },
            {
                "role": "capabilities",
                "kind": "table",
                "table": "capabilities",
                "schema": "acx.capability/1",
                "required": False,
                "count": capabilities,
            },
            {
                "role": "harness",
                "kind": "sqlar",
                "path": harness_mod.ROM_PATH,
                "schema": "acx.harness.v1",
                "required": True,
            },
            {
                "role": "loop-context",
                "kind": "sqlar",
                "path": policy_mod.ROM_PATH,
                "schema": "acx.loop-context-policy/1.1",
                "required": True,
            },
            {
                "role": "level",
                "kind": "attestation",
                "schema": "acx.level-credential.v1",
                "required": False,
                "count": levels,
            },
        ],
    }


def cal_skillset(role: str, task_types: Sequence[str], skill_names: Sequence[str]) -> dict[str, Any]:
    """`rom/cal/skillset.json` (acx.cal-skillset/1): the one play this agent can fill in a workflow."""
    return {
        "schemaVersion": "acx.cal-skillset/1",
        "plays": [{"role": role, "providesCapabilities": list(task_types), "canComplete": list(skill_names)}],
        "references": [],
        "processes": [],
    }


def _doc(data: bytes, where: str) -> Any:
    try:
        return loads_strict(data)
    except MalformedError as exc:
        raise InvalidInput(str(exc), where=where) from exc


def _harness_bytes(pkg: AgentPackage) -> bytes:
    if pkg.harness is None:
        return pretty_json(harness_mod.default_harness())
    # acxoci reads the legacy harness shape (decision 0016) but never writes it: warnings refuse too
    issues = harness_mod.validate_harness(_doc(pkg.harness, harness_mod.ROM_PATH))
    if issues:
        raise InvalidInput(
            "package harness-requirements.json is invalid: " + "; ".join(map(str, issues)),
            where=str(pkg.root / "harness-requirements.json"),
            details={"issues": [i.to_json() for i in issues]},
        )
    return pkg.harness


def _policy_bytes(pkg: AgentPackage, engine_id: str, harness_doc: Mapping[str, Any]) -> bytes:
    if pkg.policy is None:
        return pretty_json(policy_mod.default_policy(engine_id))
    doc = _doc(pkg.policy, policy_mod.ROM_PATH)
    scopes = harness_mod.parse_harness(harness_doc).scopes_by_role()
    issues = errors_only(policy_mod.validate_policy(doc, harness_scopes=scopes))
    if (
        isinstance(doc, dict)
        and isinstance(doc.get("context"), dict)
        and doc["context"].get("embeddingEngineId") not in (None, engine_id)
    ):
        issues.append(
            Issue(
                "context.embeddingEngineId",
                "$.context.embeddingEngineId",
                f"must name the cartridge's engine {engine_id!r}",
            )
        )
    if issues:
        raise InvalidInput(
            "package loop-context-policy.json is invalid: " + "; ".join(map(str, issues)),
            where=str(pkg.root / "loop-context-policy.json"),
            details={"issues": [i.to_json() for i in issues]},
        )
    return pkg.policy


def _cbf_salt(key: PrivateKey) -> bytes:
    """A per-key secret salt. A key held in a token (PKCS#11) cannot be exported: its salt comes from
    its (deterministic, Ed25519) signature over a fixed label instead, as stable and as secret."""
    from acxoci.pkcs11key import is_token_key

    if is_token_key(key):
        return hashlib.sha256(b"acxoci/codebase-fingerprint-salt/v1/token\x00"
                              + key.sign(b"acxoci/codebase-fingerprint-salt/v1")).digest()
    der = key.key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return hashlib.sha256(b"acxoci/codebase-fingerprint-salt/v1\x00" + der).digest()


def _meta(
    pkg: AgentPackage, *, publisher: str, cid: str, created_at: str, engine: Mapping[str, Any]
) -> dict[str, str]:
    m = pkg.manifest
    level = m.get("level", 0)
    authors = m.get("authors", [])
    tags = m.get("tags", [])
    if (
        not isinstance(authors, list)
        or not isinstance(tags, list)
        or not all(isinstance(t, str) for t in tags)
    ):
        raise InvalidInput(
            "manifest.json authors and tags must be arrays", where=str(pkg.root / "manifest.json")
        )
    meta = {
        "acx.spec_version": SPEC_VERSION,
        "acx.cartridge_id": cid,
        "acx.created_at": created_at,
        "acx.embedding_engine": json.dumps(dict(engine), separators=(",", ":")),
        "acx.publisher_id": publisher,
        "acx.agent_name": pkg.text("name"),
        "acx.provider": pkg.text("provider"),
        "acx.model": pkg.text("model"),
        "acx.role": pkg.text("role"),
        "acx.declared_level": str(level if isinstance(level, int) and not isinstance(level, bool) else 0),
        "acx.artifact_id": pkg.artifact_id,
        "acx.artifact_version": pkg.artifact_version,
        "acx.description": pkg.text("description"),
        "acx.license": pkg.text("license", "LicenseRef-acx-proprietary"),
        "acx.authors": jcs(authors).decode("utf-8"),
        "acx.tags": jcs(tags).decode("utf-8"),
        "acx.vec0_format": "1",
        "acx.package_spec": PATH_PACKAGE_SPEC,
        "acx.lance_schema": PATH_LANCE,
        "acx.cal_skillset": PATH_SKILLSET,
    }
    if pkg.text("homepage"):
        meta["acx.homepage"] = pkg.text("homepage")
    return meta


def _skills(pkg: AgentPackage, license_id: str, purls: Sequence[str], stack: Sequence[str]) -> list[Skill]:
    out = [
        expertise_skill(
            pkg.text("name"),
            pkg.text("role"),
            stack,
            purls,
            license_id=license_id,
            version=pkg.artifact_version,
        )
    ]
    for folder in pkg.skills:
        skill = load_skill(folder.name, folder.skill_md)
        if any(s.path == skill.path for s in out):
            raise InvalidInput(
                f"skill {skill.name!r} collides with the generated expertise skill",
                where=f"skills/{folder.name}",
            )
        inventory = tuple(
            {
                "path": f"skills/{folder.name}/{f.rel}",
                "bytes": len(f.data),
                "sha256": hashlib.sha256(f.data).hexdigest(),
            }
            for f in folder.resources
        )
        out.append(replace(skill, resources=inventory))
    return sorted(out, key=lambda s: s.path)


def _skill_files(pkg: AgentPackage) -> list[tuple[str, bytes, int]]:
    """Every file of every skill folder other than SKILL.md, as (sqlar name, bytes, mode): the
    reference's mode 420 for a plain file, 493 (0755) for an executable script."""
    return [
        (f"rom/skills/{folder.name}/{f.rel}", f.data, EXEC_MODE if f.executable else SQLAR_MODE)
        for folder in pkg.skills
        for f in folder.resources
    ]


def build_cartridge(
    pkg_dir: Path,
    out: Path,
    *,
    publisher: str,
    key: PrivateKey,
    created_at: str | None = None,
    include_field_learned: bool = False,
    now: datetime | None = None,
) -> BuildResult:
    """Build and sign `out` from `pkg_dir`. `created_at` (else manifest exportedAt, else `now`) is the
    only clock input, so fixing it makes the build reproducible. Writes atomically."""
    if not PUBLISHER_RE.fullmatch(publisher):
        raise InvalidInput(f"publisher {publisher!r} is not a reverse-DNS id", where="--publisher")
    pkg = read_package(pkg_dir)
    notes = list(pkg.notes)
    # The signature is dated when it is made (or at the fixed --created-at): a package's exportedAt
    # may predate the key's registration, and `key trust` starts the key's window now (decision 0014).
    signed_at = created_at or format_time(now or datetime.now(UTC))
    if created_at is None:
        exported = pkg.text("exportedAt")
        created_at = exported or signed_at
        notes.append(
            f"created-at taken from {'manifest exportedAt' if exported else 'the clock'}; "
            "signed at build time"
        )
    check_time(created_at, where="--created-at")
    engine_name = pkg.text("vectorEngine", ENGINE_ID)
    if engine_name != ENGINE_ID:
        raise InvalidInput(
            f"vectorEngine {engine_name!r} is not supported (only {ENGINE_ID})",
            where=str(pkg_dir / "manifest.json"),
        )
    engine = {"id": ENGINE_ID, "dim": ENGINE_DIM}
    cid = cartridge_id(publisher, pkg.artifact_id, pkg.artifact_version, created_at)
    parts: MemoryPartition = partition(
        pkg.memory_records, include_field_learned=include_field_learned, salt=_cbf_salt(key)
    )
    stack_raw = pkg.manifest.get("techStack", [])
    stack = [s for s in stack_raw if isinstance(s, str)] if isinstance(stack_raw, list) else []
    purls = [caps_mod.purl(s) for s in stack]
    caps = caps_mod.capabilities_for(pkg.text("role"), stack, pkg.capabilities, at=created_at)
    license_id = pkg.text("license", caps_mod.DEFAULT_LICENSE)
    skills = _skills(pkg, license_id, purls, stack)
    harness_bytes = _harness_bytes(pkg)
    policy_bytes = _policy_bytes(pkg, ENGINE_ID, _doc(harness_bytes, harness_mod.ROM_PATH))
    files: list[tuple[str, bytes]] = [(f"rom/knowledge/{n}.md", d) for n, d in pkg.knowledge]
    files += [(s.path, s.data) for s in skills]
    skill_files = _skill_files(pkg)
    files += [(n, d) for n, d, _mode in skill_files]
    modes = {n: mode for n, _d, mode in skill_files}
    files += [
        (harness_mod.ROM_PATH, harness_bytes),
        (policy_mod.ROM_PATH, policy_bytes),
        (
            PATH_SKILLSET,
            pretty_json(
                cal_skillset(pkg.text("role"), [c.record["taskType"] for c in caps], [s.name for s in skills])
            ),
        ),
        (PATH_LANCE, pretty_json(lance_descriptor(ENGINE_DIM))),
        (
            PATH_PACKAGE_SPEC,
            pretty_json(
                package_spec(cid, engine, memory=len(parts.rom), skills=len(skills), capabilities=len(caps))
            ),
        ),
    ]
    for name, _ in files:
        check_portable_path(name, where="build")
    meta = _meta(pkg, publisher=publisher, cid=cid, created_at=created_at, engine=engine)
    provenance = pkg.manifest.get("originInstanceId")
    out = Path(out)
    if not out.parent.is_dir():
        raise NotFound(f"output directory does not exist: {out.parent}", where="-o")
    tmp = out.with_name(f".{out.name}.build-{os.getpid()}.tmp")
    if tmp.exists():
        tmp.unlink()
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            for pragma in (
                f"PRAGMA page_size = {PAGE_SIZE}",
                "PRAGMA encoding = 'UTF-8'",
                "PRAGMA journal_mode = DELETE",
                f"PRAGMA application_id = {APPLICATION_ID}",
                f"PRAGMA user_version = {USER_VERSION}",
            ):
                conn.execute(pragma)
            conn.execute("BEGIN")
            for stmt in DDL:
                conn.execute(stmt)
            conn.executemany("INSERT INTO cartridge (key, value) VALUES (?, ?)", sorted(meta.items()))
            conn.executemany(
                "INSERT INTO sqlar (name, mode, mtime, sz, data) VALUES (?, ?, 0, ?, ?)",
                [(n, modes.get(n, SQLAR_MODE), len(d), d) for n, d in files],
            )
            for e in (*parts.rom, *parts.save):
                conn.execute(
                    "INSERT INTO memory (id, zone, artifact_fingerprint, codebase_fingerprint, payload, oid,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        e.id,
                        e.zone,
                        e.artifact_fingerprint,
                        e.codebase_fingerprint,
                        e.payload.decode("utf-8"),
                        e.oid,
                        e.created_at,
                    ),
                )
            conn.executemany(
                "INSERT INTO objects (oid, kind, source_ref, canon, zone, sz)"
                " VALUES (?, 'memory', ?, 'jcs-rfc8785', 'save', ?)",
                [(e.oid, f"memory:{e.id}", len(e.payload)) for e in parts.save],
            )
            conn.executemany(
                "INSERT INTO capabilities (id, json, content_hash) VALUES (?, ?, ?)",
                [(c.id, c.json.decode("utf-8"), c.content_hash) for c in caps],
            )
            conn.executemany(
                "INSERT INTO acx_skill VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [s.index_row() for s in skills],
            )
            refresh_rom_objects(conn)
            result = sign_connection(
                conn,
                key,
                signed_at=signed_at,
                provenance_instance_id=provenance if isinstance(provenance, str) else None,
            )
            conn.execute("COMMIT")
            conn.execute("VACUUM")
        finally:
            conn.close()
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return BuildResult(
        out,
        result,
        len(parts.rom),
        len(parts.save),
        parts.quarantined,
        tuple(n for n, _ in files),
        tuple(notes),
    )


__all__ = [
    "BuildResult",
    "build_cartridge",
    "cal_skillset",
    "cartridge_id",
    "lance_descriptor",
    "package_spec",
    "pretty_json",
    "slug",
]
