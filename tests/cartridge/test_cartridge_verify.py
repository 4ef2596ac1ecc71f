"""Cartridge verification: agreement with the reference on every vector, the stricter checks acxoci
adds (each shown to pass on an honest re-signed control first), strip and the CLI exit codes."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acxoci.cartridge.strip import strip_cartridge
from acxoci.cartridge.trust_file import load_trust_registry
from acxoci.cartridge.verify import verify_cartridge
from tests.harness.cartridges import (
    NOW,
    SAMPLE,
    SAMPLE_KEYID,
    copy_vector,
    read_statement,
    resign,
    sql,
)


def _cases(vectors: Path) -> list[tuple[str, dict[str, Any]]]:
    exp = json.loads((vectors / "expected.json").read_text())
    return [(k, v) for k, v in exp.items() if v["kind"] == "cartridge"]


def test_every_vector_verdict(vectors_dir: Path) -> None:
    cases = _cases(vectors_dir)
    assert len(cases) >= 14
    for name, case in cases:
        reg = load_trust_registry(vectors_dir / case["registry"]) if "registry" in case else None
        v = verify_cartridge(vectors_dir / case.get("file", name), registry=reg, now=NOW)
        ref = case["reference"]
        must = case.get("acxoci_must_say")
        if must == "tampered":
            assert (v.trust, v.status) == ("tampered", "invalid"), (name, v)
        elif must == "valid":
            assert not v.rejected and v.trust == ref["trust"], (name, v)
        else:
            assert (v.status, v.trust, v.summary) == (ref["status"], ref["trust"], ref["summary"]), (name, v)
        assert int(v.rejected) == (1 if must == "tampered" else ref["exit"]), name
        if "romDigest" in case:
            assert v.rom_digest == case["romDigest"]
        if "keyid" in case:
            assert v.keyid == case["keyid"]


@pytest.fixture
def sample(vectors_dir: Path, tmp_path: Path) -> Path:
    return copy_vector(vectors_dir, SAMPLE, tmp_path / "c.acx")


def _verify(p: Path) -> Any:
    return verify_cartridge(p, registry=None, now=NOW)


def test_resigned_control_is_portable(sample: Path) -> None:
    resign(sample, read_statement(sample))
    v = _verify(sample)
    assert (v.trust, v.status) == ("portable", "warning") and v.keyid != SAMPLE_KEYID


def _mutate_statement(stmt: dict[str, Any], what: str) -> None:
    if what == "predicateType":
        stmt["predicateType"] = "https://example.com/other/v1"
    elif what == "_type":
        stmt["_type"] = "https://in-toto.io/Statement/v0.1"
    elif what == "two subjects":
        stmt["subject"].append(dict(stmt["subject"][0], name="other"))
    elif what == "publisherId":
        stmt["predicate"]["publisherId"] = "io.github.someone-else"
    elif what == "subject digest":
        stmt["subject"][0]["digest"]["sha256"] = "0" * 64
    elif what == "subject digest absent":
        stmt["subject"][0]["digest"] = {"sha512": "0" * 128}
    elif what == "subject name":
        stmt["subject"][0]["name"] = "io.github.example-acx/other@x"
    elif what == "fileCount":
        stmt["predicate"]["fileCount"] = 1
    elif what == "extra field":
        stmt["extra"] = 1


@pytest.mark.parametrize(
    "what",
    [
        "predicateType",
        "_type",
        "two subjects",
        "publisherId",
        "subject digest",
        "subject digest absent",
        "subject name",
        "fileCount",
        "extra field",
    ],
)
def test_statement_binding_is_checked(sample: Path, what: str) -> None:
    stmt = read_statement(sample)
    _mutate_statement(stmt, what)
    resign(sample, stmt)
    v = _verify(sample)
    assert (v.trust, v.status) == ("tampered", "invalid"), v


def test_wrong_payload_type_is_tampered(sample: Path) -> None:
    resign(sample, read_statement(sample), payload_type="application/json")
    v = _verify(sample)
    assert v.summary == "DSSE verification failed." and "payloadType" in v.issues[0]


def test_keyid_must_be_spki_hash(sample: Path) -> None:
    key = resign(sample, read_statement(sample))
    sql(
        sample,
        "UPDATE signatures SET keyid = ?, envelope = replace(envelope, ?, ?)",
        params=(SAMPLE_KEYID, key.public().keyid(), SAMPLE_KEYID),
    )
    v = _verify(sample)
    assert v.summary == "Signer keyid does not match the verifying key."


def test_envelope_and_column_keyid_must_agree(sample: Path) -> None:
    sql(sample, "UPDATE signatures SET keyid = 'ed25519:' || hex(zeroblob(32))")
    assert _verify(sample).trust == "tampered"


def test_bad_signature_is_tampered(sample: Path) -> None:
    key = resign(sample, read_statement(sample))
    forged = key.sign(b"something else entirely")
    env = json.loads(sqlite3.connect(str(sample)).execute("SELECT envelope FROM signatures").fetchone()[0])
    env["signatures"][0]["sig"] = base64.b64encode(forged).decode()
    sql(sample, "UPDATE signatures SET envelope = ?", params=(json.dumps(env),))
    v = _verify(sample)
    assert (v.trust, v.summary) == ("tampered", "DSSE verification failed.")


def test_no_public_key_is_unverified(sample: Path) -> None:
    sql(sample, "UPDATE signatures SET public_key_pem = NULL")
    v = _verify(sample)
    assert (v.status, v.trust) == ("warning", "unverified")
    assert v.meets(None) and not v.meets("portable") and not v.meets("trusted")


def test_registry_key_used_when_cartridge_has_none(vectors_dir: Path, sample: Path) -> None:
    sql(sample, "UPDATE signatures SET public_key_pem = NULL")
    reg = load_trust_registry(vectors_dir / "sample/trust-active.json")
    v = verify_cartridge(sample, registry=reg, now=NOW)
    assert (v.trust, v.key_source) == ("trusted", "registry")


def test_unsigned_is_legacy(sample: Path) -> None:
    sql(sample, "DELETE FROM signatures")
    v = _verify(sample)
    assert (v.status, v.trust, v.issues[0]) == ("warning", "legacy", "Missing rom-manifest signature")
    assert not v.meets("portable")


@pytest.mark.parametrize(
    ("stmt", "needle"),
    [
        ("DELETE FROM objects WHERE source_ref LIKE 'memory:%'", "memory:mem-ge-mnhsl3xg"),
        ("DELETE FROM objects WHERE source_ref LIKE 'capability:%'", "capability:"),
        ("DELETE FROM objects WHERE source_ref = 'cartridge:acx.homepage'", "cartridge:acx.homepage"),
        ("DELETE FROM memory", "memory:mem-ge-mnhsl3xg: missing source"),
        ("DELETE FROM sqlar WHERE name = 'rom/knowledge/STYLE.md'", "rom/knowledge/STYLE.md: missing source"),
        ("UPDATE memory SET zone = 'save'", "memory:mem-ge-mnhsl3xg"),
        ("UPDATE objects SET sz = sz + 1 WHERE source_ref = 'rom/knowledge/STYLE.md'", "sz"),
        ("UPDATE objects SET kind = 'skill' WHERE source_ref = 'rom/knowledge/STYLE.md'", "kind/canon"),
        ("UPDATE capabilities SET content_hash = 'sha256:' || hex(zeroblob(32))", "content_hash"),
    ],
)
def test_coverage_and_sources_checked_before_signature(sample: Path, stmt: str, needle: str) -> None:
    sql(sample, stmt)
    v = _verify(sample)
    assert v.trust == "tampered", v
    assert any(needle in i for i in v.issues), v.issues


def test_strip_keeps_rom_and_signature(vectors_dir: Path, tmp_path: Path) -> None:
    src = vectors_dir / "sample/tampered/save-only-change.acx"
    out = tmp_path / "out.acx"
    r = strip_cartridge(src, out, now=NOW)
    assert r.ok and r.equal and r.removed.get("sqlar") == 1 and out.exists()
    assert verify_cartridge(out, registry=None, now=NOW).trust == "portable"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.acx"]


def test_strip_refuses_tampered_input(vectors_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.acx"
    r = strip_cartridge(vectors_dir / "sample/tampered/rom-data.acx", out, now=NOW)
    assert not r.ok and r.output is None and not out.exists()
    assert list(tmp_path.iterdir()) == []


def _acx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_cli_exit_codes(vectors_dir: Path, tmp_path: Path) -> None:
    s = str(vectors_dir / SAMPLE)
    assert _acx("cartridge", "verify", s).returncode == 0
    r = _acx("cartridge", "verify", s, "--require", "trusted")
    assert r.returncode == 8
    r = _acx(
        "cartridge",
        "verify",
        s,
        "--trust-registry",
        str(vectors_dir / "sample/trust-active.json"),
        "--require",
        "trusted",
        "--now",
        "2026-11-30T00:00:00Z",
        "--json",
    )
    assert r.returncode == 0 and json.loads(r.stdout)["trust"] == "trusted"
    r = _acx("cartridge", "verify", s, "--trust-registry", str(vectors_dir / "sample/trust-compromised.json"))
    assert r.returncode == 1 and r.stdout.startswith("TAMPERED")
    r = _acx("--json", "cartridge", "verify", str(vectors_dir / "sample/tampered/injected-rom-row.acx"))
    assert r.returncode == 1 and json.loads(r.stdout)["trust"] == "tampered"
    r = _acx("cartridge", "inspect", s, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["romObjects"]["count"] == 34
    out = tmp_path / "o.acx"
    r = _acx("cartridge", "strip", s, "-o", str(out))
    assert r.returncode == 0 and "EQUAL" in r.stdout and out.exists()
    bad = tmp_path / "bad.acx"
    bad.write_bytes(b"not sqlite at all" * 10)
    r = _acx("--json", "cartridge", "verify", str(bad))
    assert r.returncode == 3 and json.loads(r.stdout)["error"]["where"] == str(bad)


def test_verdict_json_view(vectors_dir: Path) -> None:
    # the --json verdict scripts read: every field, from the reference's sample under its registries
    sample = vectors_dir / "sample" / "sample.acx"
    common = {
        "romDigest": "sha256:8ba92c59b173298b2e307b78daf9d82d89813fdb237f4d0ba738ce324efbdb5b",
        "keyId": SAMPLE_KEYID,
        "publisherId": "io.github.example-acx",
        "signedAt": "2026-04-03T13:35:46.190Z",
        "checksumHash": "sha256:3c4706adf50a7ccea5a71ab38da284048d0992aa3d30381b99d6799127038b72",
        "fileCount": 34,
        "file": str(sample),
    }
    active = load_trust_registry(vectors_dir / "sample" / "trust-active.json")
    assert verify_cartridge(sample, registry=active, now=NOW).to_json() == {
        "status": "verified",
        "trust": "trusted",
        "summary": "Signed by trusted publisher io.github.example-acx.",
        "issues": [],
        "inRegistry": True,
        "keySource": "registry",
        **common,
    }
    compromised = load_trust_registry(vectors_dir / "sample" / "trust-compromised.json")
    assert verify_cartridge(sample, registry=compromised, now=NOW).to_json() == {
        "status": "invalid",
        "trust": "tampered",
        "summary": "Signer key is compromised (revoked).",
        "issues": ["signer key is revoked for key-compromise: never trusted"],
        "inRegistry": True,
        "keySource": "registry",
        "compromised": True,
        **common,
    }
    assert verify_cartridge(sample, registry=None, now=NOW).to_json() == {
        "status": "warning",
        "trust": "portable",
        "summary": "Signature valid but signer not in trust registry.",
        "issues": ["signer key is not in the trust registry"],
        "inRegistry": False,
        "keySource": "cartridge",
        **common,
    }


def test_meets_orders_the_trust_levels(vectors_dir: Path) -> None:
    sample = vectors_dir / "sample" / "sample.acx"
    portable = verify_cartridge(sample, registry=None, now=NOW)
    active = load_trust_registry(vectors_dir / "sample" / "trust-active.json")
    compromised = load_trust_registry(vectors_dir / "sample" / "trust-compromised.json")
    trusted = verify_cartridge(sample, registry=active, now=NOW)
    rejected = verify_cartridge(sample, registry=compromised, now=NOW)
    assert [portable.meets(r) for r in (None, "portable", "trusted")] == [True, True, False]
    assert [trusted.meets(r) for r in (None, "portable", "trusted")] == [True, True, True]
    assert not any(rejected.meets(r) for r in (None, "portable", "tampered"))
    with pytest.raises(ValueError, match="unknown trust level 'gold'"):
        portable.meets("gold")


_ROM_HEX = "8ba92c59b173298b2e307b78daf9d82d89813fdb237f4d0ba738ce324efbdb5b"
_ZERO = "sha256:" + "0" * 64
S_STATEMENT = "Signed statement does not describe this cartridge."
S_SUBJECT = "ROM manifest hash mismatch (content changed after signing)."


@pytest.mark.parametrize(
    ("change", "summary", "issues"),
    [
        (lambda s: s["predicate"].__setitem__("romDigest", _ZERO), S_SUBJECT,
         [f"predicate.romDigest {_ZERO} != recomputed sha256:{_ROM_HEX}"]),
        (lambda s: s["predicate"].__setitem__("manifestHash", _ZERO), S_SUBJECT,
         [f"predicate.manifestHash {_ZERO} != recomputed sha256:{_ROM_HEX}"]),
        (lambda s: s["predicate"].__setitem__("checksumHash", _ZERO), S_STATEMENT,
         [f"predicate.checksumHash {_ZERO} != recomputed "
          "sha256:3c4706adf50a7ccea5a71ab38da284048d0992aa3d30381b99d6799127038b72"]),
        (lambda s: s["predicate"].__setitem__("fileCount", 1), S_STATEMENT,
         ["predicate.fileCount 1 != recomputed 34"]),
        (lambda s: s["subject"][0]["digest"].__setitem__("sha512", "0" * 128), S_STATEMENT,
         ["subject[0].digest has unexpected algorithm(s) ['sha512']"]),
        (lambda s: s["subject"][0].__setitem__("digest", {"sha512": "0" * 128}), S_STATEMENT,
         ["subject[0].digest.sha256 is missing", "subject[0].digest has unexpected algorithm(s) ['sha512']"]),
        (lambda s: s["predicate"].__setitem__("publisherId", "io.github.someone-else"), S_STATEMENT,
         ["predicate.publisherId 'io.github.someone-else' != meta acx.publisher_id 'io.github.example-acx'"]),
        (lambda s: s.__setitem__("predicateType", "https://example.com/other/v1"), S_STATEMENT,
         ["predicateType is 'https://example.com/other/v1', expected https://acx.dev/attestation/cartridge/v1"]),
        (lambda s: s.__setitem__("extra", 1), S_STATEMENT, ["statement has unexpected field(s) ['extra']"]),
        (lambda s: s["subject"].append(dict(s["subject"][0], name="other")), S_STATEMENT,
         ["statement has 2 subjects, expected exactly 1"]),
    ],
)
def test_statement_binding_names_the_mismatch(
    sample: Path, change: Any, summary: str, issues: list[str]
) -> None:
    stmt = read_statement(sample)
    change(stmt)
    resign(sample, stmt)
    v = _verify(sample)
    assert (v.trust, v.summary, list(v.issues)) == ("tampered", summary, issues)


def test_statement_that_is_not_an_object_is_tampered(sample: Path) -> None:
    resign(sample, {}, payload=b"[1]")
    v = _verify(sample)
    assert (v.trust, v.summary) == ("tampered", S_STATEMENT)
    assert list(v.issues) == ["statement is not a JSON object"]


def test_statement_with_an_old_type_names_both_problems(sample: Path) -> None:
    stmt = read_statement(sample)
    stmt["_type"] = "https://in-toto.io/Statement/v0.1"
    resign(sample, stmt)
    v = _verify(sample)
    assert v.trust == "tampered" and list(v.issues) == [
        "_type is 'https://in-toto.io/Statement/v0.1', expected https://in-toto.io/Statement/v1",
        "statement: in-toto statement _type is 'https://in-toto.io/Statement/v0.1', expected one of "
        "['https://in-toto.io/Statement/v1']",
    ]


_CHECKSUM = "sha256:3c4706adf50a7ccea5a71ab38da284048d0992aa3d30381b99d6799127038b72"
_NO_ROM: dict[str, Any] = {"romDigest": None, "checksumHash": None, "fileCount": None, "keySource": None}
_MALFORMED: dict[str, Any] = {"status": "invalid", "trust": "tampered", "summary": "Malformed DSSE envelope.",
                              "keyId": SAMPLE_KEYID, **_NO_ROM}
_ROM: dict[str, Any] = {"romDigest": f"sha256:{_ROM_HEX}", "checksumHash": _CHECKSUM, "fileCount": 34}


@pytest.mark.parametrize(
    ("statements", "expect", "first_issue"),
    [
        (["UPDATE signatures SET envelope = '{'"],
         _MALFORMED, "invalid JSON: "),
        (["UPDATE signatures SET envelope = 5"],
         _MALFORMED, "DSSE envelope is not a JSON object"),
        (["UPDATE signatures SET envelope = json_set(envelope, '$.extra', 1)"],
         _MALFORMED, "envelope has unexpected field(s) ['extra']"),
        (["UPDATE signatures SET public_key_pem = 'junk'"],
         {"status": "invalid", "trust": "tampered", "summary": "DSSE verification failed.",
          "keyId": SAMPLE_KEYID, "keySource": "cartridge", **_ROM}, "public_key_pem: not a PEM public key"),
        (["UPDATE objects SET sz = sz + 1 WHERE source_ref = 'rom/knowledge/STYLE.md'"],
         {"status": "invalid", "trust": "tampered", "keyId": SAMPLE_KEYID, "keySource": None,
          "summary": "ROM content diverges from signed manifest (object hash mismatch).",
          "checksumHash": _CHECKSUM, "fileCount": 34},
         "rom/knowledge/STYLE.md: sz 395 differs from source size 394"),
        (["UPDATE signatures SET public_key_pem = NULL"],
         {"status": "warning", "trust": "unverified", "keyId": SAMPLE_KEYID, "keySource": None,
          "summary": "Signature present but UNVERIFIED (no public key available).",
          "publisherId": "io.github.example-acx", "signedAt": "2026-04-03T13:35:46.190Z", **_ROM},
         "no public key in the cartridge or the trust registry"),
        (["DELETE FROM signatures"],
         {"status": "warning", "trust": "legacy", "summary": "Unsigned cartridge (no DSSE envelope).",
          "keyId": None, "keySource": None, "romDigest": f"sha256:{_ROM_HEX}", "checksumHash": None,
          "fileCount": None}, "Missing rom-manifest signature"),
    ],
)
def test_each_refusal_reports_what_was_seen(
    sample: Path, statements: list[str], expect: dict[str, Any], first_issue: str
) -> None:
    sql(sample, *statements)
    doc = _verify(sample).to_json()
    assert {k: doc[k] for k in expect} == expect
    assert doc["issues"] and doc["issues"][0].startswith(first_issue), doc["issues"]


def test_unsigned_cartridge_lists_its_content_problems(sample: Path) -> None:
    sql(sample, "DELETE FROM signatures",
        "UPDATE objects SET sz = sz + 1 WHERE source_ref = 'rom/knowledge/STYLE.md'")
    v = _verify(sample)
    assert (v.trust, v.rom_digest is not None) == ("legacy", True)
    assert list(v.issues) == ["Missing rom-manifest signature",
                              "rom/knowledge/STYLE.md: sz 395 differs from source size 394"]


def test_payload_that_is_not_json_is_tampered(sample: Path) -> None:
    key = resign(sample, {}, payload=b"not json")
    v = _verify(sample)
    assert (v.status, v.trust, v.summary) == ("invalid", "tampered", "DSSE verification failed.")
    assert v.issues[0].startswith("payload: invalid JSON")
    assert (v.keyid, v.key_source, v.rom_digest) == (key.public().keyid(), "cartridge", f"sha256:{_ROM_HEX}")


def test_payload_spelled_without_padding_still_verifies(sample: Path) -> None:
    # the four canonical base64 spellings of one payload are one envelope; any other is refused
    env = json.loads(sqlite3.connect(str(sample)).execute("SELECT envelope FROM signatures").fetchone()[0])
    assert env["payload"].endswith("=")
    env["payload"] = env["payload"].rstrip("=")
    sql(sample, "UPDATE signatures SET envelope = ?", params=(json.dumps(env),))
    assert (_verify(sample).trust, _verify(sample).rom_digest) == ("portable", f"sha256:{_ROM_HEX}")
    assert env["payload"].endswith("0")  # its 2 unused low bits are zero: "1" sets one
    env["payload"] = env["payload"][:-1] + "1="  # decodes to the same bytes, but is not canonical
    sql(sample, "UPDATE signatures SET envelope = ?", params=(json.dumps(env),))
    v = _verify(sample)
    assert (v.trust, v.summary) == ("tampered", "Malformed DSSE envelope.")
    assert list(v.issues) == ["payload is not canonical base64"]
