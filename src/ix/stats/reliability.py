"""How alike the trials of one case are: the intraclass correlation and the design effect.

Trials of one subject within a case share the case's rate, so they are not independent: the
rate over all trials of K-trial cases has the variance of 1 + (K − 1)·ICC times as many
independent trials would give (Kish's design effect). The ICC here is the one-way ANOVA
estimator ICC(1) of Fisher and Snedecor, with Snedecor's n₀ for unequal trial counts; for
0/1 outcomes from a beta-binomial population (case rates ~ Beta(α, β)) it estimates
1/(1 + α + β), i.e. 1/(1 + d) for the hierarchical model's concentration d
(`ix.stats.clustered`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ix._lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike
else:
    np = lazy("numpy")

__all__ = ["design_effect", "icc_oneway"]


def icc_oneway(successes: ArrayLike, trials: ArrayLike) -> float | None:
    """One-way ANOVA intraclass correlation of 0/1 trials nested in cases (clusters).

    With g cases (those with at least one trial), N trials, case rates p_i = k_i/n_i and
    overall rate p: MSB = Σ n_i (p_i − p)²/(g − 1), MSW = Σ n_i p_i (1 − p_i)/(N − g),
    n₀ = (N − Σ n_i²/N)/(g − 1), ICC = (MSB − MSW)/(MSB + (n₀ − 1)·MSW) — the same as
    (F − 1)/(F + n₀ − 1) with F the one-way ANOVA F statistic (`scipy.stats.f_oneway` on
    the cases' 0/1 trials). Lies in [−1/(n₀ − 1), 1]; negative when the case rates vary less
    than binomial noise would make them; 1 when every case is all-pass or all-fail but not
    all alike. None when it is undefined: fewer than two cases, no case with two trials
    (N = g), or every trial has the same outcome. Raises ValueError unless
    0 ≤ k_i ≤ n_i are integers of equal length.
    """
    k = np.asarray(successes, dtype=float).ravel()
    n = np.asarray(trials, dtype=float).ravel()
    if k.shape != n.shape:
        raise ValueError(f"successes and trials differ in length: {k.shape} vs {n.shape}")
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(n))) or np.any(k != np.round(k)) \
            or np.any(n != np.round(n)) or np.any(k < 0) or np.any(k > n):
        raise ValueError("need integers 0 <= successes <= trials for every case")
    keep = n > 0
    k, n = k[keep], n[keep]
    g, total = len(n), float(n.sum())
    if g < 2 or total <= g:
        return None
    p = float(k.sum()) / total
    msb = float(np.sum((k - n * p) ** 2 / n)) / (g - 1)      # Σ n_i (p_i − p)² / (g − 1)
    msw = float(np.sum(k - k * k / n)) / (total - g)          # Σ n_i p_i (1 − p_i) / (N − g)
    n0 = (total - float(np.sum(n * n)) / total) / (g - 1)
    denominator = msb + (n0 - 1.0) * msw
    if denominator <= 0.0:
        return None
    return (msb - msw) / denominator


def design_effect(icc: float | None, trials_per_case: float) -> float | None:
    """Kish's design effect max(1, 1 + (K − 1)·ICC) of K trials per case (None when ICC is
    None).

    The variance of a rate over K-trial cases divided by that of the same number of
    independent trials; N trials carry the information of N / design effect independent
    ones. Floored at 1: trials of one case are independent draws at the case's rate, so the
    true ICC is ≥ 0 and a negative estimate (cases alike beyond binomial noise) is sampling
    error — it would claim K trials of a case tell more than K independent ones. Raises
    ValueError if K < 1.
    """
    if not trials_per_case >= 1 or not math.isfinite(trials_per_case):
        raise ValueError(f"trials_per_case must be a number >= 1, got {trials_per_case!r}")
    if icc is None:
        return None
    return max(1.0, 1.0 + (float(trials_per_case) - 1.0) * float(icc))
