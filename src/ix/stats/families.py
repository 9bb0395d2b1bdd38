"""Cases that come in families: the family, not the rewording, is the independent unit.

STATS.md §10: cases generated from one original (`variant_of`, `paraphrase_of`) form one
cluster. A rewording of a prompt shares most of what makes the prompt easy or hard, so 5
originals × 4 rewordings are not 20 independent draws from the population of prompts; counted
as 20, every interval is too narrow. Two pieces live here (the case-level comparison and the
trend take `clusters` themselves: `ix.stats.case_level`, `ix.stats.trend`):

- `ratio_difference`: a paired difference of two ratios of case-level sums, Σa/Σb, between
  two subjects — recall (a = the case's majority vote, b = 1 on must cases), the correct rate
  (a = the vote is right, b = 1), precision (a = a true positive vote, b = a positive vote),
  F1 (a = 2·TP, b = 2·TP + FP + FN). Linearised (the delta method for a ratio of means:
  z_i = (a_i − R·b_i)/b̄ per subject, the difference of the two), the cluster-robust (CR1)
  SE of the mean of z over families, a t reference on G − 1 degrees of freedom, truncated to
  [−1, 1] — the sandwich over families, as statsmodels' OLS with cluster covariance computes
  it. The SE is floored at what the comparison's posterior would give independent cases (the
  Dirichlet over the paired 2×2 table, or independent Betas), so families only ever widen an
  interval, and unanimous ones never close it.
- `perturbation_difference`: robustness. Per original o (a case that ran, with perturbed
  cases generated from it), d_o = the mean rate over its perturbations − its own rate; the
  mean over originals with a t reference (CR1 over `clusters` when originals themselves share
  a family, e.g. paraphrases of `variants:`), floored by the rates' Beta posterior variances
  as the case-level comparison is. P(perturbed worse) is the posterior's P(mean d < 0).

Pure: closed forms (scipy.special through `CaseLevelDifference`), nothing sampled.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from ix.stats.case_level import CaseLevelDifference, beta_variance, t_posterior

__all__ = ["perturbation_difference", "ratio_difference"]


def _floor(rows: Sequence[tuple[float, float, float, float]]) -> float:
    """The variance the comparison would have if its cases were independent: for one vote
    a case on both sides (recall, the correct rate) the Dirichlet(1,1,1,1) posterior's of
    p_T − p_U over the paired 2×2 table, else the two sides' Beta(Σa+1, Σb−Σa+1). Families
    can only add to it; it keeps the interval open when every family agrees."""
    if all(bc == bv and bc in (0.0, 1.0) for _, bc, _, bv in rows):
        cells = [1.0, 1.0, 1.0, 1.0]  # both, control only, variant only, neither
        for ac, bc, av, _ in rows:
            if bc:
                cells[0 if ac and av else 1 if ac else 2 if av else 3] += 1.0
        total, t, u = sum(cells), cells[1], cells[2]
        return (t * (total - t) + u * (total - u) + 2.0 * t * u) / (total**2 * (total + 1.0))
    sums = [sum(r[i] for r in rows) for i in range(4)]
    return beta_variance(sums[0], sums[1]) + beta_variance(sums[2], sums[3])


def ratio_difference(control: Sequence[tuple[float, float]],
                     variant: Sequence[tuple[float, float]],
                     clusters: Sequence[Hashable]) -> CaseLevelDifference | None:
    """Σa_v/Σb_v − Σa_c/Σb_c with families as the unit (module docstring).

    `control[i]`, `variant[i]` are case i's (a, b) for each subject (0 ≤ a ≤ b; (0, 0) where
    the case has no vote), `clusters[i]` its family. Cases with b = 0 in both subjects are
    left out. None when either ratio has no denominator (Σb = 0: the rate is undefined) or
    no case is left. `n` counts the cases, `n_clusters` their families. Raises ValueError on
    sequences of different lengths or a > b.
    """
    if not len(control) == len(variant) == len(clusters):
        raise ValueError(f"control, variant and clusters must list the same cases; got "
                         f"{len(control)}, {len(variant)} and {len(clusters)}")
    rows, labels = [], []
    for (ac, bc), (av, bv), g in zip(control, variant, clusters, strict=True):
        for a, b in ((ac, bc), (av, bv)):
            if not 0 <= a <= b:
                raise ValueError(f"need 0 <= a <= b per case; got a={a}, b={b}")
        if bc or bv:
            rows.append((float(ac), float(bc), float(av), float(bv)))
            labels.append(g)
    n = len(rows)
    sum_ac, sum_bc = sum(r[0] for r in rows), sum(r[1] for r in rows)
    sum_av, sum_bv = sum(r[2] for r in rows), sum(r[3] for r in rows)
    if not n or sum_bc == 0 or sum_bv == 0:
        return None
    rc, rv = sum_ac / sum_bc, sum_av / sum_bv
    mean_bc, mean_bv = sum_bc / n, sum_bv / n
    z = [(av - rv * bv) / mean_bv - (ac - rc * bc) / mean_bc for ac, bc, av, bv in rows]
    groups = len(set(labels))
    t = t_posterior(z, _floor(rows), labels if groups < n else None)
    # z has mean 0 by construction: the posterior is centred on the observed difference
    return CaseLevelDifference(control=rc, variant=rv, estimate=rv - rc, se=t.se, df=t.df,
                               n=n, n_clusters=groups)


def perturbation_difference(originals: Sequence[tuple[int, int]],
                            perturbed: Sequence[Sequence[tuple[int, int]]],
                            clusters: Sequence[Hashable] | None = None,
                            ) -> CaseLevelDifference | None:
    """Perturbed − original (module docstring): `originals[o]` is original o's (passed,
    valid trials), `perturbed[o]` its perturbations' counts, `clusters[o]` its family when
    originals share families. An original without a valid trial, or without a perturbation
    that has one, is left out; None when none is left. `control` is the mean original rate,
    `variant` the mean of the per-original perturbed means, `n` the originals counted,
    `n_clusters` their families. Raises ValueError on lengths that differ or counts outside
    0 ≤ k ≤ n."""
    if len(originals) != len(perturbed) or (clusters is not None
                                            and len(clusters) != len(originals)):
        raise ValueError("originals, perturbed (and clusters) must have one entry an original")
    d, floor, labels, base, moved = [], 0.0, [], [], []
    for o, ((k, n), group) in enumerate(zip(originals, perturbed, strict=True)):
        for kk, nn in ((k, n), *group):
            if not 0 <= kk <= nn:
                raise ValueError(f"need 0 <= passed <= trials per case; got {kk}/{nn}")
        valid = [(kk, nn) for kk, nn in group if nn]
        if not n or not valid:
            continue
        m = len(valid)
        mean = sum(kk / nn for kk, nn in valid) / m
        base.append(k / n)
        moved.append(mean)
        d.append(mean - k / n)
        floor += beta_variance(k, n) + sum(beta_variance(kk, nn) for kk, nn in valid) / m**2
        labels.append(o if clusters is None else clusters[o])
    if not d:
        return None
    count = len(d)
    t = t_posterior(d, floor / count**2, labels)
    return CaseLevelDifference(control=sum(base) / count, variant=sum(moved) / count,
                               estimate=t.estimate, se=t.se, df=t.df, n=count,
                               n_clusters=t.n_clusters)

