"""The Sigstore client conformance suite's verification cases (shared folder, 70 cases), each run
through `acx verify-blob` in-process, offline: names ending `_fail` must be refused, every other
case must verify. The verdict must come from the verification, so a run that fails for an
unrelated reason (a usage error, a missing file) does not count as a correct refusal."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from acxoci.attestation.sigstore_verify import shipped_root_bytes
from tests.harness.cli import acx_json
from tests.harness.env import SHARED, missing

SUITE = SHARED / "conformance" / "sigstore-bundle-verify"
DEFAULT_IDENTITY = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
    ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
DEFAULT_ISSUER = "https://token.actions.githubusercontent.com"


def _cases() -> list[str]:
    if not SUITE.is_dir():
        return []
    return sorted(p.name for p in SUITE.iterdir() if (p / "bundle.sigstore.json").is_file())


def _text(path: Path, default: str) -> str:
    return path.read_text().strip() if path.is_file() else default


def case_args(case: Path, production_root: Path) -> list[str]:
    """The upstream protocol's arguments for one case, spelled with acx (cosign) flag names."""
    artifact = case / "artifact" if (case / "artifact").is_file() else SUITE / "a.txt"
    args = ["verify-blob", str(artifact), "--bundle", str(case / "bundle.sigstore.json")]
    root = case / "trusted_root.json"
    if (case / "key.pub").is_file():
        # A key-based bundle's log entry and timestamps are verified only against an explicit
        # root; the suite's default root is the public-good production one.
        args += [
            "--key",
            str(case / "key.pub"),
            "--trusted-root",
            str(root if root.is_file() else production_root),
        ]
        return args
    args += [
        "--certificate-identity",
        _text(case / "identity", DEFAULT_IDENTITY),
        "--certificate-oidc-issuer",
        _text(case / "issuer", DEFAULT_ISSUER),
    ]
    if root.is_file():
        args += ["--trusted-root", str(root)]
    return args


@pytest.fixture(scope="module")
def production_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("roots") / "production.json"
    path.write_bytes(shipped_root_bytes("production"))
    return path


def test_suite_is_complete() -> None:
    if not SUITE.is_dir():
        missing(f"conformance suite not found at {SUITE}")
    assert len(_cases()) == 70


@pytest.mark.parametrize("name", _cases())
def test_case(name: str, capsys: pytest.CaptureFixture[str], production_root: Path) -> None:
    case = SUITE / name
    code, out = acx_json(capsys, *case_args(case, production_root))
    if name.endswith("_fail"):
        assert code in (1, 3), (code, out)  # verification failed / malformed input, never a crash
        if code == 1:
            assert out["ok"] is False and out["verdict"] != "verified", out
    else:
        assert code == 0, out
        assert out["ok"] is True and out["verdict"] == "verified"
        if (case / "key.pub").is_file():
            assert any("verified against" in n for n in out["notes"]), out["notes"]
        else:
            assert out["signer"]["mode"] == "keyless"
            assert out["signer"]["certificateIdentity"] == _text(case / "identity", DEFAULT_IDENTITY)


def test_whole_suite_timing(capsys: pytest.CaptureFixture[str], production_root: Path) -> None:
    """All cases in one go, agreeing; the elapsed time goes into the report (not asserted tight)."""
    if not SUITE.is_dir():
        missing(f"conformance suite not found at {SUITE}")
    start = time.monotonic()
    agree = 0
    for name in _cases():
        code, _ = acx_json(capsys, *case_args(SUITE / name, production_root))
        agree += int((code == 0) != name.endswith("_fail"))
    elapsed = time.monotonic() - start
    print(f"sigstore conformance: {agree}/{len(_cases())} agree in {elapsed:.2f}s")
    assert agree == len(_cases())
    assert elapsed < 120
