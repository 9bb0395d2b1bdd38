"""ix.stats.comparisons against references computed here: scipy quadrature, fixed-seed Monte
Carlo, numpy's Dirichlet and scipy's binomtest."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats
from scipy.special import betaln

from ix.stats.comparisons import (
    diff_cdf,
    diff_cdf_bounds,
    diff_interval,
    mcnemar_exact,
    paired_diff_cdf,
    paired_diff_cdf_bounds,
    paired_diff_interval,
    paired_prob_a_beats_b,
    prob_a_beats_b,
)
from ix.stats.paired_probit import probit_diff_interval, probit_prob_a_beats_b

EDGES = [(0, 5, 5, 5), (5, 5, 0, 5), (0, 1, 1, 1), (1, 1, 0, 1), (0, 0, 0, 0), (0, 0, 3, 7),
         (3, 10, 5, 10), (7, 20, 7, 20), (50, 100, 40, 90), (0, 30, 0, 3), (30, 30, 29, 30)]


def _reference_prob(k_a, n_a, k_b, n_b, prior=(1.0, 1.0)):
    """P(θ_A > θ_B) = ∫ f_A F_B dx with scipy.stats.beta and scipy's quad, in x = sin²φ so
    that densities with a prior of ½ (singular at 0 or 1) become bounded."""
    p, q = k_a + prior[0], n_a - k_a + prior[1]
    a = stats.beta(p, q)
    b = stats.beta(k_b + prior[0], n_b - k_b + prior[1])

    def integrand(phi):
        # f_A(x) dx with x = sin²φ, 1 − x = cos²φ: 2 sin^(2p−1)φ cos^(2q−1)φ / B(p, q) dφ
        density = 2 * np.exp((2 * p - 1) * np.log(np.sin(phi)) + (2 * q - 1) * np.log(np.cos(phi))
                             - betaln(p, q))
        return density * b.cdf(np.sin(phi) ** 2) if 0 < phi < np.pi / 2 else 0.0

    quantiles = (*a.ppf([0.001, 0.5, 0.999]), *b.ppf([0.001, 0.5, 0.999]))
    points = sorted({float(np.arcsin(np.sqrt(x))) for x in quantiles if 0 < x < 1})
    value, _ = integrate.quad(integrand, 0, np.pi / 2, points=points, limit=400,
                              epsabs=1e-13, epsrel=1e-12)
    return value


# ---------------------------------------------------------------- prob_a_beats_b


@pytest.mark.parametrize("counts", EDGES)
def test_prob_a_beats_b_matches_quadrature_of_the_beta_densities(counts):
    assert prob_a_beats_b(*counts) == pytest.approx(_reference_prob(*counts), abs=1e-10)


@pytest.mark.parametrize("prior", [(0.5, 0.5), (1.3, 2.7), (2.0, 3.5)])
@pytest.mark.parametrize("counts", [(0, 5, 5, 5), (3, 10, 5, 10), (1, 1, 0, 1), (12, 40, 20, 41)])
def test_prob_a_beats_b_with_non_integer_prior_matches_quadrature(counts, prior):
    assert prob_a_beats_b(*counts, prior=prior) == pytest.approx(
        _reference_prob(*counts, prior=prior), abs=1e-9)


@pytest.mark.parametrize("counts", [(0, 30, 0, 40), (30, 30, 40, 40), (25, 30, 0, 40),
                                    (30, 30, 24, 40)])
def test_prob_a_beats_b_with_a_very_singular_prior_agrees_with_monte_carlo(counts):
    k_a, n_a, k_b, n_b = counts
    rng = np.random.default_rng(3)
    a = rng.beta(k_a + 0.1, n_a - k_a + 0.1, size=2_000_000)
    b = rng.beta(k_b + 0.1, n_b - k_b + 0.1, size=2_000_000)
    assert prob_a_beats_b(*counts, prior=(0.1, 0.1)) == pytest.approx(np.mean(a > b), abs=0.002)


def test_closed_form_and_quadrature_paths_agree_across_the_integer_boundary():
    for counts in [(3, 10, 5, 10), (0, 5, 5, 5), (40, 60, 20, 50)]:
        exact = prob_a_beats_b(*counts)
        nudged = prob_a_beats_b(*counts, prior=(1.0 + 1e-9, 1.0))
        assert nudged == pytest.approx(exact, abs=1e-7)


@pytest.mark.parametrize("counts", [(3, 10, 5, 10), (0, 1, 1, 1), (45, 60, 40, 60)])
def test_prob_a_beats_b_agrees_with_fixed_seed_monte_carlo(counts):
    k_a, n_a, k_b, n_b = counts
    rng = np.random.default_rng(20250301)
    a = rng.beta(k_a + 1, n_a - k_a + 1, size=400_000)
    b = rng.beta(k_b + 1, n_b - k_b + 1, size=400_000)
    assert prob_a_beats_b(*counts) == pytest.approx(np.mean(a > b), abs=0.004)


@pytest.mark.parametrize("counts", EDGES)
def test_prob_a_beats_b_and_its_mirror_sum_to_one(counts):
    k_a, n_a, k_b, n_b = counts
    assert prob_a_beats_b(k_a, n_a, k_b, n_b) + prob_a_beats_b(k_b, n_b, k_a, n_a) == (
        pytest.approx(1.0, abs=1e-12))


def test_identical_data_give_one_half_and_a_tiny_tail_keeps_relative_accuracy():
    assert prob_a_beats_b(7, 20, 7, 20) == pytest.approx(0.5, abs=1e-13)
    tiny = prob_a_beats_b(0, 200, 200, 200)
    assert 0 < tiny < 1e-100
    # X ~ Beta(1, 201), Y ~ Beta(201, 1): P(X > Y) = E[X^201] = B(202, 201) / B(1, 201)
    exact = np.exp(np.log(201) + betaln(202, 201))
    assert tiny == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("bad", [(-1, 5, 0, 5), (6, 5, 0, 5), (1.5, 5, 0, 5)])
def test_prob_a_beats_b_rejects_impossible_counts(bad):
    with pytest.raises(ValueError):
        prob_a_beats_b(*bad)


def test_prob_a_beats_b_rejects_a_non_positive_prior():
    with pytest.raises(ValueError):
        prob_a_beats_b(1, 2, 1, 2, prior=(0.0, 1.0))


# ---------------------------------------------------------------- diff_interval


def _density_of_difference(k_a, n_a, k_b, n_b, prior=(1.0, 1.0)):
    """f_D(d) = ∫ f_A(x) f_B(x − d) dx, independent of the CDF route the module takes."""
    a = stats.beta(k_a + prior[0], n_a - k_a + prior[1])
    b = stats.beta(k_b + prior[0], n_b - k_b + prior[1])

    def f(d):
        lo, hi = max(0.0, d), min(1.0, 1.0 + d)
        return integrate.quad(lambda x: a.pdf(x) * b.pdf(x - d), lo, hi, limit=200)[0]

    return f


@pytest.mark.parametrize("counts,level", [((3, 10, 5, 10), 0.95), ((0, 5, 5, 5), 0.9),
                                          ((18, 20, 2, 20), 0.95), ((1, 1, 0, 1), 0.8)])
def test_diff_interval_holds_the_stated_mass_and_the_posterior_mean(counts, level):
    lo, hi = diff_interval(*counts, level=level)
    f = _density_of_difference(*counts)
    inside = integrate.quad(f, lo, hi, limit=200)[0]
    below = integrate.quad(f, -1.0, lo, limit=200)[0]
    assert inside == pytest.approx(level, abs=1e-6)
    assert below == pytest.approx((1 - level) / 2, abs=1e-6)
    k_a, n_a, k_b, n_b = counts
    mean = (k_a + 1) / (n_a + 2) - (k_b + 1) / (n_b + 2)
    assert lo < mean < hi
    assert -1 <= lo <= hi <= 1


def test_diff_interval_tail_masses_agree_with_fixed_seed_monte_carlo():
    rng = np.random.default_rng(7)
    a = rng.beta(13, 29, size=1_000_000)
    b = rng.beta(21, 21, size=1_000_000)
    lo, hi = diff_interval(12, 40, 20, 40)
    d = a - b
    assert np.mean(d < lo) == pytest.approx(0.025, abs=0.001)
    assert np.mean(d > hi) == pytest.approx(0.025, abs=0.001)


@pytest.mark.parametrize("k,n", [(0, 4), (5, 10), (10, 10), (17, 60)])
def test_diff_interval_of_identical_data_is_symmetric_about_zero(k, n):
    lo, hi = diff_interval(k, n, k, n)
    assert lo == pytest.approx(-hi, abs=1e-9)


def test_swapping_subjects_mirrors_the_difference_interval():
    lo, hi = diff_interval(3, 12, 9, 15)
    lo2, hi2 = diff_interval(9, 15, 3, 12)
    assert (lo, hi) == pytest.approx((-hi2, -lo2), abs=1e-9)


def test_diff_interval_with_a_jeffreys_prior_holds_its_mass_in_fixed_seed_draws():
    lo, hi = diff_interval(0, 8, 3, 8, prior=(0.5, 0.5))
    rng = np.random.default_rng(5)
    d = rng.beta(0.5, 8.5, size=2_000_000) - rng.beta(3.5, 5.5, size=2_000_000)
    assert np.mean(d < lo) == pytest.approx(0.025, abs=5e-4)
    assert np.mean(d > hi) == pytest.approx(0.025, abs=5e-4)


def test_diff_interval_rejects_a_level_outside_zero_one():
    with pytest.raises(ValueError):
        diff_interval(1, 2, 1, 2, level=1.0)


# ---------------------------------------------------------------- paired, Dirichlet


TABLES = [(0, 0, 0, 0), (3, 4, 1, 2), (10, 0, 5, 10), (0, 7, 0, 0), (40, 6, 6, 48),
          (400, 30, 10, 560), (1, 0, 0, 1)]


@pytest.mark.parametrize("table", TABLES)
def test_paired_dirichlet_probability_is_a_beta_tail_at_one_half(table):
    _, t, u, _ = table
    assert paired_prob_a_beats_b(*table) == pytest.approx(stats.beta.sf(0.5, t + 1, u + 1),
                                                          abs=1e-14)


def test_paired_dirichlet_probability_ignores_the_concordant_cells():
    assert paired_prob_a_beats_b(0, 5, 2, 0) == paired_prob_a_beats_b(90, 5, 2, 300)


def _dirichlet_sample(table, seed, size=1_000_000):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.asarray(table, float) + 1.0, size=size)
    return p[:, 1] - p[:, 2]


@pytest.mark.parametrize("table", [(3, 4, 1, 2), (10, 0, 5, 10), (40, 6, 6, 48), (0, 7, 0, 0)])
def test_paired_dirichlet_interval_matches_fixed_seed_dirichlet_draws(table):
    d = _dirichlet_sample(table, seed=11)
    lo, hi = paired_diff_interval(*table)
    ref_lo, ref_hi = np.quantile(d, [0.025, 0.975])
    assert lo == pytest.approx(ref_lo, abs=0.01)
    assert hi == pytest.approx(ref_hi, abs=0.01)
    assert np.mean(d < lo) == pytest.approx(0.025, abs=0.001)
    assert np.mean(d > hi) == pytest.approx(0.025, abs=0.001)
    assert lo < np.mean(d) < hi


@pytest.mark.parametrize("table", [(3, 4, 1, 2), (10, 0, 5, 10), (0, 2, 0, 1)])
def test_paired_dirichlet_interval_holds_its_mass_by_independent_double_quadrature(table):
    """P(lo ≤ p_T − p_U ≤ hi) by integrating the (p_T, p_U) marginal Dirichlet density."""
    s, t, u, v = table
    lo, hi = paired_diff_interval(*table, level=0.9)
    rest = s + v + 2.0
    log_norm = (stats.dirichlet.logpdf([0.2, 0.3, 0.5], [t + 1, u + 1, rest])
                - np.log(0.2**t * 0.3**u * 0.5 ** (rest - 1)))

    def density(pu, pt):
        r = 1.0 - pt - pu
        if r <= 0:
            return 0.0
        return float(np.exp(log_norm + t * np.log(pt) + u * np.log(pu)
                            + (rest - 1) * np.log(r))) if pt > 0 and pu > 0 else 0.0

    def mass_below(d):
        # ∫∫_{pt − pu ≤ d} over the simplex pt + pu ≤ 1
        return integrate.dblquad(density, 0.0, 1.0, lambda pt: max(0.0, pt - d),
                                 lambda pt: 1.0 - pt, epsabs=1e-10)[0]

    assert mass_below(lo) == pytest.approx(0.05, abs=1e-5)
    assert mass_below(hi) == pytest.approx(0.95, abs=1e-5)


def test_paired_dirichlet_interval_of_a_balanced_table_is_symmetric():
    lo, hi = paired_diff_interval(5, 3, 3, 9)
    assert lo == pytest.approx(-hi, abs=1e-9)


def test_paired_functions_delegate_to_the_probit_model_on_request():
    table = (12, 7, 3, 8)
    assert paired_prob_a_beats_b(*table, model="probit") == probit_prob_a_beats_b(*table)
    assert paired_diff_interval(*table, model="probit") == probit_diff_interval(*table)


def test_paired_functions_reject_an_unknown_model_and_negative_counts():
    with pytest.raises(ValueError, match="probit"):
        paired_prob_a_beats_b(1, 2, 3, 4, model="logit")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        paired_diff_interval(1, -2, 3, 4)


# ---------------------------------------------------------------- McNemar


@pytest.mark.parametrize("t", range(0, 13))
@pytest.mark.parametrize("u", [0, 1, 2, 5, 12])
def test_mcnemar_exact_equals_scipy_binomtest(t, u):
    expected = 1.0 if t + u == 0 else stats.binomtest(t, t + u, 0.5).pvalue
    assert mcnemar_exact(t, u) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_mcnemar_exact_with_many_discordant_pairs_matches_binomtest():
    assert mcnemar_exact(480, 560) == pytest.approx(stats.binomtest(480, 1040, 0.5).pvalue,
                                                    rel=1e-9)


# ---------------------------------------------------------------- properties


counts = st.integers(0, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@settings(max_examples=60, deadline=None)
@given(a=counts, b=counts)
def test_probability_is_in_unit_interval_and_interval_is_ordered(a, b):
    p = prob_a_beats_b(a[0], a[1], b[0], b[1])
    assert 0.0 <= p <= 1.0
    lo, hi = diff_interval(a[0], a[1], b[0], b[1])
    assert -1.0 <= lo <= hi <= 1.0


@settings(max_examples=60, deadline=None)
@given(table=st.tuples(*(st.integers(0, 40) for _ in range(4))))
def test_paired_probability_and_interval_are_well_formed(table):
    p = paired_prob_a_beats_b(*table)
    assert 0.0 <= p <= 1.0
    lo, hi = paired_diff_interval(*table)
    assert -1.0 <= lo <= hi <= 1.0
    s, t, u, v = table
    assert paired_prob_a_beats_b(s, u, t, v) == pytest.approx(1.0 - p, abs=1e-12)


# ---------------------------------------------------------------- diff_cdf


def _reference_diff_cdf(k_a, n_a, k_b, n_b, d, prior=(1.0, 1.0)):
    """P(θ_A − θ_B ≤ d) = ∫ f_B(y) F_A(y + d) dy with scipy.stats.beta: integrates over B,
    the other variable from the one the module integrates over."""
    a = stats.beta(k_a + prior[0], n_a - k_a + prior[1])
    b = stats.beta(k_b + prior[0], n_b - k_b + prior[1])
    points = sorted({float(x) for x in (*b.ppf([0.001, 0.5, 0.999]), -d, 1 - d,
                                        *(a.ppf([0.001, 0.5, 0.999]) - d)) if 0 < x < 1})
    value, _ = integrate.quad(lambda y: b.pdf(y) * a.cdf(y + d), 0, 1, points=points,
                              limit=400, epsabs=1e-13, epsrel=1e-12)
    return value


@pytest.mark.parametrize("counts", [(3, 10, 5, 10), (0, 5, 5, 5), (18, 20, 2, 20), (1, 1, 0, 1),
                                    (0, 0, 0, 0), (50, 100, 40, 90)])
def test_diff_cdf_is_non_decreasing_from_zero_at_minus_one_to_one_at_plus_one(counts):
    grid = np.linspace(-1.0, 1.0, 81)
    values = np.array([diff_cdf(*counts, d) for d in grid])
    assert values[0] == 0.0 and values[-1] == 1.0
    assert np.all(np.diff(values) >= -1e-12)
    assert diff_cdf(*counts, -3.0) == 0.0 and diff_cdf(*counts, 2.5) == 1.0
    assert np.all((values >= 0) & (values <= 1))


@pytest.mark.parametrize("d", [-0.6, -0.25, -0.05, 0.0, 0.1, 0.37, 0.8])
@pytest.mark.parametrize("counts", [(3, 10, 5, 10), (0, 5, 5, 5), (18, 20, 2, 20), (7, 9, 1, 30)])
def test_diff_cdf_matches_scipy_quadrature_over_the_other_subject(counts, d):
    assert diff_cdf(*counts, d) == pytest.approx(_reference_diff_cdf(*counts, d), abs=1e-9)


@pytest.mark.parametrize("prior", [(0.5, 0.5), (2.0, 3.5)])
@pytest.mark.parametrize("d", [-0.3, 0.0, 0.2])
def test_diff_cdf_with_a_non_uniform_prior_matches_scipy_quadrature(prior, d):
    counts = (2, 9, 6, 11)
    assert diff_cdf(*counts, d, prior=prior) == pytest.approx(
        _reference_diff_cdf(*counts, d, prior=prior), abs=1e-8)


@pytest.mark.parametrize("level", [0.8, 0.95])
@pytest.mark.parametrize("counts", EDGES)
def test_diff_interval_endpoints_sit_at_the_tail_masses_of_diff_cdf(counts, level):
    lo, hi = diff_interval(*counts, level=level)
    assert diff_cdf(*counts, lo) == pytest.approx((1 - level) / 2, abs=1e-9)
    assert diff_cdf(*counts, hi) == pytest.approx((1 + level) / 2, abs=1e-9)


@pytest.mark.parametrize("counts", EDGES)
def test_one_minus_diff_cdf_at_zero_is_prob_a_beats_b(counts):
    assert 1 - diff_cdf(*counts, 0.0) == pytest.approx(prob_a_beats_b(*counts), abs=1e-10)
    assert 1 - diff_cdf(*counts, 0.0, prior=(0.5, 0.5)) == pytest.approx(
        prob_a_beats_b(*counts, prior=(0.5, 0.5)), abs=1e-8)


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5)])
@pytest.mark.parametrize("counts", EDGES)
def test_diff_cdf_at_zero_is_the_exact_value_and_meets_the_quadrature_beside_it(counts, prior):
    # at d = 0 the CDF is P(θ_B > θ_A), exactly (a goal at min_effect 0 reads only this);
    # beside it, the quadrature: the two must be one continuous function
    at_zero = diff_cdf(*counts, 0.0, prior=prior)
    if prior == (1.0, 1.0):  # (the reference's density is unbounded below a prior of 1)
        assert at_zero == pytest.approx(_reference_diff_cdf(*counts, 0.0), abs=1e-9)
    accuracy = 1e-9 if prior == (1.0, 1.0) else 1e-7  # diff_cdf's, with priors below 1
    for beside in (-1e-12, 1e-12):
        assert diff_cdf(*counts, beside, prior=prior) == pytest.approx(at_zero, abs=accuracy)


def test_diff_cdf_at_zero_keeps_a_far_tail_to_its_relative_precision():
    # A at 60/60 against B at 0/60: P(θ_A ≤ θ_B) = P(Y ≤ X) for Y ~ Beta(61, 1),
    # X ~ Beta(1, 61) is 61·B(62, 61) = 61·61!·60!/122!, about 3e-36: the closed-form sum
    # holds it to 12 digits (the quadrature beside 0 to ~1e-11 relative)
    exact = Fraction(61 * math.factorial(61) * math.factorial(60), math.factorial(122))
    assert diff_cdf(60, 60, 0, 60, 0.0) == pytest.approx(float(exact), rel=1e-12)
    assert paired_diff_cdf(0, 60, 0, 0, 0.0) == pytest.approx(0.5 ** 61, rel=1e-12)


def test_diff_cdf_rejects_bad_counts_and_a_nan_threshold():
    with pytest.raises(ValueError):
        diff_cdf(6, 5, 0, 5, 0.0)
    with pytest.raises(ValueError):
        diff_cdf(1, 5, 0, 5, float("nan"))
    with pytest.raises(ValueError):
        diff_cdf(1, 5, 0, 5, 0.0, prior=(-1.0, 1.0))


# ---------------------------------------------------------------- paired_diff_cdf


@pytest.mark.parametrize("model", ["dirichlet", "probit"])
@pytest.mark.parametrize("table", [(0, 0, 0, 0), (3, 4, 1, 2), (10, 0, 5, 10), (0, 7, 0, 0),
                                   (40, 6, 6, 48)])
def test_paired_diff_cdf_is_non_decreasing_from_zero_to_one(table, model):
    grid = np.linspace(-1.0, 1.0, 41)
    values = np.array([paired_diff_cdf(*table, d, model=model) for d in grid])
    assert values[0] == 0.0 and values[-1] == 1.0
    # the probit grid is accurate to ~1e-6 and wiggles by ~1e-8 in the far tails
    assert np.all(np.diff(values) >= (-1e-12 if model == "dirichlet" else -1e-6))
    assert np.all((values >= 0) & (values <= 1))


@pytest.mark.parametrize("level", [0.8, 0.95])
@pytest.mark.parametrize("table", TABLES)
def test_paired_diff_interval_endpoints_invert_the_dirichlet_cdf(table, level):
    lo, hi = paired_diff_interval(*table, level=level)
    assert paired_diff_cdf(*table, lo) == pytest.approx((1 - level) / 2, abs=1e-9)
    assert paired_diff_cdf(*table, hi) == pytest.approx((1 + level) / 2, abs=1e-9)


@pytest.mark.parametrize("table", TABLES)
def test_one_minus_paired_dirichlet_cdf_at_zero_is_paired_prob_a_beats_b(table):
    assert 1 - paired_diff_cdf(*table, 0.0) == pytest.approx(paired_prob_a_beats_b(*table),
                                                             abs=1e-10)
    for beside in (-1e-12, 1e-12):  # the exact value at 0 meets the quadrature beside it
        assert paired_diff_cdf(*table, beside) == pytest.approx(
            paired_diff_cdf(*table, 0.0), abs=1e-9)


@pytest.mark.parametrize("table", [(3, 4, 1, 2), (10, 0, 5, 10), (40, 6, 6, 48), (0, 7, 0, 0)])
def test_paired_dirichlet_cdf_matches_fixed_seed_dirichlet_draws(table):
    d = _dirichlet_sample(table, seed=29)
    for point in (*np.quantile(d, [0.05, 0.3, 0.5, 0.7, 0.95]), -0.2, 0.0, 0.15):
        # 10⁶ draws: sd of the empirical CDF ≤ 0.0005
        assert paired_diff_cdf(*table, float(point)) == pytest.approx(np.mean(d <= point),
                                                                      abs=0.002)


@pytest.mark.parametrize("level", [0.8, 0.95])
@pytest.mark.parametrize("table", [(0, 0, 0, 0), (5, 3, 1, 1), (12, 7, 3, 8), (3, 0, 2, 5),
                                   (40, 5, 2, 53)])
def test_paired_diff_interval_endpoints_invert_the_probit_cdf(table, level):
    lo, hi = paired_diff_interval(*table, level=level, model="probit")
    assert paired_diff_cdf(*table, lo, model="probit") == pytest.approx((1 - level) / 2,
                                                                        abs=1e-9)
    assert paired_diff_cdf(*table, hi, model="probit") == pytest.approx((1 + level) / 2,
                                                                        abs=1e-9)
    assert 1 - paired_diff_cdf(*table, 0.0, model="probit") == pytest.approx(
        paired_prob_a_beats_b(*table, model="probit"), abs=1e-12)


@pytest.mark.parametrize("table", [(5, 3, 1, 1), (12, 7, 3, 8)])
def test_paired_probit_cdf_agrees_with_fixed_seed_importance_sampling_from_the_prior(table):
    """bayes_evals-style: draw (θ_A, θ_B, ρ) from the prior, weight by the likelihood."""
    from scipy.special import ndtri

    from ix.stats.paired_probit import bivariate_normal_cdf

    rng = np.random.default_rng(20250315)
    size = 1_000_000
    ta, tb = rng.uniform(size=size), rng.uniform(size=size)
    rho = 2 * rng.beta(4, 2, size=size) - 1
    both = bivariate_normal_cdf(ndtri(ta), ndtri(tb), rho)
    cells = np.clip(np.stack([both, ta - both, tb - both, 1 - ta - tb + both]), 1e-300, 1)
    loglik = np.asarray(table, float) @ np.log(cells)
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    for point in (-0.2, 0.0, 0.1, 0.3):
        assert paired_diff_cdf(*table, point, model="probit") == pytest.approx(
            float(w @ (ta - tb <= point)), abs=0.005)


def test_paired_diff_cdf_delegates_and_rejects_bad_input():
    from ix.stats.paired_probit import probit_diff_cdf

    assert paired_diff_cdf(12, 7, 3, 8, 0.1, model="probit") == probit_diff_cdf(12, 7, 3, 8, 0.1)
    with pytest.raises(ValueError, match="probit"):
        paired_diff_cdf(1, 2, 3, 4, 0.0, model="logit")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        paired_diff_cdf(1, -2, 3, 4, 0.0)
    with pytest.raises(ValueError):
        paired_diff_cdf(1, 2, 3, 4, float("nan"))
    with pytest.raises(ValueError):
        probit_diff_cdf(1, 2, 3, 4, float("nan"))


# ---------------------------------------------------------------- bounds without quadrature

@pytest.mark.parametrize("d", [-0.6, -0.1, -0.02, 0.0, 0.03, 0.2, 0.9])
def test_the_cdf_bounds_enclose_the_quadrature_and_are_narrow(d):
    for table in TABLES:
        lo, hi = paired_diff_cdf_bounds(*table, d)
        assert lo <= paired_diff_cdf(*table, d) <= hi and hi - lo < 0.03, (table, d)
    for counts in EDGES:
        lo, hi = diff_cdf_bounds(*counts, d)
        assert lo <= diff_cdf(*counts, d) <= hi and hi - lo < 0.03, (counts, d)
