"""Cartridge build: determinism, verification (portable / trusted), key hygiene, sqlar layout,
memory partition and the scrub gate, re-signing."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from acxoci.attest.keys import PrivateKey, generate_ed25519
from acxoci.attest.trust import TrustRegistry
from acxoci.cartridge.build import build_cartridge, cartridge_id
from acxoci.cartridge.memory import artifact_fingerprint, partition
from acxoci.cartridge.sign import resign_file
from acxoci.cartridge.verify import verify_cartridge
from acxoci.errors import InvalidInput, RefusedByPolicy, Tampered
from tests.harness.env import REPO

EXAMPLE = REPO / "examples" / "agent-package"
CREATED = "2026-05-04T09:00:00.000Z"
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def key() -> PrivateKey:
    return generate_ed25519()


@pytest.fixture(scope="module")
def sample_pkg(vectors_dir: Path) -> Path:
    return vectors_dir / "sample" / "sample-agent-package"


def _build(pkg: Path, out: Path, key: PrivateKey, **kw: object) -> Path:
    build_cartridge(pkg, out, publisher="io.github.example-acx", key=key, created_at=CREATED, **kw)  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize("which", ["sample", "example"])
def test_build_twice_gives_identical_bytes(
    which: str, sample_pkg: Path, key: PrivateKey, tmp_path: Path
) -> None:
    pkg = sample_pkg if which == "sample" else EXAMPLE
    a = _build(pkg, tmp_path / "a.acx", key)
    b = _build(pkg, tmp_path / "sub-b.acx", key)
    assert _sha(a) == _sha(b)
    other = _build(pkg, tmp_path / "c.acx", key, include_field_learned=False)
    assert _sha(other) == _sha(a)


def test_different_created_at_changes_id_and_digest(key: PrivateKey, tmp_path: Path) -> None:
    a = _build(EXAMPLE, tmp_path / "a.acx", key)
    b = tmp_path / "b.acx"
    build_cartridge(
        EXAMPLE, b, publisher="io.github.example-acx", key=key, created_at="2026-05-05T09:00:00.000Z"
    )
    assert _sha(a) != _sha(b)
    assert cartridge_id("p.x", "a", "1.0.0", CREATED) != cartridge_id(
        "p.x", "a", "1.0.0", "2026-05-05T09:00:00Z"
    )


def test_header_and_sqlite_settings(key: PrivateKey, tmp_path: Path) -> None:
    out = _build(EXAMPLE, tmp_path / "x.acx", key)
    raw = out.read_bytes()
    assert raw[56:72] == bytes.fromhex("00000001010001000000000041435831")
    conn = sqlite3.connect(out)
    try:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        rows = conn.execute("SELECT name, mode, mtime, sz, length(data) FROM sqlar").fetchall()
    finally:
        conn.close()
    assert rows
    for name, mode, mtime, sz, stored in rows:
        assert (mode, mtime) == (420, 0), name
        assert sz == stored, f"{name} is compressed"


def test_stock_sqlite3_lists_and_extracts(key: PrivateKey, tmp_path: Path) -> None:
    exe = shutil.which("sqlite3")
    if exe is None:
        pytest.skip("sqlite3 CLI not installed")
    out = _build(EXAMPLE, tmp_path / "x.acx", key)
    listing = subprocess.run([exe, str(out), "-Atv"], capture_output=True, text=True, check=True).stdout
    assert "rom/policy/loop-context-policy.json" in listing
    dest = tmp_path / "x"
    dest.mkdir()
    subprocess.run([exe, str(out), "-Ax"], cwd=dest, check=True, capture_output=True)
    policy = json.loads((dest / "rom/policy/loop-context-policy.json").read_text())
    assert policy["schemaVersion"] == "acx.loop-context-policy/1.1"


@pytest.mark.parametrize("which", ["sample", "example"])
def test_built_cartridge_verifies_portable_then_trusted(
    which: str, sample_pkg: Path, key: PrivateKey, tmp_path: Path
) -> None:
    pkg = sample_pkg if which == "sample" else EXAMPLE
    out = _build(pkg, tmp_path / "x.acx", key)
    v = verify_cartridge(out, registry=None, now=NOW)
    assert (v.status, v.trust) == ("warning", "portable"), v.to_json()
    assert not v.rejected
    pub = key.public()
    registry = TrustRegistry.from_json(
        {
            "schemaVersion": "acx.trust-registry/1",
            "keys": [
                {
                    "keyid": pub.keyid(),
                    "publisherId": "io.github.example-acx",
                    "algorithm": "ed25519",
                    "publicKeyPem": pub.spki_pem(),
                    "status": "active",
                    "notBefore": "2020-01-01T00:00:00Z",
                    "notAfter": "2035-01-01T00:00:00Z",
                    "namespaceProof": {
                        "method": "github-oidc",
                        "oidcSubject": "repo:example-acx/agents:ref:refs/heads/main",
                        "oidcIssuer": "https://token.actions.githubusercontent.com",
                        "verifiedAt": "2026-01-01T00:00:00Z",
                    },
                }
            ],
        },
        now=NOW,
    )
    t = verify_cartridge(out, registry=registry, now=NOW)
    assert (t.status, t.trust) == ("verified", "trusted"), t.to_json()


def test_private_key_never_enters_the_file(key: PrivateKey, tmp_path: Path) -> None:
    out = _build(EXAMPLE, tmp_path / "x.acx", key, include_field_learned=True)
    data = out.read_bytes()
    raw = key.key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    der = key.key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pem_body = b"".join(key.pkcs8_pem().splitlines()[1:-1])
    assert len(raw) == 32
    for needle in (raw, der, pem_body, b"PRIVATE KEY"):
        assert needle not in data
    assert key.public().spki_pem().encode() in data  # the public key does travel


def test_field_learned_quarantined_by_default_and_saved_when_asked(key: PrivateKey, tmp_path: Path) -> None:
    out = _build(EXAMPLE, tmp_path / "q.acx", key)
    conn = sqlite3.connect(out)
    try:
        zones = conn.execute("SELECT id, zone FROM memory ORDER BY id").fetchall()
    finally:
        conn.close()
    assert zones == [("rev-0001", "rom"), ("rev-0002", "rom")]
    out2 = _build(EXAMPLE, tmp_path / "s.acx", key, include_field_learned=True)
    conn = sqlite3.connect(out2)
    try:
        row = conn.execute(
            "SELECT zone, codebase_fingerprint, payload FROM memory WHERE id='rev-0003'"
        ).fetchone()
        objs = conn.execute("SELECT zone FROM objects WHERE source_ref='memory:rev-0003'").fetchall()
    finally:
        conn.close()
    assert row[0] == "save" and row[1].startswith("cbf1_") and len(row[1]) == 45
    assert "payments-service" not in row[2]  # the repo name itself is not stored
    assert objs == [("save",)]
    # SAVE content is outside the signed ROM: the digest is the same as without it.
    assert (
        verify_cartridge(out2, registry=None, now=NOW).rom_digest
        == verify_cartridge(out, registry=None, now=NOW).rom_digest
    )


def test_artifact_fingerprint_matches_reference_vector() -> None:
    rec = {
        "title": "threat modeling pattern",
        "summary": "Reusable approach for threat modeling using oauth, postgres, node.",
        "sourceType": "knowledge",
        "repoId": None,
        "projectLabel": "portable-core",
        "timestamp": "2026-07-01T00:00:00.000Z",
        "impact": "positive",
        "xpAwarded": 20,
        "tags": ["threat modeling", "authz", "secrets hygiene"],
    }
    assert artifact_fingerprint(rec) == "1697f9ebc7"


@pytest.mark.parametrize(
    "summary",
    [
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked",
        "see /home/alice/projects/secret-repo/main.py",
        "mail bob@example.com for access",
        "key AKIAABCDEFGHIJKLMNOP in config",
    ],
)
def test_scrub_gate_refuses_portable_records_with_codebase_data(summary: str) -> None:
    rec = {
        "id": "m1",
        "title": "t",
        "summary": summary,
        "sourceType": "lesson",
        "repoId": None,
        "timestamp": "2026-01-01T00:00:00Z",
        "impact": "positive",
        "xpAwarded": 1,
        "tags": [],
    }
    with pytest.raises(RefusedByPolicy, match="scrub gate"):
        partition([rec], include_field_learned=False, salt=b"s")
    clean = dict(rec, summary="a general lesson")
    assert len(partition([clean], include_field_learned=False, salt=b"s").rom) == 1


def test_bad_inputs_are_named(key: PrivateKey, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="publisher"):
        build_cartridge(EXAMPLE, tmp_path / "x.acx", publisher="Not A Publisher", key=key, created_at=CREATED)
    with pytest.raises(InvalidInput, match="RFC 3339"):
        build_cartridge(EXAMPLE, tmp_path / "x.acx", publisher="io.github.x", key=key, created_at="yesterday")
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    doc = json.loads((pkg / "loop-context-policy.json").read_text())
    doc["loop"]["maxTurns"] = 0
    (pkg / "loop-context-policy.json").write_text(json.dumps(doc))
    with pytest.raises(InvalidInput, match=r"loop\.maxTurns"):
        build_cartridge(pkg, tmp_path / "x.acx", publisher="io.github.x", key=key, created_at=CREATED)
    assert not (tmp_path / "x.acx").exists()


def test_resign_after_library_edit(key: PrivateKey, tmp_path: Path) -> None:
    out = _build(EXAMPLE, tmp_path / "x.acx", key)
    conn = sqlite3.connect(out)
    with conn:
        conn.execute(
            "UPDATE sqlar SET data = ?, sz = ? WHERE name = 'rom/knowledge/STYLE.md'", (b"# new\n", 6)
        )
    conn.close()
    assert verify_cartridge(out, registry=None, now=NOW).trust == "tampered"
    with pytest.raises(Tampered):
        resign_file(out, key, signed_at="2026-06-01T00:00:00.000Z")
    new_key = generate_ed25519()
    result = resign_file(out, new_key, signed_at="2026-06-01T00:00:00.000Z", refresh=True)
    v = verify_cartridge(out, registry=None, now=NOW)
    assert v.trust == "portable" and v.keyid == new_key.public().keyid() == result.keyid
    assert v.rom_digest == result.rom_digest


def test_p256_key_and_missing_output_dir_are_refused(tmp_path: Path) -> None:
    from acxoci.attest.keys import generate_p256

    with pytest.raises(InvalidInput, match="Ed25519"):
        build_cartridge(
            EXAMPLE, tmp_path / "p.acx", publisher="io.github.x", key=generate_p256(), created_at=CREATED
        )
    assert list(tmp_path.iterdir()) == []
    from acxoci.errors import NotFound

    with pytest.raises(NotFound):
        build_cartridge(
            EXAMPLE,
            tmp_path / "no" / "x.acx",
            publisher="io.github.x",
            key=generate_ed25519(),
            created_at=CREATED,
        )


def test_reference_cli_accepts_our_build(key: PrivateKey, tmp_path: Path) -> None:
    """Opt-in cross-check with the Node reference (never vendored): set ACX_REF_NODE to a Node >= 22
    binary and ACX_REF_CLI to the reference's src/cli.mjs."""
    import os

    node, cli = os.environ.get("ACX_REF_NODE"), os.environ.get("ACX_REF_CLI")
    if not node or not cli:
        pytest.skip("set ACX_REF_NODE and ACX_REF_CLI to cross-check with the reference CLI")
    out = _build(EXAMPLE, tmp_path / "x.acx", key, include_field_learned=True)
    base = [node, "--no-warnings", "--experimental-sqlite", cli]
    verify = subprocess.run([*base, "verify", str(out)], capture_output=True, text=True)
    assert verify.returncode == 0 and "portable" in verify.stdout, verify.stdout + verify.stderr
    spec = subprocess.run([*base, "spec", str(out)], capture_output=True, text=True)
    assert spec.returncode == 0 and "CLEAN" in spec.stdout, spec.stdout
    strip = subprocess.run(
        [*base, "strip", str(out), str(tmp_path / "s.acx")], capture_output=True, text=True
    )
    assert strip.returncode == 0 and "EQUAL" in strip.stdout, strip.stdout
