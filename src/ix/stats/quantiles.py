"""Percentiles with distribution-free intervals: order statistics chosen by the exact binomial.

For n independent draws from any continuous distribution, the number of draws at or below
its q-quantile ξ_q is B ~ Binomial(n, q), so with the draws sorted, X_(l) ≤ ξ_q < X_(u)
exactly when l ≤ B ≤ u − 1. Choosing the ranks with P(B ≤ l − 1) ≤ α/2 and P(B ≥ u) ≤ α/2
(the largest l and smallest u that do) makes [X_(l), X_(u)] cover ξ_q with probability
P(l ≤ B ≤ u − 1) ≥ 1 − α whatever the distribution: no normal approximation, no bootstrap,
right at small n (Hahn & Meeker, "Statistical Intervals", §5.2). Latencies with ties (a
clock's resolution) keep the guarantee. When n is too small for a side (p99 needs
log(α/2)/log(0.99) ≈ 368 draws for a finite upper end at 95%), that end is None: the data
cannot bound it, and saying so is the honest answer.

The estimate is the nearest-rank percentile X_(⌈nq⌉), an observed value that always lies
inside its interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix._lazy import lazy

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    from scipy import special
else:
    np = lazy("numpy")
    special = lazy("scipy.special")

__all__ = ["QuantileEstimate", "min_sample", "order_statistic_ranks", "quantile_interval"]


@dataclass(frozen=True)
class QuantileEstimate:
    """The q-quantile of n values: nearest-rank `value`, interval [`lo`, `hi`] (None: not
    bounded on that side by n values), its exact coverage and the 1-based ranks of its ends
    (0 and n + 1 for an open end)."""

    q: float
    n: int
    value: float | None
    lo: float | None
    hi: float | None
    coverage: float | None
    ranks: tuple[int, int]


def _check(q: float, level: float) -> None:
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def order_statistic_ranks(n: int, q: float, level: float = 0.95) -> tuple[int, int, float]:
    """The 1-based ranks (l, u) of the equal-tailed interval [X_(l), X_(u)] of the q-quantile
    of n draws and its exact coverage P(l ≤ B ≤ u − 1), B ~ Binomial(n, q). l = 0 / u = n + 1
    when no order statistic bounds that side."""
    _check(q, level)
    if n < 1:
        return 0, n + 1, 1.0
    tail = (1.0 - level) / 2.0
    k = np.arange(n, dtype=float)
    cdf = special.bdtr(k, n, q)  # P(B <= k), k = 0 .. n - 1, non-decreasing
    # l - 1 is the largest k with P(B <= k) <= tail; l = 0 when even P(B <= 0) exceeds it
    low = int(np.searchsorted(cdf, tail, side="right"))
    # u - 1 is the smallest k with P(B <= k) >= 1 - tail; u = n + 1 when none is
    up = int(np.searchsorted(cdf, 1.0 - tail, side="left")) + 1
    below = float(cdf[low - 1]) if low >= 1 else 0.0      # P(B <= l - 1)
    upto = float(cdf[up - 1]) if up <= n else 1.0          # P(B <= u - 1)
    return low, up, upto - below


def min_sample(q: float, level: float = 0.95) -> int:
    """The fewest draws whose interval of the q-quantile has both ends finite."""
    _check(q, level)
    tail = (1.0 - level) / 2.0
    # upper end: q^n <= tail; lower end: (1 - q)^n <= tail
    return max(math.ceil(math.log(tail) / math.log(q)), math.ceil(math.log(tail) / math.log1p(-q)))


def quantile_interval(values: Sequence[float], q: float, level: float = 0.95,
                      *, presorted: bool = False) -> QuantileEstimate:
    """The q-quantile of `values` (finite or +inf: an +inf stands for "slower than any
    answer") with its distribution-free interval at `level`; value None for no values."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or np.isnan(x).any():
        raise ValueError("values must be a one-dimensional sequence of numbers without nan")
    if not presorted:
        x = np.sort(x)
    n = int(x.size)
    low, up, coverage = order_statistic_ranks(n, q, level)
    if n == 0:
        return QuantileEstimate(q, 0, None, None, None, None, (low, up))
    rank = max(1, math.ceil(n * q - 1e-9))  # nearest rank; the epsilon keeps n·q exact
    value = float(x[rank - 1])
    lo = float(x[low - 1]) if low >= 1 else None
    hi = float(x[up - 1]) if up <= n else None
    return QuantileEstimate(q, n, value, lo, hi, coverage, (low, up))
