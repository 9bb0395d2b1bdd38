"""A goal's verdict after a run (DESIGN.md §6, STATS.md §11).

effect = treatment − control on the goal's metric. The goal is `supported` when the posterior
probability of an effect beyond `min_effect` in the stated direction reaches `credibility`,
`refuted` when the probability of the opposite (inside the region of practical equivalence,
or the other way) does, and `inconclusive` otherwise — then with the number of cases the
power analysis suggests.
"""

from collections.abc import Sequence
from typing import Any

from ix.eval.comparisons import PAIRED, effect
from ix.eval.estimates import LEVEL, num, pair
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally


def evaluate_goal(goal: dict[str, Any], names: Sequence[str], tallies: Sequence[Tally],
                  metrics: Sequence[dict[str, Any]], cases: Sequence[EvalCase],
                  trials_per_case: int, level: float = LEVEL) -> dict[str, Any]:
    from ix.stats.decisions import goal_verdict

    control, treatment = goal["compare"][:2]
    ic, it = names.index(control), names.index(treatment)
    metric = goal["metric"]
    e = effect(metric, tallies[ic], tallies[it], cases, metrics[ic], metrics[it], level=level)
    v = goal_verdict(e.cdf, direction=goal["direction"], min_effect=goal["min_effect"],
                     credibility=goal["credibility"])
    diff = e.variant - e.control if e.variant is not None and e.control is not None else None
    out: dict[str, Any] = {
        **goal,
        "verdict": v.verdict,
        "p_supported": num(v.p_supported),
        "p_refuted": num(v.p_refuted),
        "rule": v.rule,
        "effect": {"metric": metric, "control": num(e.control), "treatment": num(e.variant),
                   "diff": num(diff), "diff_ci": pair(*e.interval), "paired": e.paired},
        "suggestion": None,
    }
    if v.verdict == "inconclusive":
        out["suggestion"] = _suggest(goal, metric, tallies[ic], tallies[it], cases,
                                     trials_per_case, diff)
    return out


def _suggest(goal: dict[str, Any], metric: str, control: Tally, treatment: Tally,
             cases: Sequence[EvalCase], trials_per_case: int,
             diff: float | None) -> dict[str, Any]:
    """How many cases would settle it: Miller's paired design, or two proportions."""
    from ix.stats.power import n_paired, paired_variances, sample_size_two_proportions

    target = max(goal["min_effect"], abs(diff or 0.0), 0.05)
    in_scope = [c for c in cases if metric in ("pass_rate",) or c.expectation == "must_trigger"]
    if metric in PAIRED:
        rates_a, rates_b, n_a, n_b = [], [], [], []
        for c in in_scope:
            a, b = control.counts[c.id], treatment.counts[c.id]
            if not a.valid or not b.valid:
                continue
            flip = metric == "pass_rate" and c.expectation != "must_trigger"
            ra, rb = a.passed / a.valid, b.passed / b.valid
            rates_a.append(1 - ra if flip else ra)
            rates_b.append(1 - rb if flip else rb)
            n_a.append(a.valid)
            n_b.append(b.valid)
        if len(rates_a) >= 1:
            s2a, s2b, w2 = paired_variances(rates_a, n_a, rates_b, n_b)
            # a little variance even when every case was unanimous, or the plan says 1
            s2a, s2b = max(s2a, 0.01), max(s2b, 0.01)
            n = n_paired(target, sigma2_a=s2a, sigma2_b=s2b, omega2=w2, k_a=trials_per_case,
                         k_b=trials_per_case)
            return {"cases": max(n, len(rates_a) + 1), "current_cases": len(rates_a),
                    "trials_per_case": trials_per_case, "detect": num(target),
                    "method": "Miller paired design with variances from this run",
                    "assumptions": {"sigma2_control": num(s2a), "sigma2_treatment": num(s2b),
                                    "omega2": num(w2)}}
    p1 = min(max(_rate(control, in_scope), 0.05), 0.95)
    p2 = p1 - target if goal["direction"] == "decrease" else p1 + target
    p2 = min(max(p2, 0.01), 0.99)
    n = sample_size_two_proportions(p1, p2)
    return {"cases": n, "current_cases": len(in_scope), "trials_per_case": trials_per_case,
            "detect": num(target),
            "method": "two independent proportions (unpooled), cases per subject",
            "assumptions": {"control_rate": num(p1)}}


def _rate(tally: Tally, cases: Sequence[EvalCase]) -> float:
    valid = sum(tally.counts[c.id].valid for c in cases)
    passed = sum(tally.counts[c.id].passed for c in cases)
    return passed / valid if valid else 0.5
