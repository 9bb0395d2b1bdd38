"""Unbiased pass@k and pass^k from n trials of a case with c passes (STATS.md methods 6, 7).

pass@k is the chance that at least one of k trials drawn without replacement from the n
passes (Chen et al. 2021); pass^k that all k pass (Yao et al. 2024, tau-bench). Both are
exact hypergeometric estimators; the plug-ins 1 − (1 − c/n)^k and (c/n)^k are biased.
"""

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt


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
