"""`acx load FILE --host H`: try a local cartridge in a host in one step. It is `acx install
--activate` from a file: the file is put into a scratch OCI layout, judged there by the one
acceptance decision, installed into the store (recorded as coming from `file:PATH`, so later
judgements skip the lifecycle check a registry would answer) and activated, both or neither.
`installed verify` and `installed sync` see it like any other install.

With `--trust-registry F` instead of a policy, the publishers whose keys F lists are trusted; that
policy is written into the store (`STORE/policies/`) so the item can be judged again later."""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acxoci.attest.canonical import loads_strict
from acxoci.errors import InvalidInput, UsageError
from acxoci.fsutil import atomic_write
from acxoci.install import judge as J
from acxoci.install.install import ActivateRequest, InstallOutcome, install
from acxoci.install.store import Store
from acxoci.install.vpolicy import VerificationPolicy, load_policy

LOAD_TAG = "load"


@dataclass(frozen=True)
class Preview:
    """What `load --print-only` shows: the verdict and where the skills would go (nothing written)."""

    judgement: J.Judgement
    skills: tuple[str, ...]
    root: Path

    def to_json(self) -> dict[str, Any]:
        """The install outcome's shape: `would-install` (nothing written) or `refused`."""
        j = self.judgement
        out = InstallOutcome("refused" if not j.ok else "installed", j.reference, j.digest, j.name, j.kind,
                             j.checks).to_json()
        out["status"] = "refused" if not j.ok else "would-install"
        return {**out, "skills": list(self.skills), "root": str(self.root), "written": False}


def trust_registry_policy(trust_registry: Path, now: datetime) -> VerificationPolicy:
    """The policy `--trust-registry F` stands for, in memory (for `--print-only`)."""
    from acxoci.install.vpolicy import policy_from_json

    doc = loads_strict(_policy_body(trust_registry, now))
    return policy_from_json(doc, base=Path.cwd(), now=now, source=f"--trust-registry {trust_registry}")


def _policy_body(trust_registry: Path, now: datetime) -> bytes:
    from acxoci.cartridge.trust_file import load_trust_registry

    registry = load_trust_registry(trust_registry)
    publishers = sorted({k.publisher_id for k in registry.keys if k.publisher_id})
    if not publishers:
        raise InvalidInput("the trust registry lists no publisher", where=str(trust_registry))
    reg = str(trust_registry.resolve())
    doc = {"schemaVersion": "acx.verification-policy/1",
           "description": f"written by `acx load --trust-registry {reg}`",
           "publishers": [{"id": p, "trustRegistries": [reg]} for p in publishers]}
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def policy_for(store: Store, policy: Path | None, trust_registry: Path | None, now: datetime) -> Path:
    """The policy file a load is judged (and later re-judged) under: `policy`, or one written into
    the store that trusts every publisher `trust_registry` lists, through that registry."""
    if policy is not None and trust_registry is not None:
        raise UsageError("give --policy FILE or --trust-registry FILE, not both")
    if policy is None and trust_registry is None:
        raise UsageError("acx load needs --policy FILE or --trust-registry FILE: the publishers you trust")
    if policy is not None:
        return policy
    assert trust_registry is not None
    body = _policy_body(trust_registry, now)
    path = store.root / "policies" / f"load-{hashlib.sha256(body).hexdigest()[:16]}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, body)
    return path


def _stage(file: Path, folder: Path, now: datetime) -> str:
    """The file as an OCI artifact in a scratch layout; the reference to it."""
    from acxoci.artifact import push_path
    from acxoci.oci.reference import parse_reference
    from acxoci.oci.target import open_target

    ref = f"oci-layout:{folder}:{LOAD_TAG}"
    target, _ = open_target(parse_reference(ref))
    push_path(target, file, LOAD_TAG, verify=False, registry=None, now=now)
    return ref


def preview(file: Path, policy: VerificationPolicy, root: Path, now: datetime) -> Preview:
    """Judge the file as `load` would, writing nothing outside a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="acx-load-") as tmp:
        ref = _stage(file, Path(tmp) / "layout", now)
        source = f"file:{file.resolve()}"
        j = J.judge_reference(ref, J.Context(policy, now, source=source))
        j = J.Judgement(source, j.digest, j.kind, j.checks, j.gathered, j.meta, None, j.name)
        skills: tuple[str, ...] = ()
        if j.kind == "cartridge":
            from acxoci.cartridge.reader import open_cartridge

            with open_cartridge(file) as cart:
                skills = tuple(sorted(s.name for s in cart.skills())) if cart.has_table("acx_skill") else ()
    return Preview(j, skills, root)


def load(file: Path, *, policy: Path, store: Store, root: Path, host: str | None, now: datetime,
         name: str | None = None, force: bool = False) -> InstallOutcome:
    """Install `file` into `store` and activate it into `root`, both or neither."""
    with tempfile.TemporaryDirectory(prefix="acx-load-") as tmp:
        ref = _stage(file, Path(tmp) / "layout", now)
        return install(ref, policy=load_policy(policy, now=now), store=store, now=now, name=name,
                       activate=ActivateRequest(root, host, force), recorded_as=f"file:{file.resolve()}")
