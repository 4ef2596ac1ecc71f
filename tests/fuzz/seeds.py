"""Valid, signed seed documents for the fuzz targets, made once per process at run time (keys are
generated here; nothing is committed). Each seed also carries what its judge needs: the trust
inputs under which the unmutated seed verifies, and the "signed view" a mutation must not change
while still being trusted."""

from __future__ import annotations

import atexit
import base64
import contextlib
import copy
import functools
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import jcs, loads_strict
from acxoci.attest.keys import PrivateKey, generate_ed25519
from tests.harness import env

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SAMPLE = "sample/sample.acx"
PUBLISHER = "io.github.example-acx"


@dataclass
class Seeds:
    """Everything the targets read: a scratch folder, keys and the seed documents."""

    tmp: Path
    key: PrivateKey
    cartridge: bytes
    cartridge_registry: Path
    cartridge_rom: Any
    workflow: dict[str, Any]
    workflow_registry: Any
    envelope: dict[str, Any]
    bundle: dict[str, Any]
    trust_registry: dict[str, Any]
    policy: dict[str, Any]
    policy_yaml: bytes
    plan_yaml: bytes
    credential: dict[str, Any]
    issuers: Any
    rom_digest: str
    status_list: dict[str, Any]
    manifest: dict[str, Any]
    index: dict[str, Any]
    record: dict[str, Any]
    docker_config: dict[str, Any]
    status_check: Any = None


def _json_or_raw(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return jcs(loads_strict(text))
    except Exception:
        return text


def rom_view(path: Path) -> Any:
    """What the ROM signature covers, read with plain sqlite3 (an oracle independent of our reader):
    ROM files, ROM object rows, bound metadata, ROM memory, capabilities and the DSSE payload. None
    when SQLite cannot read the file at all."""
    from acxoci.cartridge.constants import BOUND_META_KEYS

    uri = f"file:{path}?mode=ro&immutable=1"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as c:
            c.execute("PRAGMA trusted_schema=OFF")
            sqlar = c.execute(
                "SELECT name, sz, CAST(data AS BLOB) FROM sqlar WHERE name LIKE 'rom/%' ORDER BY name"
            ).fetchall()
            objects = c.execute(
                "SELECT oid, kind, source_ref, canon, zone, sz FROM objects WHERE zone = 'rom' ORDER BY oid"
            ).fetchall()
            marks = ",".join("?" * len(BOUND_META_KEYS))
            meta = c.execute(
                f"SELECT key, value FROM cartridge WHERE key IN ({marks}) ORDER BY key", BOUND_META_KEYS
            ).fetchall()
            memory = [
                (i, _json_or_raw(p), o)
                for i, p, o in c.execute("SELECT id, payload, oid FROM memory WHERE zone = 'rom' ORDER BY id")
            ]
            caps = [
                (i, _json_or_raw(j)) for i, j in c.execute("SELECT id, json FROM capabilities ORDER BY id")
            ]
            envs = []
            for (text,) in c.execute("SELECT envelope FROM signatures ORDER BY sig_id"):
                try:
                    e = loads_strict(text)
                    envs.append((e.get("payloadType"), base64.b64decode(e.get("payload"), validate=False)))
                except Exception:
                    envs.append(("raw", text))
            return (sqlar, objects, meta, memory, caps, envs)
    except sqlite3.Error:
        return None


@contextlib.contextmanager
def scratch(tmp: Path) -> Iterator[Path]:
    """A fresh folder under the seeds' scratch root for one input (removed afterwards)."""
    d = Path(tempfile.mkdtemp(dir=tmp))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _workflow(key: PrivateKey) -> tuple[dict[str, Any], Any]:
    from acxoci.attest.trust import TrustRegistry
    from acxoci.workflow.sign import sign_workflow

    doc = json.loads((env.vectors() / "workflow" / "team.cal.json").read_text(encoding="utf-8"))
    signed = sign_workflow(doc, publisher_id=PUBLISHER, key=key, now=NOW)
    entry = {
        "keyid": key.public().keyid(), "publisherId": PUBLISHER, "algorithm": "ed25519",
        "publicKeyPem": key.public().spki_pem(), "status": "active",
        "notBefore": "2020-01-01T00:00:00Z", "notAfter": "2035-01-01T00:00:00Z",
        "namespaceProof": {"method": "github-oidc",
                           "oidcSubject": "repo:example-acx/flows:ref:refs/heads/main",
                           "oidcIssuer": "https://token.actions.githubusercontent.com",
                           "verifiedAt": "2026-01-01T00:00:00Z"},
    }
    reg = TrustRegistry.from_json({"schemaVersion": "acx.trust-registry/1", "keys": [entry]}, now=NOW)
    return signed, reg


def _level(tmp: Path, key: PrivateKey) -> tuple[dict[str, Any], Any, str, dict[str, Any]]:
    from acxoci.attest.statuslist import StatusEntry
    from acxoci.level import status as st
    from acxoci.level.benchmark import demo_suite
    from acxoci.level.credential import issue_credential
    from acxoci.level.issuers import IssuerRegistry
    from acxoci.level.run import run_level
    from acxoci.level.solver import ReferenceSolver
    from tests.harness.trustdocs import registry_doc

    rom = "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"
    issuer = "did:web:verifier.example"
    t0 = NOW - timedelta(hours=1)
    result = run_level(demo_suite(), cartridge=Path("ada-ridge.acx"), rom_digest=rom,
                       solver=ReferenceSolver(33), signer=key)
    issuers = IssuerRegistry.from_json(registry_doc(key.public(), "example.verifier"))
    list_id = "https://status.example/lists/1"
    entry = StatusEntry(list_id, 42, "revocation", f"{list_id}#42")
    vc = issue_credential(result, cartridge_id="io.github.ridgeworks/ada-ridge@x", issuer=issuer, key=key,
                          now=t0, status=entry, validity=timedelta(days=30))
    sl = st.create_status_list(list_id=list_id, issuer=issuer, key=key, now=t0)
    return vc, issuers, rom, sl


@functools.lru_cache(maxsize=1)
def seeds() -> Seeds:
    """Build the seeds once per process (a few hundred milliseconds)."""
    import yaml

    from acxoci.attest import dsse
    from acxoci.attest.bundle import build_dsse_bundle
    from acxoci.attest.canonical import sha256_digest
    from acxoci.install.vpolicy import starter_template
    from acxoci.oci.shapes import cartridge_manifest

    tmp = Path(tempfile.mkdtemp(prefix="acx-fuzz-"))
    atexit.register(shutil.rmtree, tmp, True)  # the seeds live as long as the process
    key = generate_ed25519()
    vec = env.vectors()
    cart = (vec / SAMPLE).read_bytes()
    cart_path = tmp / "seed.acx"
    cart_path.write_bytes(cart)
    reg_path = tmp / "trust-active.json"
    shutil.copyfile(vec / "sample" / "trust-active.json", reg_path)
    workflow, wreg = _workflow(key)
    envelope = dsse.sign("application/vnd.in-toto+json", b'{"_type":"https://in-toto.io/Statement/v1"}',
                         key, key.public().keyid()).to_json()
    bundle = build_dsse_bundle(dsse.Envelope.from_json(envelope), key.public())
    trust = json.loads(reg_path.read_text())
    pol_text = starter_template()
    pol_doc = yaml.safe_load(pol_text)
    policy = pol_doc if isinstance(pol_doc, dict) else {"schemaVersion": "acx.verification-policy/1"}
    (tmp / "pub.pem").write_text(key.public().spki_pem())
    vc, issuers, rom, sl = _level(tmp, key)
    built = cartridge_manifest(file_digest=sha256_digest(cart), file_size=len(cart), title="sample.acx",
                               rom_digest=rom, created="2026-11-30T12:00:00Z")
    manifest = copy.deepcopy(built.manifest)
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": built.descriptor.media_type, "digest": built.descriptor.digest,
                            "size": built.descriptor.size, "artifactType": "application/vnd.acx.cartridge.v1",
                            "annotations": {"org.opencontainers.image.ref.name": "v1"}}]}
    digest = "sha256:" + "ab" * 32
    record = {"name": "sample", "digest": digest, "kind": "cartridge", "reference": "127.0.0.1:5000/acx/s:v1",
              "installedAt": "2026-11-30T12:00:00Z", "trust": "trusted", "publisherId": PUBLISHER, "seq": 1,
              "files": [{"path": "sample.acx", "digest": sha256_digest(cart), "size": len(cart)}]}
    docker = {"auths": {"127.0.0.1:5000": {"auth": base64.b64encode(b"acx:acx-secret").decode()},
                        "https://index.docker.io/v1/": {"username": "u", "password": "p"}},
              "credsStore": "", "credHelpers": {}}
    (tmp / "sample.acx").write_bytes(cart)
    plan = {"schemaVersion": "acx.release-plan/1",
            "goal": {"id": "g1", "artifacts": [{"input": "agent", "to": [{"repository": "127.0.0.1:1/acx/s",
                                                                           "tags": ["v1"]}]}],
                     "attestations": {"formats": ["legacy", "bundle"]}},
            "inputs": {"artifacts": {"agent": {"cartridge": "sample.acx"}},
                       "keys": {"attestation": {"file": "keys/attest.pem"}}},
            "acceptance": {"policy": "policy.yaml"},
            "budget": {"attempts": 3, "backoffSeconds": 0.01, "maxBackoffSeconds": 0.05,
                       "transportRetries": 2}}
    sl_path = tmp / "status-list.json"
    sl_path.write_text(json.dumps(sl))

    def status_check(entry: Any, vc_issuer: str) -> Any:
        from acxoci.level import status as st

        return st.check_status(entry, source=str(sl_path), issuers=issuers, vc_issuer=vc_issuer, now=NOW,
                               max_age=timedelta(days=1), allow_offline=False, cache_dir=tmp / "sl-cache")

    return Seeds(
        tmp=tmp, key=key, cartridge=cart, cartridge_registry=reg_path, cartridge_rom=rom_view(cart_path),
        workflow=workflow, workflow_registry=wreg, envelope=envelope, bundle=bundle, trust_registry=trust,
        policy=policy, policy_yaml=pol_text.encode(), plan_yaml=yaml.safe_dump(plan).encode(), credential=vc,
        issuers=issuers, rom_digest=rom, status_list=sl, manifest=manifest, index=index, record=record,
        docker_config=docker, status_check=status_check,
    )
