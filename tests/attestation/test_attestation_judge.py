"""The pure judgement and overall decision: verdicts for each negative, cosign-compatible keyid
handling, trust-registry keys (compromised → rejected), and blob verification."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acxoci.attest.keys import generate_ed25519, generate_p256
from acxoci.attest.trust import TrustRegistry
from acxoci.attestation.blob import attest_blob, verify_blob
from acxoci.attestation.judge import judge
from acxoci.attestation.signing import TrustedKey, bundle_bytes, envelope_bytes, sign_statement
from acxoci.attestation.statements import oci_statement
from acxoci.attestation.verify import AttestationReport, overall

NOW = datetime(2026, 11, 30, tzinfo=UTC)
HEX = "cd" * 32
T = "https://example.com/pred/v1"


def _envelope(key: Any, *, subject: str = HEX, ptype: str = T, keyid: str | None = "") -> bytes:
    stmt = oci_statement("sha256:" + subject, "r", ptype, {"a": 1})
    return envelope_bytes(sign_statement(stmt, key, keyid=keyid))


def _bundle(key: Any, **kw: Any) -> bytes:
    stmt = oci_statement("sha256:" + kw.get("subject", HEX), "r", kw.get("ptype", T), {"a": 1})
    return bundle_bytes(sign_statement(stmt, key, keyid=None), key.public())


def _tk(key: Any) -> list[TrustedKey]:
    return [TrustedKey(key.public(), "test")]


@pytest.mark.parametrize("kind", ["envelope", "bundle"])
def test_good(kind: str) -> None:
    key = generate_ed25519()
    data = _envelope(key) if kind == "envelope" else _bundle(key)
    j = judge(data, kind, _tk(key), subject_sha256=HEX, want_type=T, now=NOW)  # type: ignore[arg-type]
    assert j.verdict == "verified" and j.signer_keyid == key.public().keyid()


def test_negatives() -> None:
    key = generate_p256()
    assert judge(_envelope(key), "envelope", _tk(generate_p256()), subject_sha256=HEX, want_type=T,
                 now=NOW).verdict == "unverified"
    assert judge(_envelope(key, ptype="https://other"), "envelope", _tk(key), subject_sha256=HEX, want_type=T,
                 now=NOW).verdict == "skipped"
    j = judge(_envelope(key, subject="ef" * 32), "envelope", _tk(key), subject_sha256=HEX, want_type=None,
              now=NOW)
    assert j.verdict == "rejected" and "does not match the manifest digest" in j.reasons[0]
    assert judge(b"{not json", "envelope", _tk(key), subject_sha256=HEX, want_type=None,
                 now=NOW).verdict == "unverified"


def test_bundle_keyid_rejected_like_cosign() -> None:
    key = generate_ed25519()
    doc = json.loads(_bundle(key))
    doc["dsseEnvelope"]["signatures"][0]["keyid"] = key.public().keyid()
    j = judge(json.dumps(doc).encode(), "bundle", _tk(key), subject_sha256=HEX, want_type=None, now=NOW)
    assert j.verdict == "rejected" and "cosign" in j.reasons[0]


def test_legacy_keyid_is_ignored() -> None:
    key = generate_ed25519()
    j = judge(_envelope(key, keyid="anything"), "envelope", _tk(key), subject_sha256=HEX, want_type=None,
              now=NOW)
    assert j.verdict == "verified"


def _registry(key: Any, **over: Any) -> TrustRegistry:
    entry = {"keyid": key.public().keyid(), "publisherId": "com.example.acx", "algorithm": "ed25519",
             "publicKeyPem": key.public().spki_pem(), "status": "active",
             "notBefore": "2026-01-01T00:00:00Z", "notAfter": "2027-12-31T00:00:00Z",
             "namespaceProof": {"method": "dns-txt", "txtRecord": "_acx-challenge.acx.example.com",
                                "verifiedAt": "2026-01-02T00:00:00Z"}}
    entry.update(over)
    return TrustRegistry.from_json({"schemaVersion": "acx.trust-registry/1", "keys": [entry]}, now=NOW)


def test_trust_registry_keys() -> None:
    from acxoci.attestation.signing import trust_registry_keys
    key = generate_ed25519()
    keys = trust_registry_keys(_registry(key))
    j = judge(_envelope(key), "envelope", keys, subject_sha256=HEX, want_type=None, now=NOW)
    assert j.verdict == "verified" and j.signer_keyid == key.public().keyid() and j.trust is not None
    bad = trust_registry_keys(_registry(key, status="revoked", revokedAt="2026-02-01T00:00:00Z",
                                        revocationReason="key-compromise"))
    j = judge(_envelope(key), "envelope", bad, subject_sha256=HEX, want_type=None, now=NOW)
    assert j.verdict == "rejected"


def _report(verdict: str, fmt: str = "legacy", ptype: str = T) -> AttestationReport:
    from acxoci.attestation.judge import Judgement
    return AttestationReport(fmt, "loc", "m", Judgement(verdict, ("why",), predicate_type=ptype))  # type: ignore[arg-type]


def test_overall() -> None:
    assert overall([_report("verified"), _report("unverified")], None)[0]
    # a rejected attestation is not evidence and no veto (decision 0043): the verified one decides
    ok, summary, _ = overall([_report("verified"), _report("rejected")], None)
    assert ok and "1 rejected, not counted" in summary
    assert not overall([_report("rejected")], None)[0]
    assert not overall([_report("skipped", "envelope")], None)[0]
    ok, _summary, reasons = overall([_report("skipped", ptype="x")], T)
    assert not ok and "matched the predicate type" in reasons[0]
    assert overall([], None)[1] == "no attestations found"


@pytest.mark.parametrize("as_bundle", [True, False])
def test_blob_roundtrip_and_tamper(tmp_path: Path, as_bundle: bool) -> None:
    key = generate_p256()
    f = tmp_path / "cart.acx"
    f.write_bytes(b"content")
    doc = attest_blob(f, key, T, {"x": 1}, as_bundle=as_bundle)
    kind = "bundle" if as_bundle else "envelope"
    assert verify_blob(f, doc, kind, _tk(key), want_type=T, now=NOW).ok  # type: ignore[arg-type]
    f.write_bytes(b"content!")
    v = verify_blob(f, doc, kind, _tk(key), want_type=T, now=NOW)  # type: ignore[arg-type]
    assert not v.ok and any("does not match" in r for r in v.judgement.reasons)
    v = verify_blob(f, doc, kind, _tk(key), want_type="https://x", now=NOW)  # type: ignore[arg-type]
    assert not v.ok and any("matched the predicate type" in r for r in v.judgement.reasons)
