"""`ix compare`: runs of one experiment side by side (e.g. before and after a description edit).

Each later run is compared with the first, subject by subject, on the summaries alone:
recall and correct rate pair the runs' votes case by case (the cases are the same files; the
majority votes, or the verdicts a run's `scorers:` recorded), precision and F1 compare
independent posteriors, and the activation rate compares per-case must_trigger rates case by
case (`ix.stats.case_level`: the mean over prompts of the difference, between-case spread
included) — the statistics of a run's comparisons. Every interval contains its printed
difference; `p_value` is the two-sided test where one exists (McNemar, the case-level
t-test), null for precision and F1.

Every sensor of the summaries (their `sensors` blocks, issue 20) is compared too, with the
machinery of a run's own per-sensor comparisons (`ix.eval.sensor_summary`): each run's pass
rate over the shared cases with its interval, and the case-level difference of the per-case
rates — exploratory, outside the verdict and the regression gate.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ix.domain.verdicts import CaseTrials
from ix.eval.comparisons import effect, flips
from ix.eval.models import EvalCase
from ix.eval.numbers import num, pair
from ix.eval.scoring import Tally
from ix.eval.sensor_summary import compare_sensors, sensors_block

if TYPE_CHECKING:
    from ix.report.schemas import RunComparisons, RunSensorChange, RunSubjectComparison

RUN_METRICS = ("recall", "precision", "f1", "pass_rate", "activation_rate")


@dataclass(frozen=True)
class _Recorded:
    """The verdicts a run's summary recorded, whatever scorer made them (`scorers:`): a
    run decided by `all` is compared on its own verdicts, not on majority votes."""

    correct: Mapping[str, bool]

    def verdict(self, case: CaseTrials) -> bool:
        return self.correct[case.probe_id]


def _tally(block: dict[str, Any], cases: list[EvalCase],
           scorer: Mapping[str, Any] | None = None) -> Tally:
    by_id = {p["probe_id"]: p for p in block["probe_results"]}
    tally = Tally(cases)
    if scorer is not None and scorer.get("kind") != "majority":
        tally.scorer = _Recorded({c.id: bool(by_id[c.id]["correct"]) for c in cases})
    for c in cases:
        p = by_id[c.id]
        counts = tally.counts[c.id]
        counts.valid, counts.passed, counts.errors = p["n"], p["passed"], p.get("errors", 0)
    for name, s in (block.get("sensors") or {}).items():  # case -> [passed, valid] per sensor
        tally.sensors[name] = {cid: [cell["passed"], cell["n"]] for cid, cell in s["cases"].items()}
    return tally


def _sensors(block_a: Mapping[str, Any], block_b: Mapping[str, Any], ta: Tally, tb: Tally,
             cases: list[EvalCase], priors: tuple[str, str]) -> "dict[str, RunSensorChange]":
    """Each sensor of either run (the baseline's order): its pass rate in each run over the
    shared `cases`, and the case-level difference (`compare_sensors`, the summary's own)."""
    names = list(dict.fromkeys([*(block_a.get("sensors") or {}),
                                *(block_b.get("sensors") or {})]))
    rates_a = sensors_block(ta, names, cases, prior=priors[0])
    rates_b = sensors_block(tb, names, cases, prior=priors[1])
    changes = compare_sensors([ta, tb], names, cases)[0]
    first = next(iter(block_b.get("sensors") or {}), None)
    out: dict[str, RunSensorChange] = {}
    for name in names:
        m, a, b = changes[name], rates_a[name], rates_b[name]
        out[name] = {
            "before": m["control"], "after": m["variant"], "diff": m["diff"],
            "diff_median": m["diff_median"], "diff_ci": m["diff_ci"],
            "p_better": m["p_variant_better"], "p_value": m["p_value"], "paired": True,
            "primary": name == first, "n": m["n"],
            "rate_before": {"rate": a["rate"], "rate_ci": a["rate_ci"], "passed": a["passed"],
                            "n": a["n"]},
            "rate_after": {"rate": b["rate"], "rate_ci": b["rate_ci"], "passed": b["passed"],
                           "n": b["n"]}}
    return out


def compare_runs(summaries: Sequence[Mapping[str, Any]]) -> "RunComparisons":
    """The first summary is the baseline; every other is compared with it."""
    base = summaries[0]
    out: RunComparisons = {"baseline": base["run_id"], "experiment": base["experiment_name"],
                          "comparisons": []}
    for other in summaries[1:]:
        for block_b in other["subjects"]:
            block_a = next((b for b in base["subjects"] if b["name"] == block_b["name"]), None)
            if block_a is None:
                continue
            ids_a = {p["probe_id"]: p for p in block_a["probe_results"] if p["n"]}
            ids_b = {p["probe_id"]: p for p in block_b["probe_results"] if p["n"]}
            shared = sorted(set(ids_a) & set(ids_b))
            if not shared:
                out["comparisons"].append({"run": other["run_id"], "subject": block_b["name"],
                                           "error": "no case in common with the baseline"})
                continue
            cases = [EvalCase(id=i, prompt="-", expectation=ids_a[i]["expectation"])
                     for i in shared]
            ta = _tally(block_a, cases, base.get("scorer"))
            tb = _tally(block_b, cases, other.get("scorer"))
            ma = ta.results("")
            mb = tb.results("")
            metrics_a = {"tp": ma.tp, "fp": ma.fp, "fn": ma.fn, "f1": ma.f1,
                         "precision": ma.precision}
            metrics_b = {"tp": mb.tp, "fp": mb.fp, "fn": mb.fn, "f1": mb.f1,
                         "precision": mb.precision}
            entry: RunSubjectComparison = {
                "run": other["run_id"], "subject": block_b["name"], "cases": len(shared),
                "metrics": {}, "flips": flips(ta, tb, cases), "verdict": ""}
            for metric in RUN_METRICS:
                e = effect(metric, ta, tb, cases, metrics_a, metrics_b)
                if metric == "activation_rate" and e.n == 0:
                    continue
                entry["metrics"][metric] = {
                    "before": num(e.control), "after": num(e.variant), "diff": num(e.diff),
                    "diff_median": num(e.median), "diff_ci": pair(*e.interval),
                    "p_better": num(e.p_better), "p_value": num(e.p_value),
                    "paired": e.paired}
                if e.not_compared is not None:  # undefined on a side: say why, no P(better)
                    entry["metrics"][metric]["not_compared"] = e.not_compared
            if block_a.get("sensors") or block_b.get("sensors"):
                entry["sensors"] = _sensors(block_a, block_b, ta, tb, cases,
                                            (base.get("prior", "uniform"),
                                             other.get("prior", "uniform")))
            entry["verdict"] = _verdict(entry)
            out["comparisons"].append(entry)
    return out


def _verdict(entry: "RunSubjectComparison") -> str:
    """One line: which metrics credibly moved (their 95% interval excludes 0)."""
    up, down = [], []
    for metric, m in entry["metrics"].items():
        lo, hi = m["diff_ci"]
        if lo is not None and lo > 0:
            up.append(metric)
        elif hi is not None and hi < 0:
            down.append(metric)
    name = f"{entry['subject']} in {entry['run']}"
    flips = entry["flips"]
    flipped = f"{len(flips)} case(s) flipped"
    if flips and all("beyond_noise" in f for f in flips):
        flipped += f", {sum(1 for f in flips if f['beyond_noise'])} beyond trial noise"
    if not up and not down:
        return f"{name}: no credible change on any metric ({flipped})"
    parts = []
    if up:
        parts.append("credibly better on " + ", ".join(up))
    if down:
        parts.append("credibly worse on " + ", ".join(down))
    return f"{name}: " + "; ".join(parts) + f" ({flipped})"
