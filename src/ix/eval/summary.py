"""The summary a run leaves behind (`summary-latest.json`, DESIGN.md §4), as plain JSON data.

The top level keeps the shape of `001_…` for the first (control) subject; `subjects` holds the
same block for every subject. `probe_results[].trials` holds each trial's verdict by
index (`true`, `false`, `null`: errored or no verdict), up to `ix.eval.scoring.TRIALS_KEPT`
trials per subject, and stays empty above it: the trials themselves live in `trials.jsonl`,
and a summary must stay small whatever the trial count.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, cast

from ix._lazy import lazy
from ix.eval import diagnostics
from ix.eval.estimates import (
    LEVEL,
    methods,
    metric_intervals,
    num,
    pass_k,
    score_intervals,
    stopping_rule,
)
from ix.eval.estimates import trial_level as trial_level_rates
from ix.eval.models import ExperimentResults
from ix.eval.robustness import family_intervals, robustness
from ix.eval.routing import case_routes, routing_table
from ix.eval.schemas import (
    SCHEMA_VERSION,
    Expectation,
    GoalOut,
    Prior,
    ProbeResultOut,
    RunStatus,
    Stopped,
    SubjectBlock,
    SubjectComparison,
    Summary,
    SummaryRun,
    TrialsMode,
)
from ix.eval.scoring import Tally

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")


def subject_block(name: str, description: str, tally: Tally, results: ExperimentResults,
                  trials_per_case: int, level: float = LEVEL,
                  stopped: dict[str, str] | None = None,
                  trials_mode: TrialsMode | None = None,
                  prior: str = "uniform", target: str | None = None) -> SubjectBlock:
    """One subject's block; `stopped` (trials: auto) says why each case stopped, and
    `trials_mode` (the summary's) gives the stopping rule that pass@k and the trial-level
    rates account for. With `target` (the skill under test of an activation sensor) each
    case gets `routes` and the block a `routing` table (`ix.eval.routing`)."""
    rule = stopping_rule(trials_mode)
    counts = [tally.counts[c.id] for c in tally.cases]
    valid = np.fromiter((c.valid for c in counts), dtype=np.int64, count=len(counts))
    passed = np.fromiter((c.passed for c in counts), dtype=np.int64, count=len(counts))
    lo, hi = score_intervals(passed, valid, level, prior)
    probes: list[ProbeResultOut] = []
    for i, (p, c) in enumerate(zip(results.probe_results, counts, strict=True)):
        probe: ProbeResultOut = {
            "probe_id": p.probe_id,
            "expectation": cast(Expectation, p.expectation),
            "score": round(p.score, 6) if c.valid else None,
            "score_ci": [num(lo[i]), num(hi[i])] if c.valid else None,
            "correct": p.correct if c.valid else None,
            "trials": tally.verdicts_by_trial(p.probe_id),
            "n": c.valid,
            "passed": c.passed,
            "errors": c.errors,
        }
        if stopped is not None:
            probe["stopped"] = cast(Stopped, stopped.get(p.probe_id, "cancelled"))
        if target is not None:
            probe["routes"] = case_routes(tally.routes.get(p.probe_id, Counter()))
        probes.append(probe)
    block: SubjectBlock = {
        "name": name,
        "description": description,
        "probe_results": probes,
        "metrics": {
            "precision": num(results.precision),
            "recall": num(results.recall),
            "f1": num(results.f1),
            "tp": results.tp, "fp": results.fp, "fn": results.fn, "tn": results.tn,
            **metric_intervals(results.tp, results.fp, results.fn, level, prior),
            **diagnostics.specificity(results.tn, results.fp, level, prior),
            **diagnostics.pass_rate(results.tp, results.fp, results.fn, results.tn, level,
                                    prior),
        },
        "trial_level": trial_level_rates(tally.cases, passed, valid, level, rule=rule,
                                         prior=prior),
        **pass_k(tally.cases, passed, valid, trials_per_case, level, rule=rule),
        "reliability": diagnostics.reliability(tally.cases, passed, valid),
        "unsettled": diagnostics.unsettled(tally.cases, passed, valid),
        "interpretation": {
            "status": results.status,
            "issues": list(results.issues),
            "suggestions": list(results.suggestions),
        },
        "errors": tally.errors,
        "trials": tally.trials,
        "usage": {"tokens_input": tally.tokens_input, "tokens_output": tally.tokens_output,
                  "cost_usd": round(tally.cost_usd, 6)},
    }
    if target is not None:
        block["routing"] = routing_table(target, tally.cases, tally.routes)
    # perturbed cases (variants:, probe: paraphrase): a family is one unit (STATS.md §10)
    cast(dict[str, Any], block["metrics"]).update(
        family_intervals(tally, tally.cases, level, prior))
    robust = robustness(tally, tally.cases, level)
    if robust is not None:
        block["robustness"] = robust
    return block


def build_summary(*, experiment_name: str, run_id: str, run_status: str,
                  blocks: list[SubjectBlock], info: SummaryRun,
                  comparisons: list[SubjectComparison] | None = None,
                  goal: GoalOut | None = None,
                  prior: str = "uniform") -> Summary:
    """Control's block at the top level (the `001_…` shape), every subject under `subjects`."""
    control = blocks[0]
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment_name": experiment_name,
        "run_id": run_id,
        "run_status": cast(RunStatus, run_status),
        "subject": control["name"],
        "probe_results": control["probe_results"],
        "metrics": control["metrics"],
        "interpretation": control["interpretation"],
        "trial_level": control["trial_level"],
        "pass_at_k": control["pass_at_k"],
        "pass_hat_k": control["pass_hat_k"],
        "pass_at_k_ci": control.get("pass_at_k_ci", {}),
        "pass_hat_k_ci": control.get("pass_hat_k_ci", {}),
        "errors": sum(b["errors"] for b in blocks),
        "usage": {"tokens_input": sum(b["usage"]["tokens_input"] for b in blocks),
                  "tokens_output": sum(b["usage"]["tokens_output"] for b in blocks),
                  "cost_usd": round(sum(b["usage"]["cost_usd"] for b in blocks), 6)},
        "subjects": blocks,
        "comparisons": comparisons or [],
        "goal": goal,
        "statistics": {"level": LEVEL, "prior": cast(Prior, prior), "methods": methods(prior)},
        **info,
    }
