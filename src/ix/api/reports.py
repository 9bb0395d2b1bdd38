"""Reports and leaderboards: `ix report`, `ix leaderboard`, `ix compare` (the
runs' statistics and their config diff). Everything here reads; nothing writes into the lab
but `keep_sections`, which `ix run` calls as a run ends."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ix.domain.errors import ConfigError, Warn
from ix.engine.judged import run_judges
from ix.eval.numbers import LEVEL
from ix.fs.files import write_json_atomic, write_text_atomic
from ix.fs.frontmatter import read_frontmatter
from ix.fs.resolve import find_lab, select_experiments
from ix.fs.resolve import list_experiments as experiment_dirs
from ix.fs.storage_faults import storage_error
from ix.interchange.run_folder import is_run_folder
from ix.query.case_table import (
    case_files,
    case_files_state,
    case_prompts,
    case_properties,
    case_rows,
    suite_dir,
)
from ix.report.answer import metric_name, primary_metric
from ix.report.case_stats import check_property, correlations
from ix.report.diff import skill_changes, spec_changes
from ix.report.digest import TrialDigest
from ix.report.judge_text import caveat_lines
from ix.report.leaderboard import check_metric, counts_of
from ix.report.leaderboard import leaderboard as rank
from ix.report.regression import baseline_section
from ix.report.run_report import build_report, stored_sections
from ix.report.runs import compare_runs as compare_summaries
from ix.store.annotations import read_annotations
from ix.store.labels import latest_labels, read_labels
from ix.store.layout import TRIALS_FILE, ExperimentDir, RunDir
from ix.store.lookup import is_completed, latest_run, report_run, resolve_run
from ix.store.lookup import latest_of as latest_of  # which run `ix report EXPERIMENT` reads
from ix.store.spec import read_spec
from ix.store.summaries import checked_sha256, read_summary
from ix.store.tags import tags_by_run
from ix.store.trials import read_trials

if TYPE_CHECKING:
    from ix.eval.schemas import JudgeOut, Summary
    from ix.report.schemas import (
        Baseline,
        CompareOutput,
        ConfigChanges,
        ExperimentBoard,
        LeaderboardOutput,
        ReportOutput,
    )

FORMATS = ("table", "md", "json")


def run_trials(run_dir: Path, run_id: str,
               warn: Warn | None = None) -> Iterator[dict[str, Any]]:
    """Every trial record of `trials.jsonl` that belongs to the run (all attempts), streamed;
    lines that are none (the resume reader and the index skip them too) with a warning. A
    portable run folder (`ix export --folder`) holds its own lines."""
    path = run_dir / TRIALS_FILE if is_run_folder(run_dir) else RunDir(run_dir).experiment.trials
    return (t for t in read_trials(path, warn, trials_only=True) if t.get("run_id") == run_id)


#: The keys of a run's `report.json` (`keep_sections`); one missing: the file is not used.
STORED_KEYS = ("run_id", "finished_at", "log", "metric", "breakdown", "failures", "cost",
               "outcomes", "timeline", "leaderboard", "difficulty", "sweep")


def _log_state(run_dir: Path) -> dict[str, int] | None:
    """Size and modification time of the trial log the run's lines are in."""
    try:
        st = RunDir(run_dir).experiment.trials.stat()
    except OSError:
        return None
    return {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns}


def keep_sections(run_dir: Path, summary: Summary, digest: TrialDigest,
                  experiment: Path) -> None:
    """At the end of `ix run`: the report's sections that need the run's trials or a
    statistic (`ix.report.run_report.stored_sections`), kept in the run's `report.json`, so
    `ix report` and the viewer read neither (docs/json.md). Not when `digest` missed a line
    it cannot place (a trial whose earlier attempt stood); best effort: without the file a
    report reads the trials, as for a run made before it existed."""
    log = _log_state(run_dir)
    if not digest.exact or log is None:
        return
    digest.close()
    with contextlib.suppress(OSError):
        rows, prompts = case_files(experiment)  # each case file read once
        kept = {**stored_sections(summary, digest, rows), "log": log}
        sha256 = checked_sha256(run_dir)  # checked once, here, as written
        if sha256 is not None:
            kept["summary_sha256"] = sha256
        kept.update(_sources(run_dir, experiment, kept["failures"]["cases"], prompts))
        write_json_atomic(RunDir(run_dir).report, kept, shared=True,  # readable as the summary
                          machine=True)


def _sources(run_dir: Path, experiment: Path, failing: list[dict[str, Any]],
             prompts: dict[str, str]) -> dict[str, Any]:
    """What a report reads from spec.yaml (`git_commit`, the description) and the failing
    cases' prompts, each with what says it is still so (the spec's sha256, the case files'
    `case_files_state`): a report of an unchanged run parses no YAML."""
    kept: dict[str, Any] = {}
    path = RunDir(run_dir).spec
    with contextlib.suppress(ConfigError, OSError):
        raw = path.read_bytes()
        spec = read_spec(run_dir)
        kept["spec"] = {"sha256": hashlib.sha256(raw).hexdigest(),
                        "git_commit": spec.get("git_commit"),
                        "description": (spec.get("config") or {}).get("description")}
    suite = suite_dir(experiment)
    kept["prompts"] = {"suite": str(suite), "state": case_files_state(experiment, suite),
                       "by_case": {c["probe_id"]: prompts[c["probe_id"]] for c in failing
                                   if c["probe_id"] in prompts}}
    return kept


def _spec(run_dir: Path, kept: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """spec.yaml's keys a report shows: as kept in report.json while spec.yaml has the same
    bytes, else read."""
    held = kept.get("spec") if kept else None
    path = RunDir(run_dir).spec
    if isinstance(held, dict):
        with contextlib.suppress(OSError):
            if hashlib.sha256(path.read_bytes()).hexdigest() == held.get("sha256"):
                return {"git_commit": held.get("git_commit"),
                        "config": {"description": held.get("description")}}
    return read_spec(run_dir) if path.is_file() else {}


def _prompts(experiment: Path, stored: Mapping[str, Any] | None) -> dict[str, str]:
    """The case prompts a report shows: the failing cases' as kept in report.json while the
    case files are as they were, else read from the case files."""
    held = stored.get("prompts") if stored else None
    if isinstance(held, dict) and isinstance(held.get("by_case"), dict) \
            and isinstance(held.get("suite"), str) \
            and held.get("state") == case_files_state(experiment, Path(held["suite"])):
        return held["by_case"]
    return case_prompts(experiment)


def read_stored(run_dir: Path, summary: Summary) -> dict[str, Any] | None:
    """The run's `report.json` if it was kept for this very summary (same `run_id` and
    `finished_at`: a run continued later has a newer summary) and trial log (the same size
    and modification time: nothing was written to it since, by another run or by hand, that
    the report would read), else None."""
    return _kept_for(_read_kept(run_dir), summary, run_dir)


def _read_kept(run_dir: Path) -> dict[str, Any] | None:
    """The run's `report.json` as a JSON object with every stored key, else None."""
    try:
        data = orjson.loads(RunDir(run_dir).report.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or any(k not in data for k in STORED_KEYS):
        return None
    return data


def _kept_for(data: dict[str, Any] | None, summary: Summary,
              run_dir: Path) -> dict[str, Any] | None:
    if data is None or data["run_id"] != summary["run_id"] \
            or data["finished_at"] != summary.get("finished_at") \
            or data["log"] != _log_state(run_dir):
        return None
    return data


def report(lab: str | Path | None = None, run: str | None = None, *,
           metric: str | None = None, baseline: str | None = None,
           warn: Warn | None = None, cwd: Path | None = None,
           note: Warn | None = None, by: Sequence[str] = ()) -> ReportOutput:
    """The report of one run (`ix report`): JSON data; see docs/reports.md for its sections.
    `run` names a run or an experiment (`report_run`); `note` hears which run was chosen
    when no run was named. `by`: case properties (`difficulty`, `prompt_length`,
    `history_length`, `tag:NAME`, `metadata.KEY`) each case's right share is correlated with.

    With `baseline` (a tag or a run), `report["baseline"]["regressed"]` says whether a metric
    is credibly worse than in that run.
    """
    lab_path = find_lab(lab, cwd=cwd)
    if metric is not None:
        metric = check_metric(metric)
    by = [check_property(name) for name in by]
    run_dir = report_run(lab_path, run, cwd=cwd, note=note, warn=warn)
    kept = _read_kept(run_dir)
    summary = read_summary(run_dir, checked=kept.get("summary_sha256") if kept else None)
    spec = _spec(run_dir, kept)
    base_dir = resolve_run(lab_path, baseline) if baseline else None
    stored = _kept_for(kept, summary, run_dir)
    experiment = RunDir(run_dir).experiment.path
    data = build_report(summary, spec, run_trials(run_dir, summary["run_id"], warn),
                        metric=metric, tags=tags_by_run(lab_path).get(summary["run_id"], []),
                        annotations=read_annotations(run_dir, warn),
                        cases=case_rows(experiment, warn) if stored is None else None,
                        prompts=_prompts(experiment, stored), folder=str(run_dir),
                        stored=stored)
    if by:
        data["correlations"] = correlations(summary, case_properties(experiment, warn), by,
                                            float((summary.get("statistics") or {}).get("level")
                                                  or LEVEL))
    if base_dir is not None and baseline is not None:
        data["baseline"] = _against(baseline, read_summary(base_dir), summary)
    if summary.get("judges"):
        judges = data["judges"] = current_judges(run_dir, summary, warn)
        caveat = caveat_lines({**summary, "judges": judges}, summary["run_id"])
        if caveat:
            data["screen"]["judge"] = caveat
    return data


def current_judges(run_dir: Path, summary: Summary,
                   warn: Warn | None = None) -> list[JudgeOut]:
    """The summary's `judges`, checked against the experiment's labels as they are now
    (people may have labelled since the run); as written when there is no label."""
    experiment = RunDir(run_dir).experiment
    labels = latest_labels(read_labels(experiment.path, warn))
    if not labels:
        return summary["judges"]
    level = float((summary.get("statistics") or {}).get("level") or LEVEL)
    return run_judges(summary["judges"], experiment.trials, summary["run_id"], labels,
                      level, warn)


def _against(ref: str, base: Summary, summary: Summary) -> Baseline:
    comparison = compare_summaries([base, summary])
    usable = [c for c in comparison["comparisons"] if "error" not in c]
    if not usable:
        why = "no subject in common" if not comparison["comparisons"] else "no case in common"
        raise ConfigError(f"baseline {ref!r} (run {base['run_id']} of "
                          f"{base['experiment_name']}) has {why} with run {summary['run_id']} "
                          f"of {summary['experiment_name']}", field="--baseline")
    return baseline_section(ref, base["run_id"], comparison)


def leaderboard(lab: str | Path | None = None, experiments: Sequence[str] = (),
                runs: Sequence[str] = (), *, metric: str | None = None,
                cwd: Path | None = None) -> LeaderboardOutput:
    """`ix leaderboard`: per experiment, its subjects ranked (the latest completed run of
    each experiment, or the runs named); and, over several experiments, the subjects ranked
    on their pooled counts."""
    lab_path = find_lab(lab, cwd=cwd)
    if metric is not None:
        metric = check_metric(metric)
    notes: list[str] = []
    chosen: list[Path] = [resolve_run(lab_path, ref) for ref in runs]
    if experiments or not runs:
        paths = (select_experiments(lab_path, experiments, cwd=cwd) if experiments
                 else experiment_dirs(lab_path))
        for path in paths:
            found = latest_run(ExperimentDir.at(path).results, is_completed)
            if found is None:
                notes.append(f"{path.name}: no completed run")
            else:
                chosen.append(found)
    groups: dict[Path, list[tuple[Path, Summary]]] = {}
    for run_dir in dict.fromkeys(chosen):
        groups.setdefault(RunDir(run_dir).experiment.path, []).append(
            (run_dir, read_summary(run_dir)))
    boards: list[ExperimentBoard] = []
    pooled: dict[str, dict[str, Any]] = {}
    for group in groups.values():
        group.sort(key=lambda item: item[1]["run_id"])
        latest = group[-1][1]
        chosen_metric = metric or primary_metric(latest)
        entries = [{"subject": b["name"], "run": s["run_id"], "counts": counts_of(b)}
                   for _, s in group for b in s["subjects"]]
        boards.append({"experiment": latest["experiment_name"],
                       **rank(entries, chosen_metric)})
        for block in latest["subjects"]:  # pooled: each subject's latest run of each experiment
            p = pooled.setdefault(block["name"], {"subject": block["name"], "experiments": 0,
                                                  "counts": None})
            c = counts_of(block)
            p["counts"] = c if p["counts"] is None else p["counts"] + c
            p["experiments"] += 1
    boards.sort(key=lambda b: b["experiment"])
    overall = None
    metrics = {b["metric"] for b in boards}
    if len(boards) > 1 and len(metrics) == 1 and len(pooled) > 1:
        for p in pooled.values():
            p["experiments"] = f"{p['experiments']}/{len(boards)}"
        overall = rank(list(pooled.values()), metrics.pop())
        if any(not str(p["experiments"]).startswith(f"{len(boards)}/")
               for p in pooled.values()):
            notes.append("overall: a subject that did not run every experiment is pooled over "
                         "fewer (and different) cases")
    elif len(boards) > 1:
        names = ", ".join(f"{metric_name(m)} (`{m}`)" for m in sorted(metrics))
        notes.append(f"no overall board: the experiments rank on different metrics ({names}); "
                     "pass --metric to pool them")
    if not boards:
        raise ConfigError(f"nothing to rank: no completed run in lab {lab_path}", field="RUN")
    # one subject (in one run) is not a ranking: no board for it (`ix report` has its metric)
    for b in boards:
        if len(b["rows"]) < 2:
            run = f" {b['rows'][0]['run']}" if b["rows"] else ""
            notes.append(f"{b['experiment']}: one subject only, nothing to rank "
                         f"(`ix report{run}` shows its metrics)")
    boards = [b for b in boards if len(b["rows"]) > 1]
    return {"lab": str(lab_path), "boards": boards, "overall": overall, "notes": notes}


def compare_runs(lab: str | Path | None, run_ids: Sequence[str]) -> CompareOutput:
    """Two or more runs of an experiment, each later one against the first."""
    if len(run_ids) < 2:
        raise ConfigError("give at least two runs to compare (the first is the baseline)",
                          field="RUN")
    lab_path = find_lab(lab)
    summaries = []
    for run_id in run_ids:
        directory = resolve_run(lab_path, run_id)
        path = RunDir(directory).summary
        try:
            summaries.append(json.loads(path.read_text(encoding="utf-8")))
        except OSError:
            raise ConfigError("this run has no summary (it is still running, or it died "
                              "before writing one)", file=path) from None
        except ValueError:
            raise ConfigError("not valid JSON", file=path) from None
    result = compare_summaries(summaries)
    if not result["comparisons"]:
        raise ConfigError("the runs share no subject by name", field="RUN")
    if all("error" in c for c in result["comparisons"]):
        raise ConfigError("the runs have no case in common", field="RUN")
    out: CompareOutput = {
        **result, "config_changes": config_changes([resolve_run(lab_path, r) for r in run_ids])}
    if summaries[0].get("sensor") is not None:  # the wording of activation_rate (DESIGN.md §8)
        out["sensor"] = summaries[0]["sensor"]
    return out


def config_changes(run_dirs: Sequence[Path]) -> list[ConfigChanges]:
    """What changed in configuration from the first run to each later one (`ix compare`)."""
    specs = [_with_descriptions(read_spec(d)) if RunDir(d).spec.is_file() else {}
             for d in run_dirs]
    # descriptions are shown whole under `skills`, not as one more (shortened) change
    bare = [_without_descriptions(spec) for spec in specs]
    return [{"run": d.name, "changes": spec_changes(bare[0], plain),
             "skills": skill_changes(specs[0], spec)}
            for d, spec, plain in zip(run_dirs[1:], specs[1:], bare[1:], strict=True)]


def _without_descriptions(spec: dict[str, Any]) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(dict(spec))
    for subject in (out.get("config") or {}).get("subjects") or []:
        for skill in subject.get("skills") or []:
            if isinstance(skill, dict):
                skill.pop("description", None)
    return out


def _with_descriptions(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A run's spec whose skills all carry their description: a run made before ix recorded
    it gets the SKILL.md's description when that file is still the one the run used (same
    sha256); otherwise the description stays unknown (None)."""
    import copy
    import hashlib


    out = copy.deepcopy(dict(spec))
    for subject in (out.get("config") or {}).get("subjects") or []:
        for skill in subject.get("skills") or []:
            if not isinstance(skill, dict) or "description" in skill or not skill.get("path"):
                continue
            try:
                path = Path(skill["path"])
                if hashlib.sha256(path.read_bytes()).hexdigest() == skill.get("sha256"):
                    description = read_frontmatter(path)[0].get("description")
                    skill["description"] = description if isinstance(description, str) \
                        else None
            except (OSError, ValueError, ConfigError):
                continue
    return out


def write_report(path: Path, text: str, *, field: str = "--out") -> None:
    """A report's `text` to `path`, whole or not at all, readable by others (a report is for
    sharing). A storage fault is a `StorageError`; another refusal of the OS a `ConfigError`
    on `field`."""
    try:
        write_text_atomic(path, text, shared=True)
    except OSError as exc:
        raise storage_error(exc, "the report was not written", file=path) or ConfigError(
            f"cannot write the report: {exc.strerror or exc}", file=path,
            field=field) from None
