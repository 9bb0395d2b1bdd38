"""Comparing two subjects' F1 (ix.stats.classification) against references computed here:
scipy quadrature over the other subject, fixed-seed draws from the two Dirichlet posteriors,
and the Beta identity F1 = 2U/(1 + U)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from ix.stats.classification import (
    DIRICHLET_F1_PRIOR,
    f1_diff_cdf,
    f1_diff_cdf_bounds,
    f1_diff_interval,
    f1_interval,
    f1_prob_a_beats_b,
)
from ix.stats.comparisons import diff_cdf, diff_interval, prob_a_beats_b

# (tp_a, fp_a, fn_a, tp_b, fp_b, fn_b)
PAIRS = [(5, 2, 3, 3, 4, 2), (0, 0, 0, 0, 0, 0), (0, 3, 4, 6, 1, 1), (20, 5, 9, 18, 2, 14),
         (1, 0, 0, 0, 1, 1), (40, 3, 2, 35, 8, 6), (0, 0, 0, 12, 0, 0), (7, 7, 7, 7, 7, 7)]


def _f1_draws(tp, fp, fn, rng, size=1_000_000, tn=4):
    """F1 from draws of the case-level posterior Dirichlet(TP+1, FP+1, FN+1, TN+1)."""
    p = rng.dirichlet([tp + 1, fp + 1, fn + 1, tn + 1], size=size)
    return 2 * p[:, 0] / (2 * p[:, 0] + p[:, 1] + p[:, 2])


def _reference_f1_cdf(pair, d):
    """P(F1_A − F1_B ≤ d) = ∫ f_{U_B}(v) F_{U_A}(h(g(v) + d)) dv, g(u) = 2u/(1 + u),
    h(f) = f/(2 − f), with scipy.stats.beta; integrates over B (the module integrates over A)."""
    tp_a, fp_a, fn_a, tp_b, fp_b, fn_b = pair
    u_a = stats.beta(tp_a + 1, fp_a + fn_a + 2)
    u_b = stats.beta(tp_b + 1, fp_b + fn_b + 2)

    def inner(v):
        f = 2 * v / (1 + v) + d
        if f <= 0:
            return 0.0
        if f >= 1:
            return 1.0
        return float(u_a.cdf(f / (2 - f)))

    def g_inv(f):
        return f / (2 - f)

    points = [float(x) for x in u_b.ppf([0.001, 0.5, 0.999])]
    points += [g_inv(f) for f in (-d, 1 - d) if 0 < f < 1]
    points += [g_inv(2 * q / (1 + q) - d) for q in u_a.ppf([0.001, 0.5, 0.999])
               if 0 < 2 * q / (1 + q) - d < 1]
    value, _ = integrate.quad(lambda v: u_b.pdf(v) * inner(v), 0, 1, limit=400,
                              points=sorted({p for p in points if 0 < p < 1}),
                              epsabs=1e-13, epsrel=1e-12)
    return value


def _swap(pair):
    return (*pair[3:], *pair[:3])


# ---------------------------------------------------------------- f1_prob_a_beats_b


@pytest.mark.parametrize("pair", PAIRS)
def test_f1_prob_agrees_with_fixed_seed_draws_from_two_dirichlet_posteriors(pair):
    rng = np.random.default_rng(20250401)
    f1_a = _f1_draws(*pair[:3], rng)
    f1_b = _f1_draws(*pair[3:], rng, tn=9)  # TN must not matter
    assert f1_prob_a_beats_b(*pair) == pytest.approx(np.mean(f1_a > f1_b), abs=0.01)


@pytest.mark.parametrize("pair", PAIRS)
def test_f1_prob_is_the_beta_comparison_of_u(pair):
    tp_a, fp_a, fn_a, tp_b, fp_b, fn_b = pair
    u_a = stats.beta(tp_a + 1, fp_a + fn_a + 2)
    u_b = stats.beta(tp_b + 1, fp_b + fn_b + 2)
    reference, _ = integrate.quad(lambda x: u_a.pdf(x) * u_b.cdf(x), 0, 1, limit=400,
                                  epsabs=1e-13, epsrel=1e-12)
    p = f1_prob_a_beats_b(*pair)
    assert p == pytest.approx(reference, abs=1e-9)
    assert p == prob_a_beats_b(tp_a, tp_a + fp_a + fn_a + 1, tp_b, tp_b + fp_b + fn_b + 1)


@pytest.mark.parametrize("pair", PAIRS)
def test_swapping_the_subjects_gives_the_complement_of_f1_prob(pair):
    assert f1_prob_a_beats_b(*_swap(pair)) == pytest.approx(1 - f1_prob_a_beats_b(*pair),
                                                            abs=1e-12)


def test_f1_prob_of_equal_counts_is_one_half_and_no_positive_loses_to_many():
    assert f1_prob_a_beats_b(0, 0, 0, 0, 0, 0) == pytest.approx(0.5, abs=1e-14)
    assert f1_prob_a_beats_b(7, 2, 5, 7, 2, 5) == pytest.approx(0.5, abs=1e-14)
    # FP and FN enter only through their sum
    assert f1_prob_a_beats_b(4, 1, 5, 3, 2, 2) == f1_prob_a_beats_b(4, 5, 1, 3, 0, 4)
    assert f1_prob_a_beats_b(0, 4, 4, 30, 1, 1) < 1e-6


# ---------------------------------------------------------------- f1_diff_cdf


@pytest.mark.parametrize("d", [-0.5, -0.2, -0.03, 0.0, 0.08, 0.3, 0.7])
@pytest.mark.parametrize("pair", [(5, 2, 3, 3, 4, 2), (0, 3, 4, 6, 1, 1), (20, 5, 9, 18, 2, 14),
                                  (0, 0, 0, 0, 0, 0), (40, 3, 2, 35, 8, 6)])
def test_f1_diff_cdf_matches_scipy_quadrature_over_the_other_subject(pair, d):
    assert f1_diff_cdf(*pair, d) == pytest.approx(_reference_f1_cdf(pair, d), abs=1e-9)


@pytest.mark.parametrize("pair", [(5, 2, 3, 3, 4, 2), (0, 3, 4, 6, 1, 1), (1, 0, 0, 0, 1, 1)])
def test_f1_diff_cdf_agrees_with_fixed_seed_dirichlet_draws(pair):
    rng = np.random.default_rng(11)
    diff = _f1_draws(*pair[:3], rng) - _f1_draws(*pair[3:], rng)
    for d in (*np.quantile(diff, [0.025, 0.3, 0.5, 0.8, 0.975]), -0.1, 0.0, 0.2):
        assert f1_diff_cdf(*pair, float(d)) == pytest.approx(np.mean(diff <= d), abs=0.003)


@pytest.mark.parametrize("pair", PAIRS)
def test_f1_diff_cdf_is_non_decreasing_from_zero_to_one_and_mirrors_under_a_swap(pair):
    grid = np.linspace(-1.0, 1.0, 41)
    values = np.array([f1_diff_cdf(*pair, d) for d in grid])
    assert values[0] == 0.0 and values[-1] == 1.0
    assert f1_diff_cdf(*pair, -7.0) == 0.0 and f1_diff_cdf(*pair, 3.0) == 1.0
    assert np.all(np.diff(values) >= -1e-12)
    mirrored = np.array([f1_diff_cdf(*_swap(pair), -d) for d in grid])
    np.testing.assert_allclose(values, 1 - mirrored, atol=1e-9)


@pytest.mark.parametrize("pair", PAIRS)
def test_one_minus_f1_diff_cdf_at_zero_is_f1_prob(pair):
    assert 1 - f1_diff_cdf(*pair, 0.0) == pytest.approx(f1_prob_a_beats_b(*pair), abs=1e-10)
    for beside in (-1e-12, 1e-12):  # the exact value at 0 meets the quadrature beside it
        assert f1_diff_cdf(*pair, beside) == pytest.approx(f1_diff_cdf(*pair, 0.0), abs=1e-9)


# ---------------------------------------------------------------- f1_diff_interval


@pytest.mark.parametrize("level", [0.8, 0.95])
@pytest.mark.parametrize("pair", PAIRS)
def test_f1_diff_interval_endpoints_invert_the_cdf(pair, level):
    lo, hi = f1_diff_interval(*pair, level=level)
    assert -1 <= lo < hi <= 1
    assert f1_diff_cdf(*pair, lo) == pytest.approx((1 - level) / 2, abs=1e-9)
    assert f1_diff_cdf(*pair, hi) == pytest.approx((1 + level) / 2, abs=1e-9)


@pytest.mark.parametrize("pair", PAIRS)
def test_swapping_the_subjects_negates_the_f1_interval(pair):
    lo, hi = f1_diff_interval(*pair)
    lo2, hi2 = f1_diff_interval(*_swap(pair))
    assert (lo, hi) == pytest.approx((-hi2, -lo2), abs=1e-9)


def test_f1_diff_interval_matches_fixed_seed_draw_quantiles():
    pair = (12, 4, 6, 8, 3, 9)
    rng = np.random.default_rng(5)
    diff = _f1_draws(*pair[:3], rng) - _f1_draws(*pair[3:], rng)
    lo, hi = f1_diff_interval(*pair)
    assert (lo, hi) == pytest.approx(tuple(np.quantile(diff, [0.025, 0.975])), abs=0.005)
    assert np.mean(diff < lo) == pytest.approx(0.025, abs=0.001)
    assert np.mean(diff > hi) == pytest.approx(0.025, abs=0.001)


def test_edge_counts_all_zero_and_no_true_positives():
    lo, hi = f1_diff_interval(0, 0, 0, 0, 0, 0)
    assert lo == pytest.approx(-hi, abs=1e-9)
    assert f1_diff_cdf(0, 0, 0, 0, 0, 0, 0.0) == pytest.approx(0.5, abs=1e-12)
    # tp = 0 on both sides: both F1 posteriors pile up near 0; the difference is symmetric
    lo, hi = f1_diff_interval(0, 5, 5, 0, 5, 5)
    assert lo == pytest.approx(-hi, abs=1e-9) and 0 < hi < 0.5
    # tp = 0 against a clearly good subject: the whole interval is negative
    lo, hi = f1_diff_interval(0, 6, 6, 30, 2, 2)
    assert -1 < lo < hi < 0


def test_a_subject_against_itself_with_huge_counts_collapses_onto_its_own_f1_interval():
    """B with enormous counts is nearly a point at its F1 = 2·tp/(2·tp + fp + fn) = 0.8, so the
    difference's interval is A's F1 interval shifted by 0.8 (comparisons keep the paper's
    Dirichlet(1, 1, 1, 1) posterior, U ~ Beta(TP + 1, FP + FN + 2))."""
    lo, hi = f1_diff_interval(6, 2, 1, 400_000, 100_000, 100_000)
    a_lo, a_hi = f1_interval(6, 2, 1, prior=DIRICHLET_F1_PRIOR)
    assert (lo, hi) == pytest.approx((a_lo - 0.8, a_hi - 0.8), abs=2e-3)


# ---------------------------------------------------------------- precision and recall


def test_precision_comparison_is_the_pass_rate_comparison_with_n_equal_tp_plus_fp():
    """Module docstring's recipe: precision ~ Beta(TP+1, FP+1) = pass-rate posterior (TP, TP+FP)."""
    (tp_a, fp_a, fn_a), (tp_b, fp_b, fn_b) = (9, 3, 5), (6, 5, 1)
    rng = np.random.default_rng(17)
    pa = rng.dirichlet([tp_a + 1, fp_a + 1, fn_a + 1, 3], size=1_000_000)
    pb = rng.dirichlet([tp_b + 1, fp_b + 1, fn_b + 1, 3], size=1_000_000)
    prec = pa[:, 0] / (pa[:, 0] + pa[:, 1]) - pb[:, 0] / (pb[:, 0] + pb[:, 1])
    rec = pa[:, 0] / (pa[:, 0] + pa[:, 2]) - pb[:, 0] / (pb[:, 0] + pb[:, 2])
    args_p = (tp_a, tp_a + fp_a, tp_b, tp_b + fp_b)
    args_r = (tp_a, tp_a + fn_a, tp_b, tp_b + fn_b)
    assert prob_a_beats_b(*args_p) == pytest.approx(np.mean(prec > 0), abs=0.003)
    assert prob_a_beats_b(*args_r) == pytest.approx(np.mean(rec > 0), abs=0.003)
    assert diff_cdf(*args_p, 0.1) == pytest.approx(np.mean(prec <= 0.1), abs=0.003)
    assert diff_interval(*args_r) == pytest.approx(tuple(np.quantile(rec, [0.025, 0.975])),
                                                   abs=0.005)


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize("bad", [(-1, 0, 0, 0, 0, 0), (0, 0, 0, 0, 1.5, 0),
                                 (0, 0, float("nan"), 0, 0, 0), (0, 0, 0, 0, 0, float("inf")),
                                 (0, "3", 0, 0, 0, 0)])
def test_bad_counts_raise_value_error(bad):
    with pytest.raises(ValueError):
        f1_prob_a_beats_b(*bad)
    with pytest.raises(ValueError):
        f1_diff_cdf(*bad, 0.0)
    with pytest.raises(ValueError):
        f1_diff_interval(*bad)


def test_bad_threshold_and_level_raise_value_error():
    with pytest.raises(ValueError):
        f1_diff_cdf(1, 2, 3, 4, 5, 6, float("nan"))
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            f1_diff_interval(1, 2, 3, 4, 5, 6, level=level)


def test_whole_number_floats_and_numpy_integers_are_accepted():
    p = f1_prob_a_beats_b(3, 1, 2, 2, 2, 2)
    assert f1_prob_a_beats_b(3.0, 1.0, 2.0, np.int64(2), 2, 2) == p  # type: ignore[arg-type]


counts = st.integers(0, 60)


@settings(max_examples=40, deadline=None)
@given(pair=st.tuples(*(counts for _ in range(6))))
def test_f1_comparison_is_well_formed(pair):
    p = f1_prob_a_beats_b(*pair)
    assert 0.0 <= p <= 1.0
    lo, hi = f1_diff_interval(*pair)
    assert -1.0 <= lo <= hi <= 1.0
    assert 1 - f1_diff_cdf(*pair, 0.0) == pytest.approx(p, abs=1e-9)


@pytest.mark.parametrize("pair", PAIRS)
def test_the_f1_cdf_bounds_enclose_the_quadrature_and_are_narrow(pair):
    for d in (-0.6, -0.1, -0.02, 0.0, 0.03, 0.2, 0.9):
        lo, hi = f1_diff_cdf_bounds(*pair, d)
        assert lo <= f1_diff_cdf(*pair, d) <= hi and hi - lo < 0.03, d
