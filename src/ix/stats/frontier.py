"""A subject's frontier: the difficulty at which its success crosses 50%, with an interval.

Model (a two-parameter logistic item-response curve): a trial at difficulty x succeeds with
probability σ(a·(θ − x)), a > 0 — harder is never easier — where θ is the frontier and a the
slope. The posterior of (θ, a) is computed on a grid (deterministic: no sampling), with a
flat prior on θ over the difficulties' range widened by `pad` on each side and a log-uniform
prior on a over [`SLOPES`]; the estimate is the posterior median of θ and the interval its
equal-tailed credible interval (which therefore holds the estimate). Unlike the maximum
likelihood −b0/b1 (`mle`, for comparison: it does not exist when the data separate, as they
often do at small N), the posterior is always proper, and an interval that reaches the end
of the grid says the frontier lies beyond the difficulties tried.

`next_difficulty` chooses where one more trial informs most: the difficulty whose outcome is
expected to shrink the posterior variance of θ the most (ties to the lower difficulty).
Trials are taken as independent given their difficulty; cases of one difficulty that differ
among themselves make the real uncertainty larger (docs/statistics.md, "Frontier").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix._lazy import lazy

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import numpy.typing as npt
    from scipy import special
else:
    np = lazy("numpy")
    special = lazy("scipy.special")

__all__ = ["Frontier", "frontier", "frontier_mle", "next_difficulty"]

#: The slope's prior range (log-uniform), per unit of difficulty.
SLOPES = (0.25, 12.0)
_THETA_POINTS = 161
_SLOPE_POINTS = 32


@dataclass(frozen=True)
class Frontier:
    """The frontier's posterior median `estimate`, its credible interval [`lo`, `hi`] at
    `level`, the trials it rests on, and whether an end of the interval is the grid's own
    (`open_below`, `open_above`: the frontier may lie beyond the difficulties tried)."""

    estimate: float
    lo: float
    hi: float
    level: float
    trials: int
    open_below: bool
    open_above: bool

    @property
    def width(self) -> float:
        return self.hi - self.lo


def _grid(xs: Sequence[float], pad: float) -> tuple[npt.NDArray[np.float64],
                                                     npt.NDArray[np.float64]]:
    lo, hi = min(xs) - pad, max(xs) + pad
    theta = np.linspace(lo, hi, _THETA_POINTS)
    slope = np.exp(np.linspace(math.log(SLOPES[0]), math.log(SLOPES[1]), _SLOPE_POINTS))
    return theta, slope


def _log_posterior(theta: npt.NDArray[np.float64], slope: npt.NDArray[np.float64],
                   x: Sequence[float], k: Sequence[int], n: Sequence[int]
                   ) -> npt.NDArray[np.float64]:
    """log p(θ, a | data) up to a constant, on the grid (θ rows, a columns)."""
    out = np.zeros((theta.size, slope.size))
    for xj, kj, nj in zip(x, k, n, strict=True):
        if nj:
            eta = slope[None, :] * (theta[:, None] - float(xj))
            out += kj * special.log_expit(eta) + (nj - kj) * special.log_expit(-eta)
    return out


def _normalised(logp: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    w = np.exp(logp - logp.max())
    return np.asarray(w / w.sum())


def _quantile(theta: npt.NDArray[np.float64], mass: npt.NDArray[np.float64], p: float) -> float:
    """The p-quantile of θ's marginal (each grid point the middle of its mass)."""
    cdf = np.cumsum(mass) - mass / 2
    return float(np.interp(p, cdf, theta))


def frontier(x: Sequence[float], k: Sequence[int], n: Sequence[int], level: float = 0.95,
             pad: float = 1.0) -> Frontier:
    """The frontier of `k[j]` successes in `n[j]` trials at difficulty `x[j]` (one entry per
    difficulty, or per case: entries of one difficulty add up). `pad`: how far beyond the
    easiest and the hardest difficulty the frontier may lie."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if not x or len(x) != len(k) or len(x) != len(n):
        raise ValueError("x, k and n must be non-empty and of one length")
    if any(kj < 0 or kj > nj for kj, nj in zip(k, n, strict=True)):
        raise ValueError("each k must be within 0..n")
    theta, slope = _grid(x, pad)
    mass = _normalised(_log_posterior(theta, slope, x, k, n)).sum(axis=1)
    tail = (1 - level) / 2
    lo, mid, hi = (_quantile(theta, mass, p) for p in (tail, 0.5, 1 - tail))
    step = float(theta[1] - theta[0])
    return Frontier(mid, lo, hi, level, int(sum(n)), lo <= theta[0] + step,
                    hi >= theta[-1] - step)


def next_difficulty(levels: Sequence[float], x: Sequence[float], k: Sequence[int],
                    n: Sequence[int], pad: float = 1.0) -> float:
    """Of `levels`, the difficulty whose next trial is expected to leave the smallest
    posterior variance of θ (given `k` of `n` at `x` so far); ties to the lower one."""
    theta, slope = _grid(list(levels) + list(x), pad)
    post = _normalised(_log_posterior(theta, slope, x, k, n)) if x else \
        np.full((theta.size, slope.size), 1.0 / (theta.size * slope.size))
    best, best_var = float(levels[0]), math.inf
    for level in sorted(set(levels)):
        success = special.expit(slope[None, :] * (theta[:, None] - float(level)))
        expected = 0.0
        for like in (success, 1.0 - success):
            joint = post * like
            p_y = float(joint.sum())
            if p_y <= 0:
                continue
            m = joint.sum(axis=1) / p_y
            mean = float(np.dot(m, theta))
            expected += p_y * float(np.dot(m, (theta - mean) ** 2))
        if expected < best_var - 1e-12:
            best, best_var = float(level), expected
    return best


def frontier_mle(x: Sequence[float], k: Sequence[int], n: Sequence[int]) -> float | None:
    """The maximum-likelihood frontier −b0/b1 of the logistic regression of success on
    difficulty (Newton's method on the binomial likelihood, as `statsmodels`' Logit); None
    when it does not exist (the data separate, or success does not fall with difficulty)."""
    xs, ks, ns = (np.asarray(v, dtype=float) for v in (x, k, n))
    design = np.column_stack([np.ones_like(xs), xs])
    beta = np.zeros(2)
    for _ in range(100):
        p = special.expit(design @ beta)
        grad = design.T @ (ks - ns * p)
        hess = (design * (ns * p * (1 - p))[:, None]).T @ design
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            return None
        beta = beta + step
        if not np.isfinite(beta).all() or np.abs(beta).max() > 50:
            return None
        if np.abs(step).max() < 1e-10:
            break
    else:
        return None
    if beta[1] >= 0:
        return None
    return float(-beta[0] / beta[1])
