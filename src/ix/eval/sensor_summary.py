"""Every sensor summarised, not only the first (issue 20): the summary's per-subject `sensors`
block and the per-sensor comparisons of each variant against the control.

A sensor's **pass rate** is the share of the subject's valid trials whose reading of that
sensor passed, over every case run (whatever its expectation: it is the sensor's own rate,
not the activation rate of DESIGN.md §8). Its interval is the posterior Beta(k+1, n−k+1)
(the experiment's `prior:`), equal-tailed, one-sided at k = 0 and k = n (STATS.md §1): the
trials are pooled, so with cases that differ much it is narrower than the population rate's.
Comparisons are case-level, like `activation_rate`'s (STATS.md §3): the mean over cases of the
per-case rate difference with a t reference (`ix.stats.case_level`), never trial t against
trial t; Holm across variants, per sensor; always exploratory.
"""

from collections.abc import Sequence

from ix.eval.estimates import LEVEL, num, pair, prior_parameters
from ix.eval.models import EvalCase
from ix.eval.schemas import MetricComparison, SensorCaseOut, SensorRateOut
from ix.eval.scoring import Tally
from ix.stats.case_level import case_level_difference
from ix.stats.difference import difference_interval
from ix.stats.intervals import beta_interval
from ix.stats.power import holm


def sensor_names(tallies: Sequence[Tally]) -> list[str]:
    """Every sensor any subject's valid trials were read by, in the order they read (the
    control's first)."""
    names: dict[str, None] = {}
    for tally in tallies:
        names.update(dict.fromkeys(tally.sensors))
    return list(names)


def _counts(tally: Tally, name: str, cases: Sequence[EvalCase]) -> list[tuple[int, int]]:
    by_case = tally.sensors.get(name, {})
    return [(by_case[c.id][0], by_case[c.id][1]) if c.id in by_case else (0, 0)
            for c in cases]


def sensors_block(tally: Tally, names: Sequence[str], cases: Sequence[EvalCase],
                  level: float = LEVEL, prior: str = "uniform") -> dict[str, SensorRateOut]:
    """One subject's `sensors`: per sensor (`names`, the first the primary), its pass rate over
    the valid trials with its interval, passed/valid, and each case's counts."""
    out: dict[str, SensorRateOut] = {}
    for i, name in enumerate(names):
        counts = _counts(tally, name, cases)
        passed = sum(k for k, _ in counts)
        valid = sum(n for _, n in counts)
        ci = beta_interval(passed, valid, level=level, prior=prior_parameters(prior)) \
            if valid else (float("nan"), float("nan"))
        per_case: dict[str, SensorCaseOut] = {
            c.id: {"passed": k, "n": n, "rate": num(k / n)}
            for c, (k, n) in zip(cases, counts, strict=True) if n}
        out[name] = {"primary": i == 0, "rate": num(passed / valid) if valid else None,
                     "rate_ci": pair(*ci), "passed": passed, "n": valid, "cases": per_case}
    return out


def _comparison(control: Tally, variant: Tally, name: str, cases: Sequence[EvalCase],
                level: float) -> MetricComparison:
    m = case_level_difference(_counts(control, name, cases), _counts(variant, name, cases))
    if m is None:  # no case with valid trials of both subjects
        return {"control": None, "variant": None, "diff": None, "diff_median": None,
                "diff_ci": [None, None], "p_variant_better": None, "p_value": None,
                "p_value_holm": None, "mcnemar_p": None, "mcnemar_p_holm": None,
                "role": "exploratory", "paired": True, "n": 0}
    di = difference_interval(m.cdf, m.estimate, level=level)
    return {"control": num(m.control), "variant": num(m.variant), "diff": num(m.estimate),
            "diff_median": num(di.median), "diff_ci": pair(di.lo, di.hi),
            "p_variant_better": num(m.p_better), "p_value": num(m.p_value),
            "p_value_holm": None, "mcnemar_p": None, "mcnemar_p_holm": None,
            "role": "exploratory", "paired": True, "n": m.n}


def compare_sensors(tallies: Sequence[Tally], names: Sequence[str],
                    cases: Sequence[EvalCase],
                    level: float = LEVEL) -> list[dict[str, MetricComparison]]:
    """Per variant (the tallies after the control's, in order), each sensor's pass rate
    against the control's: the case-level paired difference, `p_value_holm` adjusted across
    the variants."""
    out = [{name: _comparison(tallies[0], t, name, cases, level) for name in names}
           for t in tallies[1:]]
    for name in names:
        raw = [block[name]["p_value"] for block in out]
        if all(p is None for p in raw):
            continue
        adjusted = holm([p if p is not None else 1.0 for p in raw])
        for block, p, r in zip(out, adjusted, raw, strict=True):
            block[name]["p_value_holm"] = num(p) if r is not None else None
    return out
