"""The trend of a rate across conversation lengths, with the case as the unit (DESIGN.md §7).

Every case ran at every length L_1 < … < L_J (the same subject, a longer prefix before it).
Per case i, the least-squares slope of its observed rates r_ij = k_ij/n_ij against
x_j = log2(1 + L_j),

    b_i = Σ_j w_j r_ij,   w_j = (x_j − x̄) / Σ_j (x_j − x̄)²,

is an unbiased draw of that case's true slope (linear in the rates), and the cases are
independent draws from the population of prompts, so the b_i are iid with mean = the
estimand: the mean change of the rate per doubling of (1 + length). As in
`ix.stats.case_level`, the mean of the b_i gets a Student t reference on N − 1 degrees of
freedom (the posterior of a normal mean under p(μ, σ) ∝ 1/σ):

    β | b ~ b̄ + SE · t_(N−1),   SE² = max(s²/N, Σ_i Σ_j w_j² v_ij / N²),

s² the sample variance of the b_i and v_ij the variance of case i's Beta(k+1, n−k+1) rate
posterior at length j: the floor keeps SE > 0 when every case has the same slope (every
rate 1.0, say). `p_decline` is P(β < 0). The slope is not truncated: its range (±1 over the
smallest spread of x) is wide enough that a t posterior inside it loses nothing. Checked by
simulation against known truth (tests/stats/test_stats_trend.py: coverage of the interval,
and P(decline)'s calibration under no trend). Pure: scipy.special only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix._lazy import lazy

if TYPE_CHECKING:
    from scipy import special
else:
    special = lazy("scipy.special")

__all__ = ["CaseLevelTrend", "case_level_trend", "length_axis"]


def length_axis(lengths: Sequence[float]) -> list[float]:
    """x = log2(1 + length): equal steps for each doubling, and 0 at length 0."""
    return [math.log2(1.0 + float(n)) for n in lengths]


@dataclass(frozen=True)
class CaseLevelTrend:
    """The posterior of the mean per-case slope of a rate against log2(1 + length)."""

    slope: float
    se: float
    df: int
    n: int

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        q = float(special.stdtrit(self.df, (1.0 + level) / 2.0))
        return self.slope - q * self.se, self.slope + q * self.se

    @property
    def p_decline(self) -> float:
        """P(slope < 0)."""
        return float(special.stdtr(self.df, -self.slope / self.se))


def _beta_variance(k: int, n: int) -> float:
    a, b = k + 1, n - k + 1
    return a * b / ((a + b) ** 2 * (a + b + 1))


def case_level_trend(counts: Sequence[Sequence[tuple[int, int]]],
                     lengths: Sequence[float]) -> CaseLevelTrend | None:
    """The case-level trend of `counts[i][j]` = (passed, valid trials) of case i at
    `lengths[j]`. Cases without a valid trial at some length are left out; None when no case
    is left. Raises ValueError with fewer than two lengths, or counts outside 0 ≤ k ≤ n."""
    if len(lengths) < 2:
        raise ValueError(f"a trend needs at least two lengths, got {len(lengths)}")
    x = length_axis(lengths)
    mean_x = sum(x) / len(x)
    sxx = sum((v - mean_x) ** 2 for v in x)
    w = [(v - mean_x) / sxx for v in x]
    slopes, floor = [], 0.0
    for row in counts:
        if len(row) != len(x):
            raise ValueError(f"each case needs one count per length ({len(x)}), got {len(row)}")
        for k, n in row:
            if not 0 <= k <= n:
                raise ValueError(f"need 0 <= passed <= trials per case; got {k}/{n}")
        if all(n for _, n in row):
            slopes.append(sum(wj * k / n for wj, (k, n) in zip(w, row, strict=True)))
            floor += sum(wj**2 * _beta_variance(k, n) for wj, (k, n) in zip(w, row, strict=True))
    if not slopes:
        return None
    n = len(slopes)
    mean = sum(slopes) / n
    s2 = sum((b - mean) ** 2 for b in slopes) / (n - 1) if n > 1 else 0.0
    se = math.sqrt(max(s2 / n, floor / n**2))
    return CaseLevelTrend(slope=mean, se=se, df=max(n - 1, 1), n=n)
