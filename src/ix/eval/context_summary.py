"""The summary's `context` block (DESIGN.md §7): for each subject of an experiment with
`context:`, its metrics at every length, each length against the shortest, and the trend.

The expanded subjects (`<subject>[ctx=<length>]`) are ordinary subjects of the summary; this
block regroups them by the subject they came from. Against the shortest length, the
activation rate is compared as every comparison is (`ix.eval.comparisons.effect`: the
case-level paired posterior); the trend is the case-level slope of the activation rate (on
must_trigger cases) against log2(1 + length) (`ix.stats.trend`), with its interval and the
probability that it declines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ix.eval.comparisons import effect
from ix.eval.estimates import LEVEL, num, pair
from ix.eval.models import EvalCase
from ix.eval.schemas import (
    ContextLength,
    ContextOut,
    ContextSubject,
    ContextTrend,
    ContextVersus,
    SubjectBlock,
)
from ix.eval.scoring import Tally
from ix.stats.trend import case_level_trend

__all__ = ["context_block"]

#: The metric the trend and the comparisons against the shortest length read.
METRIC: Literal["activation_rate"] = "activation_rate"


def context_block(context: Mapping[str, Any], blocks: Sequence[SubjectBlock],
                  tallies: Mapping[str, Tally], cases: Sequence[EvalCase],
                  level: float = LEVEL) -> ContextOut:
    """`context` is {prefix, unit, lengths, of: {expanded name: [subject, length]}}; `blocks`
    the summary's subject blocks, `tallies` their tallies, by name."""
    by_name = {b["name"]: b for b in blocks}
    groups: dict[str, list[tuple[int, str]]] = {}
    for name, (subject, length) in context["of"].items():
        if name in by_name:
            groups.setdefault(subject, []).append((int(length), name))
    must = [c for c in cases if c.expectation == "must_trigger"]
    subjects: list[ContextSubject] = []
    for subject, runs in groups.items():
        runs.sort()
        rows = [_length(length, by_name[name]) for length, name in runs]
        shortest = runs[0][1]
        versus: list[ContextVersus] = []
        for length, name in runs[1:]:
            e = effect(METRIC, tallies[shortest], tallies[name], cases,
                       by_name[shortest]["metrics"], by_name[name]["metrics"], level=level)
            versus.append({"length": length, "subject": name, "metric": METRIC,
                           "diff": num(e.diff), "diff_ci": pair(*e.interval),
                           "p_lower": num(1.0 - e.p_better) if e.n else None})
        subjects.append({"subject": subject, "lengths": rows, "versus_shortest": versus,
                         "trend": _trend([length for length, _ in runs],
                                         [tallies[name] for _, name in runs], must, level)})
    return {"prefix": str(context["prefix"]), "unit": context["unit"],
            "lengths": [int(n) for n in context["lengths"]], "level": level,
            "subjects": subjects}


def _length(length: int, block: SubjectBlock) -> ContextLength:
    """A rate without a denominator (precision with no activation) is null, not 0."""
    m, must = block["metrics"], block["trial_level"]["must_trigger"]
    correct = block["trial_level"]["correct"]
    tp, fp, fn = m["tp"], m["fp"], m["fn"]
    return {"length": length, "subject": block["name"],
            "activation_rate": must["rate"], "activation_rate_ci": must["ci"],
            "recall": m["recall"] if tp + fn else None, "recall_ci": m["recall_ci"],
            "precision": m["precision"] if tp + fp else None,
            "precision_ci": m["precision_ci"],
            "f1": m["f1"] if 2 * tp + fp + fn else None, "f1_ci": m["f1_ci"],
            "correct_rate": correct["rate"], "correct_rate_ci": correct["ci"]}


def _trend(lengths: list[int], tallies: list[Tally], must: Sequence[EvalCase],
           level: float) -> ContextTrend | None:
    if len(lengths) < 2 or not must:
        return None
    counts = [[(t.counts[c.id].passed, t.counts[c.id].valid) for t in tallies] for c in must]
    trend = case_level_trend(counts, lengths)
    if trend is None:
        return None
    out: ContextTrend = {"metric": METRIC, "x": "log2(1 + length)", "slope": num(trend.slope),
                         "slope_ci": pair(*trend.interval(level)),
                         "p_decline": num(trend.p_decline), "n_cases": trend.n}
    return out
