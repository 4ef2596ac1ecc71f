"""A keyless release in a simulated GitHub Actions run (the runner's OIDC token endpoint served on
loopback by the Sigstore stack's stand-in, Fulcio/Rekor v2/TSA real): `acx release run` signs its
attestations keylessly with the ambient token and attaches SLSA provenance; the consumer's
read-back accepts it; `acx verify --repo --signer-workflow --source-ref` passes for that
repository, workflow and ref, and refuses another repository, another workflow, another ref and
another issuer; stock cosign 3.1 verifies the provenance attestation."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml

from tests.harness.peers import Cosign
from tests.harness.releases import acx, make_world
from tests.harness.servers import Registry
from tests.harness.sigstack import SigStack, clean_env

pytestmark = pytest.mark.interop
REPO_NAME, REF, SHA = "acx-example/agents", "refs/tags/v1", "ab" * 20
WORKFLOW = ".github/workflows/release.yml"
SLSA = "https://slsa.dev/provenance/v1"


def actions_env(stack: SigStack) -> dict[str, str]:
    """What a GitHub-hosted runner sets for a job with `permissions: id-token: write`."""
    claims = urlencode({"repo": REPO_NAME, "ref": REF, "workflow": WORKFLOW, "sha": SHA})
    return clean_env(
        GITHUB_ACTIONS="true", CI="true", GITHUB_SERVER_URL="https://github.com", GITHUB_REPOSITORY=REPO_NAME,
        GITHUB_REF=REF, GITHUB_SHA=SHA, GITHUB_WORKFLOW_REF=f"{REPO_NAME}/{WORKFLOW}@{REF}",
        GITHUB_RUN_ID="4242", GITHUB_RUN_ATTEMPT="1", GITHUB_EVENT_NAME="push",
        RUNNER_ENVIRONMENT="github-hosted",
        ACTIONS_ID_TOKEN_REQUEST_URL=f"{stack.env['ACTIONS_ID_TOKEN_REQUEST_URL']}?{claims}",
        ACTIONS_ID_TOKEN_REQUEST_TOKEN=stack.env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"])


def keyless_world(tmp: Path, vectors: Path, repository: str, stack: SigStack) -> Path:
    """The sample release plan, signing its attestations keylessly; the consumer policy trusts the
    release workflow's identity from the stack's issuer."""
    w = make_world(tmp, vectors, [repository], formats=("bundle",))
    doc = yaml.safe_load(w.plan.read_text())
    doc["inputs"]["keys"]["attestation"] = {"keyless": {"trustConfig": str(stack.trust_config)}}
    w.plan.write_text(yaml.safe_dump(doc, sort_keys=False))
    pol = yaml.safe_load(w.policy.read_text())
    pol["publishers"][0]["identities"] = [{"issuer": stack.issuer,
                                           "subjectRegExp": r"https://github\.com/acx-example/agents/.+"}]
    pol["attestations"] = {"formats": ["bundle"], "trustedRoot": str(stack.trusted_root)}
    w.policy.write_text(yaml.safe_dump(pol, sort_keys=False))
    return w.plan


def test_keyless_release_in_github_actions_attaches_provenance_that_verify_checks(
        distribution_registry: Registry, sigstack_stack: SigStack, cosign3: Cosign, tmp_path: Path,
        vectors_dir: Path) -> None:
    repository = f"{distribution_registry.host}/acx/released"
    plan = keyless_world(tmp_path / "w", vectors_dir, repository, sigstack_stack)
    run = acx("--json", "release", "run", str(plan), "--state-dir", str(tmp_path / "state"),
              env=actions_env(sigstack_stack))
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout)
    verify = next(e for e in out["effects"] if e["kind"] == "verify")
    assert verify["evidence"]["checks"]["attestations"] == "pass", verify
    attach = next(e for e in out["effects"] if e["kind"] == "attach_attestation")
    assert attach["evidence"]["provenance"], attach
    subject = f"{repository}@{verify['evidence']['digest']}"

    base = ["--json", "verify", subject, "--trust-config", str(sigstack_stack.trust_config),
            "--certificate-oidc-issuer", sigstack_stack.issuer]
    want = ["--repo", REPO_NAME, "--signer-workflow", f"{REPO_NAME}/{WORKFLOW}", "--source-ref", REF]
    ok = acx(*base, *want, env=clean_env())
    assert ok.returncode == 0, ok.stdout + ok.stderr
    report = json.loads(ok.stdout)
    assert report["provenance"]["ok"] and report["provenance"]["matched"], report["provenance"]

    refusals = {
        "another repository": ["--repo", "acx-example/other"],
        "another workflow": ["--repo", REPO_NAME, "--signer-workflow",
                             f"{REPO_NAME}/.github/workflows/nightly.yml"],
        "another ref": ["--repo", REPO_NAME, "--source-ref", "refs/heads/main"],
    }
    for why, flags in refusals.items():
        r = acx(*base, *flags, env=clean_env())
        assert r.returncode == 1, (why, r.stdout)
    other_issuer = acx("--json", "verify", subject, "--trust-config", str(sigstack_stack.trust_config),
                       "--certificate-oidc-issuer", sigstack_stack.env["SIGSTACK_SECOND_OIDC_URL"], *want,
                       env=clean_env())
    assert other_issuer.returncode == 1, other_issuer.stdout
    # gh's default issuer (GitHub's own) is not this stack's: refused as well
    assert acx("verify", subject, "--trust-config", str(sigstack_stack.trust_config), *want,
               env=clean_env()).returncode == 1

    # the one acceptance decision (install, verify --policy) with a policy requiring provenance
    pol = yaml.safe_load((tmp_path / "w" / "policy.yaml").read_text())
    wanted = {"repository": REPO_NAME, "ref": REF, "signerWorkflow": f"{REPO_NAME}/{WORKFLOW}"}
    cases = {"this run": (wanted, sigstack_stack.issuer, 0),
             "another repository": ({**wanted, "repository": "acx-example/other"}, sigstack_stack.issuer,
                                    8),
             "another workflow": ({**wanted, "signerWorkflow": f"{REPO_NAME}/.github/workflows/x.yml"},
                                  sigstack_stack.issuer, 8),
             "another issuer": (wanted, sigstack_stack.env["SIGSTACK_SECOND_OIDC_URL"], 8)}
    for name, (req, issuer, code) in cases.items():
        doc = {**pol, "provenance": req}
        if name == "this run":  # a ClientTrustConfig names the root as well as a trusted_root.json
            doc["attestations"] = {**pol["attestations"], "trustedRoot": str(sigstack_stack.trust_config)}
        doc["publishers"] = [{**pol["publishers"][0],
                              "identities": [{**pol["publishers"][0]["identities"][0], "issuer": issuer}]}]
        path = tmp_path / "w" / f"policy-{name.replace(' ', '-')}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        store = tmp_path / f"store-{name.replace(' ', '-')}"
        got = acx("--json", "install", subject, "--policy", str(path), "--store", str(store), env=clean_env())
        assert got.returncode == code, (name, got.stdout + got.stderr)
        if code:
            out = json.loads(got.stdout)
            kinds = {c["id"]: c["kind"] for c in out["refusal"]["failed"]}
            assert out["status"] == "refused" and kinds.get("provenance") == "provenance_unmet", (name, kinds)

    c = cosign3.run("verify-attestation", "--trusted-root", str(sigstack_stack.trusted_root), "--type", SLSA,
                    "--certificate-identity", f"https://github.com/{REPO_NAME}/{WORKFLOW}@{REF}",
                    "--certificate-oidc-issuer", sigstack_stack.issuer,
                    "--certificate-github-workflow-repository", REPO_NAME, subject, check=False)
    assert c.returncode == 0, c.stderr


def test_provenance_outside_a_ci_run_is_not_attached(distribution_registry: Registry,
                                                      sigstack_stack: SigStack, tmp_path: Path,
                                                      vectors_dir: Path) -> None:
    """Signing keylessly with a token file on a workstation: no run to describe, no provenance,
    and verify with a provenance requirement fails closed."""
    repository = f"{distribution_registry.host}/acx/local"
    plan = keyless_world(tmp_path / "w", vectors_dir, repository, sigstack_stack)
    doc = yaml.safe_load(plan.read_text())
    token = sigstack_stack.token_file(tmp_path / "token", "--github", REPO_NAME, REF, WORKFLOW, SHA)
    doc["inputs"]["keys"]["attestation"]["keyless"]["identityTokenFile"] = str(token)
    plan.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = acx("--json", "release", "run", str(plan), "--state-dir", str(tmp_path / "state"), env=clean_env())
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout)
    verify = next(e for e in out["effects"] if e["kind"] == "verify")
    subject = f"{repository}@{verify['evidence']['digest']}"
    r = acx("--json", "verify", subject, "--trust-config", str(sigstack_stack.trust_config),
            "--certificate-oidc-issuer", sigstack_stack.issuer, "--repo", REPO_NAME, env=clean_env())
    assert r.returncode == 1
    assert "no verified SLSA provenance" in r.stdout
