"""The folders and files that runs write, drawn in one place.

```
<lab>/<experiment>/results/
    trials.jsonl                the trial log, every run's lines (`store/trials.py`)
    labels.jsonl                people's labels of judged trials (`store/labels.py`)
    summary-latest.json         the latest run's summary; summary-<stamp>.json, archived
    runs/<run_id>/
        spec.yaml               what the run was asked (`store/runs.py`)
        run.lock                held while the run writes
        paused                  there while the run is paused (`store/pausing.py`)
        summary.json            its summary
        summary.csv             the same, one row per subject and metric (`eval/summary_table.py`)
        report.json             what `ix report` reads besides it (`api/reports.py`)
        report.<format>         what its `reporters:` wrote (`api/reporters.py`): report.txt,
                                .md, .html, .data.json, .junit.xml, .github.md
        annotations.jsonl       notes on it (`store/annotations.py`)
        batches.jsonl           the batches it sent, with `batch: true` (`runtimes/batches.py`)
        traces/                 its trials' traces
    optimize/<id>/              one `ix optimize` session (`OptimizeDir`)
        optimize.json           its state and outcome, rewritten after each step
        proposer.jsonl          every request a proposer got and its answer
        candidates/<cid>/<skill>/SKILL.md
        rounds/<r>/<cid>/results/   candidate cid's run on the train cases (round 0: original)
        holdout/<cid>/results/  the original's and the best candidate's on the holdout cases
        SKILL.md                the recommended SKILL.md, when one is recommended
        report.md, report.html
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
#: `<experiment>/artifacts/`, what `ix run --artifacts` keeps of each trial (a run folder's
#: own `artifacts/`, its workspaces' outputs, is `OUTPUTS_DIR`)
ARTIFACTS_DIR = "artifacts"
TRIALS_FILE = "trials.jsonl"
LATEST_SUMMARY = "summary-latest.json"
ARCHIVED_SUMMARIES = "summary-*.json"  # summary-<stamp>.json, or -2, -3, ... (and the latest)
RUNS_DIR = "runs"
SPEC_FILE = "spec.yaml"
LOCK_FILE = "run.lock"
PAUSED_FILE = "paused"  # `ix pause`'s marker: no new trial starts while it is there
SUMMARY_FILE = "summary.json"
SUMMARY_CSV = "summary.csv"  # the summary as a table, beside it (`eval/summary_table.py`)
REPORT_FILE = "report.json"  # the report's trial sections and statistics, kept by `ix run`
ANNOTATIONS_FILE = "annotations.jsonl"
LABELS_FILE = "labels.jsonl"  # people's labels of judged trials (`store/labels.py`)
BATCHES_FILE = "batches.jsonl"  # the Message Batches journal (`runtimes/batches.py`)
PAIRWISE_FILE = "pairwise.jsonl"  # the pairwise judge's judgements (`engine/pairwise.py`)
OUTPUTS_DIR = "artifacts"
TRACES_DIR = "traces"
OPTIMIZE_DIR = "optimize"
OPTIMIZE_FILE = "optimize.json"
PROPOSER_LOG = "proposer.jsonl"


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
    def paused(self) -> Path:
        return self.path / PAUSED_FILE

    @property
    def summary(self) -> Path:
        return self.path / SUMMARY_FILE

    @property
    def summary_csv(self) -> Path:
        return self.path / SUMMARY_CSV

    @property
    def report(self) -> Path:
        return self.path / REPORT_FILE

    def output(self, suffix: str) -> Path:
        """`report.<suffix>`: a reporter's output (`ix.eval.reporters.SUFFIXES`), or
        `ix report --format html`'s default file (`html`)."""
        return self.path / f"report.{suffix}"

    @property
    def annotations(self) -> Path:
        return self.path / ANNOTATIONS_FILE

    @property
    def batches(self) -> Path:
        return self.path / BATCHES_FILE

    @property
    def pairwise(self) -> Path:
        return self.path / PAIRWISE_FILE

    @property
    def traces(self) -> Path:
        return self.path / TRACES_DIR

    @property
    def outputs(self) -> Path:
        """What subjects made in their workspaces (DESIGN.md §10):
        `artifacts/<subject>/<case>/<trial>/`."""
        return self.path / OUTPUTS_DIR

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

    @property
    def labels(self) -> Path:
        return self.results / LABELS_FILE

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

    @property
    def optimize(self) -> Path:
        return self.results / OPTIMIZE_DIR

    def session(self, session_id: str) -> "OptimizeDir":
        return OptimizeDir(self.optimize / session_id)


@dataclass(frozen=True)
class OptimizeDir:
    """`<experiment>/results/optimize/<id>/`: one `ix optimize` session. Its runs are ordinary
    runs, each in a folder that stands where an experiment would (`round(r) / cid`,
    `holdout / cid`), so `ExperimentDir.at(session.round(1) / "r1c1")` reads like any
    experiment's results."""

    path: Path

    @property
    def session_id(self) -> str:
        return self.path.name

    @property
    def state(self) -> Path:
        return self.path / OPTIMIZE_FILE

    @property
    def proposer_log(self) -> Path:
        return self.path / PROPOSER_LOG

    def candidate(self, candidate_id: str, skill: str) -> Path:
        """The candidate's SKILL.md, in a folder named after the skill (as Claude Code wants)."""
        return self.path / "candidates" / candidate_id / skill / "SKILL.md"

    def round(self, number: int) -> Path:
        return self.path / "rounds" / str(number)

    def screen(self, number: int) -> Path:
        """Round `number`'s runs on the proxy (`ix optimize --screen-with`)."""
        return self.path / "screen" / str(number)

    @property
    def holdout(self) -> Path:
        return self.path / "holdout"

    @property
    def recommended(self) -> Path:
        return self.path / "SKILL.md"

    def report(self, suffix: str) -> Path:
        return self.path / f"report.{suffix}"

    @property
    def experiment(self) -> ExperimentDir:
        return ExperimentDir(self.path.parent.parent)


__all__ = ["ANNOTATIONS_FILE", "ARCHIVED_SUMMARIES", "ARTIFACTS_DIR", "BATCHES_FILE",
           "LATEST_SUMMARY", "LOCK_FILE", "OPTIMIZE_DIR", "OPTIMIZE_FILE", "PAIRWISE_FILE",
           "PROPOSER_LOG", "RESULTS_DIR", "RUNS_DIR", "SPEC_FILE", "SUMMARY_CSV", "SUMMARY_FILE",
           "TRACES_DIR", "TRIALS_FILE", "ExperimentDir", "OptimizeDir", "RunDir"]
