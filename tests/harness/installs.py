"""Builders shared by the install tests (no tests here): real cartridges re-signed with keys made at
run time, pushed into an OCI layout as §11 cartridge manifests; trust registries, issuer registries,
level credentials with a status list, host descriptors and verification policies."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.oci.descriptor import Descriptor
from acxoci.oci.layout import LayoutStore
from acxoci.oci.target import push_bytes

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
PUBLISHER = "io.github.example-acx"
ISSUER = "did:web:verifier.example"
LIST_ID = "https://verifier.example/status/1"
EMPTY_CONFIG = b"{}"
CARTRIDGE_ARTIFACT = "application/vnd.acx.cartridge.v1"
CARTRIDGE_LAYER = "application/vnd.acx.cartridge.layer.v1+sqlite"
HARNESS_PATH = "rom/manifest/harness-requirements.json"
POLICY_PATH = "rom/policy/loop-context-policy.json"
MANIFEST_MT = "application/vnd.oci.image.manifest.v1+json"


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tree_hash(root: Path) -> str:
    """Hash of every path and file byte under `root` (directories included; missing root = 'absent')."""
    if not root.exists():
        return "absent"
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_dir():
            h.update(f"D {rel}\n".encode())
        else:
            h.update(f"F {rel} ".encode() + hashlib.sha256(p.read_bytes()).digest() + b"\n")
    return h.hexdigest()


def _set_sqlar(conn: sqlite3.Connection, name: str, data: bytes) -> None:
    """Store a file uncompressed (sz == len(data) is valid sqlar)."""
    conn.execute("UPDATE sqlar SET data = ?, sz = ? WHERE name = ?", (data, len(data), name))


def valid_harness() -> dict[str, Any]:
    from acxoci.policy.harness import default_harness

    return default_harness()


def policy_doc(budget: dict[str, Any] | None) -> dict[str, Any]:
    from acxoci.policy.loop_context import default_policy

    doc = default_policy()
    if budget is not None:
        doc["budget"] = budget
    return doc


BUDGET = {
    "tokenSpend": {"dailyPerProject": 1000, "dailyPerAgent": 500, "dailyGlobal": 5000},
    "concurrency": {"maxCommandsPerStation": 2, "maxStationsPerProject": 2, "maxGlobalInFlightCommands": 4},
    "timeouts": {"defaultCommandSec": 60, "maxCommandSec": 600},
    "killSwitch": {"enabled": False},
}


def make_cartridge(
    vectors: Path,
    dest: Path,
    key: PrivateKey,
    *,
    budget: dict[str, Any] | None = BUDGET,
    harness: dict[str, Any] | None = None,
    signed_at: datetime = NOW - timedelta(days=1),
    version: str | None = None,
) -> Path:
    """sample.acx with a schema-valid harness and policy (with `budget`), re-signed by `key`
    (with `version`, its signed `acx.artifact_version` is set to it first)."""
    from acxoci.cartridge.sign import resign_file

    shutil.copyfile(vectors / "sample" / "sample.acx", dest)
    os.chmod(dest, 0o644)
    conn = sqlite3.connect(dest, isolation_level=None)
    try:
        _set_sqlar(conn, HARNESS_PATH, json.dumps(harness or valid_harness(), indent=2).encode())
        _set_sqlar(conn, POLICY_PATH, json.dumps(policy_doc(budget), indent=2).encode())
        if version is not None:
            conn.execute("UPDATE cartridge SET value = ? WHERE key = 'acx.artifact_version'", (version,))
    finally:
        conn.close()
    resign_file(dest, key, signed_at=iso(signed_at), refresh=True)
    return dest


def rom_digest(path: Path) -> str:
    from acxoci.cartridge.verify import verify_cartridge

    v = verify_cartridge(path, registry=None, now=NOW)
    assert v.rom_digest is not None, v
    return v.rom_digest


def push_cartridge(layout: Path, acx: Path, tag: str) -> Descriptor:
    """Push a cartridge as the brief §11 manifest (empty config, one sqlite layer) and tag it."""
    target = LayoutStore(layout, create=True)
    data = acx.read_bytes()
    layer = push_bytes(target, data, CARTRIDGE_LAYER)
    config = push_bytes(target, EMPTY_CONFIG, "application/vnd.oci.empty.v1+json")
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MT,
        "artifactType": CARTRIDGE_ARTIFACT,
        "config": config.to_json(),
        "layers": [
            {
                "mediaType": CARTRIDGE_LAYER,
                "digest": layer.digest,
                "size": layer.size,
                "annotations": {"vnd.acx.rom-manifest-hash": rom_digest(acx), "vnd.acx.spec-version": "0.1"},
            }
        ],
    }
    raw = json.dumps(manifest, separators=(",", ":")).encode()
    desc = push_bytes(target, raw, MANIFEST_MT, artifact_type=CARTRIDGE_ARTIFACT)
    target.tag(desc, tag)
    return desc


def push_referrer(
    layout: Path, subject: Descriptor, artifact_type: str, layer_mt: str, data: bytes
) -> Descriptor:
    """Attach `data` to `subject` as a referrer manifest (one layer)."""
    target = LayoutStore(layout, create=True)
    layer = push_bytes(target, data, layer_mt)
    config = push_bytes(target, EMPTY_CONFIG, "application/vnd.oci.empty.v1+json")
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MT,
        "artifactType": artifact_type,
        "config": config.to_json(),
        "layers": [layer.to_json()],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size},
    }
    return push_bytes(
        target, json.dumps(manifest, separators=(",", ":")).encode(), MANIFEST_MT, artifact_type=artifact_type
    )


def blob_path(layout: Path, digest: str) -> Path:
    alg, hexpart = digest.split(":")
    return layout / "blobs" / alg / hexpart


def registry_entry(
    key: PrivateKey, publisher: str, *, status: str = "active", **extra: Any
) -> dict[str, Any]:
    """An acx.trust-registry/1 key entry with the namespace proof shape the publisher needs."""
    pub = key.public()
    if publisher.startswith("io.github."):
        owner = publisher.split(".")[2].split("/")[0]
        proof = {
            "method": "github-oidc",
            "oidcSubject": f"repo:{owner}/agents:ref:refs/heads/main",
            "oidcIssuer": "https://token.actions.githubusercontent.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        }
    else:
        root = publisher.split("/")[0]
        proof = {
            "method": "dns-txt",
            "txtRecord": "_acx-challenge." + ".".join(reversed(root.split("."))),
            "verifiedAt": "2026-01-01T00:00:00Z",
        }
    entry = {
        "keyid": pub.keyid(),
        "publisherId": publisher,
        "algorithm": "ed25519",
        "publicKeyPem": pub.spki_pem(),
        "status": status,
        "notBefore": "2020-01-01T00:00:00Z",
        "notAfter": "2035-01-01T00:00:00Z",
        "namespaceProof": proof,
    }
    entry.update(extra)
    return entry


def write_registry(path: Path, entries: Iterable[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"schemaVersion": "acx.trust-registry/1", "keys": list(entries)}, indent=2))
    return path


def host_descriptor(
    harness: dict[str, Any] | None = None, *, context: int = 200000, drop_role: str | None = None
) -> dict[str, Any]:
    """An acx.host.v1 descriptor offering exactly what the harness asks for (minus `drop_role`)."""
    h = harness or valid_harness()
    tools = [
        {
            "name": t["name"],
            "roles": [t["role"]],
            "scopes": list(t["capabilityScopes"]),
            "inputSchema": t["inputSchema"],
        }
        for t in h["requiredTools"] + h.get("optionalTools", [])
        if t["role"] != drop_role
    ]
    return {
        "schemaVersion": "acx.host.v1",
        "hostId": "test-host",
        "mcp": {"protocolRevisions": ["2024-11-05", "2025-11-25"]},
        "model": {"toolUse": True, "contextWindowTokens": context, "structuredOutput": True},
        "tools": tools,
        "filesystem": {"read": ["**"], "write": ["**"]},
        "network": {"egress": "any"},
    }


@dataclass
class Level:
    """An issuer key, its registry file, a signed credential for a cartridge and its status list."""

    key: PrivateKey
    registry: Path
    credential: dict[str, Any]
    status_list: dict[str, Any]
    list_path: Path


def issue_level(
    tmp: Path,
    acx: Path,
    *,
    now: datetime = NOW,
    competence: float = 33.0,
    list_valid_from: datetime | None = None,
    demo: bool = False,
    verifier: str | None = None,
) -> Level:
    """Run a real (non-demo) benchmark on `acx` with a measuring solver, and issue a credential with
    a status list entry (index 3). `demo=True`: the demo suite and the demo solver instead."""
    from acxoci.attest.statuslist import StatusEntry
    from acxoci.level.benchmark import demo_suite
    from acxoci.level.credential import issue_credential
    from acxoci.level.issuers import did_web_publisher
    from acxoci.level.run import run_level
    from acxoci.level.solver import ReferenceSolver
    from acxoci.level.status import create_status_list

    issuer_key = generate_ed25519()
    reg = write_registry(tmp / "issuers.json", [registry_entry(issuer_key, did_web_publisher(ISSUER))])
    rom = rom_digest(acx)
    suite, solver = (demo_suite(), ReferenceSolver(competence)) if demo else measured_bench(competence)
    result = run_level(suite, cartridge=acx, rom_digest=rom, solver=solver, signer=issuer_key)
    entry = StatusEntry(LIST_ID, 3, "revocation", f"{LIST_ID}#3")
    cred = issue_credential(
        result,
        cartridge_id="io.github.example-acx/scenario-research-designer@x",
        issuer=ISSUER,
        key=issuer_key,
        now=now - timedelta(hours=2),
        status=entry,
        verifier=verifier,
    )
    sl = create_status_list(
        list_id=LIST_ID, issuer=ISSUER, key=issuer_key, now=list_valid_from or now - timedelta(hours=1)
    )
    list_path = tmp / "status-1.json"
    list_path.write_text(json.dumps(sl))
    return Level(issuer_key, reg, cred, sl, list_path)


def measured_bench(competence: float) -> tuple[Any, Any]:
    """A benchmark that is not the demo one, and a solver that is not the demo solver (its outcomes
    follow the same logistic curve, so levels come out as the demo's would)."""
    from acxoci.level.benchmark import BenchmarkSuite, Task
    from acxoci.level.solver import CallableSolver, ReferenceSolver, SolveRequest

    tasks = tuple(Task(f"etl-task-{i:03d}", 15 + i % 34, f"load and validate partition {i}")
                  for i in range(160))
    suite = BenchmarkSuite("acx-bench-etl-test", "2026.12.1", "ETL test suite", tasks, 0.6, "etl-test-seal")
    by_id = {t.id: t for t in tasks}
    ref = ReferenceSolver(competence)

    def solve(req: dict[str, Any]) -> Any:
        task = by_id[req["task"]["id"]]
        return ref.solve(SolveRequest(req["benchmark"], req["version"], task, Path(req["cartridge"]),
                                      req["romDigest"]))

    return suite, CallableSolver(solve, "tests.measured:solve")


def revoke(level: Level, *, now: datetime) -> None:
    from acxoci.level.status import set_status

    level.status_list = set_status(level.status_list, 3, key=level.key, now=now)
    level.list_path.write_text(json.dumps(level.status_list))


def write_policy(path: Path, doc: dict[str, Any]) -> Path:
    full = {"schemaVersion": "acx.verification-policy/1", **doc}
    path.write_text(yaml.safe_dump(full, sort_keys=False))
    return path


def trusting_policy(tmp: Path, registry: Path, **extra: Any) -> Path:
    """A policy trusting PUBLISHER through `registry`, plus `extra` top-level fields."""
    return write_policy(
        tmp / "policy.yaml", {"publishers": [{"id": PUBLISHER, "trustRegistries": [str(registry)]}], **extra}
    )


def level_policy(tmp: Path, registry: Path, level: Level, minimum: int | str = "mid", **rev: Any) -> Path:
    return trusting_policy(
        tmp,
        registry,
        level={"minimum": minimum, "issuers": [ISSUER], "issuerRegistries": [str(level.registry)]},
        revocation={
            "statusLists": {LIST_ID: str(level.list_path)},
            "statusListCache": str(tmp / "status-cache"),
            **rev,
        },
    )


def attach_level(layout: Path, subject: Descriptor, cred: dict[str, Any]) -> Descriptor:
    return push_referrer(
        layout,
        subject,
        "application/vnd.acx.level-attestation.v1",
        "application/vc",
        json.dumps(cred).encode(),
    )
