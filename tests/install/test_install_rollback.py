"""Anti-rollback and forged-publisher findings of issue 15, against real layouts and stores:
a SemVer tag re-pointed at an older signed release is refused, a downgrade needs
--allow-downgrade, an attacker key claiming a trusted publisher never installs (even with
minimumTrust: portable), and another policy publisher's key never satisfies an attestation
requirement."""

from __future__ import annotations

from pathlib import Path

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.errors import RefusedByPolicy
from acxoci.install.install import InstallOutcome, install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    tree_hash,
    trusting_policy,
    write_policy,
    write_registry,
)

OTHER = "io.github.other-publisher"


def _setup(tmp: Path, vectors: Path, key: PrivateKey) -> tuple[Path, Path]:
    layout = tmp / "layout"
    for version in ("1.0.0", "1.1.0"):
        acx = make_cartridge(vectors, tmp / f"c-{version}.acx", key, version=version)
        push_cartridge(layout, acx, version)
    reg = write_registry(tmp / "trust.json", [registry_entry(key, PUBLISHER)])
    return layout, trusting_policy(tmp, reg)


def _install(layout: Path, tag: str, policy: Path, store: Store, **kw: object) -> InstallOutcome:
    return install(f"oci-layout:{layout}:{tag}", policy=load_policy(policy, now=NOW), store=store, now=NOW,
                   **kw)  # type: ignore[arg-type]


def test_repointed_semver_tag_is_refused(tmp_path: Path, vectors_dir: Path) -> None:
    layout, pol = _setup(tmp_path, vectors_dir, generate_ed25519())
    old = push_cartridge(layout, tmp_path / "c-1.0.0.acx", "1.2.0")  # 1.2.0 now names the 1.0.0 release
    store = Store(tmp_path / "store")
    out = _install(layout, "1.2.0", pol, store)
    assert out.status == "refused" and out.digest == old.digest
    failed = {c.id: c for c in out.failed}
    assert failed["version"].kind == "rollback", failed
    assert "tag 1.2.0 does not name the signed version '1.0.0'" in failed["version"].reason
    assert not (tmp_path / "store").exists()


def test_downgrade_needs_allow_downgrade_and_record_keeps_version(tmp_path: Path, vectors_dir: Path) -> None:
    layout, pol = _setup(tmp_path, vectors_dir, generate_ed25519())
    store = Store(tmp_path / "store")
    new = _install(layout, "1.1.0", pol, store, name="acme/agent")
    assert new.status == "installed" and new.record is not None
    assert new.record["artifactVersion"] == "1.1.0" and new.record["tag"] == "1.1.0"
    before = tree_hash(store.root)
    down = _install(layout, "1.0.0", pol, store, name="acme/agent")
    assert down.status == "refused"
    assert {c.id: c.kind for c in down.failed} == {"version": "rollback"}
    assert "--allow-downgrade" in down.failed[0].reason
    assert tree_hash(store.root) == before
    ok = _install(layout, "1.0.0", pol, store, name="acme/agent", allow_downgrade=True)
    assert ok.status == "installed"
    item = store.get("acme/agent")
    assert item is not None and item.record["artifactVersion"] == "1.0.0"


def test_store_itself_refuses_a_downgrade(tmp_path: Path, vectors_dir: Path) -> None:
    """Defence in depth: a caller that skips the check still cannot commit an older version."""
    layout, pol = _setup(tmp_path, vectors_dir, generate_ed25519())
    store = Store(tmp_path / "store")
    assert _install(layout, "1.1.0", pol, store, name="acme/agent").status == "installed"
    current = store.get("acme/agent")
    assert current is not None
    record = dict(current.record, artifactVersion="1.0.0", digest="sha256:" + "1" * 64)
    with store.transaction() as txn:
        staged = txn.stage()
        with pytest.raises(RefusedByPolicy, match="older"):
            txn.commit(staged, record)


def test_semver_parsing_is_whole_string() -> None:
    from acxoci.install import semver

    assert semver.parse("1.2.3") is not None and semver.parse("v1.2.3-rc.1+b5") is not None
    for bad in ("1.2.3\n", "1.2", "01.2.3", "1.2.3 ", "latest", "1.2.3-"):
        assert semver.parse(bad) is None, bad
    assert semver.is_downgrade("1.0.0", "1.1.0") and not semver.is_downgrade("1.1.0", "1.1.0-rc.1")
    assert semver.is_downgrade("1.1.0-rc.1", "1.1.0") and not semver.is_downgrade("x", "1.0.0")


@pytest.mark.parametrize("minimum", ["portable", "trusted"])
def test_attacker_key_claiming_a_trusted_publisher_never_installs(tmp_path: Path, vectors_dir: Path,
                                                                  minimum: str) -> None:
    """Issue 15: `minimumTrust: portable` installed a cartridge signed by any key that merely
    claimed the policy publisher's id. The key must be one the policy ties to that publisher."""
    honest, attacker = generate_ed25519(), generate_ed25519()
    layout = tmp_path / "layout"
    push_cartridge(layout, make_cartridge(vectors_dir, tmp_path / "evil.acx", attacker), "v1")
    reg = write_registry(tmp_path / "trust.json", [registry_entry(honest, PUBLISHER)])
    pol = trusting_policy(tmp_path, reg, minimumTrust=minimum)
    out = _install(layout, "v1", pol, Store(tmp_path / "store"))
    assert out.status == "refused"
    trust = {c.id: c for c in out.failed}["trust"]
    assert trust.kind == "untrusted_publisher"
    assert trust.reason.startswith("signer key is not in the trust registry")


def test_revoked_publisher_key_refused_even_with_portable(tmp_path: Path, vectors_dir: Path) -> None:
    key = generate_ed25519()
    layout = tmp_path / "layout"
    push_cartridge(layout, make_cartridge(vectors_dir, tmp_path / "c.acx", key), "v1")
    entry = registry_entry(key, PUBLISHER)
    entry.update(status="revoked")
    reg = write_registry(tmp_path / "trust.json", [entry])
    pol = trusting_policy(tmp_path, reg, minimumTrust="portable")
    out = _install(layout, "v1", pol, Store(tmp_path / "s"))
    assert out.status == "refused"
    assert {c.id for c in out.failed} >= {"signature", "trust"}
    assert "signer key is revoked" in {c.id: c for c in out.failed}["trust"].reason


def test_bundle_by_another_policy_publishers_key_does_not_count(tmp_path: Path, vectors_dir: Path) -> None:
    """Issue 15: with `attestations.formats: [bundle]`, another policy publisher's key satisfied the
    requirement for this publisher's artifact."""
    from acxoci.attestation.attach import write_attestation
    from acxoci.attestation.statements import oci_statement
    from acxoci.oci.reference import parse_reference
    from acxoci.oci.target import open_target

    key, other_key = generate_ed25519(), generate_ed25519()
    layout = tmp_path / "layout"
    acx = make_cartridge(vectors_dir, tmp_path / "c.acx", key)
    desc = push_cartridge(layout, acx, "v1")
    target, _ = open_target(parse_reference(f"oci-layout:{layout}:v1"))
    stmt = oci_statement(desc.digest, "r", "https://example.com/review/v1", {"ok": True})
    write_attestation(target, desc.plain(), stmt, other_key, formats="bundle", now=NOW)
    reg = write_registry(tmp_path / "trust.json", [registry_entry(key, PUBLISHER)])
    other_reg = write_registry(tmp_path / "other.json", [registry_entry(other_key, OTHER)])
    pol = write_policy(tmp_path / "p.yaml", {
        "publishers": [{"id": PUBLISHER, "trustRegistries": [str(reg)]},
                       {"id": OTHER, "trustRegistries": [str(other_reg)]}],
        "attestations": {"formats": ["bundle"]}})
    out = _install(layout, "v1", pol, Store(tmp_path / "store"))
    assert out.status == "refused"
    assert {c.id: c.kind for c in out.failed} == {"attestations": "missing_attestation"}
    # the same bundle signed with the publisher's own key satisfies it
    write_attestation(target, desc.plain(), stmt, key, formats="bundle", now=NOW)
    assert _install(layout, "v1", pol, Store(tmp_path / "store2")).status == "installed"
