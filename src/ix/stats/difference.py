"""An interval for a difference that always contains the printed estimate (STATS.md §1, §12).

The equal-tailed credible interval of a posterior can exclude the observed difference: with
a 10/10 control and a 9/10 variant the posterior of the difference is pulled towards 0 by the
prior, and a skewed posterior's 2.5% quantile can lie above a small observed value. A reader
who sees "diff −0.10 [−0.05, 0.31]" rightly distrusts it. `difference_interval` returns the
equal-tailed interval when it holds the estimate and otherwise the one-sided interval on the
estimate's side, whose credibility is still exactly `level`, plus the posterior median, to
print next to the observed difference.

`cdf` is any posterior CDF on [lo, hi] (non-decreasing, 0 at `lo`, 1 at `hi`); quantiles are
found with brentq (~1e-12), so a CDF from quadrature or a closed form both work. Pure: scipy
only, nothing sampled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from ix._lazy import lazy

__all__ = ["DifferenceInterval", "difference_interval", "posterior_quantile"]

Sided = Literal["two", "lower", "upper"]

optimize = lazy("scipy.optimize")  # slow to import; not needed on every summary's path


@dataclass(frozen=True)
class DifferenceInterval:
    """A credible interval [lo, hi] of a difference, with the posterior median.

    `sided` says which rule made it:
    - "two": the equal-tailed interval, (1 − level)/2 of posterior mass in each tail;
    - "lower": [support's lower end, q_level] — the estimate lay below the equal-tailed
      interval, so all of the excluded mass 1 − level sits above `hi`;
    - "upper": [q_(1−level), support's upper end] — the estimate lay above it.
    """

    lo: float
    hi: float
    median: float
    sided: Sided

    def __iter__(self) -> Iterator[float]:
        """Unpacks as the pair (lo, hi), like the plain tuple intervals elsewhere in ix.stats."""
        return iter((self.lo, self.hi))

    def contains(self, x: float) -> bool:
        return self.lo <= x <= self.hi


def _check(level: float, lo: float, hi: float) -> tuple[float, float, float]:
    if not (isinstance(level, int | float) and 0 < level < 1):
        raise ValueError(f"level must be a probability in (0, 1), e.g. 0.95; got {level!r}")
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"need finite lo < hi for the support; got lo={lo!r}, hi={hi!r}")
    return float(level), lo, hi


def posterior_quantile(cdf: Callable[[float], float], p: float, lo: float = -1.0,
                       hi: float = 1.0) -> float:
    """The p-quantile inf{x in [lo, hi] : cdf(x) ≥ p} of a CDF on [lo, hi], by brentq.

    p ≤ cdf(lo) gives lo and p ≥ cdf(hi) gives hi (a CDF from quadrature may miss 0 or 1 by
    rounding). Accurate to ~1e-12 in x.
    """
    f_lo, f_hi = float(cdf(lo)), float(cdf(hi))
    if p <= f_lo:
        return lo
    if p >= f_hi:
        return hi

    return float(optimize.brentq(lambda x: float(cdf(x)) - p, lo, hi, xtol=1e-12, rtol=1e-12))


def difference_interval(cdf: Callable[[float], float], estimate: float, level: float = 0.95,
                        lo: float = -1.0, hi: float = 1.0) -> DifferenceInterval:
    """Credible interval of a difference that contains `estimate` (STATS.md §12).

    The equal-tailed interval [q_((1−level)/2), q_((1+level)/2)] of the posterior with CDF
    `cdf` on [lo, hi]; when it would exclude `estimate` (the observed difference), the
    one-sided interval on the estimate's side: [lo, q_level] if the estimate lies below the
    equal-tailed interval ("lower"), [q_(1−level), hi] if above ("upper"). Either holds
    exactly `level` of posterior mass, and either contains the estimate: below the
    equal-tailed interval means estimate < q_((1−level)/2) < q_level. `estimate` is first
    clipped to [lo, hi]. `median` is the posterior median q_½. Raises ValueError unless
    0 < level < 1, lo < hi are finite and `estimate` is a number.
    """
    level, lo, hi = _check(level, lo, hi)
    est = float(estimate)
    if math.isnan(est):
        raise ValueError("estimate must be a number, got nan")
    est = min(max(est, lo), hi)
    tail = (1.0 - level) / 2.0
    q_lo = posterior_quantile(cdf, tail, lo, hi)
    q_hi = posterior_quantile(cdf, 1.0 - tail, lo, hi)
    median = posterior_quantile(cdf, 0.5, lo, hi)
    if est < q_lo:
        return DifferenceInterval(lo, max(posterior_quantile(cdf, level, lo, hi), est),
                                  median, "lower")
    if est > q_hi:
        return DifferenceInterval(min(posterior_quantile(cdf, 1.0 - level, lo, hi), est), hi,
                                  median, "upper")
    return DifferenceInterval(q_lo, q_hi, median, "two")
