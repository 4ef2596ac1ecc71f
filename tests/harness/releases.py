"""Builders shared by the release tests (no tests here): a release world with a real cartridge from
the vectors, an attestation key generated at run time, an acceptance policy (acx.verification-policy/1)
trusting the vectors' publisher registry and the attestation key, and a release plan; runs in a
forked child that can be killed, and the check that a released layout is intact."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.oci.descriptor import OCI_MANIFEST, Descriptor
from acxoci.oci.layout import LayoutStore
from acxoci.oci.target import fetch_manifest
from acxoci.release import interpreter
from tests.harness.env import REPO
from tests.harness.killer import Killer

PUBLISHER = "io.github.example-acx"


@dataclass
class ReleaseWorld:
    """Files of one release: plan, policy, inputs, key; `state` is the journal root."""

    tmp: Path
    plan: Path
    policy: Path
    key: PrivateKey
    cartridge: Path
    state: Path

    def plan_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = yaml.safe_load(self.plan.read_text())
        return doc

    def write_plan(self, doc: dict[str, Any]) -> None:
        self.plan.write_text(yaml.safe_dump(doc, sort_keys=False))


def make_world(tmp: Path, vectors: Path, repositories: list[str], *, goal: str = "sample-1",
               tags: tuple[str, ...] = ("v1", "latest"), formats: tuple[str, ...] = ("legacy", "bundle"),
               registries: list[dict[str, Any]] | None = None,
               extra: dict[str, Any] | None = None) -> ReleaseWorld:
    """A plan releasing the vectors' sample cartridge to `repositories` under `tags`."""
    tmp.mkdir(parents=True, exist_ok=True)
    key = generate_ed25519()
    keys = tmp / "keys"
    keys.mkdir(exist_ok=True)
    priv = keys / "attest.pem"
    priv.write_bytes(key.pkcs8_pem())
    os.chmod(priv, 0o600)
    (keys / "attest.pub.pem").write_text(key.public().spki_pem())
    cart = tmp / "sample.acx"
    shutil.copyfile(vectors / "sample" / "sample.acx", cart)
    policy = tmp / "policy.yaml"
    trust = str(vectors / "sample" / "trust-active.json")
    pol: dict[str, Any] = {"schemaVersion": "acx.verification-policy/1",
                           "publishers": [{"id": PUBLISHER, "trustRegistries": [trust]}]}
    if formats:
        pol["attestations"] = {"formats": list(formats), "keys": [{"publicKeyFile": "keys/attest.pub.pem"}]}
    policy.write_text(yaml.safe_dump(pol, sort_keys=False))
    doc: dict[str, Any] = {
        "schemaVersion": "acx.release-plan/1",
        "goal": {"id": goal, "artifacts": [{"input": "agent", "to": [{"repository": r, "tags": list(tags)}
                                                                     for r in repositories]}],
                 "attestations": {"formats": list(formats)}},
        "inputs": {"artifacts": {"agent": {"cartridge": "sample.acx"}},
                   "keys": {"attestation": {"file": "keys/attest.pem"}}},
        "acceptance": {"policy": "policy.yaml"},
        "budget": {"attempts": 3, "backoffSeconds": 0.01, "maxBackoffSeconds": 0.05, "transportRetries": 2},
    }
    if registries:
        doc["inputs"]["registries"] = registries
    if extra:
        doc.update(extra)
    plan = tmp / "acx-release.yaml"
    plan.write_text(yaml.safe_dump(doc, sort_keys=False))
    return ReleaseWorld(tmp, plan, policy, key, cart, tmp / "state")


def acx(*args: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `acx` CLI in a child process (so a SIGKILL hook kills only the child)."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-c", "from acxoci.cli.main import main; main()", *args],
                          capture_output=True, text=True, env=full, cwd=cwd, timeout=120)


def run_forked(fn: Callable[[], int], observer: interpreter.RunObserver | None = None) -> int:
    """Run `fn` in a forked child (with `observer` watching its release runs there only); returns
    its exit code, or -signal if it was killed. Forking (not a new interpreter) keeps the
    kill-point iteration fast."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 70
        try:
            if observer is not None:
                interpreter.OBSERVERS.append(observer)
            code = fn()
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def kill_chain(step: Callable[[], int], *, after_write: bool, limit: int = 60) -> int:
    """Run `step` (one run/resume of a goal) again and again, each time SIGKILLing it at the next
    effect: right after its journal entry, or (after_write) after its remote work but before its
    journal entry. Returns how many runs were killed; the last run must complete (exit 0)."""
    kills = 0
    for i in range(limit):
        killer = Killer((1 if i == 0 else 2) if after_write else 1, after_work=after_write)
        rc = run_forked(step, killer)
        if rc == -signal.SIGKILL:
            kills += 1
            continue
        assert rc == 0, f"run after {kills} kill(s) exited {rc}"
        return kills
    raise AssertionError(f"still not done after {limit} runs")


def _index_entries(layout: Path) -> list[dict[str, Any]]:
    """The entries of a layout's index.json, as written."""
    doc = json.loads((layout / "index.json").read_text())
    return list(doc["manifests"])


def _ref_name(entry: dict[str, Any]) -> str:
    """An index entry's tag annotation ('None' when it has none)."""
    return str((entry.get("annotations") or {}).get("org.opencontainers.image.ref.name"))


def assert_release_intact(layout: Path, subject: str) -> None:
    """A released layout holds exactly the expected tags (v1, latest, the .att) and referrers (bundle
    and envelope), each once, and nothing missing."""
    store = LayoutStore(layout, create=False)
    entries = _index_entries(layout)
    names = Counter(_ref_name(e) for e in entries)
    names.pop("None", None)
    att = f"sha256-{subject.split(':')[1]}.att"
    assert dict(names) == {"v1": 1, "latest": 1, att: 1}, names
    pairs = Counter((str(e["digest"]), _ref_name(e)) for e in entries)
    assert pairs.most_common(1)[0][1] == 1, "an index entry is duplicated"
    assert store.resolve("v1").digest == subject and store.resolve("latest").digest == subject
    refs = [r.digest for r in store.referrers(Descriptor(OCI_MANIFEST, subject, 0))]
    assert len(refs) == len(set(refs)) == 2, refs  # bundle + envelope
    layers = fetch_manifest(store, store.resolve(att)).layers
    assert len(layers) == 1
