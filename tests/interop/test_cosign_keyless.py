"""Keyless bundles from a test Sigstore instance (tests/harness/sigstore_pki.py), judged by the
real cosign 3 (`verify-blob-attestation --trusted-root`) and by `acx verify-blob`: both accept
the good one and both refuse a wrong identity, a wrong issuer, a certificate expired at its
logged time, and a bundle with no signed time. Offline: the trusted root is a file."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pytest

from tests.harness.cli import acx_json
from tests.harness.peers import Cosign
from tests.harness.sigstore_pki import GITHUB_ISSUER, FakeSigstore

pytestmark = pytest.mark.interop
RELEASE = "https://github.com/example-acx/carts/.github/workflows/release.yml@refs/tags/v1.0.0"
T = "https://acx.dev/attestation/test/v1"


@pytest.mark.parametrize(
    ("case", "identity", "issuer", "accepted"),
    [
        ("good", RELEASE, GITHUB_ISSUER, True),
        ("wrong-identity", RELEASE.replace("v1.0.0", "v2.0.0"), GITHUB_ISSUER, False),
        ("wrong-issuer", RELEASE, "https://accounts.google.com", False),
        ("expired", RELEASE, GITHUB_ISSUER, False),
        ("no-signed-time", RELEASE, GITHUB_ISSUER, False),
    ],
)
def test_cosign_and_acx_agree_on_keyless(
    tmp_path: Path,
    cosign3: Cosign,
    capsys: pytest.CaptureFixture[str],
    case: str,
    identity: str,
    issuer: str,
    accepted: bool,
) -> None:
    fake = FakeSigstore()
    art = tmp_path / "art.txt"
    art.write_bytes(b"keyless release artifact\n")
    statement = json.dumps(
        {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [
                {"name": "art.txt", "digest": {"sha256": hashlib.sha256(art.read_bytes()).hexdigest()}}
            ],
            "predicateType": T,
            "predicate": {"n": 1},
        }
    ).encode()
    kw: dict[str, object] = {}
    if case == "expired":
        kw["integrated"] = fake.start + timedelta(hours=1)
    if case == "no-signed-time":
        kw["promise"] = False
    bundle = tmp_path / "b.json"
    bundle.write_bytes(fake.dsse_bundle(statement, RELEASE, **kw))  # type: ignore[arg-type]
    root = tmp_path / "root.json"
    root.write_bytes(fake.trusted_root_bytes())
    flags = ["--certificate-identity", identity, "--certificate-oidc-issuer", issuer]
    r = cosign3.run(
        "verify-blob-attestation",
        "--bundle",
        str(bundle),
        "--trusted-root",
        str(root),
        *flags,
        "--type",
        T,
        str(art),
        check=False,
    )
    code, out = acx_json(
        capsys,
        "verify-blob",
        str(art),
        "--bundle",
        str(bundle),
        "--trusted-root",
        str(root),
        *flags,
        "--type",
        T,
    )
    assert (r.returncode == 0) is accepted, (r.stdout, r.stderr)
    assert (code == 0) is accepted, out
