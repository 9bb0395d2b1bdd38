"""One goal across several experiments (the lab's `goals.yaml`, `ix report --goal NAME`).

A lab goal names experiments that each ran both subjects of its `compare` pair on their own
cases. What is pooled is the **cases**: every case of every named experiment is one draw from
one population of prompts, and the estimand is the mean over that population of
(treatment − control) on the goal's metric, per case —

- `activation_rate`: the case's activation rate (must_trigger cases), as in
  `ix.eval.comparisons` (`ix.stats.case_level`);
- `pass_rate`: whether the case's majority vote is right (must_trigger and
  should_not_trigger cases), so the mean difference is the difference of pass rates.

The per-case differences d_i of all experiments get the case-level t posterior
(`ix.stats.case_level.case_level_difference`: mean of d_i, SE² = max(s²/N, floor) on N − 1
degrees of freedom), and the goal's decision rule (`ix.stats.decisions.goal_verdict`) reads
it. So each experiment weighs by its number of cases, and the spread of d_i includes how far
the experiments' own effects differ: when they differ, the pooled SE is wider than a
stratified one (conservative), never narrower. The same case id in two experiments is two
cases. Each experiment's own difference is reported beside the pooled one, so a goal
supported on the pool but carried by one experiment shows it. Only the metrics whose per-case
difference is defined are pooled; precision and F1 (no per-case value) and the quantities of
`ix.eval.outcomes` are refused.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ix.eval.numbers import LEVEL, num, pair
from ix.stats.case_level import CaseLevelDifference, case_level_difference
from ix.stats.decisions import goal_verdict
from ix.stats.difference import difference_interval

__all__ = ["POOLED_METRICS", "ExperimentEvidence", "case_pairs", "pooled_goal"]

POOLED_METRICS = ("activation_rate", "pass_rate")

Counts = tuple[int, int]


@dataclass(frozen=True)
class ExperimentEvidence:
    """One named experiment's part: the run read and each case's counts for the control and
    the treatment (`case_pairs`), or why it gives none (`note`)."""

    experiment: str
    run_id: str | None
    pairs: Sequence[tuple[Counts, Counts]]
    note: str | None = None


def case_pairs(metric: str, control: Sequence[Mapping[str, Any]],
               treatment: Sequence[Mapping[str, Any]]) -> list[tuple[Counts, Counts]]:
    """The (control, treatment) counts of each case both subjects ran, from a summary's
    `probe_results`: (activated, valid trials) of must_trigger cases for activation_rate,
    (1 if the vote is right else 0, 1) of voted cases for pass_rate."""
    by_id = {str(p["probe_id"]): p for p in treatment}
    out = []
    for c in control:
        t = by_id.get(str(c["probe_id"]))
        if t is None:
            continue
        if metric == "activation_rate":
            if c.get("expectation") == "must_trigger":
                out.append(((int(c["passed"]), int(c["n"])), (int(t["passed"]), int(t["n"]))))
        elif c.get("expectation") in ("must_trigger", "should_not_trigger") \
                and isinstance(c.get("correct"), bool) and isinstance(t.get("correct"), bool):
            out.append(((int(c["correct"]), 1), (int(t["correct"]), 1)))
    return out


def _difference(pairs: Sequence[tuple[Counts, Counts]]) -> CaseLevelDifference | None:
    if not pairs:
        return None
    return case_level_difference([c for c, _ in pairs], [t for _, t in pairs])


def _effect(m: CaseLevelDifference | None, level: float) -> dict[str, Any]:
    if m is None:
        return {"control": None, "treatment": None, "diff": None, "diff_median": None,
                "diff_ci": None, "n_cases": 0}
    di = difference_interval(m.cdf, m.estimate, level=level)
    return {"control": num(m.control), "treatment": num(m.variant), "diff": num(m.estimate),
            "diff_median": num(di.median), "diff_ci": pair(di.lo, di.hi), "n_cases": m.n}


def pooled_goal(name: str, goal: Mapping[str, Any], evidence: Sequence[ExperimentEvidence],
                level: float = LEVEL) -> dict[str, Any]:
    """The lab goal's verdict from every experiment's cases pooled (module docstring), with
    each experiment's own difference. `goal` as GoalSpec.as_goal() plus `experiments`."""
    pooled = [p for e in evidence for p in e.pairs]
    m = _difference(pooled)
    out: dict[str, Any] = {
        "name": name, **goal, "pooled": "cases",
        "verdict": "inconclusive", "p_supported": None, "p_refuted": None, "rule": None,
        "effect": _effect(m, level),
        "experiments": [{"experiment": e.experiment, "run_id": e.run_id,
                         **{k: v for k, v in _effect(_difference(e.pairs), level).items()
                            if k in ("diff", "diff_ci", "n_cases")},
                         **({"note": e.note} if e.note else {})} for e in evidence],
    }
    if m is None:
        out["note"] = f"no case of the named experiments gives {goal['metric']} for both " \
                      "subjects: nothing to pool"
        return out
    v = goal_verdict(m.cdf, direction=goal["direction"], min_effect=goal["min_effect"],
                     credibility=goal["credibility"])
    out.update(verdict=v.verdict, p_supported=num(v.p_supported), p_refuted=num(v.p_refuted),
               rule=v.rule)
    return out
