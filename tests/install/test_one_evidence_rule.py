"""F4 of the keyless review (issues 28 and 32): plain `acx verify` and the acceptance decision count
attestations by one rule (decision 0043). The publisher's genuine keyless bundle for artifact B,
copied onto artifact A by anyone with push rights, is shown as rejected and is neither evidence
nor a veto: A still verifies and installs on its own attestation, and an artifact whose only
attestation is the replayed one is refused by both. Real cartridges, keys, layouts and the
loopback Sigstore stack."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from acxoci.attestation.judge import Judgement
from acxoci.attestation.verify import AttestationReport, overall
from acxoci.install.checks import AttestationFound, check_attestations
from acxoci.install.vpolicy import VerificationPolicy
from acxoci.oci.target import fetch_bytes, fetch_manifest
from tests.harness.attplant import plant_bundle, subject_of
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO
from tests.harness.sigstack import SigStack, clean_env

PUBLISHER = "dev.acxoci.demo"


def acx(*args: str) -> None:
    r = subprocess.run([sys.executable, "-m", "acxoci", "-q", *args], capture_output=True, text=True,
                       cwd=REPO, env=clean_env(), timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("verdicts", [list(v) for n in range(4) for v in itertools.product(
    ("verified", "rejected", "unverified"), repeat=n)])
def test_plain_verify_and_the_decision_count_the_same_evidence(verdicts: list[str]) -> None:
    """Every mix of verdicts: plain verify's overall verdict is the decision's attestations check."""
    reports = [AttestationReport("bundle", f"r{i}", "m",
                                 Judgement(v, ("why",), predicate_type="t"))  # type: ignore[arg-type]
               for i, v in enumerate(verdicts)]
    found = [AttestationFound("bundle", "t", v == "verified", "why") for v in verdicts]
    decided = not check_attestations(found, VerificationPolicy(attestation_formats=("bundle",))).failed
    assert overall(reports, None)[0] == decided == ("verified" in verdicts)


@pytest.mark.interop
def test_a_replayed_bundle_is_neither_evidence_nor_a_veto(
        sigstack_stack: SigStack, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "k.pem"
    acx("key", "generate", "-o", str(key))
    carts = {}
    for name, day in (("a", 30), ("b", 29), ("c", 28)):
        at = f"2026-11-{day}T00:00:00Z"
        carts[name] = tmp_path / f"{name}.acx"
        acx("cartridge", "build", str(REPO / "examples/agent-package"), "-o", str(carts[name]), "--publisher",
            PUBLISHER, "--key", str(key), "--now", at)
    acx("key", "trust", str(tmp_path / "k.pub.pem"), "--publisher", PUBLISHER, "--trust-registry",
        str(tmp_path / "trust.json"), "--not-before", "2026-01-01T00:00:00Z")
    token = sigstack_stack.token_file(tmp_path / "t.jwt")
    refs = {n: f"oci-layout:{tmp_path / 'lay'}:{n}" for n in carts}
    for n, path in carts.items():
        assert run_acx(capsys, "-q", "push", str(path), refs[n]).returncode == 0
    for n in ("a", "b"):  # c gets no attestation of its own
        code, out = acx_json(capsys, "attest", refs[n], "--identity-token-file", str(token), "--trust-config",
                             str(sigstack_stack.trust_config))
        assert code == 0, out
        if n == "b":
            target, _ = subject_of(refs["b"])
            referrer = fetch_manifest(target, target.resolve(out["bundleReferrer"]))
            b_bundle = fetch_bytes(target, referrer.layers[0])
    for n in ("a", "c"):
        plant_bundle(refs[n], b_bundle)  # B's genuine bundle, replayed

    flags = ["--trust-config", str(sigstack_stack.trust_config), "--certificate-identity",
             sigstack_stack.identity, "--certificate-oidc-issuer", sigstack_stack.issuer]
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"""schemaVersion: acx.verification-policy/1
publishers:
  - id: {PUBLISHER}
    trustRegistries: [{tmp_path / 'trust.json'}]
    identities: [{{issuer: {sigstack_stack.issuer}, subject: {sigstack_stack.identity}}}]
attestations: {{formats: [bundle], trustedRoot: {sigstack_stack.trusted_root}}}
""")
    monkeypatch.setenv("ACX_STORE", str(tmp_path / "store"))

    code, out = acx_json(capsys, "verify", refs["a"], *flags)
    assert code == 0 and "1 rejected, not counted" in out["summary"], out
    rejected = [a for a in out["attestations"] if a["verdict"] == "rejected"]
    assert len(rejected) == 1 and "does not match the manifest digest" in rejected[0]["reasons"][0]
    assert acx_json(capsys, "verify", refs["a"], "--policy", str(policy))[0] == 0
    assert acx_json(capsys, "install", refs["a"], "--policy", str(policy))[0] == 0

    code, out = acx_json(capsys, "verify", refs["c"], *flags)
    assert code == 1 and out["summary"] == "no attestation verified (1 rejected)", out
    code, out = acx_json(capsys, "verify", refs["c"], "--policy", str(policy))
    assert code == 8 and any(r.startswith("attestations") for r in out["reasons"]), json.dumps(out)[:2000]
    assert acx_json(capsys, "install", refs["c"], "--policy", str(policy))[0] == 8
