"""End to end on an OCI layout (no registry): attest a cartridge / workflow, verify it, and each
negative the issue names is rejected with its reason."""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acxoci.attest.keys import PrivateKey, generate_ed25519, generate_p256
from acxoci.attestation.attach import _push_manifest, attest_artifact, write_attestation
from acxoci.attestation.content import cartridge_facts
from acxoci.attestation.formats import build_legacy_manifest, legacy_layer, legacy_layers, legacy_tag
from acxoci.attestation.signing import TrustedKey
from acxoci.attestation.statements import (
    CARTRIDGE_PREDICATE_TYPE,
    WORKFLOW_PREDICATE_TYPE,
    cartridge_statement,
    oci_statement,
)
from acxoci.attestation.verify import verify_artifact
from acxoci.oci.descriptor import Descriptor, descriptor_for
from acxoci.oci.layout import LayoutStore
from acxoci.oci.target import fetch_bytes, fetch_manifest
from tests.harness.attestations import push_cartridge, push_workflow

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
REPO = "oci-layout:store"


@pytest.fixture
def store(tmp_path: Path) -> LayoutStore:
    return LayoutStore(tmp_path / "store")


@pytest.fixture
def sample(vectors_dir: Path) -> Path:
    return vectors_dir / "sample" / "sample.acx"


def _keys(key: PrivateKey) -> list[TrustedKey]:
    return [TrustedKey(key.public(), "test")]


def _verify(store: LayoutStore, subject: Descriptor, key: PrivateKey, **kw: object):  # type: ignore[no-untyped-def]
    return verify_artifact(store, subject, _keys(key), reference="test", now=NOW, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("gen", [generate_ed25519, generate_p256])
def test_cartridge_dual_write_verifies(store: LayoutStore, sample: Path, gen: object) -> None:
    key: PrivateKey = gen()  # type: ignore[operator]
    subject = push_cartridge(store, sample)
    res = attest_artifact(store, subject, REPO, key, now=NOW)
    assert res.legacy_manifest and res.bundle_referrer and res.envelope_referrer
    report = _verify(store, subject, key, want_type=CARTRIDGE_PREDICATE_TYPE)
    assert report.ok, report.to_json()
    formats = sorted(a.format for a in report.attestations)
    assert formats == ["bundle", "envelope", "legacy"]
    verified = [a for a in report.attestations if a.judgement.verdict == "verified"]
    assert {a.format for a in verified} == {"bundle", "legacy"}
    assert all(a.judgement.signer_keyid == key.public().keyid() for a in verified)
    assert all(a.content and a.content["ok"] for a in verified)
    stmt = verified[0].judgement.statement
    assert stmt is not None
    assert stmt.subjects[0].digest == {"sha256": subject.digest.removeprefix("sha256:")}
    assert stmt.predicate["romDigest"] == cartridge_facts(sample, "x", now=NOW).rom_digest
    assert stmt.predicate["layerDigest"] == fetch_manifest(store, subject).layers[0].digest


def test_reattest_is_additive_and_replace_removes_only_own_legacy_layers(store: LayoutStore,
                                                                         sample: Path) -> None:
    key, other = generate_p256(), generate_ed25519()  # P-256 signatures differ on every signing
    subject = push_cartridge(store, sample)
    attest_artifact(store, subject, REPO, other, formats="legacy", now=NOW)
    again = attest_artifact(store, subject, REPO, other, formats="legacy", now=NOW)  # identical bytes
    assert again.replaced_layers == 0
    first = attest_artifact(store, subject, REPO, key, formats="legacy", now=NOW)
    later = attest_artifact(store, subject, REPO, key, formats="legacy", now=NOW)
    att = fetch_manifest(store, store.resolve(legacy_tag(subject.digest)))
    assert first.replaced_layers == later.replaced_layers == 0 and len(legacy_layers(att)) == 3
    mine = attest_artifact(store, subject, REPO, key, formats="legacy", now=NOW, replace=True)
    att = fetch_manifest(store, store.resolve(legacy_tag(subject.digest)))
    assert mine.replaced_layers == 2 and len(legacy_layers(att)) == 2  # theirs + the new one
    assert _verify(store, subject, other).ok and _verify(store, subject, key).ok
    pred = {"hello": "world"}
    attest_artifact(store, subject, REPO, key, formats="legacy", predicate_type="https://example.com/p/v1",
                    predicate=pred, now=NOW, replace=True)  # another type: nothing of it to replace
    att = fetch_manifest(store, store.resolve(legacy_tag(subject.digest)))
    assert sorted(la.predicate_type or "" for la in legacy_layers(att)) == [
        CARTRIDGE_PREDICATE_TYPE, CARTRIDGE_PREDICATE_TYPE, "https://example.com/p/v1"]


def test_reattest_keeps_bundles_and_replace_removes_own_only(store: LayoutStore, sample: Path) -> None:
    key, other = generate_ed25519(), generate_p256()
    subject = push_cartridge(store, sample)
    first = attest_artifact(store, subject, REPO, key, now=NOW)
    theirs = attest_artifact(store, subject, REPO, other, formats="bundle", now=NOW)
    same = attest_artifact(store, subject, REPO, key, now=NOW)  # Ed25519 + same time: identical bytes
    assert same.bundle_referrer == first.bundle_referrer and same.replaced_bundles == ()
    kept = attest_artifact(store, subject, REPO, key, now=NOW.replace(hour=12))
    assert kept.replaced_bundles == ()
    second = attest_artifact(store, subject, REPO, key, now=NOW.replace(hour=13), replace=True)
    assert set(second.replaced_bundles) == {first.bundle_referrer, kept.bundle_referrer}
    assert second.kept_bundles == () and second.envelope_referrer == first.envelope_referrer
    left = {d.digest for d in store.referrers(subject)}
    assert left == {second.bundle_referrer, theirs.bundle_referrer, first.envelope_referrer}
    assert _verify(store, subject, key).ok and _verify(store, subject, other).ok


def test_wrong_key(store: LayoutStore, sample: Path) -> None:
    subject = push_cartridge(store, sample)
    attest_artifact(store, subject, REPO, generate_ed25519(), now=NOW)
    report = _verify(store, subject, generate_ed25519())
    assert not report.ok
    assert report.summary == "no attestation verified"
    assert any("does not verify with the given key" in r for r in report.reasons)


def test_wrong_predicate_type(store: LayoutStore, sample: Path) -> None:
    key = generate_p256()
    subject = push_cartridge(store, sample)
    attest_artifact(store, subject, REPO, key, now=NOW)
    report = _verify(store, subject, key, want_type=WORKFLOW_PREDICATE_TYPE)
    assert not report.ok
    assert "none of the attestations matched the predicate type" in report.reasons[0]
    assert CARTRIDGE_PREDICATE_TYPE in report.reasons[0]


def test_subject_digest_mismatch(store: LayoutStore, sample: Path, vectors_dir: Path) -> None:
    key = generate_ed25519()
    subject = push_cartridge(store, sample)
    other = push_cartridge(store, vectors_dir / "reference" / "rex-calder.acx", tag="other")
    facts = cartridge_facts(sample, fetch_manifest(store, subject).layers[0].digest, now=NOW)
    # a statement about `other`, written as an attestation of `subject`
    write_attestation(store, subject, cartridge_statement(other.digest, REPO, facts), key, now=NOW)
    report = _verify(store, subject, key)
    assert not report.ok
    assert any("does not match the manifest digest" in r for r in report.reasons)


def test_rom_digest_mismatch(store: LayoutStore, sample: Path) -> None:
    key = generate_ed25519()
    subject = push_cartridge(store, sample)
    facts = cartridge_facts(sample, fetch_manifest(store, subject).layers[0].digest, now=NOW)
    pred = dict(facts.predicate(), romDigest="sha256:" + "ab" * 32)
    stmt = oci_statement(subject.digest, REPO, CARTRIDGE_PREDICATE_TYPE, pred)
    write_attestation(store, subject, stmt, key, now=NOW)
    report = _verify(store, subject, key)
    assert not report.ok
    assert any("attested ROM digest" in r for r in report.reasons)
    # --no-content: signature and subject bind, the content is not consulted
    assert _verify(store, subject, key, check_content=False).ok


def test_tampered_cartridge_content(store: LayoutStore, sample: Path, vectors_dir: Path) -> None:
    """The attestation names the honest cartridge's facts, but the artifact holds a tampered ROM."""
    key = generate_ed25519()
    bad = push_cartridge(store, vectors_dir / "sample" / "tampered" / "rom-data.acx", tag="bad")
    facts = cartridge_facts(sample, fetch_manifest(store, bad).layers[0].digest, now=NOW)
    write_attestation(store, bad, cartridge_statement(bad.digest, REPO, facts), key, now=NOW)
    report = _verify(store, bad, key)
    assert not report.ok
    assert any("ROM digest" in r or "does not verify" in r for r in report.reasons)


def test_tampered_layer_blob(store: LayoutStore, sample: Path, tmp_path: Path) -> None:
    key = generate_ed25519()
    subject = push_cartridge(store, sample)
    attest_artifact(store, subject, REPO, key, formats="legacy", now=NOW)
    att = fetch_manifest(store, store.resolve(legacy_tag(subject.digest)))
    blob = tmp_path / "store" / "blobs" / "sha256" / att.layers[0].digest.removeprefix("sha256:")
    data = bytearray(blob.read_bytes())
    data[-3] ^= 1
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    report = _verify(store, subject, key)
    assert not report.ok
    legacy = [a for a in report.attestations if a.format == "legacy"]
    assert [a.judgement.verdict for a in legacy] == ["rejected"]
    assert "tampered" in report.reasons[0]


def test_tampered_statement(store: LayoutStore, sample: Path) -> None:
    """A statement edited after signing (envelope re-pushed as a new blob) no longer verifies."""
    key = generate_ed25519()
    subject = push_cartridge(store, sample)
    res = attest_artifact(store, subject, REPO, key, formats="legacy", now=NOW)
    att = fetch_manifest(store, store.resolve(legacy_tag(subject.digest)))
    env = json.loads(fetch_bytes(store, att.layers[0]))
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["romDigest"] = "sha256:" + "00" * 32
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    forged, data = legacy_layer(json.dumps(env).encode(), CARTRIDGE_PREDICATE_TYPE)
    store.push(descriptor_for(data, forged.desc.media_type), io.BytesIO(data))
    store.tag(_push_manifest(store, build_legacy_manifest([forged])), legacy_tag(subject.digest))
    assert res.legacy_manifest != store.resolve(legacy_tag(subject.digest)).digest
    report = _verify(store, subject, key)
    assert not report.ok
    assert any("does not verify" in r for r in report.reasons)


def test_workflow_attestation(store: LayoutStore, vectors_dir: Path) -> None:
    key = generate_p256()
    doc = json.loads((vectors_dir / "workflow" / "team.signed.cal.json").read_text())
    subject = push_workflow(store, doc)
    res = attest_artifact(store, subject, REPO, key, now=NOW)
    assert res.predicate_type == WORKFLOW_PREDICATE_TYPE and res.envelope_referrer is None
    report = _verify(store, subject, key, want_type=WORKFLOW_PREDICATE_TYPE)
    assert report.ok, report.to_json()
    expected = json.loads((vectors_dir / "expected.json").read_text())["workflow/team.signed.cal.json"]
    stmt = report.attestations[0].judgement.statement
    assert stmt is not None and stmt.predicate["workflowDigest"] == expected["reference"]["digest"]


def test_no_attestations(store: LayoutStore, sample: Path) -> None:
    subject = push_cartridge(store, sample)
    report = _verify(store, subject, generate_ed25519())
    assert not report.ok and report.summary == "no attestations found"
