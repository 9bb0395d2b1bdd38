"""`ix batch`: experiments × subjects × seeds, one command, one combined report.

Each (experiment, seed) is one ordinary run recorded in that experiment's own `results/`;
the battery folder (`output`, under the lab) keeps a snapshot of the battery and of every
run it plans (`battery.yaml`, rewritten as each run starts and ends) and the combined
report (`report.json`, `report.md`). The battery comes from a file, from fields given
directly (`--experiments`, `--subjects`, `--seeds`, ...; they override a file's), or, to
continue one, from its snapshot (`resume_battery`). Everything is validated before the
first trial runs.
"""

import contextlib
import fnmatch
import itertools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ix._version import __version__
from ix.api.battery_report import combined_report, outcome_lines, report_markdown
from ix.api.executors import executing
from ix.api.options import Observer, trial_listener
from ix.domain.errors import ConfigError, RunBusy
from ix.engine.plan import Overrides, Plan, build_plan
from ix.engine.resume import Continuation, continuing, find_continuation
from ix.engine.run import Limits, RunResult, run_plan
from ix.fs.files import write_json_atomic, write_text_atomic
from ix.fs.resolve import find_lab, list_experiments
from ix.fs.storage_faults import storage_error, storage_faults
from ix.fs.yamlio import dump_yaml, load_yaml_file
from ix.lab.loader import LoadedExperiment, load_experiment
from ix.lab.schema import BatterySpec, validate
from ix.store.audit import record
from ix.store.layout import ExperimentDir, RunDir
from ix.store.lookup import run_folders
from ix.store.runs import RunLock, iso, lock_run
from ix.store.spec import read_spec
from ix.store.summaries import summary_as_written

if TYPE_CHECKING:
    from ix.eval.schemas import Summary

SNAPSHOT = "battery.yaml"

#: The battery fields that can be given without a file, and the flag of `ix batch` each is.
FIELD_FLAGS = {"name": "--name", "experiments": "--experiments", "subjects": "--subjects",
               "seeds": "--seeds", "trials": "--trials"}

#: The name of a battery given without a file and without `--name`.
DEFAULT_NAME = "batch"


@dataclass(frozen=True)
class BatteryResult:
    folder: Path
    report: dict[str, Any]
    #: the runs that ran (or were read back), in the battery's order
    runs: list[RunResult]
    #: the runs the battery plans (more than `runs` when a signal or a budget stopped it)
    planned: int = 0

    @property
    def status(self) -> str:
        """`completed` when every planned run completed, else `cancelled` when a run was
        cancelled or never started, else `failed`."""
        statuses = [r.status for r in self.runs]
        if len(statuses) >= self.planned and all(s == "completed" for s in statuses):
            return "completed"
        return ("cancelled" if "cancelled" in statuses or len(statuses) < self.planned
                else "failed")


def battery_spec(file: Path | None = None,
                 fields: Mapping[str, Any] | None = None) -> BatterySpec:
    """The battery of `file` with `fields` (see `FIELD_FLAGS`; None: not given) put over it,
    or of the fields alone. A bad value is a `ConfigError` naming the file and key, or the
    flag when the value came from one."""
    given = {k: v for k, v in (fields or {}).items() if v is not None}
    unknown = sorted(set(given) - set(FIELD_FLAGS))
    if unknown:
        raise TypeError(f"unknown battery field(s) {', '.join(unknown)}; allowed: "
                        f"{', '.join(FIELD_FLAGS)}")
    data: Any = load_yaml_file(file) if file is not None else {"name": DEFAULT_NAME}
    if file is None and "experiments" not in given:
        raise ConfigError("give a battery file, or the experiments to run (names or globs "
                          "within the lab)", field="--experiments")
    if not isinstance(data, dict) or not given:
        return validate(BatterySpec, data, file=file, what="battery file")
    try:
        return validate(BatterySpec, {**data, **given}, file=file, what="battery file")
    except ConfigError as exc:
        key = (exc.field or "").split(".")[0].split("[")[0]
        if key not in given:
            raise
        where = FIELD_FLAGS[key] + (exc.field or "")[len(key):]
        raise ConfigError(exc.message, field=where) from None


def load_battery(path: Path, lab: Path) -> tuple[BatterySpec, list[tuple[Path, int]]]:
    """The battery file and its (experiment, seed) jobs; `ConfigError` naming file and field."""
    spec = battery_spec(path)
    return spec, battery_jobs(spec, lab, path)


def battery_jobs(spec: BatterySpec, lab: Path, file: Path | None) -> list[tuple[Path, int]]:
    """Each (experiment folder, seed) of the battery, in order: experiments as their names
    and globs first match, each with every seed."""
    known = list_experiments(lab)
    chosen: list[Path] = []
    for i, pattern in enumerate(spec.experiments):
        hits = [p for p in known if fnmatch.fnmatchcase(p.name, pattern)]
        if not hits:
            names = ", ".join(p.name for p in known) or "none"
            raise ConfigError(f"{pattern!r} matches no experiment of lab {lab} "
                              f"(experiments: {names})", file=file,
                              field=f"experiments[{i}]" if file else "--experiments")
        chosen += [p for p in hits if p not in chosen]
    return [(p, seed) for p in chosen for seed in spec.seed_list()]


def plan_battery(battery: Path | None, lab: str | Path | None = None, *,
                 fields: Mapping[str, Any] | None = None
                 ) -> tuple[BatterySpec, Path, list[Plan]]:
    """The battery (a file, `fields`, or both: see `battery_spec`), its lab and the plan of
    each of its runs; nothing runs, nothing is written."""
    # `--lab` is relative to the working directory, as for every command; without it, the
    # lab is the one the battery file is in (or, without a file, around the working folder)
    lab_path = (find_lab(lab) if lab is not None or battery is None
                else find_lab(cwd=battery.parent.resolve()))
    spec = battery_spec(battery, fields)
    plans = [_new_plan(_loaded(path, lab_path, spec, battery), spec, seed, battery)
             for path, seed in battery_jobs(spec, lab_path, battery)]
    return spec, lab_path, plans


def _loaded(path: Path, lab: Path, spec: BatterySpec,
            battery: Path | None) -> LoadedExperiment:
    try:
        return load_experiment(path, lab, replace_subjects=spec.subjects)
    except ConfigError as exc:
        if battery is None:
            raise
        raise ConfigError(f"{exc.render()} (in battery {battery.name})", file=None,
                          field=None) from None


def _new_plan(loaded: LoadedExperiment, spec: BatterySpec, seed: int,
              battery: Path | None) -> Plan:
    overrides = Overrides(trials=spec.trials, seed=seed, runtime=spec.runtime,
                          filters=tuple(spec.filter or ()))
    try:
        return build_plan(loaded, overrides)
    except ConfigError as exc:
        where = battery.name if battery is not None else spec.name
        raise ConfigError(f"{exc.render()} (in battery {where})", file=None,
                          field=None) from None


def _folder(lab: Path, template: str, now: datetime, battery: Path | None) -> Path:
    if "{seq}" not in template:
        template += "_{seq}"
    seq = 1
    while True:
        folder = lab / template.format(date=now.strftime("%Y%m%d"), seq=f"{seq:03d}")
        if not folder.exists():
            break
        seq += 1
    if not folder.resolve().is_relative_to(lab.resolve()):
        raise ConfigError("must stay inside the lab", file=battery,
                          field="output" if battery is not None else None)
    return folder


@dataclass
class _Job:
    """One (experiment, seed) of a battery: its snapshot entry (updated as it runs), and
    either a plan to run (new, or continuing `continuation`) or its completed run."""

    entry: dict[str, Any]
    plan: Plan
    continuation: Continuation | None = None
    done: RunResult | None = None


def run_battery(battery: Path | None = None, lab: str | Path | None = None, *,
                command: list[str], fields: Mapping[str, Any] | None = None,
                observer: Observer | None = None, limits: Limits = Limits(),
                executor: str = "local", address: str | None = None) -> BatteryResult:
    """Run every (experiment, seed) of a battery (a file, `fields`, or both: see
    `battery_spec`); `observer` hears each plan and trial."""
    spec, lab_path, plans = plan_battery(battery, lab, fields=fields)
    with executing(executor, address) as (where, place):
        now = datetime.now(UTC)
        folder = _folder(lab_path, spec.output, now, battery)
        snapshot: dict[str, Any] = {
            "battery": spec.model_dump(mode="json"),
            "file": str(battery.resolve()) if battery is not None else None,
            "ix": __version__, "started_at": now.isoformat(), "command": command,
            "runs": [_entry(plan, lab_path) for plan in plans]}
        _start(folder, dump_yaml(snapshot))
        jobs = [_Job(entry, place(plan)) for entry, plan in zip(snapshot["runs"], plans,
                                                               strict=True)]
        with _held(folder):
            return _run_jobs(folder, snapshot, spec, lab_path, jobs, command=command,
                             observer=observer or Observer(), limits=limits, executor=where)


def _entry(plan: Plan, lab: Path) -> dict[str, Any]:
    """A run of the battery as its snapshot lists it before it starts."""
    return {"experiment": plan.loaded.experiment.name,
            "path": plan.loaded.path.resolve().relative_to(lab.resolve()).as_posix(),
            "seed": plan.seed, "run_id": None, "status": "pending", "summary": None}


@contextlib.contextmanager
def _held(folder: Path) -> Iterator[None]:
    """The battery folder held by this process while it runs the battery, so that a
    `--resume` of it meanwhile is refused (the kernel lets go if the process dies)."""
    try:
        lock: RunLock = lock_run(folder)
    except RunBusy:
        raise ConfigError(f"battery {folder.name} is being run by another ix process; wait "
                          "for it to end, then resume it", field="--resume") from None
    except OSError:  # a read-only folder: nobody else can write it either
        lock = RunLock(-1)
    try:
        yield
    finally:
        lock.release()


def _run_jobs(folder: Path, snapshot: dict[str, Any], spec: BatterySpec, lab_path: Path,
              jobs: list[_Job], *, command: list[str], observer: Observer, limits: Limits,
              executor: dict[str, Any] | None) -> BatteryResult:
    """Run (or continue) each job in order, the snapshot rewritten as each starts and ends;
    then the combined report over every run of the battery that ran."""
    def save(why: str) -> None:
        with storage_faults(why):
            write_text_atomic(folder / SNAPSHOT, dump_yaml(snapshot))

    results: list[RunResult] = []
    for job in jobs:
        if job.done is not None:
            results.append(job.done)
            continue
        observer.on_plan(job.plan)
        if job.continuation is None:  # how its run is found if this process is killed
            job.entry.update(status="running", started_at=iso(datetime.now(UTC)))
        else:
            job.entry.update(status="running")
        save(f"the battery stopped before the run of {job.entry['experiment']}, seed "
             f"{job.entry['seed']}")
        result = run_plan(job.plan, command=command, on_trial=trial_listener(observer),
                          limits=limits, executor=executor, continuation=job.continuation,
                          warn=observer.on_warning, on_batch=observer.on_batch,
                          on_pause=observer.on_pause)
        results.append(result)
        job.entry.update(run_id=result.run_id, status=result.status,
                         summary=str(result.summary_path))
        save(f"the battery stopped after run {result.run_id}, which is kept")
        # a signal or a budget stops the battery; a subject's circuit breaker only its run
        if result.status == "cancelled" and result.summary.get("stop_cause") != "breaker":
            break
    snapshot["finished_at"] = datetime.now(UTC).isoformat()
    report = combined_report(spec.name, results)
    with storage_faults(f"the battery's runs are kept, but {folder.name} lacks its report"):
        write_text_atomic(folder / SNAPSHOT, dump_yaml(snapshot))
        write_json_atomic(folder / "report.json", report, shared=True)
        write_text_atomic(folder / "report.md", report_markdown(report), shared=True)
    record(lab_path, "batch", battery=spec.name, file=snapshot.get("file"),
           folder=str(folder), runs=snapshot["runs"],
           mode="resume" if snapshot.get("resumed") else "new")
    return BatteryResult(folder, report, results, planned=len(jobs))


def _start(folder: Path, snapshot: str) -> None:
    """The battery folder with its first snapshot, or (a full disk, a read-only lab) a
    `StorageError` and no folder: nothing has run yet, and nothing is left behind."""
    made = [folder, *itertools.takewhile(lambda p: not p.exists(), folder.parents)]
    try:
        folder.mkdir(parents=True)
        write_text_atomic(folder / SNAPSHOT, snapshot)
    except OSError as exc:
        for d in made:  # the deepest first
            with contextlib.suppress(OSError):
                d.rmdir()
        raise (storage_error(exc, "the battery did not start; nothing was written")
               or exc) from None


# --------------------------------------------------------------------------- resume


def resume_battery(folder: Path | None = None, lab: str | Path | None = None, *,
                   command: list[str], observer: Observer | None = None,
                   limits: Limits = Limits(), executor: str = "local",
                   address: str | None = None) -> BatteryResult:
    """Continue a battery (its folder; None: the lab's latest): each run not completed is
    resumed (only its trials not yet recorded run), each run never started is started, each
    completed one is read back; the snapshot and the combined report then cover them all."""
    lab_path = (find_lab(lab) if lab is not None or folder is None
                else find_lab(cwd=folder.resolve().parent))
    folder = latest_battery(lab_path) if folder is None else folder.resolve()
    file = folder / SNAPSHOT
    if not file.is_file():
        raise ConfigError(f"{folder} is not a battery folder (it has no {SNAPSHOT})",
                          field="BATTERY")
    snapshot = load_yaml_file(file)
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("runs"), list):
        raise ConfigError("not a battery snapshot written by ix", file=file, field="runs")
    try:
        spec = validate(BatterySpec, snapshot.get("battery"), file=file, what="battery")
    except ConfigError as exc:
        raise exc.at(prefix="battery") from None
    observer = observer or Observer()
    sessions = [snapshot.get("command"), *(s.get("command") for s in
                                           snapshot.get("resumed") or [])]
    jobs = [_resume_job(entry, i, file, spec, lab_path, sessions, observer)
            for i, entry in enumerate(snapshot["runs"])]
    with _held(folder), executing(executor, address) as (where, place):
        snapshot["resumed"] = [*(snapshot.get("resumed") or []),
                               {"at": datetime.now(UTC).isoformat(), "command": command}]
        snapshot.pop("finished_at", None)
        for job in jobs:
            if job.done is None:
                job.plan = place(job.plan)
        return _run_jobs(folder, snapshot, spec, lab_path, jobs, command=command,
                         observer=observer, limits=limits, executor=where)


def _resume_job(entry: Any, i: int, file: Path, spec: BatterySpec, lab: Path,
                sessions: list[Any], observer: Observer) -> _Job:
    """What resuming one run of the battery does: continue it, start it, or read it back."""
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) \
            or type(entry.get("seed")) is not int:
        raise ConfigError("each run needs its experiment's path and its seed", file=file,
                          field=f"runs[{i}]")
    path = (lab / entry["path"]).resolve()
    if not path.is_relative_to(lab.resolve()) or not path.is_dir():
        raise ConfigError(f"experiment folder {entry['path']!r} is not in lab {lab}",
                          file=file, field=f"runs[{i}].path")
    results = ExperimentDir.at(path).results
    run_id = entry.get("run_id")
    if not run_id and entry.get("status") == "running":
        run_id = _started_run(results, entry, sessions)  # killed before its snapshot said
    loaded = _loaded(path, lab, spec, None)
    if not run_id:
        return _Job(entry, _new_plan(loaded, spec, entry["seed"], None))
    cont = find_continuation(results, str(run_id), "resume", observer.on_warning)
    plan = build_plan(loaded, Overrides.from_dict(cont.spec.get("overrides")))
    entry.update(run_id=cont.run_id)
    if cont.spec.get("status") != "completed":
        return _Job(entry, continuing(plan, cont), continuation=cont)
    run = ExperimentDir(results).run(cont.run_id)
    summary_path = Path(entry["summary"]) if entry.get("summary") else run.summary
    if not summary_path.is_file():
        summary_path = run.summary
    summary = cast("Summary", summary_as_written(summary_path))  # as the run wrote it
    entry.update(status="completed", summary=str(summary_path))
    done = RunResult(cont.run_id, "completed", summary, summary_path, run.path, plan,
                     cont.recorded)
    return _Job(entry, plan, done=done)


def _started_run(results: Path, entry: dict[str, Any], sessions: list[Any]) -> str | None:
    """The run a killed battery had started for `entry` before it could note its id: the
    first run of the experiment begun since, with the entry's seed, by one of the battery's
    own command lines."""
    since = str(entry.get("started_at") or "")
    for folder in run_folders(results):
        if not RunDir(folder).spec.is_file():
            continue  # killed before its spec was written: nothing of it was recorded
        try:
            spec = read_spec(folder)
        except ConfigError:
            continue
        if str(spec.get("started_at") or "") >= since and spec.get("seed") == entry["seed"] \
                and spec.get("command") in sessions:
            return folder.name
    return None


def latest_battery(lab: Path) -> Path:
    """The battery folder of the lab started last (any folder holding a `battery.yaml`,
    outside the experiments, at most four levels down)."""
    found: list[tuple[str, Path]] = []
    for root, dirs, files in os.walk(lab):
        here = Path(root)
        if SNAPSHOT in files and here != lab:
            with contextlib.suppress(ConfigError, OSError):
                data = load_yaml_file(here / SNAPSHOT)
                if isinstance(data, dict) and isinstance(data.get("runs"), list):
                    found.append((str(data.get("started_at") or ""), here))
        deep = len(here.relative_to(lab).parts) >= 4
        dirs[:] = [] if deep else [d for d in dirs if not d.startswith(".")
                                   and not (here / d / "experiment.yaml").is_file()]
    if not found:
        raise ConfigError(f"lab {lab} has no battery to resume", field="--resume")
    return max(found)[1]


__all__ = ["BatteryResult", "battery_jobs", "battery_spec", "combined_report", "latest_battery",
           "load_battery", "outcome_lines", "plan_battery", "report_markdown", "resume_battery",
           "run_battery"]
