"""Percentile intervals from order statistics (ix.stats.quantiles), against scipy's binomial
and by simulation: distribution-free, coverage at least the level at every n."""

import math

import numpy as np
import pytest
from scipy import stats

from ix.stats.quantiles import min_sample, order_statistic_ranks, quantile_interval


def reference_ranks(n: int, q: float, level: float) -> tuple[int, int]:
    """The equal-tailed ranks by brute force over scipy.stats.binom."""
    tail = (1 - level) / 2
    cdf = [stats.binom.cdf(k, n, q) for k in range(n)]
    low = max([k + 1 for k in range(n) if cdf[k] <= tail], default=0)
    up = min([k + 1 for k in range(n) if cdf[k] >= 1 - tail], default=n + 1)
    return low, up


@pytest.mark.parametrize("q", [0.5, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("n", [1, 2, 5, 10, 37, 100, 367, 368, 1000])
def test_ranks_are_the_exact_binomial_ones_and_cover_at_least_the_level(n, q):
    low, up, coverage = order_statistic_ranks(n, q, 0.95)
    assert (low, up) == reference_ranks(n, q, 0.95)
    below = stats.binom.cdf(low - 1, n, q) if low >= 1 else 0.0
    upto = stats.binom.cdf(up - 1, n, q) if up <= n else 1.0
    assert coverage == pytest.approx(upto - below, abs=1e-12)
    assert coverage >= 0.95 - 1e-12


def test_p99_needs_368_requests_for_a_finite_upper_end():
    assert min_sample(0.99) == 368
    assert order_statistic_ranks(367, 0.99)[1] == 368  # n + 1: open above
    assert order_statistic_ranks(368, 0.99)[1] == 368  # X_(368), the largest
    assert min_sample(0.5) == 6  # 0.5^6 = 0.0156 <= 0.025 on both sides


def test_the_estimate_is_the_nearest_rank_and_lies_inside_its_interval():
    values = list(range(1, 101))  # 1..100
    est = quantile_interval(values[::-1], 0.95)  # order does not matter
    assert est.value == 95 and est.n == 100
    assert est.lo is not None and est.hi is not None and est.lo <= 95 <= est.hi
    low, up = est.ranks
    assert (est.lo, est.hi) == (values[low - 1], values[up - 1])
    small = quantile_interval([3.0, 1.0, 2.0], 0.99)
    assert small.value == 3.0 and small.hi is None  # three values cannot bound a p99
    empty = quantile_interval([], 0.5)
    assert empty.value is None and empty.lo is None and empty.hi is None


def test_an_infinite_value_stands_for_slower_than_any_answer():
    est = quantile_interval([10.0] * 90 + [math.inf] * 10, 0.95)
    assert est.value == math.inf and est.lo == 10.0


@pytest.mark.parametrize("n", [20, 60, 250])
@pytest.mark.parametrize("q", [0.5, 0.95])
def test_coverage_by_simulation_on_a_skewed_latency_distribution(n, q):
    rng = np.random.default_rng(20)
    truth = float(np.exp(0.6 * stats.norm.ppf(q)) * 80)  # lognormal(log 80, 0.6)
    reps, hit, bounded = 2000, 0, 0
    for _ in range(reps):
        est = quantile_interval(80 * np.exp(0.6 * rng.standard_normal(n)), q)
        lo = -math.inf if est.lo is None else est.lo
        hi = math.inf if est.hi is None else est.hi
        hit += lo <= truth <= hi
        bounded += est.hi is not None
    assert hit / reps >= 0.93
    assert bounded == reps or n < min_sample(q)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        quantile_interval([1.0], 1.0)
    with pytest.raises(ValueError):
        quantile_interval([1.0, float("nan")], 0.5)
    with pytest.raises(ValueError):
        order_statistic_ranks(10, 0.5, level=1.0)
