"""Every sensor summarised, not only the first (issue 20): the summary's per-subject `sensors`
block and the per-sensor comparisons of each variant against the control.

A sensor's **pass rate** is the share of the subject's valid trials whose reading of that
sensor passed, over every case run (whatever its expectation: it is the sensor's own rate,
not the activation rate of DESIGN.md §8). Trials within a case are not independent, so its
interval is that of every trial-level rate (STATS.md §10, `ix.eval.estimates.trial_rate`):
the population rate under the hierarchical beta-binomial model with cases as clusters (the
experiment's `prior:` on it), one-sided on the rate's side where the equal-tailed interval
would exclude it. A Beta on the pooled trials covered the population rate 0.69-0.84 of the
time on heterogeneous cases (issue 32).
Comparisons are case-level, like `activation_rate`'s (STATS.md §3): the mean over cases of the
per-case rate difference with a t reference (`ix.stats.case_level`), never trial t against
trial t. One question, one family (STATS.md §10): `p_value_holm` is Holm-adjusted across
every variant × sensor (`family: "sensors"`); always exploratory. Cases generated from one
original (`ix.eval.families`) are one cluster in both, and `n_families` counts them.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ix._lazy import lazy
from ix.eval.estimates import LEVEL, num, pair, trial_rate
from ix.eval.families import family_labels
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally
from ix.stats.case_level import case_level_difference
from ix.stats.difference import difference_interval
from ix.stats.power import holm

if TYPE_CHECKING:
    import numpy as np

    from ix.eval.schemas import MetricComparison, SensorCaseOut, SensorRateOut
else:
    np = lazy("numpy")

#: The Holm family of the sensor comparisons: every variant × every sensor of one run.
FAMILY = "sensors"


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
                  level: float = LEVEL, prior: str = "uniform") -> "dict[str, SensorRateOut]":
    """One subject's `sensors`: per sensor (`names`, the first the primary), its pass rate over
    the valid trials with its case-clustered interval (`trial_rate`, as `trial_level`'s),
    passed/valid, and each case's counts."""
    out: dict[str, SensorRateOut] = {}
    labels = family_labels(cases)
    families = None if labels is None else np.array(labels)
    for i, name in enumerate(names):
        counts = _counts(tally, name, cases)
        passed = sum(k for k, _ in counts)
        valid = sum(n for _, n in counts)
        rate = trial_rate(np.array([k for k, _ in counts], dtype=int),
                          np.array([n for _, n in counts], dtype=int), level, prior=prior,
                          families=families)
        per_case: dict[str, SensorCaseOut] = {
            c.id: {"passed": k, "n": n, "rate": num(k / n)}
            for c, (k, n) in zip(cases, counts, strict=True) if n}
        out[name] = {"primary": i == 0, "rate": rate["rate"], "rate_ci": rate["ci"],
                     "passed": passed, "n": valid, "cases": per_case}
        if "n_families" in rate:
            out[name]["n_families"] = rate["n_families"]
    return out


def _comparison(control: Tally, variant: Tally, name: str, cases: Sequence[EvalCase],
                level: float) -> "MetricComparison":
    labels = family_labels(cases)
    m = case_level_difference(_counts(control, name, cases), _counts(variant, name, cases),
                              labels)
    if m is None:  # no case with valid trials of both subjects
        return {"control": None, "variant": None, "diff": None, "diff_median": None,
                "diff_ci": [None, None], "p_variant_better": None, "p_value": None,
                "p_value_holm": None, "mcnemar_p": None, "mcnemar_p_holm": None,
                "role": "exploratory", "paired": True, "n": 0, "family": FAMILY}
    di = difference_interval(m.cdf, m.estimate, level=level)
    out: MetricComparison = {
        "control": num(m.control), "variant": num(m.variant), "diff": num(m.estimate),
        "diff_median": num(di.median), "diff_ci": pair(di.lo, di.hi),
        "p_variant_better": num(m.p_better), "p_value": num(m.p_value),
        "p_value_holm": None, "mcnemar_p": None, "mcnemar_p_holm": None,
        "role": "exploratory", "paired": True, "n": m.n, "family": FAMILY}
    if labels is not None and m.n_clusters is not None:
        out["n_families"] = m.n_clusters  # perturbation families: the independent units
    return out


def compare_sensors(tallies: Sequence[Tally], names: Sequence[str],
                    cases: Sequence[EvalCase], level: float = LEVEL,
                    pairs: Sequence[tuple[int, int]] | None = None,
                    ) -> "list[dict[str, MetricComparison]]":
    """Per variant (the tallies after the control's, in order; or each (control, variant)
    of `pairs`, indices into `tallies`: `ix.eval.factorial`), each sensor's pass rate
    against the control's: the case-level paired difference, `p_value_holm` adjusted across
    every variant × sensor at once (one family, `FAMILY`: a run with 3 variants and 3 sensors
    makes 9 tests; Holm per sensor let the family-wise error reach 0.14). A comparison with
    no case to compare has no p-value and is not counted in the family."""
    if pairs is None:
        pairs = [(0, i) for i in range(1, len(tallies))]
    out = [{name: _comparison(tallies[c], tallies[v], name, cases, level) for name in names}
           for c, v in pairs]
    tested = [m for block in out for m in block.values() if m["p_value"] is not None]
    for m, p in zip(tested, holm([float(m["p_value"] or 0.0) for m in tested]), strict=True):
        m["p_value_holm"] = num(p)
    return out
