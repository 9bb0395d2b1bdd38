"""`ix batch BATTERY.yaml`: experiments × subjects × seeds, one command, one combined report.

Each (experiment, seed) is one ordinary run recorded in that experiment's own `results/`;
the battery folder (`output`, under the lab) keeps a snapshot of the battery and its runs and
the combined report (`report.json`, `report.md`). Everything is validated before the first
trial runs.
"""

import contextlib
import fnmatch
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix._version import __version__
from ix.api.executors import executing
from ix.api.options import Observer, trial_listener
from ix.domain.errors import ConfigError
from ix.engine.plan import Overrides, Plan, build_plan
from ix.engine.run import Limits, RunResult, run_plan
from ix.lab.files import write_json_atomic, write_text_atomic
from ix.lab.loader import load_experiment
from ix.lab.resolve import find_lab, list_experiments
from ix.lab.schema import BatterySpec, validate
from ix.lab.yamlio import dump_yaml, load_yaml_file
from ix.report.answer import goal_verdict, metric_name
from ix.report.leaderboard import primary_metric
from ix.report.markdown import md_text
from ix.report.seeds import KINDS, METHODS, pooled
from ix.store.audit import record
from ix.store.storage_faults import storage_error, storage_faults


@dataclass(frozen=True)
class BatteryResult:
    folder: Path
    report: dict[str, Any]
    runs: list[RunResult]


def load_battery(path: Path, lab: Path) -> tuple[BatterySpec, list[tuple[Path, int]]]:
    """The battery and its (experiment, seed) jobs; `ConfigError` naming file and field."""
    spec = validate(BatterySpec, load_yaml_file(path), file=path, what="battery file")
    known = list_experiments(lab)
    chosen: list[Path] = []
    for i, pattern in enumerate(spec.experiments):
        hits = [p for p in known if fnmatch.fnmatchcase(p.name, pattern)]
        if not hits:
            names = ", ".join(p.name for p in known) or "none"
            raise ConfigError(f"{pattern!r} matches no experiment of lab {lab} "
                              f"(experiments: {names})", file=path, field=f"experiments[{i}]")
        chosen += [p for p in hits if p not in chosen]
    return spec, [(p, seed) for p in chosen for seed in spec.seed_list()]


def plan_battery(battery: Path, lab: str | Path | None = None) -> tuple[BatterySpec, Path,
                                                                       list[Plan]]:
    # `--lab` is relative to the working directory, as for every command; without it, the
    # lab is the one the battery file is in
    lab_path = find_lab(lab) if lab is not None else find_lab(cwd=battery.parent.resolve())
    spec, jobs = load_battery(battery, lab_path)
    plans = []
    for path, seed in jobs:
        loaded = load_experiment(path, lab_path, replace_subjects=spec.subjects)
        overrides = Overrides(trials=spec.trials, seed=seed, runtime=spec.runtime,
                              filters=tuple(spec.filter or ()))
        try:
            plans.append(build_plan(loaded, overrides))
        except ConfigError as exc:
            raise ConfigError(f"{exc.render()} (in battery {battery.name})", file=None,
                              field=None) from None
    return spec, lab_path, plans


def _folder(lab: Path, template: str, now: datetime, battery: Path) -> Path:
    if "{seq}" not in template:
        template += "_{seq}"
    seq = 1
    while True:
        folder = lab / template.format(date=now.strftime("%Y%m%d"), seq=f"{seq:03d}")
        if not folder.exists():
            break
        seq += 1
    if not folder.resolve().is_relative_to(lab.resolve()):
        raise ConfigError("must stay inside the lab", file=battery, field="output")
    return folder


def run_battery(battery: Path, lab: str | Path | None = None, *, command: list[str],
                observer: Observer | None = None, limits: Limits = Limits(),
                executor: str = "local", address: str | None = None) -> BatteryResult:
    """Run every (experiment, seed) of a battery; `observer` hears each plan and trial."""
    spec, lab_path, plans = plan_battery(battery, lab)
    with executing(executor, address) as (where, place):
        return _run_battery(battery, spec, lab_path, [place(p) for p in plans],
                            command=command, observer=observer or Observer(),
                            limits=limits, executor=where)


def _run_battery(battery: Path, spec: BatterySpec, lab_path: Path, plans: list[Plan], *,
                 command: list[str], observer: Observer, limits: Limits,
                 executor: dict[str, Any] | None) -> BatteryResult:
    now = datetime.now(UTC)
    folder = _folder(lab_path, spec.output, now, battery)
    snapshot: dict[str, Any] = {"battery": spec.model_dump(mode="json"),
                                "file": str(battery.resolve()), "ix": __version__,
                                "started_at": now.isoformat(), "command": command, "runs": []}
    _start(folder, dump_yaml(snapshot))
    results: list[RunResult] = []
    for plan in plans:
        observer.on_plan(plan)
        result = run_plan(plan, command=command, on_trial=trial_listener(observer), limits=limits,
                          executor=executor)
        results.append(result)
        snapshot["runs"].append({"experiment": plan.loaded.experiment.name,
                                 "seed": plan.seed, "run_id": result.run_id,
                                 "status": result.status,
                                 "summary": str(result.summary_path)})
        with storage_faults(f"the battery stopped after run {result.run_id}, which is kept"):
            write_text_atomic(folder / "battery.yaml", dump_yaml(snapshot))
        # a signal or a budget stops the battery; a subject's circuit breaker only its run
        if result.status == "cancelled" and result.summary.get("stop_cause") != "breaker":
            break
    snapshot["finished_at"] = datetime.now(UTC).isoformat()
    report = combined_report(spec.name, results)
    with storage_faults(f"the battery's runs are kept, but {folder.name} lacks its report"):
        write_text_atomic(folder / "battery.yaml", dump_yaml(snapshot))
        write_json_atomic(folder / "report.json", report, shared=True)
        write_text_atomic(folder / "report.md", report_markdown(report), shared=True)
    record(lab_path, "batch", battery=spec.name, file=str(battery.resolve()),
           folder=str(folder), runs=snapshot["runs"])
    return BatteryResult(folder, report, results)


def _start(folder: Path, snapshot: str) -> None:
    """The battery folder with its first snapshot, or (a full disk, a read-only lab) a
    `StorageError` and no folder: nothing has run yet, and nothing is left behind."""
    made = [folder, *itertools.takewhile(lambda p: not p.exists(), folder.parents)]
    try:
        folder.mkdir(parents=True)
        write_text_atomic(folder / "battery.yaml", snapshot)
    except OSError as exc:
        for d in made:  # the deepest first
            with contextlib.suppress(OSError):
                d.rmdir()
        raise (storage_error(exc, "the battery did not start; nothing was written")
               or exc) from None


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
              "Per experiment × subject: the metric pooled over the seeds with its 95% "
              "interval, and how much the seeds disagree (each seed's own value, their range "
              "and standard deviation).", "",
              "| experiment | subject | metric | pooled [95% CI] | interval | cases | seeds "
              "| per seed | range | sd |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in report["pooled"]:
        sp = p["spread"]
        per_seed = ", ".join(f"{x['seed']}: {_f(x['value'])}" for x in p["per_seed"])
        lines.append(f"| {md_text(p['experiment'])} | {md_text(p['subject'])} | "
                     f"{md_text(metric_name(p['metric']))} | {_f(p['value'])} {_ci(p['ci'])} "
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
                     f"{md_text(row['subject'])} | {row['f1']:.3f} {md_text(interval)} | "
                     f"{row['precision']:.3f} | {row['recall']:.3f} | {row['trials']} | "
                     f"{row['errors']} | {row['cost_usd']:.4f} | {md_text(row['status'])} |")
    return "\n".join(lines) + "\n"
