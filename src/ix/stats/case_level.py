"""Paired comparison of per-case rates with the case as the unit (STATS.md §3, §12).

Two subjects ran the same cases, K trials each. The trials of one subject within a case are
exchangeable, so pairing trial t of one with trial t of the other is arbitrary; the unit that
is really paired is the case. The estimand is the mean, over the population of prompts the
cases stand for, of (variant rate − control rate). Per case i the observed difference of rates
d_i = k_vi/n_vi − k_ci/n_ci is an unbiased draw of that case's true difference, and the cases
are independent draws from the population, so d_i are iid with mean = the estimand whatever
the mix of case rates (between-case heterogeneity is inside the spread of d_i).

Model: the mean of d_i with a Student t reference on N − 1 degrees of freedom — the posterior
of the mean of a normal sample under the reference prior p(μ, σ) ∝ 1/σ, and the one-sample
t-test (`scipy.stats.ttest_1samp`) as its frequentist companion:

    μ | d ~ d̄ + SE · t_(N−1),  truncated to [−1, 1] (a difference of rates cannot leave it),
    SE² = max(s²/N, Σ_i (v_ci + v_vi)/N²),

where s² is the sample variance of d_i and v = (k+1)(n−k+1)/((n+2)²(n+3)) is the variance of
a case rate's Beta(k+1, n−k+1) posterior. The floor keeps SE > 0 when every d_i happens to
be equal (e.g. every case 10/10 in both subjects: the within-case uncertainty is still there);
it only widens the interval. Everything depends on the trials only through each case's counts
(k, n), so permuting trial indices within a case changes nothing.

Why this model (simulated in `benchmarks/case_level_comparison.py`, table in
docs/statistics.md): the 95% interval covers ≥ 0.94 in every cell of N ∈ {10, 20, 50} ×
K ∈ {3, 5, 10} on heterogeneous populations of case rates; a Bayesian bootstrap over cases
under-covers at N = 10 (its spread is the plug-in's, without t's small-sample tails), and the
trial-level 2×2 table ignores the between-case variance (coverage 0.78 at K = 10). Pure: scipy
only, closed forms, nothing sampled.

**Clusters** (STATS.md §10): cases generated from one original (`variant_of`,
`paraphrase_of`) are not independent draws; `clusters` labels each case's family, and the
family is then the independent unit. The estimate stays the mean over cases, its SE is the
cluster-robust (CR1) one, SE² = G/(G−1) · Σ_g (Σ_{i∈g} (d_i − d̄))² / N² — statsmodels' OLS
`cov_type="cluster"` with its default correction —, floored as above, and the t reference has
G − 1 degrees of freedom. With every case its own cluster that is exactly s²/N on N − 1 (the
code takes the unclustered path then, so the numbers are bit for bit the same); with G
families of identical members, exactly the t on the G family means.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ix._lazy import lazy

if TYPE_CHECKING:
    from scipy import special
else:
    # Student's t from scipy.special (`stdtr`, `stdtrit`): the functions scipy.stats.t
    # calls, bit for bit, without importing scipy.stats (~0.5 s) for every comparison
    special = lazy("scipy.special")

__all__ = ["CaseLevelDifference", "beta_variance", "case_level_difference", "t_posterior"]


def beta_variance(k: float, n: float) -> float:
    """The variance of the uniform prior's posterior Beta(k + 1, n − k + 1): the floor the
    case-level comparisons and trends put under a clustered SE."""
    a, b = k + 1, n - k + 1
    return a * b / ((a + b) ** 2 * (a + b + 1))


@dataclass(frozen=True)
class CaseLevelDifference:
    """The posterior of the mean over cases of (variant rate − control rate).

    `estimate` is d̄ (the printed difference), `control`/`variant` the means of the per-case
    rates, `se` and `df` the t reference's scale and degrees of freedom, `n` the number of
    cases and `n_clusters` of independent units (families; `n` without clusters). `cdf(d)`
    is P(effect ≤ d) of the t posterior truncated to [−1, 1]; `p_better` is P(effect > 0);
    `p_value` the two-sided one-sample t-test of no difference (with the same SE, so never
    smaller than `scipy.stats.ttest_1samp`'s)."""

    control: float
    variant: float
    estimate: float
    se: float
    df: int
    n: int
    n_clusters: int | None = None

    def _t(self, d: float) -> float:
        return float(special.stdtr(self.df, (d - self.estimate) / self.se))

    def cdf(self, d: float) -> float:
        if d < -1.0:
            return 0.0
        if d >= 1.0:
            return 1.0
        lo, hi = self._t(-1.0), self._t(1.0)
        return min(1.0, max(0.0, (self._t(d) - lo) / (hi - lo)))

    def quantile(self, p: float) -> float:
        """The p-quantile of the truncated posterior, in closed form."""
        lo, hi = self._t(-1.0), self._t(1.0)
        u = lo + p * (hi - lo)
        if u <= 0.0:
            return -1.0
        if u >= 1.0:
            return 1.0
        q = self.estimate + self.se * float(special.stdtrit(self.df, u))
        return min(1.0, max(-1.0, q))

    @property
    def p_better(self) -> float:
        return 1.0 - self.cdf(0.0)

    @property
    def p_value(self) -> float:
        return float(min(1.0, 2.0 * special.stdtr(self.df, -abs(self.estimate) / self.se)))


def case_level_difference(control: Sequence[tuple[int, int]],
                          variant: Sequence[tuple[int, int]],
                          clusters: Sequence[Hashable] | None = None,
                          ) -> CaseLevelDifference | None:
    """The case-level paired comparison of two subjects' per-case counts.

    `control[i]` and `variant[i]` are (passed, valid trials) of case i for each subject;
    `clusters[i]`, when given, case i's family (cases of one family are one unit: CR1 SE,
    G − 1 degrees of freedom, module docstring). Cases where either subject has no valid
    trial are left out; None when none is left. Raises ValueError on sequences of different
    lengths or counts outside 0 ≤ k ≤ n.
    """
    if len(control) != len(variant) or (clusters is not None and len(clusters) != len(control)):
        raise ValueError(f"control, variant (and clusters) must list the same cases; got "
                         f"{len(control)} and {len(variant)}"
                         + (f" (and {len(clusters)})" if clusters is not None else ""))
    rows = []
    labels: list[Hashable] = []
    for i, ((kc, nc), (kv, nv)) in enumerate(zip(control, variant, strict=True)):
        for k, n in ((kc, nc), (kv, nv)):
            if not 0 <= k <= n:
                raise ValueError(f"need 0 <= passed <= trials per case; got {k}/{n}")
        if nc and nv:
            rows.append((kc, nc, kv, nv))
            labels.append(i if clusters is None else clusters[i])
    if not rows:
        return None
    n = len(rows)
    rc = [kc / nc for kc, nc, _, _ in rows]
    rv = [kv / nv for _, _, kv, nv in rows]
    d = [b - a for a, b in zip(rc, rv, strict=True)]
    floor = sum(beta_variance(kc, nc) + beta_variance(kv, nv)
                for kc, nc, kv, nv in rows) / n**2
    return t_posterior(d, floor, labels, control=sum(rc) / n, variant=sum(rv) / n)


def t_posterior(d: Sequence[float], floor: float, clusters: Sequence[Hashable] | None = None,
                control: float = math.nan, variant: float = math.nan) -> CaseLevelDifference:
    """The t posterior of the mean of `d` (one value a case, at least one): SE² = max(s²/N,
    `floor`) on N − 1 degrees of freedom, or with `clusters` that put cases together the
    cluster-robust max(CR1², `floor`) on G − 1 (one cluster: the floor alone, on 1)."""
    n = len(d)
    mean = sum(d) / n
    groups = n if clusters is None else len(set(clusters))
    if groups == n:
        s2 = sum((x - mean) ** 2 for x in d) / (n - 1) if n > 1 else 0.0
        se = math.sqrt(max(s2 / n, floor))
        df = max(n - 1, 1)
    else:
        assert clusters is not None
        sums: dict[Hashable, float] = {}
        for x, g in zip(d, clusters, strict=True):
            sums[g] = sums.get(g, 0.0) + (x - mean)
        cr1 = (groups / (groups - 1) * sum(v * v for v in sums.values()) / n**2
               if groups > 1 else 0.0)
        se = math.sqrt(max(cr1, floor))
        df = max(groups - 1, 1)
    return CaseLevelDifference(control=control, variant=variant, estimate=mean, se=se, df=df,
                               n=n, n_clusters=groups)
