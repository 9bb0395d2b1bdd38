"""Whether a goal's direction can be observed from its control (STATS.md §10), in words.

The control's value on the goal's metric and its credible interval come from per-case
counts, the way the summary computes them (majority votes: a case votes "activated" when
more than half its trials did; activation_rate: the mean of per-case rates with the
case-clustered interval); `ix.stats.reachability` decides which verdicts remain, and
`sentence` says it as the verdict, the suggestion, `ix validate` and `ix plan` print it:
"control recall 0.000: a decrease cannot be observed; only refuted is reachable".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ix._lazy import lazy
from ix.eval.schemas import GoalReach
from ix.stats.classification import f1_interval, precision_interval, recall_interval
from ix.stats.clustered import hierarchical_interval
from ix.stats.intervals import beta_interval
from ix.stats.reachability import Reach, reachability

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    np = lazy("numpy")

#: How a metric reads in these sentences.
NAMES = {"f1": "F1", "pass_rate": "correct rate", "activation_rate": "activation rate"}


def name(metric: str) -> str:
    return NAMES.get(metric, metric)


def control_estimate(metric: str, must: NDArray[np.bool_], passed: NDArray[np.int64],
                     valid: NDArray[np.int64], credibility: float = 0.95
                     ) -> tuple[float | None, tuple[float, float]]:
    """The control's value on `metric` from its (passed, valid) trials per case (`must`:
    the case is must_trigger), and its bounds at the goal's `credibility`, each one-sided:
    P(the control's rate below the first) = P(above the second) = 1 − credibility (the
    summary's posterior for the metric: Beta for votes, hierarchical for activation_rate).
    None when the value is undefined (no must case; precision with no predicted positive).
    """
    level = max(2 * float(credibility) - 1, 0.01)
    how: dict[str, Any] = {"level": level, "method": "equal_tailed"}
    ok = valid > 0
    must, passed, valid = must[ok], passed[ok], valid[ok]
    x: float | None
    if metric == "activation_rate":
        if not must.any():
            return None, (0.0, 1.0)
        rate = float(np.mean(passed[must] / valid[must]))
        lo, hi = hierarchical_interval(passed[must], valid[must], **how)
        return rate, (min(float(lo), rate), max(float(hi), rate))
    vote = 2 * passed > valid
    tp, fn = int((vote & must).sum()), int((~vote & must).sum())
    fp, tn = int((vote & ~must).sum()), int((~vote & ~must).sum())
    if metric == "recall":
        x, ci = (tp / (tp + fn) if tp + fn else None), recall_interval(tp, fn, **how)
    elif metric == "precision":
        x, ci = (tp / (tp + fp) if tp + fp else None), precision_interval(tp, fp, **how)
    elif metric == "f1":
        x = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else None
        ci = f1_interval(tp, fp, fn, **how)
    elif metric == "pass_rate":
        n = tp + fn + fp + tn
        x, ci = (tp + tn) / n if n else None, beta_interval(tp + tn, n, **how)
    else:
        raise ValueError(f"unknown metric {metric!r}")
    if x is None:
        return None, (float(ci[0]), float(ci[1]))
    return x, (min(float(ci[0]), x), max(float(ci[1]), x))


def bound_words(goal: dict[str, Any], interval: tuple[float, float] | None, sign: int) -> str:
    """" (at most 0.146 at credibility 0.95)": the far end of the control's bounds."""
    if interval is None:
        return ""
    c = float(goal.get("credibility", 0.95))
    if sign < 0:
        return f" (at most {interval[1]:.3f} at credibility {c:g})"
    return f" (at least {interval[0]:.3f} at credibility {c:g})"


def sentence(metric: str, goal: dict[str, Any], control: float,
             interval: tuple[float, float] | None, reach: Reach) -> str | None:
    """What is out of reach and why, one clause each; None when both verdicts are
    reachable. `interval` None: the control's rate is assumed (a design), not measured."""
    if reach.why is None:
        return None
    m = float(goal["min_effect"])
    direction = goal["direction"]
    what = f"control {name(metric)} {control:.3f}"
    if reach.why == "no-width":
        return ("min_effect 0: refuted needs the effect inside [-0, 0], which has no width; "
                "only supported is reachable")
    if reach.why == "room":
        sign = 1 if direction == "increase" else -1
        way = {"decrease": "a decrease", "increase": "an increase"}.get(direction,
                                                                         "a change")
        return (f"{what}{bound_words(goal, interval, sign)}: {way} beyond min_effect {m:g} is "
                "larger than the room left; only refuted is reachable")
    way = "a decrease" if reach.why == "floor" else "an increase"
    if not reach.refuted:
        return (f"{what} with min_effect 0: refuted needs {way}, which cannot be observed; "
                "only supported is reachable")
    return f"{what}: {way} cannot be observed; only refuted is reachable"


def reach_block(metric: str, goal: dict[str, Any], control: float | None,
                interval: tuple[float, float] | None) -> tuple[GoalReach | None, Reach | None]:
    """The summary's and `ix plan`'s `reachable` block (and the decision behind it); None
    when the control has no value on the metric. `interval`: `control_estimate`'s bounds,
    None when the control's rate is assumed (a design)."""
    if control is None:
        return None, None
    r = reachability(goal["direction"], float(goal["min_effect"]), control,
                     interval if interval is not None else (control, control))
    block: GoalReach = {"verdicts": r.verdicts, "room": round(r.room, 6),
                        "why": sentence(metric, goal, control, interval, r)}
    return block, r
