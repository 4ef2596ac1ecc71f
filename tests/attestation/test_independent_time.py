"""An independent time for key-based Sigstore bundles, end to end (decision 0014).

A real cartridge in an OCI layout carries a key-based DSSE bundle (v0.3, `publicKey.hint`, one
`dsse/0.0.1` Rekor entry of a test Sigstore instance, tests/harness/sigstore_pki.py). Its key is
listed for the publisher as expired, superseded or retired. `acx verify` (and `acx install` with
`minimumTrust: trusted`) trusts the signature only when the log's integrated time, verified
under its promise against a named trusted root, lies inside the key's window and before
`revokedAt`; the bundle's self-asserted `signedAt` (always dated inside the window here) never
does. The cartridge's ROM is signed by another, active key of the same publisher, so the
attestation key's standing is the only thing that changes between cases.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from acxoci.attest.keys import generate_ed25519
from acxoci.attest.trustdecision import R_AFTER, R_REVOKED_AFTER, R_SELF_ASSERTED, R_TRUSTED_TIMESTAMPED
from acxoci.attestation.content import cartridge_facts
from acxoci.attestation.statements import CARTRIDGE_PREDICATE_TYPE, oci_statement
from acxoci.install.install import install
from acxoci.install.store import Store
from acxoci.install.vpolicy import load_policy
from tests.harness.attestations import attach_bundle
from tests.harness.cli import acx_json
from tests.harness.installs import (
    NOW,
    PUBLISHER,
    make_cartridge,
    push_cartridge,
    registry_entry,
    tree_hash,
    write_policy,
    write_registry,
)
from tests.harness.sigstore_pki import FakeSigstore

WINDOW_START = datetime(2026, 1, 1, tzinfo=UTC)
CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)  # notAfter of the expired key, revokedAt of the others
INSIDE = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
LATE = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)
CLAIMED = "2026-02-01T00:00:00Z"  # the bundle's own signedAt: inside every window, self-asserted


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(status: str, key: Any) -> dict[str, Any]:
    """The attestation key's registry entry: expired at CUTOFF, or revoked at CUTOFF for `status`
    (superseded / retired) inside a window that is still open at NOW."""
    if status == "expired":
        return registry_entry(
            key, PUBLISHER, status="expired", notBefore=iso(WINDOW_START), notAfter=iso(CUTOFF)
        )
    return registry_entry(
        key,
        PUBLISHER,
        status="revoked",
        notBefore=iso(WINDOW_START),
        notAfter="2028-01-01T00:00:00Z",
        revokedAt=iso(CUTOFF),
        revocationReason=status,
    )


class Case:
    """A cartridge (ROM signed by an active key) in a layout, an attestation key with registry
    entry `status`, a test Sigstore instance and its trusted root file."""

    def __init__(self, tmp: Path, vectors: Path, status: str) -> None:
        self.tmp = tmp
        self.status = status
        rom_key = generate_ed25519()
        self.att_key = generate_ed25519()
        self.acx = make_cartridge(vectors, tmp / "c.acx", rom_key)
        self.layout = tmp / "layout"
        self.desc = push_cartridge(self.layout, self.acx, "v1")
        self.registry = write_registry(
            tmp / "trust.json", [registry_entry(rom_key, PUBLISHER), _entry(status, self.att_key)]
        )
        self.sigstore = FakeSigstore(start=WINDOW_START - timedelta(days=2))
        self.root = tmp / "root.json"
        self.root.write_bytes(self.sigstore.trusted_root_bytes())
        self.store = Store(tmp / "store")

    @property
    def ref(self) -> str:
        return f"oci-layout:{self.layout}:v1"

    def attach(self, when: datetime) -> None:
        """Attach the key-based bundle, logged at `when`; its predicate claims signedAt CLAIMED."""
        layer = "sha256:" + hashlib.sha256(self.acx.read_bytes()).hexdigest()
        pred = {**cartridge_facts(self.acx, layer, now=NOW).predicate(), "signedAt": CLAIMED}
        stmt = oci_statement(self.desc.digest, "acx/sample", CARTRIDGE_PREDICATE_TYPE, pred).canonical_bytes()
        bundle = self.sigstore.key_dsse_bundle(stmt, self.att_key.key, when=when)
        attach_bundle(self.layout, self.desc, bundle, CARTRIDGE_PREDICATE_TYPE)

    def verify(self, capsys: pytest.CaptureFixture[str], *, root: bool = True) -> tuple[int, dict[str, Any]]:
        extra = ["--trusted-root", str(self.root)] if root else []
        code, out = acx_json(
            capsys, "verify", self.ref, "--trust-registry", str(self.registry), "--now", iso(NOW), *extra
        )
        assert isinstance(out, dict), out
        return code, out

    def policy(self, *, root: bool = True) -> Path:
        att: dict[str, Any] = {"formats": ["bundle"], "predicateTypes": [CARTRIDGE_PREDICATE_TYPE]}
        if root:
            att["trustedRoot"] = self.root.name
        return write_policy(
            self.tmp / "policy.yaml",
            {
                "publishers": [{"id": PUBLISHER, "trustRegistries": [str(self.registry)]}],
                "minimumTrust": "trusted",
                "attestations": att,
            },
        )

    def install(self, *, root: bool = True) -> Any:
        return install(
            self.ref, policy=load_policy(self.policy(root=root), now=NOW), store=self.store, now=NOW
        )


def _bundle(out: dict[str, Any]) -> dict[str, Any]:
    (att,) = [a for a in out["attestations"] if a["format"] == "bundle"]
    assert isinstance(att, dict)
    return att


def _assert_refused_install(case: Case, reason: str, *, root: bool = True) -> None:
    before = tree_hash(case.store.root)
    result = case.install(root=root)
    assert result.status == "refused", result.to_json()
    failed = {c.id: c for c in result.failed}
    assert set(failed) == {"attestations"}, result.to_json()
    assert failed["attestations"].kind == "missing_attestation"
    assert reason in json.dumps(result.to_json()), result.to_json()
    assert tree_hash(case.store.root) == before


@pytest.fixture(params=["expired", "superseded", "retired"])
def case(request: pytest.FixtureRequest, tmp_path: Path, vectors_dir: Path) -> Case:
    return Case(tmp_path, vectors_dir, str(request.param))


def test_logged_inside_the_window_is_trusted(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    case.attach(INSIDE)
    code, out = case.verify(capsys)
    assert code == 0, out
    att = _bundle(out)
    assert att["verdict"] == "verified" and att["trust"] == "trusted", att
    assert att["signer"]["integratedTime"] == int(INSIDE.timestamp())
    why = R_TRUSTED_TIMESTAMPED.format(status=case.status, when=iso(INSIDE))
    assert why in att["notes"], att
    result = case.install()
    assert result.status == "installed", [c.to_json() for c in result.failed]
    (signed,) = result.record["attestations"]
    assert signed["signer"]["verifiedTimes"] == [iso(INSIDE) + " (transparency_service)"]


def test_logged_after_the_window_is_not_trusted(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    """The claimed signedAt is inside the window; the log says the signature came later."""
    case.attach(LATE)
    code, out = case.verify(capsys)
    assert code == 1, out
    att = _bundle(out)
    assert att["verdict"] == "rejected", att
    if case.status == "expired":
        why = R_AFTER.format(signed_at=iso(LATE), not_after=iso(CUTOFF))
        assert att["trust"] == "portable"
    else:  # logged at or after revokedAt: revoked, whatever the bundle claims
        why = R_REVOKED_AFTER.format(revoked_at=iso(CUTOFF))
        assert att["trust"] == "tampered"
    assert att["reasons"] == [why], att
    _assert_refused_install(case, why)


def test_without_a_trusted_root_signed_at_alone_is_not_trusted(
    case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    """Logged inside the window, but nobody names the root to verify the entry: the only time
    left is the self-asserted signedAt, which never earns trust for these keys. The same bytes
    are trusted once the root is named (so the root, not the bundle, makes the difference)."""
    case.attach(INSIDE)
    code, out = case.verify(capsys)
    assert code == 0 and _bundle(out)["trust"] == "trusted", out
    code, out = case.verify(capsys, root=False)
    assert code == 1, out
    att = _bundle(out)
    why = R_SELF_ASSERTED.format(status=case.status, signed_at=CLAIMED)
    assert att["verdict"] == "rejected" and att["trust"] == "portable" and att["reasons"] == [why], att
    assert not att.get("signer", {}).get("verifiedTimes") and any(
        "NOT verified" in n for n in att["notes"]
    ), att
    _assert_refused_install(case, why, root=False)


def test_logged_entry_under_another_root_gives_no_time(
    case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    """A root that did not sign the entry: the bundle that its own root trusts is rejected,
    never trusted by its claim."""
    case.attach(INSIDE)
    code, out = case.verify(capsys)
    assert code == 0 and _bundle(out)["trust"] == "trusted", out
    case.root.write_bytes(FakeSigstore(start=case.sigstore.start).trusted_root_bytes())
    code, out = case.verify(capsys)
    assert code == 1, out
    att = _bundle(out)
    assert att["verdict"] == "rejected" and att.get("trust") is None, att
    assert "sigstore verification failed" in att["reasons"][0], att


# --- verify-blob: a messageSignature bundle by a registry key ------------------------------------


def _blob(
    capsys: pytest.CaptureFixture[str], tmp: Path, status: str, when: datetime, *, root: bool = True
) -> tuple[int, dict[str, Any]]:
    """`acx verify-blob --bundle --trust-registry` on a key-based messageSignature bundle whose
    hashedrekord entry is logged at `when` (no predicate, so no signedAt: judged at NOW)."""
    key = generate_ed25519()
    entry = (
        registry_entry(key, PUBLISHER, status="revoked", revokedAt=iso(CUTOFF), revocationReason=status)
        if status == "key-compromise"
        else registry_entry(key, PUBLISHER)
        if status == "active"
        else _entry(status, key)
    )
    tmp.mkdir()
    registry = write_registry(tmp / "trust.json", [entry])
    fake = FakeSigstore(start=WINDOW_START - timedelta(days=2))
    (tmp / "root.json").write_bytes(fake.trusted_root_bytes())
    artifact = tmp / "a.txt"
    artifact.write_bytes(b"an artifact signed with sign-blob\n")
    bundle = tmp / "a.sigstore.json"
    assert isinstance(key.key, Ed25519PrivateKey)
    bundle.write_bytes(fake.key_message_bundle(artifact.read_bytes(), key.key, when=when))
    extra = ["--trusted-root", str(tmp / "root.json")] if root else []
    code, out = acx_json(
        capsys, "verify-blob", str(artifact), "--bundle", str(bundle), "--trust-registry", str(registry),
        "--now", iso(NOW), *extra,
    )  # fmt: skip
    assert isinstance(out, dict), out
    return code, out


@pytest.mark.parametrize("status", ["expired", "superseded", "retired"])
def test_blob_message_bundle_judged_by_the_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, status: str
) -> None:
    code, out = _blob(capsys, tmp_path / "in", status, INSIDE)
    assert code == 0 and out["verdict"] == "verified", out
    assert R_TRUSTED_TIMESTAMPED.format(status=status, when=iso(INSIDE)) in out["notes"], out
    code, out = _blob(capsys, tmp_path / "late", status, LATE)
    assert code == 1 and out["verdict"] == "rejected", out
    code, out = _blob(capsys, tmp_path / "noroot", status, INSIDE, root=False)
    assert code == 1 and out["verdict"] == "rejected", out


def test_blob_message_bundle_by_a_compromised_key_is_rejected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The registry says key-compromise: no log time rescues it, and it never `verified`."""
    code, out = _blob(capsys, tmp_path / "bad", "key-compromise", INSIDE)
    assert code == 1 and out["verdict"] == "rejected", out
    assert out["reasons"] == ["signer key is revoked for key-compromise: never trusted"], out
    code, out = _blob(capsys, tmp_path / "good", "active", INSIDE)
    assert code == 0 and out["verdict"] == "verified", out
