"""Summaries of numeric scores, latencies and costs, and their correlation with case properties.

Inputs must be finite (drop missing values before calling); undefined results are nan, never
an exception, so a report can print them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from scipy import special, stats
else:
    np = lazy("numpy")
    special = lazy("scipy.special")
    stats = lazy("scipy.stats")


@dataclass(frozen=True)
class Description:
    """Count, mean, sample standard deviation (ddof = 1) and percentiles of some values."""

    n: int
    mean: float
    std: float
    p50: float
    p90: float
    p99: float


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient `r` with its interval [lo, hi] over `n` pairs."""

    r: float
    lo: float
    hi: float
    n: int
    method: Literal["pearson", "spearman"]


def _finite_1d(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite numbers; drop missing (nan) values first")
    return arr


def describe(values: npt.ArrayLike) -> Description:
    """Mean, std (ddof = 1) and p50/p90/p99 of finite values.

    Percentiles use numpy's default linear interpolation between order statistics (Hyndman &
    Fan type 7, as in R and Excel's PERCENTILE.INC). Empty input: n = 0 and everything else nan;
    a single value: std is nan.
    """
    x = _finite_1d("values", values)
    if x.size == 0:
        return Description(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    std = float(np.std(x, ddof=1)) if x.size > 1 else math.nan
    p50, p90, p99 = (float(p) for p in np.percentile(x, [50, 90, 99]))
    return Description(int(x.size), float(np.mean(x)), std, p50, p90, p99)


def correlation(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    level: float = 0.95,
    method: Literal["pearson", "spearman"] = "pearson",
) -> Correlation:
    """Pearson (or Spearman rank) correlation with a Fisher-z interval.

    Interval: tanh(atanh(r) ± z·s), z = Φ⁻¹((1 + level)/2). Pearson uses s = 1/sqrt(n − 3)
    (Fisher 1921; as scipy's `pearsonr(...).confidence_interval()`), Spearman (r of average
    ranks) s = sqrt((1 + r²/2)/(n − 3)) (Bonett & Wright 2000). Both are approximations that
    assume roughly bivariate-normal data. r is nan when either variable is constant; the
    interval is nan when n < 4 or r is nan; |r| = 1 gives the degenerate interval [r, r].
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be a probability in (0, 1), e.g. 0.95; got {level!r}")
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman'; got {method!r}")
    xs, ys = _finite_1d("x", x), _finite_1d("y", y)
    if xs.size != ys.size:
        raise ValueError(f"x and y must have the same length; got {xs.size} and {ys.size}")
    n = int(xs.size)
    if n < 2 or (xs == xs[0]).all() or (ys == ys[0]).all():
        return Correlation(math.nan, math.nan, math.nan, n, method)
    if method == "spearman":
        xs, ys = stats.rankdata(xs), stats.rankdata(ys)
    dx, dy = xs - xs.mean(), ys - ys.mean()
    norm_x, norm_y = float(np.linalg.norm(dx)), float(np.linalg.norm(dy))
    if not (norm_x > 0 and norm_y > 0 and math.isfinite(norm_x) and math.isfinite(norm_y)):
        # distinct values whose spread rounds to nothing: as undefined as a constant
        return Correlation(math.nan, math.nan, math.nan, n, method)
    r = float(np.clip(np.dot(dx / norm_x, dy / norm_y), -1.0, 1.0))
    if n < 4:
        return Correlation(r, math.nan, math.nan, n, method)
    spread = 1 + r * r / 2 if method == "spearman" else 1.0
    half = float(special.ndtri((1 + level) / 2)) * math.sqrt(spread / (n - 3))
    with np.errstate(divide="ignore"):
        z = float(np.arctanh(r))
    return Correlation(r, math.tanh(z - half), math.tanh(z + half), n, method)
