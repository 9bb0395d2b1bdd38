"""Continuous outcomes (STATS.md §13): tokens, time, cost and scores, per subject and against
the control, with intervals that treat the case as the unit.

Every estimate starts from per-case means (a case's trials are not independent draws of the
population of tasks), so N is the number of cases. A subject's mean is the mean of its case
means: a t interval on N − 1 degrees of freedom, or, for a skewed quantity (cost, latency,
tokens), a seeded studentized bootstrap over cases (bootstrap-t), which keeps more of its
coverage on lognormal populations than the t interval. Against the control: the paired
difference of case means (t on the per-case differences) and the ratio of means (a paired
symmetric bootstrap-t on the log of the ratio, never narrower than t), with P(lower). Cost
per success (all the cost over the right trials) takes a paired case bootstrap. Never a Wald
interval on pooled trials. Above `BOOTSTRAP_MAX_CASES` cases, t and the delta method.

`benchmarks/continuous_coverage.py` simulates their coverage; tests/stats/test_continuous.py
checks them against scipy and by simulation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    from scipy import special
else:
    np = lazy("numpy")
    special = lazy("scipy.special")

#: Bootstrap resamples: enough for a 95% interval's ends to settle to ~1% of its width.
RESAMPLES = 4000
#: Above this many cases the t interval (and the delta method for a ratio) has its coverage
#: without a bootstrap, which would cost a run's end a noticeable time.
BOOTSTRAP_MAX_CASES = 200


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its interval at `level`; `method` says how it was made."""

    value: float
    lo: float
    hi: float
    n: int
    method: str


@dataclass(frozen=True)
class Comparison:
    """A variant against the control on one quantity: the paired difference of case means,
    the ratio of the means, and the probability that the variant is lower (for tokens, time
    and cost, lower is better). `df`, `se_difference` and `se_log_ratio` are the scales of
    the Student t posteriors `cdf` reads (nan: none)."""

    difference: Estimate
    ratio: Estimate
    p_lower: float
    df: float = math.nan
    se_difference: float = math.nan
    se_log_ratio: float = math.nan

    def cdf(self, relative: bool = False) -> Callable[[float], float]:
        """F(d) = P(effect ≤ d), effect = variant − control (`relative`: variant / control −
        1), for `ix.stats.decisions`: the t posterior of the mean of the per-case differences
        (the reference prior's; its interval is the difference's), or of the log ratio,
        its scale widened to the ratio's bootstrap-t interval so the verdict and the
        interval printed beside it agree. A zero scale gives a step at the estimate."""
        if relative:
            at, scale = math.log(self.ratio.value), self.se_log_ratio

            def on_log(d: float) -> float:
                return 0.0 if d <= -1 else _t_cdf(math.log1p(d), at, scale, self.df)
            return on_log
        mean, se = self.difference.value, self.se_difference
        return lambda d: _t_cdf(d, mean, se, self.df)


def _t_cdf(x: float, loc: float, scale: float, df: float) -> float:
    if not scale > 0:
        return 1.0 if x >= loc else 0.0
    return float(special.stdtr(df, (x - loc) / scale))


def t_quantile(p: float, df: float) -> float:
    return float(special.stdtrit(df, p))


def mean_interval(values: Sequence[float], level: float = 0.95, *, skewed: bool = False,
                  seed: int = 0) -> Estimate:
    """The mean of per-case `values` with its interval: t on N − 1 df, or (`skewed`) a
    seeded bootstrap-t over the cases. Fewer than two cases: no interval (nan)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, "none")
    mean = float(x.mean())
    if n < 2:
        return Estimate(mean, math.nan, math.nan, n, "none")
    se = float(x.std(ddof=1)) / math.sqrt(n)
    alpha = 1 - level
    if not skewed or se == 0 or n > BOOTSTRAP_MAX_CASES:
        q = t_quantile(1 - alpha / 2, n - 1)
        return Estimate(mean, mean - q * se, mean + q * se, n, "t")
    w = _weights(n, seed)
    c = x - mean  # centred: each resample's variance from its sums, without cancellation
    shift = w @ c / n  # each resample's mean − the mean
    ses = np.sqrt(np.maximum(w @ (c * c) - n * shift * shift, 0.0) / (n - 1)) / math.sqrt(n)
    ok = ses > se * 1e-9  # a resample of (nearly) one value: no t of its own
    if not ok.any():  # values apart by rounding alone
        q = t_quantile(1 - alpha / 2, n - 1)
        return Estimate(mean, mean - q * se, mean + q * se, n, "t")
    # equal-tailed: a skewed mean's interval is too (the symmetric one covered less here)
    t_hi, t_lo = np.quantile(shift[ok] / ses[ok], [1 - alpha / 2, alpha / 2])
    return Estimate(mean, mean - float(t_hi) * se, mean - float(t_lo) * se, n, "bootstrap-t")


def compare(control: Sequence[float], variant: Sequence[float], level: float = 0.95, *,
            seed: int = 0) -> Comparison:
    """The variant against the control on per-case means paired by case (the same cases, in
    the same order): the difference (variant − control, t on the differences) and the ratio
    of means (variant / control, a paired bootstrap-t on its log; nan when either mean is
    not positive), with P(variant lower) from the t posterior of the difference."""
    a = np.asarray(control, dtype=float)
    b = np.asarray(variant, dtype=float)
    if a.shape != b.shape:
        raise ValueError("control and variant must hold the same cases")
    n = len(a)
    d = b - a
    alpha = 1 - level
    if n < 2:
        nan = Estimate(math.nan, math.nan, math.nan, n, "none")
        return Comparison(Estimate(float(d.mean()) if n else math.nan, math.nan, math.nan, n,
                                   "none"), nan, math.nan)
    mean_d = float(d.mean())
    se_d = float(d.std(ddof=1)) / math.sqrt(n)
    q = t_quantile(1 - alpha / 2, n - 1)
    difference = Estimate(mean_d, mean_d - q * se_d, mean_d + q * se_d, n, "paired t")
    if se_d > 0:
        p_lower = float(special.stdtr(n - 1, -mean_d / se_d))
    else:
        p_lower = 1.0 if mean_d < 0 else 0.0 if mean_d > 0 else 0.5
    ratio, se_log = _ratio(a, b, level, seed)
    return Comparison(difference, ratio, p_lower, float(n - 1), se_d, se_log)


def _ratio(a: np.ndarray, b: np.ndarray, level: float, seed: int) -> tuple[Estimate, float]:
    """mean(b) / mean(a) with a paired bootstrap-t interval on the log scale (its standard
    error by the delta method, within each resample), and the scale of the t posterior of
    the log ratio whose `level` interval is that one (the delta method's, widened by the
    bootstrap's quantile over Student's)."""
    n = len(a)
    ma, mb = float(a.mean()), float(b.mean())
    if ma <= 0 or mb <= 0:
        return Estimate(math.nan, math.nan, math.nan, n, "none"), math.nan
    log_r = math.log(mb / ma)
    ca, cb = a - ma, b - mb
    se = float(_log_ratio_se(np.array([ma]), np.array([mb]), np.array([ca @ ca]),
                             np.array([cb @ cb]), np.array([ca @ cb]), n)[0])
    if not se > 0:
        return Estimate(mb / ma, mb / ma, mb / ma, n, "none"), 0.0
    t_q = t_quantile(1 - (1 - level) / 2, n - 1)
    if n > BOOTSTRAP_MAX_CASES:
        return Estimate(mb / ma, _exp(log_r - t_q * se), _exp(log_r + t_q * se), n,
                        "delta method, log ratio"), float(se)
    w = _weights(n, seed)
    da, db = w @ ca / n, w @ cb / n  # each resample's means − the means
    ma_s, mb_s = ma + da, mb + db
    ok = (ma_s > 0) & (mb_s > 0)
    ses = _log_ratio_se(ma_s[ok], mb_s[ok], (w @ (ca * ca) - n * da * da)[ok],
                        (w @ (cb * cb) - n * db * db)[ok], (w @ (ca * cb) - n * da * db)[ok], n)
    good = ses > 0
    q = _symmetric(np.abs(np.log(mb_s[ok][good] / ma_s[ok][good]) - log_r) / ses[good], n,
                   level)
    return (Estimate(mb / ma, _exp(log_r - q * se), _exp(log_r + q * se), n,
                     "paired bootstrap-t, log ratio"), float(se * q / t_q))


def _exp(x: float) -> float:
    """exp, infinite past the float range (a few cases' interval may reach that far)."""
    return math.inf if x > 700 else math.exp(x)


def _symmetric(abs_t: np.ndarray, n: int, level: float) -> float:
    """The half-width, in standard errors, of a symmetric bootstrap-t interval: the `level`
    quantile of |t| over the resamples, never below Student's t on n − 1 df. Equal-tailed
    bootstrap-t intervals covered 0.90-0.92 on lognormal populations of 10 cases; these
    0.93-0.95 (`benchmarks/continuous_coverage.py`)."""
    floor = t_quantile(1 - (1 - level) / 2, n - 1)
    if not len(abs_t):
        return floor
    return max(float(np.quantile(abs_t, level)), floor)


@functools.lru_cache(maxsize=8)
def _weights(n: int, seed: int) -> np.ndarray:
    """The resamples of n cases as counts: row k says how often resample k drew each case
    (the draws of `default_rng(seed).integers(0, n, (RESAMPLES, n))`). A resample's sums are
    then one matrix product, shared by every quantity and subject of a run's n cases."""
    idx = np.random.default_rng(seed).integers(0, n, size=(RESAMPLES, n))
    flat = (np.arange(RESAMPLES)[:, None] * n + idx).ravel()
    counts = np.bincount(flat, minlength=RESAMPLES * n).reshape(RESAMPLES, n).astype(float)
    counts.flags.writeable = False  # cached: shared by every caller
    return counts


def _log_ratio_se(ma: np.ndarray, mb: np.ndarray, ssa: np.ndarray, ssb: np.ndarray,
                  sab: np.ndarray, n: int) -> np.ndarray:
    """The delta method's standard error of log(mb / ma), element by element, from the means,
    the sums of squares about them and the sum of cross-products (the pairing's covariance)."""
    va, vb, cov = ssa / (n - 1), ssb / (n - 1), sab / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        var = (vb / mb**2 + va / ma**2 - 2 * cov / (ma * mb)) / n
        return np.sqrt(np.maximum(np.nan_to_num(var, nan=0.0, posinf=0.0), 0.0))


def cost_per_success(cost: Sequence[float], right: Sequence[float], level: float = 0.95, *,
                     seed: int = 0) -> Estimate:
    """Σ cost / Σ right over the cases (`cost`: all of a case's trials' cost, retries
    included; `right`: its right trials), with a case bootstrap percentile interval; nan
    with no right trial."""
    c = np.asarray(cost, dtype=float)
    r = np.asarray(right, dtype=float)
    n = len(c)
    if n == 0 or r.sum() <= 0:
        return Estimate(math.nan, math.nan, math.nan, n, "none")
    value = float(c.sum() / r.sum())
    if n < 2:
        return Estimate(value, math.nan, math.nan, n, "none")
    w = _weights(n, seed)
    sums_r = w @ r
    ratios = (w @ c)[sums_r > 0] / sums_r[sums_r > 0]
    alpha = 1 - level
    lo, hi = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
    return Estimate(value, float(lo), float(hi), n, "case bootstrap")


def cost_per_success_ratio(control: tuple[Sequence[float], Sequence[float]],
                           variant: tuple[Sequence[float], Sequence[float]],
                           level: float = 0.95, *, seed: int = 0) -> Estimate:
    """The variant's cost per success over the control's, each (cost, right) by case, the
    same cases in the same order: a paired case bootstrap percentile interval."""
    ca, ra = (np.asarray(x, dtype=float) for x in control)
    cb, rb = (np.asarray(x, dtype=float) for x in variant)
    n = len(ca)
    if n == 0 or ra.sum() <= 0 or rb.sum() <= 0 or ca.sum() <= 0:
        return Estimate(math.nan, math.nan, math.nan, n, "none")
    value = float((cb.sum() / rb.sum()) / (ca.sum() / ra.sum()))
    w = _weights(n, seed)
    sa, sb = w @ ra, w @ rb
    pa = w @ ca
    ok = (sa > 0) & (sb > 0) & (pa > 0)
    ratios = ((w @ cb)[ok] / sb[ok]) / (pa[ok] / sa[ok])
    alpha = 1 - level
    lo, hi = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
    return Estimate(value, float(lo), float(hi), n, "paired case bootstrap")


__all__ = ["BOOTSTRAP_MAX_CASES", "RESAMPLES", "Comparison", "Estimate", "compare",
           "cost_per_success", "cost_per_success_ratio", "mean_interval"]
