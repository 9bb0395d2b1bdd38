"""`ix report --baseline TAG`: has anything regressed since the baseline run?

The run is compared with the baseline by `ix.report.runs.compare_runs` (the same statistics
as `ix compare`). A metric has regressed when the credible interval of its difference (run
minus baseline) lies entirely below zero: the run is credibly worse on it.
"""

from typing import Any


def regressions(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (subject, metric) of a `compare_runs` result whose difference is credibly
    negative, with the numbers that show it."""
    out = []
    for entry in comparison.get("comparisons", []):
        if "error" in entry:
            continue
        for metric, m in entry["metrics"].items():
            hi = m["diff_ci"][1]
            if hi is not None and hi < 0:
                out.append({"subject": entry["subject"], "metric": metric,
                            "before": m["before"], "after": m["after"], "diff": m["diff"],
                            "diff_ci": m["diff_ci"], "p_better": m["p_better"],
                            "paired": m["paired"]})
    return out


def baseline_section(tag: str, baseline_run: str, comparison: dict[str, Any]) -> dict[str, Any]:
    """The report's `baseline` block: what was compared, and what regressed."""
    found = regressions(comparison)
    return {"tag": tag, "run": baseline_run, "comparison": comparison, "regressions": found,
            "regressed": bool(found),
            "rule": "a metric regressed when the 95% credible interval of (run − baseline) "
                    "lies entirely below zero"}
