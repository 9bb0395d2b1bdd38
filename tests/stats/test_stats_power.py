"""ix.stats.power against statsmodels' power functions and multipletests, and against a
brute-force scan of Beta interval widths."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower, normal_sample_size_one_tail
from statsmodels.stats.proportion import (
    proportion_effectsize,
    samplesize_proportions_2indep_onetail,
)

from ix.stats.power import (
    _n_two_proportions,
    holm,
    mde_paired,
    n_for_interval_width,
    n_paired,
    sample_size_two_proportions,
)

PAIRS = [(p1, p2) for p1 in (0.05, 0.2, 0.5, 0.7, 0.93) for p2 in (0.1, 0.3, 0.55, 0.8, 0.97)
         if p1 != p2]
DESIGNS = [(0.05, 0.8), (0.01, 0.9), (0.1, 0.5)]


def _far_tail_rel(alpha, power):
    """Relative amount by which counting the far rejection tail (as NormalIndPower does)
    lowers n: power gains Φ(−2z_{α/2} − z_β), so n drops by about
    2·tail / ((z_{α/2} + z_β)·φ(z_β)) relative; allow twice that, and at least 1e-6."""
    z_a, z_b = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    tail = stats.norm.cdf(-2 * z_a - z_b)
    return max(1e-6, 4 * tail / ((z_a + z_b) * stats.norm.pdf(z_b)))


@pytest.mark.parametrize("alpha,power", DESIGNS)
def test_pooled_matches_statsmodels_samplesize_proportions_2indep_onetail(alpha, power):
    for p1, p2 in PAIRS:
        expected = samplesize_proportions_2indep_onetail(p1 - p2, p2, power, ratio=1, alpha=alpha,
                                                         value=0, alternative="two-sided")
        assert _n_two_proportions(p1, p2, alpha, power, "pooled") == pytest.approx(
            expected, rel=1e-12)
        assert sample_size_two_proportions(p1, p2, alpha, power, "pooled") == math.ceil(expected)


@pytest.mark.parametrize("alpha,power", DESIGNS)
def test_unpooled_matches_statsmodels_with_the_alternative_variance_under_the_null(alpha, power):
    for p1, p2 in PAIRS:
        sd = math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
        expected = normal_sample_size_one_tail(p1 - p2, power, alpha / 2, std_null=sd,
                                               std_alternative=sd)
        assert _n_two_proportions(p1, p2, alpha, power, "unpooled") == pytest.approx(
            expected, rel=1e-12)
        assert sample_size_two_proportions(p1, p2, alpha, power) == math.ceil(expected)
        if expected < 2:
            continue  # NormalIndPower's root finder gives up below n = 1
        # the same design as a standardised two-sample z-test (which also counts the far tail)
        effect = abs(p1 - p2) / math.sqrt((p1 * (1 - p1) + p2 * (1 - p2)) / 2)
        two_tailed = NormalIndPower().solve_power(effect_size=effect, alpha=alpha, power=power,
                                                  ratio=1)
        assert _n_two_proportions(p1, p2, alpha, power, "unpooled") == pytest.approx(
            two_tailed, rel=_far_tail_rel(alpha, power))


@pytest.mark.parametrize("alpha,power", DESIGNS)
def test_cohen_h_matches_statsmodels_normal_ind_power(alpha, power):
    for p1, p2 in PAIRS:
        if _n_two_proportions(p1, p2, alpha, power, "cohen_h") < 2:
            continue  # NormalIndPower's root finder gives up below n = 1
        expected = NormalIndPower().solve_power(effect_size=proportion_effectsize(p1, p2),
                                                alpha=alpha, power=power, ratio=1)
        # statsmodels also counts the far rejection tail: negligible unless power is low
        assert _n_two_proportions(p1, p2, alpha, power, "cohen_h") == pytest.approx(
            expected, rel=_far_tail_rel(alpha, power))
        rounded = sample_size_two_proportions(p1, p2, alpha, power, "cohen_h")
        assert 0 <= rounded - expected < 1 + expected * _far_tail_rel(alpha, power)


def test_pooled_needs_more_cases_than_unpooled_when_rates_are_lopsided():
    assert (sample_size_two_proportions(0.05, 0.3, method="pooled")
            > sample_size_two_proportions(0.05, 0.3, method="unpooled"))


def test_sample_size_rejects_equal_rates_rates_at_the_edge_and_unknown_methods():
    with pytest.raises(ValueError):
        sample_size_two_proportions(0.3, 0.3)
    with pytest.raises(ValueError):
        sample_size_two_proportions(0.0, 0.3)
    with pytest.raises(ValueError, match="cohen_h"):
        sample_size_two_proportions(0.2, 0.3, method="exact")


# ---------------------------------------------------------------- paired MDE (Miller)


def test_mde_paired_is_millers_formula():
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    got = mde_paired(50, sigma2_a=0.2, sigma2_b=0.15, omega2=0.03, k_a=3, k_b=5)
    assert got == pytest.approx(z * math.sqrt((0.03 + 0.2 / 3 + 0.15 / 5) / 50), rel=1e-14)


@pytest.mark.parametrize("n", [4, 30, 200])
def test_mde_paired_matches_a_one_sample_z_test_in_statsmodels(n):
    """Paired differences with variance ω² + σ_A²/K_A + σ_B²/K_B: a one-sample z-test
    (statsmodels' NormalIndPower with ratio=0), which also counts the negligible far tail."""
    var = 0.01 + 0.25 / 2 + 0.21 / 2
    effect = NormalIndPower().solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=0)
    got = mde_paired(n, sigma2_a=0.25, sigma2_b=0.21, omega2=0.01, k_a=2, k_b=2)
    assert got == pytest.approx(effect * math.sqrt(var), rel=_far_tail_rel(0.05, 0.8))


@pytest.mark.parametrize("n", [1, 2, 7, 50, 333, 10_000])
@pytest.mark.parametrize("k", [1, 5])
def test_n_paired_inverts_mde_paired(n, k):
    common = dict(sigma2_a=0.2, sigma2_b=0.24, omega2=0.02, k_a=k, k_b=k, alpha=0.05, power=0.9)
    mde = mde_paired(n, **common)
    assert n_paired(mde, **common) == n
    m = n_paired(mde * 1.001, **common)
    assert mde_paired(m, **common) <= mde * 1.001
    assert m == 1 or mde_paired(m - 1, **common) > mde * 1.001


def test_more_trials_per_case_help_only_down_to_the_between_case_variance():
    common = dict(sigma2_a=0.25, sigma2_b=0.25, omega2=0.01)
    few = n_paired(0.05, **common, k_a=1, k_b=1)
    many = n_paired(0.05, **common, k_a=1000, k_b=1000)
    floor = math.ceil((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 * 0.01 / 0.05**2)
    assert few > many >= floor


def test_paired_power_rejects_negative_variances_and_bad_trial_counts():
    with pytest.raises(ValueError):
        mde_paired(10, sigma2_a=-0.1, sigma2_b=0.1)
    with pytest.raises(ValueError):
        n_paired(0.1, sigma2_a=0.1, sigma2_b=0.1, k_a=0)
    with pytest.raises(ValueError):
        n_paired(0.0, sigma2_a=0.1, sigma2_b=0.1)


# ---------------------------------------------------------------- interval width


def _width(n, p, level=0.95, prior=(1.0, 1.0)):
    k = round(p * n)
    lo, hi = stats.beta.ppf([(1 - level) / 2, (1 + level) / 2], k + prior[0], n - k + prior[1])
    return hi - lo


@pytest.mark.parametrize("width", [0.5, 0.3, 0.2, 0.1])
@pytest.mark.parametrize("p", [0.5, 0.1, 0.02, 0.003, 0.9])
def test_n_for_interval_width_is_the_smallest_n_by_brute_force_scan(width, p):
    n = n_for_interval_width(width, p=p)
    assert _width(n, p) <= width < _width(n - 1, p) if n > 1 else _width(n, p) <= width
    scan = next(m for m in range(1, 10_000) if _width(m, p) <= width)
    assert n == scan


@pytest.mark.parametrize("level,prior", [(0.9, (1.0, 1.0)), (0.99, (0.5, 0.5))])
def test_n_for_interval_width_honours_level_and_prior(level, prior):
    n = n_for_interval_width(0.1, p=0.3, level=level, prior=prior)
    assert _width(n, 0.3, level, prior) <= 0.1 < _width(n - 1, 0.3, level, prior)


def test_a_narrow_width_needs_tens_of_thousands_of_cases():
    n = n_for_interval_width(0.01)
    assert 35_000 < n < 40_000
    assert _width(n, 0.5) <= 0.01 < _width(n - 1, 0.5)


def test_n_for_interval_width_rejects_impossible_targets():
    with pytest.raises(ValueError):
        n_for_interval_width(0.0)
    with pytest.raises(ValueError):
        n_for_interval_width(0.2, p=1.5)


# ---------------------------------------------------------------- Holm


@pytest.mark.parametrize("seed", range(6))
def test_holm_matches_statsmodels_multipletests(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 0.2, size=int(rng.integers(1, 12))) ** 2
    expected = multipletests(p, method="holm")[1]
    np.testing.assert_allclose(holm(list(p)), expected, rtol=1e-14, atol=0)


def test_holm_with_ties_ones_and_nothing():
    p = [0.01, 0.04, 0.01, 1.0, 0.03]
    np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1], rtol=1e-14)
    assert holm([]) == []
    with pytest.raises(ValueError):
        holm([0.5, 1.2])


@settings(max_examples=100, deadline=None)
@given(p=st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_holm_is_monotone_never_below_the_raw_p_and_capped_at_one(p):
    adj = holm(p)
    assert len(adj) == len(p)
    order = np.argsort(p, kind="stable")
    ranked = np.asarray(adj)[order]
    assert np.all(np.diff(ranked) >= 0)
    assert all(a >= q and a <= 1.0 for a, q in zip(adj, p, strict=True))
