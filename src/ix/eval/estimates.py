"""Intervals next to every estimate of a run (STATS.md), computed from per-case counts.

Everything here is vectorised over cases: a summary of 10,000 cases × 5 subjects must take
well under two seconds. The statistics themselves live in `ix.stats`; this module only says
which counts feed which method, and turns the results into JSON-safe numbers (no NaN).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from ix._lazy import lazy
from ix.eval.families import family_labels
from ix.eval.models import EvalCase
from ix.eval.numbers import LEVEL, num, pair
from ix.stats.classification import f1_interval, precision_interval, recall_interval
from ix.stats.clustered import clustered_se, hierarchical_interval
from ix.stats.intervals import beta_interval
from ix.stats.passk import k_levels, pass_hat_k, pass_k_intervals
from ix.stats.sequential import StoppingRule, unbiased_first_k_cases

if TYPE_CHECKING:
    import numpy as np

    from ix.eval.schemas import TrialLevelOut, TrialRateOut
else:
    np = lazy("numpy")



class MetricIntervals(TypedDict):
    """The intervals of precision, recall and F1: a subject block's `metrics` keys."""

    precision_ci: list[float | None]
    recall_ci: list[float | None]
    f1_ci: list[float | None]


class PassK(TypedDict):
    """pass@k and pass^k by k (a string), each with its interval: a subject block's keys."""

    pass_at_k: dict[str, float | None]
    pass_hat_k: dict[str, float | None]
    pass_at_k_ci: dict[str, list[float | None]]
    pass_hat_k_ci: dict[str, list[float | None]]

#: Written into every summary, so a reader knows what each interval means.
METHODS: dict[str, str] = {
    "score_ci": "per case: credible interval of the activation rate, posterior "
                "Beta(k+1, n-k+1) from a uniform Beta(1,1) prior over the case's valid "
                "trials; equal-tailed, except one-sided at the boundary: k = 0 gives "
                "[0, q_level] and k = n gives [q_(1-level), 1] (credibility exactly the "
                "level), so it always contains k/n and can reach 0 and 1",
    "precision_ci": "Beta(TP+1, FP+1): the exact marginal of a Dirichlet(1,1,1,1) posterior "
                    "over the case-level (majority-vote) TP/FP/FN/TN counts; the same rule as "
                    "score_ci (one-sided at TP = 0 or FP = 0)",
    "recall_ci": "Beta(TP+1, FN+1), from the same Dirichlet(1,1,1,1) posterior; the same rule "
                 "(one-sided at TP = 0 or FN = 0)",
    "f1_ci": "F1 = 2U/(1+U) with U = p_TP/(p_TP+p_FP+p_FN) ~ Beta(TP+1, FP+FN+1), a flat "
             "prior on U; F1 is monotone in U, so U's interval maps to an exact one: "
             "equal-tailed, one-sided at TP = 0 ([0, .]) and FP+FN = 0 ([., 1]). Flat on U, "
             "not the Dirichlet(1,1,1,1)'s Beta(1, 2) (prior median F1 0.453), which pulls a "
             "near-perfect skill's interval below its F1",
    "trial_level": "rate over all valid trials of the group; se_naive = sqrt(p(1-p)/n) treats "
                   "trials as independent; se_clustered is Miller's clustered SE with cases "
                   "as clusters (no small-cluster correction); ci is the equal-tailed interval "
                   "of the population rate under the hierarchical beta-binomial model (cases "
                   "as clusters) of Bowyer et al. 2025; one-sided on the rate's side where the "
                   "equal-tailed interval would exclude the rate (always at 0 and 1). "
                   "Under trials: auto the rate is the mean over cases of each case's unbiased "
                   "estimate given where the stopping rule stopped it (Rao-Blackwell), not "
                   "the pooled rate (early stops are the unanimous cases), and se_clustered "
                   "the standard error of that mean",
    "pass_at_k": "unbiased pass@k (Chen et al. 2021) per case, averaged over cases with at "
                 "least k valid trials; a trial passes when its outcome matches the case's "
                 "expectation. Under trials: auto only k <= min_trials is listed (every case "
                 "ran that many whatever the rule did; a larger k would average over the few "
                 "unsettled cases that reached it), each case's estimate conditioned on where "
                 "the rule stopped it (Rao-Blackwell: unbiased under the rule)",
    "pass_hat_k": "unbiased pass^k = C(c,k)/C(n,k) per case (all k trials pass), averaged the "
                  "same way",
    "pass_k_ci": "pass_at_k_ci, pass_hat_k_ci: interval of the mean over the population of "
                 "cases, the hull of two seeded case-level Bayesian bootstraps (2000 draws of "
                 "Dirichlet(1,..,1) weights over cases): one of the per-case estimates, one "
                 "drawing each case's rate of right trials from its Beta(right+1, wrong+1) "
                 "posterior; widened to contain the estimate. Conservative: coverage "
                 "0.96-0.99 at 95% in simulation",
    "comparisons": "variant - control per metric; the case is the paired unit. "
                   "activation_rate: mean over must_trigger cases of the per-case rate "
                   "difference (estimand: the mean over prompts), posterior d + SE*t(N-1) "
                   "truncated to [-1, 1], p_value the one-sample t-test; recall, pass_rate: "
                   "Dirichlet(1,1,1,1) over the paired 2x2 table of majority votes, p_value "
                   "exact McNemar; precision, f1: independent posteriors, no p_value. diff_ci "
                   "is equal-tailed, or one-sided on the estimate's side so it contains diff; "
                   "p_value_holm adjusts across variants (family: variants:<metric>). role: "
                   "primary = the goal's metric; exploratory metrics are unadjusted for the "
                   "number of metrics read. With context: or sweep:, one factor at a time: "
                   "each subject or sweep cell against the control at the same length "
                   "(factor, at_length), never a pair that differs in two",
    "flips": "comparisons[].flips: cases whose majority vote changed; p_value is Fisher's "
             "exact test of the case's two counts (two-sided), beyond_noise is p_value <= "
             "Tarone's per-case level across the comparison's cases (family: cases; "
             "family-wise error <= 1 - level when no case differs)",
    "context": "versus_shortest: each length - the shortest, as comparisons' activation_rate; "
               "p_value_holm Holm-adjusted across the subject's longer lengths (family: "
               "context:<subject>); a decline is p_value_holm < 1 - level with diff < 0. "
               "trend: mean per-case least-squares slope of the activation rate on "
               "log2(1 + length), t(N-1). interaction: mean per-case difference of a "
               "subject's slope and the control's, t(N-1), p_value_holm across the "
               "subjects (family: interaction)",
    "specificity_ci": "Beta(TN+1, FP+1): the specificity (true-negative rate on should_not "
                      "cases, majority votes) marginal of the same Dirichlet(1,1,1,1) "
                      "posterior; the same rule as score_ci (one-sided at TN = 0 or FP = 0)",
    "pass_rate_ci": "Beta(TP+TN+1, FP+FN+1): the correct rate (cases whose majority vote is "
                    "right, the goal metric pass_rate) from a flat prior on the rate; the "
                    "same rule as score_ci (one-sided when every vote is right or wrong)",
    "reliability": "per group of cases (must_trigger, should_not_trigger, correct): the "
                   "one-way ANOVA intraclass correlation of trials nested in cases, and the "
                   "design effect 1 + (K - 1) * ICC with K the mean valid trials per case: how "
                   "much less a trial tells than an independent draw",
    "unsettled": "cases whose majority vote would flip with more trials with posterior "
                 "probability above 0.2 (the case's rate under Beta(k+1, n-k+1) on the "
                 "other side of 1/2 from its current vote; a tie votes no)",
    "sensors": "a subject's sensors.<name>: rate = passed / n over every valid trial; rate_ci "
               "as trial_level's ci (hierarchical beta-binomial, cases as clusters: trials "
               "of one case are not independent). comparisons[].sensors: variant - control "
               "of the per-case pass rates, case-level as activation_rate's; p_value_holm "
               "Holm-adjusted across every variant x sensor at once (family: sensors); "
               "diff_ci and p_variant_better unadjusted; always exploratory",
}

_GROUPS = ("must_trigger", "should_not_trigger")


#: `prior:` in experiment.yaml: the Beta prior of every rate interval in a summary.
PRIORS = ("uniform", "jeffreys")


def prior_parameters(prior: str) -> tuple[float, float]:
    """Beta(a, b) of a named prior: uniform (1, 1), jeffreys (½, ½)."""
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {', '.join(PRIORS)}; got {prior!r}")
    return (1.0, 1.0) if prior == "uniform" else (0.5, 0.5)


def methods(prior: str = "uniform") -> dict[str, str]:
    """`METHODS`, reworded for a Jeffreys prior: Beta(½, ½) in place of Beta(1, 1) for
    score_ci, precision, recall, F1's U and the trial-level rate."""
    if prior_parameters(prior) == (1.0, 1.0):
        return dict(METHODS)
    words = [("Beta(k+1, n-k+1) from a uniform Beta(1,1) prior",
              "Beta(k+1/2, n-k+1/2) from a Jeffreys Beta(1/2,1/2) prior"),
             ("Beta(TP+1, FP+1): the exact marginal of a Dirichlet(1,1,1,1) posterior",
              "Beta(TP+1/2, FP+1/2): Jeffreys' Beta(1/2,1/2) prior on precision"),
             ("Beta(TN+1, FP+1): the specificity",
              "Beta(TN+1/2, FP+1/2): Jeffreys' prior on the specificity"),
             ("Beta(TP+TN+1, FP+FN+1): the correct rate",
              "Beta(TP+TN+1/2, FP+FN+1/2): the correct rate"),
             ("from a flat prior on the rate", "from Jeffreys' prior on the rate"),
             ("Beta(TP+1, FN+1), from the same Dirichlet(1,1,1,1) posterior",
              "Beta(TP+1/2, FN+1/2), Jeffreys' prior on recall"),
             ("~ Beta(TP+1, FP+FN+1), a flat prior on U",
              "~ Beta(TP+1/2, FP+FN+1/2), Jeffreys' prior on U")]
    out = {}
    for key, text in METHODS.items():
        for old, new in words:
            text = text.replace(old, new)
        out[key] = text
    out["trial_level"] = (out["trial_level"] + "; population-rate prior Beta(1/2,1/2) "
                          "(Jeffreys) in place of U(0,1)")
    out["prior"] = ("jeffreys (experiment.yaml `prior:`): Beta(1/2,1/2) for score_ci, "
                    "precision/recall, F1's U and the trial-level population rate")
    return out


def score_intervals(passed: np.ndarray, valid: np.ndarray, level: float = LEVEL,
                    prior: str = "uniform") -> tuple[np.ndarray, np.ndarray]:
    """Per-case activation-rate intervals (`beta_interval`'s default rule: equal-tailed,
    one-sided at k = 0 and k = n); cases with no valid trial get NaN."""
    lo = np.full(len(valid), np.nan)
    hi = np.full(len(valid), np.nan)
    has = valid > 0
    if has.any():
        lo[has], hi[has] = beta_interval(passed[has], valid[has], level=level,
                                         prior=prior_parameters(prior))
    return lo, hi


def metric_intervals(tp: int, fp: int, fn: int, level: float = LEVEL,
                     prior: str = "uniform") -> MetricIntervals:
    """Precision, recall and F1 intervals, each one-sided at its boundary counts: uniform is
    flat: precision and recall are the Dirichlet(1,1,1,1) posterior's exact marginals and
    F1's U is Beta(1, 1) a priori (not the Dirichlet's Beta(1, 2), see `f1_interval`);
    jeffreys puts Beta(½, ½) on precision, recall and U alike."""
    ab = prior_parameters(prior)
    return {
        "precision_ci": pair(*precision_interval(tp, fp, level=level, prior=ab)),
        "recall_ci": pair(*recall_interval(tp, fn, level=level, prior=ab)),
        "f1_ci": pair(*f1_interval(tp, fp, fn, level=level, prior=ab)),
    }


def trial_rate(successes: np.ndarray, trials: np.ndarray, level: float = LEVEL,
               unbiased: np.ndarray | None = None,
               prior: str = "uniform", families: np.ndarray | None = None) -> TrialRateOut:
    """A rate over trials nested in cases (per case: `successes` of `trials`): naive and
    clustered SE, hierarchical interval with cases as clusters (STATS.md §4, §10). Every
    trial-level rate of a summary goes through it: `trial_level`'s and each sensor's pass rate
    (`ix.eval.sensor_summary`).

    `unbiased` (trials: auto) holds each case's unbiased estimate of its rate under the
    stopping rule: the rate is then their mean over cases, not Σk/Σn (cases that stop early
    are the unanimous ones, so pooling trials over-weights the borderline cases), and
    se_clustered the standard error of that mean.

    `families` labels each case's perturbation family (`ix.eval.families`): where cases
    share one, the family is the cluster — of se_clustered, and of the hierarchical model,
    fitted to each family's pooled counts — and `n_families` says how many there are.
    """
    keep = trials > 0
    successes, trials = successes[keep], trials[keep]
    total = int(trials.sum())
    if total == 0:
        return {"rate": None, "n_trials": 0, "n_cases": 0, "se_naive": None,
                "se_clustered": None, "ci": [None, None]}
    groups: np.ndarray | None = None
    if families is not None:
        labels, inverse = np.unique(np.asarray(families)[keep], return_inverse=True)
        # every case its own family: the numbers of a run without any
        groups = None if len(labels) == len(trials) else inverse.ravel()
    if unbiased is not None:
        per_case = unbiased[keep]
        rate = float(per_case.mean())
        deviations = per_case - rate
        per_unit = deviations if groups is None else np.bincount(groups, weights=deviations)
        se_clustered = math.sqrt(float((per_unit ** 2).sum())) / len(per_case)
    else:
        rate = float(successes.sum()) / total
        clusters = np.repeat(np.arange(len(trials)) if groups is None else groups, trials)
        starts = np.repeat(np.cumsum(trials) - trials, trials)
        values = ((np.arange(total) - starts) < np.repeat(successes, trials)).astype(float)
        se_clustered = clustered_se(values, clusters)
    # the hierarchical model's likelihood does not depend on the stopping rule; where its
    # equal-tailed interval excludes the rate (always when no trial or every trial passed),
    # the one-sided interval on the rate's side, credibility exactly `level` (STATS.md §1)
    k, n = ((successes, trials) if groups is None else
            (np.bincount(groups, weights=successes).astype(np.int64),
             np.bincount(groups, weights=trials).astype(np.int64)))
    lo, hi = hierarchical_interval(k, n, level=level, prior=prior_parameters(prior),
                                   estimate=rate)
    out: TrialRateOut = {
        "rate": num(rate),
        "n_trials": total,
        "n_cases": len(trials),
        "se_naive": num(math.sqrt(rate * (1 - rate) / total)),
        "se_clustered": num(se_clustered),
        "ci": pair(lo, hi),
    }
    if families is not None:
        out["n_families"] = len(trials) if groups is None else int(groups.max()) + 1
    return out


def _first_k(passed: np.ndarray, valid: np.ndarray, k: int, outcome: bool,
             rule: Any) -> np.ndarray:
    """Per case, an unbiased estimate of P(the first k trials all passed (outcome=True) or
    all failed): hypergeometric C(c,k)/C(n,k) in a fixed run; under `trials: auto`
    (`rule`) the Rao-Blackwell estimate given where the case stopped
    (`ix.stats.sequential.unbiased_first_k`), the hypergeometric one where the case did not
    follow the rule (errors, cancelled). nan where the case has fewer than k valid trials."""
    c = passed if outcome else valid - passed
    out = np.full(len(valid), np.nan)
    has = valid >= k
    if not has.any():
        return out
    if rule is not None and k <= rule.min_trials:
        out[has] = unbiased_first_k_cases(rule, passed[has], valid[has], k, outcome)
    missing = has & np.isnan(out)
    if missing.any():
        top = int(valid[missing].max()) + 1
        keys, inverse = np.unique(valid[missing] * top + c[missing], return_inverse=True)
        values = np.array([pass_hat_k(int(key // top), int(key % top), k) for key in keys])
        out[missing] = values[inverse.ravel()]
    return out


def stopping_rule(trials_mode: Mapping[str, Any] | None) -> Any:
    """The `StoppingRule` of a `trials: auto` run from its summary's `trials_mode`; None for
    a fixed run."""
    if not trials_mode or trials_mode.get("mode") != "auto":
        return None

    top = int(trials_mode["max_trials"])
    return StoppingRule(min(int(trials_mode["min_trials"]), top), top,
                        float(trials_mode.get("credibility") or 0.95))


def trial_level(cases: Sequence[EvalCase], passed: np.ndarray, valid: np.ndarray,
                level: float = LEVEL, rule: Any = None,
                prior: str = "uniform") -> TrialLevelOut:
    """Trial-level activation rate per expectation, and the rate of trials that were right.

    Under `trials: auto` (`rule`, a `StoppingRule`) each rate is the mean over cases of an
    unbiased per-case estimate (`_first_k` with k = 1)."""
    expect = np.array([c.expectation for c in cases])
    must = expect == "must_trigger"
    act = right = None
    if rule is not None:
        act = _first_k(passed, valid, 1, True, rule)
        right = np.where(must, act, _first_k(passed, valid, 1, False, rule))
    labels = family_labels(cases)
    families = None if labels is None else np.array(labels)
    rates = []
    for group in _GROUPS:
        mask = expect == group
        rates.append(trial_rate(passed[mask], valid[mask], level,
                                None if act is None else act[mask], prior,
                                None if families is None else families[mask]))
    right_counts = np.where(must, passed, valid - passed)
    return {"must_trigger": rates[0], "should_not_trigger": rates[1],
            "correct": trial_rate(right_counts, valid, level, right, prior, families)}


def pass_k(cases: Sequence[EvalCase], passed: np.ndarray, valid: np.ndarray,
           max_k: int, level: float = LEVEL, rule: Any = None) -> PassK:
    """pass@k and pass^k for k = 1 .. max_k (at most the most valid trials of any case; past
    `EVERY_K`, its doublings and the largest: `k_levels`), a trial passing when it matched
    the expectation, each with the interval of a seeded case-level Bayesian bootstrap.

    Under `trials: auto` (`rule`) only k ≤ min_trials: every case reached those k whatever
    the rule did, and each case's estimate accounts for where it stopped (`_first_k`). A
    larger k would average over the few unsettled cases that reached it (biased, and
    pass@k could fall with k)."""
    must = np.array([c.expectation == "must_trigger" for c in cases], dtype=bool)
    right = np.where(must, passed, valid - passed)
    # no k beyond the most valid trials of any case: no case has that many, and a cancelled
    # run planned with a million trials per case would spend minutes on a million nulls
    reached = min(max_k, int(valid.max())) if len(valid) else 0
    if rule is not None:
        reached = min(reached, rule.min_trials)
    per_case: dict[tuple[str, int], np.ndarray] = {}
    for k in k_levels(reached):
        yes, no = _first_k(passed, valid, k, True, rule), _first_k(passed, valid, k, False, rule)
        per_case[("at", k)] = 1 - np.where(must, no, yes)    # not all k wrong
        per_case[("hat", k)] = np.where(must, yes, no)       # all k right
    # cases alike in (right, valid, passed, expectation) have alike estimates
    cis = pass_k_intervals(right, valid, passed * 2 + must, per_case, level) if per_case else {}
    out: PassK = {"pass_at_k": {}, "pass_hat_k": {}, "pass_at_k_ci": {}, "pass_hat_k_ci": {}}
    for (kind, k), values in per_case.items():
        ok = np.isfinite(values)
        value = num(float(values[ok].mean())) if ok.any() else None
        if kind == "at":
            out["pass_at_k"][str(k)], out["pass_at_k_ci"][str(k)] = value, pair(*cis[(kind, k)])
        else:
            out["pass_hat_k"][str(k)], out["pass_hat_k_ci"][str(k)] = value, pair(*cis[(kind, k)])
    return out
