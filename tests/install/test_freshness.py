"""Freshness of fetched trust documents (TUF's rollback and freeze attacks): a status list is never
accepted with an earlier validFrom than one already seen; a lifecycle is never older than the
newest record already seen (a registry that drops `withdrawn` does not un-withdraw a release); a
cached lifecycle is used only when the read fails, within the policy's age limit."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

from acxoci.attest.keys import generate_ed25519
from acxoci.exchange.lifecycle import push_lifecycle
from acxoci.install.judge import Context, judge_reference
from acxoci.install.vpolicy import load_policy
from acxoci.level.oci import publish_status_list
from acxoci.oci.layout import LayoutStore
from tests.harness.installs import (
    LIST_ID,
    NOW,
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    revoke,
    trusting_policy,
    write_registry,
)
from tests.harness.installworlds import leveled_world


def _failed(ref: str, policy: Path, now: object) -> dict[str, str]:
    j = judge_reference(ref, Context(load_policy(policy, now=now), now))  # type: ignore[arg-type]
    return {c.id: c.reason for c in j.failed}


def test_a_status_list_rollback_is_refused(tmp_path: Path, vectors_dir: Path) -> None:
    w = leveled_world(tmp_path, vectors_dir)
    layout, reg, lv = w.layout, w.registry, w.level
    lists = f"oci-layout:{tmp_path / 'lists'}:status-1"  # fetched, not the user's own file
    publish_status_list(lists, lv.status_list, now=NOW)
    old = json.loads(json.dumps(lv.status_list))
    pol = trusting_policy(tmp_path, reg, level={"minimum": "mid", "issuers": [old["issuer"]],
                                                "issuerRegistries": [str(lv.registry)]},
                          revocation={"statusLists": {LIST_ID: lists}})
    ref = f"oci-layout:{layout}:1.0.0"
    assert _failed(ref, pol, NOW) == {}
    revoke(lv, now=NOW + timedelta(minutes=1))
    publish_status_list(lists, lv.status_list, now=NOW)
    later = NOW + timedelta(minutes=2)
    assert "revocation" in _failed(ref, pol, later)
    # the mirror serves the older list again (a valid signature, just older): refused, not "not revoked"
    publish_status_list(lists, old, now=NOW)
    failed = _failed(ref, pol, later)
    assert "revocation" in failed and "rollback" in failed["revocation"], failed


def test_a_dropped_withdrawal_stays_withdrawn(tmp_path: Path, vectors_dir: Path) -> None:
    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    layout = tmp_path / "layout"
    desc = push_cartridge(layout, acx, "1.0.0")
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    pol = trusting_policy(tmp_path, reg)
    ref = f"oci-layout:{layout}:1.0.0"
    pristine = tmp_path / "pristine"
    shutil.copytree(layout, pristine)
    push_lifecycle(LayoutStore(layout), desc, {"status": "withdrawn", "reason": "leaked credentials",
                                               "recordedAt": "2026-11-29T10:00:00.000Z"}, None)
    assert "lifecycle" in _failed(ref, pol, NOW)
    # the registry (here: the layout) loses the record: the newest record seen still stands
    shutil.rmtree(layout)
    shutil.copytree(pristine, layout)
    failed = _failed(ref, pol, NOW)
    assert "lifecycle" in failed and "withdrawn" in failed["lifecycle"], failed


def test_an_unreadable_registry_falls_back_to_the_newest_record_seen_within_the_age_limit(
        tmp_path: Path, vectors_dir: Path) -> None:
    from acxoci.install.install import install
    from acxoci.install.judge import judge_installed
    from acxoci.install.store import Store

    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    layout = tmp_path / "layout"
    push_cartridge(layout, acx, "1.0.0")
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    pol = load_policy(trusting_policy(tmp_path, reg), now=NOW)
    store = Store(tmp_path / "store")
    out = install(f"oci-layout:{layout}:1.0.0", policy=pol, store=store, now=NOW)
    assert out.status == "installed" and out.name is not None
    shutil.rmtree(layout)  # the registry it came from is gone
    item = store.require(out.name)
    soon = judge_installed(item, Context(pol, NOW + timedelta(hours=1)))
    assert soon.ok and "newest record seen" in (soon.check("lifecycle") or soon.checks[0]).reason
    late = judge_installed(item, Context(pol, NOW + timedelta(days=2)))
    assert [c.id for c in late.failed] == ["lifecycle"]
    assert late.failed[0].status == "unavailable"


def test_a_withdrawal_served_by_another_repository_never_counts_here(tmp_path: Path,
                                                                     vectors_dir: Path) -> None:
    """Lifecycle records are unsigned statements of the repository they were read from: a hostile
    mirror that withdraws its copy is refused there, and the same digest elsewhere stays installable
    (the records seen are remembered per repository, not per digest)."""
    from acxoci.install.install import install
    from acxoci.install.judge import judge_installed
    from acxoci.install.store import Store
    from acxoci.oci.copy import copy

    key = generate_ed25519()
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    home, mirror = tmp_path / "home", tmp_path / "mirror"
    desc = push_cartridge(home, acx, "1.0.0")
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    pol = trusting_policy(tmp_path, reg)
    store = Store(tmp_path / "store")
    out = install(f"oci-layout:{home}:1.0.0", policy=load_policy(pol, now=NOW), store=store, now=NOW)
    assert out.status == "installed" and out.name is not None
    copy(LayoutStore(home), LayoutStore(mirror), "1.0.0")
    push_lifecycle(LayoutStore(mirror), desc, {"status": "withdrawn", "reason": "planted by a mirror",
                                               "recordedAt": "2026-11-29T10:00:00.000Z"}, None)
    assert "lifecycle" in _failed(f"oci-layout:{mirror}:1.0.0", pol, NOW)
    assert _failed(f"oci-layout:{home}:1.0.0", pol, NOW) == {}
    assert judge_installed(store.require(out.name), Context(load_policy(pol, now=NOW), NOW)).ok
