"""A goal's verdict after a run (DESIGN.md §6, STATS.md §11).

effect = treatment − control on the goal's metric. The goal is `supported` when the posterior
probability of an effect beyond `min_effect` in the stated direction reaches `credibility`,
`refuted` when the probability of the opposite (inside the region of practical equivalence,
or the other way) does, and `inconclusive` otherwise — then with the number of cases the
power analysis suggests.
"""

from collections.abc import Sequence
from typing import Any

from ix.eval.comparisons import PAIRED, effect, paired_tables
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
    """How many cases would settle it, if the new cases looked like these.

    The observed counts (the paired 2×2 table, or each subject's TP/FP/FN) are scaled to n
    cases and the goal's rule is applied to the posterior that would give; the smallest n
    whose verdict is decisive with a margin (probability ≥ 1 − (1 − c)/5, so that a real run
    of that size usually settles it despite sampling noise) is suggested. It uses the same
    posterior as the verdict, prior included, where a normal-approximation power formula is
    optimistic at the sample sizes of agent experiments.
    """
    from ix.stats.classification import f1_diff_cdf
    from ix.stats.comparisons import diff_cdf, paired_diff_cdf
    from ix.stats.decisions import goal_verdict

    c = float(goal["credibility"])
    margin = 1 - (1 - c) / 5
    per_case = 1
    if metric in PAIRED:
        t = paired_tables(control, treatment, cases)[metric]
        cells = (t.both, t.variant_only, t.control_only, t.neither)
        base = t.n
        if metric == "activation_rate":
            per_case = max(trials_per_case, 1)

        def verdict_at(n: int) -> float:
            s, t, u, w = (round(x * n / base) for x in cells)
            v = goal_verdict(lambda d: paired_diff_cdf(s, t, u, w, d),
                             direction=goal["direction"], min_effect=goal["min_effect"],
                             credibility=c)
            return max(v.p_supported, v.p_refuted)
    else:
        ra, rb = control.results(""), treatment.results("")
        a, b = [ra.tp, ra.fp, ra.fn], [rb.tp, rb.fp, rb.fn]
        base = max(sum(a) + sum(b), 1)

        def verdict_at(n: int) -> float:
            tp_a, fp_a, fn_a = (round(x * n / base) for x in a)
            tp_b, fp_b, fn_b = (round(x * n / base) for x in b)

            def cdf(d: float) -> float:
                if metric == "f1":
                    return f1_diff_cdf(tp_b, fp_b, fn_b, tp_a, fp_a, fn_a, d)
                # precision: Beta(TP+1, FP+1) per subject
                return diff_cdf(tp_b, tp_b + fp_b, tp_a, tp_a + fp_a, d)

            v = goal_verdict(cdf, direction=goal["direction"], min_effect=goal["min_effect"],
                             credibility=c)
            return max(v.p_supported, v.p_refuted)

    current = max(base // per_case, 1)
    if base == 0:
        return {"cases": None, "current_cases": 0, "trials_per_case": trials_per_case,
                "method": "no valid trials to extrapolate from"}
    n, limit = base, base * 200
    while n < limit and verdict_at(n) < margin:
        n *= 2
    if n >= limit and verdict_at(limit) < margin:
        return {"cases": None, "current_cases": current, "trials_per_case": trials_per_case,
                "method": "the observed effect sits at the edge of the equivalence region: no "
                          "number of similar cases settles it"}
    lo, hi = n // 2, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if verdict_at(mid) >= margin else (mid, hi)
    cases_needed = -(-hi // per_case)
    return {"cases": max(cases_needed, current + 1), "current_cases": current,
            "trials_per_case": trials_per_case,
            "method": f"the observed counts scaled up until the verdict reaches "
                      f"{margin:.3f} under the same posterior"}
