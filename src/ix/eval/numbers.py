"""Numbers as ix writes them into JSON: rounded, None for what is not a number, and the
one credibility level of every interval. Its own module, so that a reader of what a run
wrote needs none of the statistics (`ix.eval.estimates`)."""

import math

#: The credibility of every interval ix reports, unless a goal says otherwise.
LEVEL = 0.95


def num(x: float | None, digits: int = 6) -> float | None:
    """A JSON-safe float: rounded, and None instead of NaN or infinity."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits)


def pair(lo: float, hi: float) -> list[float | None]:
    return [num(lo), num(hi)]
