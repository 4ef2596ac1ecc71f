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
    "acx.trust-registry-1.schema.json": "attest.documents.trust_registry:TrustRegistryDoc",
    "acx.status-list-1.schema.json": "attest.documents.status_list:StatusListDoc",
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
    from tests.unit.test_install_support import BUDGET, host_descriptor

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
    _made_at_run_time(out)
    return out


def _made_at_run_time(out: dict[str, list[tuple[str, Any]]]) -> None:
    """A level credential and a status list issued now; an Exchange index, ledger and records."""
    from acxoci.exchange.index import derive
    from acxoci.exchange.lifecycle import lifecycle_record
    from acxoci.level.status import create_status_list
    from attest.keys import generate_ed25519
    from tests.unit.exchange_support import make_exchange
    from tests.unit.test_install_support import NOW

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
