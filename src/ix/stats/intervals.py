"""Intervals for a binomial rate (k successes in n trials) that are right at small n.

The default is the Beta(1, 1) posterior's equal-tailed credible interval, one-sided at the
boundary counts: k = 0 gives [0, q_level] and k = n gives [q_(1−level), 1] (STATS.md method 1;
Bowyer, Aitchison & Ivanova 2025, §3.1), so every interval contains k/n and can reach 0 and 1.
HPD, the plain equal-tailed interval, Wilson, Clopper-Pearson and Jeffreys are options;
Wald exists only so the coverage test can show it failing. Every function takes scalars and
returns a pair of floats, or takes numpy arrays (broadcast together) and returns a pair of
arrays. Counts must be whole numbers with 0 <= k <= n; n = 0 is allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from scipy import special
else:
    np = lazy("numpy")
    special = lazy("scipy.special")

optimize = lazy("scipy.optimize")  # only the HPD needs it, and it is slow to import

Scalar: TypeAlias = "int | float | np.integer[Any] | np.floating[Any]"
Counts: TypeAlias = "Scalar | npt.NDArray[Any]"
FloatArray: TypeAlias = "npt.NDArray[np.float64]"
Method = Literal["boundary", "equal_tailed", "hpd"]

#: The named priors of `prior:` in experiment.yaml, as Beta(a, b) parameters.
PRIORS: dict[str, tuple[float, float]] = {"uniform": (1.0, 1.0), "jeffreys": (0.5, 0.5)}


def _check_level(level: float) -> float:
    if not (isinstance(level, int | float | np.integer | np.floating) and 0 < level < 1):
        raise ValueError(f"level must be a probability in (0, 1), e.g. 0.95; got {level!r}")
    return float(level)


def _whole(name: str, value: npt.ArrayLike) -> FloatArray:
    """`value` as a float array, checked to hold finite, non-negative whole numbers."""
    arr = np.asarray(value, dtype=float)
    bad = ~np.isfinite(arr) | (arr < 0) | (arr != np.floor(arr))
    if bad.any():
        raise ValueError(f"{name} must be a non-negative whole number; got {arr[bad].flat[0]:g}")
    return arr


def _pair(lo: FloatArray, hi: FloatArray, scalar: bool) -> tuple[Any, Any]:
    if scalar:
        return float(lo), float(hi)
    return lo, hi


def _counts(k: Counts, n: Counts) -> tuple[FloatArray, FloatArray, bool]:
    """Validated (k, n) broadcast to float arrays, and whether both were scalars."""
    k_arr, n_arr = np.broadcast_arrays(_whole("k", k), _whole("n", n))
    over = k_arr > n_arr
    if over.any():
        i = np.flatnonzero(over)[0]
        raise ValueError(
            f"need k <= n (successes cannot exceed trials); got k={k_arr.flat[i]:g}, "
            f"n={n_arr.flat[i]:g}"
        )
    return k_arr, n_arr, k_arr.ndim == 0


def _distinct(k: FloatArray, n: FloatArray) -> tuple[FloatArray, FloatArray, npt.NDArray[Any]]:
    """Distinct (k, n) pairs as flat arrays, and each input's index into them (input's shape).

    Agent experiments repeat few (k, n) pairs, so 50,000 cases cost a few hundred quantiles.
    """
    top = float(n.max(initial=0)) + 1
    if top * top >= 2.0**53:  # the key n·top + k would no longer be exact
        return k.ravel(), n.ravel(), np.arange(k.size).reshape(k.shape)
    keys, where = np.unique(n * top + k, return_inverse=True)
    return keys % top, keys // top, where.reshape(k.shape)


def _z(level: float) -> float:
    """The two-sided normal critical value: Φ⁻¹((1 + level)/2)."""
    return float(special.ndtri((1 + _check_level(level)) / 2))


def _hpd(a: float, b: float, level: float) -> tuple[float, float]:
    """Shortest interval holding mass `level` of Beta(a, b)."""

    def q(p: float) -> float:
        return float(special.betaincinv(a, b, p))

    if a == 1 and b == 1:  # uniform: every interval of width `level` ties; take the central one
        return (1 - level) / 2, (1 + level) / 2
    if a <= 1 <= b:  # density non-increasing
        return 0.0, q(level)
    if b <= 1 <= a:  # density non-decreasing
        return q(1 - level), 1.0
    if a < 1 and b < 1:  # U-shaped: the shortest interval sits at one end (lower on a tie)
        low_end, high_end = (0.0, q(level)), (q(1 - level), 1.0)
        return low_end if low_end[1] <= 1 - high_end[0] else high_end

    # Unimodal: find the lower/upper tail masses (t, s), t + s = 1 − level, at which the ends
    # have equal density, solving for x = logit(t/(1 − level)) so both tails stay accurate.
    # Tails below ~1e-88 count as 0 (scipy's betaincinv returns nan below ~1e-150).
    def ends(x: float) -> tuple[float, float]:  # lower end, and 1 − upper end
        t, s = (1 - level) * special.expit(x), (1 - level) * special.expit(-x)
        return q(t), float(special.betaincinv(b, a, s))

    def log_density_gap(x: float) -> float:  # log f(upper) − log f(lower); falls as x grows
        lo, one_minus_hi = ends(x)
        with np.errstate(divide="ignore"):
            gap = (a - 1) * (np.log1p(-one_minus_hi) - np.log(lo)) + (b - 1) * (
                np.log(one_minus_hi) - np.log1p(-lo)
            )
        return float(np.clip(gap, -1e300, 1e300))  # brentq needs finite values

    if log_density_gap(-200.0) <= 0:  # lower tail mass below 1e-88: the lower end is 0
        return 0.0, q(level)
    if log_density_gap(200.0) >= 0:  # likewise for the upper tail
        return q(1 - level), 1.0

    lo, one_minus_hi = ends(optimize.brentq(log_density_gap, -200.0, 200.0, xtol=1e-12))
    return lo, 1.0 - one_minus_hi


@overload
def beta_interval(  # type: ignore[overload-overlap]
    k: Scalar,
    n: Scalar,
    level: float = 0.95,
    prior: tuple[float, float] = (1.0, 1.0),
    method: Method = "boundary",
) -> tuple[float, float]: ...
@overload
def beta_interval(
    k: Counts,
    n: Counts,
    level: float = 0.95,
    prior: tuple[float, float] = (1.0, 1.0),
    method: Method = "boundary",
) -> tuple[FloatArray, FloatArray]: ...
def beta_interval(
    k: Counts,
    n: Counts,
    level: float = 0.95,
    prior: tuple[float, float] = (1.0, 1.0),
    method: Method = "boundary",
) -> tuple[Any, Any]:
    """Credible interval of a rate from its posterior Beta(k + a, n − k + b), prior (a, b).

    "boundary" (default, STATS.md method 1): the equal-tailed interval — (1 − level)/2 of
    posterior mass in each tail, the Beta quantiles at (1 ∓ level)/2 — except at the
    boundary counts, where it is one-sided with the same credibility: k = 0 gives
    [0, q_level] and k = n gives [q_(1−level), 1]. It always contains k/n and covers a true
    rate of exactly 0 or 1; its exact coverage averaged over p ~ U(0, 1) is `level` at every
    n, like the plain equal-tailed interval's.
    "equal_tailed": the Beta quantiles at (1 ∓ level)/2 at every k. It never touches 0 or 1,
    so at k = 0 or k = n it excludes the observed rate and never covers a true 0 or 1.
    "hpd" is the shortest interval holding `level`: [0, q] when the density is non-increasing
    (k = 0 under a = 1), [q, 1] when non-decreasing (k = n under b = 1), otherwise the interval
    whose ends have equal density. Ties (flat posterior) give the central interval; for a
    U-shaped posterior (only n = 0 with both prior parameters < 1) the shorter end interval.
    n = 0 gives the prior's interval (equal-tailed under "boundary"). Arrays are vectorised
    over distinct (k, n) pairs.
    """
    level = _check_level(level)
    a, b = (float(x) for x in prior)
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"prior must be two positive numbers (a, b); got {prior!r}")
    k_arr, n_arr, scalar = _counts(k, n)
    uk, un, where = _distinct(k_arr, n_arr)
    post_a, post_b = uk + a, un - uk + b
    if method in ("equal_tailed", "boundary"):
        lo = special.betaincinv(post_a, post_b, (1 - level) / 2)
        hi = special.betaincinv(post_a, post_b, (1 + level) / 2)
        if method == "boundary":
            lo, hi = _one_sided_at_ends(uk, un, post_a, post_b, lo, hi, level)
    elif method == "hpd":
        ends = np.array([_hpd(x, y, level) for x, y in zip(post_a, post_b, strict=True)])
        lo, hi = ends.reshape(-1, 2).T
    else:
        raise ValueError(f"method must be 'boundary', 'equal_tailed' or 'hpd'; got {method!r}")
    return _pair(lo[where], hi[where], scalar)


def _one_sided_at_ends(k: FloatArray, n: FloatArray, post_a: FloatArray, post_b: FloatArray,
                       lo: FloatArray, hi: FloatArray,
                       level: float) -> tuple[FloatArray, FloatArray]:
    """Replace the equal-tailed (lo, hi) by [0, q_level] where k = 0 < n and by
    [q_(1−level), 1] where k = n > 0 (q: quantiles of Beta(post_a, post_b))."""
    at_zero = (k == 0) & (n > 0)
    at_n = (k == n) & (n > 0)
    lo = np.where(at_zero, 0.0, np.where(at_n, special.betaincinv(post_a, post_b, 1 - level),
                                          lo))
    hi = np.where(at_n, 1.0, np.where(at_zero, special.betaincinv(post_a, post_b, level), hi))
    return lo, hi


@overload
def wilson_interval(  # type: ignore[overload-overlap]
    k: Scalar, n: Scalar, level: float = 0.95
) -> tuple[float, float]: ...
@overload
def wilson_interval(k: Counts, n: Counts, level: float = 0.95) -> tuple[FloatArray, FloatArray]: ...
def wilson_interval(k: Counts, n: Counts, level: float = 0.95) -> tuple[Any, Any]:
    """Wilson (1927) score interval: (k + z²/2 ± z·sqrt(k(n − k)/n + z²/4)) / (n + z²).

    z = Φ⁻¹((1 + level)/2). Ends clipped to [0, 1] against rounding; n = 0 gives (0, 1).
    Matches statsmodels `proportion_confint(method="wilson")`.
    """
    z = _z(level)
    k_arr, n_arr, scalar = _counts(k, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(n_arr > 0, k_arr * (n_arr - k_arr) / n_arr, 0.0)
    centre = (k_arr + z * z / 2) / (n_arr + z * z)
    half = z * np.sqrt(spread + z * z / 4) / (n_arr + z * z)
    return _pair(np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1), scalar)


@overload
def clopper_pearson_interval(  # type: ignore[overload-overlap]
    k: Scalar, n: Scalar, level: float = 0.95
) -> tuple[float, float]: ...
@overload
def clopper_pearson_interval(
    k: Counts, n: Counts, level: float = 0.95
) -> tuple[FloatArray, FloatArray]: ...
def clopper_pearson_interval(k: Counts, n: Counts, level: float = 0.95) -> tuple[Any, Any]:
    """Clopper-Pearson (1934) exact interval: Beta(k, n − k + 1) and Beta(k + 1, n − k) quantiles.

    Lower = Beta(k, n − k + 1) quantile at (1 − level)/2, upper = Beta(k + 1, n − k) quantile at
    (1 + level)/2; lower = 0 at k = 0 and upper = 1 at k = n. Coverage is at least `level` at
    every p (conservative). Matches statsmodels `proportion_confint(method="beta")`.
    """
    level = _check_level(level)
    k_arr, n_arr, scalar = _counts(k, n)
    uk, un, where = _distinct(k_arr, n_arr)
    # at k = 0 (k = n) betaincinv gets a zero parameter and returns nan; the edge replaces it
    lo = np.where(uk > 0, special.betaincinv(uk, un - uk + 1, (1 - level) / 2), 0.0)
    hi = np.where(uk < un, special.betaincinv(uk + 1, un - uk, (1 + level) / 2), 1.0)
    return _pair(lo[where], hi[where], scalar)


@overload
def jeffreys_interval(  # type: ignore[overload-overlap]
    k: Scalar, n: Scalar, level: float = 0.95
) -> tuple[float, float]: ...
@overload
def jeffreys_interval(
    k: Counts, n: Counts, level: float = 0.95
) -> tuple[FloatArray, FloatArray]: ...
def jeffreys_interval(k: Counts, n: Counts, level: float = 0.95) -> tuple[Any, Any]:
    """Jeffreys interval: equal-tailed quantiles of Beta(k + ½, n − k + ½).

    Uses the boundary convention of Brown, Cai & DasGupta (2001, §4.1.2): lower = 0 at k = 0
    and upper = 1 at k = n. statsmodels `proportion_confint(method="jeffreys")` omits that
    convention and agrees everywhere else.
    """
    lo, hi = beta_interval(k, n, level, prior=(0.5, 0.5), method="equal_tailed")
    k_arr, n_arr, scalar = _counts(k, n)
    return _pair(np.where(k_arr == 0, 0.0, lo), np.where(k_arr == n_arr, 1.0, hi), scalar)


@overload
def wald_interval(  # type: ignore[overload-overlap]
    k: Scalar, n: Scalar, level: float = 0.95
) -> tuple[float, float]: ...
@overload
def wald_interval(k: Counts, n: Counts, level: float = 0.95) -> tuple[FloatArray, FloatArray]: ...
def wald_interval(k: Counts, n: Counts, level: float = 0.95) -> tuple[Any, Any]:
    """Wald (CLT) interval p̂ ± z·sqrt(p̂(1 − p̂)/n), clipped to [0, 1]. WRONG at small n.

    At k = 0 or k = n it collapses to a point, so at n = 5, p = 0.05 a nominal 95% interval
    covers p 22.5% of the time. Kept only to show, in tests, what the other methods fix.
    n = 0 gives (0, 1).
    """
    z = _z(level)
    k_arr, n_arr, scalar = _counts(k, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k_arr / n_arr
        half = z * np.sqrt(p * (1 - p) / n_arr)
    lo = np.where(n_arr > 0, np.clip(p - half, 0, 1), 0.0)
    hi = np.where(n_arr > 0, np.clip(p + half, 0, 1), 1.0)
    return _pair(lo, hi, scalar)

