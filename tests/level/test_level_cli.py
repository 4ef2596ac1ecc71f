"""`acx level …` and `acx status-list …` through the real CLI entry point (in-process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acxoci.cli import main as cli_main
from acxoci.cli.output import OPTS
from tests.harness.trustdocs import make_level_verifier

ISSUER = "did:web:verifier.example"
LIST_ID = "https://status.example/lists/7"
NOW = "2026-08-01T12:00:00Z"
LATER = "2026-08-01T13:00:00Z"


@pytest.fixture(autouse=True)
def _reset_opts() -> Iterator[None]:
    yield
    OPTS.json = OPTS.verbose = OPTS.quiet = False


def acx(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    OPTS.json = OPTS.verbose = OPTS.quiet = False
    with pytest.raises(SystemExit) as exc:
        cli_main.main(["--json", *args])
    out = capsys.readouterr().out
    return int(exc.value.code or 0), json.loads(out) if out.strip() else None


@pytest.fixture
def setup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    v = make_level_verifier(capsys, tmp_path, issuer=ISSUER, list_id=LIST_ID, now=NOW)
    bench = json.loads(v["bench"].read_text())
    assert bench["digest"] == "sha256:019fc517108a721b9bfc83e9a8d61c5011c29894c43a361c35fdacb2c783e900"
    return v


def test_issue_verify_revoke_cycle(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str], vectors_dir: Path
) -> None:
    d = setup["dir"]
    ada = vectors_dir / "reference" / "ada-ridge.acx"
    rex = vectors_dir / "reference" / "rex-calder.acx"
    code, out = acx(capsys, "level", "run", str(rex), "--bench", str(setup["bench"]), "--competence", "24")
    assert code == 0 and (out["mu"], out["sigma"], out["level"], out["tier"]) == (21.98, 1.267, 18, "senior")
    common = [
        "--bench",
        str(setup["bench"]),
        "--issuer",
        ISSUER,
        "--issuer-key",
        str(d / "issuer.pem"),
        "--status-list",
        str(d / "sl.json"),
        "--attempt-log",
        str(d / "attempts.jsonl"),
        "--now",
        NOW,
    ]
    code, out = acx(capsys, "level", "issue", str(ada), *common, "-o", str(d / "ada.vc.json"))
    assert code == 0, out
    assert out["level"] == 28 and out["statusListIndex"] == 0
    verify = [
        "--issuers",
        str(d / "issuers.json"),
        "--status-list",
        str(d / "sl.json"),
        "--now",
        LATER,
        "--cache-dir",
        str(d / "cache"),
    ]
    code, out = acx(capsys, "level", "verify", str(d / "ada.vc.json"), "--cartridge", str(ada), *verify)
    assert code == 0 and out["state"] == "verified" and out["proofVariant"] == "w3c"
    code, out = acx(capsys, "level", "verify", str(d / "ada.vc.json"), "--cartridge", str(rex), *verify)
    assert code == 1 and any(r.startswith("ROM digest binding mismatch") for r in out["reasons"])
    code, out = acx(
        capsys,
        "level",
        "revoke",
        str(d / "ada.vc.json"),
        "--status-list",
        str(d / "sl.json"),
        "--issuer-key",
        str(d / "issuer.pem"),
        "--now",
        NOW,
    )
    assert code == 0 and out["index"] == 0
    code, out = acx(capsys, "level", "verify", str(d / "ada.vc.json"), "--cartridge", str(ada), *verify)
    assert code == 1 and out["state"] == "revoked"
    code, out = acx(
        capsys,
        "status-list",
        "show",
        str(d / "sl.json"),
        "--index",
        "0",
        "--issuers",
        str(d / "issuers.json"),
        "--now",
        LATER,
    )
    assert code == 0 and out["set"] == [0] and out["index"]["set"] is True and out["verifiedBy"]


def test_gate_failure_exits_nonzero_with_numbers_and_cools_down(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str], vectors_dir: Path
) -> None:
    d = setup["dir"]
    ada = vectors_dir / "reference" / "ada-ridge.acx"
    common = [
        "--bench",
        str(setup["bench"]),
        "--issuer",
        ISSUER,
        "--issuer-key",
        str(d / "issuer.pem"),
        "--status-list",
        str(d / "sl.json"),
        "--attempt-log",
        str(d / "attempts.jsonl"),
        "--now",
        NOW,
    ]
    code, out = acx(capsys, "level", "issue", str(ada), *common, "--draws", "20")
    assert code == 8
    assert (
        "gating failed: sigma=" in out["error"]["message"]
        and "games=20 (>=30? no)" in out["error"]["message"]
    )
    code, out = acx(capsys, "level", "issue", str(ada), *common)
    assert code == 8 and out["error"]["message"].startswith("cooldown:")
    lines = (d / "attempts.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["outcome"] == "gate-failed"


def test_verify_needs_a_binding(setup: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    d = setup["dir"]
    code, out = acx(capsys, "level", "verify", str(d / "x.json"), "--issuers", str(d / "issuers.json"))
    assert code == 2 and "--cartridge" in out["error"]["message"]
