"""The first screen of a run: what `ix run` prints and what every `ix report` leads with.

One screenful per experiment (issue 33): the verdict, one line per subject (the judged
metric with its interval, n, status), the comparison that answers the question (the deltas
against the control; by context length, the trend; for a sweep, the grid), the cases that
matter (at most `CASES_SHOWN`, worst first) and the command for everything else. Built from
the summary alone — no trial is read and nothing is recomputed — as plain data, so the
terminal, Markdown, HTML and JSON forms say the same thing.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ix.lab.sweep import grid_words
from ix.report.answer import goal_lines, metric_name, primary_metric
from ix.report.gate_text import gate_lines
from ix.report.judge_text import caveat_lines

#: The cases `ix run` and the head of `ix report` show at most; `ix report` lists them all.
CASES_SHOWN = 10
#: Conditions shown side by side in the cases table; with more, the goal's pair (else the
#: control and the variant with the most wrong cases) and a count over all of them.
CONDITIONS_SHOWN = 4


def screen(summary: Mapping[str, Any], sweep: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The first screen of `summary`'s run as data (docs/json.md, "screen"); `sweep` is the
    sweep table (`ix.report.sweep.sweep_report`: its P(best) needs scipy, so the caller that
    has it passes it; without it a sweep's answer is its comparisons)."""
    metric = primary_metric(summary)
    sensor = summary.get("sensor")
    blocks = list(summary.get("subjects") or [])
    goal = summary.get("goal")
    compare = list((goal or {}).get("compare") or [])
    control = blocks[0]["name"] if blocks else None
    out: dict[str, Any] = {
        "experiment": summary.get("experiment_name"),
        "run_id": summary.get("run_id"),
        "status": summary.get("run_status"),
        "reason": (None if summary.get("run_status") == "completed"
                   else summary.get("reason") or summary.get("stop_reason")),
        "cases": len(blocks[0]["probe_results"]) if blocks else 0,
        "trials_per_case": summary.get("trials_per_case"),
        "metric": metric,
        "metric_label": metric_name(metric, sensor),
        "verdict": goal_lines(goal, sensor, summary.get("looks")),
        "headline": None,
        "subjects": [_subject(b, metric, b["name"] == control and len(blocks) > 1, compare)
                     for b in blocks],
        "answer": _answer(summary, metric, sensor, sweep),
        "errors": sum(int(b.get("errors") or 0) for b in blocks),
        "skipped_cases": len(summary.get("skipped_cases") or []),
        "level": float((summary.get("statistics") or {}).get("level") or 0.95),
    }
    out.update(_cases(summary, blocks, compare))
    caveat = caveat_lines(summary, summary.get("run_id"))
    if caveat:
        out["judge"] = caveat
    below = gate_lines(summary.get("gates") or [])
    if below:
        out["gates"] = below
    if not out["verdict"] and out["subjects"]:
        first = out["subjects"][0]
        out["headline"] = {"subject": first["name"], "metric": metric, "value": first["value"],
                           "ci": first["ci"]}
    return out


def _subject(block: Mapping[str, Any], metric: str, is_control: bool,
             compare: Sequence[str]) -> dict[str, Any]:
    """One subject's line: the judged metric with its interval and the n it counts."""
    m = block.get("metrics") or {}
    value, ci, n, unit = None, None, 0, "cases"
    tp, fp, fn, tn = (int(m.get(k) or 0) for k in ("tp", "fp", "fn", "tn"))
    if metric in ("f1", "precision", "recall"):
        value, ci = m.get(metric), m.get(f"{metric}_ci")
        n = {"f1": tp + fp + fn + tn, "precision": tp + fp, "recall": tp + fn}[metric]
        unit = {"f1": "cases", "precision": "invoked cases", "recall": "must cases"}[metric]
    elif metric == "activation_rate":
        rate = (block.get("trial_level") or {}).get("must_trigger") or {}
        value, ci, n, unit = rate.get("rate"), rate.get("ci"), int(rate.get("n_cases") or 0), \
            "must cases"
    elif "pass_rate" in m:  # the correct rate with its interval, as the summary has it (2.6)
        value, ci, n = m["pass_rate"], m.get("pass_rate_ci"), tp + fp + fn + tn
    else:  # a summary written before 2.6: the rate from its cases, without an interval
        voted = [p for p in block.get("probe_results") or [] if p.get("score") is not None]
        n = len(voted)
        value = sum(1 for p in voted if p.get("correct")) / n if n else None
    errored = bool(block.get("trials")) and block.get("errors", 0) >= block.get("trials", 0)
    status = "all trials errored" if errored else \
        (block.get("interpretation") or {}).get("status") or "n/a"
    role = ("control" if block["name"] == (compare[0] if compare else None) or
            (is_control and not compare) else
            "treatment" if len(compare) > 1 and block["name"] == compare[1] else None)
    return {"name": block["name"], "role": role, "value": None if errored else value,
            "ci": None if errored else ci, "n": n, "unit": unit, "status": status,
            "errors": int(block.get("errors") or 0)}


def _answer(summary: Mapping[str, Any], metric: str, sensor: str | None,
            sweep: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The comparison that answers the question; None for one subject."""
    context = summary.get("context")
    if context:
        return _by_length(summary, context, metric)
    if summary.get("sweep") and sweep is not None:
        return {"kind": "sweep", "metric": sweep["metric"],
                "metric_label": metric_name(sweep["metric"], sensor),
                "subject": sweep["subject"],
                "grid": grid_words(sweep["keys"], len(sweep["ablate"])),
                "rows": [{"subject": r["subject"], "value": r["value"], "ci": r["ci"],
                          "p_best": r["p_best"]} for r in sweep["rows"]],
                "best": sweep.get("best")}
    comparisons = summary.get("comparisons") or []
    if not comparisons:
        return None
    rows = []
    for c in comparisons:
        m = (c.get("metrics") or {}).get(metric) or {}
        beyond = [f["probe_id"] for f in c.get("flips") or [] if f.get("beyond_noise", True)]
        rows.append({"variant": c["variant"], "control": c["control"],
                     "value": m.get("variant"), "control_value": m.get("control"),
                     "diff": m.get("diff"), "diff_ci": m.get("diff_ci"),
                     "p_better": m.get("p_variant_better"), "p_holm": m.get("p_value_holm"),
                     "not_compared": m.get("not_compared"), "flipped": beyond,
                     "changed_within_noise": len(c.get("flips") or []) - len(beyond)})
    return {"kind": "comparisons", "metric": metric,
            "metric_label": metric_name(metric, sensor), "rows": rows}


def _by_length(summary: Mapping[str, Any], context: Mapping[str, Any],
               metric: str) -> dict[str, Any]:
    """Per subject: the metric at every context length, the trend per doubling with its
    interval, and the interaction with the control's trend."""
    key = metric if metric in ("activation_rate", "recall", "precision", "f1") else \
        "activation_rate"
    rows = []
    for s in context["subjects"]:
        t, i = s.get("trend") or {}, s.get("interaction")
        rows.append({
            "subject": s["subject"],
            "values": {str(r["length"]): r.get(key) for r in s["lengths"]},
            "trend": t.get("slope"), "trend_ci": t.get("slope_ci"),
            "p_declines": t.get("p_decline"), "n_cases": t.get("n_cases"),
            "interaction": None if i is None else {
                "versus": i["versus"], "diff": i["diff"], "diff_ci": i["diff_ci"],
                "p_declines_faster": i["p_lower"], "p_holm": i["p_value_holm"]}})
    unit = str(context["unit"]).replace("_", " ")
    return {"kind": "context", "metric": key,
            "metric_label": metric_name(key, summary.get("sensor")),
            "trend_metric": "activation_rate", "unit": unit, "prefix": context.get("prefix"),
            "lengths": list(context["lengths"]), "rows": rows}


def _cases(summary: Mapping[str, Any], blocks: list[Mapping[str, Any]],
           compare: Sequence[str]) -> dict[str, Any]:
    """The cases that matter: wrong, without a score, unsettled or flipped beyond noise in
    some subject; worst first (wrong in the most subjects)."""
    names = [b["name"] for b in blocks]
    if len(names) <= CONDITIONS_SHOWN:
        shown = names
    elif len(compare) == 2 and set(compare) <= set(names):
        shown = list(compare)
    else:
        worst = {b["name"]: sum(1 for p in b["probe_results"]
                                if p.get("score") is not None and not p.get("correct"))
                 for b in blocks[1:]}
        shown = [names[0], max(worst, key=lambda n: worst[n])]
    flipped = {f["probe_id"] for c in summary.get("comparisons") or []
               for f in c.get("flips") or [] if f.get("beyond_noise", True)}
    unsettled = {u["probe_id"] for b in blocks for u in b.get("unsettled") or []}
    by_case: dict[str, dict[str, Mapping[str, Any]]] = {}
    order: dict[str, int] = {}
    expect: dict[str, str] = {}
    for b in blocks:
        for p in b["probe_results"]:
            order.setdefault(p["probe_id"], len(order))
            expect[p["probe_id"]] = p["expectation"]
            by_case.setdefault(p["probe_id"], {})[b["name"]] = p
    rows: list[dict[str, Any]] = []
    for case, cells in by_case.items():
        wrong = sum(1 for p in cells.values() if p.get("score") is not None
                    and not p.get("correct"))
        errored = sum(1 for p in cells.values() if p.get("score") is None)
        if not (wrong or errored or case in unsettled or case in flipped):
            continue
        rows.append({"probe_id": case, "expectation": expect[case], "wrong_in": wrong,
                     "errored_in": errored, "of": len(cells),
                     "unsettled": case in unsettled, "flipped": case in flipped,
                     "cells": {n: _cell(cells.get(n)) for n in shown}})
    rows.sort(key=lambda r: (-r["wrong_in"], -r["errored_in"], not r["flipped"],
                             not r["unsettled"], order[r["probe_id"]]))
    return {"case_columns": shown, "cases_that_matter": rows[:CASES_SHOWN],
            "cases_that_matter_total": len(rows), "conditions": len(names)}


def _cell(p: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"hits": p.get("passed"), "n": p.get("n"), "score": p.get("score"),
            "right": None if p.get("score") is None else bool(p.get("correct")),
            "errors": p.get("errors", 0)}
