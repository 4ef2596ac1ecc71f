"""One level run: draw the held-out tasks for a ROM digest, play each as a TrueSkill game with a
solver, and sign each trajectory as an in-toto Statement in a DSSE envelope (the evidence).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from acxoci.attest import dsse
from acxoci.attest.canonical import jcs, sha256_hex
from acxoci.attest.intoto import Statement, Subject
from acxoci.attest.keys import PrivateKey
from acxoci.errors import InvalidInput
from acxoci.level import trueskill
from acxoci.level.benchmark import BenchmarkSuite, Task
from acxoci.level.solver import Solver, SolveRequest, trajectory_of

DEFAULT_DRAW_COUNT: Final = 90
TRAJECTORY_PREDICATE: Final = "https://acx.dev/attestation/level-trajectory/v1"
ROM_SUBJECT_NAME: Final = "urn:acx:cartridge-rom"
_ROM_RE_LEN: Final = len("sha256:") + 64


def draw_order(held_out: Sequence[Task], rom_digest: str, draw_count: int) -> list[Task]:
    """Held-out tasks sorted by hex(sha256(romDigest|draw|id)), first min(drawCount, n)."""
    ranked = sorted(held_out, key=lambda t: hashlib.sha256(f"{rom_digest}|draw|{t.id}".encode()).hexdigest())
    return ranked[:max(0, min(draw_count, len(ranked)))]


def digest_multibase(data: bytes) -> str:
    """W3C digestMultibase: `u` + base64url(multihash sha2-256 of data), no padding."""
    mh = b"\x12\x20" + hashlib.sha256(data).digest()
    return "u" + base64.urlsafe_b64encode(mh).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class Game:
    """One played task: outcome, the trajectory, its digest and the signed evidence envelope."""

    task: Task
    passed: bool
    trajectory: dict[str, Any]
    trajectory_digest: str
    envelope: dict[str, Any]
    rating_after: trueskill.Rating


@dataclass(frozen=True)
class RunResult:
    """Everything a credential needs from a run."""

    benchmark_id: str
    benchmark_version: str
    benchmark_name: str
    benchmark_digest: str
    held_out_digest: str
    rom_digest: str
    solver: str
    games: tuple[Game, ...]
    rating: trueskill.Rating

    @property
    def games_played(self) -> int:
        """Number of games (draws) played."""
        return len(self.games)

    @property
    def pass_rate(self) -> float:
        """Fraction of games passed (0 when none were played)."""
        return sum(g.passed for g in self.games) / len(self.games) if self.games else 0.0

    @property
    def level(self) -> int:
        """acxLevel = max(0, round-half-up(μ − 3σ))."""
        return trueskill.acx_level(self.rating)

    @property
    def tier(self) -> str:
        """The career tier of the level."""
        return trueskill.career_tier(self.level)

    def summary(self) -> dict[str, Any]:
        """The numbers, rounded like the credential writes them."""
        return {"benchmark": f"{self.benchmark_id}@{self.benchmark_version}", "romDigest": self.rom_digest,
                "solver": self.solver, "games": self.games_played,
                "mu": trueskill.round3(self.rating.mu), "sigma": trueskill.round3(self.rating.sigma),
                "R": trueskill.round3(self.rating.conservative), "passRate": trueskill.round3(self.pass_rate),
                "level": self.level, "tier": self.tier}


def trajectory_statement(trajectory: dict[str, Any], *, suite_digest: str, held_out_digest: str,
                         solver: str) -> Statement:
    """The in-toto Statement about one trajectory: subjects are the trajectory (content address)
    and the cartridge ROM; the predicate carries the trajectory itself."""
    rom = str(trajectory["romDigest"])
    subjects = (
        Subject(f"{trajectory['benchmark']}/{trajectory['version']}/{trajectory['task']}",
                {"sha256": sha256_hex(jcs(trajectory))}),
        Subject(ROM_SUBJECT_NAME, {"sha256": rom.removeprefix("sha256:")}),
    )
    predicate = {"trajectory": trajectory, "benchmarkDigest": suite_digest,
                 "heldOutSliceDigest": held_out_digest, "solver": solver}
    return Statement(subjects, TRAJECTORY_PREDICATE, predicate)


def run_level(suite: BenchmarkSuite, *, cartridge: Path, rom_digest: str, solver: Solver, signer: PrivateKey,
              draw_count: int = DEFAULT_DRAW_COUNT,
              on_game: Callable[[int, int, Game], None] | None = None) -> RunResult:
    """Play the draw for `rom_digest` (the verified ROM digest) and rate it; signs every trajectory."""
    if not isinstance(rom_digest, str) or len(rom_digest) != _ROM_RE_LEN \
            or not rom_digest.startswith("sha256:"):
        raise InvalidInput(f"ROM digest {rom_digest!r} is not sha256:<64 hex>")
    suite_digest, held_digest = suite.digest(), suite.held_out_digest()
    drawn = draw_order(suite.held_out(), rom_digest, draw_count)
    keyid = signer.public().keyid()
    rating = trueskill.Rating()
    games: list[Game] = []
    for i, task in enumerate(drawn):
        request = SolveRequest(suite.id, suite.version, task, cartridge, rom_digest)
        result = solver.solve(request)
        traj = trajectory_of(request, result)
        rating = trueskill.update(rating, task.difficulty, result.passed)
        stmt = trajectory_statement(traj, suite_digest=suite_digest, held_out_digest=held_digest,
                                    solver=solver.name)
        env = dsse.sign(dsse.INTOTO_PAYLOAD_TYPE, stmt.canonical_bytes(), signer, keyid)
        game = Game(task, result.passed, traj, "sha256:" + sha256_hex(jcs(traj)), env.to_json(), rating)
        games.append(game)
        if on_game is not None:
            on_game(i + 1, len(drawn), game)
    return RunResult(suite.id, suite.version, suite.name, suite_digest, held_digest, rom_digest,
                     solver.name, tuple(games), rating)
