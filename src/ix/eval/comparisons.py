"""Each variant against the control, metric by metric (STATS.md §2, §3, §10, §12).

Subjects of one experiment run the same cases, so the case is the paired unit:

| metric | estimand | posterior of variant − control |
|---|---|---|
| `activation_rate` | mean over prompts of the rate difference | case-level t (`case_level`) |
| `recall` | must_trigger majority votes | Dirichlet over the paired 2×2 table |
| `pass_rate` | every case's majority-vote correctness | Dirichlet over the paired 2×2 |
| `precision` | majority votes (cases differ by subject) | independent Beta(TP+1, FP+1) |
| `f1` | majority votes over the must/not mix | independent, U ~ Beta(TP+1, FP+FN+2) |

Trials of one subject within a case are exchangeable, so `activation_rate` never pairs trial
t of one subject with trial t of the other: only each case's counts enter, and permuting
trial indices within a case changes nothing. For each metric: the difference, its posterior
median and credible interval (`ix.stats.difference.difference_interval`: equal-tailed, or
one-sided on the estimate's side when that would exclude it), P(variant better), a two-sided
`p_value` (exact McNemar where the pairs are real — recall, pass_rate —, the case-level
t-test for activation_rate, none for precision/F1), Holm-adjusted across the variants. The
goal's metric is `primary`; the others are `exploratory` and their numbers unadjusted for
the number of metrics looked at. Each entry names its Holm `family`: `variants:<metric>`.

`flips` lists the cases whose majority vote changed, each tested for a change beyond trial
noise (`ix.stats.flips`: Fisher's exact test of the case's two counts, Tarone's rule across
the comparison's cases, family-wise α = 1 − level): `beyond_noise` says which.

Which pairs are compared is the caller's (`ix.eval.factorial`: one factor at a time).

Cases generated from one original (`variants:`, `probe: paraphrase`; `ix.eval.families`) are
one unit (STATS.md §10): where a metric's cases come in families, every metric is compared
with families as clusters — activation_rate's case-level t with a cluster-robust SE on
G − 1 degrees of freedom, the vote metrics as ratios linearised the same way
(`ix.stats.families.ratio_difference`), no McNemar — and the entry says `n_families`. A run
without perturbations takes the paths above and keeps its numbers exactly.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ix.eval.estimates import LEVEL, num, pair
from ix.eval.families import family_labels
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally
from ix.stats.case_level import case_level_difference
from ix.stats.classification import f1_diff_cdf, f1_diff_cdf_bounds, f1_prob_a_beats_b
from ix.stats.comparisons import (
    diff_cdf,
    diff_cdf_bounds,
    mcnemar_exact,
    paired_diff_cdf,
    paired_diff_cdf_bounds,
    paired_prob_a_beats_b,
    prob_a_beats_b,
)
from ix.stats.difference import difference_interval, posterior_quantile
from ix.stats.families import ratio_difference
from ix.stats.flips import beyond_noise
from ix.stats.power import holm

if TYPE_CHECKING:
    from ix.eval.schemas import Flip

METRICS = ("activation_rate", "recall", "precision", "f1", "pass_rate")
PAIRED = ("activation_rate", "recall", "pass_rate")
#: Metrics whose pairs are real (majority votes paired by case): exact McNemar applies.
REAL_PAIRS = ("recall", "pass_rate")


@dataclass(frozen=True)
class Table:
    """A paired 2×2 table: both pass, control only, variant only, neither."""

    both: int
    control_only: int
    variant_only: int
    neither: int

    @property
    def n(self) -> int:
        return self.both + self.control_only + self.variant_only + self.neither


def _votes(tally: Tally, case: EvalCase) -> bool | None:
    return tally.vote(case)


def paired_tables(control: Tally, variant: Tally, cases: Sequence[EvalCase]) -> dict[str, Table]:
    """The paired 2×2 tables of the metrics whose pairs are real (`REAL_PAIRS`): recall and
    pass_rate pair the two subjects' majority votes case by case. (No table of trials: the
    trials of one subject within a case are exchangeable, so pairing them by index would be
    arbitrary — `activation_rate` compares case-level rates instead.)"""
    recall = [0, 0, 0, 0]
    passes = [0, 0, 0, 0]
    for case in cases:
        va, vb = _votes(control, case), _votes(variant, case)
        if va is not None and vb is not None:
            right_a = va if case.expectation == "must_trigger" else not va
            right_b = vb if case.expectation == "must_trigger" else not vb
            _count(passes, right_a, right_b)
            if case.expectation == "must_trigger":
                _count(recall, va, vb)
    return {"recall": Table(*recall), "pass_rate": Table(*passes)}


def _count(cells: list[int], a: bool, b: bool) -> None:
    cells[0 if a and b else 1 if a else 2 if b else 3] += 1


@dataclass(frozen=True)
class Effect:
    """The posterior of one metric's difference (variant − control): `cdf`, `interval`
    (contains `diff`), `median`, `p_better`; `p_value` the two-sided test of no difference
    (McNemar where pairs are real, the case-level t-test for activation_rate, else None);
    `n` cases (paired metrics) or counts (precision, F1)."""

    control: float | None
    variant: float | None
    cdf: Callable[[float], float]
    interval: tuple[float, float]
    p_better: float
    mcnemar_p: float | None
    n: int
    paired: bool
    diff: float | None = None
    median: float | None = None
    p_value: float | None = None
    #: d ↦ (lo, hi) around cdf(d) without quadrature, where the posterior has them
    #: (`ix.stats.decisions.goal_outcome` reads them first)
    bounds: Callable[[float], tuple[float, float]] | None = None
    #: perturbation families among the `n` cases, the independent units (`ix.eval.families`);
    #: None in a run without them
    n_families: int | None = None
    #: why there is no comparison (a side's metric is undefined: precision with no predicted
    #: positive, F1 with no TP, FP or FN); then `n` is 0 and `p_better` NaN
    not_compared: str | None = None


def effect(metric: str, control: Tally, variant: Tally, cases: Sequence[EvalCase],
           control_metrics: Mapping[str, Any], variant_metrics: Mapping[str, Any],
           tables: dict[str, Table] | None = None, level: float = LEVEL) -> Effect:
    """The posterior of variant − control for `metric`, with an interval that contains the
    observed difference, the posterior median and the two-sided p-value (where one exists)."""
    from dataclasses import replace

    e = _posterior(metric, control, variant, cases, control_metrics, variant_metrics, tables)
    if e.n == 0:
        return e
    diff = e.diff
    if diff is None and e.control is not None and e.variant is not None:
        diff = e.variant - e.control
    # no observed difference (a rate with an empty denominator): the equal-tailed interval
    di = difference_interval(e.cdf, diff if diff is not None else posterior_quantile(e.cdf, 0.5),
                             level=level)
    return replace(e, diff=diff, interval=(di.lo, di.hi), median=di.median)


def _case_counts(tally: Tally, cases: Sequence[EvalCase]) -> list[tuple[int, int]]:
    return [(tally.counts[c.id].passed, tally.counts[c.id].valid) for c in cases]


def _vote_ratio(metric: str, tally: Tally, case: EvalCase) -> tuple[int, int]:
    """Case `case`'s share of `metric` = Σa/Σb as (a, b), from its majority vote ((0, 0)
    without a vote): recall TP/(TP+FN), pass_rate right/voted, precision TP/(TP+FP), F1
    2TP/(2TP+FP+FN)."""
    vote = _votes(tally, case)
    if vote is None:
        return 0, 0
    must = case.expectation == "must_trigger"
    tp, fp, fn = int(must and vote), int(not must and vote), int(must and not vote)
    if metric == "recall":
        return tp, tp + fn
    if metric == "pass_rate":
        return int(vote == must), 1
    if metric == "precision":
        return tp, tp + fp
    return 2 * tp, 2 * tp + fp + fn


def _by_family(metric: str, control: Tally, variant: Tally, cases: Sequence[EvalCase],
               labels: Sequence[str]) -> Effect:
    """`metric`'s posterior with perturbation families as the unit (STATS.md §10): the
    case-level t with CR1 over families (activation_rate), or the ratio of the majority votes
    linearised, CR1 over families (`ix.stats.families.ratio_difference`); no McNemar (pairs
    within a family are not independent)."""
    if metric == "activation_rate":
        must = [i for i, c in enumerate(cases) if c.expectation == "must_trigger"]
        chosen = [cases[i] for i in must]
        m = case_level_difference(_case_counts(control, chosen), _case_counts(variant, chosen),
                                  [labels[i] for i in must])
    else:
        m = ratio_difference([_vote_ratio(metric, control, c) for c in cases],
                             [_vote_ratio(metric, variant, c) for c in cases], labels)
    if m is None:  # no case, or a ratio without a denominator: nothing to compare
        return Effect(control=None, variant=None, cdf=lambda d: float(d >= 0),
                      interval=(float("nan"), float("nan")), p_better=float("nan"),
                      mcnemar_p=None, n=0, paired=True)
    return Effect(control=m.control, variant=m.variant, cdf=m.cdf,
                  interval=(m.quantile(0.025), m.quantile(0.975)), p_better=m.p_better,
                  mcnemar_p=None, n=m.n, paired=True, diff=m.estimate, p_value=m.p_value,
                  n_families=m.n_clusters)


#: The metrics `_by_family` knows (`METRICS`, which a caller may narrow).
_BY_FAMILY = ("activation_rate", "recall", "precision", "f1", "pass_rate")


def _metric_cases(metric: str, cases: Sequence[EvalCase]) -> list[int]:
    """The cases a metric reads: must_trigger cases for activation_rate and recall."""
    if metric in ("activation_rate", "recall"):
        return [i for i, c in enumerate(cases) if c.expectation == "must_trigger"]
    return list(range(len(cases)))


def _posterior(metric: str, control: Tally, variant: Tally, cases: Sequence[EvalCase],
               control_metrics: Mapping[str, Any], variant_metrics: Mapping[str, Any],
               tables: dict[str, Table] | None,
               labels: list[str] | Literal["ask"] | None = "ask") -> Effect:
    """The posterior of the metric's effect (variant − control). `labels`: the cases'
    families (`family_labels(cases)`), when the caller asks about the same cases many times
    (goal sizing: thousands of simulated runs)."""
    if metric in ("precision", "f1"):
        why = _undefined_side(metric, _counts(control_metrics), _counts(variant_metrics))
        if why is not None:
            return Effect(control=_value(metric, control_metrics),
                          variant=_value(metric, variant_metrics), cdf=lambda d: float(d >= 0),
                          interval=(float("nan"), float("nan")), p_better=float("nan"),
                          mcnemar_p=None, n=0, paired=False, not_compared=why)
    if labels == "ask":
        labels = family_labels(cases) if metric in _BY_FAMILY else None
    if labels is not None and metric in _BY_FAMILY:
        read = [labels[i] for i in _metric_cases(metric, cases)]
        if len(set(read)) < len(read):  # the metric's cases come in families
            return _by_family(metric, control, variant, cases, labels)
    if metric == "activation_rate":
        must = [c for c in cases if c.expectation == "must_trigger"]
        m = case_level_difference(_case_counts(control, must), _case_counts(variant, must))
        if m is None:
            return Effect(control=None, variant=None, cdf=lambda d: float(d >= 0),
                          interval=(float("nan"), float("nan")), p_better=float("nan"),
                          mcnemar_p=None, n=0, paired=True)
        return Effect(control=m.control, variant=m.variant, cdf=m.cdf,
                      interval=(m.quantile(0.025), m.quantile(0.975)), p_better=m.p_better,
                      mcnemar_p=None, n=m.n, paired=True, diff=m.estimate,
                      p_value=m.p_value)
    if metric in PAIRED:
        t = (tables or paired_tables(control, variant, cases))[metric]
        # roles swapped so that the functions' "A" is the variant: effect = variant − control
        args = (t.both, t.variant_only, t.control_only, t.neither)
        rate_c = (t.both + t.control_only) / t.n if t.n else None
        rate_v = (t.both + t.variant_only) / t.n if t.n else None
        p = mcnemar_exact(t.control_only, t.variant_only)
        return Effect(
            control=rate_c, variant=rate_v,
            cdf=lambda d: paired_diff_cdf(*args, d),
            interval=(float("nan"), float("nan")),
            p_better=paired_prob_a_beats_b(*args),
            mcnemar_p=p, n=t.n, paired=True, p_value=p,
            bounds=lambda d: paired_diff_cdf_bounds(*args, d),
        )
    tp_c, fp_c, fn_c = (int(control_metrics[k]) for k in ("tp", "fp", "fn"))
    tp_v, fp_v, fn_v = (int(variant_metrics[k]) for k in ("tp", "fp", "fn"))
    if metric == "f1":
        v_args = (tp_v, fp_v, fn_v, tp_c, fp_c, fn_c)
        return Effect(
            control=float(control_metrics["f1"]), variant=float(variant_metrics["f1"]),
            cdf=lambda d: f1_diff_cdf(*v_args, d),
            interval=(float("nan"), float("nan")),
            p_better=f1_prob_a_beats_b(*v_args), mcnemar_p=None,
            n=tp_c + fp_c + fn_c + tp_v + fp_v + fn_v, paired=False,
            bounds=lambda d: f1_diff_cdf_bounds(*v_args, d),
        )
    if metric == "precision":
        kv, nv, kc, nc = tp_v, tp_v + fp_v, tp_c, tp_c + fp_c
    else:
        raise ValueError(f"unknown metric {metric!r}; allowed: {', '.join(METRICS)}")
    return Effect(
        control=kc / nc if nc else None, variant=kv / nv if nv else None,
        cdf=lambda d: diff_cdf(kv, nv, kc, nc, d),
        interval=(float("nan"), float("nan")),
        p_better=prob_a_beats_b(kv, nv, kc, nc), mcnemar_p=None, n=nv + nc, paired=False,
        bounds=lambda d: diff_cdf_bounds(kv, nv, kc, nc, d),
    )


def _undefined_side(metric: str, control: tuple[int, int, int],
                    variant: tuple[int, int, int]) -> str | None:
    """Why `metric` (precision or F1, from (TP, FP, FN)) cannot be compared: a side where it
    is undefined has no data to be better or worse than (STATS.md §8). None when both are
    defined."""
    if metric not in ("precision", "f1"):
        return None
    empty = [side for side, (tp, fp, fn) in (("control", control), ("variant", variant))
             if (tp + fp if metric == "precision" else tp + fp + fn) == 0]
    if not empty:
        return None
    what = ("no predicted positive (TP + FP = 0)" if metric == "precision"
            else "no TP, FP or FN")
    return (f"{metric} is undefined for the {' and the '.join(empty)}: {what}, so there is "
            "nothing to compare")


def _counts(metrics: Mapping[str, Any]) -> tuple[int, int, int]:
    return int(metrics["tp"]), int(metrics["fp"]), int(metrics["fn"])


def _value(metric: str, metrics: Mapping[str, Any]) -> float | None:
    x = metrics.get(metric)
    return None if x is None else float(x)


#: The family of a flip's test: the cases of its comparison (Tarone's rule across them).
FLIPS_FAMILY = "cases"


def flips(control: Tally, variant: Tally, cases: Sequence[EvalCase],
          level: float = LEVEL) -> "list[Flip]":
    """Cases whose majority vote changed between the control and the variant, each with its
    exact test (`p_value`) and whether the change is `beyond_noise`: the family-wise error of
    calling any case of the comparison beyond noise when none differs is ≤ 1 − `level`."""
    tests, bar = beyond_noise(_case_counts(control, cases), _case_counts(variant, cases),
                              alpha=1.0 - level)
    out: list[Flip] = []
    for case, test in zip(cases, tests, strict=True):
        va, vb = _votes(control, case), _votes(variant, case)
        if va is None or vb is None or va == vb or test is None:
            continue
        a, b = control.counts[case.id], variant.counts[case.id]
        right_b = vb if case.expectation == "must_trigger" else not vb
        out.append({
            "probe_id": case.id, "expectation": case.expectation,
            "control_score": num(a.passed / a.valid), "variant_score": num(b.passed / b.valid),
            "now": "correct" if right_b else "wrong",
            "p_value": num(test.p), "beyond_noise": test.p <= bar, "family": FLIPS_FAMILY,
        })
    return out


def compare_subjects(names: Sequence[str], tallies: Sequence[Tally],
                     metrics: Sequence[Mapping[str, Any]], cases: Sequence[EvalCase],
                     level: float = LEVEL, primary: str | None = None,
                     pairs: Sequence[tuple[int, int]] | None = None) -> list[dict[str, Any]]:
    """Each pair (control, variant) of `pairs` — indices into `names`; default every subject
    against the first —, with Holm across the pairs, metric by metric (`variants:<metric>`).

    `primary` is the goal's metric (role "primary"); every other metric is "exploratory":
    its interval, P(better) and p-value are unadjusted for the number of metrics read."""
    if pairs is None:
        pairs = [(0, i) for i in range(1, len(names))]
    out = []
    for c, i in pairs:
        tables = paired_tables(tallies[c], tallies[i], cases)
        block: dict[str, Any] = {"control": names[c], "variant": names[i], "metrics": {},
                                 "flips": flips(tallies[c], tallies[i], cases, level)}
        for metric in METRICS:
            e = effect(metric, tallies[c], tallies[i], cases, metrics[c], metrics[i],
                       tables, level)
            entry: dict[str, Any] = {
                "control": num(e.control), "variant": num(e.variant), "diff": num(e.diff),
                "diff_median": num(e.median), "diff_ci": pair(*e.interval),
                "p_variant_better": num(e.p_better),
                "p_value": num(e.p_value), "p_value_holm": None,
                "mcnemar_p": num(e.mcnemar_p), "mcnemar_p_holm": None,
                "role": "primary" if metric == primary else "exploratory",
                "paired": e.paired, "n": e.n, "family": f"variants:{metric}",
            }
            if e.n_families is not None:
                entry["n_families"] = e.n_families
            if e.not_compared is not None:
                entry["not_compared"] = e.not_compared
            if metric in REAL_PAIRS:
                t = tables[metric]
                entry["table"] = {"both": t.both, "control_only": t.control_only,
                                  "variant_only": t.variant_only, "neither": t.neither}
            block["metrics"][metric] = entry
        out.append(block)
    for metric in METRICS:
        for raw_key, adj_key in (("p_value", "p_value_holm"), ("mcnemar_p", "mcnemar_p_holm")):
            raw = [b["metrics"][metric][raw_key] for b in out]
            if all(p is None for p in raw):
                continue
            adjusted = holm([p if p is not None else 1.0 for p in raw])
            for b, p, r in zip(out, adjusted, raw, strict=True):
                b["metrics"][metric][adj_key] = num(p) if r is not None else None
    return out
