"""`acx push --sign --key K` pushes and attests in one step: stock cosign 2.5 (default and
--new-bundle-format) and cosign 3 verify the result on a real registry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.env import REPO
from tests.harness.peers import Cosign
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop
PTYPE = "https://acx.dev/attestation/cartridge/v1"


def acx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acxoci", *args], capture_output=True, text=True, cwd=REPO)


def test_push_sign_is_cosign_verifiable(distribution_registry: Registry, cosign2: Cosign, cosign3: Cosign,
                                        tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    assert acx("-q", "key", "generate", "-o", str(key)).returncode == 0
    cart = tmp_path / "a.acx"
    r = acx("-q", "cartridge", "build", str(REPO / "examples/agent-package"), "-o", str(cart),
            "--publisher", "dev.acxoci.demo", "--key", str(key), "--created-at", "2026-11-30T00:00:00Z")
    assert r.returncode == 0, r.stderr
    ref = f"{distribution_registry.host}/acx/signed:v1"
    out = acx("--json", "push", str(cart), ref, "--sign", "--key", str(key))
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    assert doc["attestation"]["legacy"] and doc["attestation"]["bundleReferrer"]
    subject = f"{distribution_registry.host}/acx/signed@{doc['digest']}"
    pub = tmp_path / "k.pub.pem"
    cosign2.verify_attestation(subject, pub, PTYPE)
    cosign2.verify_attestation(subject, pub, PTYPE, fmt="bundle")
    cosign3.verify_attestation(subject, pub, PTYPE)
    assert cosign3.verify_attestation(subject, pub, "https://acx.dev/other/v1", check=False).returncode != 0


def test_sign_without_key_is_a_usage_error(tmp_path: Path, vectors_dir: Path) -> None:
    cart = tmp_path / "x.acx"  # a real, readable cartridge: only the missing key can be refused
    cart.write_bytes((vectors_dir / "sample" / "sample.acx").read_bytes())
    r = acx("--json", "push", str(cart), "oci-layout:" + str(tmp_path / "l") + ":v1", "--sign")
    assert r.returncode == 2, r.stdout + r.stderr
    err = json.loads(r.stdout)["error"]
    assert err["kind"] == "usage" and "key" in err["message"].lower(), err
    assert not (tmp_path / "l").exists()  # never a push
