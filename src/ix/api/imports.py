"""`ix import`: outside results into the lab as one new, completed run; docs/export.md.

The file is read and every trial checked first (`ix.interchange.importing`), outside any lock. Then,
in the lab's import turn (`ix.store.import_run`: one import at a time), what killed imports
left is settled, the experiment is chosen (a new one only if it still does not exist), an
earlier import of the same bytes is refused unless `force`, and the run is written all at
once: a failure or a kill leaves no trace of it, or — killed after its lines were appended —
a run the next import completes.
"""

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ix.domain.errors import ConfigError, Warn
from ix.engine.plan import trial_seed
from ix.eval.models import EvalCase
from ix.eval.run_summary import summarise_tallies
from ix.eval.schemas import Summary, SummaryRun
from ix.eval.scoring import Tally
from ix.fs.names import name_problem, normalise
from ix.fs.resolve import EXPERIMENT_FILE, find_lab, is_experiment, list_experiments
from ix.fs.storage_faults import storage_faults
from ix.fs.yamlio import load_yaml_file
from ix.interchange.export import latest_attempts
from ix.interchange.folder_import import read_folder
from ix.interchange.importing import (
    Imported,
    importable_goal,
    read_import,
    trial_line,
    write_experiment,
)
from ix.lab.loader import load_experiment
from ix.store.audit import record
from ix.store.import_run import find_import, import_turn, new_experiment, settle
from ix.store.layout import ExperimentDir
from ix.store.recorder import RunRecorder
from ix.store.runs import iso, new_run_id
from ix.store.spec import environment
from ix.store.spec_schema import RunSpec

if TYPE_CHECKING:
    from ix.api.schemas import ImportOutput

IMPORT_FORMATS = ("inspect", "jsonl", "csv", "folder")

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
    summary: Summary = field(repr=False)

    def as_dict(self) -> "ImportOutput":
        return {"run_id": self.run_id, "experiment": self.experiment,
                "experiment_dir": str(self.experiment_dir),
                "created_experiment": self.created_experiment, "format": self.format,
                "source": str(self.source), "trials": self.trials,
                "subjects": list(self.subjects), "cases": self.cases,
                "unknown_cases": list(self.unknown_cases), "run_dir": str(self.run_dir)}


def import_results(lab: str | Path | None, source: Path | str, fmt: str, *,
                   experiment: str | None = None, force: bool = False,
                   command: list[str] | None = None, warn: Warn | None = None) -> ImportResult:
    """Bring the trials of `source` into the lab as one new, completed run. A source whose
    bytes the experiment imported before is refused (`ConfigError`) unless `force`."""
    if fmt not in IMPORT_FORMATS:
        raise ConfigError(f"unknown import format {fmt!r}; allowed: "
                          f"{', '.join(IMPORT_FORMATS)}", field="--format")
    lab_path = find_lab(lab)
    source = Path(source).expanduser().resolve()
    imported = read_folder(source) if fmt == "folder" else read_import(source, fmt)
    # a full disk, a read-only lab: one line (`StorageError`), and no trace of the import
    with storage_faults("nothing was imported: the lab is as it was"), \
            import_turn(lab_path, warn):
        settle(lab_path, warn)
        exp_dir, new = _target(lab_path, experiment, imported.experiments, source)
        if not new and not force:
            place = ExperimentDir.at(exp_dir)
            earlier = find_import(place.results, imported.sha256)
            if earlier is not None:
                raise ConfigError(
                    f"was imported before, as run {earlier} of {exp_dir.name} "
                    f"({place.run(earlier).path}); importing it again "
                    "would count its trials twice. Pass --force to import it anyway",
                    file=source)
        result = _write(lab_path, exp_dir, new, imported, source, fmt, command)
    if result.unknown_cases and warn is not None:
        unknown = result.unknown_cases
        warn(f"{len(unknown)} imported case(s) have no case file in {exp_dir / 'cases'} "
             f"({', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}); the case "
             "files were not changed")
    _audit(lab_path, result.run_id, result.experiment, source, fmt, result.trials,
           imported.sha256)
    return result


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
    problem = name_problem(name)
    if problem is None and (given.name != name or len(name.encode("utf-8")) > 255):
        problem = "must be a plain folder name"
    if problem is not None:
        raise ConfigError(f"no experiment {name!r} in lab {lab}, and a new one cannot be "
                          f"called that: its name {problem}", field="--experiment")
    name = normalise(name)
    if (lab / name).exists() or (lab / name).is_symlink():
        raise ConfigError(f"{lab / name} exists but is not an experiment (no "
                          f"{EXPERIMENT_FILE})", field="--experiment")
    return lab / name, True


def _experiment_name(path: Path) -> str | None:
    try:
        data = load_yaml_file(path / EXPERIMENT_FILE)
    except ConfigError:
        return None
    return data.get("name") if isinstance(data, dict) else None


def _write(lab: Path, exp_dir: Path, new: bool, imported: Imported, source: Path, fmt: str,
           command: list[str] | None) -> ImportResult:
    """Make the run — lines, spec, summary — and write it (`ix.store.import_run`)."""
    known: dict[str, EvalCase] = {}
    subjects = imported.subjects
    name, prior = exp_dir.name, "uniform"
    goal = importable_goal(imported.goal, subjects)
    if not new:
        loaded = load_experiment(exp_dir, lab)
        name, goal = loaded.experiment.name, loaded.experiment.goal
        prior = loaded.experiment.prior
        known = {c.id: c for c in loaded.experiment.cases}
    expectation = {r["probe_id"]: r["expectation"] for r in imported.records}
    cases = [EvalCase(id=i, expectation=expectation[i],  # type: ignore[arg-type]
                      prompt=known[i].prompt if i in known else imported.prompts.get(i) or "-")
             for i in imported.case_ids]
    now = datetime.now(UTC)
    run_id = new_run_id(now)
    lines = [trial_line(r, run_id=run_id, experiment=name, started_at=iso(now),
                        seed=r["seed"] if r.get("seed") is not None
                        else trial_seed(0, r["probe_id"], r["trial"]))
             for r in imported.records]
    tallies = {s: Tally(cases) for s in subjects}
    for r in latest_attempts(lines):
        reading = r.get("reading") or {}
        tallies[r["subject"]].add(r["probe_id"], None if r.get("error")
                                  else bool(reading.get("passed")), r["trial"])
        if not r.get("error"):  # every sensor's reading (the summary's `sensors`)
            listed = r.get("readings") or ([reading] if reading else [])
            tallies[r["subject"]].sense(r["probe_id"], [
                (str(x.get("sensor_name")), None if x.get("passed") is None  # n/a
                 else x.get("passed") is True) for x in listed if isinstance(x, Mapping)])
    for line in lines:
        obs = line.get("observation") or {}
        tallies[line["subject"]].spend(int(obs.get("tokens_input") or 0),
                                       int(obs.get("tokens_output") or 0),
                                       float(obs.get("cost_usd") or 0.0))
    trials_per_case = max(r["trial"] for r in imported.records) + 1
    sensor = next((line["reading"]["sensor_name"] for line in lines
                   if isinstance(line.get("reading"), Mapping)
                   and line["reading"].get("sensor_name")), "imported")
    info: SummaryRun = {"sensor": sensor, "seed": None, "trials_per_case": trials_per_case,
            "trials_mode": {"mode": "fixed"}, "started_at": iso(now), "finished_at": iso(now),
            "skipped_cases": [], "imported_from": str(source), "format": fmt}
    summary = summarise_tallies(experiment_name=name, run_id=run_id, run_status="completed",
                                subjects=[(s, "") for s in subjects], tallies=tallies,
                                cases=cases, trials_per_case=trials_per_case, info=info,
                                goal=goal, prior=prior)
    spec: RunSpec = {
        "run_id": run_id, "experiment": name, "experiment_dir": str(exp_dir),
        "lab": str(lab), "status": "completed", "started_at": iso(now),
        "finished_at": iso(now), "imported_from": str(source), "format": fmt,
        "import": {"source": str(source), "format": fmt, "sha256": imported.sha256},
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

    def record(results: Path, fresh: bool) -> None:
        recorder = RunRecorder.whole(results, run_id, fresh=fresh)
        for line in lines:
            recorder.record(line)
        recorder.finish(summary, spec, now)

    if new:
        def build(folder: Path) -> None:
            write_experiment(folder, name=name, source=source, fmt=fmt, subjects=subjects,
                             cases=[(c.id, c.expectation, imported.prompts.get(c.id, ""))
                                    for c in cases], goal=goal, trials=trials_per_case)
            record(ExperimentDir.at(folder).results, fresh=True)

        new_experiment(lab, exp_dir.name, build)
    else:
        record(ExperimentDir.at(exp_dir).results, fresh=False)
    unknown = tuple(c.id for c in cases if not new and c.id not in known)
    return ImportResult(run_id, name, exp_dir, new, fmt, source, len(lines), tuple(subjects),
                        len(cases), unknown, ExperimentDir.at(exp_dir).run(run_id).path, summary)


def _audit(lab: Path, run_id: str, experiment: str, source: Path, fmt: str,
           trials: int, sha256: str) -> None:
    """Record the import in the lab's audit log (`<lab>/audit.jsonl`)."""
    record(lab, "import", run_id=run_id, experiment=experiment, source=str(source),
           format=fmt, trials=trials, sha256=sha256)


__all__ = ["IMPORT_FORMATS", "ImportResult", "import_results"]
