"""Ranking subjects whose scores have independent Beta posteriors, and how sure each rank is.

θ_i ~ Beta(a_i, b_i), independent. The probability that subject i holds rank r (r = 0 the
highest) is

    P(rank_i = r) = ∫ f_i(x) · P(exactly r of the others exceed x) dx,

where "exactly r of the others exceed x" is a Poisson-binomial count with success
probabilities 1 − F_j(x), built as the coefficients of Π_j (F_j(x) + (1 − F_j(x))·z). The
integral is taken over i's quantile, u = F_i(x), so a concentrated or end-singular density
is no trouble: ∫₀¹ g(F_i⁻¹(u)) du, by composite Gauss–Legendre with panels split wherever
another subject's CDF moves (at its quantiles mapped into u). Deterministic; accurate to
~1e-10 (the tests check it against scipy quadrature, the exact closed form of
`prob_a_beats_b`, and simulation).

Metrics that are a monotone map of one Beta variable rank like that variable: F1 = 2U/(1+U)
with U ~ Beta(TP+1, FP+FN+2) ranks as U does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, TypeAlias

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from scipy import special
else:
    np = lazy("numpy")
    special = lazy("scipy.special")

__all__ = ["Ranking", "pairwise_greater", "rank", "rank_probabilities"]

FloatArray: TypeAlias = "npt.NDArray[np.float64]"

_PANELS = 32    # uniform panels in u, before the breaks
_ORDER = 12     # Gauss–Legendre points per panel


@lru_cache(maxsize=1)
def _grid() -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """`_nodes`' fixed levels, tail breaks and Gauss–Legendre rule (built at first use: numpy
    is imported when a ranking is computed, not when this module is)."""
    # quantile levels of every subject that become panel breaks in the others' integrals
    levels = np.array([1e-6, 1e-3, 0.05, 0.5, 0.95, 0.999, 1 - 1e-6])
    # geometric breaks towards both ends of u, where the quantile function F_i⁻¹ is singular
    ends = np.concatenate([10.0 ** -np.arange(1, 16), 1 - 10.0 ** -np.arange(1, 16)])
    gl_x, gl_w = np.polynomial.legendre.leggauss(_ORDER)
    return levels, ends, gl_x, gl_w


def _params(params: Sequence[tuple[float, float]]) -> tuple[FloatArray, FloatArray]:
    if len(params) == 0:
        raise ValueError("need at least one subject")
    a = np.array([float(p[0]) for p in params])
    b = np.array([float(p[1]) for p in params])
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.all(a > 0)
            and np.all(b > 0)):
        raise ValueError(f"Beta parameters must be positive and finite, got {list(params)}")
    return a, b


def _nodes(i: int, a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Points x (in θ) and weights for ∫₀¹ g(F_i⁻¹(u)) du."""
    levels, ends, gl_x, gl_w = _grid()
    others = [j for j in range(len(a)) if j != i]
    breaks = [np.linspace(0.0, 1.0, _PANELS + 1), ends]
    for j in others:
        q = special.betaincinv(a[j], b[j], levels)
        breaks.append(special.betainc(a[i], b[i], q))
    u = np.unique(np.clip(np.concatenate(breaks), 0.0, 1.0))
    lo, hi = u[:-1], u[1:]
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    half = (hi - lo)[:, None] / 2.0
    points = (lo[:, None] + half * (gl_x[None, :] + 1.0)).ravel()
    weights = (half * gl_w[None, :]).ravel()
    return special.betaincinv(a[i], b[i], points), weights


def rank_probabilities(params: Sequence[tuple[float, float]]) -> FloatArray:
    """P[i, r]: the probability that subject i's θ is the (r+1)-th largest (r = 0: the best).

    `params` are the Beta posteriors (a, b) of the subjects. Rows sum to 1 exactly; columns
    sum to 1 up to the quadrature error. Raises ValueError on non-positive parameters.
    """
    a, b = _params(params)
    n = len(a)
    out = np.zeros((n, n))
    for i in range(n):
        x, w = _nodes(i, a, b)
        poly = np.zeros((len(x), n))
        poly[:, 0] = 1.0
        for j in range(n):
            if j == i:
                continue
            above = 1.0 - special.betainc(a[j], b[j], x)   # P(θ_j > x)
            shifted = np.zeros_like(poly)
            shifted[:, 1:] = poly[:, :-1]
            poly = poly * (1.0 - above)[:, None] + shifted * above[:, None]
        out[i] = w @ poly
    return np.clip(out, 0.0, 1.0)


def pairwise_greater(params: Sequence[tuple[float, float]]) -> FloatArray:
    """G[i, j] = P(θ_i > θ_j) for every pair, NaN on the diagonal (the same quadrature)."""
    a, b = _params(params)
    n = len(a)
    out = np.full((n, n), np.nan)
    for i in range(n):
        x, w = _nodes(i, a, b)
        for j in range(n):
            if j != i:
                out[i, j] = float(w @ special.betainc(a[j], b[j], x))
    return np.clip(out, 0.0, 1.0)


@dataclass(frozen=True)
class Ranking:
    """Subjects in rank order with how sure each place is.

    `order[k]` is the index of the subject shown at place k (0 = best); per place:
    `p_rank` = P(that subject's true rank is k), `p_above_next` = P(it beats the subject at
    place k + 1) (None for the last), `rank_interval` = the (1-based) ranks holding the
    central `level` of its rank distribution. `probabilities[i, r]` is the full matrix.
    """

    order: tuple[int, ...]
    p_rank: tuple[float, ...]
    p_above_next: tuple[float | None, ...]
    rank_interval: tuple[tuple[int, int], ...]
    probabilities: FloatArray
    level: float


def rank(params: Sequence[tuple[float, float]],
         estimates: Sequence[float | None] | None = None, level: float = 0.95) -> Ranking:
    """Order subjects by `estimates` (highest first; None last), ties and missing estimates
    by posterior mean, then by position; and say how probable each place is."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    a, b = _params(params)
    n = len(a)
    if estimates is not None and len(estimates) != n:
        raise ValueError(f"{len(estimates)} estimates for {n} subjects")
    means = a / (a + b)

    def key(i: int) -> tuple[float, float, int]:
        e = None if estimates is None else estimates[i]
        missing = e is None or (isinstance(e, float) and math.isnan(e))
        return (math.inf if missing else -float(e), -float(means[i]), i)  # type: ignore[arg-type]

    order = tuple(sorted(range(n), key=key))
    matrix = rank_probabilities(params)
    greater = pairwise_greater(params) if n > 1 else np.full((1, 1), np.nan)
    tail = (1.0 - level) / 2.0
    intervals = []
    for i in order:
        cum = np.cumsum(matrix[i])
        lo = int(np.searchsorted(cum, tail, side="right"))
        hi = int(np.searchsorted(cum, 1.0 - tail - 1e-12, side="left"))
        intervals.append((min(lo, n - 1) + 1, min(hi, n - 1) + 1))
    return Ranking(
        order=order,
        p_rank=tuple(float(matrix[i, place]) for place, i in enumerate(order)),
        p_above_next=tuple(float(greater[order[k], order[k + 1]]) if k + 1 < n else None
                           for k in range(n)),
        rank_interval=tuple(intervals),
        probabilities=matrix,
        level=level,
    )
