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

The **interaction** of two subjects that ran the same cases at the same lengths ("does adding
B make A degrade faster?", DESIGN.md §7) is the mean over cases of the difference of their
per-case slopes, d_i = b_i(variant) − b_i(control): the same estimator on the paired
differences (`case_level_trend_difference`), whose floor adds both subjects' rate variances.
Pairing by case keeps what the two share — the prompt's own difficulty and, with common random
numbers, the trial's draw — out of the spread of d_i; only each case's counts enter, so
permuting trials within a case changes nothing.

With `clusters` (each case's family: cases generated from one original, STATS.md §10) the
family is the independent unit: the mean over cases with the cluster-robust (CR1) SE on
G − 1 degrees of freedom (`ix.stats.case_level.t_posterior`); every case its own cluster
gives the numbers above exactly.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix._lazy import lazy
from ix.stats.case_level import beta_variance, t_posterior

if TYPE_CHECKING:
    from scipy import special
else:
    special = lazy("scipy.special")

__all__ = ["CaseLevelTrend", "case_level_slope", "case_level_slope_difference",
           "case_level_trend", "case_level_trend_difference", "length_axis"]


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
    #: independent units: the families of `clusters` (`n` without)
    n_clusters: int | None = None

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        q = float(special.stdtrit(self.df, (1.0 + level) / 2.0))
        return self.slope - q * self.se, self.slope + q * self.se

    @property
    def p_decline(self) -> float:
        """P(slope < 0)."""
        return float(special.stdtr(self.df, -self.slope / self.se))

    @property
    def p_value(self) -> float:
        """The two-sided t-test of no slope (no interaction, for a difference of trends)."""
        return float(min(1.0, 2.0 * special.stdtr(self.df, -abs(self.slope) / self.se)))


def _weights(x: Sequence[float], what: str = "lengths") -> list[float]:
    if len(x) < 2:
        raise ValueError(f"a trend needs at least two {what}, got {len(x)}")
    if len(set(x)) < 2:
        raise ValueError(f"a trend needs two different {what}, got {list(x)}")
    mean_x = sum(x) / len(x)
    sxx = sum((v - mean_x) ** 2 for v in x)
    return [(v - mean_x) / sxx for v in x]


def _case_slope(row: Sequence[tuple[int, int]], w: Sequence[float]) -> tuple[float, float] | None:
    """(slope, Σ_j w_j² v_j) of one case's counts; None when a length has no valid trial."""
    if len(row) != len(w):
        raise ValueError(f"each case needs one count per length ({len(w)}), got {len(row)}")
    for k, n in row:
        if not 0 <= k <= n:
            raise ValueError(f"need 0 <= passed <= trials per case; got {k}/{n}")
    if not all(n for _, n in row):
        return None
    return (sum(wj * k / n for wj, (k, n) in zip(w, row, strict=True)),
            sum(wj**2 * beta_variance(k, n) for wj, (k, n) in zip(w, row, strict=True)))


def _posterior(slopes: Sequence[float], floor: float,
               labels: Sequence[Hashable] | None = None) -> CaseLevelTrend | None:
    if not slopes:
        return None
    n = len(slopes)
    if labels is not None and len(set(labels)) < n:
        t = t_posterior(slopes, floor / n**2, labels)
        return CaseLevelTrend(slope=t.estimate, se=t.se, df=t.df, n=n, n_clusters=t.n_clusters)
    mean = sum(slopes) / n
    s2 = sum((b - mean) ** 2 for b in slopes) / (n - 1) if n > 1 else 0.0
    se = math.sqrt(max(s2 / n, floor / n**2))
    return CaseLevelTrend(slope=mean, se=se, df=max(n - 1, 1), n=n, n_clusters=n)


def _check_clusters(clusters: Sequence[Hashable] | None, cases: int) -> None:
    if clusters is not None and len(clusters) != cases:
        raise ValueError(f"clusters must label every case: {len(clusters)} labels for "
                         f"{cases} cases")


def case_level_trend(counts: Sequence[Sequence[tuple[int, int]]],
                     lengths: Sequence[float],
                     clusters: Sequence[Hashable] | None = None) -> CaseLevelTrend | None:
    """The case-level trend of `counts[i][j]` = (passed, valid trials) of case i at
    `lengths[j]`; `clusters[i]` case i's family, when cases come in families. Cases without a
    valid trial at some length are left out; None when no case is left. Raises ValueError
    with fewer than two lengths, or counts outside 0 ≤ k ≤ n."""
    return case_level_slope(counts, length_axis(lengths), clusters)


def case_level_slope(counts: Sequence[Sequence[tuple[int, int]]], x: Sequence[float],
                     clusters: Sequence[Hashable] | None = None,
                     what: str = "lengths") -> CaseLevelTrend | None:
    """`case_level_trend` on any axis: the mean per-case least-squares slope of the rates
    against `x` (sessions' times, say; `what` names the axis in errors). It equals the slope of
    the pooled regression r_ij ~ case + x with its case-clustered (CR1) SE when every case has
    every point (tests/stats/test_stats_trend.py checks it against statsmodels)."""
    w = _weights(x, what)
    _check_clusters(clusters, len(counts))
    slopes, floor, labels = [], 0.0, []
    for i, row in enumerate(counts):
        got = _case_slope(row, w)
        if got is not None:
            slopes.append(got[0])
            floor += got[1]
            labels.append(i if clusters is None else clusters[i])
    return _posterior(slopes, floor, labels)


def case_level_trend_difference(control: Sequence[Sequence[tuple[int, int]]],
                                variant: Sequence[Sequence[tuple[int, int]]],
                                lengths: Sequence[float],
                                clusters: Sequence[Hashable] | None = None,
                                ) -> CaseLevelTrend | None:
    """The interaction: the posterior of the mean over cases of (variant's slope − control's
    slope), case i's counts at `lengths[j]` being `control[i][j]` and `variant[i][j]`. Cases
    without a valid trial at some length in either subject are left out; None when none is
    left. `clusters` as `case_level_trend`'s. Raises ValueError as `case_level_trend`, or
    when the two list different numbers of cases."""
    return case_level_slope_difference(control, variant, length_axis(lengths), clusters)


def case_level_slope_difference(control: Sequence[Sequence[tuple[int, int]]],
                                variant: Sequence[Sequence[tuple[int, int]]],
                                x: Sequence[float],
                                clusters: Sequence[Hashable] | None = None,
                                what: str = "lengths") -> CaseLevelTrend | None:
    """`case_level_trend_difference` on any axis `x` (sessions' times, say)."""
    if len(control) != len(variant):
        raise ValueError(f"control and variant must list the same cases; got {len(control)} "
                         f"and {len(variant)}")
    w = _weights(x, what)
    _check_clusters(clusters, len(control))
    slopes, floor, labels = [], 0.0, []
    for i, (row_c, row_v) in enumerate(zip(control, variant, strict=True)):
        c, v = _case_slope(row_c, w), _case_slope(row_v, w)
        if c is not None and v is not None:
            slopes.append(v[0] - c[0])
            floor += c[1] + v[1]
            labels.append(i if clusters is None else clusters[i])
    return _posterior(slopes, floor, labels)
