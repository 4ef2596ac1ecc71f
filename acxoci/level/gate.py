"""The issuance gate (σ < 1.5 and games ≥ 30) and the verifier's anti-gaming state: a JSON-lines
attempt log per verifier and a per-ROM-digest cooldown after a failed attempt.

Decisions are pure (`gate`, `cooldown_decision`); only `read_attempts`/`append_attempt` touch disk.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

from filelock import FileLock

from acxoci.attest.canonical import loads_strict
from acxoci.attest.errors import MalformedError
from acxoci.attest.trust import parse_rfc3339
from acxoci.errors import InvalidInput, NotFound
from acxoci.fsutil import read_bytes

SIGMA_MAX: Final = 1.5
GAMES_MIN: Final = 30
DEFAULT_COOLDOWN: Final = timedelta(hours=24)
MAX_LOG_BYTES: Final = 64 * 1024 * 1024

Outcome = Literal["issued", "gate-failed", "error"]


@dataclass(frozen=True)
class GateResult:
    """Whether a rating may be issued, with the numbers that decided it."""

    ok: bool
    sigma: float
    games: int
    message: str


def gate(sigma: float | None, games: int | None) -> GateResult:
    """σ < 1.5 and games ≥ 30 (a missing σ counts as 99, missing games as 0, as the reference does)."""
    s = 99.0 if sigma is None else float(sigma)
    g = 0 if games is None else int(games)
    ok_s, ok_g = s < SIGMA_MAX, g >= GAMES_MIN
    yn = {True: "yes", False: "no"}
    text = f"sigma={s:.3f} (<{SIGMA_MAX}? {yn[ok_s]}), games={g} (>={GAMES_MIN}? {yn[ok_g]})"
    ok = ok_s and ok_g
    return GateResult(ok, s, g, ("gate passed: " if ok else "gating failed: ") + text)


@dataclass(frozen=True)
class Attempt:
    """One line of the attempt log."""

    at: datetime
    rom_digest: str
    benchmark: str
    outcome: Outcome
    sigma: float | None = None
    games: int | None = None
    level: int | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON line written to the log."""
        return {"at": self.at.isoformat().replace("+00:00", "Z"), "romDigest": self.rom_digest,
                "benchmark": self.benchmark, "outcome": self.outcome, "sigma": self.sigma,
                "games": self.games, "level": self.level, "detail": self.detail}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> Attempt:
        """Parse one log line; raises InvalidInput naming the line."""
        if not isinstance(doc, dict):
            raise InvalidInput(f"{where}: not a JSON object")
        try:
            at = parse_rfc3339(doc.get("at"), where=f"{where}.at")
        except MalformedError as exc:
            raise InvalidInput(str(exc)) from exc
        rom, bench, outcome = doc.get("romDigest"), doc.get("benchmark"), doc.get("outcome")
        if not isinstance(rom, str) or not isinstance(bench, str) \
                or outcome not in ("issued", "gate-failed", "error"):
            raise InvalidInput(f"{where}: romDigest, benchmark and outcome are required")
        return cls(at, rom, bench, outcome, doc.get("sigma"), doc.get("games"), doc.get("level"),
                   doc.get("detail"))


def read_attempts(path: Path) -> list[Attempt]:
    """All attempts in the log (an absent log is empty)."""
    try:
        text = read_bytes(path, "attempt log", limit=MAX_LOG_BYTES).decode("utf-8")
    except NotFound:
        return []
    except UnicodeDecodeError as exc:
        raise InvalidInput("attempt log is not UTF-8", where=str(path)) from exc
    out: list[Attempt] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                doc = loads_strict(line)
            except MalformedError as exc:
                raise InvalidInput(f"{path}:{n}: not JSON ({exc})") from exc
            out.append(Attempt.from_json(doc, f"{path}:{n}"))
    return out


def append_attempt(path: Path, attempt: Attempt) -> None:
    """Append one attempt (locked, flushed and fsynced: the log is the verifier's memory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(attempt.to_json(), sort_keys=True, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


@dataclass(frozen=True)
class CooldownDecision:
    """May this ROM digest be attempted now? If not, until when, and how many failures are on record."""

    allowed: bool
    failed_attempts: int
    retry_after: datetime | None
    message: str


def cooldown_decision(attempts: list[Attempt], *, rom_digest: str, benchmark: str, now: datetime,
                      cooldown: timedelta = DEFAULT_COOLDOWN) -> CooldownDecision:
    """A failed attempt (gate failure or error) locks the (ROM digest, benchmark) for `cooldown`."""
    mine = [a for a in attempts if a.rom_digest == rom_digest and a.benchmark == benchmark]
    failed = [a for a in mine if a.outcome != "issued"]
    if not failed:
        return CooldownDecision(True, 0, None, "no failed attempts on record")
    last = max(a.at for a in failed)
    retry = last + cooldown
    if now < retry:
        return CooldownDecision(False, len(failed), retry,
                                f"cooldown: {rom_digest} failed {len(failed)} attempt(s) on {benchmark}, "
                                f"last at {last.isoformat()}; next attempt allowed after {retry.isoformat()}")
    return CooldownDecision(True, len(failed), None,
                            f"{len(failed)} earlier failed attempt(s), cooldown over")
