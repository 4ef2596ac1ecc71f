"""Attestations are additive (issue 28): two publishers attest one artifact with their own keys and
stock cosign 2.5 (the `.att` layers) and cosign 3.1 (the bundle referrers) verify each of them;
`--replace` removes only the signer's own earlier attestations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.env import REPO
from tests.harness.peers import Cosign
from tests.harness.servers import Registry
from tests.harness.sigstack import clean_env

pytestmark = pytest.mark.interop
CARTRIDGE = "https://acx.dev/attestation/cartridge/v1"


def acx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, cwd=REPO,
                          env=clean_env(), timeout=300, check=False)


def test_two_signers_both_verify_with_cosign_2_and_3(distribution_registry: Registry, cosign2: Cosign,
                                                      cosign3: Cosign, tmp_path: Path) -> None:
    alice, bob = tmp_path / "alice.pem", tmp_path / "bob.pem"
    assert acx("-q", "key", "generate", "-o", str(alice)).returncode == 0
    assert acx("-q", "key", "generate", "--type", "p256", "-o", str(bob)).returncode == 0
    cart = tmp_path / "a.acx"
    r = acx("-q", "cartridge", "build", str(REPO / "examples/agent-package"), "-o", str(cart),
            "--publisher", "dev.acxoci.demo", "--key", str(alice), "--created-at", "2026-11-30T00:00:00Z")
    assert r.returncode == 0, r.stderr
    pushed = acx("--json", "push", str(cart), f"{distribution_registry.host}/acx/two:v1", "--sign",
                 "--key", str(alice))
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    subject = f"{distribution_registry.host}/acx/two@{json.loads(pushed.stdout)['digest']}"
    second = acx("--json", "attest", subject, "--key", str(bob))
    assert second.returncode == 0, second.stdout + second.stderr
    assert json.loads(second.stdout)["legacy"]["replacedLayers"] == 0
    for pub in (tmp_path / "alice.pub.pem", tmp_path / "bob.pub.pem"):
        cosign2.verify_attestation(subject, pub, CARTRIDGE)
        cosign2.verify_attestation(subject, pub, CARTRIDGE, fmt="bundle")
        cosign3.verify_attestation(subject, pub, CARTRIDGE)
        assert acx("verify", subject, "--key", str(pub)).returncode == 0
    # bob replaces his own: alice's attestations stay, bob's one is new
    again = acx("--json", "attest", subject, "--key", str(bob), "--replace")
    assert again.returncode == 0, again.stdout
    doc = json.loads(again.stdout)
    assert doc["legacy"]["replacedLayers"] == 1
    for pub in (tmp_path / "alice.pub.pem", tmp_path / "bob.pub.pem"):
        cosign2.verify_attestation(subject, pub, CARTRIDGE)
        cosign3.verify_attestation(subject, pub, CARTRIDGE)
