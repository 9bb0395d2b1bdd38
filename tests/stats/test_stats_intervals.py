"""ix.stats.intervals against scipy and statsmodels references, plus properties every
binomial interval must have."""

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from ix.stats.intervals import (
    beta_interval,
    clopper_pearson_interval,
    jeffreys_interval,
    wald_interval,
    wilson_interval,
)

NS = [1, 2, 5, 10, 37, 100]
GRID = [(k, n) for n in NS for k in range(n + 1)]
PRIORS = [(1.0, 1.0), (0.5, 0.5), (2.0, 3.0)]
LEVELS = [0.5, 0.8, 0.95, 0.99]


def _hpd(k: int, n: int, level: float = 0.95, prior=(1.0, 1.0)) -> tuple[float, float]:
    return beta_interval(k, n, level, prior=prior, method="hpd")


# ---------------------------------------------------------------- beta_interval, equal-tailed


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("level", [0.8, 0.95])
def test_equal_tailed_matches_scipy_beta_quantiles_for_every_k(prior, level):
    a, b = prior
    for k, n in GRID:
        lo, hi = beta_interval(k, n, level, prior=prior, method="equal_tailed")
        assert isinstance(lo, float) and isinstance(hi, float)
        ref = stats.beta.ppf([(1 - level) / 2, (1 + level) / 2], k + a, n - k + b)
        np.testing.assert_allclose([lo, hi], ref, rtol=1e-12, atol=1e-15, err_msg=f"{k}/{n}")


@pytest.mark.parametrize("prior", PRIORS)
def test_equal_tailed_arrays_match_scipy_and_keep_shape(prior):
    k = np.array([k for k, _ in GRID]).reshape(-1, 1)
    n = np.array([n for _, n in GRID]).reshape(-1, 1)
    lo, hi = beta_interval(k, n, prior=prior, method="equal_tailed")
    assert lo.shape == hi.shape == k.shape
    a, b = prior
    np.testing.assert_allclose(lo, stats.beta.ppf(0.025, k + a, n - k + b), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hi, stats.beta.ppf(0.975, k + a, n - k + b), rtol=1e-12, atol=1e-15)


def test_array_k_broadcasts_against_scalar_n_and_repeats_are_consistent():
    k = np.array([0, 3, 3, 10, 3])
    lo, hi = beta_interval(k, 10)
    for i, ki in enumerate(k):
        assert (lo[i], hi[i]) == beta_interval(int(ki), 10)
    empty_lo, empty_hi = beta_interval(np.array([], dtype=int), np.array([], dtype=int))
    assert empty_lo.shape == empty_hi.shape == (0,)


@pytest.mark.parametrize("prior", PRIORS)
def test_no_trials_gives_the_prior_interval(prior):
    lo, hi = beta_interval(0, 0, prior=prior)
    np.testing.assert_allclose([lo, hi], stats.beta.ppf([0.025, 0.975], *prior), rtol=1e-12)


def test_equal_tailed_interval_excludes_zero_even_when_nothing_passed():
    lo, hi = beta_interval(0, 5, method="equal_tailed")
    assert 0 < lo < 0.005 and hi == pytest.approx(1 - 0.025 ** (1 / 6))


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("level", [0.8, 0.95])
def test_default_is_equal_tailed_inside_and_one_sided_at_the_boundary(prior, level):
    """STATS.md §1: k = 0 gives [0, q_level], k = n gives [q_(1−level), 1], else equal-tailed;
    n = 0 keeps the prior's equal-tailed interval."""
    a, b = prior
    for k, n in GRID:
        lo, hi = beta_interval(k, n, level, prior=prior)
        post = stats.beta(k + a, n - k + b)
        if n > 0 and k == 0:
            ref = [0.0, post.ppf(level)]
        elif n > 0 and k == n:
            ref = [post.ppf(1 - level), 1.0]
        else:
            ref = post.ppf([(1 - level) / 2, (1 + level) / 2])
        np.testing.assert_allclose([lo, hi], ref, rtol=1e-12, atol=1e-15, err_msg=f"{k}/{n}")
        assert post.cdf(hi) - post.cdf(lo) == pytest.approx(level, abs=1e-12)
        if n > 0 and max(a, b) <= 1:  # a strong prior (2, 3) may pull it off k/n
            assert lo <= k / n <= hi


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5)])
def test_default_contains_the_observed_rate_for_every_k_up_to_n_2000(prior):
    for n in (1, 2, 3, 7, 30, 200, 2000):
        k = np.arange(n + 1)
        lo, hi = beta_interval(k, n, prior=prior)
        assert np.all((lo <= k / n) & (k / n <= hi)), n


def test_ten_of_ten_reaches_one_and_zero_of_ten_reaches_zero():
    # the case: 1.0 [0.715, 0.998] becomes 1.0 [0.762, 1.0]
    assert beta_interval(10, 10) == (pytest.approx(0.05 ** (1 / 11)), 1.0)
    assert beta_interval(0, 10) == (0.0, pytest.approx(1 - 0.05 ** (1 / 11)))
    lo, hi = beta_interval(np.array([0, 5, 10]), np.array([10, 10, 10]))
    assert lo[0] == 0.0 and hi[2] == 1.0 and 0 < lo[1] < 0.5 < hi[1] < 1


# ------------------------------------------------------------------------- beta_interval, HPD


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("level", [0.8, 0.95])
def test_hpd_holds_level_has_equal_end_densities_and_is_no_wider_than_equal_tailed(prior, level):
    a, b = prior
    for k, n in GRID:
        lo, hi = _hpd(k, n, level, prior)
        post = stats.beta(k + a, n - k + b)
        assert post.cdf(hi) - post.cdf(lo) == pytest.approx(level, abs=1e-10), (k, n)
        if lo > 0 and hi < 1:
            assert post.logpdf(lo) == pytest.approx(post.logpdf(hi), abs=1e-7), (k, n)
        et_lo, et_hi = beta_interval(k, n, level, prior=prior)
        assert hi - lo <= et_hi - et_lo + 1e-12, (k, n)


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 5), (1, 5), (2, 5), (17, 37), (3, 100)])
def test_hpd_is_the_shortest_interval_found_by_brute_force(prior, k, n):
    post = stats.beta(k + prior[0], n - k + prior[1])
    tails = np.linspace(0, 0.05, 20_001)
    widths = post.ppf(tails + 0.95) - post.ppf(tails)
    lo, hi = _hpd(k, n, 0.95, prior)
    assert hi - lo <= widths.min() + 1e-12
    assert hi - lo >= widths.min() - 1e-6  # the grid's best is close to the true optimum


@pytest.mark.parametrize("n", [1, 5, 37])
def test_hpd_is_anchored_at_zero_when_none_pass_and_at_one_when_all_pass(n):
    assert _hpd(0, n) == (0.0, pytest.approx(1 - 0.05 ** (1 / (n + 1)), rel=1e-12))
    assert _hpd(n, n) == (pytest.approx(0.05 ** (1 / (n + 1)), rel=1e-12), 1.0)


def test_hpd_of_a_flat_posterior_is_the_central_interval():
    assert _hpd(0, 0) == pytest.approx((0.025, 0.975))


def test_hpd_of_a_u_shaped_prior_is_the_shorter_end_interval():
    lo, hi = _hpd(0, 0, prior=(0.5, 0.5))
    assert lo == 0.0 and hi == pytest.approx(stats.beta.ppf(0.95, 0.5, 0.5))
    lo, hi = _hpd(0, 0, prior=(0.4, 0.6))  # more mass near 0: the interval at 0 is shorter
    assert lo == 0.0 and hi == pytest.approx(stats.beta.ppf(0.95, 0.4, 0.6))
    lo, hi = _hpd(0, 0, prior=(0.6, 0.4))
    assert hi == 1.0 and lo == pytest.approx(stats.beta.ppf(0.05, 0.6, 0.4))


def test_hpd_arrays_match_scalar_calls():
    k, n = np.array([[0, 2], [5, 2]]), np.array([[5, 5], [5, 5]])
    lo, hi = beta_interval(k, n, method="hpd")
    assert lo.shape == (2, 2)
    for i in np.ndindex(k.shape):
        assert (lo[i], hi[i]) == _hpd(int(k[i]), int(n[i]))


# ------------------------------------------------------------ frequentist methods vs statsmodels


@pytest.mark.parametrize("level", LEVELS)
def test_wilson_matches_statsmodels(level):
    for k, n in GRID:
        ref = proportion_confint(k, n, alpha=1 - level, method="wilson")
        np.testing.assert_allclose(wilson_interval(k, n, level), ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("level", LEVELS)
def test_clopper_pearson_matches_statsmodels_beta_and_reaches_the_edges(level):
    for k, n in GRID:
        lo, hi = clopper_pearson_interval(k, n, level)
        ref = proportion_confint(k, n, alpha=1 - level, method="beta")
        np.testing.assert_allclose((lo, hi), ref, rtol=1e-12, atol=1e-15)
        assert (lo == 0.0) == (k == 0) and (hi == 1.0) == (k == n)


@pytest.mark.parametrize("level", LEVELS)
def test_jeffreys_matches_statsmodels_inside_and_uses_the_boundary_convention(level):
    for k, n in GRID:
        lo, hi = jeffreys_interval(k, n, level)
        ref_lo, ref_hi = proportion_confint(k, n, alpha=1 - level, method="jeffreys")
        assert lo == (0.0 if k == 0 else pytest.approx(ref_lo, rel=1e-12, abs=1e-15))
        assert hi == (1.0 if k == n else pytest.approx(ref_hi, rel=1e-12, abs=1e-15))


@pytest.mark.parametrize("level", LEVELS)
def test_wald_matches_statsmodels_normal_clipped(level):
    for k, n in GRID:
        ref = proportion_confint(k, n, alpha=1 - level, method="normal")
        np.testing.assert_allclose(wald_interval(k, n, level), ref, rtol=1e-12, atol=1e-15)


def test_wald_collapses_to_a_point_when_nothing_passed():
    assert wald_interval(0, 5) == (0.0, 0.0)


@pytest.mark.parametrize(
    "method", [wilson_interval, clopper_pearson_interval, jeffreys_interval, wald_interval]
)
def test_no_trials_gives_the_whole_unit_interval(method):
    assert method(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    "method", [wilson_interval, clopper_pearson_interval, jeffreys_interval, wald_interval]
)
def test_frequentist_arrays_match_scalar_calls(method):
    k = np.array([k for k, _ in GRID])
    n = np.array([n for _, n in GRID])
    lo, hi = method(k, n)
    np.testing.assert_array_equal(np.array([method(*kn) for kn in GRID]), np.stack([lo, hi], 1))


# ----------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("k", "n", "message"),
    [
        (-1, 5, "non-negative whole number"),
        (6, 5, "k <= n"),
        (2.5, 5, "whole number"),
        (1, 5.5, "whole number"),
        (float("nan"), 5, "whole number"),
        (np.array([1, 7]), np.array([5, 5]), "k=7, n=5"),
    ],
)
@pytest.mark.parametrize(
    "method",
    [beta_interval, wilson_interval, clopper_pearson_interval, jeffreys_interval, wald_interval],
)
def test_bad_counts_are_rejected_with_a_message_naming_the_problem(method, k, n, message):
    with pytest.raises(ValueError, match=message):
        method(k, n)


@pytest.mark.parametrize("level", [0.0, 1.0, 95, -0.5, float("nan")])
@pytest.mark.parametrize(
    "method",
    [beta_interval, wilson_interval, clopper_pearson_interval, jeffreys_interval, wald_interval],
)
def test_level_outside_zero_one_is_rejected(method, level):
    with pytest.raises(ValueError, match="level must be a probability"):
        method(1, 5, level)


@pytest.mark.parametrize("prior", [(0.0, 1.0), (1.0, -2.0), (1.0, float("inf"))])
def test_non_positive_prior_is_rejected(prior):
    with pytest.raises(ValueError, match="prior must be two positive numbers"):
        beta_interval(1, 5, prior=prior)


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="'equal_tailed' or 'hpd'"):
        beta_interval(1, 5, method="shortest")  # type: ignore[call-overload]


def test_whole_valued_floats_are_accepted_as_counts():
    assert beta_interval(2.0, 5.0) == beta_interval(2, 5)
    assert beta_interval(np.int64(2), np.int64(5)) == beta_interval(2, 5)


# ------------------------------------------------------------------------------------- properties

METHODS: dict[str, Callable[[int, int], tuple[float, float]]] = {
    "beta": lambda k, n: beta_interval(k, n),
    "beta_jeffreys_prior": lambda k, n: beta_interval(k, n, prior=(0.5, 0.5)),
    "hpd": lambda k, n: _hpd(k, n),
    "wilson": wilson_interval,
    "clopper_pearson": clopper_pearson_interval,
    "jeffreys": jeffreys_interval,
}
counts = st.integers(0, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@pytest.mark.parametrize("name", [*METHODS, "wald"])
@given(kn=counts)
@settings(max_examples=60, deadline=None)
def test_bounds_lie_in_unit_interval_and_are_ordered(name, kn):
    lo, hi = (METHODS.get(name) or wald_interval)(*kn)
    assert 0.0 <= lo <= hi <= 1.0


@pytest.mark.parametrize("name", METHODS)
@given(kn=counts.filter(lambda kn: kn[0] < kn[1]))
@settings(max_examples=60, deadline=None)
def test_both_ends_are_non_decreasing_in_successes(name, kn):
    k, n = kn
    lo, hi = METHODS[name](k, n)
    lo_next, hi_next = METHODS[name](k + 1, n)
    assert lo <= lo_next + 1e-12 and hi <= hi_next + 1e-12


@pytest.mark.parametrize("name", METHODS)
@given(kn=counts)
@settings(max_examples=60, deadline=None)
def test_swapping_successes_and_failures_mirrors_the_interval(name, kn):
    k, n = kn
    lo, hi = METHODS[name](k, n)
    mirror_lo, mirror_hi = METHODS[name](n - k, n)
    assert lo == pytest.approx(1 - mirror_hi, abs=1e-9)
    assert hi == pytest.approx(1 - mirror_lo, abs=1e-9)


@given(kn=counts, levels=st.tuples(st.floats(0.01, 0.99), st.floats(0.01, 0.99)))
@settings(max_examples=60, deadline=None)
def test_higher_level_gives_a_nested_wider_interval(kn, levels):
    low, high = sorted(levels)
    for method in ("equal_tailed", "hpd"):
        lo_a, hi_a = beta_interval(*kn, low, method=method)
        lo_b, hi_b = beta_interval(*kn, high, method=method)
        assert hi_b - lo_b >= hi_a - lo_a - 1e-12
    lo_a, hi_a = beta_interval(*kn, low)
    lo_b, hi_b = beta_interval(*kn, high)
    assert lo_b <= lo_a + 1e-12 and hi_a <= hi_b + 1e-12
