"""Each variant against the control, metric by metric (STATS.md §2, §3, §10).

Subjects of one experiment run the same cases and the same trial indices, so most metrics
compare as *paired* proportions:

| metric | what is paired | posterior of variant − control |
|---|---|---|
| `activation_rate` | must_trigger trials, by (case, trial) | Dirichlet over the 2×2 table |
| `recall` | must_trigger cases' majority votes | Dirichlet over the 2×2 table |
| `pass_rate` | every case's majority-vote correctness | Dirichlet over the 2×2 table |
| `precision` | (not pairable: its cases differ by subject) | independent Beta(TP+1, FP+1) |
| `f1` | (not pairable) | independent, through U ~ Beta(TP+1, FP+FN+2) |

For each: the difference with its credible interval, P(variant better), the exact McNemar
p-value where a paired binary table exists, Holm-adjusted across the variants.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ix.eval.estimates import LEVEL, num, pair
from ix.eval.models import EvalCase
from ix.eval.scoring import Tally

METRICS = ("activation_rate", "recall", "precision", "f1", "pass_rate")
PAIRED = ("activation_rate", "recall", "pass_rate")


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


def _popcount(x: int) -> int:
    return bin(x).count("1")


def _votes(tally: Tally, case: EvalCase) -> bool | None:
    c = tally.counts[case.id]
    return None if not c.valid else c.passed / c.valid > 0.5


def paired_tables(control: Tally, variant: Tally, cases: Sequence[EvalCase]) -> dict[str, Table]:
    """The paired 2×2 tables of the metrics that pair (`PAIRED`)."""
    trials = [0, 0, 0, 0]
    recall = [0, 0, 0, 0]
    passes = [0, 0, 0, 0]
    for case in cases:
        a, b = control.counts[case.id], variant.counts[case.id]
        va, vb = _votes(control, case), _votes(variant, case)
        if va is not None and vb is not None:
            right_a = va if case.expectation == "must_trigger" else not va
            right_b = vb if case.expectation == "must_trigger" else not vb
            _count(passes, right_a, right_b)
            if case.expectation == "must_trigger":
                _count(recall, va, vb)
        if case.expectation == "must_trigger":
            shared = a.valid_bits & b.valid_bits
            pa, pb = a.passed_bits & shared, b.passed_bits & shared
            both = _popcount(pa & pb)
            a_only = _popcount(pa & ~pb)
            b_only = _popcount(pb & ~pa)
            trials[0] += both
            trials[1] += a_only
            trials[2] += b_only
            trials[3] += _popcount(shared) - both - a_only - b_only
    return {"activation_rate": Table(*trials), "recall": Table(*recall),
            "pass_rate": Table(*passes)}


def _count(cells: list[int], a: bool, b: bool) -> None:
    cells[0 if a and b else 1 if a else 2 if b else 3] += 1


@dataclass(frozen=True)
class Effect:
    """The posterior of one metric's difference (variant − control)."""

    control: float | None
    variant: float | None
    cdf: Callable[[float], float]
    interval: tuple[float, float]
    p_better: float
    mcnemar_p: float | None
    n: int
    paired: bool


def effect(metric: str, control: Tally, variant: Tally, cases: Sequence[EvalCase],
           control_metrics: dict[str, Any], variant_metrics: dict[str, Any],
           tables: dict[str, Table] | None = None, level: float = LEVEL) -> Effect:
    """The posterior of variant − control for `metric`."""
    from ix.stats.classification import f1_diff_cdf, f1_diff_interval, f1_prob_a_beats_b
    from ix.stats.comparisons import (
        diff_cdf,
        diff_interval,
        mcnemar_exact,
        paired_diff_cdf,
        paired_diff_interval,
        paired_prob_a_beats_b,
        prob_a_beats_b,
    )

    if metric in PAIRED:
        t = (tables or paired_tables(control, variant, cases))[metric]
        # roles swapped so that the functions' "A" is the variant: effect = variant − control
        args = (t.both, t.variant_only, t.control_only, t.neither)
        rate_c = (t.both + t.control_only) / t.n if t.n else None
        rate_v = (t.both + t.variant_only) / t.n if t.n else None
        return Effect(
            control=rate_c, variant=rate_v,
            cdf=lambda d: paired_diff_cdf(*args, d),
            interval=paired_diff_interval(*args, level=level),
            p_better=paired_prob_a_beats_b(*args),
            mcnemar_p=mcnemar_exact(t.control_only, t.variant_only),
            n=t.n, paired=True,
        )
    tp_c, fp_c, fn_c = (int(control_metrics[k]) for k in ("tp", "fp", "fn"))
    tp_v, fp_v, fn_v = (int(variant_metrics[k]) for k in ("tp", "fp", "fn"))
    if metric == "f1":
        v_args = (tp_v, fp_v, fn_v, tp_c, fp_c, fn_c)
        return Effect(
            control=float(control_metrics["f1"]), variant=float(variant_metrics["f1"]),
            cdf=lambda d: f1_diff_cdf(*v_args, d),
            interval=f1_diff_interval(*v_args, level=level),
            p_better=f1_prob_a_beats_b(*v_args), mcnemar_p=None,
            n=tp_c + fp_c + fn_c + tp_v + fp_v + fn_v, paired=False,
        )
    if metric == "precision":
        kv, nv, kc, nc = tp_v, tp_v + fp_v, tp_c, tp_c + fp_c
    else:
        raise ValueError(f"unknown metric {metric!r}; allowed: {', '.join(METRICS)}")
    return Effect(
        control=kc / nc if nc else None, variant=kv / nv if nv else None,
        cdf=lambda d: diff_cdf(kv, nv, kc, nc, d),
        interval=diff_interval(kv, nv, kc, nc, level=level),
        p_better=prob_a_beats_b(kv, nv, kc, nc), mcnemar_p=None, n=nv + nc, paired=False,
    )


def flips(control: Tally, variant: Tally, cases: Sequence[EvalCase]) -> list[dict[str, Any]]:
    """Cases whose majority vote changed between the control and the variant."""
    out = []
    for case in cases:
        va, vb = _votes(control, case), _votes(variant, case)
        if va is None or vb is None or va == vb:
            continue
        a, b = control.counts[case.id], variant.counts[case.id]
        right_b = vb if case.expectation == "must_trigger" else not vb
        out.append({
            "probe_id": case.id, "expectation": case.expectation,
            "control_score": num(a.passed / a.valid), "variant_score": num(b.passed / b.valid),
            "now": "correct" if right_b else "wrong",
        })
    return out


def compare_subjects(names: Sequence[str], tallies: Sequence[Tally],
                     metrics: Sequence[dict[str, Any]], cases: Sequence[EvalCase],
                     level: float = LEVEL) -> list[dict[str, Any]]:
    """Every variant against the control (the first subject), with Holm across variants."""
    from ix.stats.power import holm

    if len(names) < 2:
        return []
    out = []
    for i in range(1, len(names)):
        tables = paired_tables(tallies[0], tallies[i], cases)
        block: dict[str, Any] = {"control": names[0], "variant": names[i], "metrics": {},
                                 "flips": flips(tallies[0], tallies[i], cases)}
        for metric in METRICS:
            e = effect(metric, tallies[0], tallies[i], cases, metrics[0], metrics[i],
                       tables, level)
            diff = (e.variant - e.control) if e.variant is not None and e.control is not None \
                else None
            entry: dict[str, Any] = {
                "control": num(e.control), "variant": num(e.variant), "diff": num(diff),
                "diff_ci": pair(*e.interval), "p_variant_better": num(e.p_better),
                "mcnemar_p": num(e.mcnemar_p), "mcnemar_p_holm": None,
                "paired": e.paired, "n": e.n,
            }
            if metric in tables:
                t = tables[metric]
                entry["table"] = {"both": t.both, "control_only": t.control_only,
                                  "variant_only": t.variant_only, "neither": t.neither}
            block["metrics"][metric] = entry
        out.append(block)
    for metric in PAIRED:
        raw = [b["metrics"][metric]["mcnemar_p"] for b in out]
        adjusted = holm([p if p is not None else 1.0 for p in raw])
        for b, p in zip(out, adjusted, strict=True):
            b["metrics"][metric]["mcnemar_p_holm"] = num(p)
    return out
