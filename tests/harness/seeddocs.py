"""Seed documents of every kind that has a schema and a model: the reference's vectors (and the
documents inside their cartridges), acxoci's own defaults and documents made at run time (a level
credential, a status list, an Exchange index with its ledger and lifecycle records). Used by the
schema/model agreement test and by the fuzzing that re-signs changed documents."""

from __future__ import annotations

import functools
import json
import sqlite3
import tempfile
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.harness import env

#: schema file → the model decoding it (`module:Class`)
MODELS: dict[str, str] = {
    "acx.harness.v1.schema.json": "acxoci.documents.harness:HarnessDoc",
    "acx.host.v1.schema.json": "acxoci.documents.host:HostDoc",
    "acx.loop-context-policy-1.1.schema.json": "acxoci.documents.loop_policy:LoopPolicyDoc",
    "acx.loop-context-policy-1.schema.json": "acxoci.documents.loop_policy:LoopPolicyDoc",
    "resource-limits.schema.json": "acxoci.documents.resource_limits:ResourceLimitsDoc",
    "resource-limits.schema.json#relaxed": "acxoci.documents.host_limits:HostLimitsDoc",
    "acx.policy-trace-1.schema.json": "acxoci.documents.policy_trace:PolicyTraceDoc",
    "acx.package-spec-1.schema.json": "acxoci.documents.package_spec:PackageSpecDoc",
    "acx.cal-skillset-1.schema.json": "acxoci.documents.skillset:SkillsetDoc",
    "acx.memory-record-1.schema.json": "acxoci.documents.memory_record:MemoryRecordDoc",
    "acx.capability-1.schema.json": "acxoci.documents.capability:CapabilityDoc",
    "acx.lance-memory-1.schema.json": "acxoci.documents.lance:LanceDescriptorDoc",
    "acx.agent-package-manifest-1.schema.json": "acxoci.documents.package_manifest:PackageManifestDoc",
    "acx.cal-1.schema.json": "acxoci.documents.cal:CalDoc",
    "acx.agent-graph-1.schema.json": "acxoci.documents.agent_graph:AgentGraphDoc",
    "acx.level-credential-1.schema.json": "acxoci.documents.level_credential:LevelCredentialDoc",
    "acx.exchange-index-1.schema.json": "acxoci.documents.exchange_index:ExchangeIndexDoc",
    "acx.exchange-status-1.schema.json": "acxoci.documents.exchange_status:ExchangeStatusDoc",
    "acx.lifecycle-record-1.schema.json": "acxoci.documents.lifecycle:LifecycleRecordDoc",
    "acx.verification-policy-1.schema.json": "acxoci.documents.verification_policy:VerificationPolicyDoc",
    "acx.install-record-1.schema.json": "acxoci.documents.install_record:InstallRecordDoc",
    "acx.activation-1.schema.json": "acxoci.documents.activation:ActivationDoc",
    "acx.trust-registry-1.schema.json": "acxoci.attest.documents.trust_registry:TrustRegistryDoc",
    "acx.status-list-1.schema.json": "acxoci.attest.documents.status_list:StatusListDoc",
}
ROM_FILES = {
    "rom/package-spec.json": "acx.package-spec-1.schema.json",
    "rom/manifest/harness-requirements.json": "acx.harness.v1.schema.json",
    "rom/policy/loop-context-policy.json": "acx.loop-context-policy-1.1.schema.json",
    "rom/schema/lance-memory.json": "acx.lance-memory-1.schema.json",
    "rom/cal/skillset.json": "acx.cal-skillset-1.schema.json",
}


def model_for(schema_file: str) -> type[Any]:
    import importlib

    module, _, name = MODELS[schema_file].partition(":")
    model: type[Any] = getattr(importlib.import_module(module), name)
    return model


def _cartridge_docs(path: Path, out: dict[str, list[tuple[str, Any]]]) -> None:
    from acxoci.cartridge.reader import open_cartridge

    label = path.name
    with open_cartridge(path) as cart:
        for name, schema in ROM_FILES.items():
            raw = cart.sqlar_read(name)
            if raw is not None:
                out[schema].append((f"{label}:{name}", json.loads(raw)))
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as c:
        for (p,) in c.execute("SELECT payload FROM memory"):
            out["acx.memory-record-1.schema.json"].append((f"{label}:memory", json.loads(p)))
        for (j,) in c.execute("SELECT json FROM capabilities"):
            out["acx.capability-1.schema.json"].append((f"{label}:capability", json.loads(j)))


@functools.lru_cache(maxsize=1)
def seed_documents() -> dict[str, list[tuple[str, Any]]]:
    """schema file → [(label, document)] for every kind in MODELS (built once per process)."""
    from acxoci.policy.harness import default_harness
    from acxoci.policy.loop_context import default_policy, read_as_v1
    from tests.harness.installs import BUDGET, host_descriptor

    vec = env.vectors()
    out: dict[str, list[tuple[str, Any]]] = {k: [] for k in MODELS}
    for acx in [*sorted((vec / "reference").glob("*.acx")), vec / "sample" / "sample.acx"]:
        _cartridge_docs(acx, out)
    out["acx.harness.v1.schema.json"].append(("default harness", default_harness()))
    out["acx.host.v1.schema.json"].append(("test host", host_descriptor()))
    out["acx.loop-context-policy-1.1.schema.json"].append(("default policy", default_policy()))
    out["acx.loop-context-policy-1.schema.json"].append(("policy as v1", read_as_v1(default_policy())))
    out["resource-limits.schema.json"].append(("test budget", BUDGET))
    out["resource-limits.schema.json#relaxed"] += [
        ("host limits", {"tokenSpend": {"dailyPerAgent": 100}, "killSwitch": {"enabled": False}}),
        ("full host limits", BUDGET),
    ]
    out["acx.policy-trace-1.schema.json"].append(("trace", {"events": [
        {"type": "phase", "phase": "plan"},
        {"type": "phase", "phase": "verify", "passed": True,
         "regression": {"heldIn": {"baseline": 0.8, "candidate": 0.81}}},
        {"type": "guardrail", "kind": "milestone"}, {"type": "tokens", "used": 1200},
        {"type": "condition", "when": "completed"},
    ]}))
    manifest = vec / "sample" / "sample-agent-package" / "manifest.json"
    out["acx.agent-package-manifest-1.schema.json"].append(("manifest", json.loads(manifest.read_text())))
    for f in sorted((vec / "workflow").rglob("*.cal.json")) + sorted((vec / "reference").glob("*.cal.json")):
        out["acx.cal-1.schema.json"].append((f.name, json.loads(f.read_text())))
    for f in sorted((vec / "graph").glob("*.json")):
        out["acx.agent-graph-1.schema.json"].append((f.name, json.loads(f.read_text())))
    for f in sorted((vec / "level").glob("*.json")):
        out["acx.level-credential-1.schema.json"].append((f.name, json.loads(f.read_text())))
    for f in sorted((vec / "sample").glob("trust-*.json")):
        out["acx.trust-registry-1.schema.json"].append((f.name, json.loads(f.read_text())))
    out["acx.verification-policy-1.schema.json"] += [("default policy", {"schemaVersion": VPOLICY}),
                                                     ("every member", FULL_POLICY)]
    out["acx.install-record-1.schema.json"].append(("install record", install_record()))
    out["acx.activation-1.schema.json"].append(("activation manifest", activation_manifest()))
    _made_at_run_time(out)
    return out


VPOLICY = "acx.verification-policy/1"
_GH = "https://token.actions.githubusercontent.com"
#: A verification policy with every member the schema defines (a model member nothing seeds would
#: never be retyped or nulled by the agreement test).
FULL_POLICY: dict[str, Any] = {
    "schemaVersion": VPOLICY, "description": "every member",
    "publishers": [{"id": "io.github.example-acx", "trustRegistries": ["trust.json"],
                    "keys": [{"keyid": "ed25519:" + "a" * 64, "publicKeyFile": "k.pub.pem"},
                             {"publicKeyPem": "-----BEGIN PUBLIC KEY-----\n"}],
                    "identities": [{"issuer": _GH, "subject": "https://github.com/o/r/.github/workflows/"
                                    "release.yml@refs/heads/main"},
                                   {"issuer": _GH, "subjectRegExp": "https://github[.]com/o/.*"}]}],
    "minimumTrust": "trusted",
    "provenance": {"repository": "o/r", "ref": "refs/heads/main",
                   "signerWorkflow": "o/r/.github/workflows/release.yml"},
    "attestations": {"formats": ["bundle"], "predicateTypes": ["https://slsa.dev/provenance/v1"],
                     "keys": [{"publicKeyFile": "att.pub.pem"}], "trustedRoot": "production"},
    "level": {"minimum": "senior", "issuers": ["did:web:levels.example"],
              "issuerRegistries": ["issuers.json"], "allowDemo": False, "verifiers": ["acx-level/1"]},
    "revocation": {"maxStatusListAgeSeconds": 3600, "allowOfflineCached": True,
                   "statusListCache": "cache", "statusLists": {"https://status.example/1": "status.json"}},
    "registries": {"allowed": ["127.0.0.1:*/*"]},
    "harness": {"requireHost": True},
    "limits": {"budgetAboveHost": "cap", "requireHostLimits": True},
}


def activation_manifest() -> dict[str, Any]:
    """An activation manifest as `acx activate` writes it (every member)."""
    return {"schemaVersion": "acx.activation/1", "name": "example/agent", "digest": "sha256:" + "b" * 64,
            "romDigest": "sha256:" + "c" * 64, "host": "claude", "root": "/home/u/.claude/skills",
            "skills": ["review"], "files": [{"path": "review/SKILL.md", "digest": "sha256:" + "d" * 64,
                                             "size": 10, "mode": "644"}],
            "createdLevels": 1, "activatedAt": "2026-12-05T00:00:00Z"}


def install_record() -> dict[str, Any]:
    """An install record as `acx install` writes it (every member; the checks in their order)."""
    digest = "sha256:" + "b" * 64
    ids = ["registry", "content-digest", "signature", "trust", "attestations", "level", "revocation",
           "harness", "policy-budget", "staffing", "version", "lifecycle", "provenance"]
    return {
        "schemaVersion": "acx.install-record/1", "name": "example/agent", "kind": "cartridge",
        "digest": digest, "reference": "127.0.0.1:5000/example/agent:1.0.0",
        "repository": "127.0.0.1:5000/example/agent", "tag": "1.0.0", "artifactVersion": "1.0.0",
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.acx.cartridge.v1", "contentDigest": digest, "romDigest": digest,
        "publisherId": "io.github.example-acx", "trust": "trusted", "seq": 1,
        "installedAt": "2026-12-05T00:00:00Z", "tool": {"name": "acxoci", "version": "0.1.0"},
        "policy": {"source": "policy.yaml", "digest": digest,
                   "files": [{"path": "trust.json", "digest": digest}],
                   "document": {"schemaVersion": VPOLICY}},
        "host": {"descriptor": "host.json", "descriptorDigest": digest, "limits": None, "limitsDigest": None},
        "checks": [{"order": i + 1, "id": c, "what": c, "status": "pass", "reason": "ok", "kind": "x",
                    "details": {}} for i, c in enumerate(ids)],
        "keys": [{"role": "cartridge-signer", "keyid": "ed25519:" + "a" * 64,
                  "publisherId": "io.github.example-acx", "signedAt": "2026-01-01T00:00:00Z"}],
        "statusLists": [{"id": "https://status.example/1", "index": 3, "validFrom": "2026-12-04T00:00:00Z",
                         "source": "status.json", "checkedAt": "2026-12-05T00:00:00Z", "revoked": False}],
        "attestations": [{"format": "bundle", "predicateType": "https://slsa.dev/provenance/v1",
                          "digest": digest, "keyid": None,
                          "signer": {"mode": "keyless", "certificateIdentity": "x", "certificateIssuer": _GH,
                                     "logIndex": 1, "integratedTime": 2, "verifiedTimes": ["t"]}}],
        "level": {"level": 15, "tier": "senior", "issuer": "did:web:levels.example",
                  "credentialDigest": digest},
        "harness": {"x": 1}, "effectiveLimits": {"tokenSpend": {}}, "staffing": None,
        "files": [{"path": "cartridge.acx", "digest": digest, "size": 10}],
    }


def _made_at_run_time(out: dict[str, list[tuple[str, Any]]]) -> None:
    """A level credential and a status list issued now; an Exchange index, ledger and records."""
    from acxoci.attest.keys import generate_ed25519
    from acxoci.exchange.index import derive
    from acxoci.exchange.lifecycle import lifecycle_record
    from acxoci.level.status import create_status_list
    from tests.harness.exchanges import make_exchange
    from tests.harness.installs import NOW

    key = generate_ed25519()
    out["acx.status-list-1.schema.json"].append(
        ("status list", create_status_list(list_id="https://status.example/1", issuer="did:web:v.example",
                                           key=key, now=NOW - timedelta(hours=1))))
    with tempfile.TemporaryDirectory() as t:
        ex = make_exchange(Path(t), key, env.vectors(), reference_cartridges=False)
        derived = derive(ex.root, now=NOW)
        out["acx.exchange-index-1.schema.json"].append(("derived index", derived.index))
        ledger = json.loads((ex.root / "status.json").read_text())
        out["acx.exchange-status-1.schema.json"].append(("ledger", ledger))
        for i, e in enumerate(ledger["entries"]):
            rec = json.loads(lifecycle_record(e, "io.github.example-acx/x:1.1.0" if i == 0 else None))
            out["acx.lifecycle-record-1.schema.json"].append((f"record {i}", rec))
