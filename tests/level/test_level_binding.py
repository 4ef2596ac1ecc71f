"""The credential binds to the recomputed, signature-verified ROM digest: a ROM edit (re-signed)
is a binding mismatch, a tampered copy does not verify at all, and an issuer cannot level its own
cartridge."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.statuslist import StatusEntry
from acxoci.attest.trust import TrustRegistry
from acxoci.cartridge.build import build_cartridge
from acxoci.cartridge.constants import META_CARTRIDGE_ID
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import RefusedByPolicy, VerificationFailed
from acxoci.level import status as st
from acxoci.level.benchmark import demo_suite
from acxoci.level.binding import bind_cartridge
from acxoci.level.credential import REASON_MISMATCH, issue_credential, verify_credential
from acxoci.level.issuers import IssuerRegistry
from acxoci.level.run import run_level
from acxoci.level.solver import ReferenceSolver
from tests.harness.trustdocs import registry_doc

T0 = datetime(2026, 8, 1, tzinfo=UTC)
CREATED = "2026-07-01T00:00:00Z"
ISSUER = "did:web:verifier.example"
LIST = "https://status.example/b"


def _build(pkg: Path, out: Path, key: PrivateKey) -> Path:
    return build_cartridge(pkg, out, publisher="io.github.example-acx", key=key, created_at=CREATED).path


def _issuers(key: PrivateKey) -> IssuerRegistry:
    pub = key.public()
    return IssuerRegistry.from_json(
        registry_doc(pub, "example.verifier")
    )


@pytest.fixture
def two_versions(tmp_path: Path, vectors_dir: Path) -> tuple[Path, Path, PrivateKey]:
    pkg = tmp_path / "pkg"
    shutil.copytree(vectors_dir / "sample" / "sample-agent-package", pkg)
    publisher = generate_ed25519()
    v1 = _build(pkg, tmp_path / "v1.acx", publisher)
    skills = pkg / "SKILLS.md"
    skills.write_text(skills.read_text() + "\n- one more skill, added after the level was issued\n")
    v2 = _build(pkg, tmp_path / "v2.acx", publisher)
    return v1, v2, publisher


def test_rom_edit_is_a_binding_mismatch(tmp_path: Path, two_versions: tuple[Path, Path, PrivateKey]) -> None:
    v1, v2, _ = two_versions
    b1, b2 = bind_cartridge(v1, now=T0), bind_cartridge(v2, now=T0)
    assert b1.cartridge_id == b2.cartridge_id and b1.rom_digest != b2.rom_digest
    issuer = generate_ed25519()
    lst = tmp_path / "sl.json"
    st.write_json_atomic(lst, st.create_status_list(list_id=LIST, issuer=ISSUER, key=issuer, now=T0))
    result = run_level(
        demo_suite(), cartridge=v1, rom_digest=b1.rom_digest, solver=ReferenceSolver(33), signer=issuer
    )
    vc = issue_credential(
        result,
        cartridge_id=b1.cartridge_id,
        issuer=ISSUER,
        key=issuer,
        now=T0,
        status=StatusEntry(LIST, 1, "revocation", f"{LIST}#1"),
        subject_keyid=b1.keyid,
    )
    assert vc["credentialSubject"]["id"] == f"urn:acx:cartridge:{b1.cartridge_id}"
    issuers = _issuers(issuer)
    at = T0 + timedelta(hours=1)

    def check(entry: StatusEntry, vc_issuer: str) -> st.StatusOutcome:
        return st.check_status(
            entry, source=str(lst), issuers=issuers, vc_issuer=vc_issuer, now=at, cache_dir=tmp_path / "cache"
        )

    ok = verify_credential(
        vc,
        issuers=issuers,
        expected_rom_digest=b1.rom_digest,
        now=at,
        status_check=check,
        subject_publisher=b1.publisher_id,
        subject_keyid=b1.keyid,
    )
    assert ok.state == "verified", ok.reasons
    moved = verify_credential(
        vc,
        issuers=issuers,
        expected_rom_digest=b2.rom_digest,
        now=at,
        status_check=check,
        subject_publisher=b2.publisher_id,
        subject_keyid=b2.keyid,
    )
    assert moved.state == "invalid" and any(r.startswith(REASON_MISMATCH) for r in moved.reasons)


def test_tampered_or_unsigned_cartridges_do_not_bind(vectors_dir: Path, tmp_path: Path) -> None:
    for name in ("rom-data.acx", "bound-meta.acx", "injected-rom-row.acx", "keyid-rewritten.acx"):
        with pytest.raises(VerificationFailed):
            bind_cartridge(vectors_dir / "sample" / "tampered" / name, now=T0)
    unsigned = tmp_path / "unsigned.acx"  # the sample with its signature rows removed: intact but unsigned
    shutil.copyfile(vectors_dir / "sample" / "sample.acx", unsigned)
    with closing(sqlite3.connect(unsigned)) as conn, conn:
        conn.execute("DELETE FROM signatures")
    assert verify_cartridge(unsigned, registry=None, now=T0).trust not in ("portable", "trusted", "tampered")
    with pytest.raises(VerificationFailed, match=r"did not verify \((unsigned|legacy)\)"):
        bind_cartridge(unsigned, now=T0)
    b = bind_cartridge(vectors_dir / "sample" / "sample.acx", now=T0)
    assert b.rom_digest == "sha256:8ba92c59b173298b2e307b78daf9d82d89813fdb237f4d0ba738ce324efbdb5b"


def test_issuer_cannot_level_a_cartridge_it_signed(two_versions: tuple[Path, Path, PrivateKey]) -> None:
    v1, _, publisher = two_versions
    b1 = bind_cartridge(v1, now=T0)
    result = run_level(
        demo_suite(), cartridge=v1, rom_digest=b1.rom_digest, solver=ReferenceSolver(33), signer=publisher
    )
    with pytest.raises(RefusedByPolicy, match="self-issuance"):
        issue_credential(
            result,
            cartridge_id=b1.cartridge_id,
            issuer=ISSUER,
            key=publisher,
            now=T0,
            status=StatusEntry(LIST, 1, "revocation", None),
            subject_keyid=b1.keyid,
        )


def test_binding_carries_the_verified_signer_under_the_given_registry_and_time(
    two_versions: tuple[Path, Path, PrivateKey],
) -> None:
    # The registry vouches for the publisher only until 2026-09-01: at T0 the binding is trusted;
    # judged without the registry, or at today's clock, it would not be.
    v1, _, publisher = two_versions
    registry = TrustRegistry.from_json(
        registry_doc(publisher.public(), "io.github.example-acx", not_after="2026-09-01T00:00:00Z",
                     oidc_subject="repo:example-acx/agents:ref:refs/heads/main")
    )
    b = bind_cartridge(v1, now=T0, registry=registry)
    assert b.trust == "trusted"
    assert b.path == v1
    assert b.keyid == publisher.public().keyid()
    assert b.publisher_id == "io.github.example-acx"
    assert b.rom_digest == verify_cartridge(v1, registry=registry, now=T0).rom_digest
    with open_cartridge(v1) as cart:
        assert b.cartridge_id == cart.meta()[META_CARTRIDGE_ID]
    assert bind_cartridge(v1, now=T0).trust == "portable"


def test_refusal_lists_the_verifier_issues(vectors_dir: Path) -> None:
    tampered = vectors_dir / "sample" / "tampered" / "rom-data.acx"
    with pytest.raises(VerificationFailed) as info:
        bind_cartridge(tampered, now=T0)
    issues = info.value.details["issues"]
    assert issues and issues == list(verify_cartridge(tampered, registry=None, now=T0).issues)
