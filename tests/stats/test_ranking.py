"""Rank probabilities of independent Beta posteriors, checked against independent references:
scipy quadrature, the exact closed form of `prob_a_beats_b`, and posterior simulation."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ix.stats.comparisons import prob_a_beats_b
from ix.stats.ranking import pairwise_greater, rank, rank_probabilities

TWO = [
    ((5, 3), (4, 4)),
    ((1, 1), (1, 1)),
    ((30, 2), (28, 4)),
    ((900, 900), (1, 1)),          # one posterior far narrower than the other
    ((0.5, 0.5), (2, 7)),          # a density singular at both ends
    ((400, 100), (80, 20)),        # same mean, different spread
    ((1, 60), (60, 1)),            # almost certain
]


def _quad_greater(pa, pb):
    """P(θ_A > θ_B) = ∫ f_A(x) F_B(x) dx = ∫ f_B(x) (1 − F_A(x)) dx, by scipy's adaptive
    quadrature over whichever density is bounded."""
    a, b = stats.beta(*pa), stats.beta(*pb)
    points = sorted({*a.ppf([1e-6, 0.01, 0.5, 0.99, 1 - 1e-6]),
                     *b.ppf([1e-6, 0.01, 0.5, 0.99, 1 - 1e-6])})
    def integrand(x):
        return a.pdf(x) * b.cdf(x) if min(pa) >= 1 else b.pdf(x) * a.sf(x)

    value, _ = integrate.quad(integrand, 0, 1, points=points, limit=500, epsabs=1e-13,
                              epsrel=1e-11)
    return value


def _simulate(params, draws=400_000, seed=7):
    """Rank frequencies of posterior draws: P[i, r] (r = 0 the largest)."""
    rng = np.random.default_rng(seed)
    theta = np.column_stack([rng.beta(a, b, draws) for a, b in params])
    ranks = (-theta).argsort(axis=1).argsort(axis=1)
    n = len(params)
    return np.stack([np.bincount(ranks[:, i], minlength=n) / draws for i in range(n)])


@pytest.mark.parametrize(("pa", "pb"), TWO)
def test_two_subjects_match_scipy_quadrature(pa, pb):
    p = rank_probabilities([pa, pb])
    reference = _quad_greater(pa, pb)
    assert p[0, 0] == pytest.approx(reference, abs=1e-9)
    assert p[1, 1] == pytest.approx(reference, abs=1e-9)
    assert p[0, 1] == pytest.approx(1 - reference, abs=1e-9)
    assert pairwise_greater([pa, pb])[0, 1] == pytest.approx(reference, abs=1e-9)


@pytest.mark.parametrize(("ka", "na", "kb", "nb"),
                         [(4, 6, 3, 6), (0, 5, 0, 5), (19, 20, 12, 20), (150, 300, 140, 300),
                          (0, 0, 3, 3), (37, 40, 2, 90)])
def test_two_subjects_match_the_exact_closed_form(ka, na, kb, nb):
    p = rank_probabilities([(ka + 1, na - ka + 1), (kb + 1, nb - kb + 1)])
    assert p[0, 0] == pytest.approx(prob_a_beats_b(ka, na, kb, nb), abs=1e-10)


@pytest.mark.parametrize(("pa", "pb"), TWO[:4])
def test_two_subjects_match_simulation(pa, pb):
    draws = 400_000
    simulated = _simulate([pa, pb], draws)[0, 0]
    se = math.sqrt(max(simulated * (1 - simulated), 1e-6) / draws)
    assert rank_probabilities([pa, pb])[0, 0] == pytest.approx(simulated, abs=5 * se)


MANY = [(30, 10), (25, 12), (8, 4), (1, 1), (60, 60), (2, 9)]


def test_every_rank_of_several_subjects_matches_simulation():
    draws = 400_000
    p = rank_probabilities(MANY)
    simulated = _simulate(MANY, draws)
    se = np.sqrt(np.maximum(simulated * (1 - simulated), 1e-6) / draws)
    assert np.all(np.abs(p - simulated) <= 5 * se), np.abs(p - simulated) / se


def test_probability_of_being_best_matches_direct_quadrature():
    """P(rank 0) = ∫ f_i(x) Π_{j≠i} F_j(x) dx, computed here with scipy for each subject."""
    p = rank_probabilities(MANY)
    dists = [stats.beta(a, b) for a, b in MANY]
    for i, d in enumerate(dists):
        others = [o for j, o in enumerate(dists) if j != i]
        value, _ = integrate.quad(lambda x, d=d, others=others:
                                  d.pdf(x) * math.prod(o.cdf(x) for o in others),
                                  0, 1, limit=400, epsabs=1e-13, epsrel=1e-11,
                                  points=list(d.ppf([0.001, 0.5, 0.999])))
        assert p[i, 0] == pytest.approx(value, abs=1e-9)


def test_each_rank_is_held_by_exactly_one_subject():
    p = rank_probabilities([(3, 2), (0.4, 0.7), (500, 40), (12, 12), (1, 300)])
    assert np.allclose(p.sum(axis=1), 1, atol=1e-12)
    assert np.allclose(p.sum(axis=0), 1, atol=1e-9)


def test_identical_posteriors_are_equally_likely_in_every_rank():
    p = rank_probabilities([(7, 3)] * 4)
    assert np.allclose(p, 0.25, atol=1e-9)


def test_rank_orders_by_estimate_and_reports_each_place():
    params = [(3, 9), (40, 4), (10, 10)]
    r = rank(params, [0.25, 0.9, 0.5])
    assert r.order == (1, 2, 0)
    matrix = rank_probabilities(params)
    assert r.p_rank == pytest.approx([matrix[1, 0], matrix[2, 1], matrix[0, 2]])
    assert r.p_above_next[0] == pytest.approx(_quad_greater(params[1], params[2]), abs=1e-9)
    assert r.p_above_next[1] == pytest.approx(_quad_greater(params[2], params[0]), abs=1e-9)
    assert r.p_above_next[2] is None
    assert r.rank_interval[0] == (1, 1)   # P(best) is all but 1 for Beta(40, 4)


def test_an_uncertain_rank_has_a_wide_rank_interval():
    r = rank([(2, 2), (2, 2), (2, 2)], [0.5, 0.5, 0.5])
    assert r.rank_interval == ((1, 3), (1, 3), (1, 3))
    assert r.order == (0, 1, 2)
    assert r.p_rank == pytest.approx([1 / 3] * 3, abs=1e-9)


def test_missing_estimates_rank_last_and_ties_go_by_posterior_mean():
    r = rank([(1, 1), (5, 1), (1, 5)], [None, 0.5, 0.5])
    assert r.order == (1, 2, 0)


@pytest.mark.parametrize("params", [[], [(0, 1)], [(1, -2)], [(math.nan, 1)]])
def test_bad_parameters_are_refused(params):
    with pytest.raises(ValueError):
        rank_probabilities(params)
