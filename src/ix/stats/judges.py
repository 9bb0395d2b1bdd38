"""Judges (STATS.md §14): how far a model judge can be trusted, and what its verdicts imply.

A judge's pass rate is not the subject's pass rate: it has to be checked against human labels
(accuracy, TPR, TNR as Beta posteriors with method 1's boundary rule; Cohen's κ beyond
chance), corrected for its errors (Rogan–Gladen, with every count's uncertainty carried
through), and its own noise measured (repeats of one output). Several judges: Krippendorff's
α. A pairwise judge: each case's win share, so the case stays the unit. Every bootstrap is
seeded and resamples the independent unit (labelled item, unit, case), never the judgement.

`benchmarks/judge_calibration.py` simulates the coverage of these intervals against known
truth; tests/stats/test_judges.py checks them against statsmodels, scipy and `krippendorff`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ix._lazy import lazy
from ix.stats.continuous import RESAMPLES, Estimate
from ix.stats.intervals import beta_interval

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from scipy import special, stats
else:
    np = lazy("numpy")
    special = lazy("scipy.special")
    stats = lazy("scipy.stats")

__all__ = ["MAX_BOOTSTRAP_ITEMS", "MAX_TABLE_CATEGORIES", "MIN_RANKED", "Agreement",
           "CorrectedRate", "JudgeNoise", "Pairwise", "ScoreAgreement", "agreement",
           "corrected_rate", "judge_noise", "krippendorff_alpha", "pairwise", "rank_agreement",
           "score_agreement"]

NAN = math.nan
BOUNDARY = "beta posterior, boundary rule"
#: Score agreement's Dirichlet draws cost RESAMPLES × values² (0.1 s at 20): above this many
#: score values weighted κ is not computed and Spearman's ρ takes an item bootstrap.
MAX_TABLE_CATEGORIES = 20
#: Spearman's bootstrap re-ranks every resample (0.4 s at 1000 items): above this, Fisher's z.
MAX_BOOTSTRAP_ITEMS = 2000


@dataclass(frozen=True)
class Agreement:
    """A binary judge against human labels (pass = True). `tpr`: the judge passes among the
    human passes; `tnr`: the judge fails among the human fails; `kappa`: Cohen's κ. The
    counts are those `corrected_rate` takes (tp of pos, tn of neg)."""

    accuracy: Estimate
    tpr: Estimate
    tnr: Estimate
    kappa: Estimate
    tp: int
    fn: int
    fp: int
    tn: int


@dataclass(frozen=True)
class ScoreAgreement:
    """A scoring judge against human scores: weighted κ and Spearman's ρ."""

    kappa: Estimate
    spearman: Estimate


@dataclass(frozen=True)
class CorrectedRate:
    """The true pass rate implied by a judge's pass rate on a run and its error rates.
    `p_uninformative`: the posterior share of TPR + TNR ≤ 1 (a judge no better than a coin);
    `uninformative`: the point estimates already say so (then `rate` is nan in [0, 1])."""

    rate: Estimate
    p_uninformative: float
    uninformative: bool


@dataclass(frozen=True)
class JudgeNoise:
    """Repeated judgements of the same outputs: the judge's variance within an output, the
    outputs' variance between them, ICC(1) (the share of a single judgement's variance that is
    the output's) and ICC(1,k) (the reliability of the mean of the k repeats, which is what
    comparisons should use)."""

    within_var: float
    between_var: float
    icc: Estimate
    icc_mean: Estimate
    repeats: float


@dataclass(frozen=True)
class Pairwise:
    """A pairwise judge over cases: the variant's mean win share (ties ½) with its interval,
    P(variant better) = P(mean share > ½), and the position bias (None unless asked)."""

    share: Estimate
    p_better: float
    position_bias: Estimate | None


def _check_level(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must be a probability in (0, 1), e.g. 0.95; got {level!r}")
    return float(level)


def _rate(k: int, n: int, level: float) -> Estimate:
    """k of n as a Beta(k + 1, n − k + 1) posterior (boundary rule); n = 0: no estimate
    (nan) and the prior's interval, as ix reports precision with nothing predicted."""
    lo, hi = beta_interval(k, n, level)
    if n == 0:
        return Estimate(NAN, lo, hi, 0, f"{BOUNDARY}; no items: the prior's interval")
    return Estimate(k / n, lo, hi, n, BOUNDARY)


def _labels(name: str, values: Sequence[Any]) -> npt.NDArray[np.bool_]:
    try:
        arr = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        arr = np.array([NAN])
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must hold pass/fail labels (True/False or 1/0)")
    return arr == 1


def agreement(judge: Sequence[Any], human: Sequence[Any], level: float = 0.95,
              seed: int = 0) -> Agreement:
    """A binary judge's labels against humans' on the same items (pass = True): accuracy,
    TPR and TNR as Beta posteriors (boundary rule: right at 0/n and n/n), and Cohen's κ.

    κ's interval is a seeded Bayesian bootstrap of the labelled items with half a prior item
    in each cell of the 2×2 table (Dirichlet(counts + ½)): it covered the population κ
    0.93-0.96 at 20-100 items (`benchmarks/judge_calibration.py`), where the plain
    percentile bootstrap, which collapses to [1, 1] when the few items of the rarer class all
    agree, covered about half the time at 20 items with a 10-20% class. κ is nan when the
    human labels are all one class: agreement cannot be told from chance then."""
    level = _check_level(level)
    j, h = _labels("judge", judge), _labels("human", human)
    if j.shape != h.shape:
        raise ValueError(f"judge and human label different items: {j.size} vs {h.size}")
    tp, fn = int(np.sum(j & h)), int(np.sum(~j & h))
    fp, tn = int(np.sum(j & ~h)), int(np.sum(~j & ~h))
    n = tp + fn + fp + tn
    return Agreement(_rate(tp + tn, n, level), _rate(tp, tp + fn, level),
                     _rate(tn, tn + fp, level), _cohen_kappa(tp, fn, fp, tn, level, seed),
                     tp, fn, fp, tn)


def _cohen_kappa(tp: int, fn: int, fp: int, tn: int, level: float, seed: int) -> Estimate:
    n = tp + fn + fp + tn
    if tp + fn == 0 or tn + fp == 0:
        return Estimate(NAN, NAN, NAN, n, "Cohen's kappa: undefined, the human labels are all "
                        "one class (agreement cannot be told from chance)")
    table = np.array([[tn, fn], [fp, tp]], dtype=float)  # judge in rows, human in columns
    w = 1 - np.eye(2)
    value = float(_kappa_tables(table[None] / n, w)[0])
    draws = _kappa_tables(_posterior_tables(table, np.full((2, 2), 0.5), seed), w)
    return Estimate(value, *_interval(draws, value, level), n, "Cohen's kappa, Bayesian "
                    f"bootstrap over items: Dirichlet(counts + 1/2) on the 2x2 table "
                    f"({RESAMPLES} draws, seeded)")


def _posterior_tables(table: npt.NDArray[Any], prior: npt.NDArray[Any],
                      seed: int) -> npt.NDArray[np.float64]:
    """RESAMPLES seeded draws of the cell shares of a judge × human count table from
    Dirichlet(table + prior): a Bayesian bootstrap of the items, smoothed by the prior."""
    a = (table + prior).ravel()
    keep = a > 0
    g = np.zeros((RESAMPLES, a.size))
    g[:, keep] = np.random.default_rng(seed).gamma(a[keep], size=(RESAMPLES, int(keep.sum())))
    return (g / g.sum(axis=1, keepdims=True)).reshape(RESAMPLES, *table.shape)


def _kappa_tables(p: npt.NDArray[Any], w: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """κ_w = 1 − Σ w·p / Σ w·(judge share × human share) of each table of cell shares
    `p[b]` (judge in rows); nan where chance would never disagree."""
    expected = np.einsum("ba,ac,bc->b", p.sum(axis=2), w, p.sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (p * w).sum(axis=(1, 2)) / expected, NAN)


def _rho_tables(p: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Spearman's ρ of each table of cell shares: the correlation of the two raters'
    mid-distribution scores P(X < a) + ½P(X = a), which is the sample ρ with midranks when
    `p` is a sample's table; nan where a rater never varies."""
    rows, cols = p.sum(axis=2), p.sum(axis=1)
    fr, fc = np.cumsum(rows, axis=1) - rows / 2, np.cumsum(cols, axis=1) - cols / 2
    fr -= (rows * fr).sum(axis=1, keepdims=True)
    fc -= (cols * fc).sum(axis=1, keepdims=True)
    spread = (rows * fr * fr).sum(axis=1) * (cols * fc * fc).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.einsum("ba,bac,bc->b", fr, p, fc) / np.sqrt(spread)
    return np.where(spread > 1e-15, np.clip(rho, -1.0, 1.0), NAN)


def _interval(draws: npt.NDArray[Any], value: float, level: float) -> tuple[float, float]:
    """The equal-tailed `level` interval of draws (a bootstrap's or a posterior's; nan
    draws left out); one-sided on its side where it would exclude the point estimate
    (STATS.md §12), as at a perfect sample whose draws all fall below it."""
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return NAN, NAN
    alpha = 1 - level
    lo, hi = (float(x) for x in np.quantile(draws, [alpha / 2, 1 - alpha / 2]))
    if value > hi:
        return float(np.quantile(draws, alpha)), value
    if value < lo:
        return value, float(np.quantile(draws, level))
    return lo, hi


def score_agreement(judge_scores: Sequence[float], human_scores: Sequence[float],
                    level: float = 0.95, seed: int = 0,
                    weights: Literal["linear", "quadratic"] = "quadratic") -> ScoreAgreement:
    """A scoring judge's scores against humans' on the same items: κ weighted by the
    distance between the score values (categories: the values present in either; weights
    |a − b| or (a − b)², as statsmodels' `cohens_kappa(weights=values, wt=...)`), and
    Spearman's ρ (midranks for ties), each with a seeded interval.

    On a scale of at most `MAX_TABLE_CATEGORIES` values both intervals come from one
    Bayesian bootstrap over items, smoothed by half an item spread over the judge × human
    table as chance would place it (Dirichlet(counts + ½·judge share·human share)). On 1-5
    scores with 20-100 items it covered 0.92-0.97 for κ_w and 0.93-0.98 for ρ
    (`benchmarks/judge_calibration.py --scores`), where the plain percentile bootstrap
    covered 0.70 (κ_w) and 0.66 (ρ) at 20 items of a near-perfect judge on skewed scores,
    Fisher's z with Bonett & Wright's standard error 0.53-0.86, and a flat Dirichlet(½)
    0.5 for κ_w (its far cells, magnified by the weights, pull κ_w down). On a finer scale
    κ_w is not computed (bin the scores) and ρ takes a percentile bootstrap over items
    (covered 0.95-0.97 on bivariate normal scores), Fisher's z with Bonett & Wright's
    standard error √((1 + ρ²/2)/(n − 3)) above `MAX_BOOTSTRAP_ITEMS` items."""
    level = _check_level(level)
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"weights must be 'linear' or 'quadratic'; got {weights!r}")
    j = np.asarray(judge_scores, dtype=float).ravel()
    h = np.asarray(human_scores, dtype=float).ravel()
    if j.shape != h.shape:
        raise ValueError(f"judge and human score different items: {j.size} vs {h.size}")
    if not (np.all(np.isfinite(j)) and np.all(np.isfinite(h))):
        raise ValueError("scores must be finite numbers")
    n = j.size
    name = f"{weights}-weighted kappa"
    values, codes = np.unique(np.concatenate([j, h]), return_inverse=True)
    if n == 0 or np.all(h == h[0]):
        undefined = Estimate(NAN, NAN, NAN, n, "undefined: no items, or the human scores are "
                             "all one value (agreement cannot be told from chance)")
        return ScoreAgreement(undefined, undefined)
    flat_judge = Estimate(NAN, NAN, NAN, n, "Spearman: undefined, the judge's scores are all "
                          "one value")
    if len(values) > MAX_TABLE_CATEGORIES:
        return ScoreAgreement(
            Estimate(NAN, NAN, NAN, n, f"{name}: not computed, {len(values)} score values "
                     f"(more than {MAX_TABLE_CATEGORIES}): read Spearman's rho, or bin the "
                     "scores"), flat_judge if np.all(j == j[0]) else _spearman(j, h, level, seed))
    c = len(values)
    table = np.zeros((c, c))
    np.add.at(table, (codes[:n], codes[n:]), 1.0)
    shares = _posterior_tables(table, 0.5 * np.outer(table.sum(axis=1), table.sum(axis=0))
                               / (n * n), seed)
    method = ("Bayesian bootstrap over items: Dirichlet(counts + 1/2 item spread as chance) "
              f"on the table ({RESAMPLES} draws, seeded)")
    w = np.abs(values[:, None] - values[None, :]) ** (1 if weights == "linear" else 2)
    kappa = float(_kappa_tables(table[None] / n, w)[0])
    rho = float(_rho_tables(table[None] / n)[0])
    return ScoreAgreement(
        Estimate(kappa, *_interval(_kappa_tables(shares, w), kappa, level), n,
                 f"{name}, {method}"),
        flat_judge if math.isnan(rho) else
        Estimate(rho, *_interval(_rho_tables(shares), rho, level), n, f"Spearman, {method}"))


def _spearman(j: npt.NDArray[Any], h: npt.NDArray[Any], level: float, seed: int) -> Estimate:
    """Spearman's ρ of scores on a fine scale (neither rater constant) with a seeded
    percentile bootstrap over items; Fisher's z with Bonett & Wright's standard error above
    `MAX_BOOTSTRAP_ITEMS` items (re-ranking every resample would cost seconds). At |ρ| = 1
    every resample agrees perfectly too: the interval is one-sided, its other end the
    Bonett-Wright end of the nearest value ρ takes below 1 (one adjacent pair swapped)."""
    n = j.size  # more than MAX_TABLE_CATEGORIES values: n > 10, so n − 3 > 0
    rho = float(stats.spearmanr(j, h).statistic)
    z = float(special.ndtri((1 + level) / 2))
    fisher = "Fisher z, Bonett-Wright standard error"
    if abs(rho) == 1:
        near = 1 - 12 / (n * (n * n - 1))
        end = math.tanh(math.atanh(near) - z * math.sqrt((1 + near * near / 2) / (n - 3)))
        lo, hi = (end, 1.0) if rho > 0 else (-1.0, -end)
        return Estimate(rho, lo, hi, n, f"|rho| = 1: one-sided, {fisher} of the nearest "
                        "attainable rho")
    if n > MAX_BOOTSTRAP_ITEMS:
        half = z * math.sqrt((1 + rho * rho / 2) / (n - 3))
        return Estimate(rho, math.tanh(math.atanh(rho) - half),
                        math.tanh(math.atanh(rho) + half), n, fisher)
    idx = np.random.default_rng(seed).integers(0, n, size=(RESAMPLES, n))
    rj, rh = stats.rankdata(j[idx], axis=1), stats.rankdata(h[idx], axis=1)
    rj -= rj.mean(axis=1, keepdims=True)
    rh -= rh.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = (rj * rh).sum(axis=1) / np.sqrt((rj * rj).sum(axis=1) * (rh * rh).sum(axis=1))
    return Estimate(rho, *_interval(draws, rho, level), n, "percentile bootstrap over items "
                    f"({RESAMPLES} resamples, seeded)")


def _resamples(n: int, seed: int) -> npt.NDArray[np.float64]:
    """RESAMPLES bootstrap resamples of n units as a count matrix (row: how often each unit
    was drawn), so every statistic that is a sum over units is one matrix product."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=RESAMPLES).astype(float)


def corrected_rate(judged_pass: int, judged_n: int, tp: int, pos: int, tn: int, neg: int,
                   level: float = 0.95, draws: int = 20000, seed: int = 0) -> CorrectedRate:
    """The true pass rate π = (p + TNR − 1)/(TPR + TNR − 1) (Rogan & Gladen 1978) from the
    judge's `judged_pass` of `judged_n` on the run and its record on labelled items (`tp` of
    `pos` human passes judged pass, `tn` of `neg` human fails judged fail). The interval
    comes from seeded Monte Carlo draws of p, TPR, TNR from their Beta(k + 1, n − k + 1)
    posteriors, π clipped to [0, 1], given that the judge beats chance (draws with
    TPR + TNR ≤ 1 are left out and their share reported). Point estimate: the plug-in of
    the observed rates; nan (interval [0, 1]) when they give TPR + TNR ≤ 1 or a side is
    unlabelled."""
    level = _check_level(level)
    for k, n, what in ((judged_pass, judged_n, "judged"), (tp, pos, "tp/pos"),
                       (tn, neg, "tn/neg")):
        if not (int(k) == k and int(n) == n and 0 <= k <= n):
            raise ValueError(f"{what}: need whole numbers 0 <= k <= n; got {k} of {n}")
    if draws < 100:
        raise ValueError(f"draws must be at least 100; got {draws}")
    rng = np.random.default_rng(seed)
    p = rng.beta(judged_pass + 1, judged_n - judged_pass + 1, draws)
    tpr = rng.beta(tp + 1, pos - tp + 1, draws)
    tnr = rng.beta(tn + 1, neg - tn + 1, draws)
    youden = tpr + tnr - 1
    informative = youden > 0
    p_uninformative = float(1 - informative.mean())
    method = ("Rogan-Gladen, Monte Carlo over Beta posteriors of p, TPR, TNR "
              f"({draws} draws, seeded), clipped to [0, 1]")
    if min(judged_n, pos, neg) == 0:
        return CorrectedRate(Estimate(NAN, 0.0, 1.0, judged_n, f"{method}; no estimate: "
                                      "nothing judged, or no human pass or fail labelled"),
                             p_uninformative, False)
    youden_hat = tp / pos + tn / neg - 1
    if youden_hat <= 0:
        return CorrectedRate(Estimate(NAN, 0.0, 1.0, judged_n, f"{method}; uninformative "
                                      "judge (TPR + TNR <= 1): its pass rate says nothing of "
                                      "the true one"), p_uninformative, True)
    value = min(max((judged_pass / judged_n + tn / neg - 1) / youden_hat, 0.0), 1.0)
    pi = np.clip((p[informative] + tnr[informative] - 1) / youden[informative], 0.0, 1.0)
    lo, hi = _interval(pi, value, level)
    return CorrectedRate(Estimate(value, lo, hi, judged_n, method), p_uninformative, False)


def krippendorff_alpha(ratings: Sequence[Sequence[float | None]] | npt.NDArray[Any],
                       level_of_measurement: Literal["nominal", "interval"] = "nominal",
                       level: float = 0.95, seed: int = 0) -> Estimate:
    """Krippendorff's α of several raters (judges or humans) on units: `ratings` is units ×
    raters, None or NaN where a rater gave none. α = 1 − D_o/D_e from the coincidence
    matrix (Krippendorff 2011), nominal or interval distances; units with fewer than two
    ratings are not pairable and left out. Interval: seeded percentile bootstrap over units.
    `n` is the number of pairable units; nan when the ratings never vary."""
    level = _check_level(level)
    if level_of_measurement not in ("nominal", "interval"):
        raise ValueError("level_of_measurement must be 'nominal' or 'interval'; got "
                         f"{level_of_measurement!r}")
    rows = [[NAN if v is None else float(v) for v in unit] for unit in ratings]
    width = max((len(r) for r in rows), default=0)
    x = np.array([r + [NAN] * (width - len(r)) for r in rows], dtype=float).reshape(
        len(rows), width)
    present = np.isfinite(x)
    m = present.sum(axis=1)
    x, present, m = x[m >= 2], present[m >= 2], m[m >= 2].astype(float)
    method = (f"{level_of_measurement} alpha, percentile bootstrap over units "
              f"({RESAMPLES} resamples, seeded)")
    if len(m) == 0:
        return Estimate(NAN, NAN, NAN, 0, f"{level_of_measurement} alpha: undefined, no unit "
                        "has two ratings")
    if level_of_measurement == "nominal":
        values, codes = np.unique(x[present], return_inverse=True)
        counts = np.zeros((len(m), len(values)))
        np.add.at(counts, (np.nonzero(present)[0], codes), 1.0)
        # per unit: its values' counts, and the summed distance of its ordered pairs / (m − 1)
        observed = (m * m - (counts * counts).sum(axis=1)) / (m - 1)

        def alpha_of(weights: npt.NDArray[Any]) -> npt.NDArray[Any]:
            n_c = weights @ counts
            total = n_c.sum(axis=1)
            expected = (total * total - (n_c * n_c).sum(axis=1)) / (total - 1)
            return _alpha(weights @ observed, expected)
    else:
        v = np.where(present, x, 0.0)
        s1, s2 = v.sum(axis=1), (v * v).sum(axis=1)
        observed = 2 * (m * s2 - s1 * s1) / (m - 1)

        def alpha_of(weights: npt.NDArray[Any]) -> npt.NDArray[Any]:
            total, t1, t2 = weights @ m, weights @ s1, weights @ s2
            return _alpha(weights @ observed, 2 * (total * t2 - t1 * t1) / (total - 1))

    value = float(alpha_of(np.ones((1, len(m))))[0])
    if not math.isfinite(value):
        return Estimate(NAN, NAN, NAN, len(m), f"{level_of_measurement} alpha: undefined, "
                        "the ratings never vary")
    if len(m) < 2:
        return Estimate(value, NAN, NAN, 1, f"{level_of_measurement} alpha: no interval from "
                        "one pairable unit")
    lo, hi = _interval(alpha_of(_resamples(len(m), seed)), value, level)
    return Estimate(value, lo, hi, len(m), method)


def _alpha(observed: npt.NDArray[Any], expected: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """1 − D_o/D_e from Σ observed and Σ expected pair distances, both over n pairable
    values (D_o = observed/n, D_e = expected/n): nan where nothing varies."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - observed / expected, NAN)


def judge_noise(scores: Sequence[Sequence[float]], level: float = 0.95) -> JudgeNoise:
    """Variance components of repeated judgements, `scores[output][repeat]` (≥ 2 repeats of
    at least two outputs; NaN for a missing repeat): the one-way random-effects ANOVA
    (Shrout & Fleiss 1979, ICC(1,1) and ICC(1,k)) with F-based intervals. With unequal
    repeats, k is Snedecor's n₀ and the interval approximate. `reliability.icc_oneway` is
    the same estimator for 0/1 judgements (checked equal in the tests)."""
    level = _check_level(level)
    groups = [g[np.isfinite(g)] for g in (np.asarray(o, dtype=float).ravel() for o in scores)]
    groups = [g for g in groups if g.size]
    n_i = np.array([g.size for g in groups], dtype=float)
    outputs, total = len(groups), float(n_i.sum())
    if outputs < 2 or total <= outputs:
        raise ValueError("judge_noise needs at least two outputs and a repeat of one of them")
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    msb = float(np.sum(n_i * (means - grand) ** 2)) / (outputs - 1)
    msw = float(sum(np.sum((g - g.mean()) ** 2) for g in groups)) / (total - outputs)
    k = (total - float(np.sum(n_i * n_i)) / total) / (outputs - 1)
    df1, df2 = outputs - 1, total - outputs
    method = "one-way random effects ANOVA, F interval (Shrout & Fleiss)"
    if msw == 0:
        flat = Estimate(NAN, NAN, NAN, outputs, "undefined: the scores never vary")
        if msb == 0:
            return JudgeNoise(0.0, 0.0, flat, flat, k)
        one = Estimate(1.0, 1.0, 1.0, outputs, f"{method}; no variance within outputs")
        return JudgeNoise(0.0, msb / k, one, one, k)
    f = msb / msw
    f_lo = f / float(stats.f.ppf((1 + level) / 2, df1, df2))
    f_hi = f * float(stats.f.ppf((1 + level) / 2, df2, df1))

    def single(x: float) -> float:
        return (x - 1) / (x + k - 1)

    icc = Estimate(single(f), single(f_lo), single(f_hi), outputs, method)
    icc_mean = Estimate(1 - 1 / f, 1 - 1 / f_lo, 1 - 1 / f_hi, outputs,
                        f"{method}, mean of {k:g} repeats")
    return JudgeNoise(msw, max(0.0, (msb - msw) / k), icc, icc_mean, k)


def pairwise(wins: Sequence[float | Sequence[float]], first_shown_wins: Sequence[Any] | None
             = None, level: float = 0.95) -> Pairwise:
    """A pairwise judge's verdicts per case for the variant (1 win, 0 loss, ½ tie; a list
    when the case was judged more than once, e.g. in both orders): each case's mean is its
    win share, the case the unit. Their mean has a t interval on N − 1 df (clipped to
    [0, 1]) and P(variant better) = P(mean > ½) from the same t posterior.
    `first_shown_wins`, one per judgement (True/False; None or ½ for a tie, left out): the
    position bias = the share of first-shown wins − ½, a Beta interval (boundary rule)
    shifted by ½; judgements counted as independent."""
    level = _check_level(level)
    shares = []
    for case in wins:
        verdicts = np.atleast_1d(np.asarray(case, dtype=float))
        if verdicts.size == 0 or np.any(~((verdicts >= 0) & (verdicts <= 1))):
            raise ValueError("each case needs verdicts in [0, 1] (1 win, 0 loss, 0.5 tie)")
        shares.append(float(verdicts.mean()))
    x = np.array(shares)
    n = x.size
    bias = None if first_shown_wins is None else _position_bias(first_shown_wins, level)
    if n == 0:
        return Pairwise(Estimate(NAN, NAN, NAN, 0, "none"), NAN, bias)
    mean = float(x.mean())
    if n < 2:
        return Pairwise(Estimate(mean, NAN, NAN, 1, "none: one case"), NAN, bias)
    se = float(x.std(ddof=1)) / math.sqrt(n)
    q = float(special.stdtrit(n - 1, (1 + level) / 2))
    share = Estimate(mean, max(0.0, mean - q * se), min(1.0, mean + q * se), n,
                     "case-level t interval on N - 1 df, clipped to [0, 1]")
    if se > 0:
        p_better = float(special.stdtr(n - 1, (mean - 0.5) / se))
    else:
        p_better = 1.0 if mean > 0.5 else 0.0 if mean < 0.5 else 0.5
    return Pairwise(share, p_better, bias)


def _position_bias(first_shown_wins: Sequence[Any], level: float) -> Estimate:
    decided = [v for v in first_shown_wins if v is not None and v != 0.5]
    if any(v not in (0, 1) for v in decided):
        raise ValueError("first_shown_wins holds True/False per judgement (None or 0.5: tie)")
    k, n = sum(bool(v) for v in decided), len(decided)
    lo, hi = beta_interval(k, n, level)
    return Estimate(k / n - 0.5 if n else NAN, lo - 0.5, hi - 0.5, n,
                    f"{BOUNDARY}, shifted by -0.5; ties left out")


#: Fewer candidates than this leave nothing to rank (τ over two items is ±1 or a tie).
MIN_RANKED = 3


def rank_agreement(reference: Any, other: Any, level: float = 0.95,
                   seed: int = 0) -> Estimate:
    """Whether two raters rank the same candidates alike: Kendall's τ-b between the
    candidates' means over cases, `reference[k][c]` and `other[k][c]` the value of candidate
    k on case c by each rater (K candidates × N cases, the same cases). τ-b is
    `scipy.stats.kendalltau`'s (ties counted as Kendall's b counts them).

    The cases are the sample (the candidates are fixed): the interval is a seeded Bayesian
    bootstrap over cases (Dirichlet(1, …, 1) weights, the same weights for both raters, so
    the pairing by case is kept), each draw's weighted means ranked again; one-sided on its
    side where the equal-tailed interval would exclude τ itself (STATS.md §12). Fewer than
    `MIN_RANKED` candidates: nan, "not enough candidates"; nan too when either rater gives
    every candidate the same mean."""
    level = _check_level(level)
    a = np.asarray(reference, dtype=float)
    b = np.asarray(other, dtype=float)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError("reference and other must be candidates x cases tables of one shape; "
                         f"got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("values must be finite numbers")
    k, n = a.shape
    if k < MIN_RANKED:
        return Estimate(NAN, NAN, NAN, n, f"not enough candidates: {k} (Kendall's tau needs "
                        f"at least {MIN_RANKED})")
    if n == 0:
        return Estimate(NAN, NAN, NAN, 0, "undefined: no case")
    value = float(_tau_b(a.mean(axis=1)[None], b.mean(axis=1)[None])[0])
    method = (f"Kendall's tau-b of the {k} candidates' means; Bayesian bootstrap over cases "
              f"(Dirichlet(1) weights, {RESAMPLES} draws, seeded)")
    if not math.isfinite(value):
        return Estimate(NAN, NAN, NAN, n, "Kendall's tau: undefined, a rater gives every "
                        "candidate the same mean")
    w = np.random.default_rng(seed).dirichlet(np.ones(n), size=RESAMPLES)
    draws = _tau_b(w @ a.T, w @ b.T)
    return Estimate(value, *_interval(draws, value, level), n, method)


def _tau_b(x: npt.NDArray[Any], y: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Kendall's τ-b of each row pair x[r], y[r] (draws × candidates): Σ sign·sign over the
    candidate pairs / √(untied pairs of x × untied pairs of y); nan where one is all tied."""
    i, j = np.triu_indices(x.shape[1], k=1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    denominator = np.sqrt(np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (sx * sy).sum(axis=1) / denominator, NAN)
