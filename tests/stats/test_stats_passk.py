"""pass@k and pass^k against exact fractions, unbiasedness, and the per-case averages."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ix.stats.passk import k_levels, mean_pass_at_k, mean_pass_hat_k, pass_at_k, pass_hat_k


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def exact_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


ALL_SMALL = [(n, c, k) for n in range(1, 21) for c in range(n + 1) for k in range(1, n + 1)]


def test_pass_at_k_equals_exact_fraction_for_every_n_up_to_20():
    for n, c, k in ALL_SMALL:
        exact = float(exact_pass_at_k(n, c, k))
        assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-13, abs=0)


def test_pass_hat_k_equals_exact_fraction_for_every_n_up_to_20():
    for n, c, k in ALL_SMALL:
        exact = float(exact_pass_hat_k(n, c, k))
        assert pass_hat_k(n, c, k) == pytest.approx(exact, rel=1e-13, abs=0)


def test_edge_values_are_exact():
    assert pass_at_k(10, 0, 3) == 0.0
    assert pass_at_k(10, 8, 3) == 1.0  # n - c = 2 < k: every draw of 3 includes a pass
    assert pass_hat_k(10, 2, 3) == 0.0  # c < k
    assert pass_hat_k(10, 10, 3) == 1.0


@pytest.mark.parametrize(
    ("c", "k"), [(1, 1), (1, 100), (17, 3), (500, 10), (5_000, 2), (9_990, 20), (10_000, 10_000)]
)
def test_huge_n_stays_finite_and_accurate(c, k):
    n = 10_000
    at_k, hat_k = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert 0.0 <= at_k <= 1.0 and 0.0 <= hat_k <= 1.0
    assert at_k == pytest.approx(float(exact_pass_at_k(n, c, k)), rel=1e-12, abs=0)
    assert hat_k == pytest.approx(float(exact_pass_hat_k(n, c, k)), rel=1e-10, abs=0)


@pytest.mark.parametrize(("n", "k"), [(5, 1), (5, 3), (10, 4), (20, 20)])
@pytest.mark.parametrize("p", [0.05, 0.3, 0.9])
def test_estimators_are_unbiased_where_the_plug_ins_are_not(n, k, p):
    c = np.arange(n + 1)
    weights = stats.binom.pmf(c, n, p)
    at_k = sum(w * pass_at_k(n, int(ci), k) for ci, w in zip(c, weights, strict=True))
    hat_k = sum(w * pass_hat_k(n, int(ci), k) for ci, w in zip(c, weights, strict=True))
    assert at_k == pytest.approx(1 - (1 - p) ** k, rel=1e-12, abs=0)
    assert hat_k == pytest.approx(p**k, rel=1e-10, abs=0)
    if k > 1:
        assert np.dot(weights, (c / n) ** k) != pytest.approx(p**k, rel=1e-3, abs=0)


def test_k_of_one_is_the_pass_rate():
    for n, c, _ in ALL_SMALL:
        assert pass_at_k(n, c, 1) == pytest.approx(c / n) == pass_hat_k(n, c, 1)


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (5, 6, 1, "0 <= c <= n"),
        (5, -1, 1, "0 <= c <= n"),
        (5, 2, 0, "1 <= k <= n"),
        (5, 2, 6, "1 <= k <= n"),
        (5.5, 2, 1, "n must be a whole number"),
        (5, 2.5, 1, "c must be a whole number"),
    ],
)
def test_bad_counts_are_rejected(n, c, k, message):
    for fun in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match=message):
            fun(n, c, k)


# ---------------------------------------------------------------------------- per-case averages


def test_means_equal_the_average_of_per_case_values_and_skip_cases_with_too_few_trials():
    rng = np.random.default_rng(7)
    ns = rng.integers(1, 30, 3_000)
    cs = rng.binomial(ns, rng.uniform(size=ns.size))
    k = 5
    kept = [(int(n), int(c)) for n, c in zip(ns, cs, strict=True) if n >= k]
    assert len(kept) < ns.size  # some cases really are skipped
    assert mean_pass_at_k(ns, cs, k) == pytest.approx(
        float(np.mean([pass_at_k(n, c, k) for n, c in kept])), rel=1e-13
    )
    assert mean_pass_hat_k(ns, cs, k) == pytest.approx(
        float(np.mean([pass_hat_k(n, c, k) for n, c in kept])), rel=1e-13
    )


def test_means_handle_fifty_thousand_cases_and_lists():
    rng = np.random.default_rng(11)
    ns = rng.integers(1, 40, 50_000)
    cs = rng.binomial(ns, 0.4)
    value = mean_pass_at_k(ns, cs, 3)
    assert 0.0 < value < 1.0
    assert mean_pass_at_k(list(ns), list(cs), 3) == value
    assert mean_pass_hat_k([4, 4], [4, 2], 2) == pytest.approx((1 + 1 / 6) / 2)


def test_means_are_nan_when_no_case_has_k_trials():
    assert math.isnan(mean_pass_at_k([1, 2], [1, 0], 3))
    assert math.isnan(mean_pass_hat_k([], [], 1))


@pytest.mark.parametrize(
    ("ns", "cs", "k", "message"),
    [
        ([3, 4], [1], 1, "equal length"),
        ([3, 4], [1, 5], 1, "case 1 has n=4, c=5"),
        ([3, 4], [1, -1], 1, "0 <= c <= n"),
        ([3, 4.5], [1, 1], 1, "whole numbers"),
        ([3, 4], [1, 1], 0, "k must be a whole number >= 1"),
    ],
)
def test_bad_case_arrays_are_rejected(ns, cs, k, message):
    for fun in (mean_pass_at_k, mean_pass_hat_k):
        with pytest.raises(ValueError, match=message):
            fun(ns, cs, k)


# ------------------------------------------------------------------------------------ properties

nck = st.integers(1, 400).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
)


@given(nck=nck)
@settings(max_examples=200, deadline=None)
def test_values_are_probabilities_and_all_pass_never_exceeds_any_pass(nck):
    n, c, k = nck
    at_k, hat_k = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert 0.0 <= hat_k <= at_k * (1 + 1e-14) and at_k <= 1.0  # equal at k = 1, up to rounding


@given(nck=nck)
@settings(max_examples=200, deadline=None)
def test_more_passes_raise_both_and_larger_k_raises_pass_at_k_but_lowers_pass_hat_k(nck):
    n, c, k = nck
    if c < n:
        assert pass_at_k(n, c + 1, k) >= pass_at_k(n, c, k)
        assert pass_hat_k(n, c + 1, k) >= pass_hat_k(n, c, k)
    if k < n:
        assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k)
        assert pass_hat_k(n, c, k + 1) <= pass_hat_k(n, c, k)


def test_k_levels_list_every_k_to_32_then_the_doublings_and_the_largest():
    assert k_levels(0) == [] and k_levels(1) == [1] and k_levels(9) == list(range(1, 10))
    assert k_levels(32) == list(range(1, 33))
    assert k_levels(33) == [*range(1, 33), 33]
    assert k_levels(64) == [*range(1, 33), 64]
    assert k_levels(2500) == [*range(1, 33), 64, 128, 256, 512, 1024, 2048, 2500]
