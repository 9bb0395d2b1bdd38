"""`ix report --baseline TAG`: has anything regressed since the baseline run?

The run is compared with the baseline by `ix.report.runs.compare_runs` (the same statistics
as `ix compare`). The gate reads every subject × metric at once, so it controls the
family-wise error over all of them (Holm): each (subject, metric) gets a one-sided p-value
for "the run is worse" — half the two-sided McNemar / case-level t p-value when the run's
value is lower (1 otherwise), and for precision and F1, which have no frequentist test here,
the posterior probability that the run is not worse (P(better) under a uniform prior, the
one-sided p-value's Bayesian twin). A metric regressed when its Holm-adjusted p-value is at
most `ALPHA`: with no real change, the gate flags anything in at most 5% of runs.
"""

from typing import TYPE_CHECKING, Any

from ix.stats.power import holm

if TYPE_CHECKING:
    from ix.report.schemas import Baseline, Regression, RunComparisons, RunMetricChange

ALPHA = 0.05


def _p_worse(m: "RunMetricChange") -> float:
    """One-sided p-value of "the run is worse than the baseline" on one metric."""
    diff, p = m.get("diff"), m.get("p_value")
    if p is not None:
        return p / 2 if diff is not None and diff < 0 else 1.0
    better = m.get("p_better")
    return 1.0 if better is None else min(1.0, max(0.0, float(better)))


def _tests(comparison: "RunComparisons") -> "list[tuple[Any, str, RunMetricChange]]":
    """The family: every (subject, metric) both runs define (a metric undefined on a side,
    `not_compared`, is no test and does not widen the family)."""
    return [(entry, metric, m) for entry in comparison.get("comparisons", [])
            if "error" not in entry for metric, m in entry["metrics"].items()
            if not m.get("not_compared")]


def regressions(comparison: "RunComparisons", alpha: float = ALPHA) -> "list[Regression]":
    """Every (subject, metric) of a `compare_runs` result that is worse than the baseline
    with Holm-adjusted one-sided p ≤ `alpha` across all subjects × metrics."""
    tests = _tests(comparison)
    raw = [_p_worse(m) for _, _, m in tests]
    adjusted = holm(raw)
    out: list[Regression] = []
    for (entry, metric, m), p, adj in zip(tests, raw, adjusted, strict=True):
        if adj <= alpha and m["diff"] is not None and m["diff"] < 0:
            out.append({"subject": entry["subject"], "metric": metric,
                        "before": m["before"], "after": m["after"], "diff": m["diff"],
                        "diff_ci": m["diff_ci"], "p_better": m["p_better"],
                        # finite: _p_worse is in [0, 1] (compare_runs's p-values are num()'d)
                        "p_worse": round(float(p), 6), "p_worse_holm": round(float(adj), 6),
                        "paired": m["paired"]})
    return out


def baseline_section(tag: str, baseline_run: str,
                     comparison: "RunComparisons") -> "Baseline":
    """The report's `baseline` block: what was compared, and what regressed."""
    found = regressions(comparison)
    n = len(_tests(comparison))
    return {"tag": tag, "run": baseline_run, "comparison": comparison, "regressions": found,
            "regressed": bool(found),
            "rule": f"a metric regressed when the run is worse than the baseline with a "
                    f"one-sided p-value <= {ALPHA:g} after Holm's adjustment across all "
                    f"{n} subject x metric tests (family-wise error <= {ALPHA:g})"}
