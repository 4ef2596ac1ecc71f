"""TrueSkill for one player against fixed task opponents (no draws), exactly as the ACX brief §10
states it, with the Abramowitz–Stegun 7.1.26 erf the reference's numbers depend on.

The PyPI `trueskill` package computes Φ with its own erfc and applies τ/σ to both sides, not the
brief's one-sided form with A–S 7.1.26, so we keep this small implementation and test it against the
brief's table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

MU0: Final = 25.0
SIGMA0: Final = 25.0 / 3.0
BETA: Final = 25.0 / 6.0
TAU: Final = 25.0 / 300.0
TASK_SIGMA: Final = 0.5

_P: Final = 0.3275911
_A: Final = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

TIERS: Final[tuple[tuple[int, str], ...]] = (
    (35, "legend"), (30, "distinguished"), (25, "principal"), (20, "staff"),
    (15, "senior"), (10, "mid"), (5, "junior"), (0, "intern"),
)


def erf(x: float) -> float:
    """Abramowitz–Stegun 7.1.26 approximation of erf (|error| < 1.5e-7), odd-extended."""
    sign = 1.0 if x >= 0 else -1.0
    ax = abs(x)
    t = 1.0 / (1.0 + _P * ax)
    a1, a2, a3, a4, a5 = _A
    y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * math.exp(-ax * ax)
    return sign * y


def cdf(x: float) -> float:
    """Standard normal CDF Φ via the A–S erf."""
    return 0.5 * (1.0 + erf(x / math.sqrt(2.0)))


def pdf(x: float) -> float:
    """Standard normal density φ."""
    return math.exp(-x * x / 2.0) / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class Rating:
    """A TrueSkill belief (μ, σ) about the agent's skill."""

    mu: float = MU0
    sigma: float = SIGMA0

    @property
    def conservative(self) -> float:
        """R = μ − 3σ."""
        return self.mu - 3.0 * self.sigma


def update(rating: Rating, difficulty: float, passed: bool) -> Rating:
    """One game against a task of μ = difficulty, σ = 0.5; the agent wins iff it passed."""
    s1 = math.sqrt(rating.sigma ** 2 + TAU ** 2)
    c = math.sqrt(2.0 * BETA ** 2 + s1 ** 2 + TASK_SIGMA ** 2)
    t = ((rating.mu - difficulty) if passed else (difficulty - rating.mu)) / c
    big_phi = cdf(t)
    v = -t if big_phi < 1e-12 else pdf(t) / big_phi
    w = v * (v + t)
    mu = rating.mu + (1.0 if passed else -1.0) * (s1 ** 2 / c) * v
    sigma = s1 * math.sqrt(max(1e-6, 1.0 - (s1 ** 2 / c ** 2) * w))
    return Rating(mu, sigma)


def js_round(x: float) -> int:
    """JavaScript Math.round: halves round up (towards +∞), unlike Python's round."""
    return math.floor(x + 0.5)


def acx_level(rating: Rating) -> int:
    """max(0, Math.round(μ − 3σ))."""
    return max(0, js_round(rating.conservative))


def career_tier(level: int) -> str:
    """intern <5, junior ≥5, mid ≥10, senior ≥15, staff ≥20, principal ≥25, distinguished ≥30, legend ≥35."""
    for floor_, name in TIERS:
        if level >= floor_:
            return name
    return "intern"


def round3(x: float) -> float:
    """Round to 3 decimals the way the reference writes μ, σ and pass rate (JS half-up)."""
    return math.floor(x * 1000.0 + 0.5) / 1000.0
