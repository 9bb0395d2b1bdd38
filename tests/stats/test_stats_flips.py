"""`ix.stats.flips`: Fisher's exact test per case against scipy and exact fractions, the
smallest p a case's margins allow, Tarone's per-case level, and — by simulation under a true
null with independent draws — how often a comparison calls any case beyond trial noise."""

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import stats

from ix.stats.flips import beyond_noise, fisher_exact, tarone_threshold


def _exact_p(k_a: int, n_a: int, k_b: int, n_b: int) -> Fraction:
    """Fisher's two-sided p in exact fractions: every split no likelier than the observed."""
    t = k_a + k_b
    pmf = {x: Fraction(comb(t, x) * comb(n_a + n_b - t, n_a - x), comb(n_a + n_b, n_a))
           for x in range(max(0, t - n_b), min(t, n_a) + 1)}
    return sum((p for p in pmf.values() if p <= pmf[k_a]), Fraction(0))


def test_fisher_exact_matches_scipy_and_exact_fractions_on_every_small_table():
    for n_a, n_b in ((1, 1), (3, 5), (5, 5), (10, 4), (12, 10)):
        for k_a in range(n_a + 1):
            for k_b in range(n_b + 1):
                got = fisher_exact(k_a, n_a, k_b, n_b).p
                assert got == pytest.approx(float(_exact_p(k_a, n_a, k_b, n_b)), abs=1e-12)
                ref = stats.fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]]).pvalue
                assert got == pytest.approx(ref, abs=1e-9)
    assert fisher_exact(5, 5, 0, 5).p == pytest.approx(2 / 252)  # the K = 5 extreme


def test_the_smallest_p_is_the_least_likely_split_of_the_same_margins():
    for n_a, n_b, t in ((5, 5, 5), (5, 5, 4), (5, 5, 1), (10, 10, 3), (3, 7, 6)):
        splits = range(max(0, t - n_b), min(t, n_a) + 1)
        brute = min(float(_exact_p(x, n_a, t - x, n_b)) for x in splits)
        for x in splits:
            assert fisher_exact(x, n_a, t - x, n_b).min_p == pytest.approx(brute, abs=1e-12)
    # no pass at all, or one: no split could be unusual
    assert fisher_exact(0, 5, 0, 5).min_p == 1.0 and fisher_exact(1, 5, 0, 5).min_p == 1.0


def test_tarone_leaves_out_the_cases_that_cannot_reach_the_level():
    # 20 cases: 14 at 0/5 vs 0/5 (can never differ) and 6 with margins of 5 passes
    assert tarone_threshold([1.0] * 14 + [2 / 252] * 6, 0.05) == pytest.approx(0.05 / 6)
    # counted naively (Bonferroni over 20), 5/5 against 0/5 could never be beyond noise
    assert 2 / 252 > 0.05 / 20 and 2 / 252 <= 0.05 / 6
    # brute force: the smallest m with #{mu <= alpha/m} <= m
    rng = np.random.default_rng(4)
    for _ in range(200):
        mus = list(rng.choice([1.0, 0.0476, 0.0079, 0.001, 1e-5], size=rng.integers(1, 30)))
        m = next(m for m in range(1, 100) if sum(mu <= 0.05 / m for mu in mus) <= m)
        assert tarone_threshold(mus, 0.05) == pytest.approx(0.05 / m)
    with pytest.raises(ValueError):
        tarone_threshold([0.1], 1.5)


def test_beyond_noise_skips_cases_without_trials_and_checks_its_input():
    tests, bar = beyond_noise([(5, 5), (0, 0), (0, 5)], [(0, 5), (3, 5), (0, 5)])
    assert tests[1] is None and tests[2].p == 1.0
    assert bar == pytest.approx(0.05)  # one case can reach 0.05: m = 1
    assert tests[0].p <= bar
    for bad in (([(1, 2)], []), ([(3, 2)], [(1, 2)])):
        with pytest.raises(ValueError):
            beyond_noise(*bad)


def test_under_a_true_null_a_comparison_rarely_calls_any_case_beyond_noise():
    """Both subjects with the same case rates, drawing independently (20 + 20 cases, K = 5
    and 10): the share of comparisons with any case beyond noise stays below 0.05; a case
    that really went from 0.95 to 0.05 at K = 10 is found."""
    rng = np.random.default_rng(7)
    for k in (5, 10):
        hits = 0
        for _ in range(400):
            p = np.concatenate([rng.beta(2, 1, 20), rng.beta(1, 4, 20)])
            a, b = rng.binomial(k, p), rng.binomial(k, p)
            tests, bar = beyond_noise([(int(x), k) for x in a], [(int(x), k) for x in b])
            hits += any(t.p <= bar for t in tests)
        assert hits / 400 <= 0.05  # measured 0.005-0.02
    p = np.full(20, 0.5)
    a, b = rng.binomial(10, p), rng.binomial(10, p)
    a[0], b[0] = 10, 0  # one case flipped for real
    tests, bar = beyond_noise([(int(x), 10) for x in a], [(int(x), 10) for x in b])
    assert tests[0].p <= bar
