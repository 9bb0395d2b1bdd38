"""What perturbed cases change in a subject's block: vote intervals over families, robustness.

A run with perturbed cases (`variants:`, `probe: paraphrase`: `ix.eval.families`) counts a
family of rewordings as one unit (STATS.md §10). `family_intervals` recomputes precision,
recall, F1 and specificity intervals with the hierarchical beta-binomial model of
`ix.stats.clustered` over families — each family's majority votes as its "trials", the
votes of a family as alike as the data say (concentration d ~ Gamma(1, 1)): a family of
identical votes carries about one vote's information, a family of unrelated ones nearly as
many as it has cases — the same model `trial_level` fits to a case's trials. The estimates
stay the counts' ratios.

`robustness` answers "does the skill hold up when its prompts are reworded?": per original
that ran (a case other cases were generated from — `probe: paraphrase` runs the original
beside its rewordings; `variants:` runs only the rewordings, so it has none), the mean rate
of right trials over its perturbations minus its own, and the mean over originals with a t
interval (`ix.stats.families.perturbation_difference`), P(perturbed worse) and the
two-sided p.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from ix._lazy import lazy
from ix.eval.estimates import LEVEL, num, pair, prior_parameters
from ix.eval.families import family_labels, family_of, original_of
from ix.eval.models import EvalCase
from ix.eval.schemas import RobustnessOut
from ix.eval.scoring import Tally
from ix.stats.clustered import hierarchical_interval
from ix.stats.difference import difference_interval
from ix.stats.families import perturbation_difference

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")

__all__ = ["family_intervals", "robustness"]

#: What robustness compares: the rate of right trials (activation on must cases, none on
#: should-not cases), so that one number covers both kinds of case.
METRIC: Final = "correct_rate"


def _votes(tally: Tally, cases: Sequence[EvalCase]) -> np.ndarray:
    """Per case: 1 the majority vote activates, 0 it does not, -1 no valid trial."""
    out = np.full(len(cases), -1, dtype=np.int64)
    for i, c in enumerate(cases):
        vote = tally.vote(c)
        if vote is not None:
            out[i] = int(vote)
    return out


def family_intervals(tally: Tally, cases: Sequence[EvalCase], level: float = LEVEL,
                     prior: str = "uniform") -> dict[str, Any]:
    """`metrics` keys recomputed with perturbation families as the unit: precision_ci,
    recall_ci, f1_ci (through U = TP/(TP+FP+FN)), specificity_ci, pass_rate_ci, and
    `n_families` (the families of the cases with a vote). Empty in a run without families; a
    ratio whose cases are all in families of one, or that has no denominator, keeps its
    interval."""
    labels = family_labels(cases)
    if labels is None:
        return {}
    _, group = np.unique(np.array(labels), return_inverse=True)
    group = group.ravel()
    vote = _votes(tally, cases)
    must = np.array([c.expectation == "must_trigger" for c in cases])
    voted = vote >= 0
    tp, fp = (vote == 1) & must, (vote == 1) & ~must
    fn, tn = (vote == 0) & must, (vote == 0) & ~must
    size = int(group.max()) + 1

    def per_family(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group, weights=mask.astype(float), minlength=size).astype(np.int64)

    ab = prior_parameters(prior)
    out: dict[str, Any] = {"n_families": len(set(group[voted].tolist()))}

    def interval(hit: np.ndarray, of: np.ndarray) -> tuple[float, float] | None:
        """The hierarchical interval of Σhit/Σof over families; None where the cases counted
        are each their family's only one (nothing to cluster) or none is counted."""
        k, n = per_family(hit), per_family(of)
        if n.sum() == 0 or int((n > 0).sum()) == int(of.sum()):
            return None
        return hierarchical_interval(k, n, level=level, prior=ab,
                                     estimate=float(k.sum() / n.sum()))

    for key, hit, of in (("precision_ci", tp, tp | fp), ("recall_ci", tp, tp | fn),
                         ("specificity_ci", tn, tn | fp),
                         ("pass_rate_ci", tp | tn, tp | fp | fn | tn)):
        got = interval(hit, of)
        if got is not None:
            out[key] = pair(*got)
    u = interval(tp, tp | fp | fn)
    if u is not None:
        out["f1_ci"] = pair(*(2 * x / (1 + x) for x in u))
    return out


def robustness(tally: Tally, cases: Sequence[EvalCase],
               level: float = LEVEL) -> RobustnessOut | None:
    """Perturbed cases against their originals on the rate of right trials; None without an
    original that ran beside a perturbation of its own."""
    by_id = {c.id: c for c in cases}
    children: dict[str, list[EvalCase]] = {}
    for c in cases:
        parent = original_of(c)
        if parent is not None and parent in by_id:
            children.setdefault(parent, []).append(c)
    if not children:
        return None

    def right(case: EvalCase) -> tuple[int, int]:
        counts = tally.counts[case.id]
        hits = counts.passed if case.expectation == "must_trigger" else (counts.valid
                                                                         - counts.passed)
        return hits, counts.valid

    originals = [by_id[o] for o in children]
    m = perturbation_difference([right(o) for o in originals],
                                [[right(c) for c in children[o.id]] for o in originals],
                                [family_of(o, by_id) for o in originals])
    if m is None:
        return None
    di = difference_interval(m.cdf, m.estimate, level=level)
    counted = [o for o in originals if tally.counts[o.id].valid
               and any(tally.counts[c.id].valid for c in children[o.id])]
    out: RobustnessOut = {
        "metric": METRIC, "original": num(m.control), "perturbed": num(m.variant),
        "diff": num(m.estimate), "diff_median": num(di.median),
        "diff_ci": pair(di.lo, di.hi), "p_worse": num(1.0 - m.p_better),
        "p_value": num(m.p_value), "n_originals": m.n,
        "n_perturbed": sum(1 for o in counted for c in children[o.id]
                           if tally.counts[c.id].valid),
        "n_families": m.n_clusters if m.n_clusters is not None else m.n}
    return out
