"""Leaderboards: subjects ranked by a metric, with intervals and how sure each rank is.

Every metric a leaderboard ranks on is a monotone map of one Beta posterior built from a
subject's counts (docs/statistics.md), so `ix.stats.ranking` gives the probability of each
rank exactly (by quadrature), with the subjects' posteriors taken as independent:

| metric | counts | posterior that is ranked |
|---|---|---|
| `f1` | case-level TP, FP, FN | U ~ Beta(TP+1, FP+FN+2); F1 = 2U/(1+U) |
| `precision` | TP, FP | Beta(TP+1, FP+1) |
| `recall` | TP, FN | Beta(TP+1, FN+1) |
| `pass_rate` | cases whose majority vote is correct, of cases with a vote | Beta(k+1, n−k+1) |
| `activation_rate` | passed must_trigger trials, of valid ones | Beta(k+1, n−k+1) |

Counts add up, so a subject's standing over several experiments pools them (micro-average).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ix.domain.errors import ConfigError, did_you_mean
from ix.eval.numbers import LEVEL, num, pair
from ix.report.answer import METRICS
from ix.stats.classification import f1_interval
from ix.stats.intervals import beta_interval
from ix.stats.ranking import rank

if TYPE_CHECKING:
    from ix.report.schemas import Leaderboard, LeaderboardRow


METHOD = ("subjects ranked by the observed value (ties and n/a by posterior mean); each "
          "subject's metric has an independent Beta posterior from its counts (uniform prior; "
          "F1 through U ~ Beta(TP+1, FP+FN+2)); p_rank = P(the subject's true rank is the one "
          "shown), p_above_next = P(it beats the next one), rank_ci = the central ranks of "
          "its rank distribution; by 1-D quadrature, no sampling")


def check_metric(metric: str) -> str:
    if metric == "correct_rate":  # the glossary's word for `pass_rate` (docs/results.md)
        return "pass_rate"
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r}{did_you_mean(metric, METRICS)} "
                          f"(allowed: {', '.join(METRICS)})", field="--metric")
    return metric


@dataclass(frozen=True)
class Counts:
    """What a subject's posteriors are built from; adding two pools them."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    correct: int = 0         # cases whose majority vote matches the expectation
    voted: int = 0           # cases with at least one valid trial
    must_passed: int = 0     # passed must_trigger trials
    must_valid: int = 0      # valid must_trigger trials

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(*(getattr(self, f) + getattr(other, f) for f in _FIELDS))


_FIELDS = ("tp", "fp", "fn", "correct", "voted", "must_passed", "must_valid")


def counts_of(block: Mapping[str, Any]) -> Counts:
    """A summary's subject block as counts."""
    m = block["metrics"]
    probes = block["probe_results"]
    must = [p for p in probes if p["expectation"] == "must_trigger"]
    return Counts(
        tp=int(m["tp"]), fp=int(m["fp"]), fn=int(m["fn"]),
        correct=sum(1 for p in probes if p.get("correct") is True),
        voted=sum(1 for p in probes if p.get("correct") is not None),
        must_passed=sum(int(p["passed"]) for p in must),
        must_valid=sum(int(p["n"]) for p in must),
    )


@dataclass(frozen=True)
class Standing:
    """One subject's metric: estimate (None with an empty denominator), interval, the Beta
    posterior that ranks it, and the number of units behind it."""

    estimate: float | None
    interval: tuple[float, float]
    beta: tuple[float, float]
    n: int


def standing(counts: Counts, metric: str, level: float = LEVEL) -> Standing:
    c = counts
    if metric == "f1":
        denom = 2 * c.tp + c.fp + c.fn
        lo, hi = f1_interval(c.tp, c.fp, c.fn, level=level)
        return Standing(2 * c.tp / denom if denom else None, (lo, hi),
                        (c.tp + 1, c.fp + c.fn + 2), c.tp + c.fp + c.fn)
    k, n = {"precision": (c.tp, c.tp + c.fp), "recall": (c.tp, c.tp + c.fn),
            "pass_rate": (c.correct, c.voted),
            "activation_rate": (c.must_passed, c.must_valid)}[metric]
    lo, hi = beta_interval(k, n, level=level)
    return Standing(k / n if n else None, (lo, hi), (k + 1, n - k + 1), n)


def leaderboard(entries: Sequence[dict[str, Any]], metric: str,
                level: float = LEVEL) -> "Leaderboard":
    """Rank `entries` (each with `counts` and any labels: subject, experiment, run, ...).

    Returns `{metric, level, method, rows}`; each row keeps the entry's labels and adds
    `rank`, `value`, `ci`, `n`, `p_rank`, `p_above_next`, `rank_ci`, `p_best`.
    """
    check_metric(metric)
    rows: list[LeaderboardRow] = []
    if entries:
        stands = [standing(e["counts"], metric, level) for e in entries]
        ranking = rank([s.beta for s in stands], [s.estimate for s in stands], level=level)
        for place, i in enumerate(ranking.order):
            s = stands[i]
            labels = {k: v for k, v in entries[i].items() if k != "counts"}
            rows.append(cast("LeaderboardRow", {  # the entry's labels: subject, run, ...
                "rank": place + 1, **labels, "value": num(s.estimate),
                "ci": pair(*s.interval), "n": s.n,
                "p_rank": num(ranking.p_rank[place]),
                "p_above_next": num(ranking.p_above_next[place]),
                "rank_ci": list(ranking.rank_interval[place]),
                "p_best": num(float(ranking.probabilities[i, 0])),
            }))
    return {"metric": metric, "level": level, "method": METHOD, "rows": rows}
