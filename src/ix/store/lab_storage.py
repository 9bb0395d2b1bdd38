"""`LabStorage`: the seed's `Storage` protocol (`ix.domain.ports.Storage`) over a lab folder.

For verdicts that ix did not run itself — a harness of your own, a notebook — written into
the lab trial by trial as one run of an existing experiment, which every command then reads
as it reads a run ix made (`ix report`, `ix results`, `ix compare`, the viewer):

    storage = ix.Lab("lab").storage(subject="my-agent")
    for verdict in verdicts:                       # ix.domain.Verdict
        storage.append_result("routing", verdict)  # on disk when it returns
    storage.save_summary("routing", results)       # the run completed; its summary's path

The run starts (`running`, under its lock) at the first verdict of an experiment; each
verdict is one trial line; `save_summary` counts the run's verdicts by the one rule
(`ix.domain.verdicts`), checks that `results` says the same of every case it lists (a
summary never disagrees with its log), and completes the run. A run never saved stays
`running` until `close`, which marks it `cancelled` with its lines kept. Loading an
experiment is the lab's (`ix.lab`, which `store` does not import): the caller passes it in.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.domain.verdicts import ProbeResult, Verdict
from ix.eval.models import EvalCase, Experiment, ExperimentResults
from ix.eval.run_summary import summarise_tallies
from ix.eval.schemas import SummaryRun
from ix.eval.scoring import Tally
from ix.fs.resolve import list_experiments
from ix.fs.yamlio import load_yaml_file
from ix.store.layout import ExperimentDir
from ix.store.recorder import RunRecorder
from ix.store.runs import iso
from ix.store.spec import environment
from ix.store.spec_schema import RunSpec, SpecStatus

#: The runtime kind a run of outside verdicts records for its subject.
RUNTIME = "storage"


@dataclass
class _Run:
    """One experiment's run being written: its recorder, and its verdicts counted as they
    come (one subject's `Tally`, each case included at its first verdict)."""

    folder: Path
    experiment: Experiment
    recorder: RunRecorder
    started: datetime
    tally: Tally
    #: the experiment's prompts, by case id (a case it does not have: "-")
    prompts: dict[str, str]
    #: the cases counted, by id (the tally's, for their expectation)
    cases: dict[str, EvalCase] = field(default_factory=dict)
    #: the first reading's sensor, the summary's `sensor`
    sensor: str | None = None

    def per_case(self) -> int:
        """The most trials a case has."""
        return max((c.valid + c.errors for c in self.tally.counts.values()), default=0)


class LabStorage:
    """The seed's `Storage` over the lab folder `lab` (see the module's docstring); `load`
    reads an experiment folder (`ix.lab.loader`), `subject` names whose verdicts these are."""

    def __init__(self, lab: Path, load: Callable[[Path], Experiment], *,
                 subject: str = "subject"):
        self.lab = lab
        self.subject = subject
        self._load = load
        self._runs: dict[str, _Run] = {}

    # ------------------------------------------------------------------ the seed's four

    def load_experiment(self, path: Path) -> Experiment:
        """The experiment of the folder `path` (`ConfigError` on any problem)."""
        return self._load(path)

    def list_experiments(self, base: Path) -> list[Path]:
        """The experiment folders of the lab `base`, sorted by name."""
        return list_experiments(base)

    def append_result(self, experiment_name: str, result: Verdict) -> None:
        """One trial's verdict, as one line of the experiment's trial log (on disk when this
        returns); the first one of an experiment starts its run."""
        if result.expectation not in ("must_trigger", "should_not_trigger"):
            raise ConfigError(f"verdict of case {result.probe_id!r}: expectation "
                              f"{result.expectation!r} is neither must_trigger nor "
                              "should_not_trigger", field="expectation")
        run = self._runs.get(experiment_name) or self._start(experiment_name)
        case = run.cases.get(result.probe_id)
        if case is None:
            case = run.cases[result.probe_id] = EvalCase(
                id=result.probe_id, expectation=result.expectation,  # type: ignore[arg-type]
                prompt=run.prompts.get(result.probe_id, "-"))
            run.tally.include(case)
        elif case.expectation != result.expectation:
            raise ConfigError(f"verdict of case {result.probe_id!r}: expectation "
                              f"{result.expectation!r}, but earlier ones said "
                              f"{case.expectation!r}", field="expectation")
        observation = _dump(result.observation)
        line = {
            "run_id": run.recorder.run_id, "experiment": run.experiment.name,
            "subject": self.subject, "probe_id": result.probe_id, "trial": result.trial,
            "seed": None, "attempt": 0, "expectation": result.expectation,
            "started_at": iso(datetime.now(UTC)),
            "duration_ms": _number(observation, "duration_ms"),
            "observation": observation,
            "reading": None if result.reading is None
            else result.reading.model_dump(mode="json"),
            "error": None if result.passed is not None else {
                "kind": "no_verdict", "message": "the verdict has no reading that passed "
                                                 "or failed"},
        }
        run.recorder.record(line)
        run.tally.spend(int(_number(observation, "tokens_input")),
                        int(_number(observation, "tokens_output")),
                        _number(observation, "cost_usd"))
        run.tally.add(result.probe_id, result.passed)
        if result.reading is not None and result.passed is not None:
            run.sensor = run.sensor or result.reading.sensor_name
            run.tally.sense(result.probe_id, [(run.sensor, result.passed)])

    def save_summary(self, experiment_name: str, results: ExperimentResults) -> Path:
        """Complete the experiment's run: its summary (of the verdicts appended, which
        `results` must agree with, case by case) and final spec; the summary's path."""
        run = self._runs.get(experiment_name)
        if run is None:
            raise ConfigError(f"no verdict of experiment {experiment_name!r} was appended: "
                              "there is no run to summarise", field="experiment_name")
        ours = {p.probe_id: p for p in run.tally.probe_results()}
        for given in results.probe_results:
            if _disagrees(given, ours.get(given.probe_id)):
                raise ConfigError(
                    f"results of experiment {experiment_name!r}: case {given.probe_id!r} has "
                    f"score {given.score} and correct {given.correct}, but its appended "
                    "verdicts give "
                    + (f"{ours[given.probe_id].score} and {ours[given.probe_id].correct}"
                       if given.probe_id in ours else "none"), field="probe_results")
        now = datetime.now(UTC)
        summary = self._summary(run, now)
        path = run.recorder.finish(summary, self._spec(run, "completed", now), now)
        run.recorder.release()
        del self._runs[experiment_name]
        return path

    # ------------------------------------------------------------------ the rest

    def close(self) -> None:
        """Give up every run not saved: marked `cancelled`, its lines kept."""
        for name in list(self._runs):
            run = self._runs.pop(name)
            run.recorder.abandon(self._spec(run, "cancelled", datetime.now(UTC)))
            run.recorder.close_log()
            run.recorder.release()

    def __enter__(self) -> "LabStorage":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _folder(self, name: str) -> Path:
        """The experiment folder called `name`, or whose experiment.yaml is named so."""
        folders = list_experiments(self.lab)
        for folder in folders:
            if folder.name == name:
                return folder
        for folder in folders:
            try:
                data = load_yaml_file(folder / "experiment.yaml")
            except ConfigError:
                continue
            if isinstance(data, dict) and data.get("name") == name:
                return folder
        raise ConfigError(f"no experiment {name!r} in lab {self.lab}", field="experiment_name")

    def _start(self, name: str) -> _Run:
        folder = self._folder(name)
        experiment = self._load(folder)
        started = datetime.now(UTC)
        results = ExperimentDir.at(folder).results
        def spec_for(run_id: str) -> RunSpec:
            return self._spec_of(run_id, folder, experiment, "running", started, None, 0)

        recorder = RunRecorder.start(results, started, spec_for)
        recorder.open_log()
        run = _Run(folder, experiment, recorder, started, Tally([]),
                   {c.id: c.prompt for c in experiment.cases})
        self._runs[name] = run
        return run

    def _summary(self, run: _Run, now: datetime) -> Any:
        per_case = run.per_case()
        info: SummaryRun = {"sensor": run.sensor or "verdicts", "seed": None,
                            "trials_per_case": per_case, "trials_mode": {"mode": "fixed"},
                            "started_at": iso(run.started), "finished_at": iso(now),
                            "skipped_cases": []}
        return summarise_tallies(
            experiment_name=run.experiment.name, run_id=run.recorder.run_id,
            run_status="completed", subjects=[(self.subject, "")],
            tallies={self.subject: run.tally}, cases=run.tally.cases,
            trials_per_case=per_case, info=info, goal=None, prior=run.experiment.prior)

    def _spec(self, run: _Run, status: SpecStatus, now: datetime) -> RunSpec:
        return self._spec_of(run.recorder.run_id, run.folder, run.experiment, status,
                             run.started, now, run.tally.trials, len(run.cases),
                             run.per_case())

    def _spec_of(self, run_id: str, folder: Path, experiment: Experiment, status: SpecStatus,
                 started: datetime, finished: datetime | None, written: int,
                 cases: int = 0, trials: int = 0) -> RunSpec:
        return {
            "run_id": run_id, "experiment": experiment.name, "experiment_dir": str(folder),
            "lab": str(self.lab), "status": status, "started_at": iso(started),
            "finished_at": iso(finished) if finished is not None else None,
            "seed": None, "trials": trials, "trials_mode": {"mode": "fixed"},
            "command": ["LabStorage"], "versions": environment(),
            "config": {"name": experiment.name,
                       "subjects": [{"name": self.subject, "runtime": {"kind": RUNTIME}}],
                       "cases": {"run": cases}},
            "trials_written": written,
        }


def _disagrees(given: ProbeResult, ours: ProbeResult | None) -> bool:
    if ours is None:
        return True
    return given.correct != ours.correct or abs(given.score - ours.score) > 1e-9


def _dump(observation: Any) -> Any:
    dump = getattr(observation, "model_dump", None)
    return dump(mode="json", exclude_none=True) if dump is not None else observation


def _number(observation: Any, key: str) -> float:
    value = observation.get(key) if isinstance(observation, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else 0.0


__all__ = ["RUNTIME", "LabStorage"]
