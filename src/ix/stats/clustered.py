"""Trials nested in cases are not independent: clustered SEs and the hierarchical model.

STATS.md methods 4 and 5. Miller ("Adding Error Bars to Evals", 2024) for the clustered and
paired standard errors; Bowyer, Aitchison & Ivanova 2025 §3.2 for the hierarchical
beta-binomial model, whose posterior is integrated here by deterministic quadrature.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ix._lazy import lazy
from ix.stats.paired_probit import chebyshev_coefficients, laplace_fit, sinh_nodes

if TYPE_CHECKING:
    import numpy as np
    from numpy.polynomial import chebyshev as cheb
    from numpy.typing import ArrayLike, NDArray
    from scipy import special
else:
    np = lazy("numpy")
    cheb = lazy("numpy.polynomial.chebyshev")
    special = lazy("scipy.special")

optimize = lazy("scipy.optimize")  # only a rare fallback needs it, and it is slow to import

__all__ = ["clustered_se", "hierarchical_interval", "hierarchical_mean", "paired_se"]

FloatArray: TypeAlias = "NDArray[np.float64]"

#: Grid size: logit θ on Chebyshev points (interpolated), log d on Gauss–Legendre points.
NODES: tuple[int, int] = (64, 48)
#: Each axis reaches ±_REACH Laplace standard deviations (sinh-stretched).
_REACH = 20.0


def _vector(x: ArrayLike, name: str) -> FloatArray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def clustered_se(values: ArrayLike, clusters: ArrayLike | Sequence[Any]) -> float:
    """Miller's clustered standard error of the mean of `values`, clusters given by label.

    SE_c = sqrt(Σ_c (Σ_{i∈c} (x_i − x̄))²) / n (Miller 2024, eq. 4), with NO small-cluster
    correction. statsmodels' OLS `cov_type="cluster"` multiplies this by sqrt(G/(G−1)) by
    default (G clusters) and equals it with `cov_kwds={"use_correction": False}`. One
    observation per cluster gives sqrt(Σ(x − x̄)²)/n, the population-sd SE; a single cluster
    gives 0 (no between-cluster information). Raises ValueError if empty or lengths differ.
    """
    x = _vector(values, "values")
    labels = np.asarray(clusters)
    if labels.shape != x.shape:
        raise ValueError(f"values and clusters differ in length: {x.shape} vs {labels.shape}")
    if x.size == 0:
        raise ValueError("clustered_se needs at least one value")
    kinds, inverse = np.unique(labels, return_inverse=True)
    if len(kinds) == 1:
        return 0.0                          # exactly, not rounding noise
    sums = np.bincount(inverse.ravel(), weights=x - x.mean())
    return float(math.sqrt(float(sums @ sums)) / x.size)


def paired_se(a: ArrayLike, b: ArrayLike,
              clusters: ArrayLike | Sequence[Any] | None = None) -> float:
    """Standard error of the mean paired difference d_i = a_i − b_i (Miller 2024, §4).

    Without clusters: sd(d, ddof=1)/√n, the denominator of `scipy.stats.ttest_rel`; needs
    n ≥ 2. With clusters (e.g. the case of each trial): `clustered_se(d, clusters)`. Pairing
    helps exactly as far as a and b are correlated. Raises ValueError on length mismatch or
    too few pairs.
    """
    x, y = _vector(a, "a"), _vector(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b differ in length: {x.shape} vs {y.shape}")
    d = x - y
    if clusters is not None:
        return clustered_se(d, clusters)
    if d.size < 2:
        raise ValueError("paired_se needs at least two pairs")
    return float(np.std(d, ddof=1) / math.sqrt(d.size))


# ---------------------------------------------------------------- hierarchical beta-binomial


def _counts(successes: ArrayLike, trials: ArrayLike) -> tuple[FloatArray, FloatArray]:
    k = np.asarray(successes, dtype=float).ravel()
    n = np.asarray(trials, dtype=float).ravel()
    if k.shape != n.shape:
        raise ValueError(f"successes and trials differ in length: {k.shape} vs {n.shape}")
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(n))):
        raise ValueError("successes and trials must be finite")
    if np.any(k != np.round(k)) or np.any(n != np.round(n)) or np.any(k < 0) or np.any(k > n):
        raise ValueError("need integers 0 <= successes <= trials for every cluster")
    keep = n > 0
    return k[keep], n[keep]


def _loglik(k: FloatArray, n: FloatArray,
            mult: FloatArray) -> Callable[[FloatArray, FloatArray], FloatArray]:
    """(log α, log β) ↦ Σ_t log BetaBin(k_t | n_t, α, β), up to the binomial coefficients.

    Per cluster, log B(k + α, n − k + β) − log B(α, β); `k`, `n` are the distinct (k, n)
    pairs and `mult` how many clusters share each. When trials per cluster are few, the
    equivalent exact form Σ_j A_j log(α + j) + Σ_j B_j log(β + j) − Σ_j C_j log(α + β + j),
    with A_j, B_j, C_j the numbers of clusters with k > j, n − k > j and n > j, is cheaper.
    """
    top = int(n.max()) if n.size else 0
    total = float(mult.sum())
    if top <= 3 * len(n) + 8:
        def above(v: FloatArray) -> FloatArray:
            hist = np.bincount(v.astype(int), weights=mult, minlength=top + 1)
            return np.asarray(total - np.cumsum(hist)[:top], dtype=float)

        a_j, b_j, c_j = above(k), above(n - k), above(n)
        with np.errstate(divide="ignore"):
            log_j = np.log(np.arange(top, dtype=float))   # log 0 = −inf: the j = 0 term

        def by_threshold(log_a: FloatArray, log_b: FloatArray) -> FloatArray:
            la, lb = log_a[..., None], log_b[..., None]
            lab = np.logaddexp(la, lb)
            out = np.zeros(np.shape(log_a))
            for j in _chunks(top):
                out += (np.logaddexp(la, log_j[j]) @ a_j[j] + np.logaddexp(lb, log_j[j]) @ b_j[j]
                        - np.logaddexp(lab, log_j[j]) @ c_j[j])
            return out

        return by_threshold

    def by_pair(log_a: FloatArray, log_b: FloatArray) -> FloatArray:
        alpha, beta = np.exp(log_a)[..., None], np.exp(log_b)[..., None]
        out = -total * special.betaln(alpha[..., 0], beta[..., 0])
        for j in _chunks(len(n)):
            out = out + special.betaln(k[j] + alpha, n[j] - k[j] + beta) @ mult[j]
        return np.asarray(out, dtype=float)

    return by_pair


def _chunks(size: int, step: int = 256) -> list[slice]:
    """Slices of at most `step`, so that grid × terms arrays stay small."""
    return [slice(i, min(i + step, size)) for i in range(0, size, step)]


@dataclass(frozen=True)
class _Marginal:
    """The marginal posterior of x = logit θ, as a Chebyshev series in u = asinh(τ)."""

    x0: float
    x_scale: float
    big_u: float
    cumulative: FloatArray      # coefficients of ∫_{−U}^{u} density, in u/U
    total: float
    mean: float

    def quantile(self, q: float) -> float:
        # The CDF is a polynomial in u/U, monotone on [-1, 1]: its one real root there is the
        # quantile (numpy's companion-matrix roots; scipy.optimize is not needed, nor imported
        # on the path of every summary).
        shifted = self.cumulative.copy()
        shifted[0] -= q * self.total
        roots = cheb.chebroots(shifted)
        real = roots[(np.abs(roots.imag) < 1e-9) & (np.abs(roots.real) <= 1 + 1e-9)].real
        if len(real) == 1:
            t = float(np.clip(real[0], -1.0, 1.0))
        else:  # ill-conditioned: fall back to bracketing

            def f(t: float) -> float:
                return float(cheb.chebval(t, self.cumulative)) / self.total - q

            t = optimize.brentq(f, -1.0, 1.0, xtol=1e-14)
        return float(special.expit(self.x0 + self.x_scale * math.sinh(t * self.big_u)))


@lru_cache(maxsize=32)
def _marginal(key: tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]],
              nodes: tuple[int, int] = NODES,
              prior: tuple[float, float] = (1.0, 1.0)) -> _Marginal:
    k, n, mult = (np.array(part, dtype=float) for part in key)
    loglik = _loglik(k, n, mult)
    a, b = prior

    def log_density(x: FloatArray, y: FloatArray) -> FloatArray:
        lt, lnt = special.log_expit(x), special.log_expit(-x)
        # θ ~ Beta(a, b) (default U(0,1)) in logit coordinates; d ~ Gamma(1, 1) in log
        # coordinates
        return np.asarray(loglik(y + lt, y + lnt) + a * lt + b * lnt + y - np.exp(y),
                          dtype=float)

    def logpost(p: FloatArray) -> FloatArray:
        return log_density(p[..., 0], p[..., 1])

    total_k, total_n = float(k @ mult), float(n @ mult)
    start = np.array([float(special.logit((total_k + a) / (total_n + a + b))), 0.0])
    mode, cov = laplace_fit(logpost, start)
    chol = np.linalg.cholesky(cov)
    t1, c1, big_u = sinh_nodes(nodes[0], _REACH, "chebyshev")
    t2, w2, _ = sinh_nodes(nodes[1], _REACH, "legendre")
    x = mode[0] + chol[0, 0] * t1
    y = mode[1] + chol[1, 0] * t1[:, None] + chol[1, 1] * t2[None, :]
    logp = log_density(x[:, None], y)
    dens = np.exp(logp - np.max(logp))
    slab = (dens @ w2) * c1                               # density of u₁, up to a constant
    coef = chebyshev_coefficients(np.stack([slab, slab * special.expit(x)]))
    integral = np.asarray(cheb.chebint(coef.T, lbnd=-1, scl=big_u), dtype=float)  # (N1+1, 2)
    mass, first = (float(v) for v in cheb.chebval(1.0, integral))
    return _Marginal(x0=float(mode[0]), x_scale=float(chol[0, 0]), big_u=big_u,
                     cumulative=integral[:, 0], total=mass, mean=first / mass)


def _fit(successes: ArrayLike, trials: ArrayLike,
         prior: tuple[float, float] = (1.0, 1.0)) -> _Marginal:
    k, n = _counts(successes, trials)
    pairs, mult = np.unique(np.stack([k, n], axis=1), axis=0, return_counts=True)
    key = (tuple(pairs[:, 0].tolist()), tuple(pairs[:, 1].tolist()),
           tuple(mult.astype(float).tolist()))
    a, b = (float(x) for x in prior)
    if not (math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"prior must be two positive numbers (a, b); got {prior!r}")
    return _marginal(key, NODES, (a, b))


def hierarchical_interval(successes: ArrayLike, trials: ArrayLike,
                          level: float = 0.95, prior: tuple[float, float] = (1.0, 1.0),
                          estimate: float | None = None,
                          method: Literal["boundary", "equal_tailed"] = "boundary",
                          ) -> tuple[float, float]:
    """Credible interval of the population rate θ, clusters = cases.

    Hierarchical beta-binomial model (Bowyer et al. 2025, §3.2): θ ~ Beta(a, b) (`prior`,
    default U(0, 1)), concentration d ~ Gamma(1, 1), per-cluster θ_t ~ Beta(dθ, d(1−θ)),
    k_t ~ Bin(n_t, θ_t). The per-cluster marginal likelihood is beta-binomial; the posterior
    of (logit θ, log d) is integrated on a grid centred and scaled by a Laplace fit
    (sinh-stretched to ±20 sd; Chebyshev × Gauss–Legendre), and θ's marginal CDF is inverted.
    "boundary" (default, STATS.md §1): the equal-tailed interval at (1 ∓ level)/2, unless it
    excludes `estimate` (default the pooled rate Σk/Σn) — always so when no trial passed or
    all did — in which case the one-sided [0, q_level] or [q_(1−level), 1] on the estimate's
    side (credibility exactly `level`). "equal_tailed": always the equal-tailed interval.
    Clusters are grouped by distinct (k, n), so 10,000 clusters take a few milliseconds.
    With one trial per cluster d drops out and the result is the Beta(Σk + a, Σ(n−k) + b)
    interval; clustered data give a wider interval than pooling all trials. Clusters with
    n_t = 0 are ignored; no data gives the prior's equal-tailed interval. Raises ValueError
    unless 0 ≤ k_t ≤ n_t are integers, 0 < level < 1 and the prior is positive.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if method not in ("boundary", "equal_tailed"):
        raise ValueError(f"method must be 'boundary' or 'equal_tailed'; got {method!r}")
    marginal = _fit(successes, trials, prior)
    tail = (1.0 - level) / 2.0
    lo, hi = marginal.quantile(tail), marginal.quantile(1.0 - tail)
    if method == "equal_tailed":
        return lo, hi
    if estimate is None:
        k, n = _counts(successes, trials)
        total = float(n.sum())
        if total == 0:
            return lo, hi
        estimate = float(k.sum()) / total
    if estimate < lo:
        return 0.0, max(marginal.quantile(level), float(estimate))
    if estimate > hi:
        return min(marginal.quantile(1.0 - level), float(estimate)), 1.0
    return lo, hi


def hierarchical_mean(successes: ArrayLike, trials: ArrayLike,
                      prior: tuple[float, float] = (1.0, 1.0)) -> float:
    """Posterior mean of the population rate θ under the hierarchical beta-binomial model.

    Same model and quadrature as `hierarchical_interval`. One trial per cluster gives
    (Σk + 1)/(Σn + 2); no data gives ½.
    """
    return _fit(successes, trials, prior).mean
