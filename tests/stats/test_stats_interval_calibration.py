"""Exact coverage of the default rate intervals on populations of case rates (issue 15 §1).

A case's rate p is drawn from a population, then k ~ Binomial(n, p); the per-case interval
covers when lo_k <= p <= hi_k. Averaged over a Beta(a, b) population this is exactly
Σ_k P(k) · P(lo_k <= p <= hi_k | k), with P(k) beta-binomial and p | k ~ Beta(k + a, n − k + b):
no simulation. Point masses at 0 and 1 are covered iff lo_0 = 0 and hi_n = 1. F1 coverage is
exact too: with the designed mix of must / should-not cases fixed, TP ~ Bin(N_must, r) and
FP ~ Bin(N_not, s) independently, r and s the population probabilities of a yes vote.
"""

import numpy as np
import pytest
from scipy import special, stats

from ix.stats.classification import DIRICHLET_F1_PRIOR, f1_interval
from ix.stats.intervals import beta_interval

NS = [3, 5, 10, 20]


def per_case(n: int, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(n + 1)
    lo, hi = beta_interval(k, np.full(n + 1, n), **kwargs)
    return np.asarray(lo), np.asarray(hi)


def beta_population(n: int, a: float, b: float, **kwargs) -> float:
    """Exact average coverage when case rates are Beta(a, b)."""
    lo, hi = per_case(n, **kwargs)
    k = np.arange(n + 1)
    inside = special.betainc(k + a, n - k + b, hi) - special.betainc(k + a, n - k + b, lo)
    return float(stats.betabinom.pmf(k, n, a, b) @ inside)


def at_the_ends(n: int, **kwargs) -> float:
    """40% of cases at exactly 0, 40% at exactly 1, 20% uniform."""
    lo, hi = per_case(n, **kwargs)
    return 0.4 * (lo[0] <= 0) + 0.4 * (hi[n] >= 1) + 0.2 * beta_population(n, 1, 1, **kwargs)


POPULATIONS = {
    "uniform": lambda n: beta_population(n, 1, 1),
    "beta(0.5,0.5)": lambda n: beta_population(n, 0.5, 0.5),
    "40% at 0, 40% at 1, 20% uniform": at_the_ends,
    "good skill's must cases, beta(8,1)": lambda n: beta_population(n, 8, 1),
}
#: measured with the default rule (uniform prior), the same numbers as docs/statistics.md
MEASURED = {
    "uniform": [0.950, 0.950, 0.950, 0.950],
    "beta(0.5,0.5)": [0.951, 0.949, 0.948, 0.947],
    "40% at 0, 40% at 1, 20% uniform": [0.990, 0.990, 0.990, 0.990],
    "good skill's must cases, beta(8,1)": [0.941, 0.941, 0.942, 0.944],
}


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("population", list(POPULATIONS))
def test_default_per_case_interval_covers_at_least_093_on_every_population(population, n):
    got = POPULATIONS[population](n)
    assert got >= 0.93
    assert got == pytest.approx(MEASURED[population][NS.index(n)], abs=6e-4)


@pytest.mark.parametrize("n", NS)
def test_the_plain_equal_tailed_interval_fails_where_cases_sit_at_0_and_1(n):
    # the harness can fail: 0.19 is what the issue measured on the old default
    assert at_the_ends(n, method="equal_tailed") == pytest.approx(0.19, abs=3e-3)


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5), (8.0, 1.0)])
def test_averaged_over_its_own_prior_every_exact_credible_rule_covers_exactly_the_level(n, prior):
    """A check of the harness and of the rule's credibility: when the population is the prior,
    average coverage equals the posterior credibility, 0.95, whatever the rule's shape."""
    assert beta_population(n, *prior, prior=prior) == pytest.approx(0.95, abs=1e-9)
    assert beta_population(n, *prior, prior=prior, method="equal_tailed") == pytest.approx(
        0.95, abs=1e-9)


def test_jeffreys_prior_also_holds_093_on_every_population():
    for n in NS:
        for a, b in [(1, 1), (0.5, 0.5), (8, 1)]:
            assert beta_population(n, a, b, prior=(0.5, 0.5)) >= 0.93
        assert at_the_ends(n, prior=(0.5, 0.5)) >= 0.93


# ------------------------------------------------------------------------------------- F1

K = 10


def vote(a: float, b: float) -> float:
    """P(a case with rate ~ Beta(a, b) votes yes over K trials; a tie at K/2 votes no)."""
    return float(stats.betabinom.sf(K // 2, K, a, b))


def f1_coverage(n_must: int, n_not: int, r: float, s: float, **kwargs) -> tuple[float, float]:
    """Exact coverage of `f1_interval` of the designed mix's majority-vote F1, and that F1."""
    tp = np.arange(n_must + 1)[:, None] * np.ones((1, n_not + 1), dtype=int)
    fp = np.arange(n_not + 1)[None, :] * np.ones((n_must + 1, 1), dtype=int)
    weight = stats.binom.pmf(tp, n_must, r) * stats.binom.pmf(fp, n_not, s)
    lo, hi = f1_interval(tp, fp, n_must - tp, **kwargs)
    truth = 2 * n_must * r / (2 * n_must * r + n_not * s + n_must * (1 - r))
    return float((weight * ((lo <= truth) & (truth <= hi))).sum()), truth


def test_f1_of_a_perfect_skill_is_covered_now():
    # cases at rates ~ Beta(20, 1) / Beta(1, 20): true F1 0.9989; "F1 1.000 [0.762, 0.989]" on
    # the old equal-tailed rule never covered it
    got, truth = f1_coverage(10, 10, vote(20, 1), vote(1, 20))
    assert truth == pytest.approx(0.9989, abs=1e-4)
    assert got >= 0.90 and got == pytest.approx(0.979, abs=1e-3)
    assert f1_coverage(10, 10, vote(20, 1), vote(1, 20), method="equal_tailed")[0] == 0.0


def test_f1_contains_its_estimate_at_every_table_of_20_cases():
    tp, fp = np.meshgrid(np.arange(11), np.arange(11), indexing="ij")
    fn = 10 - tp
    lo, hi = f1_interval(tp, fp, fn)
    with np.errstate(invalid="ignore"):
        f1 = np.where(tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), np.nan)
    has = ~np.isnan(f1)
    assert np.all((lo[has] <= f1[has]) & (f1[has] <= hi[has]))


def test_f1_near_perfect_skill_jeffreys_covers_090():
    # must cases Beta(8, 1), should-not Beta(1, 8), N = 20, K = 10 (benchmarks/calibration.py)
    r, s = vote(8, 1), vote(1, 8)
    got, truth = f1_coverage(10, 10, r, s, prior=(0.5, 0.5))
    assert truth == pytest.approx(0.9795, abs=1e-4)
    assert got >= 0.90 and got == pytest.approx(0.965, abs=1e-3)


# ------------------------------------------------------------------------- trial level


def test_trial_level_interval_is_one_sided_when_no_trial_or_every_trial_passed():
    from ix.stats.clustered import hierarchical_interval

    # one trial per case: the hierarchical model is the pooled Beta(Σk + 1, Σ(n−k) + 1)
    lo, hi = hierarchical_interval([0] * 10, [1] * 10)
    assert lo == 0.0 and hi == pytest.approx(stats.beta.ppf(0.95, 1, 11), abs=1e-6)
    lo, hi = hierarchical_interval([1] * 10, [1] * 10)
    assert hi == 1.0 and lo == pytest.approx(stats.beta.ppf(0.05, 11, 1), abs=1e-6)
    jl, jh = hierarchical_interval([0] * 10, [1] * 10, prior=(0.5, 0.5))
    assert jl == 0.0 and jh == pytest.approx(stats.beta.ppf(0.95, 0.5, 10.5), abs=1e-6)
    # clustered: all zero over 10 cases of 5 trials, and an estimate outside the interval
    assert hierarchical_interval([0] * 10, [5] * 10)[0] == 0.0
    eq = hierarchical_interval([0, 5, 5, 1], [5] * 4, method="equal_tailed")
    assert hierarchical_interval([0, 5, 5, 1], [5] * 4) == eq  # 0.55 lies inside
    lo, hi = hierarchical_interval([0, 5, 5, 1], [5] * 4, estimate=eq[1] + 0.01)
    assert hi == 1.0 and lo < eq[1] + 0.01


def test_f1_hpd_option_is_the_shortest_interval_of_u():
    lo, hi = f1_interval(7, 2, 1, method="hpd")
    u = stats.beta(8, 4)
    ul, uh = lo / (2 - lo), hi / (2 - hi)
    assert u.cdf(uh) - u.cdf(ul) == pytest.approx(0.95, abs=1e-9)
    assert u.pdf(ul) == pytest.approx(u.pdf(uh), rel=1e-6)


@pytest.mark.parametrize(("must", "not_", "default", "dirichlet", "jeffreys"), [
    ((20, 1), (1, 20), 0.979, 0.979, 0.979),
    ((8, 1), (1, 8), 0.939, 0.662, 0.965),
    ((4, 1), (1, 4), 0.968, 0.915, 0.854),
    ((2, 1), (1, 2), 0.966, 0.964, 0.960),
])
def test_f1_coverage_table_of_the_docs(must, not_, default, dirichlet, jeffreys):
    """docs/statistics.md, "Precision, recall, F1": N = 20 cases, K = 10 trials a case."""
    r, s = vote(*must), vote(*not_)
    for prior, expected in [(DIRICHLET_F1_PRIOR, dirichlet), ((0.5, 0.5), jeffreys)]:
        assert f1_coverage(10, 10, r, s, prior=prior)[0] == pytest.approx(expected, abs=6e-4)
    got = f1_coverage(10, 10, r, s)[0]
    assert got == pytest.approx(default, abs=6e-4)
    assert got >= 0.93  # issue 15's target is 0.90 for the near-perfect skill


def test_f1_default_prior_is_flat_on_u():
    lo, hi = f1_interval(7, 2, 1)
    u = stats.beta(8, 4)
    assert lo / (2 - lo) == pytest.approx(u.ppf(0.025), abs=1e-9)
    assert hi / (2 - hi) == pytest.approx(u.ppf(0.975), abs=1e-9)


@pytest.mark.parametrize(("r", "s", "default"), [
    (0.90, 0.00, 0.9298), (0.90, 0.01, 0.9289), (0.90, 0.05, 0.9615),
    (0.95, 0.00, 0.9139), (0.95, 0.01, 0.9124), (0.95, 0.05, 0.9543),
    (0.99, 0.00, 0.9044), (0.99, 0.01, 0.8179), (0.99, 0.05, 0.9775),
])
def test_f1_coverage_at_fixed_vote_probabilities_is_the_docs_table(r, s, default):
    """docs/statistics.md, "Where F1's interval covers less": 10 must + 10 should-not cases
    whose votes are yes with fixed probabilities r and s. Exact coverage jumps with the
    discreteness of 20 votes (issue 32 §8's 0.912 is r = 0.95, s = 0.01); the table says
    where it is below 0.93."""
    assert f1_coverage(10, 10, r, s)[0] == pytest.approx(default, abs=6e-5)


def test_f1_coverage_averaged_over_the_near_perfect_region_holds():
    """Averaged over r ~ U(0.9, 1), s ~ U(0, 0.1) (a grid of 41 × 41), coverage is ≥ 0.95
    although single cells dip (the table above): the dips are discreteness, not bias."""
    grid = [f1_coverage(10, 10, r, s)[0] for r in np.linspace(0.9, 1, 41)
            for s in np.linspace(0, 0.1, 41)]
    assert np.mean(grid) >= 0.95 and min(grid) < 0.93
