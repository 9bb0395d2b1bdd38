"""Runs out of the lab and outside results in (`ix export`, `ix import`); docs/export.md.

Export reads a run and writes files outside its results. Import checks a whole file first,
then writes a new run of an experiment — its trial lines, `runs/<run_id>/spec.yaml` and a
summary built by the same aggregation as `ix run` — and undoes everything it wrote if any
step fails, so a failed import leaves the lab as it was.
"""

import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.eval.models import EvalCase
from ix.lab.export import check_out, latest_attempts, run_lines, write_json, write_jsonl
from ix.lab.loader import load_experiment
from ix.lab.resolve import EXPERIMENT_FILE, find_lab, is_experiment, list_experiments
from ix.lab.results import (
    LATEST_SUMMARY,
    TRIALS_FILE,
    save_summary,
    write_json_atomic,
    write_text_atomic,
)
from ix.lab.runs import environment, iso, new_run_id, read_spec, run_dir, write_spec

EXPORT_FORMATS = ("csv", "json", "jsonl", "parquet", "inspect")
IMPORT_FORMATS = ("inspect", "jsonl", "csv")
Warn = Callable[[str], None]


@dataclass(frozen=True)
class ExportResult:
    run_id: str
    experiment: str
    format: str
    out: Path
    files: tuple[Path, ...]
    trials: int

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "experiment": self.experiment, "format": self.format,
                "out": str(self.out), "files": [str(f) for f in self.files],
                "trials": self.trials}


def _load_json(path: Path) -> dict[str, Any] | None:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def export_run(lab: str | Path | None, run: str, fmt: str, out: Path | str, *,
               force: bool = False, warn: Warn | None = None) -> ExportResult:
    """Write run `run` (an id or unique prefix) as `fmt` to `out` (a folder for inspect)."""
    import json

    from ix.lab.runs import find_run

    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; allowed: "
                          f"{', '.join(EXPORT_FORMATS)}", field="--format")
    out = Path(out).expanduser().resolve()
    check_out(out, force=force, directory=fmt == "inspect")
    lab_path = find_lab(lab)
    directory = find_run(lab_path, run)
    run_id = directory.name
    results = directory.parent.parent
    spec = read_spec(directory)
    experiment = str(spec.get("experiment") or results.parent.name)
    files: tuple[Path, ...] = (out,)
    if fmt in ("csv", "parquet"):  # straight from the query layer: no line is decoded here
        count = _write_table(lab_path, run_id, fmt, out, warn)
        return ExportResult(run_id, experiment, fmt, out, files, count)
    lines = run_lines(results / TRIALS_FILE, run_id, warn)
    records = [json.loads(line) for line in lines]
    if fmt == "jsonl":
        write_jsonl(lines, out)
    elif fmt == "json":
        write_json({"run_id": run_id, "experiment": experiment, "spec": spec,
                    "summary": _load_json(directory / "summary.json"), "trials": records}, out)
    else:
        files = _write_inspect(results.parent, lab_path, run_id, experiment, spec,
                               _load_json(directory / "summary.json"), records, out, warn)
    return ExportResult(run_id, experiment, fmt, out, files, len(records))


def _write_table(lab: Path, run_id: str, fmt: str, out: Path, warn: Warn | None) -> int:
    """The query layer's flat, typed columns (docs/queries.md), every attempt of the run;
    how many rows were written."""
    from ix.api.results import query_results

    rows = query_results(lab, run=run_id, all_attempts=True, warn=warn)
    with rows.snapshot():
        rows.export(fmt, out)
        return rows.count()


def _write_inspect(experiment_dir: Path, lab: Path, run_id: str, experiment: str,
                   spec: dict[str, Any], summary: dict[str, Any] | None,
                   records: list[dict[str, Any]], out: Path,
                   warn: Warn | None) -> tuple[Path, ...]:
    """One Inspect eval log per subject of the run, in the folder `out`."""
    from ix._version import __version__
    from ix.lab.inspect_log import dumps_log, eval_log, log_file_name

    cases: dict[str, EvalCase] = {}
    try:
        cases = {c.id: c for c in load_experiment(experiment_dir, lab).experiment.cases}
    except ConfigError as exc:
        if warn is not None:
            warn(f"the samples carry no prompts: the experiment does not load ({exc.render()})")
    blocks = {b["name"]: b for b in (summary or {}).get("subjects") or []}
    latest = latest_attempts(records)
    subjects = list(dict.fromkeys([*blocks, *(str(r["subject"]) for r in latest)]))
    if not records:
        trials = experiment_dir / "results" / TRIALS_FILE
        raise ConfigError(f"run {run_id} has no trials in {trials}: there is nothing to put "
                          "in a log", field="RUN")
    out.mkdir(exist_ok=True)
    written = []
    for subject in subjects:
        block = blocks.get(subject)
        order = [p["probe_id"] for p in (block or {}).get("probe_results") or []]
        log = eval_log(run_id=run_id, experiment=experiment, subject=subject, spec=spec,
                       records=[r for r in latest if r["subject"] == subject], cases=cases,
                       case_order=order, block=block, ix_version=__version__)
        path = out / log_file_name(log, subject)
        write_text_atomic(path, dumps_log(log))
        written.append(path)
    return tuple(written)


@dataclass(frozen=True)
class ImportResult:
    run_id: str
    experiment: str
    experiment_dir: Path
    created_experiment: bool
    format: str
    source: Path
    trials: int
    subjects: tuple[str, ...]
    cases: int
    unknown_cases: tuple[str, ...]
    run_dir: Path
    summary: dict[str, Any] = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "experiment": self.experiment,
                "experiment_dir": str(self.experiment_dir),
                "created_experiment": self.created_experiment, "format": self.format,
                "source": str(self.source), "trials": self.trials,
                "subjects": list(self.subjects), "cases": self.cases,
                "unknown_cases": list(self.unknown_cases), "run_dir": str(self.run_dir)}


def _target(lab: Path, name: str | None, named_in_file: list[str], source: Path,
            ) -> tuple[Path, bool]:
    """The experiment folder to import into, and whether it is new: `--experiment` (a folder
    in the lab, a path, or an experiment's `name`), else the one experiment the file names."""
    given = Path(name or "").expanduser()
    candidates = [given if given.is_absolute() else Path.cwd() / given] if name else []
    if name is None:
        if len(named_in_file) != 1:
            what = (f"names {len(named_in_file)} experiments ({', '.join(named_in_file)})"
                    if named_in_file else "names no experiment")
            raise ConfigError(f"the file {what}; say which with --experiment NAME",
                              file=source, field="--experiment")
        name = named_in_file[0]
        given = Path(name)
    for candidate in (lab / name, *candidates):
        if candidate.is_dir() and is_experiment(candidate):
            return candidate.resolve(), False
    for path in list_experiments(lab):
        if _experiment_name(path) == name:
            return path, False
    if given.name != name or name.startswith(".") or not name.strip():
        raise ConfigError(f"no experiment {name!r} in lab {lab}; a new one needs a plain "
                          "folder name (no path separators, no leading dot)",
                          field="--experiment")
    if (lab / name).exists():
        raise ConfigError(f"{lab / name} exists but is not an experiment (no "
                          f"{EXPERIMENT_FILE})", field="--experiment")
    return lab / name, True


def _experiment_name(path: Path) -> str | None:
    from ix.lab.yamlio import load_yaml_file

    try:
        data = load_yaml_file(path / EXPERIMENT_FILE)
    except ConfigError:
        return None
    return data.get("name") if isinstance(data, dict) else None


def import_results(lab: str | Path | None, source: Path | str, fmt: str, *,
                   experiment: str | None = None, command: list[str] | None = None,
                   warn: Warn | None = None) -> ImportResult:
    """Bring the trials of `source` into the lab as one new, completed run."""
    from ix.engine.plan import trial_seed
    from ix.eval.run_summary import summarise_tallies
    from ix.eval.scoring import Tally
    from ix.lab.importing import read_import, trial_line

    if fmt not in IMPORT_FORMATS:
        raise ConfigError(f"unknown import format {fmt!r}; allowed: "
                          f"{', '.join(IMPORT_FORMATS)}", field="--format")
    lab_path = find_lab(lab)
    source = Path(source).expanduser().resolve()
    imported = read_import(source, fmt)
    exp_dir, new = _target(lab_path, experiment, imported.experiments, source)
    known: dict[str, EvalCase] = {}
    name, goal = exp_dir.name, None
    if not new:
        loaded = load_experiment(exp_dir, lab_path)
        name, goal = loaded.experiment.name, loaded.experiment.goal
        known = {c.id: c for c in loaded.experiment.cases}
    expectation = {r["probe_id"]: r["expectation"] for r in imported.records}
    cases = [EvalCase(id=i, expectation=expectation[i],  # type: ignore[arg-type]
                      prompt=known[i].prompt if i in known else imported.prompts.get(i) or "-")
             for i in imported.case_ids]
    subjects = imported.subjects
    now = datetime.now(UTC)
    run_id = new_run_id(now)
    lines = [trial_line(r, run_id=run_id, experiment=name, started_at=iso(now),
                        seed=r["seed"] if r.get("seed") is not None
                        else trial_seed(0, r["subject"], r["probe_id"], r["trial"]))
             for r in imported.records]
    tallies = {s: Tally(cases) for s in subjects}
    for r in latest_attempts(lines):
        reading = r.get("reading") or {}
        tallies[r["subject"]].add(r["probe_id"], None if r.get("error")
                                  else bool(reading.get("passed")), r["trial"])
    for line in lines:
        obs = line.get("observation") or {}
        tallies[line["subject"]].spend(int(obs.get("tokens_input") or 0),
                                       int(obs.get("tokens_output") or 0),
                                       float(obs.get("cost_usd") or 0.0))
    trials_per_case = max(r["trial"] for r in imported.records) + 1
    sensor = next((line["reading"]["sensor_name"] for line in lines
                   if isinstance(line.get("reading"), Mapping)
                   and line["reading"].get("sensor_name")), "imported")
    info = {"sensor": sensor, "seed": None, "trials_per_case": trials_per_case,
            "trials_mode": {"mode": "fixed"}, "started_at": iso(now), "finished_at": iso(now),
            "skipped_cases": [], "imported_from": str(source), "format": fmt}
    summary = summarise_tallies(experiment_name=name, run_id=run_id, run_status="completed",
                                subjects=[(s, "") for s in subjects], tallies=tallies,
                                cases=cases, trials_per_case=trials_per_case, info=info,
                                goal=goal)
    spec = {
        "run_id": run_id, "experiment": name, "experiment_dir": str(exp_dir),
        "lab": str(lab_path), "status": "completed", "started_at": iso(now),
        "finished_at": iso(now), "imported_from": str(source), "format": fmt,
        "origin": imported.origin or None, "seed": None, "trials": trials_per_case,
        "trials_mode": {"mode": "fixed"},
        "command": command if command is not None else list(sys.argv),
        "versions": environment(),
        "config": {"name": name,
                   "subjects": [{"name": s, "runtime": {"kind": "imported",
                                                        **({"model": imported.models[s]}
                                                           if imported.models.get(s) else {})}}
                                for s in subjects],
                   "cases": {"run": len(cases)}},
        "trials_written": len(lines),
    }
    _write_import(exp_dir, new, run_id, spec, summary, lines, source, fmt, subjects, cases,
                  imported.prompts, now)
    unknown = tuple(c.id for c in cases if not new and c.id not in known)
    if unknown and warn is not None:
        warn(f"{len(unknown)} imported case(s) have no case file in {exp_dir / 'cases'} "
             f"({', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}); the case "
             "files were not changed")
    _audit(lab_path, run_id, name, source, fmt, len(lines))
    return ImportResult(run_id, name, exp_dir, new, fmt, source, len(lines), tuple(subjects),
                        len(cases), unknown, run_dir(exp_dir / "results", run_id), summary)


def _write_import(exp_dir: Path, new: bool, run_id: str, spec: dict[str, Any],
                  summary: dict[str, Any], lines: list[dict[str, Any]], source: Path, fmt: str,
                  subjects: list[str], cases: list[EvalCase], prompts: Mapping[str, str],
                  now: datetime) -> None:
    """Write the new run; on any failure remove all of it (and a new experiment folder)."""
    from ix.lab.importing import append_trials, truncate_trials, write_experiment

    results = exp_dir / "results"
    existed = results.is_dir()
    before = {p.name for p in results.iterdir()} if existed else set()
    latest = results / LATEST_SUMMARY
    previous = latest.read_bytes() if latest.is_file() else None
    span: tuple[int, int] | None = None
    try:
        if new:
            write_experiment(exp_dir, name=exp_dir.name, source=source, fmt=fmt,
                             subjects=subjects,
                             cases=[(c.id, c.expectation, prompts.get(c.id, ""))
                                    for c in cases])
        write_spec(run_dir(results, run_id), spec)
        span = append_trials(results, lines)
        write_json_atomic(run_dir(results, run_id) / "summary.json", summary)
        save_summary(results, summary, now)
    except BaseException:
        if new:
            shutil.rmtree(exp_dir, ignore_errors=True)
            raise
        if span is not None and TRIALS_FILE in before:
            truncate_trials(results, span)
        shutil.rmtree(run_dir(results, run_id), ignore_errors=True)
        if not existed:
            shutil.rmtree(results, ignore_errors=True)
            raise
        for path in results.iterdir():
            if path.name not in before:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        if previous is not None:
            latest.write_bytes(previous)
        raise


def _audit(lab: Path, run_id: str, experiment: str, source: Path, fmt: str,
           trials: int) -> None:
    """Record the import in the lab's audit log (`<lab>/audit.jsonl`)."""
    from ix.lab.audit import record

    record(lab, "import", run_id=run_id, experiment=experiment, source=str(source),
           format=fmt, trials=trials)
