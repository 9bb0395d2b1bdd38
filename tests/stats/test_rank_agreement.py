"""Kendall's τ of two raters' order of candidates (`ix.stats.judges.rank_agreement`, used by
`ix calibrate`): the point against scipy, the edges, and the interval's coverage by
simulation."""

import math

import numpy as np
import pytest
from scipy import stats

from ix.stats.judges import MIN_RANKED, rank_agreement


@pytest.mark.parametrize("seed", range(6))
def test_tau_is_scipys_tau_b_of_the_candidates_means_ties_included(seed):
    rng = np.random.default_rng(seed)
    k, n = 3 + seed % 3, 12
    a = rng.integers(0, 4, (k, n)) / 3
    b = rng.integers(0, 4, (k, n)) / 3
    b[1] = b[0]  # a tie in one rater's order
    e = rank_agreement(a, b, seed=seed)
    assert e.value == pytest.approx(stats.kendalltau(a.mean(axis=1), b.mean(axis=1)).statistic)
    assert e.lo <= e.value <= e.hi and e.n == n
    assert rank_agreement(a, b, seed=seed) == e  # seeded


def test_fewer_than_three_candidates_say_so_and_a_flat_rater_has_no_tau():
    e = rank_agreement([[1, 0], [0, 0]], [[1, 1], [0, 1]])
    assert MIN_RANKED == 3 and math.isnan(e.value) and "not enough candidates" in e.method
    flat = rank_agreement([[1, 0], [0, 1], [1, 0]], [[1, 0], [1, 0], [1, 0]])
    assert math.isnan(flat.value) and "same mean" in flat.method
    with pytest.raises(ValueError, match="one shape"):
        rank_agreement([[1, 0], [0, 1], [1, 0]], [[1, 0], [0, 1]])


def test_a_perfect_order_is_one_and_a_reversed_one_minus_one():
    a = np.array([[0.1] * 10, [0.5] * 10, [0.9] * 10])
    assert rank_agreement(a, a).value == 1.0
    assert rank_agreement(a, a[::-1]).value == -1.0


def _coverage(p_subject, p_proxy, n, sims, interval):
    """Share of simulated calibrations (n cases, 3 trials each, a case effect shared by
    every candidate) whose interval holds the population τ of the candidates' rates."""
    truth = stats.kendalltau(p_subject, p_proxy).statistic
    rng = np.random.default_rng(7)
    hits = 0
    for s in range(sims):
        shift = 0.15 * rng.normal(size=n)
        a = rng.binomial(3, np.clip(np.array(p_subject)[:, None] + shift, 0, 1)) / 3
        b = rng.binomial(3, np.clip(np.array(p_proxy)[:, None] + shift, 0, 1)) / 3
        lo, hi = interval(a, b, s)
        hits += lo - 1e-9 <= truth <= hi + 1e-9
    return hits / sims


@pytest.mark.parametrize(("p_subject", "p_proxy", "point_fails"), [
    ([0.1, 0.3, 0.5, 0.7, 0.9], [0.2, 0.25, 0.5, 0.45, 0.8], True),  # τ 0.8: a pair swapped
    ([0.3, 0.5, 0.7], [0.5, 0.3, 0.7], False),  # τ 1/3 (three candidates: τ̂ often exact)
])
def test_the_interval_covers_the_population_tau_and_a_point_interval_does_not(
        p_subject, p_proxy, point_fails):
    def bootstrap(a, b, s):
        e = rank_agreement(a, b, seed=s)
        return e.lo, e.hi

    def point(a, b, s):  # the harness can fail: no interval at all
        v = stats.kendalltau(a.mean(axis=1), b.mean(axis=1)).statistic
        return v, v

    assert _coverage(p_subject, p_proxy, 10, 80, bootstrap) >= 0.93
    if point_fails:
        assert _coverage(p_subject, p_proxy, 10, 80, point) < 0.8
