"""ix.stats.paired_probit: the bivariate normal CDF against scipy, the posterior against a
fixed-seed importance-sampling estimate from the prior (what `bayes_evals` does), symmetry,
and convergence of the quadrature grid."""


import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import ndtri

from ix.stats import paired_probit
from ix.stats.comparisons import paired_diff_interval
from ix.stats.paired_probit import (
    bivariate_normal_cdf,
    probit_diff_interval,
    probit_prob_a_beats_b,
)

# ---------------------------------------------------------------- Φ₂

HS = [-6.0, -2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 2.2, 5.0]
RHOS = [-0.99999, -0.999, -0.95, -0.6, -0.1, 0.0, 0.3, 0.8, 0.99, 0.999, 0.99999]


def _scipy_bvn(h, k, rho):
    return stats.multivariate_normal(mean=[0.0, 0.0], cov=[[1.0, rho], [rho, 1.0]]).cdf([h, k])


@pytest.mark.parametrize("rho", RHOS)
def test_bivariate_cdf_matches_scipy_on_a_grid_including_zero_thresholds(rho):
    h, k = np.meshgrid(HS, HS, indexing="ij")
    got = bivariate_normal_cdf(h, k, rho)
    assert got.shape == h.shape
    ref = np.array([[_scipy_bvn(a, b, rho) for b in HS] for a in HS])
    np.testing.assert_allclose(got, ref, atol=1e-12, rtol=0)


def test_bivariate_cdf_at_the_origin_is_sheppards_formula():
    rho = np.array(RHOS)
    np.testing.assert_allclose(bivariate_normal_cdf(0.0, 0.0, rho),
                               0.25 + np.arcsin(rho) / (2 * np.pi), atol=1e-15)


def test_bivariate_cdf_limits_at_rho_plus_and_minus_one_and_zero():
    h = np.array([-1.0, 0.0, 0.5, 2.0])
    k = np.array([0.3, 0.0, -0.5, 1.0])
    np.testing.assert_allclose(bivariate_normal_cdf(h, k, 1.0),
                               stats.norm.cdf(np.minimum(h, k)), atol=1e-15)
    np.testing.assert_allclose(bivariate_normal_cdf(h, k, -1.0),
                               np.maximum(0, stats.norm.cdf(h) + stats.norm.cdf(k) - 1),
                               atol=1e-15)
    np.testing.assert_allclose(bivariate_normal_cdf(h, k, 0.0),
                               stats.norm.cdf(h) * stats.norm.cdf(k), atol=1e-15)
    # continuous into the limits
    np.testing.assert_allclose(bivariate_normal_cdf(h, k, 1 - 1e-12),
                               bivariate_normal_cdf(h, k, 1.0), atol=1e-5)


def test_bivariate_cdf_broadcasts_and_rejects_an_impossible_correlation():
    out = bivariate_normal_cdf(np.zeros((3, 1)), np.zeros((1, 4)), 0.5)
    assert out.shape == (3, 4)
    with pytest.raises(ValueError):
        bivariate_normal_cdf(0.0, 0.0, 1.5)


@pytest.mark.parametrize("h, k", [(5e-324, 5e-324), (-5e-324, 5e-324), (1e-310, -1e-310),
                                  (2.2e-308, 0.0), (-1e-250, -1e-250)])
@pytest.mark.parametrize("rho", [-0.999, -0.3, 0.0, 0.875, 0.999999])
def test_subnormal_thresholds_give_the_orthant_probability_not_nan(h, k, rho):
    """At h, k ~ 0 (below 1e-200, where h·√(1−ρ²) underflowed to a 0/0 — found by hypothesis
    at h = k = 5e-324), Φ₂ is the orthant probability ¼ + asin(ρ)/2π."""
    assert float(bivariate_normal_cdf(h, k, rho)) == pytest.approx(
        0.25 + math.asin(rho) / (2 * math.pi), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(h=st.floats(-8, 8), k=st.floats(-8, 8), rho=st.floats(-1, 1))
def test_bivariate_cdf_is_a_probability_below_both_marginals(h, k, rho):
    p = float(bivariate_normal_cdf(h, k, rho))
    assert 0.0 <= p <= min(stats.norm.cdf(h), stats.norm.cdf(k)) + 1e-14
    assert p >= stats.norm.cdf(h) + stats.norm.cdf(k) - 1 - 1e-14


# ---------------------------------------------------------------- the posterior


def _importance_sample(table, size, seed):
    """bayes_evals-style: draw (θ_A, θ_B, ρ) from the prior, weight by the likelihood."""
    rng = np.random.default_rng(seed)
    ta, tb = rng.uniform(size=size), rng.uniform(size=size)
    rho = 2 * rng.beta(4, 2, size=size) - 1
    both = bivariate_normal_cdf(ndtri(ta), ndtri(tb), rho)
    cells = np.clip(np.stack([both, ta - both, tb - both, 1 - ta - tb + both]), 1e-300, 1)
    loglik = np.asarray(table, float) @ np.log(cells)
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    d = ta - tb
    order = np.argsort(d)
    cum = np.cumsum(w[order])
    lo, hi = d[order][np.searchsorted(cum, [0.025, 0.975])]
    return float(w @ (d > 0)), (float(lo), float(hi))


@pytest.mark.parametrize("table", [(5, 3, 1, 1), (12, 7, 3, 8), (3, 0, 2, 5), (30, 8, 3, 19)])
def test_probit_posterior_agrees_with_fixed_seed_importance_sampling_from_the_prior(table):
    p_is, (lo_is, hi_is) = _importance_sample(table, size=1_000_000, seed=20250314)
    assert probit_prob_a_beats_b(*table) == pytest.approx(p_is, abs=0.004)
    lo, hi = probit_diff_interval(*table)
    assert lo == pytest.approx(lo_is, abs=0.006)
    assert hi == pytest.approx(hi_is, abs=0.006)


def test_no_data_gives_the_prior_one_half_and_the_triangular_prior_interval():
    assert probit_prob_a_beats_b(0, 0, 0, 0) == pytest.approx(0.5, abs=1e-9)
    # θ_A − θ_B of two independent uniforms is triangular: q_0.975 = 1 − √0.05
    lo, hi = probit_diff_interval(0, 0, 0, 0)
    assert (lo, hi) == pytest.approx((-(1 - np.sqrt(0.05)), 1 - np.sqrt(0.05)), abs=1e-6)


@pytest.mark.parametrize("table", [(5, 3, 1, 1), (0, 4, 0, 0), (40, 5, 2, 53), (300, 2, 9, 500)])
def test_swapping_the_subjects_gives_the_complement_and_a_mirrored_interval(table):
    s, t, u, v = table
    assert probit_prob_a_beats_b(s, u, t, v) == pytest.approx(
        1 - probit_prob_a_beats_b(s, t, u, v), abs=1e-8)
    lo, hi = probit_diff_interval(s, t, u, v)
    lo2, hi2 = probit_diff_interval(s, u, t, v)
    assert (lo, hi) == pytest.approx((-hi2, -lo2), abs=1e-7)


@pytest.mark.parametrize("table", [(5, 3, 1, 1), (0, 5, 0, 0), (100, 0, 0, 0), (40, 5, 2, 53),
                                   (500, 0, 0, 500), (3000, 120, 80, 6800)])
def test_quadrature_has_converged_a_grid_twice_as_fine_agrees(table):
    coarse = paired_probit._grid(table)
    fine = paired_probit._grid(table, tuple(2 * n for n in paired_probit.NODES))
    lo, hi = probit_diff_interval(*table)
    for d in (lo, 0.0, hi, (lo + hi) / 2):
        assert coarse.cdf(d) == pytest.approx(fine.cdf(d), abs=1e-5)


def test_at_large_n_the_probit_and_dirichlet_intervals_nearly_agree():
    """The data dominate both priors once discordant pairs are plentiful."""
    table = (3000, 120, 80, 6800)
    probit = probit_diff_interval(*table)
    dirichlet = paired_diff_interval(*table)
    assert probit == pytest.approx(dirichlet, abs=1e-4)


def test_one_call_is_deterministic_from_a_cold_cache():
    table = (412, 37, 21, 530)
    paired_probit._grid.cache_clear()
    first = probit_prob_a_beats_b(*table), probit_diff_interval(*table)
    paired_probit._grid.cache_clear()
    assert (probit_prob_a_beats_b(*table), probit_diff_interval(*table)) == first


def test_probit_rejects_bad_counts_and_levels():
    with pytest.raises(ValueError):
        probit_prob_a_beats_b(1, -1, 0, 0)
    with pytest.raises(ValueError):
        probit_diff_interval(1, 0.5, 0, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        probit_diff_interval(1, 1, 0, 0, level=0.0)


@settings(max_examples=25, deadline=None)
@given(table=st.tuples(*(st.integers(0, 200) for _ in range(4))))
def test_probit_probability_and_interval_are_well_formed(table):
    p = probit_prob_a_beats_b(*table)
    assert 0.0 <= p <= 1.0
    lo, hi = probit_diff_interval(*table)
    assert -1.0 <= lo <= hi <= 1.0
