"""`ix.stats.judges` (STATS.md §14): against statsmodels' κ, scipy (Spearman, Beta, F, t),
the `krippendorff` package and Krippendorff's (2011) and Shrout & Fleiss's (1979) worked
examples, hand-computed fractions, and by seeded simulation against known truth."""

import math
from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from scipy import integrate, stats
from statsmodels.stats.inter_rater import cohens_kappa

from ix.stats.continuous import RESAMPLES
from ix.stats.judges import (
    MAX_BOOTSTRAP_ITEMS,
    MAX_TABLE_CATEGORIES,
    agreement,
    corrected_rate,
    judge_noise,
    krippendorff_alpha,
    pairwise,
    score_agreement,
)
from ix.stats.reliability import icc_oneway

JUDGE = [True, True, False, True, False, False, True, True, False, True]
HUMAN = [True, False, False, True, False, True, True, True, False, True]


def _table(judge, human):
    """statsmodels' layout: judge in rows, human in columns, fail first."""
    t = np.zeros((2, 2))
    for a, b in zip(judge, human, strict=True):
        t[int(a), int(b)] += 1
    return t


def test_accuracy_tpr_tnr_are_the_hand_counted_rates_with_beta_intervals():
    a = agreement(JUDGE, HUMAN)
    assert (a.tp, a.fn, a.fp, a.tn) == (5, 1, 1, 3)
    assert Fraction(a.accuracy.value).limit_denominator(100) == Fraction(8, 10)
    assert Fraction(a.tpr.value).limit_denominator(100) == Fraction(5, 6)
    assert Fraction(a.tnr.value).limit_denominator(100) == Fraction(3, 4)
    for est, k, n in ((a.accuracy, 8, 10), (a.tpr, 5, 6), (a.tnr, 3, 4)):
        assert est.n == n
        assert (est.lo, est.hi) == pytest.approx(stats.beta.ppf([0.025, 0.975], k + 1,
                                                                n - k + 1))


def test_a_perfect_side_gets_the_one_sided_boundary_interval():
    a = agreement([True] * 4 + [False] * 3, [True] * 4 + [True, False, False], level=0.9)
    assert a.tpr.value == pytest.approx(0.8)
    assert a.tnr.value == 1.0
    assert a.tnr.lo == pytest.approx(stats.beta.ppf(0.1, 3, 1)) and a.tnr.hi == 1.0


def test_cohens_kappa_is_statsmodels_and_its_interval_is_seeded():
    a = agreement(JUDGE, HUMAN)
    assert a.kappa.value == pytest.approx(cohens_kappa(_table(JUDGE, HUMAN)).kappa)
    assert a.kappa.lo <= a.kappa.value <= a.kappa.hi
    assert agreement(JUDGE, HUMAN, seed=7) == agreement(JUDGE, HUMAN, seed=7)
    assert agreement(JUDGE, HUMAN, seed=7).kappa != agreement(JUDGE, HUMAN, seed=8).kappa
    assert "Dirichlet" in a.kappa.method and "seeded" in a.kappa.method


def test_kappa_of_random_tables_matches_statsmodels():
    rng = np.random.default_rng(36)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        human = rng.random(n) < rng.uniform(0.2, 0.8)
        judge = np.where(rng.random(n) < 0.8, human, ~human)
        if human.all() or (~human).all():
            continue
        got = agreement(judge.tolist(), human.tolist()).kappa.value
        assert got == pytest.approx(cohens_kappa(_table(judge, human)).kappa)


def test_human_labels_all_one_class_leave_kappa_and_one_side_undefined_without_error():
    a = agreement([True, False, True], [True, True, True])
    assert math.isnan(a.kappa.value) and math.isnan(a.kappa.lo)
    assert "undefined" in a.kappa.method
    assert math.isnan(a.tnr.value) and a.tnr.n == 0
    assert (a.tnr.lo, a.tnr.hi) == pytest.approx((0.025, 0.975))  # the prior's interval
    assert a.tpr.value == pytest.approx(2 / 3)
    empty = agreement([], [])
    assert empty.accuracy.n == 0 and math.isnan(empty.accuracy.value)
    assert math.isnan(empty.kappa.value)


def test_a_judge_that_always_passes_has_kappa_zero():
    a = agreement([True] * 6, [True, True, False, True, False, False])
    assert a.kappa.value == pytest.approx(0.0)
    assert a.kappa.lo <= 0.0 <= a.kappa.hi
    assert a.tnr.value == 0.0 and a.tnr.lo == 0.0


def test_labels_are_checked():
    with pytest.raises(ValueError, match="different items"):
        agreement([True], [True, False])
    with pytest.raises(ValueError, match="pass/fail"):
        agreement([2], [1])
    with pytest.raises(ValueError, match="pass/fail"):
        agreement([None], [1])


def _score_table(judge, human):
    values = np.unique(np.r_[judge, human])
    table = np.zeros((len(values), len(values)))
    for a, b in zip(judge, human, strict=True):
        table[np.searchsorted(values, a), np.searchsorted(values, b)] += 1
    return table, values


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_is_statsmodels_on_the_score_values_present(weights):
    rng = np.random.default_rng(4)
    human = rng.choice([1, 2, 4, 5], size=40)  # no 3: the weights follow the values
    judge = np.clip(human + rng.integers(-1, 2, size=40), 1, 5)
    table, values = _score_table(judge, human)
    s = score_agreement(judge, human, weights=weights)
    assert s.kappa.value == pytest.approx(cohens_kappa(table, weights=values, wt=weights).kappa)
    assert s.kappa.lo <= s.kappa.value <= s.kappa.hi
    assert "Dirichlet" in s.kappa.method and "seeded" in s.kappa.method
    assert score_agreement(judge, human, seed=3) == score_agreement(judge, human, seed=3)


def test_weighted_kappa_on_a_fine_scale_is_not_computed():
    rng = np.random.default_rng(6)
    human = rng.integers(0, 100, size=60)
    judge = human + rng.integers(-5, 6, size=60)
    assert len(np.unique(np.r_[judge, human])) > MAX_TABLE_CATEGORIES
    s = score_agreement(judge, human, weights="linear")
    assert math.isnan(s.kappa.value) and "not computed" in s.kappa.method
    assert s.spearman.lo < s.spearman.value < s.spearman.hi


def test_spearman_on_a_score_scale_is_scipys_midrank_rho():
    rng = np.random.default_rng(5)
    for _ in range(10):
        human = rng.integers(1, 6, size=int(rng.integers(5, 40)))  # ties: midranks
        judge = np.clip(human + rng.integers(-1, 2, size=human.size), 1, 5)
        s = score_agreement(judge, human, seed=12)
        assert s.spearman.value == pytest.approx(stats.spearmanr(judge, human).statistic)
        assert s.spearman.lo <= s.spearman.value <= s.spearman.hi
        assert "Dirichlet" in s.spearman.method


def test_spearman_on_a_fine_scale_takes_a_percentile_bootstrap_over_items():
    rng = np.random.default_rng(5)
    human = rng.normal(size=25)
    judge = human + rng.normal(size=25)
    s = score_agreement(judge, human, level=0.9, seed=12)
    assert s.spearman.value == pytest.approx(stats.spearmanr(judge, human).statistic)
    idx = np.random.default_rng(12).integers(0, 25, size=(RESAMPLES, 25))
    draws = [stats.spearmanr(judge[i], human[i]).statistic for i in idx]
    assert (s.spearman.lo, s.spearman.hi) == pytest.approx(
        tuple(np.quantile(draws, [0.05, 0.95])))
    assert "percentile bootstrap" in s.spearman.method


def test_spearman_of_many_items_takes_the_bonett_wright_fisher_interval():
    rng = np.random.default_rng(7)
    n = MAX_BOOTSTRAP_ITEMS + 1
    human = rng.normal(size=n)
    judge = human + rng.normal(size=n)
    s = score_agreement(judge, human)
    rho = stats.spearmanr(judge, human).statistic
    half = stats.norm.ppf(0.975) * math.sqrt((1 + rho**2 / 2) / (n - 3))
    assert (s.spearman.lo, s.spearman.hi) == pytest.approx(
        (math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)))
    assert "Bonett-Wright" in s.spearman.method


def test_perfect_rank_agreement_gets_a_one_sided_spearman_interval():
    scale = score_agreement([1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7])  # Dirichlet draws
    assert scale.spearman.value == pytest.approx(1.0)
    assert scale.spearman.hi == 1.0 and scale.spearman.lo < 0.9
    fine = score_agreement(-np.arange(25) / 7, np.arange(25) ** 2)  # every resample is -1
    assert fine.spearman.value == pytest.approx(-1.0)
    assert fine.spearman.lo == -1.0 and -1 < fine.spearman.hi < -0.99
    assert "one-sided" in fine.spearman.method


def test_constant_raters_leave_score_agreement_undefined_or_zero():
    flat = score_agreement([1, 2, 3, 4], [3, 3, 3, 3])
    assert math.isnan(flat.spearman.value) and math.isnan(flat.kappa.value)
    assert "undefined" in flat.kappa.method
    empty = score_agreement([], [])
    assert math.isnan(empty.kappa.value) and math.isnan(empty.spearman.value)
    constant_judge = score_agreement([3, 3, 3, 3], [1, 2, 4, 5])
    k = constant_judge.kappa
    assert (k.value, k.lo, k.hi) == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)
    assert math.isnan(constant_judge.spearman.value)


def test_corrected_rate_is_rogan_gladen_and_its_interval_holds_it():
    c = corrected_rate(judged_pass=120, judged_n=200, tp=45, pos=50, tn=36, neg=40)
    assert c.rate.value == pytest.approx((0.6 + 0.9 - 1) / (0.9 + 0.9 - 1))
    assert c.rate.lo < c.rate.value < c.rate.hi
    assert not c.uninformative and c.p_uninformative == 0.0
    assert corrected_rate(120, 200, 45, 50, 36, 40, seed=2) == \
        corrected_rate(120, 200, 45, 50, 36, 40, seed=2)
    assert corrected_rate(5, 200, 45, 50, 36, 40).rate.value == 0.0  # clipped at 0


def test_a_perfect_judge_leaves_the_judges_own_beta_interval():
    big = 10**6
    c = corrected_rate(30, 100, big, big, big, big, draws=200_000, seed=1)
    assert c.rate.value == pytest.approx(0.3)
    assert (c.rate.lo, c.rate.hi) == pytest.approx(stats.beta.ppf([0.025, 0.975], 31, 71),
                                                   abs=3e-3)


def test_p_uninformative_is_the_posterior_probability_of_tpr_plus_tnr_at_most_one():
    tp, pos, tn, neg = 4, 7, 3, 6
    exact = integrate.quad(lambda x: stats.beta.pdf(x, tp + 1, pos - tp + 1)
                           * stats.beta.cdf(1 - x, tn + 1, neg - tn + 1), 0, 1)[0]
    c = corrected_rate(10, 20, tp, pos, tn, neg, draws=100_000)
    assert c.p_uninformative == pytest.approx(exact, abs=0.006)
    assert not c.uninformative and 0 <= c.rate.lo <= c.rate.hi <= 1


def test_a_judge_no_better_than_chance_is_reported_uninformative():
    c = corrected_rate(judged_pass=50, judged_n=100, tp=6, pos=10, tn=4, neg=10)
    assert c.uninformative and math.isnan(c.rate.value)
    assert (c.rate.lo, c.rate.hi) == (0.0, 1.0)
    assert "uninformative" in c.rate.method and c.p_uninformative > 0.4
    unlabelled = corrected_rate(50, 100, 0, 0, 9, 10)
    assert math.isnan(unlabelled.rate.value) and not unlabelled.uninformative
    with pytest.raises(ValueError, match="tp/pos"):
        corrected_rate(1, 2, 3, 2, 1, 1)


def _population_kappa(tpr, tnr, rate):
    judge = rate * tpr + (1 - rate) * (1 - tnr)
    chance = judge * rate + (1 - judge) * (1 - rate)
    return (rate * tpr + (1 - rate) * tnr - chance) / (1 - chance)


def test_intervals_cover_a_known_judge_by_simulation():
    """TPR 0.85, TNR 0.9, true pass rate 0.6; 60 labelled items, a run of 200 outputs."""
    tpr, tnr, rate, labels, run, reps = 0.85, 0.9, 0.6, 60, 200, 300
    kappa = _population_kappa(tpr, tnr, rate)
    rng = np.random.default_rng(2036)
    hits = np.zeros(4)
    for rep in range(reps):
        human = rng.random(labels) < rate
        judge = np.where(human, rng.random(labels) < tpr, rng.random(labels) < 1 - tnr)
        a = agreement(judge.tolist(), human.tolist(), seed=rep)
        judged = int(rng.binomial(run, rate * tpr + (1 - rate) * (1 - tnr)))
        c = corrected_rate(judged, run, a.tp, a.tp + a.fn, a.tn, a.tn + a.fp, draws=4000,
                           seed=rep)
        hits += [a.tpr.lo <= tpr <= a.tpr.hi, a.tnr.lo <= tnr <= a.tnr.hi,
                 a.kappa.lo <= kappa <= a.kappa.hi, c.rate.lo <= rate <= c.rate.hi]
    coverage = hits / reps
    assert coverage.min() >= 0.93, coverage


def test_kappa_keeps_its_coverage_when_the_rarer_class_is_small():
    """20 items, 20% passes, a near-perfect judge: the percentile bootstrap covered ~0.55."""
    tpr, tnr, rate, reps = 0.95, 0.95, 0.2, 300
    kappa = _population_kappa(tpr, tnr, rate)
    rng = np.random.default_rng(2037)
    hits = defined = 0
    for rep in range(reps):
        human = rng.random(20) < rate
        judge = np.where(human, rng.random(20) < tpr, rng.random(20) < 1 - tnr)
        k = agreement(judge.tolist(), human.tolist(), seed=rep).kappa
        if not math.isnan(k.value):
            defined += 1
            hits += k.lo <= kappa <= k.hi
    assert hits / defined >= 0.92


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", §C: 4 observers, 12 units
K2011 = [[1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
         [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1],
         [None, 3, None, None]]


def test_krippendorff_alpha_reproduces_the_published_example():
    nominal = krippendorff_alpha(K2011)
    assert round(nominal.value, 3) == 0.743
    assert nominal.n == 11  # unit 12 has one rating: not pairable
    assert round(krippendorff_alpha(K2011, "interval").value, 3) == 0.849
    assert nominal.lo <= nominal.value <= nominal.hi
    assert krippendorff_alpha(K2011, seed=1) == krippendorff_alpha(K2011, seed=1)


@pytest.mark.parametrize("level_of_measurement", ["nominal", "interval"])
def test_krippendorff_alpha_matches_the_krippendorff_package(level_of_measurement):
    rng = np.random.default_rng(11)
    for _ in range(10):
        units, raters = int(rng.integers(3, 30)), int(rng.integers(2, 6))
        truth = rng.integers(1, 6, size=(units, 1))
        x = np.clip(truth + rng.integers(-1, 2, size=(units, raters)), 1, 5).astype(float)
        x[rng.random(x.shape) < 0.2] = np.nan
        ours = krippendorff_alpha(x, level_of_measurement).value
        theirs = krippendorff.alpha(reliability_data=x.T,
                                    level_of_measurement=level_of_measurement)
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_krippendorff_alpha_undefined_cases_are_nan():
    assert math.isnan(krippendorff_alpha([[1, None], [None, 2]]).value)
    one = krippendorff_alpha([[1, 2], [1]])  # one pairable unit: no bootstrap
    assert one.n == 1 and math.isnan(one.lo)
    flat = krippendorff_alpha([[3, 3], [3, 3, 3]])
    assert math.isnan(flat.value) and "never vary" in flat.method
    with pytest.raises(ValueError, match="level_of_measurement"):
        krippendorff_alpha(K2011, "ordinal")  # type: ignore[arg-type]


# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges
SF1979 = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def test_judge_noise_reproduces_shrout_and_fleiss():
    r = judge_noise(SF1979)
    assert r.within_var == pytest.approx(6.26, abs=0.005)  # their WMS
    bms = r.between_var * 4 + r.within_var
    assert bms == pytest.approx(11.24, abs=0.005)  # their BMS
    assert round(r.icc.value, 2) == 0.17  # their ICC(1,1)
    f = bms / r.within_var
    f_lo, f_hi = f / stats.f.ppf(0.975, 5, 18), f * stats.f.ppf(0.975, 18, 5)
    assert (r.icc.lo, r.icc.hi) == pytest.approx(((f_lo - 1) / (f_lo + 3),
                                                  (f_hi - 1) / (f_hi + 3)))
    assert (r.icc_mean.value, r.icc_mean.lo, r.icc_mean.hi) == pytest.approx(
        (1 - 1 / f, 1 - 1 / f_lo, 1 - 1 / f_hi))


def test_judge_noise_by_hand_on_a_small_table():
    # means 1, 3, 5 around 3: SSB = 2·(4 + 0 + 4) = 16 on 2 df, MSB = 8; each output's two
    # repeats lie ½ from its mean: SSW = 3·(¼ + ¼) = 1.5 on 3 df, MSW = 0.5
    r = judge_noise([[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]])
    assert r.within_var == pytest.approx(0.5)
    assert r.between_var == pytest.approx((8 - 0.5) / 2)
    assert r.icc.value == pytest.approx((8 - 0.5) / (8 + 0.5))


def test_judge_noise_on_pass_fail_repeats_is_icc_oneway():
    rng = np.random.default_rng(9)
    p = rng.beta(1, 1, 15)
    n = rng.integers(2, 6, 15)  # unequal repeats too
    k = rng.binomial(n, p)
    repeats = [[1.0] * a + [0.0] * (b - a) for a, b in zip(k, n, strict=True)]
    assert judge_noise(repeats).icc.value == pytest.approx(icc_oneway(k, n))


def test_judge_noise_interval_covers_a_known_icc():
    rng = np.random.default_rng(10)
    truth, hits, reps = 0.8, 0, 300  # between var 4, within 1
    for _ in range(reps):
        scores = rng.normal(0, 2, (12, 1)) + rng.normal(0, 1, (12, 3))
        r = judge_noise(scores)
        hits += r.icc.lo <= truth <= r.icc.hi
    assert hits / reps >= 0.93
    with pytest.raises(ValueError, match="two outputs"):
        judge_noise([[1, 2]])


def test_pairwise_win_shares_are_case_means_with_a_t_interval():
    wins = [[1, 1], [1, 0.5], [0, 1], 1, [0.5, 0.5], [1, 0]]
    shares = np.array([1, 0.75, 0.5, 1, 0.5, 0.5])
    p = pairwise(wins, level=0.9)
    lo, hi = stats.t.interval(0.9, 5, loc=shares.mean(), scale=stats.sem(shares))
    assert (p.share.value, p.share.lo, p.share.hi) == pytest.approx(
        (shares.mean(), lo, min(hi, 1.0)))
    assert p.p_better == pytest.approx(stats.t.cdf((shares.mean() - 0.5) / stats.sem(shares),
                                                   5))
    assert p.position_bias is None


def test_position_bias_is_the_first_shown_share_minus_a_half():
    p = pairwise([1, 0, 1], first_shown_wins=[True, True, False, None, True, 0.5, True])
    bias = p.position_bias
    assert bias is not None and bias.n == 5
    assert bias.value == pytest.approx(4 / 5 - 0.5)
    assert (bias.lo, bias.hi) == pytest.approx(stats.beta.ppf([0.025, 0.975], 5, 2) - 0.5)


def test_pairwise_edges():
    assert math.isnan(pairwise([]).share.value)
    one = pairwise([[1, 0.5]])
    assert one.share.value == 0.75 and math.isnan(one.share.lo) and math.isnan(one.p_better)
    same = pairwise([1, 1, 1])
    assert same.p_better == 1.0 and same.share.hi == 1.0
    with pytest.raises(ValueError, match="verdicts"):
        pairwise([1.5])
