"""The summary a run leaves behind (`summary-latest.json`, DESIGN.md §4), as plain JSON data.

The top level keeps the shape of `001_…` for the first (control) subject; `subjects` holds the
same block for every subject. `probe_results[].trials` stays an empty list: the trials
themselves live in `trials.jsonl`, and a summary must stay small whatever the trial count.
"""

from typing import Any

from ix.eval.models import ExperimentResults
from ix.eval.scoring import Tally


def subject_block(name: str, description: str, tally: Tally,
                  results: ExperimentResults) -> dict[str, Any]:
    probes: list[dict[str, Any]] = []
    for p in results.probe_results:
        c = tally.counts[p.probe_id]
        probes.append({
            "probe_id": p.probe_id,
            "expectation": p.expectation,
            "score": round(p.score, 6) if c.valid else None,
            "correct": p.correct if c.valid else None,
            "trials": [],
            "n": c.valid,
            "passed": c.passed,
            "errors": c.errors,
        })
    return {
        "name": name,
        "description": description,
        "probe_results": probes,
        "metrics": {
            "precision": round(results.precision, 6),
            "recall": round(results.recall, 6),
            "f1": round(results.f1, 6),
            "tp": results.tp, "fp": results.fp, "fn": results.fn, "tn": results.tn,
        },
        "interpretation": {
            "status": results.status,
            "issues": list(results.issues),
            "suggestions": list(results.suggestions),
        },
        "errors": tally.errors,
        "trials": tally.trials,
    }


def build_summary(*, experiment_name: str, run_id: str, run_status: str,
                  blocks: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
    """Control's block at the top level (the `001_…` shape), every subject under `subjects`."""
    control = blocks[0]
    return {
        "experiment_name": experiment_name,
        "run_id": run_id,
        "run_status": run_status,
        "subject": control["name"],
        "probe_results": control["probe_results"],
        "metrics": control["metrics"],
        "interpretation": control["interpretation"],
        "errors": sum(b["errors"] for b in blocks),
        "subjects": blocks,
        "comparisons": [],
        "goal": None,
        **info,
    }
