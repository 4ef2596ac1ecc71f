"""Keyless signing against the real Sigstore stack on loopback (Fulcio, Rekor v2, timestamp
authority; stand-in OIDC issuers and CT log): acx's keyless attestations of a cartridge in a
registry and in a layout verify with acx, stock cosign 3.1 and the sigstore-go verifier, and what
cosign 3.1 attests keylessly acx verifies; each refuses the wrong identity or issuer."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.env import REPO
from tests.harness.peers import Cosign
from tests.harness.servers import Registry
from tests.harness.sigstack import SigStack, clean_env

pytestmark = pytest.mark.interop
CARTRIDGE = "https://acx.dev/attestation/cartridge/v1"


def acx(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, cwd=REPO,
                          env=env or clean_env(), timeout=300, check=False)


@pytest.fixture(scope="module")
def cartridge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cart")
    key = d / "k.pem"
    assert acx("-q", "key", "generate", "-o", str(key)).returncode == 0
    out = d / "a.acx"
    r = acx("-q", "cartridge", "build", str(REPO / "examples/agent-package"), "-o", str(out),
            "--publisher", "dev.acxoci.demo", "--key", str(key), "--created-at", "2026-11-30T00:00:00Z")
    assert r.returncode == 0, r.stderr
    return out


def keyless_flags(stack: SigStack, tmp: Path, *extra: str) -> list[str]:
    return ["--identity-token-file", str(stack.token_file(tmp / "token", *extra)),
            "--trust-config", str(stack.trust_config)]


def verify_flags(stack: SigStack, identity: str | None = None, issuer: str | None = None) -> list[str]:
    return ["--certificate-identity", identity or stack.identity,
            "--certificate-oidc-issuer", issuer or stack.issuer, "--trusted-root", str(stack.trusted_root)]


def test_keyless_attest_in_a_registry_verifies_with_acx_cosign3_and_sigstore_go(
        distribution_registry: Registry, cartridge: Path, sigstack_stack: SigStack, cosign3: Cosign,
        sigstore_go_verifier: Path, tmp_path: Path) -> None:
    ref = f"{distribution_registry.host}/acx/keyless:v1"
    r = acx("--json", "push", str(cartridge), ref, "--sign", *keyless_flags(sigstack_stack, tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    pushed = json.loads(r.stdout)
    att = pushed["attestation"]
    assert att["keyId"] == f"keyless:{sigstack_stack.identity}"
    assert att["bundleReferrer"] and att["legacy"] is None  # keyless default: the bundle, as cosign 3
    subject = f"{distribution_registry.host}/acx/keyless@{pushed['digest']}"

    ok = acx("--json", "verify", subject, *verify_flags(sigstack_stack))
    assert ok.returncode == 0, ok.stdout
    report = json.loads(ok.stdout)
    signer = next(a["signer"] for a in report["attestations"] if a["verdict"] == "verified")
    assert signer["certificateIssuer"] == sigstack_stack.issuer and signer["logIndex"] is not None
    assert any("timestamp_authority" in t for t in signer["verifiedTimes"])
    second = sigstack_stack.env["SIGSTACK_SECOND_OIDC_URL"]
    wrong = acx("--json", "verify", subject, *verify_flags(sigstack_stack, issuer=second))
    assert wrong.returncode == 1

    args = ["verify-attestation", "--trusted-root", str(sigstack_stack.trusted_root), "--type", CARTRIDGE,
            "--certificate-identity", sigstack_stack.identity]
    good = cosign3.run(*args, "--certificate-oidc-issuer", sigstack_stack.issuer, subject, check=False)
    assert good.returncode == 0, good.stderr
    bad = cosign3.run(*args, "--certificate-oidc-issuer", "https://token.actions.githubusercontent.com",
                      subject, check=False)
    assert bad.returncode != 0

    # the sigstore-go verifier on the bundle layer itself, against the statement's subject digest
    bundle = _bundle_layer(distribution_registry, "acx/keyless", att["bundleReferrer"])
    bpath = tmp_path / "bundle.json"
    bpath.write_bytes(bundle)
    sgv = [str(sigstore_go_verifier), "-trustedrootJSONpath", str(sigstack_stack.trusted_root),
           "-expectedSAN", sigstack_stack.identity, "-artifact-digest", pushed["digest"].split(":")[1]]
    r1 = subprocess.run([*sgv, "-expectedIssuer", sigstack_stack.issuer, str(bpath)], capture_output=True,
                        text=True, timeout=60, check=False)
    assert r1.returncode == 0, r1.stdout + r1.stderr
    r2 = subprocess.run([*sgv, "-expectedIssuer", "https://elsewhere.test", str(bpath)], capture_output=True,
                        text=True, timeout=60, check=False)
    assert r2.returncode != 0


def _bundle_layer(reg: Registry, repo: str, manifest_digest: str) -> bytes:
    import requests

    m = requests.get(f"{reg.url}/v2/{repo}/manifests/{manifest_digest}",
                     headers={"Accept": "application/vnd.oci.image.manifest.v1+json"}, timeout=10).json()
    layer = m["layers"][0]["digest"]
    return requests.get(f"{reg.url}/v2/{repo}/blobs/{layer}", timeout=10).content


def test_keyless_attest_in_a_layout_and_a_wrong_identity_is_refused(
        cartridge: Path, sigstack_stack: SigStack, tmp_path: Path) -> None:
    lay = f"oci-layout:{tmp_path / 'lay'}:v1"
    assert acx("-q", "push", str(cartridge), lay).returncode == 0
    r = acx("--json", "attest", lay, *keyless_flags(sigstack_stack, tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert acx("verify", lay, *verify_flags(sigstack_stack)).returncode == 0
    other = sigstack_stack.identity.replace("acx-example/agents", "acx-example/other")
    refused = acx("--json", "verify", lay, *verify_flags(sigstack_stack, identity=other))
    assert refused.returncode == 1
    assert "matches none of" in refused.stdout


def test_cosign3_keyless_attestation_verifies_with_acx(
        distribution_registry: Registry, cartridge: Path, sigstack_stack: SigStack, cosign3: Cosign,
        tmp_path: Path) -> None:
    ref = f"{distribution_registry.host}/acx/bycosign:v1"
    pushed = json.loads(acx("--json", "push", str(cartridge), ref).stdout)
    subject = f"{distribution_registry.host}/acx/bycosign@{pushed['digest']}"
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"builder": "cosign-3-keyless"}))
    token = sigstack_stack.token_file(tmp_path / "token")
    cosign3.run("attest", "--yes", "--signing-config", str(sigstack_stack.signing_config),
                "--trusted-root", str(sigstack_stack.trusted_root), "--identity-token", str(token),
                "--type", "https://acx.dev/attestation/test/v1", "--predicate", str(pred), subject)
    ok = acx("--json", "verify", subject, *verify_flags(sigstack_stack), "--type",
             "https://acx.dev/attestation/test/v1")
    assert ok.returncode == 0, ok.stdout
    second = sigstack_stack.env["SIGSTACK_SECOND_OIDC_URL"]
    wrong = acx("--json", "verify", subject, *verify_flags(sigstack_stack, issuer=second),
                "--type", "https://acx.dev/attestation/test/v1")
    assert wrong.returncode == 1


def test_keyless_attest_blob_tsa_only_verifies_with_acx_and_cosign3(
        sigstack_stack: SigStack, cosign3: Cosign, sigstore_go_verifier: Path, tmp_path: Path) -> None:
    art = tmp_path / "notes.txt"
    art.write_text("release notes\n")
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps({"n": 1}))
    out = tmp_path / "b.json"
    r = acx("--json", "attest-blob", str(art), "--predicate", str(pred), "--type", "https://acx.dev/t/v1",
            "--bundle", str(out), "--tlog-upload=false", *keyless_flags(sigstack_stack, tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["verificationMaterial"]["tlogEntries"] == []
    assert doc["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"]
    v = acx("--json", "verify-blob", str(art), "--bundle", str(out), *verify_flags(sigstack_stack))
    assert v.returncode == 0, v.stdout
    c = cosign3.run("verify-blob-attestation", "--bundle", str(out), "--trusted-root",
                    str(sigstack_stack.trusted_root), "--certificate-identity", sigstack_stack.identity,
                    "--certificate-oidc-issuer", sigstack_stack.issuer, "--type", "https://acx.dev/t/v1",
                    "--use-signed-timestamps", "--insecure-ignore-tlog", str(art), check=False)
    assert c.returncode == 0, c.stderr
    sgv = subprocess.run([str(sigstore_go_verifier), "-trustedrootJSONpath", str(sigstack_stack.trusted_root),
                          "-expectedSAN", sigstack_stack.identity, "-expectedIssuer", sigstack_stack.issuer,
                          "-requireTlog=false",
                          "-artifact-digest", hashlib.sha256(art.read_bytes()).hexdigest(),
                          str(out)], capture_output=True, text=True, timeout=60, check=False)
    assert sgv.returncode == 0, sgv.stdout + sgv.stderr
    tampered = tmp_path / "t.txt"
    tampered.write_text("release notes!\n")
    refused = acx("verify-blob", str(tampered), "--bundle", str(out), *verify_flags(sigstack_stack))
    assert refused.returncode == 1


def test_keyless_legacy_att_verifies_with_cosign2_and_cosign3(
        distribution_registry: Registry, cartridge: Path, sigstack_stack: SigStack, cosign2: Cosign,
        cosign3: Cosign, tmp_path: Path) -> None:
    """`--format legacy` keyless: cosign 2's `.att` layout, the certificate and an RFC 3161 timestamp
    in the layer's annotations (no Rekor v2 entry fits there), verified by cosign 2.5 and 3.1 with
    the stack's roots given as cosign 2 takes them (environment files, TSA chain flag) and by acx."""
    import requests

    ref = f"{distribution_registry.host}/acx/legacy:v1"
    pushed = json.loads(acx("--json", "push", str(cartridge), ref).stdout)
    subject = f"{distribution_registry.host}/acx/legacy@{pushed['digest']}"
    r = acx("--json", "attest", subject, "--format", "legacy", *keyless_flags(sigstack_stack, tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["legacy"]["tag"]
    assert acx("verify", subject, *verify_flags(sigstack_stack)).returncode == 0
    fulcio = tmp_path / "fulcio.pem"
    chain = requests.get(f"{sigstack_stack.env['SIGSTACK_FULCIO_URL']}/api/v2/trustBundle", timeout=10).json()
    fulcio.write_text("".join(chain["chains"][0]["certificates"]))
    tsa = tmp_path / "tsa.pem"
    tsa.write_text(requests.get(f"{sigstack_stack.env['SIGSTACK_TSA_URL']}/api/v1/timestamp/certchain",
                                timeout=10).text)
    roots = {"SIGSTORE_ROOT_FILE": str(fulcio),
             "SIGSTORE_CT_LOG_PUBLIC_KEY_FILE": str(sigstack_stack.dir / "ctlog-pub.pem")}
    args = ["verify-attestation", "--certificate-oidc-issuer", sigstack_stack.issuer,
            "--insecure-ignore-tlog", "--timestamp-certificate-chain", str(tsa), "--type", CARTRIDGE]
    for cosign, extra in ((cosign2, []), (cosign3, ["--new-bundle-format=false"])):
        ok = cosign.run(*args, *extra, "--certificate-identity", sigstack_stack.identity, subject, env=roots,
                        check=False)
        assert ok.returncode == 0, (cosign.name, ok.stderr)
        bad = cosign.run(*args, *extra, "--certificate-identity", sigstack_stack.identity + "x", subject,
                         env=roots, check=False)
        assert bad.returncode != 0, cosign.name
