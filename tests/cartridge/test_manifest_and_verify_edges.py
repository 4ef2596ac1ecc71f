"""Cartridge manifest and verify, where the existing tests left a decision unpinned: the manifest
order outside the BMP (UTF-16 code units, as the reference sorts), the memory row's column checks,
the envelope's canonical base64 spellings and per-signature fields, and the statement findings a
user reads (each issue exactly, with the publisher and time the verdict still reports)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge.manifest import compute_rom_manifest, oid_meta, oid_sqlar
from acxoci.cartridge.reader import open_cartridge
from acxoci.cartridge.verify import CartridgeVerdict, verify_cartridge
from tests.harness.cartridges import NOW, SAMPLE, copy_vector, read_statement, resign, sql

ROM_HEX = "8ba92c59b173298b2e307b78daf9d82d89813fdb237f4d0ba738ce324efbdb5b"
MEM = "memory:mem-ge-mnhsl3xg"
S_DIVERGES = "ROM content diverges from signed manifest (object hash mismatch)."
S_MALFORMED_ENV = "Malformed DSSE envelope."
S_STATEMENT = "Signed statement does not describe this cartridge."
S_SUBJECT = "ROM manifest hash mismatch (content changed after signing)."
PORTABLE_ISSUES = ["signer key is not in the trust registry"]


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def _verify(p: Path) -> CartridgeVerdict:
    return verify_cartridge(p, registry=None, now=NOW)


def _envelope(p: Path) -> dict[str, Any]:
    conn = sqlite3.connect(str(p))
    try:
        doc: dict[str, Any] = json.loads(conn.execute("SELECT envelope FROM signatures").fetchone()[0])
    finally:
        conn.close()
    return doc


def _set_envelope(p: Path, env: dict[str, Any]) -> None:
    sql(p, "UPDATE signatures SET envelope = ?", params=(json.dumps(env),))


# ---- oids -----------------------------------------------------------------------------------


def test_sqlar_oid_is_the_digest_and_length_of_the_bytes() -> None:
    data = b"# STYLE\n\xc3\xa9\x00 bytes as stored"
    assert oid_sqlar(data) == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    assert oid_sqlar(b"") == ("sha256:" + hashlib.sha256(b"").hexdigest(), 0)


# ---- manifest order outside the BMP ---------------------------------------------------------

# U+1F600 is the surrogate pair D83D DE00 in UTF-16, so it sorts BEFORE U+FF01, although its code
# point is higher: the reference (JavaScript) compares UTF-16 code units.
ASTRAL, FULLWIDTH = "acx.note.\U0001f600", "acx.note.\uff01"


def _add_meta_objects(p: Path, keys: list[str]) -> None:
    for key in keys:
        value = f"value of {key}"
        oid, sz = oid_meta(key, value)
        sql(p, "INSERT INTO cartridge (key, value) VALUES (?, ?)", params=(key, value))
        sql(p, "INSERT INTO objects (oid, kind, source_ref, canon, zone, sz) "
            "VALUES (?, 'cartridge', ?, 'jcs-rfc8785', 'rom', ?)", params=(oid, f"cartridge:{key}", sz))


def test_manifest_orders_source_refs_by_utf16_code_units(sample: Path) -> None:
    _add_meta_objects(sample, [FULLWIDTH, ASTRAL])
    assert sorted([ASTRAL, FULLWIDTH]) == [FULLWIDTH, ASTRAL]  # code point order says the opposite
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart)
        rows = [(r.kind, r.source_ref) for r in cart.objects() if r.zone == "rom"]
    assert m.ok, (m.mismatches, m.uncovered)
    refs = [e["sourceRef"] for e in m.entries]
    assert refs.index(f"cartridge:{ASTRAL}") + 1 == refs.index(f"cartridge:{FULLWIDTH}")
    # the whole list is in (kind, sourceRef) UTF-16 order
    utf16 = sorted(rows, key=lambda r: (r[0].encode("utf-16-be"), r[1].encode("utf-16-be")))
    assert refs == [ref for _, ref in utf16]
    assert m.file_count == 36 and m.counts_by_kind["cartridge"] == 21
    assert hashlib.sha256(m.canonical).hexdigest() == m.hex


def test_kind_orders_before_source_ref_outside_the_bmp(sample: Path) -> None:
    # a kind outside the BMP (the schema's CHECK forbids it; only the sort is under test here)
    _add_meta_objects(sample, [ASTRAL])
    conn = sqlite3.connect(str(sample))
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute("UPDATE objects SET kind = ? WHERE source_ref = ?",
                     ("\U0001f600", f"cartridge:{ASTRAL}"))
        conn.execute("UPDATE objects SET kind = ? WHERE source_ref = 'cartridge:acx.homepage'", ("\uff01",))
        conn.commit()
    finally:
        conn.close()
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart, strict=False)
    refs = [e["sourceRef"] for e in m.entries]
    # every ASCII kind first, then U+1F600 (D83D) before U+FF01, whatever their source refs say
    assert refs[-2:] == [f"cartridge:{ASTRAL}", "cartridge:acx.homepage"]


def test_a_cartridge_with_astral_names_verifies_after_signing(sample: Path) -> None:
    _add_meta_objects(sample, [FULLWIDTH, ASTRAL])
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart)
    stmt = read_statement(sample)
    stmt["subject"][0]["digest"]["sha256"] = m.hex
    stmt["predicate"].update(romDigest=m.hash, manifestHash=m.hash, checksumHash=m.checksum_hash,
                             fileCount=m.file_count)
    resign(sample, stmt)
    sql(sample, "UPDATE signatures SET manifest_hash = ?", params=(m.hash,))
    v = _verify(sample)
    assert (v.trust, list(v.issues), v.rom_digest, v.file_count) == ("portable", PORTABLE_ISSUES, m.hash, 36)


# ---- a ROM memory row's columns ---------------------------------------------------------------


def _memory_payload(p: Path, payload: str) -> None:
    """Replace the ROM memory row's payload, keeping its oid column and object row consistent."""
    oid = "sha256:" + hashlib.sha256(payload.encode()).hexdigest()
    size = len(payload.encode())
    sql(p, "UPDATE objects SET oid = ?, sz = ? WHERE source_ref = ?", params=(oid, size, MEM))
    sql(p, "UPDATE memory SET payload = ?, oid = ?", params=(payload, oid))


@pytest.mark.parametrize(
    ("payload", "problem"),
    [("not json", "payload is not a JSON record"), ("[1, 2]", "payload is not a JSON object")],
)
def test_memory_payload_that_is_not_a_record(sample: Path, payload: str, problem: str) -> None:
    _memory_payload(sample, payload)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == ("tampered", S_DIVERGES, [f"{MEM}: {problem}"])


def test_memory_oid_column_must_be_the_payload_digest(sample: Path) -> None:
    sql(sample, "UPDATE memory SET oid = 'sha256:' || lower(hex(zeroblob(32)))")
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_DIVERGES, [f"{MEM}: oid column differs from the payload's digest"])


def _payload_record(p: Path) -> dict[str, Any]:
    conn = sqlite3.connect(str(p))
    try:
        doc: dict[str, Any] = json.loads(conn.execute("SELECT payload FROM memory").fetchone()[0])
    finally:
        conn.close()
    return doc


@pytest.mark.parametrize(
    ("column", "value"),
    [("artifact_fingerprint", "0000000000"), ("codebase_fingerprint", "0000000000"),
     ("created_at", "2030-01-01T00:00:00.000Z")],
)
def test_each_memory_column_must_copy_the_signed_payload(sample: Path, column: str, value: str) -> None:
    sql(sample, f"UPDATE memory SET {column} = ?", params=(value,))
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_DIVERGES, [f"{MEM}: {column} column differs from the signed payload"])


def test_a_rom_row_whose_payload_says_save_is_tampered(sample: Path) -> None:
    record = _payload_record(sample)
    assert record["zone"] == "rom"
    _memory_payload(sample, json.dumps(dict(record, zone="save")))
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart)
    assert m.mismatches == (f"{MEM}: zone column differs from the signed payload",)


def test_a_payload_without_zone_or_timestamp_defers_to_the_columns(sample: Path) -> None:
    record = _payload_record(sample)
    del record["zone"], record["timestamp"]
    _memory_payload(sample, json.dumps(record))
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart)
    assert (m.mismatches, m.uncovered) == ((), ())
    # but a fingerprint the payload leaves out is not the column's
    del record["artifactFingerprint"]
    _memory_payload(sample, json.dumps(record))
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart)
    assert m.mismatches == (f"{MEM}: artifact_fingerprint column differs from the signed payload",)


@pytest.mark.parametrize(
    ("statement", "issue"),
    [
        ("DELETE FROM memory", f"{MEM}: missing source"),
        ("UPDATE memory SET zone = 'save'", f"{MEM}: source is in the 'save' zone"),
        ("DELETE FROM capabilities WHERE id = 'cap-7073ad41df0a3e62'",
         "capability:cap-7073ad41df0a3e62: missing source"),
        ("DELETE FROM cartridge WHERE key = 'acx.homepage'", "cartridge:acx.homepage: missing source"),
        ("DELETE FROM sqlar WHERE name = 'rom/knowledge/STYLE.md'", "rom/knowledge/STYLE.md: missing source"),
        ("UPDATE objects SET source_ref = 'save/STYLE.md' WHERE source_ref = 'rom/knowledge/STYLE.md'",
         "save/STYLE.md: source is in the 'save' zone"),
    ],
)
def test_a_missing_source_is_named_exactly(sample: Path, statement: str, issue: str) -> None:
    sql(sample, "INSERT INTO sqlar (name, mode, mtime, sz, data) "
        "SELECT 'save/STYLE.md', mode, mtime, sz, data FROM sqlar WHERE name = 'rom/knowledge/STYLE.md'")
    sql(sample, statement)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == ("tampered", S_DIVERGES, [issue])


# ---- envelope spellings and signature fields ---------------------------------------------------


def test_each_canonical_spelling_of_the_signature_verifies(sample: Path) -> None:
    env = _envelope(sample)
    std = env["signatures"][0]["sig"]
    assert std.endswith("==") and "+" in std and "/" in std  # so the four spellings all differ
    url = std.replace("+", "-").replace("/", "_")
    for spelling in (std.rstrip("="), url, url.rstrip("=")):
        env["signatures"][0]["sig"] = spelling
        _set_envelope(sample, env)
        v = _verify(sample)
        assert (v.trust, list(v.issues)) == ("portable", PORTABLE_ISSUES), spelling


def test_a_non_canonical_signature_spelling_is_malformed(sample: Path) -> None:
    env = _envelope(sample)
    std = env["signatures"][0]["sig"]
    # 64 bytes leave 4 unused low bits in the last character: setting one keeps the bytes
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = alphabet.index(std[-3])
    assert last % 16 == 0
    env["signatures"][0]["sig"] = std[:-3] + alphabet[last + 1] + "=="
    _set_envelope(sample, env)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_MALFORMED_ENV, ["signatures[0].sig is not canonical base64"])


def test_an_unexpected_signature_field_is_named(sample: Path) -> None:
    env = _envelope(sample)
    env["signatures"][0].update(cert="x", extension={})
    _set_envelope(sample, env)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_MALFORMED_ENV, ["signatures[0] has unexpected field(s) ['cert', 'extension']"])


# ---- statement findings -----------------------------------------------------------------------


def test_subject_digest_and_name_findings_are_exact(sample: Path) -> None:
    stmt = read_statement(sample)
    stmt["subject"][0]["digest"]["sha256"] = "0" * 64
    resign(sample, stmt)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_SUBJECT, [f"subject.digest {'0' * 64} != recomputed {ROM_HEX}"])
    stmt = read_statement(sample)
    name = stmt["subject"][0]["name"]
    stmt["subject"][0].update(name="io.github.example-acx/other@x", digest={"sha256": ROM_HEX})
    resign(sample, stmt)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_STATEMENT,
        [f"subject[0].name 'io.github.example-acx/other@x' != meta acx.cartridge_id {name!r}"])


def test_an_upper_case_subject_digest_is_not_the_rom(sample: Path) -> None:
    stmt = read_statement(sample)
    stmt["subject"][0]["digest"]["sha256"] = ROM_HEX.upper()
    resign(sample, stmt)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_SUBJECT, [f"subject.digest {ROM_HEX.upper()} != recomputed {ROM_HEX}"])


def test_an_unparseable_statement_still_reports_its_publisher_and_time(sample: Path) -> None:
    stmt = read_statement(sample)
    stmt["_type"] = "https://in-toto.io/Statement/v0.1"
    resign(sample, stmt)
    v = _verify(sample)
    assert (v.trust, v.summary) == ("tampered", S_STATEMENT)
    assert (v.publisher_id, v.signed_at) == ("io.github.example-acx", "2026-04-03T13:35:46.190Z")
    # a predicate that is not an object gives no publisher; the time is the signature row's
    stmt["predicate"] = ["io.github.example-acx"]
    resign(sample, stmt)
    sql(sample, "UPDATE signatures SET created_at = '2026-05-05T05:05:05Z'")
    v = _verify(sample)
    assert (v.trust, v.summary) == ("tampered", S_STATEMENT)
    assert (v.publisher_id, v.signed_at) == (None, "2026-05-05T05:05:05Z")


# ---- which signature, which key, and what the verdict names -------------------------------------

SAMPLE_KEYID = "ed25519:aed99efff8f08c8458bb412b28a6feba684701c9563692507eb2fe0767d56fbe"
S_KEYID = "Signer keyid does not match the verifying key."
S_DSSE_FAILED = "DSSE verification failed."
S_RECORDED = "Recorded manifest hash differs from recomputed ROM."


def test_only_a_rom_manifest_signature_is_picked(sample: Path) -> None:
    sql(sample, "INSERT INTO signatures (sig_id, target, manifest_hash, envelope, keyid, created_at) "
        "VALUES ('sig-newer', 'attestation', 'x', 'not an envelope', 'k', '2099-01-01T00:00:00Z')")
    v = _verify(sample)
    assert (v.trust, list(v.issues), v.keyid) == ("portable", PORTABLE_ISSUES, SAMPLE_KEYID)
    sql(sample, "DELETE FROM signatures WHERE target = 'rom-manifest'")
    v = _verify(sample)
    assert (v.trust, v.issues[0], v.rom_digest) == (
        "legacy", "Missing rom-manifest signature", f"sha256:{ROM_HEX}")


def test_an_unreadable_signature_row_is_a_malformed_envelope(sample: Path) -> None:
    sql(sample, "UPDATE signatures SET keyid = X'00ff'")
    v = _verify(sample)
    assert (v.status, v.trust, v.summary, list(v.issues)) == (
        "invalid", "tampered", S_MALFORMED_ENV, ["signatures.keyid holds a blob value, expected text"])


def test_an_unsigned_cartridge_with_unreadable_content_names_it(sample: Path) -> None:
    sql(sample, "DELETE FROM signatures")
    conn = sqlite3.connect(str(sample))
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute("UPDATE memory SET zone = CAST('rom' AS BLOB)")
        conn.commit()
    finally:
        conn.close()
    v = _verify(sample)
    assert (v.status, v.trust, list(v.issues), v.rom_digest) == (
        "warning", "legacy",
        ["Missing rom-manifest signature", "memory.zone holds a blob value, expected text"], None)


def test_the_signature_row_keyid_stands_in_for_an_absent_envelope_keyid(sample: Path) -> None:
    env = _envelope(sample)
    del env["signatures"][0]["keyid"]
    _set_envelope(sample, env)
    v = _verify(sample)
    assert (v.trust, list(v.issues), v.keyid) == ("portable", PORTABLE_ISSUES, SAMPLE_KEYID)


def test_envelope_and_row_keyids_that_differ_are_both_named(sample: Path) -> None:
    other = "ed25519:" + "0" * 64
    sql(sample, "UPDATE signatures SET keyid = ?", params=(other,))
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues), v.keyid) == (
        "tampered", S_KEYID, [f"envelope keyid {SAMPLE_KEYID} != signatures.keyid {other}"], SAMPLE_KEYID)


def test_key_and_payload_type_findings_are_exact(sample: Path) -> None:
    resign(sample, read_statement(sample), payload_type="application/json")
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_DSSE_FAILED,
        ["payloadType is 'application/json', expected application/vnd.in-toto+json"])
    key = resign(sample, read_statement(sample))
    real = key.public().keyid()
    sql(sample, "UPDATE signatures SET keyid = ?, envelope = replace(envelope, ?, ?)",
        params=(SAMPLE_KEYID, real, SAMPLE_KEYID))
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues), v.key_source) == (
        "tampered", S_KEYID, [f"keyid {SAMPLE_KEYID} != sha256(SPKI) of the verifying key {real}"],
        "cartridge")


def test_a_recorded_hash_that_differs_is_named(sample: Path) -> None:
    zero = "sha256:" + "0" * 64
    sql(sample, "UPDATE signatures SET manifest_hash = ?", params=(zero,))
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_RECORDED, [f"signatures.manifest_hash {zero} != sha256:{ROM_HEX}"])
    assert (v.publisher_id, v.signed_at) == ("io.github.example-acx", "2026-04-03T13:35:46.190Z")


def test_a_signing_time_that_is_not_text_falls_back_to_the_row(sample: Path) -> None:
    stmt = read_statement(sample)
    stmt["predicate"]["signedAt"] = 20260403
    resign(sample, stmt)
    sql(sample, "UPDATE signatures SET created_at = '2026-05-05T05:05:05Z'")
    v = _verify(sample)
    assert (v.trust, v.signed_at, v.publisher_id) == (
        "portable", "2026-05-05T05:05:05Z", "io.github.example-acx")


def test_the_decompression_cap_given_to_verify_is_the_one_applied(vectors_dir: Path) -> None:
    # the sample's 13 compressed ROM entries declare 12956 bytes in all: a cap of exactly that passes
    path = vectors_dir / SAMPLE
    at = verify_cartridge(path, registry=None, now=NOW, max_decompressed=12956)
    assert (at.trust, list(at.issues)) == ("portable", PORTABLE_ISSUES)
    below = verify_cartridge(path, registry=None, now=NOW, max_decompressed=12955)
    assert (below.trust, below.summary, list(below.issues)) == (
        "tampered", "Cartridge content is malformed.",
        ["compressed ROM entries declare 12956 bytes, more than the 12955-byte decompression cap (raise it "
         "with --max-decompressed)"])


# ---- what every refusal after the ROM was rebuilt still reports ---------------------------------

CHECKSUM = "sha256:3c4706adf50a7ccea5a71ab38da284048d0992aa3d30381b99d6799127038b72"


def _rom_fields(v: CartridgeVerdict) -> tuple[Any, ...]:
    return v.rom_digest, v.checksum_hash, v.file_count, v.recorded_hash, v.keyid


SAMPLE_ROM = (f"sha256:{ROM_HEX}", CHECKSUM, 34, f"sha256:{ROM_HEX}", SAMPLE_KEYID)


def test_refusals_after_the_rom_is_rebuilt_report_it(vectors_dir: Path, tmp_path: Path) -> None:
    env = _envelope(vectors_dir / SAMPLE)
    forged = dict(env, signatures=[dict(env["signatures"][0], sig="A" * 86 + "==")])
    other = "ed25519:" + "0" * 64
    for name, doc, column, summary, issue in (
        ("forged", forged, SAMPLE_KEYID, S_DSSE_FAILED, "DSSE signature does not verify with the given key"),
        ("type", dict(env, payloadType="application/json"), SAMPLE_KEYID, S_DSSE_FAILED,
         "payloadType is 'application/json', expected application/vnd.in-toto+json"),
        ("column", env, other, S_KEYID, f"envelope keyid {SAMPLE_KEYID} != signatures.keyid {other}"),
    ):
        p = copy_vector(vectors_dir, SAMPLE, tmp_path / f"{name}.acx")
        _set_envelope(p, doc)
        sql(p, "UPDATE signatures SET keyid = ?", params=(column,))
        v = _verify(p)
        assert (v.trust, v.summary, list(v.issues), v.key_source) == (
            "tampered", summary, [issue], "cartridge")
        assert _rom_fields(v) == SAMPLE_ROM, name


def test_only_the_first_signature_counts(sample: Path) -> None:
    env = _envelope(sample)
    good = env["signatures"][0]
    env["signatures"] = [dict(good, sig="A" * 86 + "=="), good]
    _set_envelope(sample, env)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", S_DSSE_FAILED, ["DSSE signature does not verify with the given key"])
    env["signatures"] = [good, dict(good, sig="A" * 86 + "==")]
    _set_envelope(sample, env)
    assert _verify(sample).trust == "portable"


def test_statement_and_recorded_refusals_report_the_rom(sample: Path) -> None:
    original = read_statement(sample)
    stmt = read_statement(sample)
    stmt["subject"][0]["digest"]["sha256"] = "0" * 64
    key = resign(sample, stmt)
    v = _verify(sample)
    assert v.summary == S_SUBJECT
    assert _rom_fields(v) == (*SAMPLE_ROM[:4], key.public().keyid())
    assert (v.publisher_id, v.signed_at, v.key_source) == (
        "io.github.example-acx", "2026-04-03T13:35:46.190Z", "cartridge")
    resign(sample, original, key=key)
    zero = "sha256:" + "0" * 64
    sql(sample, "UPDATE signatures SET manifest_hash = ?", params=(zero,))
    v = _verify(sample)
    assert v.summary == S_RECORDED
    assert _rom_fields(v) == (*SAMPLE_ROM[:3], zero, key.public().keyid())


def test_malformed_content_names_the_signer_key(vectors_dir: Path) -> None:
    v = verify_cartridge(vectors_dir / SAMPLE, registry=None, now=NOW, max_decompressed=1)
    assert (v.trust, v.summary, v.keyid, v.rom_digest) == (
        "tampered", "Cartridge content is malformed.", SAMPLE_KEYID, None)


def test_uncovered_rom_content_is_named_with_the_rom(sample: Path) -> None:
    sql(sample, "INSERT INTO sqlar (name, mode, mtime, sz, data) "
        "VALUES ('rom/extra.md', 33188, 0, 2, X'6869')")
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == (
        "tampered", "ROM holds content not covered by the signed manifest.",
        ["rom/extra.md: rom/ sqlar row not covered by any ROM object"])
    assert _rom_fields(v) == SAMPLE_ROM


def _insert_memory(p: Path, mid: str, zone: str) -> None:
    conn = sqlite3.connect(str(p))
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute("INSERT INTO memory (id, zone, artifact_fingerprint, payload, oid, created_at) "
                     "VALUES (?, ?, 'f', '{}', 'sha256:x', '2026-01-01T00:00:00Z')", (mid, zone))
        conn.commit()
    finally:
        conn.close()


def test_memory_rows_in_save_are_fine_and_in_no_zone_are_named(sample: Path) -> None:
    _insert_memory(sample, "mem-saved", "save")
    assert (_verify(sample).trust, list(_verify(sample).issues)) == ("portable", PORTABLE_ISSUES)
    _insert_memory(sample, "mem-odd", "scratch")
    v = _verify(sample)
    assert (v.trust, list(v.issues)) == ("tampered", ["memory:mem-odd: unknown zone 'scratch'"])


def test_a_signed_codebase_fingerprint_must_match_its_column(sample: Path) -> None:
    record = _payload_record(sample)
    _memory_payload(sample, json.dumps(dict(record, codebaseFingerprint="cb-1")))
    sql(sample, "UPDATE memory SET codebase_fingerprint = 'cb-1'")
    with open_cartridge(sample) as cart:
        assert compute_rom_manifest(cart).mismatches == ()
    sql(sample, "UPDATE memory SET codebase_fingerprint = NULL")
    with open_cartridge(sample) as cart:
        assert compute_rom_manifest(cart).mismatches == (
            f"{MEM}: codebase_fingerprint column differs from the signed payload",)


def test_the_signed_time_and_publisher_come_from_the_predicate(sample: Path) -> None:
    stmt = read_statement(sample)
    stmt["predicate"]["signedAt"] = "2026-04-04T00:00:00Z"
    resign(sample, stmt)
    sql(sample, "UPDATE signatures SET created_at = '2026-05-05T05:05:05Z'")
    v = _verify(sample)
    assert (v.trust, v.signed_at, v.publisher_id) == (
        "portable", "2026-04-04T00:00:00Z", "io.github.example-acx")
    stmt["predicate"]["publisherId"] = 7
    resign(sample, stmt)
    v = _verify(sample)
    assert (v.trust, v.summary, v.publisher_id) == ("tampered", S_STATEMENT, None)


def test_the_verdict_carries_the_signer_facts_it_was_judged_on(vectors_dir: Path) -> None:
    from acxoci.cartridge.trust_file import load_trust_registry

    reg = load_trust_registry(vectors_dir / "sample" / "trust-active.json")
    facts = verify_cartridge(vectors_dir / SAMPLE, registry=reg, now=NOW).extra["signerFacts"]
    assert (facts.status, facts.publisher_match, facts.window, facts.claimed_publisher,
            facts.registered_publisher, facts.signed_at) == (
        "active", True, "inside", "io.github.example-acx", "io.github.example-acx",
        "2026-04-03T13:35:46.190Z")
    alone = verify_cartridge(vectors_dir / SAMPLE, registry=None, now=NOW).extra["signerFacts"]
    assert (alone.status, alone.registered_publisher) == ("unknown", None)


def test_a_cartridge_claiming_no_publisher_is_judged_as_claiming_none(sample: Path) -> None:
    sql(sample, "DELETE FROM cartridge WHERE key = 'acx.publisher_id'",
        "DELETE FROM objects WHERE source_ref = 'cartridge:acx.publisher_id'")
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart)
    stmt = read_statement(sample)
    del stmt["predicate"]["publisherId"]
    stmt["subject"][0]["digest"]["sha256"] = m.hex
    stmt["predicate"].update(romDigest=m.hash, manifestHash=m.hash, checksumHash=m.checksum_hash,
                             fileCount=m.file_count)
    resign(sample, stmt)
    sql(sample, "UPDATE signatures SET manifest_hash = ?", params=(m.hash,))
    v = _verify(sample)
    assert (v.trust, v.publisher_id, v.extra["signerFacts"].claimed_publisher) == ("portable", None, "")


def _add_rom_entry(p: Path, sz: int, data: bytes) -> None:
    sql(p, "INSERT INTO sqlar (name, mode, mtime, sz, data) VALUES ('rom/z.md', 33188, 0, ?, ?)",
        params=(sz, data))
    sql(p, "INSERT INTO objects (oid, kind, source_ref, canon, zone, sz) "
        "VALUES ('sha256:' || lower(hex(zeroblob(32))), 'sqlar', 'rom/z.md', 'raw', 'rom', 0)")


def test_a_negative_declared_size_neither_offsets_nor_adds_to_the_budget(sample: Path) -> None:
    # the sample's compressed ROM entries declare 12956 bytes; a negative size counts as nothing
    _add_rom_entry(sample, -20000, b"\x00\x01")
    over = verify_cartridge(sample, registry=None, now=NOW, max_decompressed=12955)
    assert list(over.issues) == ["compressed ROM entries declare 12956 bytes, more than the 12955-byte "
                                 "decompression cap (raise it with --max-decompressed)"]
    at = verify_cartridge(sample, registry=None, now=NOW, max_decompressed=12956)
    assert (at.summary, list(at.issues)) == (
        "Cartridge content is malformed.",
        ["sqlar entry 'rom/z.md': sz -20000 is not a non-negative integer"])


def test_a_capability_whose_hash_column_lies_is_named_with_its_other_findings(sample: Path) -> None:
    cap = "capability:cap-bd663983fed696bd"
    sql(sample, "UPDATE capabilities SET content_hash = 'sha256:' || lower(hex(zeroblob(32))) "
        "WHERE id = 'cap-bd663983fed696bd'")
    v = _verify(sample)
    assert (v.summary, list(v.issues)) == (S_DIVERGES, [f"{cap}: content_hash differs from the json column"])
    sql(sample, "UPDATE objects SET sz = sz + 1 WHERE source_ref = ?", params=(cap,))
    conn = sqlite3.connect(str(sample))
    try:
        size = conn.execute("SELECT length(CAST(json AS BLOB)) FROM capabilities WHERE id = ?",
                            (cap.removeprefix("capability:"),)).fetchone()[0]
    finally:
        conn.close()
    v = _verify(sample)
    assert list(v.issues) == [f"{cap}: content_hash differs from the json column",
                              f"{cap}: sz {size + 1} differs from source size {size}"]


def test_the_decompression_refusal_names_the_file_and_the_cap(vectors_dir: Path) -> None:
    from acxoci.cartridge.reader import BadEntry

    path = vectors_dir / SAMPLE
    with open_cartridge(path, max_decompressed=100) as cart, pytest.raises(BadEntry) as ei:
        compute_rom_manifest(cart)
    assert (ei.value.message, ei.value.where, ei.value.details) == (
        "compressed ROM entries declare 12956 bytes, more than the 100-byte decompression cap (raise it "
        "with --max-decompressed)", str(path), {"limit": 100})


def test_save_rows_are_never_read_beyond_their_key(sample: Path) -> None:
    """SAVE is the cartridge's writable zone: rebuilding the ROM never loads a SAVE payload."""
    import tracemalloc

    big = 32 * 1024 * 1024
    sql(sample, "INSERT INTO memory (id, zone, artifact_fingerprint, payload, oid, created_at) "
        f"VALUES ('mem-save', 'save', 'f', CAST(zeroblob({big}) AS TEXT), 'sha256:x', "
        "'2026-01-01T00:00:00Z')")
    with open_cartridge(sample) as cart:
        tracemalloc.start()
        try:
            m = compute_rom_manifest(cart)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert m.ok and m.hash == f"sha256:{ROM_HEX}"
    assert peak < big // 4, peak


# ---- the rebuilt manifest's own findings --------------------------------------------------------

STYLE = "rom/knowledge/STYLE.md"


def test_an_empty_source_ref_is_a_missing_source(sample: Path) -> None:
    sql(sample, "INSERT INTO objects (oid, kind, source_ref, canon, zone, sz) "
        "VALUES ('sha256:' || lower(hex(zeroblob(32))), 'sqlar', '', 'raw', 'rom', 0)")
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == ("tampered", S_DIVERGES, [": missing source"])


def test_a_rows_kind_orders_it_whatever_its_source_ref(sample: Path) -> None:
    sql(sample, "UPDATE objects SET kind = 'skill' WHERE source_ref = ?", params=(STYLE,))
    with open_cartridge(sample) as cart:
        m = compute_rom_manifest(cart, strict=False)
        rows = [(r.kind, r.source_ref) for r in cart.objects() if r.zone == "rom"]
    refs = [e["sourceRef"] for e in m.entries]
    assert refs == [ref for _, ref in sorted(rows)]
    first_sqlar = min(i for i, (kind, ref) in enumerate(sorted(rows)) if kind == "sqlar")
    assert refs.index(STYLE) == first_sqlar - 1  # 'skill' sorts before 'sqlar'
    assert sorted(refs) != refs  # and source_ref order alone would put it elsewhere


def test_two_objects_for_one_source_and_a_wrong_oid_are_named(sample: Path) -> None:
    sql(sample, "INSERT INTO objects (oid, kind, source_ref, canon, zone, sz) "
        "SELECT 'sha256:' || lower(hex(zeroblob(32))), kind, source_ref, canon, zone, sz FROM objects "
        "WHERE source_ref = ?", params=(STYLE,))
    v = _verify(sample)
    assert (v.trust, v.summary) == ("tampered", S_DIVERGES)
    assert list(v.issues) == [f"{STYLE}: 2 ROM objects share this source", f"{STYLE}: oid mismatch"]


def test_only_a_strict_rebuild_reports_uncovered_content(sample: Path) -> None:
    sql(sample, "INSERT INTO sqlar (name, mode, mtime, sz, data) "
        "VALUES ('rom/extra.md', 33188, 0, 2, X'6869')")
    with open_cartridge(sample) as cart:
        strict, loose = compute_rom_manifest(cart), compute_rom_manifest(cart, strict=False)
    assert strict.uncovered == ("rom/extra.md: rom/ sqlar row not covered by any ROM object",)
    assert (loose.uncovered, loose.ok, loose.hash) == ((), True, strict.hash)
