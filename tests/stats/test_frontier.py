"""The frontier (`ix.stats.frontier`): the difficulty where success crosses 50%, its interval's
coverage against known truth, the MLE against statsmodels' Logit, and the adaptive rule."""

import numpy as np
import pytest
import statsmodels.api as sm

from ix.eval.frontier import EXHAUSTED, MAX_TRIALS, SETTLED, Curriculum, next_step
from ix.stats.frontier import frontier, frontier_mle, next_difficulty

LEVELS = [1.0, 2.0, 3.0]


def _success(theta: float, slope: float, x) -> np.ndarray:
    return 1 / (1 + np.exp(-slope * (theta - np.asarray(x, dtype=float))))


def _logit(x, k, n) -> float:
    xs = np.repeat(x, n)
    ys = np.concatenate([np.r_[np.ones(kk), np.zeros(nn - kk)] for kk, nn in zip(k, n,
                                                                               strict=True)])
    fit = sm.Logit(ys, sm.add_constant(xs)).fit(disp=0)
    assert fit.mle_retvals["converged"]
    return float(-fit.params[0] / fit.params[1])


def test_the_mle_is_statsmodels_logit_and_none_where_the_data_separate():
    rng = np.random.default_rng(11)
    checked = 0
    while checked < 20:
        x = sorted(rng.choice([0.5, 1, 1.5, 2, 2.5, 3, 4], size=4, replace=False))
        n = rng.integers(5, 30, size=4)
        k = rng.binomial(n, _success(rng.uniform(1, 3), rng.uniform(0.5, 3), x))
        if (k == 0).all() or (k == n).all():
            continue
        mine = frontier_mle(x, k, n)
        if mine is None:  # separated (or rising): statsmodels must not find a falling fit
            continue
        assert mine == pytest.approx(_logit(x, k, n), abs=1e-6)
        checked += 1
    assert frontier_mle(LEVELS, [5, 5, 0], [5, 5, 5]) is None  # complete separation
    assert frontier_mle(LEVELS, [0, 2, 5], [5, 5, 5]) is None  # success rising: no frontier


def test_the_posterior_median_meets_the_mle_as_trials_grow():
    x, n = LEVELS, [4000, 4000, 4000]
    k = [int(np.round(p * 4000)) for p in _success(2.3, 1.5, x)]
    f = frontier(x, k, n)
    assert f.estimate == pytest.approx(_logit(x, k, n), abs=0.01)
    assert f.lo < f.estimate < f.hi and f.width < 0.15
    assert not f.open_below and not f.open_above


@pytest.mark.parametrize(("theta", "slope", "per_level"),
                         [(1.5, 2.0, 10), (2.0, 2.0, 10), (2.7, 1.0, 20), (2.0, 4.0, 5),
                          (3.2, 2.0, 10)])
def test_the_interval_covers_the_true_frontier_at_small_n(theta, slope, per_level):
    rng = np.random.default_rng(int(theta * 100 + per_level))
    reps, hits, inside = 300, 0, 0
    p = _success(theta, slope, LEVELS)
    for _ in range(reps):
        k = rng.binomial(per_level, p)
        f = frontier(LEVELS, k, [per_level] * 3)
        hits += f.lo <= theta <= f.hi
        inside += f.lo <= f.estimate <= f.hi
    assert hits / reps >= 0.93, hits / reps
    assert inside == reps


def test_a_frontier_beyond_the_hardest_case_reads_as_open_above():
    f = frontier(LEVELS, [10, 10, 10], [10, 10, 10])
    assert f.open_above and f.estimate > 3 and f.hi >= 3.9


def test_the_next_trial_goes_where_it_informs_most():
    # all right at easy and medium: the question is at hard
    assert next_difficulty(LEVELS, [1.0, 2.0], [5, 5], [5, 5]) == 3.0
    # all wrong at medium and hard: at easy
    assert next_difficulty(LEVELS, [2.0, 3.0], [0, 0], [5, 5]) == 1.0
    rule = Curriculum("difficulty", 0.5, 10)
    assert next_step(rule, {}, LEVELS, 0, 1.0) in LEVELS
    assert next_step(rule, {2.0: [1, 2]}, LEVELS, 10, 1.0) == MAX_TRIALS
    assert next_step(rule, {2.0: [1, 2]}, [], 3, 1.0) == EXHAUSTED
    many = {1.0: [3900, 4000], 2.0: [2000, 4000], 3.0: [100, 4000]}
    assert next_step(rule, many, LEVELS, 5, 1.0) == SETTLED


def test_the_adaptive_rule_keeps_coverage_and_spends_fewer_trials_than_its_budget():
    """The rule's own sequence (seeded outcomes): the interval at the stop still covers the
    truth (benchmarks/calibration_frontier.py measures it at 1,000 repetitions)."""
    rng = np.random.default_rng(5)
    rule = Curriculum("difficulty", 0.75, 60)
    reps, hits, used = 60, 0, []
    for _ in range(reps):
        theta = rng.uniform(1.2, 2.8)
        counts: dict[float, list[int]] = {}
        trials = 0
        while not isinstance(step := next_step(rule, counts, LEVELS, trials, 1.0), str):
            cell = counts.setdefault(step, [0, 0])
            cell[0] += bool(rng.random() < _success(theta, 2.0, step))
            cell[1] += 1
            trials += 1
        xs = sorted(counts)
        f = frontier(xs, [counts[x][0] for x in xs], [counts[x][1] for x in xs])
        hits += f.lo <= theta <= f.hi
        used.append(trials)
    assert hits / reps >= 0.85, hits / reps
    assert np.mean(used) < 60  # some settle before the budget


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        frontier([], [], [])
    with pytest.raises(ValueError):
        frontier([1.0], [3], [2])
    with pytest.raises(ValueError):
        frontier([1.0], [1], [2], level=1.0)
