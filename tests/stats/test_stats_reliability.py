"""Between-case reliability (ICC, design effect) and the flip probability of a majority vote,
against independent references: scipy's one-way ANOVA, statsmodels' OLS ANOVA table, the
Beta CDF, and seeded simulation from populations whose ICC is known."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ix.stats.reliability import design_effect, icc_oneway
from ix.stats.sequential import flip_probability, majority_vote_probability


def _trials(k: np.ndarray, n: np.ndarray) -> list[np.ndarray]:
    return [np.r_[np.ones(int(a)), np.zeros(int(b - a))] for a, b in zip(k, n, strict=True)]


def _anova_icc(k: np.ndarray, n: np.ndarray) -> float:
    """ICC(1) = (F − 1)/(F + n₀ − 1) from scipy's one-way ANOVA F on the 0/1 trials."""
    f = stats.f_oneway(*_trials(k, n)).statistic
    total = n.sum()
    n0 = (total - np.sum(n**2) / total) / (len(n) - 1)
    return float((f - 1) / (f + n0 - 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(2, 12), st.floats(0, 1)), min_size=2, max_size=15))
def test_icc_is_the_one_way_anova_estimator(cases):
    n = np.array([c[0] for c in cases])
    k = np.array([round(c[1] * c[0]) for c in cases])
    rates = k / n
    if np.all(rates == rates[0]) or np.all((k == 0) | (k == n)):
        return  # F is 0/0 or infinite: covered by the edge-case test
    assert icc_oneway(k, n) == pytest.approx(_anova_icc(k, n), abs=1e-9)


def test_icc_matches_statsmodels_anova_table_with_unequal_trials():
    import pandas as pd
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    k, n = np.array([9, 3, 7, 0, 5, 8, 2]), np.array([10, 5, 9, 3, 10, 8, 6])
    rows = [(i, y) for i, t in enumerate(_trials(k, n)) for y in t]
    df = pd.DataFrame(rows, columns=["case", "y"])
    table = sm.stats.anova_lm(smf.ols("y ~ C(case)", data=df).fit())
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    n0 = (n.sum() - np.sum(n**2) / n.sum()) / (len(n) - 1)
    assert icc_oneway(k, n) == pytest.approx((msb - msw) / (msb + (n0 - 1) * msw), abs=1e-12)


def test_icc_recovers_the_beta_binomial_intraclass_correlation():
    """Case rates ~ Beta(2, 3): ICC = 1/(1 + α + β) = 1/6; 3000 cases × 10 trials."""
    rng = np.random.default_rng(1515)
    n = np.full(3000, 10)
    k = rng.binomial(n, rng.beta(2.0, 3.0, 3000))
    assert icc_oneway(k, n) == pytest.approx(1 / 6, abs=0.02)


def test_design_effect_is_the_variance_inflation_of_the_pooled_rate():
    """40 cases × 10 trials, rates ~ Beta(1.5, 1.5) (ICC 0.25): Var(Σk/Σn) over 4000 seeded
    replications ≈ (1 + 9·0.25)·p(1−p)/400, and the mean estimated design effect agrees."""
    rng = np.random.default_rng(7)
    reps, g, trials = 4000, 40, 10
    k = rng.binomial(trials, rng.beta(1.5, 1.5, (reps, g)))
    ratio = np.var(k.sum(axis=1) / (g * trials)) / (0.25 / (g * trials))
    assert design_effect(0.25, trials) == pytest.approx(3.25)
    assert ratio == pytest.approx(3.25, rel=0.08)
    estimates = [design_effect(icc_oneway(row, np.full(g, trials)), trials) for row in k[:400]]
    assert np.mean(estimates) == pytest.approx(3.25, rel=0.08)


def test_design_effect_is_floored_at_one_when_the_icc_estimate_is_negative():
    """Issue 32 §8: trials of a case are independent at its rate, so the true ICC is ≥ 0 and
    a negative estimate is noise; the design effect never claims K trials of a case say more
    than K independent ones. Positive ICCs keep Kish's formula."""
    assert design_effect(-1 / 3, 4) == 1.0           # was 1 + 3·(−1/3) = 0
    assert design_effect(-0.05, 10) == 1.0           # was 0.55
    assert design_effect(0.0, 10) == 1.0
    assert design_effect(0.1, 5) == pytest.approx(1.4)
    icc = icc_oneway([2, 2, 2, 2], [4, 4, 4, 4])
    assert icc is not None and icc < 0 and design_effect(icc, 4) == 1.0


def test_icc_edge_cases():
    assert icc_oneway([3], [5]) is None                       # one case
    assert icc_oneway([1, 0, 1], [1, 1, 1]) is None           # no within-case information
    assert icc_oneway([0, 0, 0], [4, 4, 4]) is None           # every trial alike
    assert icc_oneway([4, 0, 4], [4, 4, 4]) == pytest.approx(1.0)
    assert icc_oneway([2, 2, 2, 2], [4, 4, 4, 4]) == pytest.approx(-1 / 3)  # lower bound
    assert icc_oneway([2, 0, 3], [4, 0, 4]) == icc_oneway([2, 3], [4, 4])  # empty case ignored
    assert design_effect(None, 5) is None
    with pytest.raises(ValueError):
        icc_oneway([5], [4])
    with pytest.raises(ValueError):
        design_effect(0.1, 0)


@pytest.mark.parametrize(("k", "n"), [(9, 9), (6, 9), (5, 9), (4, 9), (0, 9), (5, 10),
                                      (6, 10), (2, 3), (1, 1)])
def test_flip_probability_is_the_posterior_mass_on_the_other_side_of_one_half(k, n):
    below = stats.beta.cdf(0.5, k + 1, n - k + 1)
    expected = below if k / n > 0.5 else 1 - below
    assert flip_probability(np.array([k]), np.array([n]))[0] == pytest.approx(expected,
                                                                               abs=1e-12)


@pytest.mark.parametrize(("k", "n"), [(6, 9), (3, 5), (1, 4)])
def test_flip_probability_is_the_limit_of_the_majority_vote_probability(k, n):
    """More and more further trials: the vote's posterior predictive tends to P(θ > ½)."""
    total = n + 4001
    p_yes = majority_vote_probability(k, n, total)
    now_yes = k / n > 0.5
    assert flip_probability(np.array([k]), np.array([n]))[0] == pytest.approx(
        1 - p_yes if now_yes else p_yes, abs=0.01)


def test_flip_probability_ties_count_as_no_and_empty_cases_are_nan():
    p = flip_probability(np.array([5, 0]), np.array([10, 0]))
    assert p[0] == pytest.approx(0.5, abs=1e-12)   # 5/10 votes no; P(θ > ½) = ½
    assert math.isnan(p[1])
    with pytest.raises(ValueError):
        flip_probability(np.array([3]), np.array([2]))


def test_flip_probability_is_calibrated_when_case_rates_follow_its_prior():
    """θ ~ U(0, 1), 5 trials: among the cases listed as unsettled (P(flip) > 0.2), the mean
    P(flip) equals how often the 5-trial vote differs from the vote of θ itself (seeded)."""
    rng = np.random.default_rng(2025)
    theta = rng.random(100_000)
    passes = rng.binomial(5, theta)
    p = flip_probability(passes, np.full(theta.size, 5))
    flips = (theta > 0.5) != (passes / 5 > 0.5)
    listed = p > 0.2
    assert p[listed].mean() == pytest.approx(flips[listed].mean(), abs=0.012)
    assert flips[~listed].mean() < 0.2
