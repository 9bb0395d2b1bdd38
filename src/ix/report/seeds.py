"""One experiment × subject over several seeds (`ix batch`): the metric pooled across the
seeds with an interval that counts each case once, and how much the seeds disagree.

Every seed re-runs the same cases, so its trials are more trials of those cases, not more
cases: pooling the seeds' counts as if they were new cases would narrow the interval
without new evidence. Here the unit stays the case (docs/statistics.md):

- F1, precision, recall, correct rate: every seed's valid trials of a case are pooled into one
  majority vote per case, and the interval is the metric's usual one over those votes (one
  count per case);
- activation rate: the must cases' trials of every seed pooled per case, with the
  hierarchical beta-binomial interval clustered by case.

The pooled vote is a different estimand from a seed's value: a majority vote over S·K trials
of a case is more often right than one over K, so pooled F1 sits above the seeds' own F1s
(0.915 pooled against 0.903 per seed in one lab). `seed_mean` is the mean of the seeds' own
values — the K-trial quantity each seed estimates — and `estimand` names what `value` is.
"""

from collections.abc import Sequence
from typing import Any

from ix.eval.numbers import LEVEL, num
from ix.report.leaderboard import Counts, counts_of, standing
from ix.stats.clustered import hierarchical_interval

#: The short name of each interval (a table's cell) and what it is (the note under it).
KINDS = {"votes": "case votes", "clustered": "clustered by case"}
#: What `value` estimates, by interval kind (the per-seed values are K-trial quantities).
ESTIMANDS = {
    "votes": "the metric over one majority vote per case of all seeds' trials pooled "
             "(S x K trials per case), not the mean of the seeds' K-trial values "
             "(seed_mean)",
    "clustered": "the share of all seeds' must-case trials that activated; with equal trials "
                 "per seed, the mean of the seeds' values",
}
METHODS = {
    "votes": "pooled case-level: each case's valid trials over all seeds form one majority "
             "vote; the interval counts each case once (seeds add trials, not cases)",
    "clustered": "pooled trials of the must cases over all seeds; hierarchical beta-binomial "
                 "interval clustered by case (seeds add trials, not cases)",
}


def _pooled_counts(blocks: Sequence[dict[str, Any]]) -> tuple[Counts, list[int], list[int]]:
    """Case-level counts from every seed's trials pooled per case, and the must cases'
    pooled (passed, valid) trials."""
    cases: dict[str, dict[str, Any]] = {}
    for block in blocks:
        for p in block["probe_results"]:
            c = cases.setdefault(p["probe_id"], {"expectation": p["expectation"],
                                                 "passed": 0, "n": 0})
            c["passed"] += int(p.get("passed") or 0)
            c["n"] += int(p.get("n") or 0)
    tp = fp = fn = correct = voted = 0
    must_k: list[int] = []
    must_n: list[int] = []
    for c in cases.values():
        if c["expectation"] not in ("must_trigger", "should_not_trigger") or not c["n"]:
            continue
        activated = c["passed"] / c["n"] > 0.5
        voted += 1
        if c["expectation"] == "must_trigger":
            tp, fn = (tp + 1, fn) if activated else (tp, fn + 1)
            correct += activated
            must_k.append(c["passed"])
            must_n.append(c["n"])
        else:
            fp += activated
            correct += not activated
    counts = Counts(tp=tp, fp=fp, fn=fn, correct=correct, voted=voted,
                    must_passed=sum(must_k), must_valid=sum(must_n))
    return counts, must_k, must_n


def pooled(blocks: Sequence[dict[str, Any]], seeds: Sequence[Any], metric: str,
           level: float = LEVEL) -> dict[str, Any]:
    """`metric` of one subject over the runs of several seeds (`blocks`: its summary block in
    each run, in the order of `seeds`): the pooled value with its interval and method, each
    seed's own value, and their spread (min, max, range, sd)."""
    counts, must_k, must_n = _pooled_counts(blocks)
    if metric == "activation_rate":
        value = counts.must_passed / counts.must_valid if counts.must_valid else None
        interval = (hierarchical_interval(must_k, must_n, level=level) if counts.must_valid
                    else (None, None))
        kind, cases = "clustered", len(must_n)
    else:
        s = standing(counts, metric, level)
        value, interval, kind, cases = s.estimate, s.interval, "votes", counts.voted
    per_seed = [{"seed": seed, "value": num(standing(counts_of(b), metric, level).estimate)}
                for seed, b in zip(seeds, blocks, strict=True)]
    values = [x["value"] for x in per_seed if x["value"] is not None]
    spread: dict[str, Any] = {"min": None, "max": None, "range": None, "sd": None}
    if values:
        lo, hi = min(values), max(values)
        mean = sum(values) / len(values)
        sd = ((sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
              if len(values) > 1 else None)
        spread = {"min": num(lo), "max": num(hi), "range": num(hi - lo), "sd": num(sd)}
    lo_hi = [num(interval[0]), num(interval[1])]
    return {"metric": metric, "value": num(value), "ci": lo_hi, "level": level,
            "interval": KINDS[kind], "method": METHODS[kind], "estimand": ESTIMANDS[kind],
            "seed_mean": num(sum(values) / len(values)) if values else None,
            "cases": cases, "seeds": len(blocks), "per_seed": per_seed, "spread": spread}
