"""A goal's verdict after a run (DESIGN.md §6, STATS.md §11).

effect = treatment − control on the goal's metric. The goal is `supported` when the posterior
probability of an effect beyond `min_effect` in the stated direction reaches `credibility`,
`refuted` when the probability of the opposite (inside the region of practical equivalence,
or the other way) does, and `inconclusive` otherwise — then with the number of cases the
power analysis suggests. `reachable` says which verdicts the data can still reach (STATS.md
§10): a decrease cannot be observed from a control at 0, nor an increase from 1.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ix.eval.comparisons import effect
from ix.eval.estimates import LEVEL, num, pair
from ix.eval.goal_reach import control_estimate, reach_block
from ix.eval.goal_sizing import observed_counts, suggest
from ix.eval.models import EvalCase
from ix.eval.outcome_goals import outcome_goal
from ix.eval.outcomes import is_outcome_metric
from ix.eval.scoring import Tally
from ix.stats.decisions import goal_verdict


def evaluate_goal(goal: dict[str, Any], names: Sequence[str], tallies: Sequence[Tally],
                  metrics: Sequence[Mapping[str, Any]], cases: Sequence[EvalCase],
                  trials_per_case: int, level: float = LEVEL) -> dict[str, Any]:
    control, treatment = goal["compare"][:2]
    ic, it = names.index(control), names.index(treatment)
    metric = goal["metric"]
    if is_outcome_metric(metric):  # tokens, time, cost, a score (DESIGN.md §10)
        return outcome_goal(goal, tallies[ic].outcomes, tallies[it].outcomes, trials_per_case,
                            level)
    e = effect(metric, tallies[ic], tallies[it], cases, metrics[ic], metrics[it], level=level)
    v = goal_verdict(e.cdf, direction=goal["direction"], min_effect=goal["min_effect"],
                     credibility=goal["credibility"])
    # activation_rate: the case-level model's CDF (ix.stats.case_level), so the verdict is
    # about the mean over prompts of the rate difference and ignores trial order
    diff = e.diff
    out: dict[str, Any] = {
        **goal,
        "verdict": v.verdict,
        "p_supported": num(v.p_supported),
        "p_refuted": num(v.p_refuted),
        "rule": v.rule,
        "effect": {"metric": metric, "control": num(e.control), "treatment": num(e.variant),
                   "diff": num(diff), "diff_median": num(e.median),
                   "diff_ci": pair(*e.interval), "paired": e.paired},
        "suggestion": None,
        "reachable": _reachable(goal, tallies[ic], tallies[it], cases),
    }
    if e.n == 0:  # nothing to compare (an undefined metric, no case): no probability either
        out.update(verdict="inconclusive", p_supported=None, p_refuted=None,
                   note=e.not_compared or f"no case gives {metric} on both sides: nothing "
                                          "to compare")
        return out
    if v.verdict == "inconclusive":
        out["suggestion"] = _suggest(goal, metric, tallies[ic], tallies[it], cases,
                                     trials_per_case, diff)
    return out


def _reachable(goal: dict[str, Any], control: Tally, treatment: Tally,
               cases: Sequence[EvalCase]) -> dict[str, Any] | None:
    """Which verdicts the goal can still reach from the control's value and bounds on the
    cases both subjects ran (as the suggestion and `ix plan` compute them)."""
    must, counts, _ = observed_counts(control, treatment, cases)
    x, interval = control_estimate(goal["metric"], must, *counts,
                                   credibility=float(goal["credibility"]))
    block, _ = reach_block(goal["metric"], goal, x, interval)
    return dict(block) if block is not None else None


def _suggest(goal: dict[str, Any], metric: str, control: Tally, treatment: Tally,
             cases: Sequence[EvalCase], trials_per_case: int,
             diff: float | None) -> dict[str, Any]:
    """How many cases would settle it, with the simulated probability that they do
    (`ix.eval.goal_sizing`: sized for the goal's own rule, checked by simulating it)."""
    return suggest(goal, control, treatment, cases, trials_per_case, diff)
