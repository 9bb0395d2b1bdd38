"""How many cases: sample sizes, minimum detectable effects and multiplicity (STATS.md 9, 10).

Normal-approximation formulas, two-sided α, power 1 − β, z_x = Φ⁻¹(1 − x). They agree with
statsmodels (checked in the tests); `n_for_interval_width` is exact for the Beta posterior.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

from ix._lazy import lazy
from ix.stats.beta import beta_quantile
from ix.stats.tails import nct_sf, t_ppf

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")

#: Φ⁻¹, from the standard library (Wichura's AS241, ~1e-16): the closed forms need no scipy
_z = NormalDist().inv_cdf

__all__ = [
    "goal_settle_power",
    "holm",
    "mde_paired",
    "n_for_goal",
    "n_for_interval_width",
    "n_paired",
    "sample_size_two_proportions",
]

#: The `method`s of `sample_size_two_proportions`.
PROPORTIONS_METHODS = ("unpooled", "pooled", "cohen_h")


def _check_rate(name: str, p: float, *, open_interval: bool = True) -> float:
    value = float(p)
    ok = 0 < value < 1 if open_interval else 0 <= value <= 1
    if not ok:
        bounds = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {bounds}, got {p}")
    return value


def _z_sum(alpha: float, power: float) -> float:
    """z_{α/2} + z_β, the two-sided critical value plus the power quantile."""
    _check_rate("alpha", alpha)
    _check_rate("power", power)
    return _z(1.0 - alpha / 2.0) + _z(power)


def _ceil(x: float) -> int:
    """Round a sample size up, forgiving floating-point noise just above an integer."""
    return max(1, math.ceil(x * (1.0 - 1e-12)))


def _n_two_proportions(p1: float, p2: float, alpha: float, power: float,
                       method: str) -> float:
    """Unrounded per-group n of `sample_size_two_proportions`."""
    p1, p2 = _check_rate("p1", p1), _check_rate("p2", p2)
    if p1 == p2:
        raise ValueError("p1 and p2 must differ: no sample size detects a zero difference")
    _check_rate("alpha", alpha)
    _check_rate("power", power)
    z_a, z_b = _z(1.0 - alpha / 2.0), _z(power)
    var_alt = p1 * (1 - p1) + p2 * (1 - p2)
    delta = p1 - p2
    if method == "unpooled":
        return (z_a + z_b) ** 2 * var_alt / delta**2
    if method == "pooled":
        p_bar = (p1 + p2) / 2.0
        return (z_a * math.sqrt(2.0 * p_bar * (1 - p_bar)) + z_b * math.sqrt(var_alt)) ** 2 \
            / delta**2
    if method == "cohen_h":
        h = 2.0 * math.asin(math.sqrt(p1)) - 2.0 * math.asin(math.sqrt(p2))
        return 2.0 * ((z_a + z_b) / h) ** 2
    raise ValueError(f"unknown method {method!r}; allowed: 'unpooled', 'pooled', 'cohen_h'")


def sample_size_two_proportions(p1: float, p2: float, alpha: float = 0.05, power: float = 0.8,
                                method: str = "unpooled") -> int:
    """Cases per group to detect p1 vs p2 with a two-sided z-test (normal approximation).

    δ = p1 − p2, q = 1 − p, p̄ = (p1 + p2)/2:
    "unpooled": n = (z_{α/2} + z_β)² (p1q1 + p2q2) / δ².
    "pooled" (Fleiss, no continuity correction; the null variance uses p̄):
    n = (z_{α/2}·√(2p̄q̄) + z_β·√(p1q1 + p2q2))² / δ² — this is what statsmodels'
    `samplesize_proportions_2indep_onetail` computes.
    "cohen_h": n = 2·((z_{α/2} + z_β)/h)², h = 2 asin√p1 − 2 asin√p2; the factor 2 is the two
    groups (Var ĥ = 2/n), as in statsmodels' `NormalIndPower` (which also counts the far
    tail, negligible: its n is smaller by < 0.01%).
    Rounded up; at least 1. Raises ValueError unless 0 < p1, p2, alpha, power < 1 and
    p1 ≠ p2, or on a method not in `PROPORTIONS_METHODS`.
    """
    return _ceil(_n_two_proportions(p1, p2, alpha, power, method))


def _paired_variance(sigma2_a: float, sigma2_b: float, omega2: float, k_a: float,
                     k_b: float) -> float:
    for name, v in (("sigma2_a", sigma2_a), ("sigma2_b", sigma2_b), ("omega2", omega2)):
        if not (v >= 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a finite non-negative variance, got {v}")
    if not (k_a >= 1 and k_b >= 1 and math.isfinite(k_a) and math.isfinite(k_b)):
        raise ValueError(f"trials per case must be at least 1, got {k_a}, {k_b}")
    var = omega2 + sigma2_a / k_a + sigma2_b / k_b
    if var <= 0:
        raise ValueError("all variances are zero: any difference is detected with one case")
    return float(var)


def mde_paired(n: int, *, sigma2_a: float, sigma2_b: float, omega2: float = 0.0,
               k_a: float = 1, k_b: float = 1, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable effect of a paired design with n cases (Miller 2024, §5).

    MDE = (z_{α/2} + z_β) · √((ω² + σ_A²/K_A + σ_B²/K_B) / n), where for each case i with
    true scores s_Ai, s_Bi: ω² = Var_i(s_Ai − s_Bi), the spread over cases of the true
    per-case difference; σ_A², σ_B² = the mean within-case variance of one trial's score
    (p(1−p) for a pass/fail trial), averaged over cases; K_A, K_B = trials per case (an
    average is fine). More trials shrink only the σ² terms. Raises ValueError on n < 1,
    negative variances, all variances zero, K < 1, or alpha/power outside (0, 1).
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    var = _paired_variance(sigma2_a, sigma2_b, omega2, k_a, k_b)
    return _z_sum(alpha, power) * math.sqrt(var / n)


def n_paired(mde: float, *, sigma2_a: float, sigma2_b: float, omega2: float = 0.0,
             k_a: float = 1, k_b: float = 1, alpha: float = 0.05, power: float = 0.8) -> int:
    """Cases needed for a paired design to detect `mde`: the inverse of `mde_paired`.

    n = ⌈(z_{α/2} + z_β)² (ω² + σ_A²/K_A + σ_B²/K_B) / MDE²⌉ (symbols as in `mde_paired`),
    the smallest n with mde_paired(n) ≤ mde. At least 1. Raises ValueError on mde ≤ 0 and as
    `mde_paired`.
    """
    if not (mde > 0 and math.isfinite(mde)):
        raise ValueError(f"mde must be positive, got {mde}")
    var = _paired_variance(sigma2_a, sigma2_b, omega2, k_a, k_b)
    return _ceil(_z_sum(alpha, power) ** 2 * var / mde**2)


def _goal_shift(effect: float, min_effect: float, direction: str,
                credibility: float) -> tuple[float, float]:
    """(distance of the planning effect from the goal's nearer boundary, one-sided level)."""
    if direction not in ("increase", "decrease", "differ"):
        raise ValueError(f"direction must be increase, decrease or differ; got {direction!r}")
    if not (min_effect >= 0 and math.isfinite(min_effect)):
        raise ValueError(f"min_effect must be a finite number >= 0, got {min_effect}")
    if not 0.5 < credibility < 1:
        raise ValueError(f"credibility must lie in (0.5, 1), got {credibility}")
    if not math.isfinite(effect):
        raise ValueError(f"effect must be finite, got {effect}")
    if direction == "differ":
        # each direction is judged at (1 + c)/2; equivalence (refuted) needs both sides
        return abs(abs(effect) - min_effect), (1.0 + credibility) / 2.0
    signed = effect if direction == "increase" else -effect
    return abs(signed - min_effect), credibility


def goal_settle_power(n: int, effect: float, *, min_effect: float, sd: float,
                      credibility: float = 0.95, direction: str = "increase") -> float:
    """P(a goal's rule settles it with n cases): the power of the one-sided t-test (df n − 1)
    of the per-case differences against the goal's boundary, exact for normal differences.

    With s = |effect − m| in the goal's direction (for "differ", ||effect| − m| at level
    (1 + c)/2) and σ = `sd` (of one case's difference): 1 − F_{t, n−1, δ}(t_{level, n−1}),
    F the noncentral t CDF with δ = s·√n/σ — statsmodels' `TTestPower(alternative="larger")`
    with α = 1 − level. The t quantile, not z, is what keeps small n honest: at n = 5 and
    c = 0.95 it is 2.13, not 1.64. Raises ValueError on n < 2 or sd ≤ 0.
    """
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n}")
    if not (sd > 0 and math.isfinite(sd)):
        raise ValueError(f"sd must be positive, got {sd}")
    shift, level = _goal_shift(effect, min_effect, direction, credibility)
    df = n - 1
    return float(nct_sf(t_ppf(level, df), df, shift * math.sqrt(n) / sd))


def n_for_goal(effect: float, *, min_effect: float, sd: float, credibility: float = 0.95,
               power: float = 0.8, direction: str = "increase", most: int = 10**7) -> int:
    """The smallest n (≥ 2) whose `goal_settle_power` reaches `power`: how many cases a goal
    "effect beyond min_effect in `direction`, at credibility c" needs when the true effect
    is `effect` and one case's difference has standard deviation `sd`.

    The planning effect may sit on either side of the boundary: beyond it the goal is
    settled by "supported", inside it by "refuted". Raises ValueError when the effect sits
    on the boundary (no n settles it), or when more than `most` cases would be needed.
    """
    _check_rate("power", power)
    shift, _ = _goal_shift(effect, min_effect, direction, credibility)
    if shift <= 0:
        raise ValueError("the planning effect sits on the goal's boundary (min_effect): no "
                         "number of cases settles it")

    def ok(n: int) -> bool:
        return goal_settle_power(n, effect, min_effect=min_effect, sd=sd,
                                 credibility=credibility, direction=direction) >= power

    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > most:
            raise ValueError(f"more than {most} cases would be needed")
    lo = max(1, hi // 2)                   # power grows with n: bisect (lo fails or is 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if mid >= 2 and ok(mid) else (mid, hi)
    return hi


def _width(n: int, p: float, level: float, prior: tuple[float, float]) -> float:
    """The equal-tailed interval's width at n (plain Python: `ix validate` asks for it, and
    must not wait for scipy)."""
    k = round(p * n)                       # half to even
    a, b = k + prior[0], n - k + prior[1]
    tail = (1.0 - level) / 2.0
    low = beta_quantile(tail, a, b)
    if a == b:                             # symmetric: the upper end is 1 − the lower
        return 1.0 - 2.0 * low
    return beta_quantile(1.0 - tail, a, b) - low


def n_for_interval_width(width: float, p: float = 0.5, level: float = 0.95,
                         prior: tuple[float, float] = (1.0, 1.0)) -> int:
    """The smallest n whose equal-tailed Beta posterior interval is at most `width` wide.

    Answers "how many cases for ±width/2". At n, k = round(p·n) (half to even, as Python's
    round), posterior Beta(k + a, n − k + b), width = q_{(1+level)/2} − q_{(1−level)/2}
    (`ix.stats.beta.beta_quantile`). The width falls roughly as 1/√n but not monotonically (k
    is rounded), so after doubling and bisection the O(1/(p(1−p))) values of n just below
    are scanned too (the rounding cannot matter further away): width(n) ≤ width <
    width(n − 1), and the tests check it against a full scan. p = 0.5 is the worst case.
    Raises ValueError unless 0 < width < 1, 0 ≤ p ≤ 1, 0 < level < 1 and the prior is
    positive.
    """
    if not 0 < width < 1:
        raise ValueError(f"width must lie in (0, 1), got {width}")
    p = _check_rate("p", p, open_interval=False)
    _check_rate("level", level)
    if not (prior[0] > 0 and prior[1] > 0):
        raise ValueError(f"prior parameters must be positive, got {prior}")

    def ok(n: int) -> bool:
        return _width(n, p, level, prior) <= width

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > 2**62:
            raise ValueError(f"no n reaches width {width}")
    lo = hi // 2                           # not ok(lo) unless lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    # k is rounded, so the width wiggles by a relative O(1/(n·p(1−p))): only an n within
    # O(1/(p(1−p))) of the bisection point can beat it. Scan that window (and on, if needed).
    reach = 64 if p in (0.0, 1.0) else max(64, math.ceil(16.0 / (p * (1.0 - p))))
    best, start = hi, hi
    while start > 1:
        first = max(1, start - min(reach, max(64, start // 4)))
        good = next((n for n in range(first, start) if _width(n, p, level, prior) <= width),
                    None)
        if good is None:
            break
        best = good
        if best > first:
            break
        start = first
    return best


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control), in input order.

    Sorted ascending p₍₁₎ ≤ … ≤ p₍ₘ₎: adj₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1)·p₍ⱼ₎). Monotone in
    the raw p, never below it, capped at 1; equals statsmodels `multipletests(method="holm")`.
    Ties keep their input order. An empty list gives []. Raises ValueError on p outside
    [0, 1] or NaN.
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError("pvalues must be a flat sequence")
    if np.any(~np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("p-values must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return [float(x) for x in adjusted]


def paired_variances(rates_a: Sequence[float], trials_a: Sequence[int],
                     rates_b: Sequence[float],
                     trials_b: Sequence[int]) -> tuple[float, float, float]:
    """Planning values for `mde_paired` / `n_paired` from two subjects' per-case rates.

    σ²_A = mean over cases of p_A(1−p_A) (the within-case Bernoulli variance of a trial), σ²_B
    likewise, and ω² = var(p_A − p_B) across cases less the trial noise
    mean(p_A(1−p_A)/n_A + p_B(1−p_B)/n_B), floored at 0 (Miller 2024, §4). The cases must be
    the same, in the same order; fewer than two cases gives ω² = 0.
    """
    a = np.asarray(rates_a, dtype=float)
    b = np.asarray(rates_b, dtype=float)
    na = np.asarray(trials_a, dtype=float)
    nb = np.asarray(trials_b, dtype=float)
    if not (a.shape == b.shape == na.shape == nb.shape) or a.ndim != 1:
        raise ValueError("rates and trial counts must be 1-D and of the same length")
    if a.size == 0:
        raise ValueError("need at least one case")
    if (na < 1).any() or (nb < 1).any():
        raise ValueError("every case needs at least one trial")
    var_a, var_b = a * (1 - a), b * (1 - b)
    sigma2_a, sigma2_b = float(var_a.mean()), float(var_b.mean())
    if a.size < 2:
        return sigma2_a, sigma2_b, 0.0
    noise = float((var_a / na + var_b / nb).mean())
    omega2 = max(0.0, float(np.var(a - b, ddof=1)) - noise)
    return sigma2_a, sigma2_b, omega2
