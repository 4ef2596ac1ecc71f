"""Smoke tests: every fixture works with the real binaries. oras pushes and pulls on every
registry kind and on a layout; cosign 2 and 3 attest and verify offline with a fresh key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from tests.harness.peers import Cosign, Oras
from tests.harness.servers import Registry

pytestmark = pytest.mark.interop


def _push_pull(oras: Oras, ref: str, work: Path, *, flags: list[str]) -> None:
    src = work / "payload.bin"
    src.write_bytes(b"acxoci smoke " * 100)
    oras.run("push", *flags, "--artifact-type", "application/vnd.acx.test.v1", ref,
             "payload.bin:application/octet-stream", cwd=work)
    out = work / "out"
    out.mkdir()
    oras.run("pull", *flags, "-o", str(out), ref)
    assert (out / "payload.bin").read_bytes() == src.read_bytes()


def test_oras_push_pull_every_registry(any_registry: Registry, any_oras: Oras, tmp_path: Path) -> None:
    _push_pull(any_oras, f"{any_registry.host}/smoke/a:v1", tmp_path, flags=["--plain-http"])


def test_oras_push_pull_layout(oci_layout: Path, oras13: Oras, tmp_path: Path) -> None:
    _push_pull(oras13, f"{oci_layout}:v1", tmp_path, flags=["--oci-layout"])
    index = json.loads((oci_layout / "index.json").read_text())
    assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == "v1"


def test_referrers_api_only_on_refreg(any_registry: Registry, oras13: Oras, tmp_path: Path) -> None:
    ref = f"{any_registry.host}/smoke/r:v1"
    (tmp_path / "f.txt").write_text("x")
    oras13.run("push", "--plain-http", ref, "f.txt", cwd=tmp_path)
    digest = oras13.run("resolve", "--plain-http", ref).stdout.strip()
    r = requests.get(f"{any_registry.url}/v2/smoke/r/referrers/{digest}", timeout=5)
    assert (r.status_code == 200) == any_registry.has_referrers_api


def test_basic_auth_registry(distribution_registry_basic: Registry, oras13: Oras, tmp_path: Path) -> None:
    reg = distribution_registry_basic
    assert requests.get(f"{reg.url}/v2/", timeout=5).status_code == 401
    assert requests.get(f"{reg.url}/v2/", auth=(reg.username or "", reg.password or ""), timeout=5).ok
    _push_pull(oras13, f"{reg.host}/smoke/b:v1", tmp_path,
               flags=["--plain-http", "-u", reg.username or "", "-p", reg.password or ""])


def test_tls_registry(distribution_registry_tls: Registry) -> None:
    reg = distribution_registry_tls
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{reg.url}/v2/", timeout=5)
    assert requests.get(f"{reg.url}/v2/", verify=str(reg.ca_path), timeout=5).status_code == 200


@pytest.mark.parametrize("fmt", ["legacy", "bundle"])
@pytest.mark.parametrize("which", ["cosign2", "cosign3"])
def test_cosign_attest_verify_offline(which: str, fmt: str, request: pytest.FixtureRequest,
                                      distribution_registry: Registry, oras13: Oras, tmp_path: Path) -> None:
    cosign: Cosign = request.getfixturevalue(which)
    ref = f"{distribution_registry.host}/smoke/c:v1"
    (tmp_path / "f.txt").write_text("hello")
    oras13.run("push", "--plain-http", "--artifact-type", "application/vnd.acx.test.v1", ref, "f.txt",
               cwd=tmp_path)
    digest = oras13.run("resolve", "--plain-http", ref).stdout.strip()
    key, pub = cosign.generate_key_pair(tmp_path)
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"hello": "world"}))
    ptype = "https://acx.dev/attestation/test/v1"
    subject = f"{distribution_registry.host}/smoke/c@{digest}"
    cosign.attest(subject, key, ptype, pred, fmt=fmt)
    verify_fmt = "bundle" if fmt == "bundle" else "default"
    cosign.verify_attestation(subject, pub, ptype, fmt=verify_fmt)
    wrong = cosign.verify_attestation(subject, pub, "https://acx.dev/other/v1", fmt=verify_fmt, check=False)
    assert wrong.returncode != 0
