"""Paired, case-level comparison of two subjects' F1 (STATS.md §3, §8, §12).

A (control) and B (variant) ran the same cases; each case is one majority vote per subject,
fired or not. Must cases (must_trigger) give a 2×2 table of votes (both fired, A only, B only,
neither), not cases (should_not_trigger) another. For subject X: TP_X = must cases X fired
on, FN_X = must cases it did not, FP_X = not cases it fired on, TN_X = the rest.

Model: Dirichlet(½, …, ½) prior over the 8 joint cells (must/not × vote pair), so the
posterior is Dirichlet(count + ½). Each subject's TP, FP, FN and TN pool two cells, so by
Dirichlet aggregation its marginal is Dirichlet(TP + 1, FP + 1, FN + 1, TN + 1) — exactly the
Dirichlet(1, 1, 1, 1) model of `ix.stats.classification` (STATS.md §8) — and
U_X = θ_TP/(θ_TP + θ_FP + θ_FN) ~ Beta(TP + 1, FP + FN + 2), F1_X = 2U_X/(1 + U_X). That is
the U of `f1_prob_a_beats_b`, `f1_diff_cdf`, `f1_diff_interval` and the summary's `f1`
comparison (`DIRICHLET_F1_PRIOR`), not `f1_interval`'s default flat prior on U,
Beta(TP + 1, FP + FN + 1). The pairing enters through the joint cells: cases on which A and
B agree move both F1s together, so they carry no evidence about the difference.

Why Monte Carlo: D = F1_B − F1_A depends on 7 of the cells (the eighth — neither fires on
a not case — is TN for both and enters neither F1), a 6-dimensional integral with no closed
form or 1-D reduction. It is computed from seeded draws (STATS.md forbids unseeded
randomness): numpy's PCG64, seeded from the counts, so the same table gives bit-identical
results; 200,000 draws by default (~0.05 s), where the Monte Carlo standard error of
P(D > 0), √(p(1 − p)/draws) ≤ 0.0011, is reported with it. The estimand is the
majority-vote F1 over the designed must/not mix (STATS.md §12); the model treats that mix as
random, which only adds a little spread (coverage 0.95–0.97 in the simulations of
`tests/stats/test_paired_f1.py`, figures in docs/statistics.md).

Why an exact test beside the posterior: P(D > 0) is not calibrated when few cases changed.
When a change helps some cases and hurts as many others, the Dirichlet(½) posterior says
P(better) ≥ 0.9 in 0.10–0.19 of holdouts of 10 cases and P ≥ 0.95 in up to 0.066 (exact
enumeration over the tables; docs/optimize.md) — 2 changed must cases both going B's way
give P ≈ 0.9. `p_value` is the exact one-sided test of that null (McNemar's exact test
generalised to F1): given which cases changed, if each were as likely to have gone the other
way (votes exchangeable within a case — B no better than A, or better on some cases and
worse on as many others), how often would the difference be at least the one observed? The
must cases that changed split Binomial(d_m, ½), the not cases Binomial(d_n, ½), each split
scored by its F1 difference: a sum of (d_m + 1)(d_n + 1) binomial terms, no sampling. Its false
"better" rate is at most 1 − c at any c, by construction, and it is never below 2^−d with d
changed cases (a gain resting on 4 changed cases cannot reach p ≤ 0.05).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix._lazy import lazy
from ix.stats.difference import DifferenceInterval, Sided

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from scipy import special
else:
    np = lazy("numpy")
    special = lazy("scipy.special")

__all__ = ["PairedF1", "exact_p", "paired_f1"]

Table = tuple[int, int, int, int]

#: Prior on each of the 8 joint cells: each subject's TP, FP, FN, TN pools two cells, ½ + ½.
PRIOR = 0.5
#: Mixed with the counts into the seed: a fixed stream per table, independent across tables.
_SEED = 0x1F1_9A1D


@dataclass(frozen=True)
class PairedF1:
    """Posterior of D = F1_B − F1_A from paired majority votes (B = variant, A = control).

    `f1_a`, `f1_b` and `difference` are observed (2TP/(2TP + FP + FN), as in the run's
    summary; 0 with no TP, FP or FN, where the summary says n/a: a holdout never lacks must
    cases, so the engine never meets it). [`lo`, `hi`] holds `level` of the posterior and always
    contains `difference`; `sided` says which rule made it, as in
    `ix.stats.difference.DifferenceInterval`. `median` is D's posterior median,
    `prob_b_better` P(D > 0) and `mc_error` its Monte Carlo standard error. `p_value` is the
    exact one-sided p of the paired test (module docstring; 1 when no case changed);
    `improved` counts the cases B gets right and A wrong (must cases only B fired on, not
    cases only A fired on), `worsened` the reverse.
    """

    f1_a: float
    f1_b: float
    difference: float
    lo: float
    hi: float
    median: float
    sided: Sided
    prob_b_better: float
    mc_error: float
    n_must: int
    n_not: int
    draws: int
    level: float
    p_value: float = 1.0
    improved: int = 0
    worsened: int = 0

    @property
    def interval(self) -> DifferenceInterval:
        """The interval as a `DifferenceInterval` (unpacks as (lo, hi))."""
        return DifferenceInterval(self.lo, self.hi, self.median, self.sided)


def _table(name: str, value: Sequence[int]) -> Table:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or len(value) != 4:
        raise ValueError(f"{name} must be 4 counts (both, a_only, b_only, neither); "
                         f"got {value!r}")
    for c in value:
        if isinstance(c, bool) or not isinstance(c, int | np.integer) or c < 0:
            raise ValueError(f"{name} must hold non-negative whole numbers (both, a_only, "
                             f"b_only, neither); got {value!r}")
    both, a_only, b_only, neither = (int(c) for c in value)
    return both, a_only, b_only, neither


def _f1(tp: int, fp: int, fn: int) -> float:
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else 0.0


def _samples(must: Table, not_: Table,
             draws: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """`draws` joint posterior draws of (F1_A, F1_B), seeded from the counts.

    F1 is scale-free in the cells, so independent Gamma(count + ½) draws serve as the
    Dirichlet's. Must/neither and not/both enter both denominators alike, so only their sum
    matters (one Gamma with the summed shape); not/neither enters nothing. Gamma(½) is drawn
    as Z²/2 (exact, and ~5× faster than numpy's small-shape gamma).
    """
    m_both, m_a, m_b, m_neither = must
    n_both, n_a, n_b, _ = not_
    shapes = (m_both + PRIOR, m_a + PRIOR, m_b + PRIOR, m_neither + n_both + 2 * PRIOR,
              n_a + PRIOR, n_b + PRIOR)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence((_SEED, *must, *not_))))
    g = np.empty((len(shapes), draws))
    for row, shape in zip(g, shapes, strict=True):
        if shape == 0.5:
            rng.standard_normal(out=row)
            np.multiply(row, row, out=row)
            row *= 0.5
        else:
            rng.standard_gamma(shape, out=row)
    both, a_only, b_only, shared, fp_a_only, fp_b_only = g
    tp_a, tp_b = both + a_only, both + b_only
    rest = both + a_only + b_only + shared            # every cell both F1s count
    f1_a = 2 * tp_a / (rest + tp_a + fp_a_only)       # 2TP/(2TP + FN + FP), A's cells
    f1_b = 2 * tp_b / (rest + tp_b + fp_b_only)
    return f1_a, f1_b


def exact_p(must: Sequence[int], not_: Sequence[int]) -> float:
    """Exact one-sided p of F1_B > F1_A, given which cases changed (module docstring).

    `must`, `not_`: (both, a_only, b_only, neither). Each changed must case goes B's way
    (B fires) or A's with probability ½, so do the changed not cases (B fires: B's loss);
    p = P(D ≥ observed D) over those 2^(d_m + d_n) equally likely splits, summed exactly by
    how many go each way. 1 when no case changed."""
    must_t, not_t = _table("must", must), _table("not_", not_)
    m_both, m_a, m_b, m_neither = must_t
    n_both, n_a, n_b, _ = not_t
    d_m, d_n = m_a + m_b, n_a + n_b

    if d_m + d_n == 0:
        return 1.0
    # x of the changed must cases and y of the changed not cases are B's firings
    x = np.arange(d_m + 1, dtype=float)[:, None]
    y = np.arange(d_n + 1, dtype=float)[None, :]
    f1_b = _f1_array(m_both + x, n_both + y, d_m - x + m_neither)
    f1_a = _f1_array(m_both + d_m - x, n_both + d_n - y, x + m_neither)
    d = f1_b - f1_a
    observed = d[m_b, n_b]
    # Binomial(d_m, ½) × Binomial(d_n, ½) probabilities, in logs (2^d overflows past 1023)
    log_w = (special.gammaln(d_m + 1) - special.gammaln(x + 1) - special.gammaln(d_m - x + 1)
             + special.gammaln(d_n + 1) - special.gammaln(y + 1) - special.gammaln(d_n - y + 1)
             - (d_m + d_n) * math.log(2.0))
    # ties count as at least as large (equal differences can part in the last bits)
    return min(1.0, float(np.exp(log_w[d >= observed - 1e-9]).sum()))


def _f1_array(tp: NDArray[np.float64], fp: NDArray[np.float64],
              fn: NDArray[np.float64]) -> NDArray[np.float64]:
    """2TP/(2TP + FP + FN) elementwise, 0 where there is nothing to count (as `_f1`)."""
    den = 2 * tp + fp + fn
    out: NDArray[np.float64] = np.divide(2 * tp, den, out=np.zeros(np.broadcast(tp, fp, fn).shape),
                                         where=den > 0)
    return out


def paired_f1(must: tuple[int, int, int, int], not_: tuple[int, int, int, int], *,
              level: float = 0.95, draws: int = 200_000) -> PairedF1:
    """Compare B's F1 with A's on the same cases, paired at case level.

    `must` and `not_` are (both, a_only, b_only, neither) counts of firing majority votes on
    must_trigger and should_not_trigger cases. Returns the observed F1s and difference
    F1_B − F1_A, its posterior median, the interval at `level` (equal-tailed when it holds the
    observed difference, else one-sided on its side with credibility still `level`), and
    P(F1_B > F1_A) with its Monte Carlo error (module docstring: model, prior, why sampled),
    and the exact paired test's p (`exact_p`) with the counts of cases B improved and worsened.
    Deterministic. Raises ValueError unless the counts are non-negative whole numbers,
    0 < level < 1 and draws is a whole number ≥ 1000.
    """
    must_t, not_t = _table("must", must), _table("not_", not_)
    if isinstance(level, bool) or not (isinstance(level, int | float | np.floating)
                                       and 0 < level < 1):
        raise ValueError(f"level must be a probability in (0, 1), e.g. 0.95; got {level!r}")
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 1000:
        raise ValueError(f"draws must be a whole number >= 1000; got {draws!r}")
    level, draws = float(level), int(draws)

    f1_a = _f1(must_t[0] + must_t[1], not_t[0] + not_t[1], must_t[2] + must_t[3])
    f1_b = _f1(must_t[0] + must_t[2], not_t[0] + not_t[2], must_t[1] + must_t[3])
    est = f1_b - f1_a

    s_a, s_b = _samples(must_t, not_t, draws)
    d = s_b - s_a
    p = float(np.count_nonzero(d > 0)) / draws
    tail = (1.0 - level) / 2.0
    q_lo, q_hi, median, q_level, q_rest = (
        float(q) for q in np.quantile(d, [tail, 1.0 - tail, 0.5, level, 1.0 - level]))
    lo, hi = q_lo, q_hi
    sided: Sided = "two"
    if est < q_lo:
        lo, hi, sided = -1.0, max(q_level, est), "lower"
    elif est > q_hi:
        lo, hi, sided = min(q_rest, est), 1.0, "upper"
    return PairedF1(f1_a=f1_a, f1_b=f1_b, difference=est, lo=lo, hi=hi, median=median,
                    sided=sided, prob_b_better=p, mc_error=math.sqrt(p * (1.0 - p) / draws),
                    n_must=sum(must_t), n_not=sum(not_t), draws=draws, level=level,
                    p_value=exact_p(must_t, not_t), improved=must_t[2] + not_t[1],
                    worsened=must_t[1] + not_t[2])
