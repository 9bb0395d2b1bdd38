"""The persistence boundary of evaluation: eval says what it needs, `ix.lab` provides it."""

from pathlib import Path
from typing import Protocol, runtime_checkable

from ix.eval.models import Experiment, ExperimentResults, Verdict


@runtime_checkable
class Storage(Protocol):
    """Loads experiments and records their results."""

    def load_experiment(self, path: Path) -> Experiment: ...

    def list_experiments(self, base: Path) -> list[Path]: ...

    def append_result(self, experiment_name: str, result: Verdict) -> None: ...

    def save_summary(self, experiment_name: str, results: ExperimentResults) -> Path: ...
