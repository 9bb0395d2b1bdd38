"""The seams of an experiment. Implement the methods; no base class is needed."""

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ix.domain.types import Interaction, Reading, Subject
from ix.domain.verdicts import Verdict


@runtime_checkable
class Probe(Protocol):
    """Generates the stimuli of an experiment (eval: `EvalCase`s)."""

    def generate(self) -> Iterable[Any]: ...


@runtime_checkable
class ExperimentRuntime(Protocol):
    """Executes one stimulus against a subject and returns the observation.

    `seed` is the trial seed derived from the experiment (DESIGN.md §2) and `attempt` the retry
    number (0 first); a runtime that draws randomness must draw it from both, so that the same
    trial reproduces and a retry is a new draw.
    """

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> Any: ...


@runtime_checkable
class Sensor(Protocol):
    """Evaluates one interaction; several readings may come from one sensor."""

    @property
    def name(self) -> str: ...

    def sense(self, interaction: Interaction) -> list[Reading]: ...


@runtime_checkable
class AsyncSensor(Protocol):
    """A sensor that has to wait for something (a judge model) before it can read."""

    @property
    def name(self) -> str: ...

    async def sense(self, interaction: Interaction) -> list[Reading]: ...


@runtime_checkable
class Storage(Protocol):
    """The persistence boundary for experiments and their results (domain models seed, "Eval
    Protocols › Storage"). ix's own is `ix.store.lab_storage.LabStorage`, over a lab folder
    (`ix.Lab(...).storage()`); the experiment is an `ix.eval.models.Experiment` and the
    results an `ix.eval.models.ExperimentResults`, named `Any` here because the domain
    knows no eval types."""

    def load_experiment(self, path: Path) -> Any:
        """The experiment definition of a folder (`experiment.yaml` + `cases/`)."""
        ...

    def list_experiments(self, base: Path) -> list[Path]:
        """The experiment folders under `base`."""
        ...

    def append_result(self, experiment_name: str, result: Verdict) -> None:
        """One trial's verdict, kept (a JSONL line) before this returns."""
        ...

    def save_summary(self, experiment_name: str, results: Any) -> Path:
        """The aggregate summary of what was appended; where it was written."""
        ...
