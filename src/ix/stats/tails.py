"""The three distribution tails a goal's sizing asks for, without importing scipy.stats.

scipy.stats takes ~0.5 s to import — more than numpy and scipy.special together — and a run
with a goal needs only the binomial survival function, the noncentral t's and Student's t
quantile from it. Those are ufuncs of scipy.special, which scipy.stats' `binom.sf`, `nct.sf`
and `t.ppf` call after checking their arguments; calling them here gives the same bits (the
tests compare with scipy.stats). The first two are private (in scipy.special since 1.14,
scipy.stats._boost before): on a scipy that keeps them elsewhere, these fall back to
scipy.stats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    from scipy import special
    from scipy import stats as scipy_stats
else:
    np = lazy("numpy")
    special = lazy("scipy.special")
    scipy_stats = lazy("scipy.stats")  # only on a scipy without the ufuncs below

__all__ = ["binom_sf", "nct_sf", "t_ppf"]


def _ufunc(name: str) -> Any | None:
    """scipy.special's private ufunc `name`, or None where this scipy has none."""
    return getattr(getattr(special, "_ufuncs", None), name, None)


def binom_sf(k: Any, n: Any, p: Any) -> Any:
    """P(Bin(n, p) > k) for integer k, as `scipy.stats.binom.sf(k, n, p)`."""
    sf = _ufunc("_binom_sf")
    if sf is None:
        return scipy_stats.binom.sf(k, n, p)
    k = np.floor(k)
    inside = sf(np.clip(k, 0, np.maximum(n - 1, 0)), n, p)  # the ufunc is nan off its support
    return np.where(k < 0, 1.0, np.where(k >= n, 0.0, inside))[()]


def nct_sf(x: Any, df: Any, nc: Any) -> Any:
    """P(T > x) for the noncentral t with `df` degrees of freedom and noncentrality `nc`, as
    `scipy.stats.nct.sf(x, df, nc)`."""
    sf = _ufunc("_nct_sf")
    if sf is None:
        return scipy_stats.nct.sf(x, df, nc)
    with np.errstate(over="ignore"):
        return np.clip(sf(x, df, nc), 0, 1)


def t_ppf(q: Any, df: Any) -> Any:
    """Student's t quantile, as `scipy.stats.t.ppf(q, df)` (public in scipy.special)."""
    return special.stdtrit(df, q)
