"""What a summary reports under `trials: auto`, and pass@k / pass^k intervals, through the
one face that turns tallies into a summary (`summarise_tallies`), by seeded simulation
against known truth.

The population: must cases with rates Beta(a, b), mean 0.90 and E[p^5] = 0.657 (the
issue's); the stopping rule is the product's (min 2, max 9, credibility 0.95), walked over
each case's pre-drawn trials, so the fixed run of the same seed sees the same trials.
"""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from ix.eval.models import EvalCase
from ix.eval.run_summary import summarise_tallies
from ix.eval.scoring import Tally
from ix.stats.sequential import majority_vote_probability

MIN, MAX, N = 2, 9, 40
MODE = {"mode": "auto", "min_trials": MIN, "max_trials": MAX, "credibility": 0.95}


def population() -> tuple[float, float]:
    def moment5(b: float) -> float:
        a = 9 * b
        return math.prod((a + i) / (a + b + i) for i in range(5)) - 0.657

    b = brentq(moment5, 0.05, 20)
    return 9 * b, b


def moment(a: float, b: float, k: int) -> float:
    """E[p^k] under Beta(a, b): the population pass^k."""
    return math.prod((a + i) / (a + b + i) for i in range(k))


def stop_at(row: np.ndarray) -> int:
    """Trials the product's rule gives a case whose trials come out as `row` (no errors)."""
    for n in range(MIN, MAX):
        p = majority_vote_probability(int(row[:n].sum()), n, MAX)
        if p >= 0.95 or p <= 0.05:
            return n
    return MAX


def summary(cases, rows, auto: bool) -> dict:
    tally = Tally(cases)
    for case, row in zip(cases, rows, strict=True):
        for t, x in enumerate(row):
            tally.add(case.id, bool(x), t)
    return summarise_tallies(
        experiment_name="e", run_id="r", run_status="completed", subjects=[("a", "")],
        tallies={"a": tally}, cases=cases, trials_per_case=MAX,
        info={"trials_mode": MODE if auto else {"mode": "fixed"}},
        stopped={"a": {c.id: "settled" for c in cases}} if auto else None)


@pytest.fixture(scope="module")
def runs() -> list[tuple[dict, dict]]:
    """40 seeded replications: (auto summary, fixed summary of the same trials)."""
    a, b = population()
    rng = np.random.default_rng(15)
    cases = [EvalCase(id=f"m{i}", prompt="p", expectation="must_trigger") for i in range(N)]
    out = []
    for _ in range(40):
        x = rng.random((N, MAX)) < rng.beta(a, b, N)[:, None]
        auto = [row[:stop_at(row)] for row in x]
        out.append((summary(cases, auto, True), summary(cases, list(x), False)))
    return out


def test_pass_k_under_auto_is_listed_only_up_to_min_trials_and_is_unbiased(runs):
    a, b = population()
    assert moment(a, b, 5) == pytest.approx(0.657, abs=1e-9)
    for auto, fixed in runs:
        assert sorted(auto["pass_hat_k"], key=int) == ["1", "2"]   # no pass^5: not unbiased
        assert sorted(fixed["pass_hat_k"], key=int) == [str(k) for k in range(1, MAX + 1)]
        at = auto["pass_at_k"]
        assert at["1"] <= at["2"]
    # the mean over 40 runs of 40 cases: sd of one run's mean ~0.02, of the average ~0.003
    for k in (1, 2):
        hat = np.mean([auto["pass_hat_k"][str(k)] for auto, _ in runs])
        at = np.mean([auto["pass_at_k"][str(k)] for auto, _ in runs])
        assert hat == pytest.approx(moment(a, b, k), abs=0.012)
        truth_at = 1 - sum(math.comb(k, j) * (-1) ** j * moment(a, b, j) for j in range(k + 1))
        assert at == pytest.approx(truth_at, abs=0.012)


def test_trial_level_rate_under_auto_is_a_per_case_mean_close_to_the_fixed_runs(runs):
    auto = np.mean([s["trial_level"]["must_trigger"]["rate"] for s, _ in runs])
    fixed = np.mean([s["trial_level"]["must_trigger"]["rate"] for _, s in runs])
    assert fixed == pytest.approx(0.90, abs=0.015)
    assert auto == pytest.approx(fixed, abs=0.01)
    for s, _ in runs:
        block = s["trial_level"]["must_trigger"]
        assert block["ci"][0] <= block["rate"] <= block["ci"][1]


def test_every_pass_k_value_has_an_interval_that_contains_it(runs):
    for auto, fixed in runs[:10]:
        for s in (auto, fixed):
            for key in ("pass_at_k", "pass_hat_k"):
                cis = s[f"{key}_ci"]
                assert set(cis) == set(s[key])
                for k, value in s[key].items():
                    lo, hi = cis[k]
                    assert 0 <= lo <= value <= hi <= 1
                assert s["subjects"][0][f"{key}_ci"] == cis
