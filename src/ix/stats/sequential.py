"""When to stop adding trials: the posterior predictive of a case's final majority vote, and
the exact behaviour of `trials: auto`'s stopping rule (its paths, stopping distribution,
unbiased estimators under it, and its per-case error)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ix._lazy import lazy
from ix.stats.tails import binom_sf

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")

special = lazy("scipy.special")


def majority_vote_probability(k: int, n: int, total: int, threshold: float = 0.5,
                              prior: tuple[float, float] = (1.0, 1.0)) -> float:
    """P(the majority vote after `total` trials activates | k of the first n passed).

    The vote activates when the final rate exceeds `threshold` (strictly, as the summary's
    majority vote does). The remaining m = total − n trials are Beta-binomial under the
    posterior Beta(k+a, n−k+b): P = Σ_{x : (k+x)/total > threshold} C(m, x)·B(x+α, m−x+β)/B(α, β).
    Exact, in log space; 0 or 1 once n = total. A case whose probability is ≥ c or ≤ 1 − c has
    its vote settled at credibility c: more trials would change it with probability < 1 − c.
    """
    if not (0 <= k <= n <= total) or total < 1:
        raise ValueError(f"need whole numbers 0 <= k <= n <= total, total >= 1; got "
                         f"k={k!r}, n={n!r}, total={total!r}")
    a, b = prior[0] + k, prior[1] + n - k
    if a <= 0 or b <= 0:
        raise ValueError(f"prior parameters must be positive, got {prior!r}")
    m = total - n
    log_norm = _lbeta(a, b)
    p = 0.0
    for x in range(m + 1):
        if (k + x) / total > threshold:
            p += math.exp(math.log(math.comb(m, x)) + _lbeta(x + a, m - x + b) - log_norm)
    return min(max(p, 0.0), 1.0)


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


# ------------------------------------------------------------ the stopping rule's paths


@dataclass(frozen=True)
class StoppingRule:
    """`trials: auto`'s rule: after each trial from `min_trials` on, a case stops once its
    vote after `max_trials` is settled at `credibility` (`majority_vote_probability` ≥ c or
    ≤ 1 − c), and at `max_trials` in any case. Trials here are valid ones (no errors)."""

    min_trials: int
    max_trials: int
    credibility: float = 0.95

    def __post_init__(self) -> None:
        if not 1 <= self.min_trials <= self.max_trials:
            raise ValueError(f"need 1 <= min_trials <= max_trials; got {self.min_trials}, "
                             f"{self.max_trials}")
        if not 0.5 < self.credibility < 1:
            raise ValueError(f"credibility must lie in (0.5, 1); got {self.credibility}")

    def stops(self, k: int, n: int) -> bool:
        """Whether a case with `k` passes in its first `n` trials gets no more."""
        if n < self.min_trials:
            return False
        if n >= self.max_trials:
            return True
        p = majority_vote_probability(k, n, self.max_trials)
        return p >= self.credibility or p <= 1 - self.credibility


@lru_cache(maxsize=64)
def _stop_table(rule: StoppingRule) -> np.ndarray:
    """stop[n, k]: the rule stops at k passes of n trials (n = 0 .. max_trials)."""
    top = rule.max_trials
    table = np.zeros((top + 1, top + 1), dtype=bool)
    for n in range(rule.min_trials, top + 1):
        for k in range(n + 1):
            table[n, k] = rule.stops(k, n)
    return table


@lru_cache(maxsize=256)
def path_counts(rule: StoppingRule, start: tuple[int, int] = (0, 0)) -> np.ndarray:
    """counts[n, k]: the number of pass/fail sequences that continue a case from `start`
    (n0 trials, k0 passes; n0 ≤ min_trials) and stop at k passes of n trials.

    Every sequence that stops at (n, k) has probability θ^k (1 − θ)^(n − k), so these counts
    give the rule's exact stopping distribution at any θ (`stopping_distribution`) and, by
    conditioning on where a case stopped, unbiased estimators (`unbiased_first_k`). Floats:
    exact up to 2^53, then relative error 1e-16.
    """
    n0, k0 = start
    if not 0 <= k0 <= n0 <= rule.min_trials:
        raise ValueError(f"start must be (n0, k0) with 0 <= k0 <= n0 <= min_trials; got {start}")
    top = rule.max_trials
    stop = _stop_table(rule)
    out = np.zeros((top + 1, top + 1))
    alive = np.zeros(top + 2)
    alive[k0] = 1.0
    for n in range(n0, top + 1):
        ended = alive[:n + 1] * stop[n, :n + 1]
        out[n, :n + 1] = ended
        alive[:n + 1] -= ended
        alive[1:n + 2] += alive[:n + 1].copy()   # a pass moves k up; a fail keeps it
    out.flags.writeable = False
    return out


def stopping_distribution(rule: StoppingRule, theta: float) -> np.ndarray:
    """prob[n, k]: the probability that a case of true rate θ stops at k passes of n trials."""
    top = rule.max_trials
    n = np.arange(top + 1)[:, None]
    k = np.arange(top + 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(k <= n, theta ** k * (1 - theta) ** np.maximum(n - k, 0), 0.0)
    return np.asarray(path_counts(rule) * weight)


def unbiased_first_k(rule: StoppingRule, passes: int, trials: int, k: int,
                     outcome: bool = True) -> float:
    """E[all of the first k trials passed (outcome=True) or failed (False) | the case stopped
    at `passes` of `trials`]: an exactly unbiased estimator of θ^k (or (1 − θ)^k) under the
    rule, for k ≤ min_trials (the first k trials are always observed).

    Rao–Blackwell: given where the case stopped, every sequence that leads there is equally
    likely, so the estimate is the share of them whose first k trials all went that way.
    nan when no sequence of the rule stops there (the case did not follow it).
    """
    if not 1 <= k <= rule.min_trials:
        raise ValueError(f"need 1 <= k <= min_trials ({rule.min_trials}); got k={k}")
    if not 0 <= passes <= trials <= rule.max_trials:
        return math.nan
    total = path_counts(rule)[trials, passes]
    if total == 0:
        return math.nan
    first = path_counts(rule, (k, k if outcome else 0))[trials, passes]
    return float(first / total)


def early_vote_error(rule: StoppingRule, theta: float) -> float:
    """P(a case of true rate θ stops early with a majority vote (rate > ½) that differs from
    the vote it would have had after max_trials): the rule's per-case error, exactly."""

    top = rule.max_trials
    prob = stopping_distribution(rule, theta)
    error = 0.0
    for n in range(rule.min_trials, top):
        for k in range(n + 1):
            if prob[n, k] == 0:
                continue
            early = k / n > 0.5
            need = math.floor(top / 2) + 1 - k   # passes still needed for a final majority
            final_yes = float(binom_sf(need - 1, top - n, theta)) if need > 0 else 1.0
            error += prob[n, k] * (1 - final_yes if early else final_yes)
    return error


def unbiased_first_k_cases(rule: StoppingRule, passes: np.ndarray, trials: np.ndarray, k: int,
                           outcome: bool = True) -> np.ndarray:
    """`unbiased_first_k` for many cases at once (looked up per distinct (passes, trials));
    nan for a case whose counts no sequence of the rule stops at."""
    passes = np.asarray(passes, dtype=np.int64)
    trials = np.asarray(trials, dtype=np.int64)
    out = np.full(passes.shape, np.nan)
    if passes.size == 0:
        return out
    top = int(trials.max()) + 1
    keys, inverse = np.unique(trials * top + passes, return_inverse=True)
    values = np.array([unbiased_first_k(rule, int(key % top), int(key // top), k, outcome)
                       for key in keys])
    out[:] = values[inverse.ravel()]
    return out


def flip_probability(passes: np.ndarray, trials: np.ndarray, threshold: float = 0.5,
                     prior: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
    """Per case, P(the majority vote would flip with unlimited further trials | k of n passed).

    The vote now activates when k/n > threshold (ties do not); with unlimited trials it
    activates when the case's rate θ > threshold. Under the posterior Beta(k + a, n − k + b)
    the probability of the other answer is P(θ ≤ threshold) for an activated vote, else
    P(θ > threshold): the limit of `majority_vote_probability` as `total` grows. Exact
    (regularised incomplete beta), vectorised; NaN for a case with no trials. A case above
    0.2 is "unsettled" in the summary. Raises ValueError unless 0 ≤ k ≤ n are integers,
    0 < threshold < 1 and the prior is positive.
    """
    k = np.asarray(passes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if k.shape != n.shape or np.any(k != np.round(k)) or np.any(n != np.round(n)) \
            or np.any(k < 0) or np.any(k > n):
        raise ValueError("need integer arrays of one shape with 0 <= passes <= trials")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold!r}")
    a, b = float(prior[0]), float(prior[1])
    if not (a > 0 and b > 0):
        raise ValueError(f"prior parameters must be positive, got {prior!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        below = special.betainc(k + a, n - k + b, threshold)          # P(θ ≤ threshold)
        out = np.where(k / np.where(n > 0, n, 1) > threshold, below, 1.0 - below)
    return np.asarray(np.where(n > 0, out, np.nan), dtype=float)


# ------------------------------------------------- goal-level looks (`stop: goal`, STATS.md §15)


def repeated_crossing(z: float, looks: int) -> float:
    """P(max_k Z_k ≥ z) over `looks` equally spaced looks at a statistic that is N(0, 1) at
    each look with the correlation of cumulative sums (Z_k = S_k/√k, S a Gaussian random
    walk): the chance that a one-sided test at critical value z rejects at some look under
    the null. Computed by the recursion of Armitage, McPherson & Rowe (1969) on a grid of
    step 0.01 (the density of S_k kept below z√k, convolved with N(0, 1)); its critical
    values agree with Pocock's tables to ~0.002. At one look it is 1 − Φ(z)."""
    if looks < 1:
        raise ValueError(f"looks must be at least 1; got {looks!r}")
    if looks == 1:
        return float(special.ndtr(-z))
    xs, kernel = _walk_grid(looks)
    mass = np.where(xs < z, np.exp(-0.5 * xs * xs) / math.sqrt(2 * math.pi) * _STEP, 0.0)
    for k in range(2, looks + 1):
        mass = np.where(xs < z * math.sqrt(k), kernel @ mass, 0.0)
    return float(min(1.0, max(0.0, 1.0 - mass.sum())))


_STEP = 0.01


@lru_cache(maxsize=4)
def _walk_grid(looks: int) -> tuple[np.ndarray, np.ndarray]:
    """The grid of S_k's values (−8√K to 4√K) and the N(0, 1) step between them."""
    root = math.sqrt(looks)
    xs = np.arange(-8.0 * root, 4.0 * root, _STEP)
    d = xs[:, None] - xs[None, :]
    return xs, np.exp(-0.5 * d * d) / math.sqrt(2 * math.pi) * _STEP


@lru_cache(maxsize=64)
def pocock_critical(alpha: float, looks: int) -> float:
    """The constant critical value z of a one-sided Pocock (1977) design: rejecting when
    Z_k ≥ z at any of `looks` equally spaced looks has probability `alpha` under the null
    (`repeated_crossing`). At one look it is Φ⁻¹(1 − alpha); two-sided 0.05 (one-sided
    0.025) at five looks gives Pocock's 2.413."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5); got {alpha!r}")
    ndtri = special.ndtri
    low, high = float(ndtri(1 - alpha)), float(ndtri(1 - alpha / looks))  # Bonferroni bounds
    if looks == 1:
        return low
    for _ in range(20):
        mid = (low + high) / 2
        if repeated_crossing(mid, looks) > alpha:
            low = mid
        else:
            high = mid
    return high


def look_credibility(credibility: float, looks: int) -> float:
    """The credibility each of `looks` planned looks judges a goal at (`stop: goal`), so a
    verdict reached at any look is wrong at most 1 − `credibility` of the time: Φ(z) with z
    the one-sided Pocock critical value for α = 1 − credibility (the posterior probability
    of an effect beyond a boundary is about Φ of its z statistic at a flat prior).
    benchmarks/cost_to_verdict.py checks the error rates by simulation."""
    if not 0.5 < credibility < 1:
        raise ValueError(f"credibility must lie in (0.5, 1); got {credibility!r}")
    return float(special.ndtr(pocock_critical(round(1 - credibility, 12), looks)))
