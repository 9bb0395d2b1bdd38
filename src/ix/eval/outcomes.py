"""Tokens, time, cost and scores per trial, summed by case as trials arrive, and the
`outcomes` block made of them (DESIGN.md §10, STATS.md §13).

One accumulator a subject (`OutcomeSums`) serves the engine's tally (the summary's
`outcomes` and goals on these quantities) and the report's digest of an older run's lines.
A case keeps a flat list of [sum, count] pairs, one a quantity: it runs once a trial.
"""

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ix.eval.numbers import num
from ix.stats import continuous
from ix.stats.power import holm

if TYPE_CHECKING:
    from ix.eval.schemas import OutcomeComparison, OutcomeEstimate, Outcomes

#: The quantities every trial may report: a line's usage and duration, its tool calls and
#: turns, and its reading's score (listed when a score is not 0 or 1: a judge's, a check's).
#: Turns are listed when any trial reports them (a count of 0 says something); the others
#: when any is not 0. A judge's dimensions follow, as `<judge>.<dimension>`.
OUTCOME_METRICS = ("tokens_input", "tokens_output", "cost_usd", "duration_ms", "tool_calls",
                   "turns", "score")
#: The names DESIGN.md §10 and docs use for some of them, accepted wherever a metric is named.
ALIASES = {"input_tokens": "tokens_input", "output_tokens": "tokens_output",
           "cost": "cost_usd", "latency_ms": "duration_ms", "time_ms": "duration_ms"}
COUNTED = frozenset({"turns"})
#: Scores are bounded: their mean's interval is Student's t, not the skewed one's bootstrap.
UNSKEWED = frozenset({"score"})
RIGHT = "right"
#: Where each quantity's [sum, count] sits in a case's cell, then [right trials, trials].
_SLOT = {m: 2 * i for i, m in enumerate([*OUTCOME_METRICS, RIGHT])}
_SCORE, _RIGHT, _CELL = _SLOT["score"], _SLOT[RIGHT], 2 * len(_SLOT)
NO_FACTS = (None,) * (len(OUTCOME_METRICS) - 1)

Facts = tuple[float | None, ...]


def wrong(expectation: str, passed: bool | None) -> bool:
    """Whether a trial's reading goes against its case's expectation (an `acceptable` case
    is never wrong)."""
    if expectation == "must_trigger":
        return not passed
    if expectation == "should_not_trigger":
        return bool(passed)
    return False


def canonical(metric: str) -> str:
    """A quantity's name as the summary keys it (`output_tokens` is `tokens_output`)."""
    return ALIASES.get(metric, metric)


def is_outcome_metric(metric: str) -> bool:
    """Whether a goal's `metric` names a quantity of this block (not a rate): one of
    `OUTCOME_METRICS`, an alias, or a judge's dimension (`<judge>.<dimension>`)."""
    return canonical(metric) in _SLOT or "." in metric


def finite(x: Any) -> float | None:
    """`x` as a float when it is a finite number (not a bool), else None."""
    if type(x) is float:
        return x if math.isfinite(x) else None
    return float(x) if type(x) is int else None


def facts_of(observation: Mapping[str, Any] | None, duration_ms: Any) -> Facts:
    """A trial's numbers but the score, in `OUTCOME_METRICS`' order, from its observation as
    a line records it. A missing usage counts as 0, a missing turn count as none."""
    obs = observation or {}
    meta = obs.get("meta")
    calls = obs.get("tool_calls")
    return (finite(obs.get("tokens_input") or 0), finite(obs.get("tokens_output") or 0),
            finite(obs.get("cost_usd") or 0.0), finite(duration_ms),
            float(len(calls)) if type(calls) is list else None,
            finite(meta.get("num_turns", meta.get("turns"))) if type(meta) is dict else None)


@dataclass(slots=True)
class OutcomeSums:
    """One subject's sums by case (see the module): `measure` each trial that stands without
    error, `spend` every attempt's cost (cost per success counts retried attempts)."""

    cells: dict[str, list[float]] = field(default_factory=dict)
    #: case -> `<judge>.<dimension>` -> [sum, n]
    dimensions: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    spent: dict[str, float] = field(default_factory=dict)
    graded: bool = False  # a score other than 0 or 1 was read

    def measure(self, case: str, facts: Sequence[float | None], score: float | None,
                right: bool) -> None:
        cell = self.cells.get(case)
        if cell is None:
            cell = self.cells[case] = [0.0] * _CELL
        i = 0
        for value in facts:
            if value is not None:
                cell[i] += value
                cell[i + 1] += 1
            i += 2
        if score is not None:
            cell[_SCORE] += score
            cell[_SCORE + 1] += 1
            if score != 0 and score != 1:
                self.graded = True
        cell[_RIGHT + 1] += 1
        if right:
            cell[_RIGHT] += 1

    def judged(self, case: str, judge: str, scores: Mapping[str, Any]) -> None:
        """A judge's scores of one trial, by dimension (`<judge>.<dimension>`)."""
        sums = self.dimensions.get(case)
        if sums is None:
            sums = self.dimensions[case] = {}
        for dimension, value in scores.items():
            x = finite(value)
            if x is not None:
                cell = sums.setdefault(f"{judge}.{dimension}", [0.0, 0])
                cell[0] += x
                cell[1] += 1

    def spend(self, case: str, cost: float) -> None:
        if cost:
            self.spent[case] = self.spent.get(case, 0.0) + cost

    def means(self, metric: str, cases: Iterable[str] | None = None) -> dict[str, float]:
        """Each case's mean of `metric` (of the cases given, else all that have it)."""
        chosen = self.cells if cases is None else cases
        out: dict[str, float] = {}
        at = _SLOT.get(metric)
        if at is not None:
            for case in chosen:
                cell = self.cells.get(case)
                if cell is not None and cell[at + 1]:
                    out[case] = cell[at] / cell[at + 1]
            return out
        for case in chosen:
            pair = self.dimensions.get(case, {}).get(metric)
            if pair is not None and pair[1]:
                out[case] = pair[0] / pair[1]
        return out

    def listed(self, metric: str) -> bool:
        """Whether the block lists `metric` for this subject (see `OUTCOME_METRICS`)."""
        if metric not in _SLOT:
            return any(metric in d for d in self.dimensions.values())
        if metric == "score" and not self.graded:
            return False
        at = _SLOT[metric] + (metric in COUNTED)
        return any(cell[at] for cell in self.cells.values())

    def costs(self, cases: Sequence[str]) -> tuple[list[float], list[float]]:
        """(every attempt's cost, right trials) of each of `cases`."""
        return ([self.spent.get(c, 0.0) for c in cases],
                [self.cells[c][_RIGHT] if c in self.cells else 0.0 for c in cases])


def outcomes_block(order: Sequence[str], sums: Mapping[str, OutcomeSums],
                   level: float = 0.95) -> "Outcomes | None":
    """Tokens, time and cost per trial (STATS.md §13): each subject's mean of its case means
    with a case-clustered interval; each other subject against the first of `order` that
    has trials (the control), paired by the cases both have; cost per success (every
    attempt's cost over the right trials). None when no trial stood without error. A
    quantity nobody spent (the mock's tokens) is left out."""
    present = [s for s in order if s in sums and sums[s].cells]
    present += sorted(s for s in sums if s not in present and sums[s].cells)
    if not present:
        return None
    dimensions = sorted({name for s in present for d in sums[s].dimensions.values()
                         for name in d})
    metrics = [m for m in [*OUTCOME_METRICS, *dimensions]
               if any(sums[s].listed(m) for s in present)]
    by_subject = {s: {m: _estimate(continuous.mean_interval(
        list(sums[s].means(m).values()), level, skewed=_skewed(m))) for m in metrics}
        for s in present}
    cost = "cost_usd" in metrics
    per_success = {s: _estimate(continuous.cost_per_success(
        *sums[s].costs(sorted(sums[s].cells)), level)) for s in present} if cost else {}
    comparisons: list[OutcomeComparison] = []
    ratios: dict[str, OutcomeEstimate] = {}
    control = present[0]
    for s in present[1:]:
        for m in metrics:
            c = compare_metric(sums[control], sums[s], m, level)
            two_sided = (min(1.0, 2 * min(c.p_lower, 1 - c.p_lower))
                         if math.isfinite(c.p_lower) else None)
            comparisons.append({"subject": s, "control": control, "metric": m,
                                "difference": _estimate(c.difference),
                                "ratio": _estimate(c.ratio), "p_lower": num(c.p_lower),
                                "p": num(two_sided), "p_holm": None})
        if cost:
            shared = sorted(set(sums[s].cells) & set(sums[control].cells))
            ratios[s] = _estimate(continuous.cost_per_success_ratio(
                sums[control].costs(shared), sums[s].costs(shared), level))
    for m in metrics:  # each quantity's family: the subjects against the control
        family = [row for row in comparisons if row["metric"] == m and row["p"] is not None]
        for row, adjusted in zip(family, holm([float(r["p"] or 0.0) for r in family]),
                                 strict=True):
            row["p_holm"] = num(adjusted)
    return {"level": level, "metrics": metrics, "by_subject": by_subject,
            "comparisons": comparisons, "cost_per_success": per_success,
            "cost_per_success_ratio": ratios,
            "note": "per trial that stood without error, averaged per case, then over "
                    "cases; cost per success counts every attempt's cost"}


def compare_metric(control: OutcomeSums, variant: OutcomeSums, metric: str,
                   level: float = 0.95) -> "continuous.Comparison":
    """`continuous.compare` of two subjects' case means of `metric`, on the cases both have."""
    a, b = control.means(metric), variant.means(metric)
    shared = sorted(set(a) & set(b))
    return continuous.compare([a[c] for c in shared], [b[c] for c in shared], level)


def _skewed(metric: str) -> bool:
    """Tokens, time and cost are skewed; a score, or a judge's dimension, is bounded."""
    return metric in _SLOT and metric not in UNSKEWED


def _estimate(e: "continuous.Estimate") -> "OutcomeEstimate":
    return {"value": num(e.value), "ci": [num(e.lo), num(e.hi)], "n_cases": e.n,
            "method": e.method}


__all__ = ["ALIASES", "NO_FACTS", "OUTCOME_METRICS", "OutcomeSums", "canonical",
           "compare_metric", "facts_of", "finite", "is_outcome_metric", "outcomes_block", "wrong"]
