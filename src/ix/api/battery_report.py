"""A battery's combined report (`report.json`, `report.md`): each run's verdict, the primary
metric pooled over the seeds per experiment × subject, and every run × subject."""

from typing import Any

from ix.engine.run import RunResult
from ix.report.answer import goal_verdict, metric_name, primary_metric
from ix.report.markdown import md_text
from ix.report.seeds import KINDS, METHODS, pooled


def combined_report(name: str, results: list[RunResult]) -> dict[str, Any]:
    """The battery's report: one row per run × subject, each run's verdict (status, reason,
    the goal's verdict line), and per experiment × subject the primary metric pooled across
    the seeds with how much the seeds disagree (`ix.report.seeds`)."""
    rows = []
    verdicts = []
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for r in results:
        s = r.summary
        goal = s.get("goal")
        verdicts.append({
            "experiment": s["experiment_name"], "seed": s.get("seed"), "run_id": s["run_id"],
            "status": s["run_status"], "reason": s.get("reason") or s.get("stop_reason"),
            "goal": goal["verdict"] if goal else None,
            "verdict": goal_verdict(goal) if goal else None})
        metric = primary_metric(s)
        for block in s["subjects"]:
            m = block["metrics"]
            rows.append({
                "experiment": s["experiment_name"], "seed": s.get("seed"),
                "run_id": s["run_id"], "status": s["run_status"], "subject": block["name"],
                "f1": m["f1"], "f1_ci": m.get("f1_ci"), "precision": m["precision"],
                "recall": m["recall"], "trials": block["trials"], "errors": block["errors"],
                "cost_usd": (block.get("usage") or {}).get("cost_usd", 0.0),
                "goal": goal["verdict"] if goal else None,
            })
            group = groups.setdefault((s["experiment_name"], block["name"]),
                                      {"metric": metric, "blocks": [], "seeds": []})
            group["blocks"].append(block)
            group["seeds"].append(s.get("seed"))
    pooled_rows = [{"experiment": experiment, "subject": subject,
                    **pooled(g["blocks"], g["seeds"], g["metric"])}
                   for (experiment, subject), g in groups.items()]
    return {"battery": name, "runs": len(results),
            "completed": sum(r.status == "completed" for r in results), "verdicts": verdicts,
            "pooled": pooled_rows, "rows": rows}


def outcome_lines(report: dict[str, Any]) -> list[str]:
    """Why a battery did not simply succeed, one line per run that failed, was cancelled or
    refuted its goal (what `ix batch` prints on stderr)."""
    lines = []
    for v in report["verdicts"]:
        where = f"run {v['run_id']} ({v['experiment']}, seed {v['seed']})"
        if v["status"] == "failed":
            lines.append(f"{where} failed: {v['reason'] or 'see its summary'}")
        elif v["status"] == "cancelled":
            lines.append(f"{where} was cancelled"
                         + (f" ({v['reason']})" if v["reason"] else ""))
        if v["goal"] == "refuted":
            lines.append(f"goal refuted in {where}: {v['verdict']}")
    return lines


def _goal_tallies(verdicts: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """Per experiment with a goal: how its seeds' verdicts split (`supported 1, inconclusive
    2`): whether the seeds agree."""
    by: dict[str, list[str]] = {}
    for v in verdicts:
        if v["goal"] is not None:
            by.setdefault(v["experiment"], []).append(v["goal"])
    return [(e, len(vs), ", ".join(f"{w} {vs.count(w)}" for w in dict.fromkeys(sorted(vs))))
            for e, vs in by.items()]


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci and None not in ci else "[n/a]"


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def report_markdown(report: dict[str, Any]) -> str:
    """The combined report as GitHub Markdown (never hard-wrapped); names are escaped
    (`md_text`). Each run's verdict first, then the pooled metric, then every run × subject."""
    lines = [f"# Battery {md_text(report['battery'])}", "",
             f"{report['completed']} of {report['runs']} runs completed.", ""]
    trouble = outcome_lines(report)
    if trouble:
        lines += [f"- **{md_text(t)}**" for t in trouble] + [""]
    lines += ["## Verdicts", "", "| experiment | seed | run | status | goal |",
              "|---|---|---|---|---|"]
    for v in report["verdicts"]:
        status = v["status"] + (f": {v['reason']}" if v["reason"] else "")
        lines.append(f"| {md_text(v['experiment'])} | {md_text(v['seed'])} | "
                     f"{md_text(v['run_id'])} | {md_text(status)} | "
                     f"{md_text(v['verdict'] or 'no goal stated')} |")
    lines += ["", "## Across seeds", "",
              "Per experiment × subject: the mean of the seeds' own values; the metric pooled "
              "over the seeds with its 95% interval (F1, precision, recall, correct rate: one "
              "majority vote per case over every seed's trials — a vote over more trials, so "
              "not the same quantity as a seed's value); and how much the seeds disagree "
              "(each seed's own value, their range and standard deviation).", "",
              "| experiment | subject | metric | mean of seeds | pooled [95% CI] | interval "
              "| cases | seeds | per seed | range | sd |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in report["pooled"]:
        sp = p["spread"]
        per_seed = ", ".join(f"{x['seed']}: {_f(x['value'])}" for x in p["per_seed"])
        lines.append(f"| {md_text(p['experiment'])} | {md_text(p['subject'])} | "
                     f"{md_text(metric_name(p['metric']))} | {_f(p.get('seed_mean'))} | "
                     f"{_f(p['value'])} {_ci(p['ci'])} "
                     f"| {md_text(p['interval'])} | {p['cases']} | {p['seeds']} | "
                     f"{md_text(per_seed)} | {_f(sp['range'])} | {_f(sp['sd'])} |")
    lines.append("")

    used = {p["interval"] for p in report["pooled"]}
    lines += [f"- *{md_text(KINDS[k])}*: {md_text(METHODS[k])}." for k in KINDS
              if KINDS[k] in used]
    lines += [f"- goal of {md_text(e)} across {n} seed(s): {md_text(tally)}."
              for e, n, tally in _goal_tallies(report["verdicts"])]
    lines += ["", "## Runs", "",
              "| experiment | seed | subject | F1 [95% CI] | precision | recall | trials | "
              "errors | cost (USD) | status |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        ci = row["f1_ci"] or [None, None]
        interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci[0] is not None else ""
        lines.append(f"| {md_text(row['experiment'])} | {md_text(row['seed'])} | "
                     f"{md_text(row['subject'])} | {_f(row['f1'])} {md_text(interval)} | "
                     f"{_f(row['precision'])} | {_f(row['recall'])} | {row['trials']} | "
                     f"{row['errors']} | {row['cost_usd']:.4f} | {md_text(row['status'])} |")
    return "\n".join(lines) + "\n"
