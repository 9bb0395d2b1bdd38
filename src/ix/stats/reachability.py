"""Which verdicts a goal can still reach from its control's value (STATS.md §10, §11).

A goal's metric is a rate in [0, 1], so effect = treatment − control lies in
[−control, 1 − control]: the **room** left in a direction. `supported` needs an effect beyond
min_effect m in the goal's direction, so it is out of reach when

- the control sits at the bound the direction moves towards (a decrease from 0, an increase
  from 1): no change in that direction can be observed on these cases. With the control at
  0 no case can show a fall (the paired table's control-only count is 0; every per-case
  difference of activation rates is ≥ 0), so P(effect < −m) stays ≤ ½ however many such
  cases are added (F1's and precision's independent posteriors gather at 0 as they grow);
- or the far end of the control's interval leaves no room beyond m (a decrease needs a
  control above m, and its interval's upper end is at most m): no plausible control allows
  it, however many cases are added.

`refuted` (inside [−m, m] or the other way) is out of reach only with m = 0 and the control
at the opposite bound (a decrease goal with the control at 1: "no fall" needs a rise), or
for `differ` with m = 0 (the region has no width). Pure arithmetic; wording is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Reach", "capped_effect", "reachability", "room"]

Reason = Literal["floor", "ceiling", "room", "no-width"]


@dataclass(frozen=True)
class Reach:
    """Which verdicts the data can still reach. `room`: the effect the control's value
    leaves in the goal's direction (differ: the larger of the two; None when the control
    has no value); `room_most`: the same at the far end of the control's interval.
    `why`: the first reason a verdict is out of reach ("floor": a decrease from a control
    at 0, "ceiling": an increase from 1, "room": min_effect not below `room_most`,
    "no-width": refuted needs min_effect > 0), None when both are reachable."""

    supported: bool
    refuted: bool
    room: float
    room_most: float
    why: Reason | None

    @property
    def verdicts(self) -> list[Literal["supported", "refuted"]]:
        out: list[Literal["supported", "refuted"]] = []
        if self.supported:
            out.append("supported")
        if self.refuted:
            out.append("refuted")
        return out


def room(sign: int, control: float) -> float:
    """The most the metric can move from `control` upwards (`sign` 1) or downwards (−1)."""
    return 1.0 - control if sign > 0 else control


def _side(sign: int, m: float, control: float, interval: tuple[float, float]
          ) -> tuple[bool, Reason | None]:
    """Whether an effect beyond m in direction `sign` is reachable, and why not."""
    if room(sign, control) <= 0:
        return False, "ceiling" if sign > 0 else "floor"
    far = room(sign, interval[0] if sign > 0 else interval[1])
    if far <= m:
        return False, "room"
    return True, None


def reachability(direction: str, min_effect: float, control: float,
                 interval: tuple[float, float]) -> Reach:
    """The verdicts a goal (`direction`, `min_effect`) can reach from a control whose value
    on the goal's metric is `control`, with credible interval `interval` (pass
    (control, control) when the control's rate is assumed, not measured)."""
    if direction not in ("increase", "decrease", "differ"):
        raise ValueError(f"direction must be increase, decrease or differ; got {direction!r}")
    if not (0.0 <= control <= 1.0 and 0.0 <= interval[0] <= interval[1] <= 1.0):
        raise ValueError(f"a rate and its interval lie in [0, 1], got {control} "
                         f"{list(interval)}")
    m = float(min_effect)
    lo, hi = min(interval[0], control), max(interval[1], control)
    if direction == "differ":
        up, why_up = _side(1, m, control, (lo, hi))
        down, why_down = _side(-1, m, control, (lo, hi))
        supported = up or down
        refuted = m > 0
        why: Reason | None = None
        if not supported:
            why = why_down if why_down == "room" else why_up
        elif not refuted:
            why = "no-width"
        return Reach(supported, refuted, max(room(1, control), room(-1, control)),
                     max(room(1, lo), room(-1, hi)), why)
    sign = 1 if direction == "increase" else -1
    supported, why = _side(sign, m, control, (lo, hi))
    # refuted: an effect ≥ −m (decrease) or ≤ m (increase) — only m = 0 with no room the
    # other way can make it unreachable
    refuted = m > 0 or room(-sign, control) > 0
    if supported and not refuted:
        why = "ceiling" if sign < 0 else "floor"
    return Reach(supported, refuted, room(sign, control),
                 room(sign, lo if sign > 0 else hi), why)


def capped_effect(effect: float, control: float,
                  interval: tuple[float, float] | None = None) -> float:
    """An assumed true `effect` capped at the room the control leaves in its direction: 0
    when the control sits at that bound (nothing can move there), else the room at the far
    end of the control's `interval` (a fall of at most its upper end, a rise of at most 1 −
    its lower end; default: the control's value, when it is assumed, not measured)."""
    lo, hi = interval if interval is not None else (control, control)
    if effect < 0:
        return 0.0 if control <= 0 else max(effect, -max(hi, control))
    if effect > 0:
        return 0.0 if control >= 1 else min(effect, 1.0 - min(lo, control))
    return 0.0
