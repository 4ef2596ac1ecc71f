"""OCI attestations both ways with the real cosign 2.5 and 3.x on distribution 2.8, acx-refreg
(Referrers API) and crane's registry (one registry per kind for the whole module):

- acx attests (Ed25519, P-256; dual-write) → cosign 2.5 default, 2.5 --new-bundle-format and
  3.x default verify;
- cosign 2.5/3.x attest (legacy and bundle; cosign-generated key; imported Ed25519) → acx verifies,
  including the ROM binding of the cartridge predicate;
- the negatives are rejected by acx with their reason.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.bundle import build_dsse_bundle
from acxoci.attest.keys import PrivateKey, generate_ed25519, generate_p256
from acxoci.attestation.attach import _push_manifest, attest_artifact, write_attestation
from acxoci.attestation.content import cartridge_facts
from acxoci.attestation.formats import build_bundle_referrer, build_legacy_manifest, legacy_layer, legacy_tag
from acxoci.attestation.signing import TrustedKey, load_public_key_file, sign_statement
from acxoci.attestation.statements import CARTRIDGE_PREDICATE_TYPE, cartridge_statement, oci_statement
from acxoci.attestation.verify import VerifyReport, verify_artifact
from acxoci.oci.descriptor import Descriptor, descriptor_for
from acxoci.oci.reference import parse_reference
from acxoci.oci.target import Target, fetch_bytes, fetch_manifest, open_target
from tests.harness.attestations import push_cartridge
from tests.harness.env import vectors
from tests.harness.fixtures import REGISTRY_KINDS, start_registry
from tests.harness.peers import Cosign
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop
T = CARTRIDGE_PREDICATE_TYPE
NOW = datetime.now(UTC)


@pytest.fixture(scope="module", params=REGISTRY_KINDS)
def reg(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    kind = str(request.param)
    r = start_registry(kind, tmp_path_factory.mktemp(kind))
    yield r
    r.stop()


@pytest.fixture(scope="module")
def cosign_keys(tmp_path_factory: pytest.TempPathFactory, cosign2: Cosign) -> tuple[Path, Path]:
    return cosign2.generate_key_pair(tmp_path_factory.mktemp("cosign-keys"))


@pytest.fixture(scope="module")
def sample() -> Path:
    return vectors() / "sample" / "sample.acx"  # skips locally, fails under CI, when absent


def _target(reg: Registry, repo: str) -> Target:
    target, _ = open_target(parse_reference(f"{reg.host}/{repo}:v1"))
    return target


def _pub(tmp: Path, key: PrivateKey, name: str = "acx.pub") -> Path:
    p = tmp / name
    p.write_text(key.public().spki_pem())
    return p


def _verify(target: Target, subject: Descriptor, pub: Path, **kw: Any) -> VerifyReport:
    return verify_artifact(target, subject, [load_public_key_file(pub)], reference="t", now=NOW, **kw)


@pytest.mark.parametrize("keygen", [generate_ed25519, generate_p256], ids=["ed25519", "p256"])
def test_acx_attests_cosign_verifies(reg: Registry, sample: Path, tmp_path: Path, cosign2: Cosign,
                                     cosign3: Cosign, keygen: Any) -> None:
    key: PrivateKey = keygen()
    repo = f"acx/out-{key.public().algorithm}"
    target = _target(reg, repo)
    subject = push_cartridge(target, sample)
    res = attest_artifact(target, subject, f"{reg.host}/{repo}", key, now=NOW)
    assert res.legacy_manifest and res.bundle_referrer and res.envelope_referrer
    pub = _pub(tmp_path, key)
    ref = f"{reg.host}/{repo}@{subject.digest}"
    cosign2.verify_attestation(ref, pub, T)
    cosign2.verify_attestation(ref, pub, T, fmt="bundle")
    cosign3.verify_attestation(ref, pub, T)
    wrong = cosign3.verify_attestation(ref, pub, "https://acx.dev/attestation/workflow/v1", check=False)
    assert wrong.returncode != 0
    other = _pub(tmp_path, generate_p256(), "other.pub")
    assert cosign2.verify_attestation(ref, other, T, check=False).returncode != 0
    report = _verify(target, subject, pub, want_type=T)
    assert report.ok, report.to_json()


@pytest.mark.parametrize("fmt", ["legacy", "bundle"])
def test_single_format_read_by_cosign3(reg: Registry, sample: Path, tmp_path: Path, cosign2: Cosign,
                                       cosign3: Cosign, fmt: str) -> None:
    """cosign 3 falls back to our `.att` (whose keyid it ignores) when there is no bundle; cosign 2.5
    reads only the format it is told to."""
    key = generate_ed25519()
    repo = f"acx/only-{fmt}"
    target = _target(reg, repo)
    subject = push_cartridge(target, sample)
    attest_artifact(target, subject, "x", key, formats=fmt, now=NOW)  # type: ignore[arg-type]
    pub = _pub(tmp_path, key)
    ref = f"{reg.host}/{repo}@{subject.digest}"
    cosign3.verify_attestation(ref, pub, T)
    c2_default = cosign2.verify_attestation(ref, pub, T, check=False)
    assert (c2_default.returncode == 0) == (fmt == "legacy")


def test_reattest_replaces(reg: Registry, sample: Path, tmp_path: Path, cosign2: Cosign,
                           cosign3: Cosign) -> None:
    """A second attest by the same key with `replace` (`--replace`) replaces the `.att` layer and
    the older bundle referrer (without it, attestations are added: tests/attestation/)."""
    key = generate_p256()
    target = _target(reg, "acx/again")
    subject = push_cartridge(target, sample)
    first = attest_artifact(target, subject, "x", key, now=NOW)
    second = attest_artifact(target, subject, "x", key, now=NOW.replace(year=NOW.year + 1), replace=True)
    assert second.replaced_layers == 1
    assert second.replaced_bundles == (first.bundle_referrer,), second.to_json()
    pub = _pub(tmp_path, key)
    ref = f"{reg.host}/acx/again@{subject.digest}"
    cosign2.verify_attestation(ref, pub, T)
    cosign3.verify_attestation(ref, pub, T)
    report = _verify(target, subject, pub)
    assert report.ok and sorted(a.format for a in report.attestations) == ["bundle", "envelope", "legacy"]


def _acx_predicate(target: Target, subject: Descriptor, sample: Path, tmp: Path) -> Path:
    layer = fetch_manifest(target, subject).layers[0]
    pred = tmp / "acx-pred.json"
    pred.write_text(json.dumps(cartridge_facts(sample, layer.digest, now=NOW).predicate()))
    return pred


@pytest.mark.parametrize(("which", "fmt"), [("cosign2", "legacy"), ("cosign2", "bundle"),
                                            ("cosign3", "legacy"), ("cosign3", "bundle")])
def test_cosign_attests_acx_verifies(reg: Registry, sample: Path, tmp_path: Path,
                                     request: pytest.FixtureRequest, cosign_keys: tuple[Path, Path],
                                     which: str, fmt: str) -> None:
    cosign: Cosign = request.getfixturevalue(which)
    key, pub = cosign_keys
    repo = f"acx/in-{which}-{fmt}"
    target = _target(reg, repo)
    subject = push_cartridge(target, sample)
    pred = _acx_predicate(target, subject, sample, tmp_path)
    cosign.attest(f"{reg.host}/{repo}@{subject.digest}", key, T, pred, fmt=fmt)
    report = _verify(target, subject, pub, want_type=T)
    assert report.ok, report.to_json()
    verified = [a for a in report.attestations if a.judgement.verdict == "verified"]
    assert [a.format for a in verified] == [fmt]
    assert verified[0].content is not None and verified[0].content["ok"]
    assert not _verify(target, subject, _pub(tmp_path, generate_p256())).ok


def test_cosign_imported_ed25519(reg: Registry, sample: Path, tmp_path: Path, cosign2: Cosign) -> None:
    """cosign 2.5 signs pure Ed25519 with an imported key (legacy and bundle); acx verifies both."""
    ed = generate_ed25519()
    pem = tmp_path / "ed.pem"
    pem.write_bytes(ed.pkcs8_pem())
    cosign2.run("import-key-pair", "--key", str(pem), "-o", "imp", cwd=tmp_path,
                env={"COSIGN_PASSWORD": "test-pass"})
    pub = _pub(tmp_path, ed, "ed.pub")
    for fmt in ("legacy", "bundle"):
        repo = f"acx/imported-{fmt}"
        target = _target(reg, repo)
        subject = push_cartridge(target, sample)
        cosign2.attest(f"{reg.host}/{repo}@{subject.digest}", tmp_path / "imp.key", T,
                       _acx_predicate(target, subject, sample, tmp_path), fmt=fmt)
        report = _verify(target, subject, pub, want_type=T)
        assert report.ok, report.to_json()
        signers = {a.judgement.signer_keyid for a in report.attestations if a.judgement.verdict == "verified"}
        assert signers == {ed.public().keyid()}


def acx(*args: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if password is not None:
        env["COSIGN_PASSWORD"] = password
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, env=env,
                          timeout=180, stdin=subprocess.DEVNULL)


def test_cli_with_cosign_key(distribution_registry: Registry, sample: Path, cosign_keys: tuple[Path, Path],
                             cosign3: Cosign) -> None:
    """`acx attest` reads cosign.key itself; `acx verify` reports every attestation (CLI, once)."""
    reg = distribution_registry
    key, pub = cosign_keys
    target = _target(reg, "acx/cli")
    subject = push_cartridge(target, sample)
    r = acx("--json", "attest", f"{reg.host}/acx/cli:v1", "--key", str(key), password="test-pass")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["subject"] == subject.digest and out["bundleReferrer"] and out["legacy"]["tag"]
    cosign3.verify_attestation(f"{reg.host}/acx/cli@{subject.digest}", pub, T)
    r = acx("--json", "verify", f"{reg.host}/acx/cli:v1", "--key", str(pub), "--type", T)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(r.stdout)
    assert rep["ok"] and {a["format"] for a in rep["attestations"]} == {"legacy", "bundle", "envelope"}
    r = acx("verify", f"{reg.host}/acx/cli:v1", "--key", str(pub), "--type", "https://x/y")
    assert r.returncode == 1 and "none of the attestations matched the predicate type" in r.stdout


# ---- negatives ---------------------------------------------------------------------------------

def _setup(reg: Registry, sample: Path, repo: str) -> tuple[Target, Descriptor, PrivateKey]:
    target = _target(reg, repo)
    return target, push_cartridge(target, sample), generate_p256()


def test_negative_subject_mismatch(reg: Registry, sample: Path, tmp_path: Path, cosign3: Cosign) -> None:
    target, subject, key = _setup(reg, sample, "acx/neg-subject")
    facts = cartridge_facts(sample, fetch_manifest(target, subject).layers[0].digest, now=NOW)
    stmt = cartridge_statement("sha256:" + "0" * 64, "elsewhere", facts)
    write_attestation(target, subject, stmt, key, now=NOW)
    pub = _pub(tmp_path, key)
    report = _verify(target, subject, pub)
    assert not report.ok and any("does not match the manifest digest" in r for r in report.reasons)
    assert cosign3.verify_attestation(f"{reg.host}/acx/neg-subject@{subject.digest}", pub, T,
                                      check=False).returncode != 0


def test_negative_rom_digest(reg: Registry, sample: Path, tmp_path: Path, cosign3: Cosign) -> None:
    """Signed, bound to the manifest digest (cosign is happy), but the ROM digest is not the pulled one."""
    target, subject, key = _setup(reg, sample, "acx/neg-rom")
    facts = cartridge_facts(sample, fetch_manifest(target, subject).layers[0].digest, now=NOW)
    pred = dict(facts.predicate(), romDigest="sha256:" + "ee" * 32)
    write_attestation(target, subject, oci_statement(subject.digest, "x", T, pred), key, now=NOW)
    pub = _pub(tmp_path, key)
    cosign3.verify_attestation(f"{reg.host}/acx/neg-rom@{subject.digest}", pub, T)
    report = _verify(target, subject, pub)
    assert not report.ok and any("attested ROM digest" in r for r in report.reasons)
    assert _verify(target, subject, pub, check_content=False).ok


def test_negative_bundle_keyid(reg: Registry, sample: Path, tmp_path: Path, cosign3: Cosign) -> None:
    target, subject, key = _setup(reg, sample, "acx/neg-keyid")
    facts = cartridge_facts(sample, fetch_manifest(target, subject).layers[0].digest, now=NOW)
    env = sign_statement(cartridge_statement(subject.digest, "x", facts), key, keyid=key.public().keyid())
    doc = build_dsse_bundle(env, key.public())
    doc["dsseEnvelope"]["signatures"][0]["keyid"] = key.public().keyid()
    data = json.dumps(doc).encode()
    _push_manifest(target, build_bundle_referrer(data, subject.plain(), T, created="2026-11-30T00:00:00Z"))
    pub = _pub(tmp_path, key)
    assert cosign3.verify_attestation(f"{reg.host}/acx/neg-keyid@{subject.digest}", pub, T,
                                      check=False).returncode != 0
    report = _verify(target, subject, pub)
    assert not report.ok and any("keyid" in r and "cosign" in r for r in report.reasons)


def test_negative_tampered_statement(reg: Registry, sample: Path, tmp_path: Path, cosign2: Cosign) -> None:
    target, subject, key = _setup(reg, sample, "acx/neg-stmt")
    attest_artifact(target, subject, "x", key, formats="legacy", now=NOW)
    att = fetch_manifest(target, target.resolve(legacy_tag(subject.digest)))
    env = json.loads(fetch_bytes(target, att.layers[0]))
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["fileCount"] += 1
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    layer, data = legacy_layer(json.dumps(env).encode(), T)
    target.push(descriptor_for(data, layer.desc.media_type), io.BytesIO(data))
    target.tag(_push_manifest(target, build_legacy_manifest([layer])), legacy_tag(subject.digest))
    pub = _pub(tmp_path, key)
    assert cosign2.verify_attestation(f"{reg.host}/acx/neg-stmt@{subject.digest}", pub, T,
                                      check=False).returncode != 0
    report = _verify(target, subject, pub)
    assert not report.ok and any("does not verify" in r for r in report.reasons)


def test_negative_tampered_layer(distribution_registry: Registry, sample: Path, tmp_path: Path) -> None:
    """The registry serves altered bytes for the `.att` layer (edited in distribution's storage)."""
    reg = distribution_registry
    target, subject, key = _setup(reg, sample, "acx/neg-layer")
    attest_artifact(target, subject, "x", key, formats="legacy", now=NOW)
    att = fetch_manifest(target, target.resolve(legacy_tag(subject.digest)))
    hexd = att.layers[0].digest.removeprefix("sha256:")
    blob = reg.root / "data" / "docker" / "registry" / "v2" / "blobs" / "sha256" / hexd[:2] / hexd / "data"
    raw = bytearray(blob.read_bytes())
    raw[10] ^= 1
    blob.write_bytes(bytes(raw))
    report = _verify(target, subject, _pub(tmp_path, key))
    assert not report.ok and any("tampered" in r for r in report.reasons)


def test_trust_registry_with_wrong_key(reg: Registry, sample: Path, tmp_path: Path) -> None:
    target, subject, key = _setup(reg, sample, "acx/neg-key")
    attest_artifact(target, subject, "x", key, now=NOW)
    wrong = TrustedKey(generate_ed25519().public(), "test")
    report = verify_artifact(target, subject, [wrong], reference="t", now=NOW)
    assert not report.ok and any("does not verify with the given key" in r for r in report.reasons)
