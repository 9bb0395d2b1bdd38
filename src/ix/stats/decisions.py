"""Decisions on a goal from the posterior of an effect (STATS.md method 11).

A goal states a direction ("increase", "decrease" or "differ") and a minimum effect m ≥ 0;
[−m, +m] is the region of practical equivalence (ROPE, Kruschke 2018). With effect =
treatment − control and its posterior CDF F(d) = P(effect ≤ d), the goal is `supported` when
the posterior probability of an effect beyond the region in the stated direction reaches the
credibility, `refuted` when the probability of the complement (inside the region, or the
other way) does, and `inconclusive` otherwise. A "differ" goal looks in both directions, so
each is judged at (1 + c)/2 (a Bonferroni split of 1 − c over the two): at a true effect of
0 it is falsely supported at most 1 − c of the time, not 2(1 − c). Pure arithmetic on F; no
scipy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from typing import Literal

__all__ = ["GoalVerdict", "bound_verdict", "goal_outcome", "goal_verdict"]

Direction = Literal["increase", "decrease", "differ"]
Outcome = Literal["supported", "refuted", "inconclusive"]

_DIRECTIONS: tuple[Direction, ...] = ("increase", "decrease", "differ")
#: A CDF that decreases by more than this between −m and m is rejected, not rounded away
#: (quadrature CDFs, e.g. the probit grid's at ~1e-6, may dip by less).
_SLACK = 1e-6


@dataclass(frozen=True)
class GoalVerdict:
    """A goal's verdict: `verdict` ("supported" | "refuted" | "inconclusive"),
    `p_supported` (posterior probability of an effect beyond the region of practical
    equivalence in the stated direction), `p_refuted` (= 1 − p_supported: inside the region
    or the other way) and `rule` (the decision rule, one line, with its numbers)."""

    verdict: Outcome
    p_supported: float
    p_refuted: float
    rule: str


def _probability(cdf: Callable[[float], float], d: float) -> float:
    value = cdf(d)
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"cdf({d:g}) must return a probability, got {value!r}") from None
    if not 0.0 <= p <= 1.0:  # also rejects NaN
        raise ValueError(f"cdf({d:g}) must return a probability in [0, 1], got {value!r}")
    return p


def goal_verdict(cdf: Callable[[float], float], *, direction: Direction, min_effect: float,
                 credibility: float) -> GoalVerdict:
    """Decide a goal from F(d) = `cdf(d)` = P(effect ≤ d), effect = treatment − control.

    With m = `min_effect` and c = `credibility`, p_supported is
    "increase": P(effect > m) = 1 − F(m); "decrease": P(effect < −m) = F(−m);
    "differ": the larger of P(effect < −m) = F(−m) and P(effect > m) = 1 − F(m) — a difference
    is supported when one *direction* is credible, not when mass is split over both sides —
    judged against (1 + c)/2, since either direction could have been picked after the fact.
    p_refuted is the complement for "increase"/"decrease" and, for "differ", the mass inside
    the region P(−m ≤ effect ≤ m) = F(m) − F(−m). The boundary ±m counts as inside the region;
    F's value is used as is, which is exact for continuous posteriors (all of `ix.stats`'s).
    The verdict is "supported" when p_supported ≥ c ((1 + c)/2 for "differ"), "refuted" when
    p_refuted ≥ c, else "inconclusive" (c > ½, so at most one holds). Region of practical
    equivalence: Kruschke, "Rejecting or accepting parameter values in Bayesian estimation"
    (2018); STATS.md §11.

    Edge cases: with m = 0, "differ" can never be refuted (the region has no mass) and is
    supported only when the sign of the effect is credible; "increase"/"decrease" with m = 0
    ask only for the sign.

    Raises ValueError unless `direction` is one of "increase", "decrease", "differ",
    `min_effect` is finite and ≥ 0, `credibility` lies in (0.5, 1), `cdf` is callable and
    returns probabilities in [0, 1], and (for "differ") F(−m) ≤ F(m).
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(map(repr, _DIRECTIONS))}; "
                         f"got {direction!r}")
    if (isinstance(min_effect, bool) or not isinstance(min_effect, Real)
            or not math.isfinite(min_effect) or min_effect < 0):
        raise ValueError(f"min_effect must be a finite number >= 0; got {min_effect!r}")
    if (isinstance(credibility, bool) or not isinstance(credibility, Real)
            or not 0.5 < credibility < 1):
        raise ValueError(f"credibility must lie in (0.5, 1), e.g. 0.95; got {credibility!r}")
    if not callable(cdf):
        raise ValueError(f"cdf must be callable, d -> P(effect <= d); got {cdf!r}")
    m, c = float(min_effect), float(credibility)

    if direction == "increase":
        p_supported = 1.0 - _probability(cdf, m)
        event, complement = f"effect > {m:g}", f"effect <= {m:g}"
    elif direction == "decrease":
        p_supported = _probability(cdf, -m)
        event, complement = f"effect < {-m:g}", f"effect >= {-m:g}"
    else:
        # at m = 0 both are F(0): one evaluation (each may be a quadrature; goal sizing
        # judges thousands of simulated runs, and m = 0 is the default)
        below = _probability(cdf, -m)
        above = below if m == 0.0 else _probability(cdf, m)
        if below > above + _SLACK:
            raise ValueError(f"cdf must be non-decreasing; got cdf({-m:g}) = {below!r} > "
                             f"cdf({m:g}) = {above!r}")
        p_supported = max(below, 1.0 - above)
        event, complement = f"effect < {-m:g}) or P(effect > {m:g}", f"|effect| <= {m:g}"
    # "differ": each direction at (1 + c)/2, so false support at effect 0 is <= 1 - c
    c_supported = (1.0 + c) / 2.0 if direction == "differ" else c
    p_refuted = (max(0.0, min(1.0, above - below)) if direction == "differ"
                 else 1.0 - p_supported)

    outcome: Outcome
    if p_supported >= c_supported:
        outcome = "supported"
    elif p_refuted >= c:
        outcome = "refuted"
    else:
        outcome = "inconclusive"
    rule = (f"supported if P({event}) >= {c_supported:g}"
            + (" (each direction at (1 + c)/2)" if direction == "differ" else "")
            + f", refuted if P({complement}) >= {c:g}, "
            f"else inconclusive (effect = treatment - control)")
    return GoalVerdict(verdict=outcome, p_supported=p_supported, p_refuted=p_refuted, rule=rule)


def bound_verdict(cdf: Callable[[float], float], *, direction: Direction, at_most: float,
                  credibility: float) -> GoalVerdict:
    """Decide a bound on an effect ("the skill adds at most 20% tokens") from F(d) =
    `cdf(d)` = P(effect ≤ d), effect = treatment − control (or a relative change).

    With a = `at_most` and c = `credibility`, the claim is "increase": effect ≤ a (it grows
    by at most a), "decrease": effect ≥ −a (it falls by at most a), "differ": |effect| ≤ a
    (it moves by at most a either way). `supported` when P(claim) ≥ c, `refuted` when
    P(not claim) ≥ c, else `inconclusive` — the goal of `goal_verdict` turned round: there
    the effect must credibly pass min_effect, here it must credibly stay within the bound
    (a non-inferiority margin; at the bound itself it is falsely supported at most 1 − c of
    the time). Raises ValueError as `goal_verdict` does.
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(map(repr, _DIRECTIONS))}; "
                         f"got {direction!r}")
    if (isinstance(at_most, bool) or not isinstance(at_most, Real)
            or not math.isfinite(at_most) or at_most < 0):
        raise ValueError(f"at_most must be a finite number >= 0; got {at_most!r}")
    if (isinstance(credibility, bool) or not isinstance(credibility, Real)
            or not 0.5 < credibility < 1):
        raise ValueError(f"credibility must lie in (0.5, 1), e.g. 0.95; got {credibility!r}")
    a, c = float(at_most), float(credibility)
    if direction == "increase":
        p_supported = _probability(cdf, a)
        claim, other = f"effect <= {a:g}", f"effect > {a:g}"
    elif direction == "decrease":
        p_supported = 1.0 - _probability(cdf, -a)
        claim, other = f"effect >= {-a:g}", f"effect < {-a:g}"
    else:
        p_supported = max(0.0, _probability(cdf, a) - _probability(cdf, -a))
        claim, other = f"|effect| <= {a:g}", f"|effect| > {a:g}"
    p_refuted = 1.0 - p_supported
    outcome: Outcome = ("supported" if p_supported >= c else
                        "refuted" if p_refuted >= c else "inconclusive")
    return GoalVerdict(verdict=outcome, p_supported=p_supported, p_refuted=p_refuted,
                       rule=f"supported if P({claim}) >= {c:g}, refuted if P({other}) >= "
                            f"{c:g}, else inconclusive")


def goal_outcome(cdf: Callable[[float], float],
                 bounds: Callable[[float], tuple[float, float]] | None, *,
                 direction: Direction, min_effect: float, credibility: float) -> Outcome:
    """`goal_verdict(cdf, ...).verdict`, read from cheap bounds on F where they settle it.

    `bounds(d)` gives (lo, hi) with lo ≤ F(d) ≤ hi (e.g. `ix.stats.comparisons.
    paired_diff_cdf_bounds`), rigorous to more than `cdf`'s own accuracy. The verdict reads
    F at −m and m; it is judged at each corner of the box those bounds draw, and where
    every corner gets the same verdict every F inside does too (each verdict's region is
    an interval of F(±m), or for "differ" a union or intersection of half-planes that a
    box's corners decide), so `cdf` — a quadrature — is called only near a threshold.
    Used where thousands of simulated runs are judged (`ix.eval.goal_sizing`)."""
    m = float(min_effect)
    if bounds is not None and m > 0.0:
        points = (-m, m) if direction == "differ" else (m if direction == "increase" else -m,)
        boxes = [bounds(d) for d in points]
        if direction != "differ" or boxes[0][1] <= boxes[1][0]:  # corners that can be F
            outcomes = {goal_verdict(dict(zip(points, corner, strict=True)).__getitem__,
                                     direction=direction, min_effect=m,
                                     credibility=credibility).verdict
                        for corner in itertools.product(*boxes)}
            if len(outcomes) == 1:
                return outcomes.pop()
    return goal_verdict(cdf, direction=direction, min_effect=min_effect,
                        credibility=credibility).verdict
