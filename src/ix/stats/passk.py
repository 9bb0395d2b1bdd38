"""Unbiased pass@k and pass^k from n trials of a case with c passes (STATS.md methods 6, 7).

pass@k is the chance that at least one of k trials drawn without replacement from the n
passes (Chen et al. 2021); pass^k that all k pass (Yao et al. 2024, tau-bench). Both are
exact hypergeometric estimators; the plug-ins 1 − (1 − c/n)^k and (c/n)^k are biased.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = lazy("numpy")


def _check(n: int, c: int, k: int) -> tuple[int, int, int]:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not float(value).is_integer():
            raise ValueError(f"{name} must be a whole number; got {value!r}")
    n, c, k = int(n), int(c), int(k)
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n (passes within trials); got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n (cannot draw more trials than ran); got k={k}, n={n}")
    return n, c, k


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k trials passes) = 1 − C(n − c, k)/C(n, k) (Chen et al. 2021).

    Computed as −expm1(Σ_{i=n−c+1}^{n} log1p(−k/i)), i.e. 1 − Π(1 − k/i), which stays accurate
    for large n and small values; 1.0 when n − c < k. Needs 0 <= c <= n and 1 <= k <= n.
    """
    n, c, k = _check(n, c, k)
    if n - c < k:
        return 1.0
    i = np.arange(n - c + 1, n + 1, dtype=float)
    return float(-math.expm1(np.log1p(-k / i).sum()))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all k trials pass) = C(c, k)/C(n, k) = Π_{i<k} (c − i)/(n − i); 0.0 when c < k.

    Needs 0 <= c <= n and 1 <= k <= n. Underflows to 0.0 only when the true value is < 1e-308.
    """
    n, c, k = _check(n, c, k)
    if c < k:
        return 0.0
    i = np.arange(k, dtype=float)
    return float(np.prod((c - i) / (n - i)))


def _mean_over_cases(
    ns: npt.ArrayLike, cs: npt.ArrayLike, k: int, per_case: Callable[[int, int, int], float]
) -> float:
    n_arr, c_arr = np.asarray(ns), np.asarray(cs)
    if n_arr.shape != c_arr.shape or n_arr.ndim != 1:
        raise ValueError(
            f"ns and cs must be 1-D and of equal length; got shapes {n_arr.shape}, {c_arr.shape}"
        )
    if not float(k).is_integer() or k < 1:
        raise ValueError(f"k must be a whole number >= 1; got {k!r}")
    n_arr, c_arr = n_arr.astype(float), c_arr.astype(float)
    bad = ~np.isfinite(n_arr + c_arr) | (n_arr != np.floor(n_arr)) | (c_arr != np.floor(c_arr))
    bad |= (c_arr < 0) | (c_arr > n_arr)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        raise ValueError(
            f"each case needs whole numbers 0 <= c <= n; case {i} has n={n_arr[i]:g}, "
            f"c={c_arr[i]:g}"
        )
    keep = n_arr >= k
    if not keep.any():
        return math.nan
    pairs, counts = _distinct_pairs(n_arr[keep], c_arr[keep])
    values = [per_case(int(n), int(c), int(k)) for n, c in pairs]
    return float(np.dot(values, counts) / counts.sum())


def _distinct_pairs(
    n: npt.NDArray[np.float64], c: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """Distinct (n, c) rows and how often each occurs (via exact float keys when n is small)."""
    top = float(n.max()) + 1
    if top * top >= 2.0**53:
        return np.unique(np.stack([n, c], axis=1), axis=0, return_counts=True)
    keys, counts = np.unique(n * top + c, return_counts=True)
    return np.stack([keys // top, keys % top], axis=1), counts


def mean_pass_at_k(ns: npt.ArrayLike, cs: npt.ArrayLike, k: int) -> float:
    """Mean of `pass_at_k` over cases with n trials and c passes each (arrays, same length).

    Cases with n < k are skipped; nan when none is left. Loops over distinct (n, c) pairs only.
    """
    return _mean_over_cases(ns, cs, k, pass_at_k)


def mean_pass_hat_k(ns: npt.ArrayLike, cs: npt.ArrayLike, k: int) -> float:
    """Mean of `pass_hat_k` over cases with n trials and c passes each (arrays, same length).

    Cases with n < k are skipped; nan when none is left. Loops over distinct (n, c) pairs only.
    """
    return _mean_over_cases(ns, cs, k, pass_hat_k)




#: Every k up to this is listed; beyond it, the doublings and the largest k.
EVERY_K = 32


def k_levels(reached: int) -> list[int]:
    """The k a summary lists pass@k and pass^k for when cases reached `reached` trials: every
    k up to `EVERY_K`, then each power of two, and `reached` itself (which `ix run` prints).
    A run of 2,500 trials per case lists 44 k, not 2,500, each with a bootstrap interval."""
    levels = list(range(1, min(reached, EVERY_K) + 1))
    k = EVERY_K * 2
    while k < reached:
        levels.append(k)
        k *= 2
    if reached > EVERY_K:
        levels.append(reached)
    return levels


#: Draws of the case-level Bayesian bootstrap behind pass@k / pass^k intervals.
BOOTSTRAP_DRAWS = 2000
#: Cases drawn one by one, smallest groups of equal counts first; every other group's
#: weighted mean is drawn from its exact mean and variance (normal), so the cost does not
#: grow with the number of cases.
EXACT_CASES = 16


def _beta_moment(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64],
                 j: int) -> npt.NDArray[np.float64]:
    """E[θ^j] for θ ~ Beta(a, b), elementwise."""
    out = np.ones_like(a)
    for i in range(j):
        out *= (a + i) / (a + b + i)
    return out


def pass_k_intervals(right: npt.ArrayLike, valid: npt.ArrayLike, group: npt.ArrayLike,
                     estimates: Mapping[tuple[str, int], npt.ArrayLike], level: float = 0.95,
                     draws: int = BOOTSTRAP_DRAWS) -> dict[tuple[str, int], tuple[float, float]]:
    """Intervals of the population pass@k (`("at", k)`) and pass^k (`("hat", k)`): the mean
    over the population of cases of 1 − (1 − θ)^k or θ^k, θ a case's rate of right trials.

    `right`, `valid`: each case's right and valid trials; `group`: an integer label such that
    cases with equal (right, valid, group) have equal estimates (e.g. the pass count and
    the expectation); `estimates[(kind, k)]`: the per-case point estimates (nan: the case is
    left out of that one).

    The hull of two seeded case-level Bayesian bootstraps (Rubin 1981) sharing their
    Dirichlet(1, …, 1) case weights: (1) of the per-case estimates — right at large N, but at
    small N a sample whose cases all (or all but one) passed gives it no spread (coverage
    0.35–0.8 for pass@4/5 at N = 10–30 in our simulation); (2) drawing each case's θ from its
    Beta(right + 1, valid − right + 1) posterior (which does not depend on a stopping rule)
    — right at small N, but centred on a shrunk f(θ) at large N. Each interval is widened to
    contain the mean of its estimates, so it always holds the printed value; measured
    coverage 0.96–0.99 at a nominal 0.95 (benchmarks/passk_intervals.py). The seed is a hash
    of the counts: the same run, the same intervals. Cases with equal counts form a group; up
    to `EXACT_CASES` cases (smallest groups first) are drawn one by one, and every other
    group adds its Dirichlet total times a normal draw of its weighted mean (mean E f(θ),
    variance 2·Var f(θ)/(m + 1), exact under the posterior), so the cost does not grow with
    the number of cases. One set of draws serves every k.
    """
    r = np.asarray(right, dtype=np.int64)
    v = np.asarray(valid, dtype=np.int64)
    g = np.asarray(group, dtype=np.int64)
    out: dict[tuple[str, int], tuple[float, float]] = {}
    has = v > 0
    if not has.any():
        return {key: (math.nan, math.nan) for key in estimates}
    rows, first, counts = np.unique(np.stack([v[has], r[has], g[has]], axis=1), axis=0,
                                    return_index=True, return_counts=True)
    digest = hashlib.sha256(rows.tobytes() + counts.astype(np.int64).tobytes()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    a, b = rows[:, 1] + 1.0, rows[:, 0] - rows[:, 1] + 1.0
    by_size = np.argsort(counts, kind="stable")
    small = np.zeros(len(counts), dtype=bool)
    small[by_size[np.cumsum(counts[by_size]) <= EXACT_CASES]] = True
    reps = np.repeat(np.flatnonzero(small), counts[small])       # one column per case
    weight = rng.standard_gamma(1.0, size=(draws, len(reps)))
    theta = rng.beta(a[reps], b[reps], size=(draws, len(reps)))
    big = np.flatnonzero(~small)
    totals = rng.standard_gamma(counts[big].astype(float), size=(draws, len(big)))
    z = rng.standard_normal((draws, len(big)))
    tail = (1 - level) / 2
    for (kind, k), values in estimates.items():
        e = np.asarray(values, dtype=float)[has][first]            # one estimate a group
        use = np.isfinite(e) & (rows[:, 0] >= k)
        if not use.any():
            out[(kind, k)] = (math.nan, math.nan)
            continue
        estimate = float(np.dot(e[use], counts[use]) / counts[use].sum())
        us, ub = use[reps], use[big]
        # f(θ) = θ^k, or 1 − (1 − θ)^k computed through (1 − θ)^k ~ moments of Beta(b, a)
        x = theta[:, us] if kind == "hat" else 1 - theta[:, us]
        ga, gb = (a[big][ub], b[big][ub]) if kind == "hat" else (b[big][ub], a[big][ub])
        mu = _beta_moment(ga, gb, k)
        sd = np.sqrt(np.maximum(_beta_moment(ga, gb, 2 * k) - mu**2, 0)
                     * 2 / (counts[big][ub] + 1))
        w, t = weight[:, us], totals[:, ub]
        mass = w.sum(axis=1) + t.sum(axis=1)
        post = ((w * x**k).sum(axis=1)
                + (t * np.clip(mu + sd * z[:, ub], 0.0, 1.0)).sum(axis=1)) / mass
        if kind == "at":
            post = 1 - post
        plain = (w @ e[reps][us] + t @ e[big][ub]) / mass
        (lo, hi), (lo2, hi2) = (np.quantile(post, [tail, 1 - tail]),
                                np.quantile(plain, [tail, 1 - tail]))
        out[(kind, k)] = (min(float(lo), float(lo2), estimate),
                          max(float(hi), float(hi2), estimate))
    return out
