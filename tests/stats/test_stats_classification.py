"""Precision, recall and F1 intervals against scipy, a Dirichlet integral and Monte Carlo."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from ix.stats.classification import (
    DIRICHLET_F1_PRIOR,
    f1_interval,
    precision_interval,
    recall_interval,
)

TABLES = [(0, 0, 0), (1, 0, 0), (0, 3, 2), (3, 1, 2), (10, 0, 5), (25, 3, 7), (40, 40, 40)]
LEVELS = [0.8, 0.95]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("tp", "fp", "fn"), TABLES)
def test_precision_and_recall_are_beta_quantiles(tp, fp, fn, level):
    q = [(1 - level) / 2, (1 + level) / 2]
    np.testing.assert_allclose(
        precision_interval(tp, fp, level, method="equal_tailed"),
        stats.beta.ppf(q, tp + 1, fp + 1), rtol=1e-12
    )
    np.testing.assert_allclose(
        recall_interval(tp, fn, level, method="equal_tailed"),
        stats.beta.ppf(q, tp + 1, fn + 1), rtol=1e-12
    )


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("tp", "fp", "fn"), TABLES)
def test_f1_interval_is_the_monotone_transform_of_the_beta_interval(tp, fp, fn, level):
    q = [(1 - level) / 2, (1 + level) / 2]
    u = stats.beta.ppf(q, tp + 1, fp + fn + 1)  # the default: flat on U
    np.testing.assert_allclose(f1_interval(tp, fp, fn, level, method="equal_tailed"),
                               2 * u / (1 + u), rtol=1e-12)
    u = stats.beta.ppf(q, tp + 1, fp + fn + 2)  # U's marginal under Dirichlet(1, 1, 1, 1)
    got = f1_interval(tp, fp, fn, level, DIRICHLET_F1_PRIOR, method="equal_tailed")
    np.testing.assert_allclose(got, 2 * u / (1 + u), rtol=1e-12)


def _f1_cdf_by_dirichlet_integral(f: float, tp: int, fp: int, fn: int) -> float:
    """P(F1 <= f) integrating the Dirichlet(tp+1, fp+1, fn+1) density of the shares (x, y, z) of
    TP, FP, FN among them (TN drops out); F1 = 2x/(2x + y + z) <= f  <=>  x <= f / (2 - f)."""
    a = np.array([tp + 1, fp + 1, fn + 1], dtype=float)
    log_norm = special.gammaln(a.sum()) - special.gammaln(a).sum()

    def density(y: float, x: float) -> float:
        z = max(1.0 - x - y, 0.0)
        return float(np.exp(log_norm) * x ** (a[0] - 1) * y ** (a[1] - 1) * z ** (a[2] - 1))

    value, _ = integrate.dblquad(
        density, 0.0, f / (2 - f), 0.0, lambda x: 1.0 - x, epsabs=1e-12, epsrel=1e-10
    )
    return value


@pytest.mark.parametrize(("tp", "fp", "fn"), [(0, 0, 0), (3, 1, 2), (10, 0, 5), (2, 6, 3)])
def test_f1_interval_ends_sit_at_the_right_posterior_quantiles(tp, fp, fn):
    lo, hi = f1_interval(tp, fp, fn, prior=DIRICHLET_F1_PRIOR)
    assert _f1_cdf_by_dirichlet_integral(lo, tp, fp, fn) == pytest.approx(0.025, abs=1e-7)
    assert _f1_cdf_by_dirichlet_integral(hi, tp, fp, fn) == pytest.approx(0.975, abs=1e-7)


@pytest.mark.parametrize(("tp", "fp", "fn", "tn"), [(3, 1, 2, 30), (12, 4, 0, 5), (0, 2, 2, 0)])
def test_f1_interval_agrees_with_seeded_monte_carlo_from_the_four_cell_dirichlet(tp, fp, fn, tn):
    draws = np.random.default_rng(20250314).dirichlet([tp + 1, fp + 1, fn + 1, tn + 1], 400_000)
    f1 = 2 * draws[:, 0] / (2 * draws[:, 0] + draws[:, 1] + draws[:, 2])
    lo, hi = f1_interval(tp, fp, fn, prior=DIRICHLET_F1_PRIOR, method="equal_tailed")
    # the binomial sd of a 2.5% tail over 400k draws is 0.00025; allow six of them
    assert np.mean(f1 < lo) == pytest.approx(0.025, abs=0.0015)
    assert np.mean(f1 > hi) == pytest.approx(0.025, abs=0.0015)


def test_true_negatives_do_not_enter_f1_and_perfect_classifier_reaches_one():
    lo, hi = f1_interval(50, 0, 0)
    assert 0.9 < lo < hi == 1.0
    assert f1_interval(50, 0, 0, method="equal_tailed")[1] < 1.0


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("prior", [1.0, 0.5])
@pytest.mark.parametrize(("tp", "fp", "fn"), TABLES)
def test_default_rule_is_one_sided_at_the_boundaries(tp, fp, fn, level, prior):
    """STATS.md §1: equal-tailed, except [0, q_level] at k = 0 and [q_(1−level), 1] at k = n —
    for precision (k = TP of TP + FP), recall (TP of TP + FN) and F1's U (TP = 0 or
    FP + FN = 0); exactly `level` of posterior mass, and the estimate inside."""
    def expected(a: float, b: float, at_zero: bool, at_one: bool) -> list[float]:
        post = stats.beta(a, b)
        if at_zero:
            return [0.0, post.ppf(level)]
        if at_one:
            return [post.ppf(1 - level), 1.0]
        return list(post.ppf([(1 - level) / 2, (1 + level) / 2]))

    # a Dirichlet(α, α, α, α) prior: precision, recall ~ Beta(α, α), U ~ Beta(α, 2α)
    for got, (k, m) in [(precision_interval(tp, fp, level, (prior, prior)), (tp, fp)),
                        (recall_interval(tp, fn, level, (prior, prior)), (tp, fn))]:
        ref = expected(k + prior, m + prior, k == 0 < m, m == 0 < k)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)
        if k + m:
            assert got[0] <= k / (k + m) <= got[1]
    u = expected(tp + prior, fp + fn + 2 * prior, tp == 0 < fp + fn, fp + fn == 0 < tp)
    got = f1_interval(tp, fp, fn, level, (prior, 2 * prior))
    np.testing.assert_allclose(got, [2 * x / (1 + x) for x in u], rtol=1e-12, atol=1e-15)
    if tp + fp + fn:
        assert got[0] <= 2 * tp / (2 * tp + fp + fn) <= got[1]


def test_near_perfect_f1_of_the_issue_contains_its_estimate():
    # the issue: "F1 1.000 [0.64, 0.98]" for a skill that got every case right
    lo, hi = f1_interval(10, 0, 0)
    u = stats.beta.ppf(0.05, 11, 1)  # flat on U: U ~ Beta(11, 1)
    assert hi == 1.0 and lo == pytest.approx(2 * u / (1 + u), rel=1e-12)


def test_prior_median_of_f1_under_the_uniform_dirichlet_is_0453():
    # U ~ Beta(1, 2) a priori: median 1 − √½, so F1's prior median is g(1 − √½) ≈ 0.4531
    u = stats.beta.ppf(0.5, 1, 2)
    assert 2 * u / (1 + u) == pytest.approx(0.4531, abs=1e-4)
    draws = np.random.default_rng(7).dirichlet([1, 1, 1, 1], 200_000)
    f1 = 2 * draws[:, 0] / (2 * draws[:, 0] + draws[:, 1] + draws[:, 2])
    assert np.median(f1) == pytest.approx(0.4531, abs=0.004)


def test_arrays_broadcast_and_match_scalar_calls():
    tp, fp, fn = np.array([0, 3, 10]), np.array([1, 1, 0]), 2
    for fun, args in [
        (precision_interval, (tp, fp)),
        (recall_interval, (tp, fn)),
        (f1_interval, (tp, fp, fn)),
    ]:
        lo, hi = fun(*args)
        assert lo.shape == (3,)
        for i in range(3):
            scalar_args = [int(np.broadcast_to(a, (3,))[i]) for a in args]
            assert (lo[i], hi[i]) == fun(*scalar_args)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: precision_interval(-1, 2), "tp must be a non-negative whole number"),
        (lambda: precision_interval(1, 2.5), "fp must be a non-negative whole number"),
        (lambda: recall_interval(1, -3), "fn must be a non-negative whole number"),
        (lambda: f1_interval(1, 1, float("nan")), "fn must be a non-negative whole number"),
        (lambda: f1_interval(1, 1, 1, level=1.5), "level must be a probability"),
    ],
)
def test_bad_input_is_rejected_with_a_message_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


tables = st.tuples(st.integers(0, 200), st.integers(0, 200), st.integers(0, 200))


@given(t=tables)
@settings(max_examples=80, deadline=None)
def test_f1_interval_is_ordered_in_unit_interval_and_moves_up_with_tp_down_with_fp(t):
    tp, fp, fn = t
    lo, hi = f1_interval(tp, fp, fn)
    assert 0.0 <= lo <= hi <= 1.0
    more_tp_lo, more_tp_hi = f1_interval(tp + 1, fp, fn)
    more_fp_lo, more_fp_hi = f1_interval(tp, fp + 1, fn)
    assert more_tp_lo >= lo and more_tp_hi >= hi  # a true positive can only help
    assert more_fp_lo <= lo and more_fp_hi <= hi  # a false positive can only hurt
