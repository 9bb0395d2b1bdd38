"""`ix report`: one run as data — the summary table, leaderboard, per-case score breakdown,
failure analysis and cost — built from the run's `summary.json` and its trial lines.

Scores and failures use the attempt that stands (DESIGN.md §3: the latest attempt of each
(subject, probe_id, trial)); cost counts every attempt, since every attempt was paid for.
The result is plain JSON data; `ix.report.terminal` and `ix.report.markdown` render it.
"""

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ix.eval.estimates import num
from ix.eval.routing import is_target, taken_by
from ix.report import figures
from ix.report.answer import answer, primary_metric
from ix.report.leaderboard import counts_of, leaderboard
from ix.report.screen import screen
from ix.report.sweep import sweep_report
from ix.stats.describe import describe
from ix.store.trial_lines import invoked_skills
from ix.store.trial_lines import standing as standing_lines

if TYPE_CHECKING:
    from ix.report.schemas import (
        Annotation,
        AstrayCase,
        BreakdownRow,
        Cost,
        Failures,
        ReportOutput,
        ScoreStats,
        Screen,
        SubjectRouting,
        SummaryTable,
    )

#: How many example messages the failure analysis keeps per error kind.
EXAMPLES = 3
_MESSAGE_CHARS = 300


def summary_table(summary: Mapping[str, Any]) -> "SummaryTable":
    """Subjects × cases: each case's activation rate with its interval, and each subject's
    metrics."""
    names = [b["name"] for b in summary["subjects"]]
    cases: dict[str, dict[str, Any]] = {}
    for block in summary["subjects"]:
        for p in block["probe_results"]:
            row = cases.setdefault(p["probe_id"], {"probe_id": p["probe_id"],
                                                   "expectation": p["expectation"],
                                                   "by_subject": {}})
            row["by_subject"][block["name"]] = {
                "score": p["score"], "score_ci": p.get("score_ci"), "passed": p["passed"],
                "n": p["n"], "errors": p.get("errors", 0), "correct": p.get("correct")}
    metrics = {}
    for block in summary["subjects"]:
        m = block["metrics"]
        metrics[block["name"]] = {
            **{k: m.get(k) for k in ("precision", "precision_ci", "recall", "recall_ci", "f1",
                                     "f1_ci", "tp", "fp", "fn", "tn")},
            "errors": block.get("errors", 0), "trials": block.get("trials"),
            "status": (block.get("interpretation") or {}).get("status"),
            "specificity": m.get("specificity"), "specificity_ci": m.get("specificity_ci"),
            "reliability": block.get("reliability"), "unsettled": block.get("unsettled")}
    # rows and cells are filled by key above: the checker takes their type from here
    return cast("SummaryTable", {"subjects": names, "cases": list(cases.values()),
                                  "metrics": metrics})


def _standing_trials(trials: Iterable[dict[str, Any]]) -> tuple[
        dict[tuple[str, str, int], dict[str, Any]], dict[str, Any], dict[str, int]]:
    """The standing attempt of each trial (`ix.store.trial_lines.standing`), the cost of every
    attempt, and how many errored attempts a retry superseded (per error kind). `trials` are
    one run's lines."""
    superseded_errors: dict[str, int] = {}
    cost: dict[str, Any] = {"by_subject": {}, "by_case": {}, "total": _usage()}

    def kept(t: dict[str, Any]) -> dict[str, Any]:
        """What the report needs of a line, not its observation (contents can be large)."""
        obs = t.get("observation") or {}
        subject, probe_id = str(t.get("subject")), str(t.get("probe_id"))
        for bucket in (cost["total"], cost["by_subject"].setdefault(subject, _usage()),
                       cost["by_case"].setdefault(probe_id, _usage())):
            bucket["attempts"] += 1
            bucket["tokens_input"] += int(obs.get("tokens_input") or 0)
            bucket["tokens_output"] += int(obs.get("tokens_output") or 0)
            bucket["cost_usd"] += float(obs.get("cost_usd") or 0.0)
        line = {k: t.get(k) for k in ("run_id", "subject", "probe_id", "trial", "attempt",
                                      "expectation", "error", "reading")}
        line["invoked"] = invoked_skills(obs)
        if _wrong(str(t.get("expectation")), bool((t.get("reading") or {}).get("passed"))) \
                and not t.get("error"):  # a wrong answer: keep its start, as an example
            line["answer"] = str(obs.get("content") or "")[:_MESSAGE_CHARS]
        return line

    def count(line: dict[str, Any]) -> None:
        if line.get("error"):
            kind = str(line["error"].get("kind"))
            superseded_errors[kind] = superseded_errors.get(kind, 0) + 1

    standing = {key[1:]: {k: v for k, v in line.items()
                          if k not in ("run_id", "subject", "probe_id", "trial")}
                for key, line in standing_lines((kept(t) for t in trials), count).items()}
    for bucket in (cost["total"], *cost["by_subject"].values(), *cost["by_case"].values()):
        bucket["cost_usd"] = num(bucket["cost_usd"])
    return standing, cost, superseded_errors


def _usage() -> dict[str, Any]:
    return {"attempts": 0, "tokens_input": 0, "tokens_output": 0, "cost_usd": 0.0}


def _wrong(expectation: str, passed: bool) -> bool:
    if expectation == "must_trigger":
        return not passed
    if expectation == "should_not_trigger":
        return passed
    return False


def breakdown(standing: dict[tuple[str, str, int], dict[str, Any]],
              order: list[str]) -> "list[BreakdownRow]":
    """Per case and subject: the readings' scores (n, mean, sd, min, max) and the mean of
    each numeric metric the sensor reported (an LLM judge's dimensions, an exit code...)."""
    scores: dict[str, dict[str, list[float]]] = {}
    extra: dict[tuple[str, str], dict[str, list[float]]] = {}
    expectations: dict[str, str] = {}
    for (subject, case, _), t in standing.items():
        expectations.setdefault(case, str(t.get("expectation")))
        scores.setdefault(case, {})
        reading = t.get("reading")
        if t.get("error") or not reading:
            continue
        score = reading.get("score")
        if _number(score):
            scores[case].setdefault(subject, []).append(float(score))
        for k, v in (reading.get("metrics") or {}).items():
            if _number(v):
                extra.setdefault((case, subject), {}).setdefault(k, []).append(float(v))
    rank = {case: i for i, case in enumerate(order)}
    out: list[BreakdownRow] = []
    for case in sorted(expectations, key=lambda c: (rank.get(c, len(rank)), c)):
        by_subject: dict[str, ScoreStats] = {}
        for subject, values in sorted(scores[case].items()):
            d = describe(values)
            by_subject[subject] = {
                "n": d.n, "mean": num(d.mean), "sd": num(d.std) if d.n > 1 else None,
                "min": num(min(values)), "max": num(max(values)),
                "metrics": {k: num(sum(v) / len(v))
                            for k, v in sorted(extra.get((case, subject), {}).items())}}
        out.append({"probe_id": case, "expectation": expectations[case],
                    "by_subject": by_subject})
    return out


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def failures(standing: dict[tuple[str, str, int], dict[str, Any]],
             superseded: dict[str, int],
             prompts: dict[str, str] | None = None) -> "Failures":
    """Errored trials grouped by error kind (with example messages), and the cases that fail
    most: a trial fails when it errored or its outcome contradicts the case's expectation.
    Each failing case carries its prompt (`prompts`: case id -> text, from the case files)
    and one wrong trial of every subject that answered it wrongly, with the skills invoked:
    its first that invoked a skill, else its first."""
    kinds: dict[str, dict[str, Any]] = {}
    cases: dict[str, dict[str, Any]] = {}
    for (subject, case, trial), t in sorted(standing.items()):
        expectation = str(t.get("expectation"))
        row = cases.setdefault(case, {"probe_id": case, "expectation": expectation,
                                      "trials": 0, "errored": 0, "wrong": 0,
                                      "prompt": (prompts or {}).get(case),
                                      "by_subject": {}, "examples": []})
        mine = row["by_subject"].setdefault(subject, {"trials": 0, "failed": 0})
        row["trials"] += 1
        mine["trials"] += 1
        error = t.get("error")
        if error:
            row["errored"] += 1
            mine["failed"] += 1
            kind = str(error.get("kind") or "unknown")
            group = kinds.setdefault(kind, {"kind": kind, "count": 0, "subjects": {},
                                            "cases": set(), "examples": []})
            group["count"] += 1
            group["subjects"][subject] = group["subjects"].get(subject, 0) + 1
            group["cases"].add(case)
            message = str(error.get("message") or "")[:_MESSAGE_CHARS]
            if len(group["examples"]) < EXAMPLES and all(
                    e["message"] != message for e in group["examples"]):
                group["examples"].append({"subject": subject, "probe_id": case,
                                          "trial": trial, "message": message})
            continue
        reading = t.get("reading") or {}
        if _wrong(expectation, bool(reading.get("passed"))):
            row["wrong"] += 1
            mine["failed"] += 1
            example = {"subject": subject, "trial": trial, "answer": t.get("answer", ""),
                       "details": str(reading.get("details") or "")[:_MESSAGE_CHARS],
                       "invoked": t.get("invoked") or []}
            mine_shown = [i for i, e in enumerate(row["examples"]) if e["subject"] == subject]
            if not mine_shown:
                row["examples"].append(example)
            elif example["invoked"] and not row["examples"][mine_shown[0]]["invoked"]:
                # a wrong route (another skill invoked) says more than silence
                row["examples"][mine_shown[0]] = example
    errors = []
    for group in sorted(kinds.values(), key=lambda g: (-g["count"], g["kind"])):
        errors.append({**group, "cases": sorted(group["cases"]),
                       "superseded": superseded.get(group["kind"], 0)})
    for kind, count in sorted(superseded.items()):
        if kind not in kinds:
            errors.append({"kind": kind, "count": 0, "subjects": {}, "cases": [],
                           "examples": [], "superseded": count})
    failing = []
    for row in cases.values():
        failed = row["errored"] + row["wrong"]
        if failed:
            failing.append({**row, "failed": failed, "fail_rate": num(failed / row["trials"])})
    failing.sort(key=lambda r: (-r["fail_rate"], -r["failed"], r["probe_id"]))
    # groups and rows are filled by key above: the checker takes their type from here
    return cast("Failures", {"errored_trials": sum(g["count"] for g in kinds.values()),
                             "errors": errors, "cases": failing})


def routing(summary: Mapping[str, Any]) -> "list[SubjectRouting]":
    """Which skill took the prompts, per subject whose summary says (an activation sensor):
    its routing table, and the cases whose trials went elsewhere than expected — a
    must_trigger case's to another skill or none, a should_not_trigger case's to the skill
    under test — each with `taken_by` ("pdf 4/9, none 2/9")."""
    out: list[SubjectRouting] = []
    for block in summary["subjects"]:
        table = block.get("routing")
        if not table:
            continue
        target = table["target"]
        astray: list[AstrayCase] = []
        for p in block["probe_results"]:
            routes = p.get("routes") or []
            if not p["n"] or not routes:
                continue
            hit = sum(r["trials"] for r in routes
                      if r["skill"] is not None and is_target(r["skill"], target))
            if (hit < p["n"]) if p["expectation"] == "must_trigger" else hit > 0:
                astray.append({"probe_id": p["probe_id"], "expectation": p["expectation"],
                               "n": p["n"], "routes": routes,
                               "taken_by": taken_by(routes, p["n"])})
        out.append({"subject": block["name"], "target": target,
                    "expectations": table["expectations"], "cases": astray})
    return out


def build_report(summary: Mapping[str, Any], spec: Mapping[str, Any],
                 trials: Iterable[dict[str, Any]], *, metric: str | None = None,
                 tags: list[str] | None = None,
                 annotations: list[dict[str, Any]] | None = None,
                 cases: list[dict[str, Any]] | None = None,
                 prompts: dict[str, str] | None = None,
                 folder: str = "") -> "ReportOutput":
    """The report of one run: `trials` are that run's lines of `trials.jsonl` (all attempts);
    `cases` the experiment's case rows (`probe_id`, `difficulty`), for the difficulty figure;
    `prompts` each case's prompt text, for the failure table; `folder` the run's folder."""
    metric = metric or primary_metric(summary)
    table = summary_table(summary)
    points: list[figures.TrialPoint] = []
    standing, cost, superseded = _standing_trials(figures.recording(trials, points))
    entries = [{"subject": b["name"], "counts": counts_of(b)} for b in summary["subjects"]]
    case_order = [c["probe_id"] for c in table["cases"]]
    swept = sweep_report(summary, metric)
    out: ReportOutput = {
        "screen": cast("Screen", screen(summary, swept)),
        "run": {
            "run_id": summary["run_id"], "experiment": summary["experiment_name"],
            "status": summary.get("run_status"), "started_at": summary.get("started_at"),
            # why a run failed or stopped early (issue 16): `reason`, else `stop_reason`
            "reason": (None if summary.get("run_status") == "completed"
                       else summary.get("reason") or summary.get("stop_reason")),
            "finished_at": summary.get("finished_at"), "seed": summary.get("seed"),
            "trials_per_case": summary.get("trials_per_case"),
            "git_commit": spec.get("git_commit"), "tags": list(tags or []),
            "description": (spec.get("config") or {}).get("description"),
            "sensor": summary.get("sensor"),
            "prior": (summary.get("statistics") or {}).get("prior") or "uniform",
            "folder": folder,
        },
        "metric": metric,
        "answer": answer(summary, metric),
        "summary": table,
        # one subject: nothing to rank, so no rows and no leaderboard section in any format
        "leaderboard": leaderboard(entries, metric) if len(entries) > 1 else {
            **leaderboard([], metric), "note": "one subject only: nothing to rank"},
        "breakdown": breakdown(standing, case_order),
        "failures": failures(standing, superseded, prompts),
        "routing": routing(summary),
        "cost": cast("Cost", {**cost, "note": "every attempt counts, retried ones included"}),
        # the lines of annotations.jsonl (ix.store.annotations reads them, below these types)
        "annotations": cast("list[Annotation]", list(annotations or [])),
        "baseline": None,
        "goal": summary.get("goal"),
        "comparisons": summary.get("comparisons") or [],
        "rates": figures.subject_rates(summary),
        "difficulty": figures.difficulty(summary, cases),
        "timeline": figures.timeline(points, table["subjects"]),
    }
    if any(b.get("sensors") for b in summary["subjects"]):
        out["sensors"] = {b["name"]: b.get("sensors") or {} for b in summary["subjects"]}
    if summary.get("context"):
        out["context"] = summary["context"]
    if summary.get("load"):
        out["load"] = summary["load"]
    if swept is not None:
        out["sweep"] = swept
    return out
