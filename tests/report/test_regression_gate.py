"""`ix report --baseline`: the regression gate controls the family-wise error over every
subject × metric with Holm, and says so (STATS.md §12)."""

import numpy as np

from ix.report.regression import baseline_section, regressions
from ix.report.runs import compare_runs


def _metric(diff, p_value=None, p_better=None, ci=None):
    if ci is None:  # credibly negative when it moved down, else straddling 0
        ci = (-0.5, -0.01) if diff < 0 else (-0.1, 0.1)
    return {"before": 0.9, "after": 0.9 + diff, "diff": diff, "diff_median": diff,
            "diff_ci": list(ci), "p_better": p_better, "p_value": p_value, "paired": True}


def _comparison(entries):
    return {"baseline": "b", "experiment": "e", "comparisons": [
        {"run": "r", "subject": s, "cases": 20, "metrics": m, "flips": [], "verdict": ""}
        for s, m in entries.items()]}


def test_a_lone_small_p_value_is_not_a_regression_after_holm_across_subjects_and_metrics():
    """Fifteen tests (3 subjects × 5 metrics): one-sided p = 0.01 would pass alone, but
    Holm needs p ≤ 0.05/15 for the smallest — a credibly negative interval is not enough."""
    quiet = {"recall": _metric(0.0, p_value=1.0), "pass_rate": _metric(0.0, p_value=1.0),
             "activation_rate": _metric(0.0, p_value=1.0),
             "precision": _metric(0.0, p_better=0.5), "f1": _metric(0.0, p_better=0.5)}
    noisy = {**quiet, "recall": _metric(-0.2, p_value=0.02)}  # one-sided 0.01
    comparison = _comparison({"a": noisy, "b": quiet, "c": quiet})
    assert regressions(comparison) == []
    loud = {**quiet, "activation_rate": _metric(-0.3, p_value=0.0004),  # one-sided 0.0002
            "precision": _metric(-0.2, p_better=0.001)}
    found = regressions(_comparison({"a": loud, "b": quiet, "c": quiet}))
    assert [(r["subject"], r["metric"]) for r in found] == [("a", "activation_rate"),
                                                           ("a", "precision")]
    assert found[0]["p_worse"] == 0.0002 and found[0]["p_worse_holm"] == 0.0002 * 15
    # an improvement is never a regression, however small its p
    better = {**quiet, "recall": _metric(0.4, p_value=1e-6, ci=(0.2, 0.6))}
    assert regressions(_comparison({"a": better, "b": quiet, "c": quiet})) == []


def test_the_gate_says_it_adjusts_across_subjects_and_metrics():
    quiet = {"recall": _metric(0.0, p_value=1.0), "f1": _metric(0.0, p_better=0.5)}
    section = baseline_section("v1", "b", _comparison({"a": quiet, "b": quiet}))
    assert "Holm" in section["rule"] and "4 subject x metric tests" in section["rule"]
    assert section["regressed"] is False


def _summary(run_id, rates, expect, k, rng):
    subjects = []
    for name, r in rates.items():
        passed = rng.binomial(k, r)
        subjects.append({"name": name, "probe_results": [
            {"probe_id": f"c{i}", "expectation": expect[i], "n": k, "passed": int(passed[i])}
            for i in range(len(r))]})
    return {"run_id": run_id, "experiment_name": "e", "subjects": subjects}


def test_an_a_a_run_with_three_subjects_is_rarely_flagged():
    """Baseline and run draw from the same per-case rates (heterogeneous, most near 0 or
    1) for 3 subjects: the real `compare_runs` + gate flags at most 5% of 24 seeded runs."""
    rng = np.random.default_rng(2024)
    n_must, n_not, k = 10, 6, 3
    expect = ["must_trigger"] * n_must + ["should_not_trigger"] * n_not
    flagged, reps = 0, 24
    for _ in range(reps):
        rates = {s: np.concatenate([rng.beta(2, 0.6, n_must), rng.beta(0.6, 2, n_not)])
                 for s in ("a", "b", "c")}
        comparison = compare_runs([_summary("base", rates, expect, k, rng),
                                   _summary("run", rates, expect, k, rng)])
        assert all("p_value" in m for e in comparison["comparisons"]
                   for m in e["metrics"].values())
        flagged += bool(regressions(comparison))
    assert flagged / reps <= 0.05
