"""`ix report`: one run as data — the summary table, leaderboard, per-case score breakdown,
failure analysis and cost — built from the run's `summary.json` and its trial lines.

Scores and failures use the attempt that stands (DESIGN.md §3: the latest attempt of each
(subject, probe_id, trial)); cost counts every attempt, since every attempt was paid for.
The result is plain JSON data; `ix.report.terminal` and `ix.report.markdown` render it.
"""

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ix.eval.routing import is_target, taken_by
from ix.eval.scorers import DEFAULT as DEFAULT_SCORER
from ix.eval.scorers import scorer_name
from ix.report import case_stats, figures
from ix.report.answer import answer, primary_metric
from ix.report.digest import TrialDigest, kept
from ix.report.leaderboard import counts_of, leaderboard
from ix.report.screen import screen
from ix.report.sweep import sweep_report
from ix.store.trial_lines import standing as standing_lines

if TYPE_CHECKING:
    from ix.report.schemas import (
        Annotation,
        AstrayCase,
        Failures,
        Leaderboard,
        Outcomes,
        ReportOutput,
        Screen,
        SubjectRouting,
        SummaryTable,
    )

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


def digest_of(trials: Iterable[dict[str, Any]]) -> TrialDigest:
    """The digest of one run's lines read back (all attempts, in the log's order): the
    attempt that stands of each trial chosen as the index and the resume reader choose it
    (`ix.store.trial_lines.standing`), however its attempts were ordered."""
    digest = TrialDigest()

    def attempts() -> Iterable[dict[str, Any]]:
        for t in trials:
            digest.attempt(t)
            yield kept(t)

    for line in standing_lines(attempts(), digest.supersede).values():
        digest.stand(line)
    return digest


def stored_sections(summary: Mapping[str, Any], digest: TrialDigest,
                    cases: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What `ix run` keeps next to a run's summary so that `ix report` reads neither its
    trials nor computes a statistic (docs/json.md, "report.json"): the trial sections of
    `digest` (failing cases without their prompts, which are read from the case files when
    reported), and the leaderboard, difficulty figure and sweep table at the run's primary
    metric. Keyed to the summary by `run_id` and `finished_at`."""
    metric = primary_metric(summary)
    table = summary_table(summary)
    return {"run_id": summary["run_id"], "finished_at": summary.get("finished_at"),
            "metric": metric,
            "breakdown": digest.breakdown([c["probe_id"] for c in table["cases"]]),
            "failures": digest.failures(), "cost": digest.cost(),
            "outcomes": _outcomes(summary, digest, table["subjects"]),
            "timeline": digest.timeline(table["subjects"]),
            "leaderboard": _leaderboard(summary, metric),
            "difficulty": figures.difficulty(summary, cases),
            "percentiles": case_stats.score_percentiles(summary, _level(summary)),
            "sweep": sweep_report(summary, metric)}


def _leaderboard(summary: Mapping[str, Any], metric: str) -> "Leaderboard":
    entries = [{"subject": b["name"], "counts": counts_of(b)} for b in summary["subjects"]]
    # one subject: nothing to rank, so no rows and no leaderboard section in any format
    return leaderboard(entries, metric) if len(entries) > 1 else {
        **leaderboard([], metric), "note": "one subject only: nothing to rank"}


def build_report(summary: Mapping[str, Any], spec: Mapping[str, Any],
                 trials: Iterable[dict[str, Any]], *, metric: str | None = None,
                 tags: list[str] | None = None,
                 annotations: list[dict[str, Any]] | None = None,
                 cases: list[dict[str, Any]] | None = None,
                 prompts: dict[str, str] | None = None,
                 folder: str = "", stored: Mapping[str, Any] | None = None) -> "ReportOutput":
    """The report of one run: `trials` are that run's lines of `trials.jsonl` (all attempts);
    `cases` the experiment's case rows (`probe_id`, `difficulty`), for the difficulty figure;
    `prompts` each case's prompt text, for the failure table; `folder` the run's folder.
    With `stored` (`stored_sections` of this run), neither `trials` nor `cases` is read, and
    nothing stored is computed again."""
    metric = metric or primary_metric(summary)
    table = summary_table(summary)
    if stored is None:
        digest = digest_of(trials)
        stored = {"breakdown": digest.breakdown([c["probe_id"] for c in table["cases"]]),
                  "failures": digest.failures(), "cost": digest.cost(),
                  "outcomes": _outcomes(summary, digest, table["subjects"]),
                  "timeline": digest.timeline(table["subjects"]),
                  "difficulty": figures.difficulty(summary, cases)}
    failures = cast("Failures", {**stored["failures"], "cases": [
        {**row, "prompt": (prompts or {}).get(row["probe_id"])}
        for row in stored["failures"]["cases"]]})
    same = stored.get("metric") == metric
    swept = stored["sweep"] if same else sweep_report(summary, metric)
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
            "scorer": scorer_name(summary.get("scorer") or DEFAULT_SCORER),
            "folder": folder,
        },
        "metric": metric,
        "answer": answer(summary, metric),
        "summary": table,
        "leaderboard": stored["leaderboard"] if same else _leaderboard(summary, metric),
        "breakdown": stored["breakdown"],
        "failures": failures,
        "routing": routing(summary),
        "cost": stored["cost"],
        # the lines of annotations.jsonl (ix.store.annotations reads them, below these types)
        "annotations": cast("list[Annotation]", list(annotations or [])),
        "baseline": None,
        "goal": summary.get("goal"),
        "comparisons": summary.get("comparisons") or [],
        "rates": figures.subject_rates(summary),
        "difficulty": stored["difficulty"],
        "timeline": stored["timeline"],
    }
    # kept by the run (report.json) since 2.5, so a report loads no numpy; else computed
    if summary.get("frontier"):
        out["frontier"] = summary["frontier"]
    percentiles = (stored["percentiles"] if "percentiles" in stored
                   else case_stats.score_percentiles(summary, _level(summary)))
    if percentiles is not None:
        out["percentiles"] = percentiles
    if any(b.get("sensors") for b in summary["subjects"]):
        out["sensors"] = {b["name"]: b.get("sensors") or {} for b in summary["subjects"]}
    if summary.get("context"):
        out["context"] = summary["context"]
    if summary.get("load"):
        out["load"] = summary["load"]
    if swept is not None:
        out["sweep"] = swept
    if stored.get("outcomes"):
        out["outcomes"] = stored["outcomes"]
    if summary.get("pairwise"):
        out["pairwise"] = summary["pairwise"]
    if summary.get("judges"):  # `ix.api.reports` checks them against today's labels
        out["judges"] = summary["judges"]
    return out


def _outcomes(summary: Mapping[str, Any], digest: TrialDigest,
              subjects: list[str]) -> "Outcomes | None":
    """The summary's `outcomes` (ix 2.2 on), else the digest's of the run's lines."""
    if "outcomes" in summary:
        return cast("Outcomes | None", summary["outcomes"])
    return digest.outcomes(subjects, _level(summary))


def _level(summary: Mapping[str, Any]) -> float:
    """The credibility level of the summary's intervals (0.95 unless it says otherwise)."""
    level = (summary.get("statistics") or {}).get("level")
    return float(level) if isinstance(level, int | float) and 0 < level < 1 else 0.95
