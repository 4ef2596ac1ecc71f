"""The hostile review of keyless signing (issue 32), against the real Sigstore stack on loopback:

- F1: `verify-blob` binds the file: a genuine keyless DSSE bundle with a `messageSignature` added
  (or its log entry dropped as well) verifies no other file or digest; a bundle is decoded strictly
  before it is routed; a message signature must sign the file's digest; a timestamp-only v0.1
  bundle is refused.
- F2: a certificate whose SAN does not parse, planted as a bundle referrer or a keyless-looking
  `.att` layer, is one unverified attestation (never exit 70): the genuine one still verifies for
  `verify`, `verify --policy` and `install`, and `verify-blob` says why.
- F5: `--signer-workflow …/release.yml` is not met by a certificate from `release.yml@x.yml`.
- F6: with `GITLAB_CI=1` and `SIGSTORE_ID_TOKEN` set, acx does not sign as that variable's token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acxoci.attestation.sigstore_verify import COSIGN_CERTIFICATE
from tests.harness.attplant import att_layer, bad_san_certificate, der, pem, plant_bundle, set_att
from tests.harness.cli import acx_json, run_acx
from tests.harness.env import REPO
from tests.harness.peers import Cosign
from tests.harness.sigstack import SigStack, clean_env

pytestmark = pytest.mark.interop
PUBLISHER = "dev.acxoci.demo"
SLSA = "https://slsa.dev/provenance/v1"


def acx(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, cwd=REPO,
                          env=env or clean_env(), timeout=300, check=False)


def ident(stack: SigStack) -> list[str]:
    return ["--trust-config", str(stack.trust_config), "--certificate-identity", stack.identity,
            "--certificate-oidc-issuer", stack.issuer]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, sigstack_stack: SigStack) -> dict[str, Path]:
    """A file, its keyless bundles (logged; timestamp-only), a publisher key, its trust registry and a
    signed cartridge: made once for the module."""
    d = tmp_path_factory.mktemp("hostile")
    (d / "blob.txt").write_text("hello\n")
    (d / "evil.bin").write_text("attacker-chosen content\n")
    (d / "pred.json").write_text('{"a": 1}')
    token = sigstack_stack.token_file(d / "t.jwt")
    keyless = ["--identity-token-file", str(token), "--trust-config", str(sigstack_stack.trust_config)]
    for out, extra in (("logged.json", []), ("tsa.json", ["--tlog-upload=false"])):
        r = acx("-q", "attest-blob", str(d / "blob.txt"), "--predicate", str(d / "pred.json"), "--bundle",
                str(d / out), *keyless, *extra)
        assert r.returncode == 0, r.stdout + r.stderr
    for args in (("key", "generate", "-o", str(d / "k.pem")),
                 ("cartridge", "build", str(REPO / "examples/agent-package"), "-o", str(d / "a.acx"),
                  "--publisher", PUBLISHER, "--key", str(d / "k.pem"), "--now", "2026-11-30T00:00:00Z"),
                 ("key", "trust", str(d / "k.pub.pem"), "--publisher", PUBLISHER, "--trust-registry",
                  str(d / "trust.json"), "--not-before", "2026-01-01T00:00:00Z")):
        r = acx("-q", *args)
        assert r.returncode == 0, r.stdout + r.stderr
    return {"dir": d, "token": token, "blob": d / "blob.txt", "evil": d / "evil.bin",
            "logged": d / "logged.json", "tsa": d / "tsa.json", "acx": d / "a.acx", "trust": d / "trust.json"}


def variant(work: dict[str, Path], src: str, name: str, edit: Any) -> Path:
    doc = json.loads(work[src].read_text())
    edit(doc)
    out = work["dir"] / name
    out.write_text(json.dumps(doc))
    return out


def verify_blob(capsys: pytest.CaptureFixture[str], stack: SigStack, target: str,
                bundle: Path) -> tuple[int, Any]:
    return acx_json(capsys, "verify-blob", target, "--bundle", str(bundle), *ident(stack))


def test_verify_blob_binds_the_file_whatever_the_bundle_says(
        work: dict[str, Path], sigstack_stack: SigStack, capsys: pytest.CaptureFixture[str]) -> None:
    blob, evil = str(work["blob"]), str(work["evil"])
    zero = "sha256:" + "0" * 64
    for bundle in (work["tsa"], work["logged"]):
        assert verify_blob(capsys, sigstack_stack, blob, bundle)[0] == 0
        code, out = verify_blob(capsys, sigstack_stack, evil, bundle)
        assert code == 1 and any("does not match" in r for r in out["reasons"]), out

    def add_message(doc: dict[str, Any]) -> None:
        doc["messageSignature"] = {}

    def drop_log_add_message(doc: dict[str, Any]) -> None:
        doc["verificationMaterial"]["tlogEntries"] = []
        doc["messageSignature"] = {}

    def add_shaped_message(doc: dict[str, Any]) -> None:
        digest = base64.b64encode(hashlib.sha256(work["evil"].read_bytes()).digest()).decode()
        doc["messageSignature"] = {"messageDigest": {"algorithm": "SHA2_256", "digest": digest},
                                   "signature": doc["dsseEnvelope"]["signatures"][0]["sig"]}

    for name, src, edit in (("m1.json", "tsa", add_message), ("m2.json", "logged", drop_log_add_message),
                            ("m3.json", "tsa", add_shaped_message)):
        bad = variant(work, src, name, edit)
        for target in (evil, zero, blob):  # not even the genuine file: the bundle is malformed
            code, out = verify_blob(capsys, sigstack_stack, target, bad)
            assert code == 1 and out["verdict"] == "unverified", (name, target, out)
            assert any("exactly one of dsseEnvelope and messageSignature" in r for r in out["reasons"]), out

    # the logged bundle without its log entry is a valid timestamp-only bundle: still bound by its subject
    def drop_log(doc: dict[str, Any]) -> None:
        doc["verificationMaterial"]["tlogEntries"] = []

    tsa_only = variant(work, "logged", "nolog.json", drop_log)
    assert verify_blob(capsys, sigstack_stack, blob, tsa_only)[0] == 0
    assert verify_blob(capsys, sigstack_stack, evil, tsa_only)[0] == 1
    assert verify_blob(capsys, sigstack_stack, zero, tsa_only)[0] == 1

    def v01(doc: dict[str, Any]) -> None:
        doc["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.1"

    code, out = verify_blob(capsys, sigstack_stack, blob, variant(work, "tsa", "v01.json", v01))
    assert code == 1 and any("v0.1 bundle needs a transparency-log entry" in r for r in out["reasons"]), out


def test_a_keyless_message_signature_must_sign_the_file(
        work: dict[str, Path], sigstack_stack: SigStack, cosign3: Cosign,
        capsys: pytest.CaptureFixture[str]) -> None:
    """cosign 3's `sign-blob` bundle (a messageSignature): the file and its digest verify, another file
    or digest does not, logged or timestamp-only, and a messageDigest naming another file is refused."""
    out = work["dir"] / "signblob.json"
    cosign3.run("sign-blob", "--yes", "--signing-config", str(sigstack_stack.signing_config),
                "--trusted-root", str(sigstack_stack.trusted_root), "--identity-token", str(work["token"]),
                "--bundle", str(out), str(work["blob"]))
    doc = json.loads(out.read_text())
    assert "messageSignature" in doc and doc["verificationMaterial"]["timestampVerificationData"]
    digest = "sha256:" + hashlib.sha256(work["blob"].read_bytes()).hexdigest()
    work["signblob"] = out

    def drop_log(d: dict[str, Any]) -> None:
        d["verificationMaterial"]["tlogEntries"] = []

    tsa_only = variant(work, "signblob", "signblob-tsa.json", drop_log)
    for bundle in (out, tsa_only):
        assert verify_blob(capsys, sigstack_stack, str(work["blob"]), bundle)[0] == 0, bundle
        assert verify_blob(capsys, sigstack_stack, digest, bundle)[0] == 0, bundle
        assert verify_blob(capsys, sigstack_stack, str(work["evil"]), bundle)[0] == 1, bundle
        assert verify_blob(capsys, sigstack_stack, "sha256:" + "0" * 64, bundle)[0] == 1, bundle

    def other_digest(d: dict[str, Any]) -> None:
        d["verificationMaterial"]["tlogEntries"] = []
        d["messageSignature"]["messageDigest"]["digest"] = base64.b64encode(b"\0" * 32).decode()

    code, res = verify_blob(capsys, sigstack_stack, str(work["blob"]), variant(work, "signblob", "md.json",
                                                                                other_digest))
    assert code == 1 and any("messageDigest" in r for r in res["reasons"]), res


def _bad_cert_bundle(work: dict[str, Path], src: str, name: str) -> Path:
    raw = base64.b64encode(der(bad_san_certificate())).decode()

    def swap(doc: dict[str, Any]) -> None:
        doc["verificationMaterial"]["certificate"] = {"rawBytes": raw}

    return variant(work, src, name, swap)


def test_a_malformed_certificate_is_an_unverified_attestation_not_a_crash(
        work: dict[str, Path], sigstack_stack: SigStack, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for src in ("logged", "tsa"):
        bad = _bad_cert_bundle(work, src, f"badsan-{src}.json")
        code, out = verify_blob(capsys, sigstack_stack, str(work["blob"]), bad)
        assert code == 1 and any("malformed certificate" in r for r in out["reasons"]), out

    lay = f"oci-layout:{tmp_path / 'lay'}:v1"
    assert run_acx(capsys, "-q", "push", str(work["acx"]), lay).returncode == 0
    r = run_acx(capsys, "-q", "attest", lay, "--identity-token-file", str(work["token"]), "--trust-config",
                str(sigstack_stack.trust_config))
    assert r.returncode == 0, r.stdout + r.stderr
    plant_bundle(lay, _bad_cert_bundle(work, "logged", "planted.json").read_bytes())
    env = (b'{"payloadType":"application/vnd.in-toto+json","payload":"e30=",'
           b'"signatures":[{"keyid":"","sig":"AAAA"}]}')
    set_att(lay, [att_layer(env, {COSIGN_CERTIFICATE: pem(bad_san_certificate())})], (env,))

    code, out = acx_json(capsys, "verify", lay, *ident(sigstack_stack))
    assert code == 0, out
    planted = [a for a in out["attestations"] if a["verdict"] == "unverified"]
    assert len(planted) == 2 and all(any("malformed certificate" in r for r in a["reasons"]) for a in planted)

    policy = tmp_path / "policy.yaml"
    policy.write_text(f"""schemaVersion: acx.verification-policy/1
publishers:
  - id: {PUBLISHER}
    trustRegistries: [{work['trust']}]
    identities: [{{issuer: {sigstack_stack.issuer}, subject: {sigstack_stack.identity}}}]
attestations: {{formats: [bundle], trustedRoot: {sigstack_stack.trusted_root}}}
""")
    code, out = acx_json(capsys, "verify", lay, "--policy", str(policy))
    assert code == 0, out
    monkeypatch.setenv("ACX_STORE", str(tmp_path / "store"))
    code, out = acx_json(capsys, "install", lay, "--policy", str(policy))
    assert code == 0, out


PREDICATE = {"buildDefinition": {
    "buildType": "https://actions.github.io/buildtypes/workflow/v1",
    "externalParameters": {"workflow": {"ref": "refs/heads/main", "repository": "https://github.com/acx-example/agents",
                                        "path": ".github/workflows/release.yml"}},
    "resolvedDependencies": [{"uri": "git+https://github.com/acx-example/agents@refs/heads/main",
                              "digest": {"gitCommit": "1" * 40}}]},
    "runDetails": {"builder": {"id": "https://github.com/acx-example/agents/.github/workflows/release.yml"
                                      "@refs/heads/main"}}}


@pytest.mark.parametrize(("workflow", "rc"), [(".github/workflows/release.yml", 0),
                                              (".github/workflows/release.yml@x.yml", 1)])
def test_signer_workflow_is_the_workflow_file_not_a_prefix_of_it(
        work: dict[str, Path], sigstack_stack: SigStack, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        workflow: str, rc: int) -> None:
    lay = f"oci-layout:{tmp_path / 'lay'}:v1"
    assert run_acx(capsys, "-q", "push", str(work["acx"]), lay).returncode == 0
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps(PREDICATE))
    token = sigstack_stack.token_file(tmp_path / "t.jwt", "--github", "acx-example/agents", "refs/heads/main",
                                      workflow, "1" * 40)
    r = run_acx(capsys, "-q", "attest", lay, "--type", SLSA, "--predicate", str(pred),
                "--identity-token-file", str(token), "--trust-config", str(sigstack_stack.trust_config))
    assert r.returncode == 0, r.stdout + r.stderr
    code, out = acx_json(capsys, "verify", lay, "--trust-config", str(sigstack_stack.trust_config),
                         "--certificate-oidc-issuer", sigstack_stack.issuer, "--repo", "acx-example/agents",
                         "--source-ref", "refs/heads/main", "--signer-workflow",
                         "acx-example/agents/.github/workflows/release.yml")
    assert code == rc, out


def test_a_token_in_an_environment_variable_is_never_used(
        work: dict[str, Path], sigstack_stack: SigStack, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """GitLab CI's `id_tokens` arrive as variables; acx signs with no token it did not get from a
    file, a token endpoint or a person (decision 0034): a usage error, nothing written."""
    for var in ("GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GITLAB_CI", "true")
    other = sigstack_stack.token("--github", "acx-example/other", "refs/heads/main",
                                 ".github/workflows/release.yml", "2" * 40)
    monkeypatch.setenv("SIGSTORE_ID_TOKEN", other)
    out = tmp_path / "o.json"
    code, res = acx_json(capsys, "attest-blob", str(work["blob"]), "--predicate",
                         str(work["dir"] / "pred.json"), "--bundle", str(out), "--trust-config",
                         str(sigstack_stack.trust_config))
    assert code == 2 and res["error"]["kind"] == "usage", res
    assert "environment variable" in res["error"]["hint"] and not out.exists()
