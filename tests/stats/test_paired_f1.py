"""ix.stats.paired_f1: the paired, case-level F1 comparison — its marginals against ix's
unpaired F1 model (exact Beta quantiles), its joint posterior against plain Dirichlet draws
over the 8 cells, symmetry, the gain from pairing, and seeded simulations against known
truth (false "better" rate, power, coverage of the true majority-vote F1 difference)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ix.eval.models import ProbeResult
from ix.eval.optimize import judge
from ix.eval.scoring import compute_metrics
from ix.stats.classification import f1_diff_interval
from ix.stats.paired_f1 import PairedF1, _samples, exact_p, paired_f1

# (must, not_): each (both, a_only, b_only, neither) counts of firing majority votes
TABLES = [
    ((15, 1, 0, 4), (2, 0, 1, 17)),
    ((0, 0, 0, 0), (0, 0, 0, 0)),     # no data: the prior
    ((0, 0, 3, 5), (1, 2, 0, 9)),     # TP_A = 0
    ((10, 0, 0, 0), (0, 0, 0, 10)),   # FP + FN = 0 for both
    ((3, 7, 2, 1), (6, 1, 4, 2)),
    ((40, 2, 9, 4), (1, 6, 0, 38)),
]


def _confusion(must, not_):
    """((TP, FP, FN) of A, (TP, FP, FN) of B)."""
    both, a, b, neither = must
    n_both, n_a, n_b, _ = not_
    return (both + a, n_both + n_a, b + neither), (both + b, n_both + n_b, a + neither)


def _swap(table):
    both, a, b, neither = table
    return both, b, a, neither


def _f1_quantiles(tp, fp, fn, ps):
    """Exact quantiles of F1 = 2U/(1 + U), U ~ Beta(TP + 1, FP + FN + 2) (ix's unpaired model)."""
    u = stats.beta.ppf(ps, tp + 1, fp + fn + 2)
    return 2 * u / (1 + u)


def _f1_density(tp, fp, fn, x):
    """Density of that F1 at x: f_U(x/(2 − x)) · 2/(2 − x)²."""
    return stats.beta.pdf(x / (2 - x), tp + 1, fp + fn + 2) * 2 / (2 - x) ** 2


@pytest.mark.parametrize("table", TABLES)
def test_each_marginal_is_ix_unpaired_f1_posterior(table):
    must, not_ = table
    draws = 200_000
    samples = _samples(must, not_, draws)
    ps = np.array([0.05, 0.5, 0.95])
    for f1, (tp, fp, fn) in zip(samples, _confusion(must, not_), strict=True):
        exact = _f1_quantiles(tp, fp, fn, ps)
        # a sample quantile's standard error: sqrt(p(1 − p)/draws) / density at the quantile
        se = np.sqrt(ps * (1 - ps) / draws) / _f1_density(tp, fp, fn, exact)
        assert np.all(np.abs(np.quantile(f1, ps) - exact) < 5 * se + 1e-9), (table, tp, fp, fn)
        # the same check tells the flat prior on U (f1_interval's default) apart
        flat = stats.beta.ppf(ps, tp + 1, fp + fn + 1)
        assert np.any(np.abs(2 * flat / (1 + flat) - exact) > 10 * se)


@pytest.mark.parametrize("table", TABLES[:3] + TABLES[4:5])
def test_the_joint_posterior_is_plain_dirichlet_draws_over_the_eight_cells(table):
    """The module's shortcuts (Gamma draws, pooled cells, Z²/2 for Gamma(½)) against
    numpy's Dirichlet over all 8 cells with prior ½ each, an independent stream."""
    must, not_ = table
    r = paired_f1(must, not_)
    p = np.random.default_rng(7).dirichlet(np.array([*must, *not_]) + 0.5, size=400_000)
    tp_a, fp_a, fn_a = p[:, 0] + p[:, 1], p[:, 4] + p[:, 5], p[:, 2] + p[:, 3]
    tp_b, fp_b, fn_b = p[:, 0] + p[:, 2], p[:, 4] + p[:, 6], p[:, 1] + p[:, 3]
    d = 2 * tp_b / (2 * tp_b + fp_b + fn_b) - 2 * tp_a / (2 * tp_a + fp_a + fn_a)
    p_ref = float(np.mean(d > 0))
    se = math.sqrt(p_ref * (1 - p_ref) * (1 / r.draws + 1 / d.size))
    assert abs(r.prob_b_better - p_ref) < 5 * se + 1e-9
    # the reference's CDF at the module's quantiles (scale-free MC tolerance)
    assert r.sided == "two"
    for x, q in ((r.lo, 0.025), (r.median, 0.5), (r.hi, 0.975)):
        tol = 5 * math.sqrt(q * (1 - q) * (1 / r.draws + 1 / d.size))
        assert abs(float(np.mean(d <= x)) - q) < tol, (table, x, q)


@pytest.mark.parametrize("table", TABLES)
def test_swapping_a_and_b_mirrors_everything(table):
    must, not_ = table
    r = paired_f1(must, not_)
    s = paired_f1(_swap(must), _swap(not_))
    assert (s.f1_a, s.f1_b) == (r.f1_b, r.f1_a)
    assert s.difference == -r.difference
    # different streams: within Monte Carlo error
    assert abs(s.prob_b_better - (1 - r.prob_b_better)) < 5 * math.sqrt(2) * r.mc_error + 1e-9
    assert s.lo == pytest.approx(-r.hi, abs=0.005)
    assert s.hi == pytest.approx(-r.lo, abs=0.005)
    assert s.median == pytest.approx(-r.median, abs=0.005)
    assert s.sided == {"two": "two", "lower": "upper", "upper": "lower"}[r.sided]


@pytest.mark.parametrize(("must", "not_", "ratio"), [
    ((15, 0, 0, 5), (2, 0, 0, 18), 0.40),   # agree on every case
    ((15, 0, 0, 5), (2, 1, 1, 16), 0.50),   # agree on all but 2 not cases
    ((14, 1, 1, 4), (2, 0, 0, 18), 0.60),   # all but 2 must cases: TP counts twice in F1
])
def test_pairing_narrows_the_interval_of_identical_subjects(must, not_, ratio):
    """A and B with the same marginal counts that agree on (nearly) every case: the paired
    posterior knows the difference is near 0; the unpaired one only that both F1s are near
    0.8. Measured ratios of widths: 0.38, 0.43, 0.57."""
    r = paired_f1(must, not_)
    assert r.difference == 0.0 and r.sided == "two"
    assert abs(r.prob_b_better - 0.5) < 5 * r.mc_error
    assert r.lo < 0 < r.hi
    (tp_a, fp_a, fn_a), (tp_b, fp_b, fn_b) = _confusion(must, not_)
    u_lo, u_hi = f1_diff_interval(tp_b, fp_b, fn_b, tp_a, fp_a, fn_a)
    assert r.hi - r.lo < ratio * (u_hi - u_lo)


def _tables(rng, count):
    for _ in range(count):
        n_must, n_not = (int(x) for x in rng.integers(0, 15, size=2))
        must = rng.multinomial(n_must, rng.dirichlet([0.3] * 4))
        not_ = rng.multinomial(n_not, rng.dirichlet([0.3] * 4))
        yield tuple(int(x) for x in must), tuple(int(x) for x in not_)


def test_the_observed_difference_is_always_inside_the_interval():
    boundary = [((0, 0, 0, 0), (0, 0, 0, 0)), ((0, 4, 0, 0), (0, 0, 2, 0)),
                ((0, 0, 6, 1), (0, 0, 0, 4)), ((0, 0, 0, 7), (3, 0, 0, 0)),
                ((9, 0, 0, 0), (0, 0, 0, 9)), ((0, 1, 0, 0), (0, 0, 1, 1))]
    sided = set()
    for must, not_ in boundary + list(_tables(np.random.default_rng(3), 400)):
        r = paired_f1(must, not_, draws=2000)
        assert -1.0 <= r.lo <= r.difference <= r.hi <= 1.0, (must, not_, r)
        assert r.lo <= r.median <= r.hi or r.sided != "two"
        sided.add(r.sided)
    assert sided == {"two", "lower", "upper"}   # every rule was exercised


def test_observed_f1_is_the_summary_s():
    """f1_a, f1_b are what `ix.eval.scoring.compute_metrics` gives the same votes (0 where
    it says n/a: no TP, FP or FN)."""
    for must, not_ in [*TABLES, *_tables(np.random.default_rng(4), 50)]:
        r = paired_f1(must, not_, draws=1000)
        for subject, observed in (("a", r.f1_a), ("b", r.f1_b)):
            fired_must = {"a": (1, 1, 0, 0), "b": (1, 0, 1, 0)}[subject]
            fired_not = fired_must
            probes = [ProbeResult(probe_id=f"{e}{i}{j}", expectation=e, score=float(fire),
                                  correct=bool(fire) == (e == "must_trigger"))
                      for e, table, fires in (("must_trigger", must, fired_must),
                                              ("should_not_trigger", not_, fired_not))
                      for i, (count, fire) in enumerate(zip(table, fires, strict=True))
                      for j in range(count)]
            f1 = compute_metrics(probes)["f1"]
            assert observed == pytest.approx(0.0 if f1 is None else f1, abs=1e-12)
        assert r.n_must == sum(must) and r.n_not == sum(not_)


# ---- calibration against known truth ------------------------------------------------------

def _true_f1(cells_must, cells_not, m):
    """Population majority-vote F1 of A and B at the designed must fraction m."""
    def f1(recall, fire_rate):
        return 2 * m * recall / (2 * m * recall + (1 - m) * fire_rate + m * (1 - recall))

    return (f1(cells_must[0] + cells_must[1], cells_not[0] + cells_not[1]),
            f1(cells_must[0] + cells_must[2], cells_not[0] + cells_not[2]))


def _simulate(cells_must, cells_not, reps, seed, n=20):
    """`reps` experiments of n must + n not cases; (P(B better) each, coverage of the truth)."""
    rng = np.random.default_rng(seed)
    f1_a, f1_b = _true_f1(cells_must, cells_not, 0.5)
    probs, covered = [], 0
    for _ in range(reps):
        must = tuple(int(x) for x in rng.multinomial(n, cells_must))
        not_ = tuple(int(x) for x in rng.multinomial(n, cells_not))
        r = paired_f1(must, not_, draws=20_000)
        probs.append(r.prob_b_better)
        covered += r.lo <= f1_b - f1_a <= r.hi
    return np.array(probs), covered / reps, f1_b - f1_a


def test_calibration_when_b_equals_a():
    """Exchangeable votes (A only and B only equally likely): the true difference is 0.
    Measured at seed 20260 (400 experiments): false "B better" (P ≥ 0.9) 0.088, false
    "B worse" (P ≤ 0.1) 0.075, coverage of 0 by the 95% interval 0.970."""
    probs, coverage, truth = _simulate((0.55, 0.12, 0.12, 0.21), (0.05, 0.10, 0.10, 0.75),
                                       reps=400, seed=20260)
    assert truth == 0.0
    assert np.mean(probs >= 0.9) <= 0.12
    assert np.mean(probs <= 0.1) <= 0.12      # nor "B worse"
    assert coverage >= 0.90


def test_power_and_coverage_when_b_is_much_better():
    """B fires on more must cases and fewer not cases: true F1 0.589 → 0.899 (+0.31).
    Measured at seed 20261 (200 experiments): P ≥ 0.9 in 0.980 of them, coverage 0.950."""
    probs, coverage, truth = _simulate((0.50, 0.03, 0.35, 0.12), (0.02, 0.25, 0.02, 0.71),
                                       reps=200, seed=20261)
    assert truth == pytest.approx(0.311, abs=0.001)
    assert np.mean(probs >= 0.9) >= 0.9
    assert coverage >= 0.90


# ---- the exact paired test ----------------------------------------------------------------

@pytest.mark.parametrize("must", [(3, 0, 2, 2), (0, 1, 4, 0), (5, 3, 3, 1), (2, 6, 1, 0),
                                  (0, 0, 7, 0), (9, 4, 11, 3)])
def test_exact_p_is_mcnemars_exact_test_when_only_must_cases_changed(must):
    """No not case changed: F1_B − F1_A rises with the must cases only B fired on, so the
    test is McNemar's exact one-sided test (scipy's binomial test of B-only of the changed)."""
    _, a_only, b_only, _ = must
    ref = stats.binomtest(b_only, a_only + b_only, 0.5, alternative="greater").pvalue
    assert exact_p(must, (1, 0, 0, 6)) == pytest.approx(ref, abs=1e-12)
    # and when only not cases changed: B is better the fewer it fired on
    ref = stats.binomtest(a_only, a_only + b_only, 0.5, alternative="greater").pvalue
    assert exact_p((4, 0, 0, 2), must) == pytest.approx(ref, abs=1e-12)


def _brute_p(must, not_):
    """Every one of the 2^d ways the changed cases could have gone, each scored exactly
    (fractions): the share at least as good for B as what was observed."""
    m_both, m_a, m_b, m_neither = must
    n_both, n_a, n_b, _ = not_

    def d(x, y):  # x changed must cases and y changed not cases fired for B only
        def f1(tp, fp, fn):
            return Fraction(2 * tp, 2 * tp + fp + fn) if 2 * tp + fp + fn else Fraction(0)
        return (f1(m_both + x, n_both + y, m_a + m_b - x + m_neither)
                - f1(m_both + m_a + m_b - x, n_both + n_a + n_b - y, x + m_neither))

    observed = d(m_b, n_b)
    hits = total = 0
    for flips in itertools.product((0, 1), repeat=m_a + m_b + n_a + n_b):
        x, y = sum(flips[:m_a + m_b]), sum(flips[m_a + m_b:])
        hits += d(x, y) >= observed
        total += 1
    return hits / total


def test_exact_p_equals_every_flip_counted_exactly():
    rng = np.random.default_rng(11)
    tables = [((0, 0, 0, 0), (0, 0, 0, 0)), ((2, 1, 1, 0), (0, 1, 1, 3)),
              ((0, 2, 2, 0), (0, 2, 2, 0))]      # exact ties in F1 difference
    for _ in range(40):
        must = tuple(int(x) for x in rng.multinomial(rng.integers(0, 9), [0.3, 0.2, 0.3, 0.2]))
        not_ = tuple(int(x) for x in rng.multinomial(rng.integers(0, 9), [0.1, 0.3, 0.2, 0.4]))
        if must[1] + must[2] + not_[1] + not_[2] <= 12:
            tables.append((must, not_))
    for must, not_ in tables:
        assert exact_p(must, not_) == pytest.approx(_brute_p(must, not_), abs=1e-12), (must,
                                                                                        not_)


def test_a_gain_on_d_changed_cases_cannot_have_p_below_two_to_the_minus_d():
    for d in range(1, 9):
        for b in range(d + 1):
            p = exact_p((1, d - b, b, 1), (0, 0, 0, 3))
            assert p >= 2.0 ** -d - 1e-15
    assert exact_p((1, 0, 4, 1), (0, 0, 0, 3)) == 1 / 16   # all 4 B's way: 0.0625 > 0.05
    assert exact_p((1, 0, 5, 1), (0, 0, 0, 3)) == 1 / 32


def _all_tables(n):
    return [t for t in itertools.product(range(n + 1), repeat=4) if sum(t) == n]


@pytest.mark.parametrize(("cells_must", "cells_not"), [
    ((0.0, 0.5, 0.5, 0.0), (0.1, 0.0, 0.0, 0.9)),     # every must case changed
    ((0.28, 0.3, 0.3, 0.12), (0.08, 0.1, 0.1, 0.72)),  # the mixed null of docs/optimize.md
    ((0.1, 0.45, 0.45, 0.0), (0.0, 0.4, 0.4, 0.2)),    # both strata mostly changed
])
def test_the_exact_test_never_says_better_too_often_when_a_change_helps_and_hurts_alike(
        cells_must, cells_not):
    """Holdouts of 5 must + 5 not cases, every table weighed by its exact probability: the
    share with p ≤ α is at most α (the test is exact given the changed cases)."""
    must_pmf = {t: stats.multinomial.pmf(t, 5, cells_must) for t in _all_tables(5)}
    not_pmf = {t: stats.multinomial.pmf(t, 5, cells_not) for t in _all_tables(5)}
    p = {(m, n): exact_p(m, n) for m in must_pmf for n in not_pmf
         if must_pmf[m] > 0 and not_pmf[n] > 0}
    for alpha in (0.05, 0.1, 0.2):
        rate = sum(must_pmf[m] * not_pmf[n] for (m, n), v in p.items() if v <= alpha)
        assert rate <= alpha + 1e-12, (alpha, rate)


def test_the_judge_is_calibrated_where_the_posterior_alone_is_not():
    """5 holdout must cases, each changed, helped or hurt with equal chance (5 not cases
    unchanged): U ~ Binomial(5, ½) of them go B's way. The posterior alone says P(better)
    ≥ 0.9 at U ≥ 4, in 6/32 = 0.19 of holdouts; the judge recommends only at U = 5 (1/32)."""
    weight = {u: math.comb(5, u) / 32 for u in range(6)}
    results = {u: paired_f1((0, 5 - u, u, 0), (0, 0, 0, 5)) for u in range(6)}
    posterior = sum(w for u, w in weight.items() if results[u].prob_b_better >= 0.9)
    assert posterior == pytest.approx(6 / 32)
    judged = sum(w for u, w in weight.items() if judge({"s": results[u]}).recommended)
    assert judged == pytest.approx(1 / 32) and judged <= 0.05


# ---- inputs and determinism -----------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "name"), [
    ({"must": (1, 2, 3)}, "must"),
    ({"must": (1, 2, 3, 4, 5)}, "must"),
    ({"must": (1, -1, 3, 4)}, "must"),
    ({"must": (1, 2.5, 3, 4)}, "must"),
    ({"must": (1, 2.0, 3, 4)}, "must"),
    ({"must": (True, 0, 0, 0)}, "must"),
    ({"must": "abcd"}, "must"),
    ({"must": None}, "must"),
    ({"not_": (0, 0, 0)}, "not_"),
    ({"not_": (0, 0, -2, 0)}, "not_"),
    ({"level": 0}, "level"),
    ({"level": 1}, "level"),
    ({"level": 1.5}, "level"),
    ({"level": float("nan")}, "level"),
    ({"level": True}, "level"),
    ({"draws": 999}, "draws"),
    ({"draws": 5000.0}, "draws"),
    ({"draws": True}, "draws"),
])
def test_bad_inputs_raise_naming_the_argument(kwargs, name):
    args = {"must": (5, 1, 2, 3), "not_": (1, 0, 2, 9)} | kwargs
    must, not_ = args.pop("must"), args.pop("not_")
    with pytest.raises(ValueError, match=f"^{name} "):
        paired_f1(must, not_, **args)


def test_numpy_integers_and_lists_are_accepted():
    r = paired_f1([np.int64(5), 1, 2, 3], (1, 0, 2, np.int32(9)), draws=np.int64(1000))
    assert r == paired_f1((5, 1, 2, 3), (1, 0, 2, 9), draws=1000)


def test_same_inputs_give_bit_identical_results():
    a = paired_f1((15, 1, 0, 4), (2, 0, 1, 17))
    b = paired_f1((15, 1, 0, 4), (2, 0, 1, 17))
    assert isinstance(a, PairedF1) and a == b
    assert (a.draws, a.level) == (200_000, 0.95)
    assert a.mc_error == math.sqrt(a.prob_b_better * (1 - a.prob_b_better) / a.draws)
    assert tuple(a.interval) == (a.lo, a.hi)
    for x, y in zip(_samples((3, 2, 1, 0), (0, 1, 2, 3), 5000),
                    _samples((3, 2, 1, 0), (0, 1, 2, 3), 5000), strict=True):
        assert np.array_equal(x, y)
    # another level reads the same draws
    c = paired_f1((15, 1, 0, 4), (2, 0, 1, 17), level=0.8)
    assert c.prob_b_better == a.prob_b_better and c.hi - c.lo < a.hi - a.lo
