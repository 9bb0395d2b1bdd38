"""The latent bivariate-probit model of paired 0/1 outcomes, by deterministic quadrature.

Bowyer, Aitchison & Ivanova 2025, §3.4. Two subjects A and B answer the same n cases; the 2×2
table counts S (both solve), T (A only), U (B only) and V (neither). Model:
θ_A, θ_B ~ U(0, 1) independently, ρ ~ 2·Beta(4, 2) − 1; a case draws latent (z_A, z_B),
standard bivariate normal with correlation ρ; A solves it iff z_A < Φ⁻¹(θ_A), likewise B. The
cells are p_S = Φ₂(Φ⁻¹θ_A, Φ⁻¹θ_B; ρ), p_T = θ_A − p_S, p_U = θ_B − p_S,
p_V = 1 − θ_A − θ_B + p_S, and (S, T, U, V) is multinomial.

`bayes_evals` estimates this posterior with 10k importance samples from the prior, which is
noisy above n ≈ 100 (the posterior is far narrower than the prior). Here the 3-D integral is
done by product quadrature on a grid *centred and scaled on the posterior*: coordinates
(m, e, z) = ((logit θ_A + logit θ_B)/2, logit θ_A − logit θ_B, atanh ρ) are unconstrained and
smooth, the grid is placed by a Laplace fit (Newton mode, finite-difference Hessian, Cholesky
with e after m), each axis is stretched by sinh so that it reaches ±20 posterior standard
deviations with fine spacing in the middle, and m and z use Gauss–Legendre nodes while e
uses Chebyshev nodes so that the marginal CDF of θ_A − θ_B can be integrated exactly between
nodes. θ_A > θ_B exactly when e > 0, and θ_A − θ_B ≤ d exactly when e ≤ e*(m, d), which has
a closed form, so the probability and the interval come from one grid without smoothing
an indicator. Deterministic; about 0.05 s per table (cached per table).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, TypeAlias

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    from numpy.polynomial import chebyshev as cheb
    from numpy.typing import ArrayLike, NDArray
    from scipy import special
else:
    np = lazy("numpy")
    cheb = lazy("numpy.polynomial.chebyshev")
    special = lazy("scipy.special")

optimize = lazy("scipy.optimize")  # slow to import; most callers never need it

__all__ = ["bivariate_normal_cdf", "probit_diff_cdf", "probit_diff_interval",
           "probit_prob_a_beats_b"]

FloatArray: TypeAlias = "NDArray[np.float64]"

#: Grid size (m: Gauss–Legendre, e: Chebyshev, z: Gauss–Legendre). CDF values agree with a
#: grid three times as fine to ~1e-6 (tests check a grid twice as fine).
NODES: tuple[int, int, int] = (48, 64, 48)
#: Each axis reaches ±_REACH Laplace standard deviations (sinh-stretched).
_REACH = 20.0
#: Below this, a coordinate is treated as its limit from above (Φ₂ is continuous there).
_TINY = 1e-200


def bivariate_normal_cdf(h: ArrayLike, k: ArrayLike, rho: ArrayLike) -> FloatArray:
    """Φ₂(h, k; ρ) = P(Z₁ ≤ h, Z₂ ≤ k) for standard normals with correlation ρ, vectorised.

    Owen's (1956) identity: Φ₂ = ½Φ(h) + ½Φ(k) − T(h, a_h) − T(k, a_k) − β, with Owen's T
    (`scipy.special.owens_t`), a_h = (k − ρh)/(h√(1−ρ²)), a_k = (h − ρk)/(k√(1−ρ²)), and
    β = ½ when h and k have opposite signs, else 0. h = 0 or k = 0 is evaluated as the limit
    from above (exact to ~1e-200; Φ₂ is continuous); ρ = 1 gives Φ(min(h, k)) and ρ = −1 gives
    max(0, Φ(h) + Φ(k) − 1). Infinite h or k give the marginal limits. Absolute accuracy
    ~1e-15. Raises ValueError if |ρ| > 1.
    """
    h_, k_, r_ = np.broadcast_arrays(np.asarray(h, float), np.asarray(k, float),
                                     np.asarray(rho, float))
    if np.any(np.abs(r_) > 1):
        raise ValueError("rho must lie in [-1, 1]")
    out = np.empty(h_.shape)
    inner = np.abs(r_) < 1
    hi, ki = np.clip(h_[inner], -40.0, 40.0), np.clip(k_[inner], -40.0, 40.0)
    z = np.arctanh(r_[inner])
    out[inner] = _cells(hi, ki, z, special.ndtr(hi), special.ndtr(ki))[0]
    up = r_ == 1
    out[up] = special.ndtr(np.minimum(h_[up], k_[up]))
    down = r_ == -1
    out[down] = np.maximum(0.0, special.ndtr(h_[down]) - special.ndtr(-k_[down]))
    result: FloatArray = np.clip(out, 0.0, 1.0)
    return result


def _cells(h: FloatArray, k: FloatArray, z: FloatArray, phi_h: FloatArray,
           phi_k: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(p_S, p_T, p_U, p_V) for thresholds h, k and ρ = tanh z, from two Owen's T calls.

    With s = √(1−ρ²) and 1 − |ρ| computed from z without cancellation, all four cells share
    T(h, a_h) and T(k, a_k): p_V = Φ₂(−h, −k; ρ), p_T = Φ₂(h, −k; −ρ), p_U = Φ₂(−h, k; −ρ).
    """
    # 0 and the subnormals (whose h·s underflows to 0, a 0/0 below) as the nearest of ±_TINY
    h = np.where(np.abs(h) < _TINY, np.where(h < 0, -_TINY, _TINY), h)
    k = np.where(np.abs(k) < _TINY, np.where(k < 0, -_TINY, _TINY), k)
    q = np.exp(-2.0 * np.abs(z))
    s = 2.0 * np.sqrt(q) / (1.0 + q)              # √(1−ρ²) = sech z
    gap = 2.0 * q / (1.0 + q)                      # 1 − |ρ|
    sign = np.where(z >= 0, 1.0, -1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a_h = ((k - sign * h) + sign * gap * h) / (h * s)
        a_k = ((h - sign * k) + sign * gap * k) / (k * s)
    t = special.owens_t(h, a_h) + special.owens_t(k, a_k)
    same = np.where((h > 0) == (k > 0), 0.0, 0.5)
    other = 0.5 - same
    p_s = 0.5 * (phi_h + phi_k) - t - same
    p_v = 0.5 * ((1.0 - phi_h) + (1.0 - phi_k)) - t - same
    p_t = 0.5 * (phi_h + (1.0 - phi_k)) + t - other
    p_u = 0.5 * ((1.0 - phi_h) + phi_k) + t - other
    return p_s, p_t, p_u, p_v


def _log_posterior(counts: tuple[int, int, int, int]) -> Callable[[FloatArray], FloatArray]:
    """Unnormalised log posterior density in (m, e, z); the last axis of x holds (m, e, z)."""
    n_s, n_t, n_u, n_v = counts

    def logpost(x: FloatArray) -> FloatArray:
        m, e, z = x[..., 0], x[..., 1], x[..., 2]
        return _log_density(m, e, z, n_s, n_t, n_u, n_v)

    return logpost


def _log_density(m: ArrayLike, e: ArrayLike, z: ArrayLike, n_s: int, n_t: int, n_u: int,
                 n_v: int) -> FloatArray:
    a = np.asarray(m) + 0.5 * np.asarray(e)
    b = np.asarray(m) - 0.5 * np.asarray(e)
    zz = np.asarray(z, float)
    la, lna = special.log_expit(a), special.log_expit(-a)
    lb, lnb = special.log_expit(b), special.log_expit(-b)
    h, k = special.ndtri_exp(la), special.ndtri_exp(lb)
    p_s, p_t, p_u, p_v = _cells(h, k, zz, np.exp(la), np.exp(lb))
    loglik = (special.xlogy(n_s, np.maximum(p_s, 0.0)) + special.xlogy(n_t, np.maximum(p_t, 0.0))
              + special.xlogy(n_u, np.maximum(p_u, 0.0)) + special.xlogy(n_v, np.maximum(p_v, 0.0)))
    # uniform θ_A, θ_B in logit coordinates; ρ = tanh z with (1+ρ)/2 ~ Beta(4, 2)
    prior = (la + lna + lb + lnb + 4.0 * special.log_expit(2.0 * zz)
             + 2.0 * special.log_expit(-2.0 * zz))
    out: FloatArray = np.where(np.isnan(loglik), -np.inf, loglik + prior)
    return out


def _stencil(logpost: Callable[[FloatArray], FloatArray], x: FloatArray,
             basis: FloatArray) -> tuple[float, FloatArray, FloatArray]:
    """Value, gradient and Hessian of t ↦ logpost(x + basis·t) at t = 0 by central differences."""
    d = len(x)
    offsets = [np.zeros(d)]
    for i in range(d):
        for sgn in (1.0, -1.0):
            offsets.append(sgn * np.eye(d)[i])
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    for i, j in pairs:
        for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            offsets.append(si * np.eye(d)[i] + sj * np.eye(d)[j])
    pts = x + np.asarray(offsets) @ basis.T
    f = logpost(pts)
    f0 = float(f[0])
    grad = np.array([(f[1 + 2 * i] - f[2 + 2 * i]) / 2.0 for i in range(d)])
    hess = np.empty((d, d))
    for i in range(d):
        hess[i, i] = f[1 + 2 * i] - 2.0 * f0 + f[2 + 2 * i]
    base = 1 + 2 * d
    for n, (i, j) in enumerate(pairs):
        fpp, fpm, fmp, fmm = f[base + 4 * n: base + 4 * n + 4]
        hess[i, j] = hess[j, i] = (fpp - fpm - fmp + fmm) / 4.0
    return f0, grad, hess


def laplace_fit(logpost: Callable[[FloatArray], FloatArray],
                x0: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Mode and covariance (−Hessian⁻¹) of a smooth log density, by damped Newton.

    Shared with `ix.stats.clustered`. Deterministic: finite differences with step 1e-4, then
    the Hessian is re-measured along the fitted axes with steps of 0.1 standard deviation.
    """
    x = np.asarray(x0, float).copy()
    d = len(x)
    step = 1e-4 * np.eye(d)
    f, g, hm = _stencil(logpost, x, step)
    for _ in range(200):
        g, hm = g / 1e-4, hm / 1e-8
        w, v = np.linalg.eigh(-hm)
        w = np.maximum(np.abs(w), 1e-8 * max(1.0, float(np.max(np.abs(w)))))
        p = v @ ((v.T @ g) / w)
        biggest = float(np.max(np.abs(p)))
        if biggest > 2.0:
            p *= 2.0 / biggest
        decrement = float(g @ p)
        t = 1.0
        while t > 1e-12:
            f_new = float(logpost(x + t * p))
            if f_new >= f - 1e-12 * (1.0 + abs(f)):
                break
            t /= 2.0
        x = x + t * p
        f, g, hm = _stencil(logpost, x, step)
        if decrement < 1e-12 and t == 1.0:
            break
    cov = _covariance(hm / 1e-8)
    # re-measure the curvature along the fitted axes, 0.1 sd apart
    basis = np.asarray(0.1 * np.linalg.cholesky(cov), dtype=float)
    _, _, hw = _stencil(logpost, x, basis)
    inv = np.linalg.inv(basis)
    return x, _covariance(inv.T @ hw @ inv)


def _covariance(hess: FloatArray) -> FloatArray:
    """(−H)⁻¹, with non-positive curvatures replaced by a small positive one."""
    w, v = np.linalg.eigh(-(hess + hess.T) / 2.0)
    w = np.maximum(w, 1e-10 * max(1.0, float(np.max(np.abs(w)))))
    cov: FloatArray = (v / w) @ v.T
    return cov


@lru_cache(maxsize=16)
def sinh_nodes(n: int, reach: float, kind: str) -> tuple[FloatArray, FloatArray, float]:
    """Nodes u on [−U, U] (U = asinh reach), τ = sinh u, and weights including cosh u.

    kind "legendre": Gauss–Legendre weights; "chebyshev": first-kind Chebyshev points, weights
    cosh u only (the caller interpolates). Shared with `ix.stats.clustered`. Made once per
    (n, reach, kind) and read-only: Gauss–Legendre nodes take an eigenvalue problem each (a
    summary asks for the same few a dozen times).
    """
    big_u = math.asinh(reach)
    if kind == "legendre":
        x, w = np.polynomial.legendre.leggauss(n)
        w = w * big_u
    else:
        x = np.cos(np.pi * (np.arange(n) + 0.5) / n)
        w = np.ones(n)
    u = big_u * x
    nodes, weights = np.sinh(u), w * np.cosh(u)
    nodes.flags.writeable = weights.flags.writeable = False  # cached: shared by every caller
    return nodes, weights, big_u


def chebyshev_coefficients(values: FloatArray) -> FloatArray:
    """Coefficients (along the last axis) interpolating values at first-kind Chebyshev points."""
    n = values.shape[-1]
    j = np.arange(n) + 0.5
    basis = np.cos(np.pi * np.outer(np.arange(n), j) / n) * (2.0 / n)
    basis[0] /= 2.0
    coef: FloatArray = values @ basis.T
    return coef


@dataclass(frozen=True)
class _Grid:
    m: FloatArray           # (N1,) m at the outer nodes
    w1: FloatArray          # (N1,) outer weights
    e0: FloatArray          # (N1,) e at τ₂ = 0 for each outer node
    e_scale: float          # ∂e/∂τ₂
    big_u: float            # u range of the Chebyshev axis
    cumulative: FloatArray  # Chebyshev coefficients of ∫_{−U}^{u} (…) du, shape (N2+1, N1)
    total: float

    def cdf(self, d: float) -> float:
        """P(θ_A − θ_B ≤ d)."""
        if d <= -1.0:
            return 0.0
        if d >= 1.0:
            return 1.0
        tau = (_logit_gap(self.m, d) - self.e0) / self.e_scale
        u = np.clip(np.arcsinh(tau), -self.big_u, self.big_u) / self.big_u
        inner = cheb.chebval(u, self.cumulative, tensor=False)
        return float(np.clip(self.w1 @ inner / self.total, 0.0, 1.0))


def _logit_gap(m: FloatArray, d: float) -> FloatArray:
    """e*(m, d): the e at which expit(m + e/2) − expit(m − e/2) = d (closed form, |d| < 1).

    With B = exp(e/2) and c = 2 cosh m: (1 − d)B² − d·c·B − (1 + d) = 0; the positive root is
    taken in the form that avoids cancellation.
    """
    c = 2.0 * np.cosh(m)
    root = np.sqrt(d * d * c * c + 4.0 * (1.0 - d * d))
    # the positive root; for d < 0 in the form without cancellation
    big_b = (d * c + root) / (2.0 * (1.0 - d)) if d >= 0 else 2.0 * (1.0 + d) / (root - d * c)
    out: FloatArray = 2.0 * np.log(big_b)
    return out


def _start(counts: tuple[int, int, int, int]) -> FloatArray:
    n_s, n_t, n_u, n_v = (c + 0.5 for c in counts)
    n = n_s + n_t + n_u + n_v
    a = float(special.logit((n_s + n_t) / n))
    b = float(special.logit((n_s + n_u) / n))
    phi = (n_s * n_v - n_t * n_u) / math.sqrt((n_s + n_t) * (n_u + n_v) * (n_s + n_u)
                                              * (n_t + n_v))
    return np.array([(a + b) / 2.0, a - b, math.atanh(min(max(phi, -0.9), 0.9))])


@lru_cache(maxsize=64)
def _grid(counts: tuple[int, int, int, int], nodes: tuple[int, int, int] = NODES) -> _Grid:
    logpost = _log_posterior(counts)
    mode, cov = laplace_fit(logpost, _start(counts))
    chol = np.linalg.cholesky(cov)
    t1, w1, _ = sinh_nodes(nodes[0], _REACH, "legendre")
    t2, c2, big_u = sinh_nodes(nodes[1], _REACH, "chebyshev")
    t3, w3, _ = sinh_nodes(nodes[2], _REACH, "legendre")
    m = mode[0] + chol[0, 0] * t1
    e0 = mode[1] + chol[1, 0] * t1
    e = e0[:, None] + chol[1, 1] * t2[None, :]
    z = (mode[2] + chol[2, 0] * t1[:, None, None] + chol[2, 1] * t2[None, :, None]
         + chol[2, 2] * t3[None, None, :])
    n_s, n_t, n_u, n_v = counts
    logp = _log_density(m[:, None, None], e[:, :, None], z, n_s, n_t, n_u, n_v)
    dens = np.exp(logp - np.max(logp))
    slab = (dens @ w3) * c2[None, :]                 # ∫ dz, times the Jacobian of u₂
    coef = chebyshev_coefficients(slab)              # (N1, N2) along u₂/U ∈ [−1, 1]
    cumulative: FloatArray = np.asarray(cheb.chebint(coef.T, lbnd=-1, scl=big_u), dtype=float)
    total = float(w1 @ cheb.chebval(1.0, cumulative))
    return _Grid(m=m, w1=w1, e0=e0, e_scale=float(chol[1, 1]), big_u=big_u,
                 cumulative=cumulative, total=total)


def _check(both: int, a_only: int, b_only: int, neither: int) -> tuple[int, int, int, int]:
    counts = (both, a_only, b_only, neither)
    for c in counts:
        if int(c) != c or c < 0:
            raise ValueError(f"counts must be non-negative integers, got {counts}")
    s, t, u, v = (int(c) for c in counts)
    return s, t, u, v


def probit_prob_a_beats_b(both: int, a_only: int, b_only: int, neither: int) -> float:
    """P(θ_A > θ_B | S, T, U, V) under the paper's bivariate-probit model (§3.4), by quadrature.

    θ_A > θ_B ⟺ logit θ_A − logit θ_B > 0, integrated on the posterior-centred grid described
    in the module docstring (accurate to ~1e-6). All-zero counts give the prior value ½.
    Swapping A and B (and T with U) gives 1 − p. Raises ValueError on negative or
    non-integer counts.
    """
    grid = _grid(_check(both, a_only, b_only, neither))
    return 1.0 - grid.cdf(0.0)


def probit_diff_cdf(both: int, a_only: int, b_only: int, neither: int, d: float) -> float:
    """P(θ_A − θ_B ≤ d | S, T, U, V) under the bivariate-probit model (§3.4), by quadrature.

    θ_A − θ_B ≤ d ⟺ logit θ_A − logit θ_B ≤ e*(m, d) (closed form), integrated exactly in e
    on the posterior-centred grid of the module docstring (accurate to ~1e-6, so monotone in
    d only to that accuracy: far tails wiggle by ~1e-8; cached per table). It is the CDF that
    `probit_diff_interval` inverts, and 1 − cdf(0) = `probit_prob_a_beats_b`. d ≤ −1 gives 0,
    d ≥ 1 gives 1. Raises ValueError on negative or non-integer counts or
    d = NaN.
    """
    if math.isnan(d):
        raise ValueError("d must be a number, got nan")
    return _grid(_check(both, a_only, b_only, neither)).cdf(float(d))


def probit_diff_interval(both: int, a_only: int, b_only: int, neither: int,
                         level: float = 0.95) -> tuple[float, float]:
    """Equal-tailed credible interval of θ_A − θ_B under the bivariate-probit model.

    The marginal CDF of θ_A − θ_B is integrated on the posterior-centred grid (module
    docstring) and inverted with brentq at (1 ± level)/2. Raises ValueError unless
    0 < level < 1 and the counts are non-negative integers.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    grid = _grid(_check(both, a_only, b_only, neither))
    tail = (1.0 - level) / 2.0

    lo = optimize.brentq(lambda d: grid.cdf(d) - tail, -1.0, 1.0, xtol=1e-12)
    hi = optimize.brentq(lambda d: grid.cdf(d) - (1.0 - tail), -1.0, 1.0, xtol=1e-12)
    return float(lo), float(hi)
