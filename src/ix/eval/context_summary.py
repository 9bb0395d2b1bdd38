"""The summary's `context` block (DESIGN.md §7): for each subject of an experiment with
`context:`, its metrics at every length, each length against the shortest, and the trend.

The expanded subjects (`<subject>[ctx=<length>]`) are ordinary subjects of the summary; this
block regroups them by the subject they came from. Against the shortest length, the
activation rate is compared as every comparison is (`ix.eval.comparisons.effect`: the
case-level paired posterior), its two-sided p Holm-adjusted across the subject's longer
lengths — one family per subject, `context:<subject>` (STATS.md §10): a length *declines*
when its adjusted p < 1 − level and its difference is negative, so that under no decline the
chance that any length of a subject is called a decline is ≤ 1 − level. The trend is the
case-level slope of the activation rate (on must_trigger cases) against log2(1 + length)
(`ix.stats.trend`), with its interval and the probability that it declines: the one test of
"does it degrade?". The **interaction** of every other subject (sweep cells included) is its
trend against the control's, paired by case (`case_level_trend_difference`), with P(it
declines faster) and a p Holm-adjusted across the run's interactions (`interaction`).
Perturbed cases (`ix.eval.families`) are one cluster in every one of these, and the trend and
the interaction say how many families (`n_families`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ix.eval.comparisons import effect
from ix.eval.estimates import LEVEL, num, pair
from ix.eval.families import family_labels
from ix.eval.models import EvalCase
from ix.eval.schemas import (
    ContextInteraction,
    ContextLength,
    ContextOut,
    ContextSubject,
    ContextTrend,
    ContextVersus,
    SubjectBlock,
)
from ix.eval.scoring import Tally
from ix.stats.power import holm
from ix.stats.trend import case_level_trend, case_level_trend_difference

__all__ = ["context_block"]

#: The metric the trend and the comparisons against the shortest length read.
METRIC: Literal["activation_rate"] = "activation_rate"
#: The Holm family of the interactions: every subject's trend against the control's.
INTERACTION = "interaction"


def family(subject: str) -> str:
    """The Holm family of a subject's lengths against its shortest."""
    return f"context:{subject}"


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
                           "p_lower": num(1.0 - e.p_better) if e.n else None,
                           "p_value": num(e.p_value) if e.n else None, "p_value_holm": None,
                           "family": family(subject)})
        _holm(versus)
        subjects.append({"subject": subject, "lengths": rows, "versus_shortest": versus,
                         "trend": _trend([length for length, _ in runs],
                                         [tallies[name] for _, name in runs], must, level)})
    first = blocks[0]["name"] if blocks else None  # the control, at some length
    control = next((s for s, runs in groups.items() if any(n == first for _, n in runs)), None)
    if control is not None:
        base = {length: name for length, name in groups[control]}
        interactions: list[ContextInteraction] = []
        for s in subjects:
            if s["subject"] == control:
                continue
            i = _interaction(control, base, {r["length"]: r["subject"] for r in s["lengths"]},
                             tallies, must, level)
            s["interaction"] = i
            if i is not None:
                interactions.append(i)
        _holm(interactions)
    return {"prefix": str(context["prefix"]), "unit": context["unit"],
            "lengths": [int(n) for n in context["lengths"]], "level": level,
            "subjects": subjects}


def _holm(entries: Sequence[ContextVersus] | Sequence[ContextInteraction]) -> None:
    """Fill each entry's `p_value_holm`: Holm across the entries that have a p-value."""
    tested = [e for e in entries if e["p_value"] is not None]
    for e, p in zip(tested, holm([float(e["p_value"] or 0.0) for e in tested]), strict=True):
        e["p_value_holm"] = num(p)


def _interaction(control: str, base: Mapping[int, str], own: Mapping[int, str],
                 tallies: Mapping[str, Tally], must: Sequence[EvalCase],
                 level: float) -> ContextInteraction | None:
    """`own`'s trend against the control's, over the lengths both ran (`base`, `own`: the
    expanded subject at each length)."""
    lengths = sorted(set(base) & set(own))
    if len(lengths) < 2 or not must:
        return None

    def counts(names: Mapping[int, str]) -> list[list[tuple[int, int]]]:
        return [[(tallies[names[n]].counts[c.id].passed, tallies[names[n]].counts[c.id].valid)
                 for n in lengths] for c in must]

    labels = family_labels(must)
    d = case_level_trend_difference(counts(base), counts(own), lengths, labels)
    if d is None:
        return None
    out: ContextInteraction = {
        "versus": control, "metric": METRIC, "x": "log2(1 + length)",
        "diff": num(d.slope), "diff_ci": pair(*d.interval(level)),
        "p_lower": num(d.p_decline), "p_value": num(d.p_value), "p_value_holm": None,
        "family": INTERACTION, "n_cases": d.n}
    if labels is not None and d.n_clusters is not None:
        out["n_families"] = d.n_clusters
    return out


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
    labels = family_labels(must)
    trend = case_level_trend(counts, lengths, labels)
    if trend is None:
        return None
    out: ContextTrend = {"metric": METRIC, "x": "log2(1 + length)", "slope": num(trend.slope),
                         "slope_ci": pair(*trend.interval(level)),
                         "p_decline": num(trend.p_decline), "n_cases": trend.n}
    if labels is not None and trend.n_clusters is not None:
        out["n_families"] = trend.n_clusters
    return out
