"""The issuance gate and the verifier's attempt log / per-ROM cooldown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acxoci.errors import InvalidInput
from acxoci.level.gate import Attempt, append_attempt, cooldown_decision, gate, read_attempts

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
ROM = "sha256:" + "1" * 64


@pytest.mark.parametrize(
    ("sigma", "games", "ok"),
    [
        (1.204, 90, True),
        (1.4999, 30, True),
        (1.5, 90, False),
        (1.2, 29, False),
        (None, 90, False),
        (1.0, None, False),
    ],
)
def test_gate(sigma: float | None, games: int | None, ok: bool) -> None:
    r = gate(sigma, games)
    assert r.ok is ok
    assert r.message.startswith("gate passed" if ok else "gating failed: sigma=")
    assert "(<1.5?" in r.message and "(>=30?" in r.message


def test_attempt_log_roundtrip_and_cooldown(tmp_path: Path) -> None:
    log = tmp_path / "sub" / "attempts.jsonl"
    assert read_attempts(log) == []
    append_attempt(log, Attempt(T0, ROM, "b@1", "gate-failed", 2.3, 20, 25, "gating failed"))
    append_attempt(log, Attempt(T0, "sha256:" + "2" * 64, "b@1", "issued", 1.2, 90, 28))
    attempts = read_attempts(log)
    assert len(attempts) == 2 and attempts[0].sigma == 2.3 and attempts[0].at == T0
    assert log.stat().st_mode & 0o777 == 0o600
    d = cooldown_decision(attempts, rom_digest=ROM, benchmark="b@1", now=T0 + timedelta(hours=1))
    assert not d.allowed and d.failed_attempts == 1 and d.retry_after == T0 + timedelta(hours=24)
    assert "cooldown" in d.message
    assert cooldown_decision(attempts, rom_digest=ROM, benchmark="b@1", now=T0 + timedelta(hours=25)).allowed
    assert cooldown_decision(attempts, rom_digest=ROM, benchmark="other@1", now=T0).allowed
    assert cooldown_decision(attempts, rom_digest="sha256:" + "2" * 64, benchmark="b@1", now=T0).allowed
    short = cooldown_decision(
        attempts,
        rom_digest=ROM,
        benchmark="b@1",
        now=T0 + timedelta(minutes=2),
        cooldown=timedelta(minutes=1),
    )
    assert short.allowed


def test_corrupt_log_is_an_error(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    log.write_text(
        '{"at": "2026-01-01T00:00:00Z", "romDigest": "x", "benchmark": "b", "outcome": "issued"}\nnope\n'
    )
    with pytest.raises(InvalidInput, match=":2"):
        read_attempts(log)
