"""Comparisons of two subjects' pass rates: independent and paired, Bayesian and exact.

STATS.md methods 2 and 3. Independent: θ_A ~ Beta(k_A + a, n_A − k_A + b), θ_B likewise,
independent. Paired (both subjects ran the same cases): the 2×2 table S = both pass,
T = A only, U = B only, V = neither, under a Dirichlet(1,1,1,1) posterior over the four cells
(or the latent bivariate-probit model of `ix.stats.paired_probit`); θ_A − θ_B = p_T − p_U.
Every number is exact or by deterministic quadrature; nothing is sampled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

from ix._lazy import lazy
from ix.stats.difference import DifferenceInterval, difference_interval
from ix.stats.paired_probit import probit_diff_cdf, probit_diff_interval, probit_prob_a_beats_b

if TYPE_CHECKING:
    import numpy as np
    from scipy import integrate, optimize, special
else:
    np = lazy("numpy")
    integrate = lazy("scipy.integrate")
    optimize = lazy("scipy.optimize")
    special = lazy("scipy.special")

__all__ = [
    "diff_cdf",
    "diff_cdf_bounds",
    "diff_interval",
    "mcnemar_exact",
    "paired_diff_cdf",
    "paired_diff_cdf_bounds",
    "paired_diff_interval",
    "paired_prob_a_beats_b",
    "prob_a_beats_b",
]

PairedModel = Literal["dirichlet", "probit"]

#: Above this many terms the closed-form sum gives way to quadrature.
_MAX_TERMS = 5_000_000
_QUAD = {"epsabs": 1e-12, "epsrel": 1e-10, "limit": 400}


def _posterior(k: int, n: int, prior: tuple[float, float], who: str) -> tuple[float, float]:
    if int(k) != k or int(n) != n or not 0 <= k <= n:
        raise ValueError(f"{who}: need integers 0 <= k <= n, got k={k}, n={n}")
    a, b = float(prior[0]), float(prior[1])
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"prior parameters must be positive and finite, got {prior}")
    return k + a, n - k + b


#: g(x, 1 − x): the complement is passed too, so that g keeps its precision next to 1.
Integrand = Callable[[float, float], float]


def _cdf(a: float, b: float, x: float, xc: float) -> float:
    """I_x(a, b), from whichever of x and 1 − x = xc is smaller (no cancellation)."""
    return float(special.betainc(a, b, x)) if x <= 0.5 else float(special.betaincc(b, a, xc))


def _expectation(g: Integrand, a: float, b: float, kinks: list[float]) -> float:
    """E[g(θ, 1 − θ)] for θ ~ Beta(a, b) by adaptive quadrature; `kinks` (θ values where g
    bends or changes fast) and θ's own quantiles become break points.

    A bounded density (a, b ≥ 1) is integrated as ∫ f(x) g(x) dx. A density singular at an
    end (a prior below 1) is integrated over its quantile, ∫₀¹ g(F⁻¹(u)) du, which removes the
    singularity; the upper half is parametrised by 1 − u so both tails keep resolution.
    """
    inside = sorted({x for x in (*kinks, *_quantiles(a, b)) if 0.0 < x < 1.0})
    if a >= 1.0 and b >= 1.0:
        const = float(special.betaln(a, b))

        def weighted(x: float) -> float:
            if not 0.0 < x < 1.0:
                return 0.0
            log_f = (a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x) - const
            return math.exp(log_f) * g(x, 1.0 - x)

        return _quad(weighted, 0.0, 1.0, inside)
    lower = [u for u in (float(special.betainc(a, b, x)) for x in inside) if 0.0 < u < 0.5]
    upper = [v for v in (float(special.betaincc(a, b, x)) for x in inside) if 0.0 < v < 0.5]

    def low(u: float) -> float:
        x = float(special.betaincinv(a, b, u))
        return g(x, 1.0 - x)

    def high(v: float) -> float:
        # F⁻¹(1 − v) for Beta(a, b) is 1 − F⁻¹(v) for Beta(b, a); scipy's betainccinv is
        # inaccurate for small parameters
        xc = float(special.betaincinv(b, a, v))
        return g(1.0 - xc, xc)

    return _quad(low, 0.0, 0.5, lower) + _quad(high, 0.0, 0.5, upper)


def _quad(f: Callable[[float], float], lo: float, hi: float, points: list[float]) -> float:
    """QUADPACK (QAGS/QAGP) to ~1e-12 absolute. Integrands with algebraic end-point
    singularities (priors below 1) may stop short of that and settle for ~1e-9; QUADPACK's
    warning is not raised (`full_output`), the estimate is kept."""
    value, *_ = integrate.quad(f, lo, hi, points=sorted(set(points)) or None, full_output=1,
                               **_QUAD)
    return float(value)


def _quantiles(a: float, b: float) -> list[float]:
    return [float(x) for x in special.betaincinv(a, b, [1e-9, 1e-4, 0.05, 0.5, 0.95, 1 - 1e-4,
                                               1 - 1e-9])]


#: Bins of the variable a CDF integrates over, for `_monotone_bounds`: a grid of its mean
#: ± 8 standard deviations (no quantile inversions: they would cost more than the bounds
#: save), which keeps the bounds < 0.03 apart (median ~0.001 on the test grids).
_BOUND_GRID = 256
#: Widening of those bounds: covers rounding in them and the quadrature's own error (~1e-10),
#: so a value they place on one side of a threshold is on that side by the quadrature too.
_BOUND_SLACK = 1e-9
#: A bounded CDF value: (lower, upper).
Bounds = tuple[float, float]


def _monotone_bounds(h: Callable[[Any], Any], a: float, b: float) -> Bounds:
    """Lower and upper bounds on E[h(θ)] for θ ~ Beta(a, b) and h monotone on [0, 1]
    (vectorised over a numpy array): on each bin of θ, h lies between its values at the
    bin's ends, so the bins' masses (betainc at the ends) weight those ends into two sums
    that enclose the integral, whatever the bins. Rigorous up to `_BOUND_SLACK`, no
    quadrature: what lets a decision skip one where it is far from its threshold."""
    mean = a / (a + b)
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    grid = mean + sd * np.linspace(-8.0, 8.0, _BOUND_GRID)
    edges = np.concatenate(([0.0], grid[(grid > 0.0) & (grid < 1.0)], [1.0]))
    mass = np.diff(special.betainc(a, b, edges))
    values = h(edges)
    ends = values[:-1], values[1:]
    lo = float(np.dot(mass, np.minimum(*ends)))
    hi = float(np.dot(mass, np.maximum(*ends)))
    return max(lo - _BOUND_SLACK, 0.0), min(hi + _BOUND_SLACK, 1.0)


def _closed_form_sum(a_x: float, b_x: float, a_y: float, b_y: float) -> float:
    """P(Y > X) for X ~ Beta(a_x, b_x), Y ~ Beta(a_y, b_y), integer a_y (Evan Miller 2015):

    Σ_{i=0}^{a_y−1} B(a_x + i, b_x + b_y) / ((b_y + i) · B(1 + i, b_y) · B(a_x, b_x)),
    summed in log space. All terms are positive, so there is no cancellation.
    """
    i = np.arange(int(a_y), dtype=float)
    terms = (special.betaln(a_x + i, b_x + b_y) - np.log(b_y + i) - special.betaln(1.0 + i, b_y)
             - special.betaln(a_x, b_x))
    # log-sum-exp shifted by the largest term (numpy's pairwise sum), not scipy's logsumexp:
    # the same sum without its ~0.1 ms of argument handling, paid once per goal verdict
    top = terms.max()
    return float(np.exp(top) * np.exp(terms - top).sum())


def _quad_greater(a_x: float, b_x: float, a_y: float, b_y: float) -> float:
    """P(Y > X) = E_Y[F_X(Y)] by quadrature over Y's quantiles."""
    return _expectation(lambda y, yc: _cdf(a_x, b_x, y, yc), a_y, b_y, _quantiles(a_x, b_x))


def prob_a_beats_b(k_a: int, n_a: int, k_b: int, n_b: int,
                   prior: tuple[float, float] = (1.0, 1.0)) -> float:
    """P(θ_A > θ_B) for independent posteriors θ ~ Beta(k + a, n − k + b), exactly.

    Integer parameters: Evan Miller's closed-form sum ("Formulas for Bayesian A/B testing",
    2015), in log space with `betaln`, over whichever of α_A or β_B is smaller (the second via
    P(θ_A > θ_B) = P(1 − θ_B > 1 − θ_A)). Otherwise (or beyond 5·10⁶ terms): 1-D quadrature
    of ∫ f_A F_B = E_A[F_B(θ_A)] over θ_A's quantiles (so priors below 1 are no trouble),
    taking whichever of P(A > B) and 1 − P(B > A) is the smaller tail, so tiny
    probabilities keep their relative accuracy. k = 0 and k = n are ordinary cases; no data
    (n = 0) leaves the prior. P(A > B) + P(B > A) = 1 (ties have probability zero). Raises
    ValueError unless 0 ≤ k ≤ n are integers and the prior is positive.
    """
    a_a, b_a = _posterior(k_a, n_a, prior, "A")
    a_b, b_b = _posterior(k_b, n_b, prior, "B")
    return _prob_greater(a_a, b_a, a_b, b_b)


def _prob_greater(a_a: float, b_a: float, a_b: float, b_b: float) -> float:
    """P(θ_A > θ_B) for θ_A ~ Beta(a_a, b_a), θ_B ~ Beta(a_b, b_b) (`prob_a_beats_b`'s rule)."""
    if all(float(x).is_integer() for x in (a_a, b_a, a_b, b_b)) and min(a_a, b_b) <= _MAX_TERMS:
        if a_a <= b_b:
            p = _closed_form_sum(a_b, b_b, a_a, b_a)
        else:
            p = _closed_form_sum(b_a, a_a, b_b, a_b)
        return min(max(p, 0.0), 1.0)
    p = _quad_greater(a_b, b_b, a_a, b_a)
    q = _quad_greater(a_a, b_a, a_b, b_b)
    return min(max(p if p <= q else 1.0 - q, 0.0), 1.0)


def _diff_cdf(a_a: float, b_a: float, a_b: float, b_b: float) -> Callable[[float], float]:
    """d ↦ P(θ_A − θ_B ≤ d) = E_A[P(θ_B ≥ θ_A − d)], by quadrature over θ_A's quantiles."""
    q_b = _quantiles(a_b, b_b)

    def survival_b(y: float, yc: float) -> float:
        """P(θ_B ≥ y), given y and 1 − y."""
        return 1.0 if y <= 0.0 else 0.0 if yc <= 0.0 else _cdf(b_b, a_b, yc, y)

    def cdf(d: float) -> float:
        if d <= -1.0:
            return 0.0
        if d >= 1.0:
            return 1.0
        if d == 0.0:  # P(θ_A ≤ θ_B) = P(θ_B > θ_A): exact, and a goal at min_effect 0 asks it
            return _prob_greater(a_b, b_b, a_a, b_a)
        kinks = [d, 1.0 + d, *(q + d for q in q_b)]
        value = _expectation(lambda x, xc: survival_b(x - d, xc + d), a_a, b_a, kinks)
        return min(max(value, 0.0), 1.0)

    return cdf


def _point(d: float) -> float:
    d = float(d)
    if math.isnan(d):
        raise ValueError("d must be a number, got nan")
    return d


def diff_cdf(k_a: int, n_a: int, k_b: int, n_b: int, d: float,
             prior: tuple[float, float] = (1.0, 1.0)) -> float:
    """P(θ_A − θ_B ≤ d) for independent posteriors θ ~ Beta(k + a, n − k + b).

    ∫ f_A(x) P(θ_B ≥ x − d) dx by adaptive quadrature over θ_A's quantiles (the CDF that
    `diff_interval` inverts), accurate to ~1e-10 (~1e-8 with priors below 1). At d = 0 it is
    P(θ_B > θ_A) by `prob_a_beats_b`'s exact sum (what a goal at min_effect 0 reads; a tenth
    of the quadrature's time). Non-decreasing in d; d ≤ −1 gives 0 and d ≥ 1 gives 1. Raises
    ValueError on bad counts or prior, or d = NaN.
    """
    a_a, b_a = _posterior(k_a, n_a, prior, "A")
    a_b, b_b = _posterior(k_b, n_b, prior, "B")
    return _diff_cdf(a_a, b_a, a_b, b_b)(_point(d))


def diff_cdf_bounds(k_a: int, n_a: int, k_b: int, n_b: int, d: float,
                    prior: tuple[float, float] = (1.0, 1.0)) -> Bounds:
    """Bounds (lo, hi) on `diff_cdf(k_a, n_a, k_b, n_b, d)`, < 0.03 apart, without
    quadrature: E_A[P(θ_B ≥ θ_A − d)] has an integrand decreasing in θ_A
    (`_monotone_bounds`). A decision whose threshold lies outside them needs no more."""
    a_a, b_a = _posterior(k_a, n_a, prior, "A")
    a_b, b_b = _posterior(k_b, n_b, prior, "B")
    point = _point(d)
    return _monotone_bounds(
        lambda x: 1.0 - special.betainc(a_b, b_b, np.clip(x - point, 0.0, 1.0)), a_a, b_a)


def _invert(cdf: Callable[[float], float], level: float) -> tuple[float, float]:
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    tail = (1.0 - level) / 2.0
    lo = optimize.brentq(lambda d: cdf(d) - tail, -1.0, 1.0, xtol=1e-12, rtol=1e-12)
    hi = optimize.brentq(lambda d: cdf(d) - (1.0 - tail), -1.0, 1.0, xtol=1e-12, rtol=1e-12)
    return float(lo), float(hi)


def _containing(cdf: Callable[[float], float], estimate: float,
                level: float) -> DifferenceInterval:
    """`difference_interval` on [−1, 1], after the usual level check."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return difference_interval(cdf, _point(estimate), level)


@overload
def diff_interval(k_a: int, n_a: int, k_b: int, n_b: int, level: float = ...,
                  prior: tuple[float, float] = ...,
                  estimate: None = None) -> tuple[float, float]: ...
@overload
def diff_interval(k_a: int, n_a: int, k_b: int, n_b: int, level: float = ...,
                  prior: tuple[float, float] = ..., *,
                  estimate: float) -> DifferenceInterval: ...
def diff_interval(k_a: int, n_a: int, k_b: int, n_b: int, level: float = 0.95,
                  prior: tuple[float, float] = (1.0, 1.0),
                  estimate: float | None = None) -> tuple[float, float] | DifferenceInterval:
    """Equal-tailed credible interval of θ_A − θ_B for independent Beta posteriors.

    With `estimate` (the printed difference, e.g. k_a/n_a − k_b/n_b) the result is a
    `DifferenceInterval` (it unpacks as (lo, hi)) that contains it: the equal-tailed
    interval, or where that excludes the estimate the one-sided interval on its side with
    credibility exactly `level`, plus the posterior median (`ix.stats.difference`).

    The CDF P(θ_A − θ_B ≤ d) = ∫ f_A(x) P(θ_B ≥ x − d) dx is integrated by adaptive
    quadrature (split where the integrand bends) and inverted with brentq at (1 ± level)/2;
    endpoints are accurate to ~1e-10 (~1e-8 with priors below 1, whose densities are
    singular). Always within [−1, 1]. Raises ValueError on bad counts, prior or level
    (0 < level < 1).
    """
    a_a, b_a = _posterior(k_a, n_a, prior, "A")
    a_b, b_b = _posterior(k_b, n_b, prior, "B")
    if estimate is not None:
        return _containing(_diff_cdf(a_a, b_a, a_b, b_b), estimate, level)
    return _invert(_diff_cdf(a_a, b_a, a_b, b_b), level)


def _table(both: int, a_only: int, b_only: int, neither: int) -> tuple[int, int, int, int]:
    counts = (both, a_only, b_only, neither)
    if any(int(c) != c or c < 0 for c in counts):
        raise ValueError(f"2x2 counts must be non-negative integers, got {counts}")
    s, t, u, v = (int(c) for c in counts)
    return s, t, u, v


def _model(model: str) -> PairedModel:
    if model not in ("dirichlet", "probit"):
        raise ValueError(f"unknown paired model {model!r}; allowed: 'dirichlet', 'probit'")
    return "dirichlet" if model == "dirichlet" else "probit"


def paired_prob_a_beats_b(both: int, a_only: int, b_only: int, neither: int,
                          model: PairedModel = "dirichlet") -> float:
    """P(θ_A > θ_B) from a paired 2×2 table (S, T, U, V) = (both, a_only, b_only, neither).

    "dirichlet": posterior Dir(S+1, T+1, U+1, V+1) over the cells (uniform prior);
    θ_A − θ_B = p_T − p_U and p_T/(p_T + p_U) ~ Beta(T+1, U+1) independently of the rest, so
    P(θ_A > θ_B) = P(Beta(T+1, U+1) > ½) = I_½(U+1, T+1), exactly; S and V do not enter.
    T = U gives ½. "probit": the latent bivariate-probit model of Bowyer et al. 2025 §3.4
    (`ix.stats.paired_probit`), by quadrature. Raises ValueError on negative or non-integer
    counts or an unknown model.
    """
    s, t, u, v = _table(both, a_only, b_only, neither)
    if _model(model) == "probit":
        return probit_prob_a_beats_b(s, t, u, v)
    return float(special.betainc(u + 1.0, t + 1.0, 0.5))


def _dirichlet_diff_cdf(s: int, t: int, u: int, v: int) -> Callable[[float], float]:
    """d ↦ P(p_T − p_U ≤ d) under Dir(S+1, T+1, U+1, V+1).

    With σ = p_T + p_U ~ Beta(T+U+2, S+V+2) and r = p_T/σ ~ Beta(T+1, U+1) independent,
    p_T − p_U = σ(2r − 1), so P(D ≤ d) = ∫ f_σ(σ) F_r((1 + d/σ)/2) dσ, where F_r is 1 above 1
    (σ ≤ d) and 0 below 0 (σ ≤ −d).
    """
    a_s, b_s = t + u + 2.0, s + v + 2.0
    a_r, b_r = t + 1.0, u + 1.0

    def cdf(d: float) -> float:
        if d <= -1.0:
            return 0.0
        if d >= 1.0:
            return 1.0
        if d == 0.0:  # P(r ≤ ½) = I_½(T+1, U+1): exact, and a goal at min_effect 0 asks it
            return float(special.betainc(a_r, b_r, 0.5))

        def given_sigma(sigma: float, _: float) -> float:
            x = min(max(0.5 * (1.0 + d / sigma), 0.0), 1.0)
            return float(special.betainc(a_r, b_r, x))

        value = _expectation(given_sigma, a_s, b_s, [abs(d)])
        return min(max(value, 0.0), 1.0)

    return cdf


def paired_diff_cdf(both: int, a_only: int, b_only: int, neither: int, d: float,
                    model: PairedModel = "dirichlet") -> float:
    """P(θ_A − θ_B ≤ d) from a paired 2×2 table (S, T, U, V) = (both, a_only, b_only, neither).

    "dirichlet": θ_A − θ_B = p_T − p_U under Dir(S+1, T+1, U+1, V+1); with
    σ = p_T + p_U ~ Beta(T+U+2, S+V+2) independent of r = p_T/σ ~ Beta(T+1, U+1),
    P(p_T − p_U ≤ d) = ∫ f_σ(σ) I_{(1 + d/σ)/2}(T+1, U+1) dσ by 1-D quadrature (~1e-10).
    At d = 0 the Dirichlet CDF is P(r ≤ ½) = I_½(T+1, U+1), exactly (1 − `paired_prob_a_beats_b`).
    "probit": the bivariate-probit grid of `ix.stats.paired_probit` (~1e-6). These are the
    CDFs that `paired_diff_interval` inverts.
    d ≤ −1 gives 0, d ≥ 1 gives 1. Raises ValueError on bad counts, model or d = NaN.
    """
    s, t, u, v = _table(both, a_only, b_only, neither)
    point = _point(d)
    if _model(model) == "probit":
        return probit_diff_cdf(s, t, u, v, point)
    return _dirichlet_diff_cdf(s, t, u, v)(point)


def paired_diff_cdf_bounds(both: int, a_only: int, b_only: int, neither: int,
                           d: float) -> Bounds:
    """Bounds (lo, hi) on the Dirichlet `paired_diff_cdf(S, T, U, V, d)`, < 0.03 apart,
    without quadrature: P(D ≤ d) = E_σ[I_{(1 + d/σ)/2}(T+1, U+1)] with σ ~
    Beta(T+U+2, S+V+2), whose integrand is monotone in σ (`_monotone_bounds`)."""
    s, t, u, v = _table(both, a_only, b_only, neither)
    point = _point(d)

    def given_sigma(sigma: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(sigma > 0.0, 0.5 * (1.0 + point / sigma), 0.5 * (1.0 + np.sign(point)))
        return special.betainc(t + 1.0, u + 1.0, np.clip(x, 0.0, 1.0))

    return _monotone_bounds(given_sigma, t + u + 2.0, s + v + 2.0)


@overload
def paired_diff_interval(both: int, a_only: int, b_only: int, neither: int,
                         level: float = ..., model: PairedModel = ...,
                         estimate: None = None) -> tuple[float, float]: ...
@overload
def paired_diff_interval(both: int, a_only: int, b_only: int, neither: int,
                         level: float = ..., model: PairedModel = ..., *,
                         estimate: float) -> DifferenceInterval: ...
def paired_diff_interval(both: int, a_only: int, b_only: int, neither: int,
                         level: float = 0.95,
                         model: PairedModel = "dirichlet",
                         estimate: float | None = None,
                         ) -> tuple[float, float] | DifferenceInterval:
    """Equal-tailed credible interval of θ_A − θ_B from a paired 2×2 table.

    With `estimate` (the observed (T − U)/n): a `DifferenceInterval` that contains it (see
    `diff_interval`), for either model.

    "dirichlet": the exact distribution of p_T − p_U under Dir(S+1, T+1, U+1, V+1), by 1-D
    quadrature (σ = p_T + p_U ~ Beta(T+U+2, S+V+2) and p_T/σ ~ Beta(T+1, U+1) independent)
    inverted with brentq; endpoints accurate to ~1e-10. "probit": the bivariate-probit
    model (`ix.stats.paired_probit`). Within [−1, 1]. Raises ValueError on bad counts, level
    or model.
    """
    s, t, u, v = _table(both, a_only, b_only, neither)
    if estimate is not None:
        if _model(model) == "probit":
            return _containing(lambda d: probit_diff_cdf(s, t, u, v, d), estimate, level)
        return _containing(_dirichlet_diff_cdf(s, t, u, v), estimate, level)
    if _model(model) == "probit":
        return probit_diff_interval(s, t, u, v, level=level)
    return _invert(_dirichlet_diff_cdf(s, t, u, v), level)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of T = a_only out of T + U at ½.

    p = min(1, 2·P(X ≤ min(T, U))), X ~ Bin(T + U, ½) — the distribution is symmetric, so this
    equals `scipy.stats.binomtest(T, T + U, 0.5).pvalue`. Only the discordant pairs count.
    1.0 when T = U = 0. Raises ValueError on negative or non-integer counts.
    """
    if any(int(c) != c or c < 0 for c in (a_only, b_only)):
        raise ValueError(f"counts must be non-negative integers, got {(a_only, b_only)}")
    t, u = int(a_only), int(b_only)
    if t == u:
        return 1.0
    return min(1.0, 2.0 * float(special.bdtr(min(t, u), t + u, 0.5)))
