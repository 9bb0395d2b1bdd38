"""The folders and files that runs write, drawn in one place.

```
<lab>/<experiment>/results/
    trials.jsonl                the trial log, every run's lines (`store/trials.py`)
    summary-latest.json         the latest run's summary; summary-<stamp>.json, archived
    runs/<run_id>/
        spec.yaml               what the run was asked (`store/runs.py`)
        run.lock                held while the run writes
        summary.json            its summary
        annotations.jsonl       notes on it (`store/annotations.py`)
        traces/                 its trials' traces
```

`ExperimentDir` and `RunDir` are these paths as objects: `ExperimentDir.at(folder)
.run(run_id).spec` instead of `folder / "results" / "runs" / run_id / "spec.yaml"`, and
`RunDir(folder).experiment` instead of `folder.parent.parent`. They only name paths; nothing
here touches the disk. Every module of ix that reads or writes these files names them here:
the file names are defined in this module only (the writers' modules re-export theirs).
"""

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path

RESULTS_DIR = "results"
TRIALS_FILE = "trials.jsonl"
LATEST_SUMMARY = "summary-latest.json"
ARCHIVED_SUMMARIES = "summary-*.json"  # summary-<stamp>.json, or -2, -3, ... (and the latest)
RUNS_DIR = "runs"
SPEC_FILE = "spec.yaml"
LOCK_FILE = "run.lock"
SUMMARY_FILE = "summary.json"
ANNOTATIONS_FILE = "annotations.jsonl"
TRACES_DIR = "traces"


@dataclass(frozen=True)
class RunDir:
    """`<experiment>/results/runs/<run_id>/`."""

    path: Path

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def spec(self) -> Path:
        return self.path / SPEC_FILE

    @property
    def lock(self) -> Path:
        return self.path / LOCK_FILE

    @property
    def summary(self) -> Path:
        return self.path / SUMMARY_FILE

    @property
    def annotations(self) -> Path:
        return self.path / ANNOTATIONS_FILE

    @property
    def traces(self) -> Path:
        return self.path / TRACES_DIR

    @property
    def experiment(self) -> "ExperimentDir":
        """The experiment whose `results/runs/` holds this run."""
        return ExperimentDir(self.path.parent.parent)


@dataclass(frozen=True)
class ExperimentDir:
    """`<lab>/<experiment>/` as far as runs write it, held by its `results/` folder (a staged
    import builds one under another name, `store/import_run.py`): `ExperimentDir.at(folder)`
    for an experiment's folder, `ExperimentDir(results)` for a results folder."""

    results: Path

    @classmethod
    def at(cls, experiment: Path) -> "ExperimentDir":
        return cls(experiment / RESULTS_DIR)

    @property
    def path(self) -> Path:
        return self.results.parent

    @property
    def trials(self) -> Path:
        return self.results / TRIALS_FILE

    @property
    def latest_summary(self) -> Path:
        return self.results / LATEST_SUMMARY

    def archived_summaries(self, name: str) -> Iterator[Path]:
        """Where the summary of a run finished at `name` (its `stamp`) may be archived, in
        order: `summary-<stamp>.json`, then `summary-<stamp>-2.json`, ... — the writer takes
        the first that does not exist, so no archived summary is overwritten."""
        yield self.results / f"summary-{name}.json"
        for n in count(2):
            yield self.results / f"summary-{name}-{n}.json"

    @staticmethod
    def archived_stamp(path: Path) -> str:
        """The stamp an archived summary's name was made of (`archived_summaries`' `name`)."""
        return path.name.removeprefix("summary-").removesuffix(".json")

    @property
    def runs(self) -> Path:
        return self.results / RUNS_DIR

    def run(self, run_id: str) -> RunDir:
        return RunDir(self.runs / run_id)

    @property
    def name(self) -> str:
        """The experiment's folder name."""
        return self.path.name


__all__ = ["ANNOTATIONS_FILE", "ARCHIVED_SUMMARIES", "LATEST_SUMMARY", "LOCK_FILE",
           "RESULTS_DIR", "RUNS_DIR", "SPEC_FILE", "SUMMARY_FILE", "TRACES_DIR", "TRIALS_FILE",
           "ExperimentDir", "RunDir"]
