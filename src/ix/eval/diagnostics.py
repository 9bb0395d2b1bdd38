"""What a statistician asks of a run next to precision and recall: specificity, how alike the
trials of one case are (ICC and design effect), and which cases' majority votes are unsettled.

Computed from per-case counts, vectorised over cases, as JSON-safe numbers (`ix.eval.estimates`
turns NaN into None). The statistics live in `ix.stats.reliability` and
`ix.stats.sequential`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, cast

from ix._lazy import lazy
from ix.eval.estimates import LEVEL, num, pair, prior_parameters
from ix.eval.models import EvalCase
from ix.eval.schemas import Interval, ReliabilityGroupsOut, ReliabilityOut, UnsettledCase
from ix.stats.intervals import beta_interval
from ix.stats.reliability import design_effect, icc_oneway
from ix.stats.sequential import flip_probability

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")

#: A case whose majority vote would flip with more trials with a posterior probability above
#: this is listed as unsettled.
UNSETTLED = 0.2

_GROUPS = ("must_trigger", "should_not_trigger")


class Specificity(TypedDict):
    """The true-negative rate and its interval: a subject block's `metrics` keys."""

    specificity: float | None
    specificity_ci: Interval | None


class PassRate(TypedDict):
    """The correct rate (the goal metric `pass_rate`) and its interval: `metrics` keys."""

    pass_rate: float | None
    pass_rate_ci: Interval | None


def _share(hit: int, miss: int, level: float, prior: str) -> tuple[float | None, Interval]:
    """hit / (hit + miss) with the interval of Beta(hit + a, miss + b) (`beta_interval`,
    so its rule at hit = 0 or miss = 0 applies); the caller checks hit + miss > 0."""
    lo, hi = beta_interval(hit, hit + miss, level=level, prior=prior_parameters(prior))
    return num(hit / (hit + miss)), pair(lo, hi)


def specificity(tn: int, fp: int, level: float = LEVEL,
                prior: str = "uniform") -> Specificity:
    """True-negative rate on the should_not cases (majority votes), with its interval.

    Beta(TN+1, FP+1), the specificity marginal of the same Dirichlet(1,1,1,1) posterior as
    precision and recall, through `beta_interval` (so its rule at TN = 0 or FP = 0 applies);
    Beta(TN+½, FP+½) under `prior: jeffreys`. None for both when the run has no should_not
    case with a valid trial.
    """
    if tn + fp == 0:
        return {"specificity": None, "specificity_ci": None}
    value, ci = _share(tn, fp, level, prior)
    return {"specificity": value, "specificity_ci": ci}


def pass_rate(tp: int, fp: int, fn: int, tn: int, level: float = LEVEL,
              prior: str = "uniform") -> PassRate:
    """The correct rate: the cases whose majority vote is right, (TP+TN) / (TP+FP+FN+TN), as
    the goal metric `pass_rate` counts them and `ix run`'s screen shows them, with its
    interval: Beta(TP+TN+1, FP+FN+1), a flat prior on the rate itself (Beta(½, ½) added under
    `prior: jeffreys`), the rule of every rate's interval. None for both without a voted
    case."""
    if tp + fp + fn + tn == 0:
        return {"pass_rate": None, "pass_rate_ci": None}
    value, ci = _share(tp + tn, fp + fn, level, prior)
    return {"pass_rate": value, "pass_rate_ci": ci}


def _group_reliability(successes: np.ndarray, trials: np.ndarray) -> ReliabilityOut:

    keep = trials > 0
    successes, trials = successes[keep], trials[keep]
    if len(trials) == 0:
        return {"icc": None, "design_effect": None, "trials_per_case": None, "n_cases": 0}
    per_case = float(trials.mean())
    icc = icc_oneway(successes, trials)
    out: ReliabilityOut = {"icc": num(icc),
                           "design_effect": num(design_effect(icc, per_case)),
                           "trials_per_case": num(per_case), "n_cases": len(trials)}
    if icc is not None and icc < 0:
        out["note"] = NEGATIVE_ICC
    return out


#: Why a negative ICC gives a design effect of 1 (`ix.stats.reliability.design_effect`).
NEGATIVE_ICC = ("ICC estimated below 0 (the cases vary less than trial noise would make "
                "them): sampling error around a true ICC >= 0, so the design effect is "
                "floored at 1")


def reliability(cases: Sequence[EvalCase], passed: np.ndarray,
                valid: np.ndarray) -> ReliabilityGroupsOut:
    """Between-case reliability of the trials, per expectation and for trials that were right.

    Per group: the one-way ANOVA ICC of the trials nested in cases, the design effect
    1 + (K̄ − 1)·ICC with K̄ the mean valid trials per case, K̄ and the number of cases.
    """
    expect = np.array([c.expectation for c in cases])
    groups = [_group_reliability(passed[mask], valid[mask])
              for mask in (expect == group for group in _GROUPS)]
    right = np.where(expect == "must_trigger", passed, valid - passed)
    scored = np.isin(expect, _GROUPS)
    return {"must_trigger": groups[0], "should_not_trigger": groups[1],
            "correct": _group_reliability(right[scored], valid[scored])}


def unsettled(cases: Sequence[EvalCase], passed: np.ndarray,
              valid: np.ndarray) -> list[UnsettledCase]:
    """Cases whose majority vote would flip with more trials with probability > `UNSETTLED`.

    P(flip) from `ix.stats.sequential.flip_probability` (uniform prior, unlimited further
    trials); the most uncertain first, then by case id. Only must and should_not cases (an
    edge case's vote counts nowhere); cases without a valid trial have no vote.
    """
    if len(valid) == 0:
        return []
    p = flip_probability(passed, valid)
    rows: list[UnsettledCase] = [
        {"probe_id": c.id, "expectation": c.expectation, "passed": int(passed[i]),
         "n": int(valid[i]), "p_flip": cast(float, num(float(p[i])))}
            for i, c in enumerate(cases)
            if valid[i] > 0 and c.expectation in _GROUPS and p[i] > UNSETTLED]
    return sorted(rows, key=lambda r: (-r["p_flip"], r["probe_id"]))
