"""Which cases changed beyond trial noise between two subjects (STATS.md §10, §12).

A case ran K_a trials for one subject and K_b for the other, k_a and k_b of them passing. Its
majority vote can change between the two by chance alone: at K = 5 a case with a true rate of
0.5 in both votes differently half the time. The per-case question "do the two rates differ?"
has an exact test that needs no guess at the common rate: **Fisher's exact test**, which
conditions on the case's total passes k_a + k_b; under equal rates (and independent trials)
k_a is then hypergeometric, whatever the common rate. Two-sided p: the probability of every
split no likelier than the one observed (ties within a relative 1e-7, as `scipy.stats
.fisher_exact` counts them).

The cases of one comparison are one family. Fisher's test is discrete, and many cases cannot
reach a small p at all (0/5 against 0/5: every split of 0 passes is the only one, p = 1), so
counting them in a Bonferroni or Holm family would only waste its α. **Tarone's** rule (Tarone
1990, *Biometrics* 46:515) leaves them out exactly: with μ_i the smallest p case i's margins
allow, take the smallest m with #{i : μ_i ≤ α/m} ≤ m, and call case i beyond noise when
p_i ≤ α/m. Conditional on the margins the p_i are valid and μ_i fixed, so the chance that any
case of the comparison is called beyond noise when none differs is at most
Σ_{μ_i ≤ α/m} α/m ≤ α (family-wise, whatever the dependence between cases).

Trials drawn with common random numbers (the same uniform for both subjects) are positively
dependent, which only makes the test conservative. Pure: the standard library's lgamma.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CaseTest", "beyond_noise", "fisher_exact", "tarone_threshold"]

#: Splits whose probability is within this relative distance of the observed one's count as
#: "no likelier" (floating ties; scipy's rule).
_TIES = 1e-7


@dataclass(frozen=True)
class CaseTest:
    """Fisher's exact test of one case: `p` two-sided, `min_p` the smallest p its margins
    allow (1.0 when no split could be unusual: no pass or every trial passed, in total)."""

    p: float
    min_p: float


def _log_weights(k_total: int, n_a: int, n_b: int) -> tuple[int, list[float]]:
    """The support's first value and log C(k_total, x) C(n_a + n_b − k_total, n_a − x) for
    every x in it (the hypergeometric pmf up to a constant)."""
    lo, hi = max(0, k_total - n_b), min(k_total, n_a)
    lg = math.lgamma

    def log_comb(n: int, r: int) -> float:
        return lg(n + 1) - lg(r + 1) - lg(n - r + 1)

    fail = n_a + n_b - k_total
    return lo, [log_comb(k_total, x) + log_comb(fail, n_a - x) for x in range(lo, hi + 1)]


def _p_of(weights: Sequence[float], at: float) -> float:
    top = max(weights)
    pmf = [math.exp(w - top) for w in weights]
    total = sum(pmf)
    bar = math.exp(at - top) * (1.0 + _TIES)
    return min(1.0, sum(x for x in pmf if x <= bar) / total)


def fisher_exact(k_a: int, n_a: int, k_b: int, n_b: int) -> CaseTest:
    """Fisher's exact test of k_a/n_a against k_b/n_b (two-sided), and the smallest p the
    margins allow. Raises ValueError on counts outside 0 ≤ k ≤ n or an empty side."""
    for k, n in ((k_a, n_a), (k_b, n_b)):
        if not 0 <= k <= n or n == 0:
            raise ValueError(f"need 0 <= passed <= trials and trials > 0; got {k}/{n}")
    lo, weights = _log_weights(k_a + k_b, n_a, n_b)
    p = _p_of(weights, weights[k_a - lo])
    return CaseTest(p=p, min_p=_p_of(weights, min(weights[0], weights[-1])))


def tarone_threshold(min_ps: Sequence[float], alpha: float) -> float:
    """The per-case level α/m of Tarone's rule: the smallest m ≥ 1 such that at most m cases
    can reach p ≤ α/m."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    m = 1
    while sum(1 for mu in min_ps if mu <= alpha / m) > m:
        m += 1
    return alpha / m


def beyond_noise(counts_a: Sequence[tuple[int, int]], counts_b: Sequence[tuple[int, int]],
                 alpha: float = 0.05) -> tuple[list[CaseTest | None], float]:
    """Each case's test (None where a side has no valid trial, left out of the family) and
    the family's per-case level: case i differs beyond trial noise when its p ≤ the level.
    `counts_a[i]`, `counts_b[i]`: (passed, valid trials) of case i for each subject."""
    if len(counts_a) != len(counts_b):
        raise ValueError(f"both sides must list the same cases; got {len(counts_a)} and "
                         f"{len(counts_b)}")
    tests = [fisher_exact(ka, na, kb, nb) if na and nb else None
             for (ka, na), (kb, nb) in zip(counts_a, counts_b, strict=True)]
    return tests, tarone_threshold([t.min_p for t in tests if t is not None], alpha)
