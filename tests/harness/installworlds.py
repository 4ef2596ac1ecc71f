"""Install worlds shared by the install tests (no tests here): a leveled cartridge signed by a fresh
key and pushed to a layout, with or without a store that already holds another item, and the
verdict shape every caller of the one acceptance decision is compared by."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.install.install import HostInputs, InstallOutcome, install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from acxoci.oci.descriptor import Descriptor
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    Level,
    attach_level,
    issue_level,
    level_policy,
    make_cartridge,
    push_cartridge,
    registry_entry,
    trusting_policy,
    write_registry,
)


@dataclass
class StoreWorld:
    """A leveled cartridge in a layout (tag v1) and a store already holding one other item."""

    tmp: Path
    key: PrivateKey
    acx: Path
    layout: Path
    desc: Descriptor
    registry: Path
    level: Level
    store: Store

    @property
    def ref(self) -> str:
        return f"oci-layout:{self.layout}:v1"


def store_world(tmp_path: Path, vectors_dir: Path) -> StoreWorld:
    """A cartridge signed by a fresh key, pushed to a layout with a level credential attached, and a
    store that already holds one other installed item (so 'unchanged' is about a real store)."""
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    layout = tmp_path / "layout"
    desc = push_cartridge(layout, acx, "v1")
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    lv = issue_level(tmp_path, acx)
    attach_level(layout, desc, lv.credential)
    store = Store(tmp_path / "store")
    # a prior install of the reference sample cartridge under its own name
    push_cartridge(tmp_path / "other", vectors_dir / "sample" / "sample.acx", "v1")
    pol = trusting_policy(tmp_path, vectors_dir / "sample" / "trust-active.json")
    first = install(
        f"oci-layout:{tmp_path / 'other'}:v1",
        policy=load_policy(pol, now=NOW),
        store=store,
        now=NOW,
        name="prior/sample",
    )
    assert first.status == "installed", [c.to_json() for c in first.failed]
    return StoreWorld(tmp_path, key, acx, layout, desc, reg, lv, store)


def install_ref(w: StoreWorld, policy: Path, *, host: HostInputs | None = None,
                ref: str | None = None) -> InstallOutcome:
    """Install the world's artifact (or `ref`) into its store under `policy`, at NOW."""
    return install(ref or w.ref, policy=load_policy(policy, now=NOW), store=w.store, now=NOW, host=host)


def full_policy(w: StoreWorld, **rev: Any) -> Path:
    """A policy trusting the world's signer and requiring its level issuer at `mid`."""
    return level_policy(w.tmp, w.registry, w.level, "mid", **rev)


@dataclass
class LeveledWorld:
    """A leveled cartridge pushed to a layout under tag 1.0.0, and a registry trusting its signer."""

    tmp: Path
    vectors: Path
    key: PrivateKey
    acx: Path
    layout: Path
    desc: Descriptor
    registry: Path
    level: Level


def leveled_world(tmp_path: Path, vectors_dir: Path) -> LeveledWorld:
    """A cartridge signed by a fresh key, pushed as 1.0.0 with a level credential attached."""
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    layout = tmp_path / "layout"
    desc = push_cartridge(layout, acx, "1.0.0")
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    lv = issue_level(tmp_path, acx)
    attach_level(layout, desc, lv.credential)
    return LeveledWorld(tmp_path, vectors_dir, key, acx, layout, desc, reg, lv)


def check_shape(checks: Any) -> list[tuple[str, str, str | None]]:
    """The verdict as compared across callers: each check's id, status and failure kind."""
    out = []
    for c in checks:
        c = c if isinstance(c, dict) else c.to_json()
        out.append((c["id"], c["status"], c.get("kind")))
    return out
