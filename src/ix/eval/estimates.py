"""Intervals next to every estimate of a run (STATS.md), computed from per-case counts.

Everything here is vectorised over cases: a summary of 10,000 cases × 5 subjects must take
well under two seconds. The statistics themselves live in `ix.stats`; this module only says
which counts feed which method, and turns the results into JSON-safe numbers (no NaN).
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ix.eval.models import EvalCase

LEVEL = 0.95

#: Written into every summary, so a reader knows what each interval means.
METHODS: dict[str, str] = {
    "score_ci": "per case: equal-tailed credible interval of the activation rate, posterior "
                "Beta(k+1, n-k+1) from a uniform Beta(1,1) prior over the case's valid trials",
    "precision_ci": "Beta(TP+1, FP+1): the exact marginal of a Dirichlet(1,1,1,1) posterior "
                    "over the case-level (majority-vote) TP/FP/FN/TN counts",
    "recall_ci": "Beta(TP+1, FN+1), from the same Dirichlet(1,1,1,1) posterior",
    "f1_ci": "F1 = 2U/(1+U) with U ~ Beta(TP+1, FP+FN+2), from the same posterior; F1 is "
             "monotone in U, so the equal-tailed interval is exact",
    "trial_level": "rate over all valid trials of the group; se_naive = sqrt(p(1-p)/n) treats "
                   "trials as independent; se_clustered is Miller's clustered SE with cases "
                   "as clusters (no small-cluster correction); ci is the equal-tailed interval "
                   "of the population rate under the hierarchical beta-binomial model (cases "
                   "as clusters) of Bowyer et al. 2025",
    "pass_at_k": "unbiased pass@k (Chen et al. 2021) per case, averaged over cases with at "
                 "least k valid trials; a trial passes when its outcome matches the case's "
                 "expectation",
    "pass_hat_k": "unbiased pass^k = C(c,k)/C(n,k) per case (all k trials pass), averaged the "
                  "same way",
}

_GROUPS = ("must_trigger", "should_not_trigger")


def num(x: float | None, digits: int = 6) -> float | None:
    """A JSON-safe float: rounded, and None instead of NaN or infinity."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits)


def pair(lo: float, hi: float) -> list[float | None]:
    return [num(lo), num(hi)]


def score_intervals(passed: np.ndarray, valid: np.ndarray,
                    level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Per-case activation-rate intervals; cases with no valid trial get NaN."""
    from ix.stats.intervals import beta_interval

    lo = np.full(len(valid), np.nan)
    hi = np.full(len(valid), np.nan)
    has = valid > 0
    if has.any():
        lo[has], hi[has] = beta_interval(passed[has], valid[has], level=level)
    return lo, hi


def metric_intervals(tp: int, fp: int, fn: int, level: float = LEVEL) -> dict[str, Any]:
    from ix.stats.classification import f1_interval, precision_interval, recall_interval

    return {
        "precision_ci": pair(*precision_interval(tp, fp, level=level)),
        "recall_ci": pair(*recall_interval(tp, fn, level=level)),
        "f1_ci": pair(*f1_interval(tp, fp, fn, level=level)),
    }


def _trial_rate(successes: np.ndarray, trials: np.ndarray, level: float) -> dict[str, Any]:
    """A rate over trials nested in cases: naive and clustered SE, hierarchical interval."""
    from ix.stats.clustered import clustered_se, hierarchical_interval

    keep = trials > 0
    successes, trials = successes[keep], trials[keep]
    total = int(trials.sum())
    if total == 0:
        return {"rate": None, "n_trials": 0, "n_cases": 0, "se_naive": None,
                "se_clustered": None, "ci": [None, None]}
    rate = float(successes.sum()) / total
    clusters = np.repeat(np.arange(len(trials)), trials)
    starts = np.repeat(np.cumsum(trials) - trials, trials)
    values = ((np.arange(total) - starts) < np.repeat(successes, trials)).astype(float)
    return {
        "rate": num(rate),
        "n_trials": total,
        "n_cases": len(trials),
        "se_naive": num(math.sqrt(rate * (1 - rate) / total)),
        "se_clustered": num(clustered_se(values, clusters)),
        "ci": pair(*hierarchical_interval(successes, trials, level=level)),
    }


def trial_level(cases: Sequence[EvalCase], passed: np.ndarray, valid: np.ndarray,
                level: float = LEVEL) -> dict[str, Any]:
    """Trial-level activation rate per expectation, and the rate of trials that were right."""
    expect = np.array([c.expectation for c in cases])
    out: dict[str, Any] = {}
    for group in _GROUPS:
        mask = expect == group
        out[group] = _trial_rate(passed[mask], valid[mask], level)
    right = np.where(expect == "must_trigger", passed, valid - passed)
    out["correct"] = _trial_rate(right, valid, level)
    return out


def pass_k(cases: Sequence[EvalCase], passed: np.ndarray, valid: np.ndarray,
           max_k: int) -> dict[str, dict[str, float | None]]:
    """pass@k and pass^k for k = 1 .. max_k (at most the most valid trials of any case), a
    trial passing when it matched the expectation."""
    from ix.stats.passk import mean_pass_at_k, mean_pass_hat_k

    expect = np.array([c.expectation for c in cases])
    right = np.where(expect == "must_trigger", passed, valid - passed)
    # no k beyond the most valid trials of any case: no case has that many, and a cancelled
    # run planned with a million trials per case would spend minutes on a million nulls
    reached = min(max_k, int(valid.max())) if len(valid) else 0
    at: dict[str, float | None] = {}
    hat: dict[str, float | None] = {}
    for k in range(1, reached + 1):
        at[str(k)] = num(mean_pass_at_k(valid, right, k))
        hat[str(k)] = num(mean_pass_hat_k(valid, right, k))
    return {"pass_at_k": at, "pass_hat_k": hat}
