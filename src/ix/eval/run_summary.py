"""A run's summary from its per-subject tallies: blocks, comparisons, the goal's verdict.

One aggregation for every way trials become a run: the engine's runs (`ix.engine.run`
passes what its plan says) and imported ones (`ix import`).
"""

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ix.domain.verdicts import Scorer
from ix.eval.comparisons import compare_subjects
from ix.eval.context_summary import context_block
from ix.eval.factorial import factor_pairs
from ix.eval.goals import evaluate_goal
from ix.eval.models import EvalCase
from ix.eval.outcomes import outcomes_block
from ix.eval.schemas import (
    AlsoScored,
    GoalOut,
    SubjectComparison,
    Summary,
    SummaryRun,
    SweepOut,
)
from ix.eval.scoring import Tally, compute_metrics
from ix.eval.sensor_summary import compare_sensors, sensor_names, sensors_block
from ix.eval.summary import build_summary, subject_block


def also_scored(tally: Tally, spec: Mapping[str, Any], scorer: Scorer) -> AlsoScored:
    """How `scorer` would decide `tally`'s cases: the correct ones and the metrics."""
    voted = [p for p, c in zip(tally.probe_results(scorer), tally.cases, strict=True)
             if tally.counts[c.id].valid]
    m = compute_metrics(voted)

    def rate(key: str) -> float | None:
        value = m[key]
        return None if value is None else float(value)

    return {"scorer": dict(spec), "cases": len(voted), "correct": sum(p.correct for p in voted),
            "precision": rate("precision"), "recall": rate("recall"), "f1": rate("f1")}


def summarise_tallies(*, experiment_name: str, run_id: str, run_status: str,
                      subjects: Sequence[tuple[str, str]], tallies: Mapping[str, Tally],
                      cases: Sequence[EvalCase], trials_per_case: int, info: SummaryRun,
                      goal: dict[str, Any] | None = None,
                      stopped: Mapping[str, dict[str, str]] | None = None,
                      prior: str = "uniform",
                      targets: Mapping[str, str] | None = None,
                      context: Mapping[str, Any] | None = None,
                      sweep: SweepOut | None = None,
                      runtimes: Mapping[str, str] | None = None,
                      also: Sequence[tuple[Mapping[str, Any], Scorer]] = ()) -> Summary:
    """The summary of DESIGN.md §4. `subjects` is (name, description) in order, the control
    first; every tally counts `cases`. `prior` ("uniform" or "jeffreys", experiment.yaml's
    `prior:`) is the Beta prior of every rate interval (score_ci, precision/recall, F1's U,
    trial-level). A goal naming subjects outside the run gets no verdict. `targets` (subject
    -> skill under test, for an activation sensor) adds each subject's routing table.
    `context` ({prefix, unit, lengths, of: {subject: [its subject, length]}}) adds the
    `context` block (`ix.eval.context_summary`); `sweep` is the `sweep` block, the grid.
    With either, subjects are compared one factor at a time (`ix.eval.factorial`).
    `runtimes` (subject -> runtime kind) words each interpretation's advice for what its
    runtime reads (`ix.eval.scoring.interpret`); without it, as for a runtime that reads
    skills. `also` (the `scorers:` after the first, each with its spec) adds each subject's
    `also_scored`: how each would have decided the same trials."""
    names = [name for name, _ in subjects]
    ordered = [tallies[n] for n in names]
    activation = info.get("sensor", "activation") == "activation"
    blocks = [subject_block(name, description, tallies[name],
                            tallies[name].results(experiment_name, activation,
                                                  (runtimes or {}).get(name)),
                            trials_per_case,
                            stopped=stopped.get(name) if stopped is not None else None,
                            trials_mode=info.get("trials_mode"), prior=prior,
                            target=(targets or {}).get(name))
              for name, description in subjects]
    # every sensor, not only the first (issue 20)
    sensors = sensor_names(ordered)
    for block, tally in zip(blocks, ordered, strict=True):
        block["sensors"] = sensors_block(tally, sensors, cases, prior=prior)
        if also:
            block["also_scored"] = [also_scored(tally, spec, scorer) for spec, scorer in also]
    metrics = [b["metrics"] for b in blocks]
    within = factor_pairs(names, context, sweep)
    pairs = [(p.control, p.variant) for p in within]
    comparisons = compare_subjects(names, ordered, metrics, cases,
                                   primary=goal.get("metric") if goal else None, pairs=pairs)
    for comparison, by_sensor, p in zip(
            comparisons, compare_sensors(ordered, sensors, cases, pairs=pairs), within,
            strict=True):
        comparison["sensors"] = by_sensor
        if context is not None or sweep is not None:
            comparison["factor"] = p.factor
            comparison["at_length"] = p.length
    verdict = None
    if goal is not None:
        compare = goal.get("compare") or names[:2]
        if all(n in names for n in compare) and len(compare) == 2:
            verdict = evaluate_goal({**goal, "compare": compare}, names, ordered, metrics,
                                    cases, trials_per_case)
        else:
            verdict = {**goal, "verdict": None,
                       "note": "the goal's subjects were not all part of this run"}
    # comparisons and goals build plain dicts; their types are those of the summary
    summary = build_summary(experiment_name=experiment_name, run_id=run_id,
                            run_status=run_status, blocks=blocks,
                            comparisons=cast(list[SubjectComparison], comparisons),
                            goal=cast(GoalOut | None, verdict), info=info, prior=prior)
    outcomes = outcomes_block(names, {n: tallies[n].outcomes for n in names},
                              summary["statistics"]["level"])
    if outcomes is not None:
        summary["outcomes"] = outcomes
    if context is not None:
        summary["context"] = context_block(context, blocks, tallies, cases)
    if sweep is not None:
        summary["sweep"] = sweep
    return summary
