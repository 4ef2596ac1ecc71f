"""A `--now` before the day a trust file was written judges its keys at that time (a namespace
proof verified later: the key is not yet vouched for, so portable), never voids the whole file:
`cartridge verify --trust-registry`, and a verification policy naming the file, read alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acxoci.install.vpolicy import load_policy
from tests.harness.cli import acx_json
from tests.harness.env import REPO

PAST = "2026-06-01T00:00:00Z"


@pytest.fixture
def dated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A cartridge signed 2026-03-01 by a key its trust file vouched for today (`key trust`)."""
    key = str(tmp_path / "k.pem")
    assert acx_json(capsys, "key", "generate", "-o", key)[0] == 0
    trust = ["--trust-registry", str(tmp_path / "trust.json"), "--not-before", "2026-01-01T00:00:00Z"]
    assert acx_json(capsys, "key", "trust", str(tmp_path / "k.pub.pem"), "--publisher", "dev.example.dates",
                    *trust)[0] == 0
    assert acx_json(capsys, "cartridge", "build", str(REPO / "examples" / "agent-package"), "-o",
                    str(tmp_path / "a.acx"), "--publisher", "dev.example.dates", "--key", key,
                    "--now", "2026-03-01T00:00:00Z")[0] == 0
    return tmp_path


def test_cartridge_verify_before_the_proof_is_portable_not_an_invalid_file(
    dated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = acx_json(capsys, "cartridge", "verify", str(dated / "a.acx"), "--trust-registry",
                         str(dated / "trust.json"), "--now", PAST)
    assert code == 0 and out["trust"] == "portable", out
    assert out["issues"] == ["namespace proof verifiedAt is in the future"]
    code, out = acx_json(capsys, "cartridge", "verify", str(dated / "a.acx"), "--trust-registry",
                         str(dated / "trust.json"))  # today, after the proof
    assert code == 0 and out["trust"] == "trusted", out


def test_a_policy_naming_the_file_loads_at_an_earlier_time(dated: Path) -> None:
    (dated / "policy.json").write_text(json.dumps({
        "schemaVersion": "acx.verification-policy/1",
        "publishers": [{"id": "dev.example.dates", "trustRegistries": ["trust.json"]}],
    }))
    policy = load_policy(dated / "policy.json", now=datetime(2026, 6, 1, tzinfo=UTC))
    assert [k.publisher_id for p in policy.publishers for k in p.registry.keys] == ["dev.example.dates"]
