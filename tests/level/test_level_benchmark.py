"""Benchmark suites: the brief's golden digests, the sealed held-out slice, tamper detection."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from acxoci.errors import InvalidInput, Tampered, VerificationFailed
from acxoci.level import benchmark as bm

GOLDEN_BENCH = "sha256:019fc517108a721b9bfc83e9a8d61c5011c29894c43a361c35fdacb2c783e900"
GOLDEN_HELD = "sha256:d16bf83a37c399775bd88ab3b3a7d889eef3058cbf1196bb283b9c3d26d4507b"


def test_demo_suite_reproduces_both_golden_digests() -> None:
    suite = bm.demo_suite()
    assert len(suite.tasks) == 160
    assert len(suite.held_out()) == 96
    assert suite.digest() == GOLDEN_BENCH
    assert suite.held_out_digest() == GOLDEN_HELD


def test_digest_changes_with_any_task_field_and_not_with_order() -> None:
    suite = bm.demo_suite()
    shuffled = bm.BenchmarkSuite(
        suite.id, suite.version, suite.name, tuple(reversed(suite.tasks)), suite.held_out_fraction, suite.seal
    )
    assert shuffled.digest() == GOLDEN_BENCH
    t0 = suite.tasks[0]
    edited = bm.BenchmarkSuite(
        suite.id,
        suite.version,
        suite.name,
        (bm.Task(t0.id, t0.difficulty + 1, t0.spec), *suite.tasks[1:]),
        suite.held_out_fraction,
        suite.seal,
    )
    assert edited.digest() != GOLDEN_BENCH
    other_seal = bm.BenchmarkSuite(suite.id, suite.version, suite.name, suite.tasks, 0.6, "another-seal")
    assert other_seal.digest() == GOLDEN_BENCH and other_seal.held_out_digest() != GOLDEN_HELD


def test_sealed_document_hides_the_held_out_slice() -> None:
    suite = bm.demo_suite()
    key = bm.new_key()
    doc = bm.seal_suite(suite, key)
    bm.validate_document(doc)
    text = json.dumps(doc)
    held_ids = {t.id for t in suite.held_out()}
    assert len(doc["publicSlice"]) == 64
    assert not held_ids & {t["id"] for t in doc["publicSlice"]}
    assert all(i not in text for i in held_ids)
    assert bm.DEMO_SEAL not in text
    assert doc["digest"] == GOLDEN_BENCH and doc["heldOutSliceDigest"] == GOLDEN_HELD
    opened = bm.open_suite(doc, key)
    assert opened.digest() == GOLDEN_BENCH
    assert [t.id for t in opened.held_out()] == [t.id for t in suite.held_out()]


def test_wrong_key_and_tampering_are_detected() -> None:
    suite = bm.demo_suite()
    key = bm.new_key()
    doc = bm.seal_suite(suite, key)
    with pytest.raises(VerificationFailed, match="keyId"):
        bm.open_suite(doc, bm.new_key())
    ct = copy.deepcopy(doc)
    raw = bytearray(base64.b64decode(ct["sealed"]["ciphertext"]))
    raw[5] ^= 1
    ct["sealed"]["ciphertext"] = base64.b64encode(bytes(raw)).decode()
    with pytest.raises(Tampered, match="authentication"):
        bm.open_suite(ct, key)
    aad = copy.deepcopy(doc)
    aad["heldOutSliceDigest"] = "sha256:" + "0" * 64  # bound as AEAD associated data
    with pytest.raises(Tampered):
        bm.open_suite(aad, key)
    pub = copy.deepcopy(doc)
    pub["publicSlice"][0]["difficulty"] = 99
    with pytest.raises(Tampered, match="benchmark digest"):
        bm.open_suite(pub, key)


def test_schema_rejects_unknown_fields_and_bad_digests() -> None:
    doc = bm.seal_suite(bm.demo_suite(), bm.new_key())
    bad = dict(doc, extra=1)
    with pytest.raises(InvalidInput, match="schema"):
        bm.validate_document(bad)
    bad2 = dict(doc, digest="sha256:XYZ")
    with pytest.raises(InvalidInput, match=r"\$\.digest"):
        bm.validate_document(bad2)


def test_key_file_roundtrip_is_private(tmp_path) -> None:  # type: ignore[no-untyped-def]
    key = bm.new_key()
    path = tmp_path / "b.key"
    bm.write_key(path, key)
    assert path.stat().st_mode & 0o777 == 0o600
    assert bm.read_key(path) == key
    path.write_text("abcd")
    with pytest.raises(InvalidInput, match="32 bytes"):
        bm.read_key(path)


def test_suite_from_source_validates() -> None:
    src = {
        "id": "b",
        "version": "1",
        "name": "B",
        "heldOutFraction": 0.5,
        "tasks": [{"id": f"t{i}", "difficulty": i, "spec": "s"} for i in range(10)],
    }
    suite = bm.suite_from_source(src)
    assert len(suite.held_out()) == 5 and suite.seal
    with pytest.raises(InvalidInput, match="difficulty"):
        bm.suite_from_source(dict(src, tasks=[{"id": "x", "difficulty": "hard", "spec": ""}]))
    with pytest.raises(InvalidInput, match="heldOutFraction"):
        bm.suite_from_source(dict(src, heldOutFraction=1.5))
