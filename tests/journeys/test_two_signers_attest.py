"""Journey: two signers attest one artifact (issue 28, "attestations are additive"), typed as a
release engineer and a security reviewer would: the publisher builds and pushes a cartridge, the
release key and the reviewer's key each run `acx attest` on it (the second without `--replace`),
stock cosign 2.5 and 3.1 verify BOTH signers' attestations, and a host's `acx verify REF --policy`
that requires one signer's attestations passes for each signer (and refuses for a key that never
attested, so the policy really asks for that key). Against a distribution registry and an OCI
layout; cosign reads no OCI layout, so the layout's attested artifact is copied to the registry
with `acx cp -r` (the offline-signing route) and cosign verifies that copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.cli import acx_json
from tests.harness.env import REPO
from tests.harness.peers import Cosign
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop

PUBLISHER = "dev.example.team"
CARTRIDGE_PREDICATE = "https://acx.dev/attestation/cartridge/v1"


def _ok(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out = acx_json(capsys, *args)
    assert code == 0, (args, json.dumps(out)[:3000])
    return out


def _policy(tmp: Path, capsys: pytest.CaptureFixture[str], name: str, attester: str) -> Path:
    """`acx policy init` for the publisher, edited as a host does to require legacy and bundle
    attestations signed by `attester`'s key."""
    path = tmp / f"policy-{name}.yaml"
    _ok(capsys, "policy", "init", "-o", str(path), "--publisher", PUBLISHER, "--trust-registry",
        str(tmp / "trust.json"))
    doc = yaml.safe_load(path.read_text())
    doc["attestations"] = {"formats": ["legacy", "bundle"],
                           "keys": [{"publicKeyFile": f"{attester}.pub.pem"}]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.timeout(300)
@pytest.mark.parametrize("where", ["registry", "layout"])
def test_two_signers_attest_one_artifact_and_cosign_2_and_3_verify_both(
        where: str, distribution_registry: Registry, cosign2: Cosign, cosign3: Cosign, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    registry_ref = f"{distribution_registry.host}/agents/reviewer:1.0.0"
    ref = registry_ref if where == "registry" else f"oci-layout:{tmp_path / 'published'}:1.0.0"

    # the publisher (signs the cartridge), the release key and a security reviewer (attest it)
    _ok(capsys, "key", "generate", "-o", "publisher.pem")
    _ok(capsys, "key", "trust", "publisher.pub.pem", "--publisher", PUBLISHER, "--trust-registry",
        "trust.json", "--not-before", "2026-01-01T00:00:00Z")
    _ok(capsys, "key", "generate", "-o", "release.pem")
    _ok(capsys, "key", "generate", "--type", "p256", "-o", "reviewer.pem")
    _ok(capsys, "key", "generate", "-o", "stranger.pem")
    _ok(capsys, "cartridge", "build", str(REPO / "examples" / "agent-package"), "-o", "agent.acx",
        "--publisher", PUBLISHER, "--key", "publisher.pem")
    digest = _ok(capsys, "push", "agent.acx", ref)["digest"]

    first = _ok(capsys, "attest", ref, "--key", "release.pem")
    second = _ok(capsys, "attest", ref, "--key", "reviewer.pem")  # no --replace: the first one stays
    assert first["predicateType"] == second["predicateType"] == CARTRIDGE_PREDICATE, second
    assert second["legacy"]["replacedLayers"] == 0 and second["replacedBundles"] == [], second

    if where == "layout":  # cosign reads registries only: publish the offline-attested artifact
        _ok(capsys, "cp", "-r", ref, registry_ref)
    subject = f"{registry_ref.rsplit(':', 1)[0]}@{digest}"
    for signer in ("release", "reviewer"):
        pub = tmp_path / f"{signer}.pub.pem"
        cosign2.verify_attestation(subject, pub, CARTRIDGE_PREDICATE)  # the legacy .att layers
        cosign2.verify_attestation(subject, pub, CARTRIDGE_PREDICATE, fmt="bundle")  # the bundle referrers
        cosign3.verify_attestation(subject, pub, CARTRIDGE_PREDICATE)  # 3.x: the bundle referrers
        cosign3.run("verify-attestation", "--key", str(pub), "--type", CARTRIDGE_PREDICATE,  # 3.x: the .att
                    "--insecure-ignore-tlog", "--new-bundle-format=false", subject)
    for never in (cosign2, cosign3):  # the checks above can fail: a key that never attested is refused
        assert never.verify_attestation(subject, tmp_path / "stranger.pub.pem", CARTRIDGE_PREDICATE,
                                        check=False).returncode != 0

    # the host: a policy requiring each signer's attestations accepts; one requiring a stranger's refuses
    for signer in ("release", "reviewer"):
        out = _ok(capsys, "verify", ref, "--policy", str(_policy(tmp_path, capsys, signer, signer)))
        assert out["ok"] is True and out["digest"] == digest, out
        att = next(c for c in out["checks"] if c["id"] == "attestations")
        assert att["status"] == "pass", att
    stranger = _policy(tmp_path, capsys, "stranger", "stranger")
    code, out = acx_json(capsys, "verify", ref, "--policy", str(stranger))
    assert code == 8 and [c["id"] for c in out["checks"] if c["status"] == "fail"] == ["attestations"], out
