"""A goal on a quantity (DESIGN.md §10): tokens, time, cost, a score or a judge's dimension.

`goal: {metric: output_tokens, direction: increase, at_most: 0.2, relative: true}` reads
"the skill adds at most 20% output tokens". The effect is the treatment's mean of case means
against the control's on the cases both ran: their difference, or with `relative` their
ratio − 1. Its posterior is Student's t on the per-case differences (on the log of the
ratio, as wide as the ratio's bootstrap-t interval: `ix.stats.continuous.Comparison.cdf`).
With `min_effect` the goal asks for an effect beyond it (`ix.stats.decisions.goal_verdict`,
as a rate's goal does); with `at_most`, for one within it (`bound_verdict`). An undecided
goal gets the number of cases a one-sided t test would need at the effect and spread seen.
"""

import math
from typing import Any

from ix.eval.numbers import LEVEL, num
from ix.eval.outcomes import OutcomeSums
from ix.stats import continuous
from ix.stats.decisions import bound_verdict, goal_verdict
from ix.stats.power import goal_settle_power, n_for_goal

#: The chance of settling the goal that a suggested number of cases is sized for.
POWER = 0.8


def outcome_goal(goal: dict[str, Any], control: OutcomeSums, treatment: OutcomeSums,
                 trials_per_case: int, level: float = LEVEL) -> dict[str, Any]:
    """The goal's verdict block (`GoalOut`) from the two subjects' outcome sums."""
    metric, relative = goal["metric"], bool(goal.get("relative"))
    a, b = control.means(metric), treatment.means(metric)
    shared = sorted(set(a) & set(b))
    xs, ys = [a[c] for c in shared], [b[c] for c in shared]
    c = continuous.compare(xs, ys, level)
    estimate = c.ratio if relative else c.difference
    shift = -1.0 if relative else 0.0
    out: dict[str, Any] = {
        **goal, "verdict": "inconclusive", "p_supported": None, "p_refuted": None,
        "rule": None, "suggestion": None, "reachable": None,
        "effect": {"metric": metric,
                   "control": num(sum(xs) / len(xs)) if xs else None,
                   "treatment": num(sum(ys) / len(ys)) if ys else None,
                   "diff": num(estimate.value + shift), "diff_median": num(estimate.value + shift),
                   "diff_ci": [num(estimate.lo + shift), num(estimate.hi + shift)],
                   "paired": True}}
    scale = c.se_log_ratio if relative else c.se_difference
    if len(shared) < 2 or not math.isfinite(estimate.value) or math.isnan(scale):
        out["note"] = (f"{metric} is on fewer than two cases of both subjects" if len(shared) < 2
                       else f"{metric}'s ratio is undefined (a mean of 0 or less)")
        return out
    cdf = c.cdf(relative)
    kind = "relative change (treatment / control - 1)" if relative else "treatment - control"
    if goal.get("at_most") is not None:
        v = bound_verdict(cdf, direction=goal["direction"], at_most=float(goal["at_most"]),
                          credibility=float(goal["credibility"]))
    else:
        v = goal_verdict(cdf, direction=goal["direction"], min_effect=float(goal["min_effect"]),
                         credibility=float(goal["credibility"]))
    out.update(verdict=v.verdict, p_supported=num(v.p_supported), p_refuted=num(v.p_refuted),
               rule=v.rule.replace("(effect = treatment - control)", "").rstrip(", ")
               + f" (effect = {kind}, t posterior on the {len(shared)} cases' means)")
    if v.verdict == "inconclusive":
        out["suggestion"] = _suggest(goal, c, len(xs), trials_per_case, relative)
    return out


def _suggest(goal: dict[str, Any], c: "continuous.Comparison", n: int, trials_per_case: int,
             relative: bool) -> dict[str, Any]:
    """How many cases would settle it if the effect and the spread of the per-case
    differences were what this run saw (`ix.stats.power.n_for_goal`)."""
    bound = float(goal["at_most"] if goal.get("at_most") is not None else goal["min_effect"])
    direction = goal["direction"]
    if relative:  # on the log scale, where the posterior is t
        effect = math.log(c.ratio.value)
        bound = (-math.log1p(-bound) if direction == "decrease" and bound < 1
                 else math.log1p(bound))
        sd = c.se_log_ratio * math.sqrt(n)
    else:
        effect, sd = c.difference.value, c.se_difference * math.sqrt(n)
    base = {"current_cases": n, "trials_per_case": trials_per_case, "unit": "cases",
            "effect": num(c.ratio.value - 1 if relative else effect),
            "criterion": f"a {POWER:.0%} chance to settle it"}
    try:
        cases = n_for_goal(effect, min_effect=bound, sd=sd,
                           credibility=float(goal["credibility"]), power=POWER,
                           direction=direction)
    except ValueError as exc:
        return {**base, "cases": None, "method": str(exc)}
    return {**base, "cases": cases,
            "p_settle": num(goal_settle_power(cases, effect, min_effect=bound, sd=sd,
                                              credibility=float(goal["credibility"]),
                                              direction=direction)),
            "method": "one-sided t on the per-case differences at the effect and spread "
                      "this run saw"}
