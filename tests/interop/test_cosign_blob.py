"""Blob attestations both ways with the real cosign 2.5 and 3.x (no registry): acx's bundles and
envelopes pass `cosign verify-blob-attestation`, cosign's pass `acx verify-blob`, and acx reads
cosign.key files (generated and imported) itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519, generate_p256
from tests.harness.peers import Cosign

pytestmark = pytest.mark.interop
T = "https://acx.dev/attestation/test/v1"


def acx(*args: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COSIGN_PASSWORD"}
    if password is not None:
        env["COSIGN_PASSWORD"] = password
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, env=env,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "cart.acx").write_bytes(b"pretend cartridge bytes " * 64)
    (tmp_path / "pred.json").write_text(json.dumps({"builder": "acx-test", "n": 1}))
    return tmp_path


def _write_pem_pair(d: Path, key: PrivateKey, name: str) -> tuple[Path, Path]:
    priv, pub = d / f"{name}.pem", d / f"{name}.pub"
    priv.write_bytes(key.pkcs8_pem())
    pub.write_text(key.public().spki_pem())
    return priv, pub


@pytest.mark.parametrize("keygen", [generate_ed25519, generate_p256], ids=["ed25519", "p256"])
def test_acx_blob_attestations_pass_cosign(work: Path, cosign2: Cosign, cosign3: Cosign,
                                           keygen: object) -> None:
    priv, pub = _write_pem_pair(work, keygen(), "k")  # type: ignore[operator]
    blob = work / "cart.acx"
    r = acx("attest-blob", str(blob), "--key", str(priv), "--type", T, "--predicate", str(work / "pred.json"),
            "--bundle", str(work / "b.json"))
    assert r.returncode == 0, r.stderr
    r = acx("attest-blob", str(blob), "--key", str(priv), "--type", T, "--predicate", str(work / "pred.json"),
            "--output-signature", str(work / "e.json"))
    assert r.returncode == 0, r.stderr
    for cosign in (cosign2, cosign3):
        cosign.verify_blob_attestation(blob, pub, T, bundle=work / "b.json")
        cosign.verify_blob_attestation(blob, pub, T, envelope=work / "e.json")
        wrong = cosign.verify_blob_attestation(blob, pub, "https://acx.dev/other/v1",
                                               envelope=work / "e.json", check=False)
        assert wrong.returncode != 0 and "invalid predicate type" in wrong.stderr
    # cosign 3 checks --type on bundles; cosign 2.5 --new-bundle-format does not (measured, even for its own)
    wrong = cosign3.verify_blob_attestation(blob, pub, "https://acx.dev/other/v1", bundle=work / "b.json",
                                            check=False)
    assert wrong.returncode != 0 and "invalid predicate type" in wrong.stderr
    # a changed file is refused by cosign and by acx
    blob.write_bytes(blob.read_bytes() + b"!")
    assert cosign3.verify_blob_attestation(blob, pub, T, bundle=work / "b.json", check=False).returncode != 0
    r = acx("verify-blob", str(blob), "--key", str(pub), "--bundle", str(work / "b.json"), "--type", T)
    assert r.returncode == 1 and "does not match the attested digest" in r.stdout


def _cosign_blob_docs(cosign: Cosign, work: Path, key: Path) -> list[tuple[str, Path]]:
    blob, pred = work / "cart.acx", work / "pred.json"
    out: list[tuple[str, Path]] = []
    b = work / f"{cosign.name}-bundle.json"
    cosign.attest_blob(blob, key, T, pred, b, fmt="bundle")
    out.append(("--bundle", b))
    if cosign.major == 2:
        e = work / f"{cosign.name}-envelope.json"
        cosign.attest_blob(blob, key, T, pred, e, fmt="envelope")
        out.append(("--signature", e))
    return out


def test_cosign_blob_attestations_pass_acx(work: Path, cosign2: Cosign, cosign3: Cosign) -> None:
    key, pub = cosign2.generate_key_pair(work)
    blob = work / "cart.acx"
    for cosign in (cosign2, cosign3):
        for flag, doc in _cosign_blob_docs(cosign, work, key):
            r = acx("--json", "verify-blob", str(blob), "--key", str(pub), flag, str(doc), "--type", T)
            assert r.returncode == 0, (cosign.name, flag, r.stdout, r.stderr)
            out = json.loads(r.stdout)
            assert out["ok"] and out["predicateType"] == T
            r = acx("verify-blob", str(blob), "--key", str(pub), flag, str(doc), "--type", "https://x/y")
            assert r.returncode == 1 and "matched the predicate type" in r.stdout
            other = work / "other.pub"
            other.write_text(generate_p256().public().spki_pem())
            r = acx("verify-blob", str(blob), "--key", str(other), flag, str(doc))
            assert r.returncode == 1 and "does not verify" in r.stdout


def test_acx_reads_cosign_keys(work: Path, cosign2: Cosign, cosign3: Cosign) -> None:
    """A cosign-generated P-256 key and a cosign-imported Ed25519 key sign acx attestations."""
    blob = work / "cart.acx"
    gen_dir = work / "gen"
    gen_dir.mkdir()
    key, pub = cosign3.generate_key_pair(gen_dir, password="pw-1")
    ed = generate_ed25519()
    ed_pem, ed_pub = _write_pem_pair(work, ed, "ed")
    cosign2.run("import-key-pair", "--key", str(ed_pem), "-o", "imported", cwd=work,
                env={"COSIGN_PASSWORD": "pw-2"})
    imported = work / "imported.key"
    assert imported.read_bytes().startswith(b"-----BEGIN ENCRYPTED SIGSTORE " + b"PRIVATE KEY-----")
    for k, p, pw in ((key, pub, "pw-1"), (imported, ed_pub, "pw-2")):
        out = work / f"{k.stem}.bundle.json"
        r = acx("attest-blob", str(blob), "--key", str(k), "--type", T, "--predicate",
                str(work / "pred.json"), "--bundle", str(out), password=pw)
        assert r.returncode == 0, r.stderr
        cosign2.verify_blob_attestation(blob, p, T, bundle=out)
        cosign3.verify_blob_attestation(blob, p, T, bundle=out)
    bad = acx("attest-blob", str(blob), "--key", str(key), "--type", T, "--predicate",
              str(work / "pred.json"), "--bundle", str(work / "x.json"), password="wrong")
    assert bad.returncode == 5 and "wrong password" in bad.stderr


def test_cosign_imported_ed25519_signs_for_acx(work: Path, cosign2: Cosign) -> None:
    """cosign 2.5 signs pure Ed25519 with an imported key; acx verifies with the openssl public key."""
    blob = work / "cart.acx"
    ed_pem, ed_pub = _write_pem_pair(work, generate_ed25519(), "ed")
    cosign2.run("import-key-pair", "--key", str(ed_pem), "-o", "imp", cwd=work,
                env={"COSIGN_PASSWORD": "test-pass"})
    for flag, doc in _cosign_blob_docs(cosign2, work, work / "imp.key"):
        r = acx("verify-blob", str(blob), "--key", str(ed_pub), flag, str(doc), "--type", T)
        assert r.returncode == 0, (flag, r.stdout, r.stderr)
        assert "ed25519:" in r.stdout
