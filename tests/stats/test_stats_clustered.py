"""ix.stats.clustered: Miller's SEs against statsmodels and scipy; the hierarchical
beta-binomial interval against the pooled Beta interval, brute-force integration and a clock."""

import math

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from ix.stats import clustered
from ix.stats.clustered import clustered_se, hierarchical_interval, hierarchical_mean, paired_se


def _clustered_data(seed, n_clusters=12, per=(1, 9)):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(per[0], per[1], size=n_clusters)
    labels = np.repeat([f"case-{i}" for i in range(n_clusters)], sizes)
    effect = np.repeat(rng.normal(size=n_clusters), sizes)
    values = effect + rng.normal(scale=0.5, size=sizes.sum())
    return values, labels


def _statsmodels_cluster_se(values, labels, **cov_kwds):
    groups = np.unique(labels, return_inverse=True)[1]
    fit = sm.OLS(values, np.ones_like(values)).fit(cov_type="cluster",
                                                   cov_kwds={"groups": groups, **cov_kwds})
    return float(fit.bse[0])


# ---------------------------------------------------------------- clustered_se


@pytest.mark.parametrize("seed", range(5))
def test_clustered_se_equals_statsmodels_ols_cluster_se_without_correction(seed):
    values, labels = _clustered_data(seed)
    expected = _statsmodels_cluster_se(values, labels, use_correction=False)
    assert clustered_se(values, labels) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_statsmodels_default_is_larger_by_sqrt_g_over_g_minus_one(seed):
    values, labels = _clustered_data(seed, n_clusters=7)
    g = len(set(labels))
    default = _statsmodels_cluster_se(values, labels)
    assert default == pytest.approx(clustered_se(values, labels) * math.sqrt(g / (g - 1)),
                                    rel=1e-12)


def test_clustered_se_with_singleton_clusters_is_the_population_sd_over_root_n():
    x = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    assert clustered_se(x, np.arange(5)) == pytest.approx(np.std(x) / math.sqrt(5), rel=1e-14)


def test_all_or_nothing_cases_make_the_clustered_se_far_above_the_naive_one():
    values = np.repeat([1.0, 0.0, 1.0, 1.0, 0.0], 10)
    labels = np.repeat(np.arange(5), 10)
    naive = math.sqrt(0.6 * 0.4 / 50)
    assert clustered_se(values, labels) > 2 * naive
    assert clustered_se(values, labels) == pytest.approx(math.sqrt(0.6 * 0.4 / 5), rel=1e-12)


def test_clustered_se_of_one_cluster_is_zero_and_bad_input_is_rejected():
    assert clustered_se([1.0, 0.0, 1.0], ["a", "a", "a"]) == 0.0
    with pytest.raises(ValueError):
        clustered_se([], [])
    with pytest.raises(ValueError):
        clustered_se([1.0, 2.0], [1])


# ---------------------------------------------------------------- paired_se


@pytest.mark.parametrize("seed", range(4))
def test_paired_se_is_the_denominator_of_scipy_ttest_rel(seed):
    rng = np.random.default_rng(seed)
    a = rng.binomial(1, 0.6, size=40).astype(float)
    b = np.clip(a + rng.normal(scale=0.7, size=40), 0, 1)
    result = stats.ttest_rel(a, b)
    assert paired_se(a, b) == pytest.approx(np.mean(a - b) / result.statistic, rel=1e-12)


def test_clustered_paired_se_is_the_clustered_se_of_the_differences():
    values_a, labels = _clustered_data(9)
    values_b = values_a[::-1].copy()
    d = values_a - values_b
    assert paired_se(values_a, values_b, clusters=labels) == clustered_se(d, labels)
    expected = _statsmodels_cluster_se(d, labels, use_correction=False)
    assert paired_se(values_a, values_b, clusters=labels) == pytest.approx(expected, rel=1e-12)


def test_paired_se_needs_two_pairs_and_equal_lengths():
    with pytest.raises(ValueError):
        paired_se([1.0], [0.0])
    with pytest.raises(ValueError):
        paired_se([1.0, 0.0], [0.0])


# ---------------------------------------------------------------- hierarchical model


@pytest.mark.parametrize("seed", range(4))
def test_one_trial_per_cluster_reduces_to_the_pooled_beta_interval(seed):
    rng = np.random.default_rng(seed)
    k = rng.binomial(1, rng.uniform(0.05, 0.95), size=int(rng.integers(3, 80)))
    n = np.ones_like(k)
    s, m = int(k.sum()), len(k)
    expected = stats.beta.ppf([0.025, 0.975], s + 1, m - s + 1)
    assert hierarchical_interval(k, n) == pytest.approx(tuple(expected), abs=1e-7)
    assert hierarchical_mean(k, n) == pytest.approx((s + 1) / (m + 2), abs=1e-7)


def test_strongly_clustered_data_give_a_wider_interval_than_pooling_the_trials():
    k, n = [10, 0, 10, 10, 0, 9], [10] * 6
    lo, hi = hierarchical_interval(k, n)
    naive_lo, naive_hi = stats.beta.ppf([0.025, 0.975], 39 + 1, 60 - 39 + 1)
    assert lo < naive_lo and hi > naive_hi
    assert hi - lo > 2 * (naive_hi - naive_lo)


def _brute_force_cdf(k, n, theta):
    """P(θ ≤ theta | data) by nested scipy quadrature over (θ, d) with scipy's betabinom."""
    k, n = np.asarray(k), np.asarray(n)

    def joint(d, t):
        return np.exp(np.sum(stats.betabinom.logpmf(k, n, d * t, d * (1 - t))) - d)

    def marginal(t):
        return integrate.quad(joint, 0, np.inf, args=(t,), limit=200)[0]

    below = integrate.quad(marginal, 0, theta, limit=200)[0]
    total = integrate.quad(marginal, 0, 1, limit=200)[0]
    return below / total


def test_hierarchical_interval_matches_brute_force_nested_quadrature():
    k, n = [3, 0, 5, 1], [5, 4, 5, 6]
    lo, hi = hierarchical_interval(k, n, level=0.9)
    assert _brute_force_cdf(k, n, lo) == pytest.approx(0.05, abs=2e-6)
    assert _brute_force_cdf(k, n, hi) == pytest.approx(0.95, abs=2e-6)


def test_hierarchical_grid_has_converged_against_a_finer_grid():
    rng = np.random.default_rng(2)
    n = rng.integers(1, 12, size=40)
    k = rng.binomial(n, rng.beta(0.5, 0.5, size=40))
    pairs, mult = np.unique(np.stack([k, n], axis=1).astype(float), axis=0, return_counts=True)
    key = (tuple(pairs[:, 0]), tuple(pairs[:, 1]), tuple(mult.astype(float)))
    coarse, fine = clustered._marginal(key), clustered._marginal(key, (128, 96))
    for q in (0.025, 0.5, 0.975):
        assert coarse.quantile(q) == pytest.approx(fine.quantile(q), abs=1e-7)


def test_no_data_and_empty_clusters_leave_the_uniform_prior():
    assert hierarchical_interval([], []) == pytest.approx((0.025, 0.975), abs=1e-9)
    assert hierarchical_interval([0, 0], [0, 0], level=0.5) == pytest.approx((0.25, 0.75),
                                                                              abs=1e-9)
    assert hierarchical_mean([], []) == pytest.approx(0.5, abs=1e-9)


def test_ten_thousand_clusters_repeat_exactly_from_a_cold_cache():
    """Its speed (~10–15 ms for 10,000 clusters) is measured by benchmarks/summary_stats.py."""
    rng = np.random.default_rng(0)
    n = rng.integers(1, 31, size=10_000)
    k = rng.binomial(n, rng.beta(2, 3, size=10_000))
    clustered._marginal.cache_clear()
    first = hierarchical_interval(k, n)
    clustered._marginal.cache_clear()
    assert hierarchical_interval(k, n) == first
    assert first[0] < k.sum() / n.sum() < first[1]


def test_clusters_with_many_trials_use_the_grouped_betaln_form_and_agree():
    k, n = np.array([3.0, 400.0, 250.0]), np.array([5.0, 1000.0, 600.0])
    mult = np.array([2.0, 1.0, 1.0])
    loglik = clustered._loglik(k, n, mult)
    log_a, log_b = np.array([-1.0, 0.3, 2.0]), np.array([0.5, -2.0, 1.0])
    ref = sum(w * (stats.betabinom.logpmf(ki, ni, np.exp(log_a), np.exp(log_b))
                   - math.log(math.comb(int(ni), int(ki))))
              for ki, ni, w in zip(k, n, mult, strict=True))
    np.testing.assert_allclose(loglik(log_a, log_b), ref, rtol=1e-11)


def test_hierarchical_rejects_impossible_counts_and_levels():
    with pytest.raises(ValueError):
        hierarchical_interval([3], [2])
    with pytest.raises(ValueError):
        hierarchical_interval([1.5], [2])
    with pytest.raises(ValueError):
        hierarchical_interval([1], [2], level=1.0)


@settings(max_examples=40, deadline=None)
@given(data=st.lists(st.integers(0, 8).flatmap(lambda n: st.tuples(st.integers(0, n),
                                                                    st.just(n))),
                     min_size=1, max_size=15))
def test_hierarchical_interval_is_ordered_inside_zero_one_and_holds_the_mean(data):
    k, n = [d[0] for d in data], [d[1] for d in data]
    lo, hi = hierarchical_interval(k, n)
    assert 0.0 <= lo <= hierarchical_mean(k, n) <= hi <= 1.0
