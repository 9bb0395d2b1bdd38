"""`case_level_trend`: the mean per-case slope of a rate against log2(1 + length), against
independent references (scipy's linregress per case, Student t for the mean) and against
known truth by simulation (coverage, and P(decline) under no trend)."""

import numpy as np
import pytest
from scipy import stats

from ix.stats.trend import (
    case_level_slope,
    case_level_trend,
    case_level_trend_difference,
    length_axis,
)

LENGTHS = [0, 8, 32, 128]


def test_the_slope_is_the_mean_of_each_cases_least_squares_slope_with_a_t_interval():
    rng = np.random.default_rng(3)
    n_cases, k = 12, 10
    passed = rng.integers(0, k + 1, (n_cases, len(LENGTHS)))
    counts = [[(int(p), k) for p in row] for row in passed]
    got = case_level_trend(counts, LENGTHS)
    x = np.log2(1 + np.array(LENGTHS))
    slopes = [stats.linregress(x, row / k).slope for row in passed]
    assert got.slope == pytest.approx(np.mean(slopes), abs=1e-12)
    se = np.std(slopes, ddof=1) / np.sqrt(n_cases)
    assert got.se == pytest.approx(se, rel=1e-12)  # the floor is far below here
    lo, hi = got.interval(0.95)
    t = stats.t.ppf(0.975, n_cases - 1)
    assert (lo, hi) == pytest.approx((np.mean(slopes) - t * se, np.mean(slopes) + t * se))
    assert got.p_decline == pytest.approx(stats.t.cdf(-np.mean(slopes) / se, n_cases - 1))
    assert length_axis([0, 1, 3]) == [0.0, 1.0, 2.0]


def test_equal_slopes_keep_a_positive_se_and_cases_without_trials_are_left_out():
    flat = case_level_trend([[(5, 5)] * 4] * 6, LENGTHS)
    assert flat.slope == pytest.approx(0.0, abs=1e-15) and flat.se > 0
    assert flat.p_decline == pytest.approx(0.5)
    some = case_level_trend([[(5, 5), (0, 0), (1, 5), (0, 5)], [(5, 5), (4, 5), (1, 5), (0, 5)]],
                            LENGTHS)
    assert some.n == 1
    assert case_level_trend([[(1, 1), (0, 0)]], [0, 8]) is None
    for bad in (([[(1, 2)]], [0]), ([[(3, 2), (1, 2)]], [0, 8]), ([[(1, 2)]], [0, 8])):
        with pytest.raises(ValueError):
            case_level_trend(*bad)


def _simulate(slope: float, n_cases: int, k: int, reps: int, seed: int):
    """Cases whose true rate falls by `slope` per doubling from a rate of their own, clipped
    to [0, 1]; the truth is the mean over cases of the clipped rates' slopes."""
    rng = np.random.default_rng(seed)
    x = np.array(length_axis(LENGTHS))
    covered, declines = 0, []
    for _ in range(reps):
        start = rng.uniform(0.55, 0.95, n_cases)
        theta = np.clip(start[:, None] + slope * x[None, :] + rng.normal(0, 0.03, (n_cases, 1)),
                        0, 1)
        truth = np.mean([np.polyfit(x, t, 1)[0] for t in theta])
        passed = rng.binomial(k, theta)
        trend = case_level_trend([[(int(p), k) for p in row] for row in passed], LENGTHS)
        lo, hi = trend.interval(0.95)
        covered += lo <= truth <= hi
        declines.append(trend.p_decline)
    return covered / reps, np.array(declines)


@pytest.mark.parametrize(("n_cases", "k"), [(10, 3), (20, 5)])
def test_the_interval_covers_the_true_mean_slope(n_cases, k):
    coverage, _ = _simulate(-0.06, n_cases, k, reps=600, seed=n_cases * k)
    assert coverage >= 0.93  # 95% nominal; 600 replicates: sd ~0.009


def test_p_decline_under_no_trend_is_not_overconfident():
    """With no trend, P(decline) ≥ 0.95 should happen in about 5% of runs, not more."""
    _, p = _simulate(0.0, 15, 5, reps=600, seed=11)
    assert np.mean(p >= 0.95) <= 0.075


# --------------------------------------------------------------------------- interaction
def test_the_interaction_is_the_mean_difference_of_each_cases_slopes_with_a_t_interval():
    """Against scipy: each case's least-squares slope per subject (linregress), the mean of
    their differences and a one-sample t interval; P(lower) and p from Student t."""
    rng = np.random.default_rng(5)
    n_cases, k = 15, 10
    a = rng.integers(0, k + 1, (n_cases, len(LENGTHS)))
    b = rng.integers(0, k + 1, (n_cases, len(LENGTHS)))
    got = case_level_trend_difference([[(int(p), k) for p in row] for row in a],
                                      [[(int(p), k) for p in row] for row in b], LENGTHS)
    x = np.log2(1 + np.array(LENGTHS))
    d = [stats.linregress(x, rb / k).slope - stats.linregress(x, ra / k).slope
         for ra, rb in zip(a, b, strict=True)]
    se = np.std(d, ddof=1) / np.sqrt(n_cases)
    assert got.slope == pytest.approx(np.mean(d), abs=1e-12)
    assert got.se == pytest.approx(se, rel=1e-12) and got.n == n_cases
    t = stats.ttest_1samp(d, 0.0)
    assert got.p_value == pytest.approx(t.pvalue, rel=1e-9)
    assert got.p_decline == pytest.approx(stats.t.cdf(-np.mean(d) / se, n_cases - 1))
    lo, hi = got.interval(0.95)
    q = stats.t.ppf(0.975, n_cases - 1)
    assert (lo, hi) == pytest.approx((np.mean(d) - q * se, np.mean(d) + q * se))


def test_the_interaction_of_a_subject_with_itself_is_zero_and_cases_missing_a_length_drop():
    rows = [[(5, 5), (4, 5), (2, 5), (1, 5)], [(3, 5), (3, 5), (0, 5), (0, 5)]]
    same = case_level_trend_difference(rows, rows, LENGTHS)
    assert same.slope == 0.0 and same.se > 0 and same.p_value == pytest.approx(1.0)
    holed = [[(5, 5), (0, 0), (2, 5), (1, 5)], rows[1]]
    assert case_level_trend_difference(holed, rows, LENGTHS).n == 1
    assert case_level_trend_difference([rows[0][:2]], [[(0, 0), (1, 5)]], [0, 8]) is None
    with pytest.raises(ValueError):
        case_level_trend_difference(rows, rows[:1], LENGTHS)


def _simulate_interaction(delta: float, n_cases: int, k: int, reps: int, seed: int,
                          common: bool):
    """A control and a variant linear in x case by case, never clipped, so the true
    interaction is the population mean of the per-case slope differences: exactly `delta`.
    `common`: one uniform per case and trial for both subjects at every length (common
    random numbers), else independent draws."""
    rng = np.random.default_rng(seed)
    x = np.array(length_axis(LENGTHS))
    covered, lower = 0, []
    for _ in range(reps):
        start = rng.uniform(0.55, 0.90, n_cases)
        slope = rng.uniform(-0.04, 0.0, n_cases)
        control = start[:, None] + slope[:, None] * x
        variant = (start - 0.05 * rng.random(n_cases))[:, None] + (
            slope + delta + rng.uniform(-0.01, 0.01, n_cases))[:, None] * x
        u = rng.random((n_cases, k))

        def counts(rates, shared):
            draws = [(shared if common else rng.random((n_cases, k))) < rates[:, j:j + 1]
                     for j in range(len(LENGTHS))]
            return [[(int(d[i].sum()), k) for d in draws] for i in range(n_cases)]

        d = case_level_trend_difference(counts(control, u), counts(variant, u), LENGTHS)
        lo, hi = d.interval(0.95)
        covered += lo <= delta <= hi
        lower.append(d.p_decline)
    return covered / reps, np.array(lower)


@pytest.mark.parametrize(("n_cases", "k", "common"), [(10, 5, True), (20, 5, False)])
def test_the_interaction_interval_covers_a_known_interaction(n_cases, k, common):
    coverage, _ = _simulate_interaction(-0.02, n_cases, k, reps=500, seed=n_cases + k,
                                        common=common)
    assert coverage >= 0.93  # 95% nominal; 500 replicates: sd ~0.01


@pytest.mark.parametrize("common", [True, False])
def test_p_declines_faster_under_no_interaction_is_not_overconfident(common):
    """With no interaction, P(declines faster) ≥ 0.95 in about 5% of runs or fewer (with
    common random numbers the two subjects share their draws: fewer)."""
    coverage, p = _simulate_interaction(0.0, 15, 5, reps=500, seed=21, common=common)
    assert np.mean(p >= 0.95) <= 0.07 and coverage >= 0.93


# --------------------------------------------------------------------------- any axis (sessions)

#: Sessions' times in weeks since the first: a study run late once, early once.
WEEKS = [0.0, 1.0, 2.1, 2.9, 4.0, 6.2]


def test_the_slope_on_session_times_is_statsmodels_case_clustered_regression():
    """The mean per-case slope and its SE are the case-fixed-effects regression of the rates
    on time with a case-clustered (CR1) covariance, fitted by statsmodels: the within (case-
    demeaned) OLS, whose only parameter is the slope, so statsmodels' correction is G/(G−1)."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(7)
    n_cases, k = 15, 4
    start = rng.uniform(0.2, 0.8, n_cases)
    theta = np.clip(start[:, None] + 0.04 * np.array(WEEKS)[None, :], 0, 1)
    passed = rng.binomial(k, theta)
    got = case_level_slope([[(int(p), k) for p in row] for row in passed], WEEKS,
                           what="session times")
    rates = passed / k
    y = (rates - rates.mean(axis=1, keepdims=True)).ravel()
    x = np.tile(np.array(WEEKS) - np.mean(WEEKS), n_cases)
    groups = np.repeat(np.arange(n_cases), len(WEEKS))
    fit = sm.OLS(y, x[:, None]).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert got.slope == pytest.approx(fit.params[0], abs=1e-12)
    assert got.se == pytest.approx(fit.bse[0], rel=1e-9)
    assert got.n == n_cases and got.df == n_cases - 1
    with pytest.raises(ValueError, match="two different session times"):
        case_level_slope([[(1, 2), (1, 2)]], [1.0, 1.0], what="session times")


@pytest.mark.parametrize(("n_cases", "k", "slope"), [(8, 1, 0.05), (20, 3, -0.03)])
def test_the_session_slope_interval_covers_the_true_mean_slope(n_cases, k, slope):
    """Cases with their own level and their own slope (heterogeneous), one trial a session
    (a person, the `human` runtime) or three; the truth is the population's mean slope of the
    clipped rates over these times. 95% nominal."""
    rng = np.random.default_rng(n_cases * k)
    t = np.array(WEEKS)
    covered, reps = 0, 600
    for _ in range(reps):
        start = rng.uniform(0.3, 0.7, n_cases)
        own = slope + rng.normal(0, 0.02, n_cases)
        theta = np.clip(start[:, None] + own[:, None] * t[None, :], 0, 1)
        truth = np.mean([np.polyfit(t, row, 1)[0] for row in theta])
        passed = rng.binomial(k, theta)
        got = case_level_slope([[(int(p), k) for p in row] for row in passed], WEEKS)
        lo, hi = got.interval(0.95)
        covered += lo <= truth <= hi
    assert covered / reps >= 0.93
