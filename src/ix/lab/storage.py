"""`FileStorage`: the `ix.eval.service.Storage` port over a lab folder.

For programs that drive the eval types directly; `ix run` writes the same files through the
engine. Experiments are addressed by their `name`, which may differ from their folder's.
"""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.eval.models import Experiment, ExperimentResults, Verdict
from ix.lab.loader import load_experiment
from ix.lab.resolve import list_experiments
from ix.lab.results import TRIALS_FILE, TrialWriter, save_summary
from ix.lab.yamlio import load_yaml_file


class FileStorage:
    def __init__(self, lab: Path):
        self.lab = Path(lab).resolve()
        self._dirs: dict[str, Path] = {}

    def load_experiment(self, path: Path) -> Experiment:
        return load_experiment(Path(path), self.lab).experiment

    def list_experiments(self, base: Path | None = None) -> list[Path]:
        return list_experiments(Path(base) if base is not None else self.lab)

    def append_result(self, experiment_name: str, result: Verdict) -> None:
        record = result.model_dump(mode="json")
        record["experiment"] = experiment_name
        with TrialWriter(self._results(experiment_name) / TRIALS_FILE) as writer:
            writer.write(record)

    def save_summary(self, experiment_name: str, results: ExperimentResults) -> Path:
        """The `001_…` summary shape, archived and as `summary-latest.json`."""
        summary: dict[str, Any] = {
            "experiment_name": results.experiment_name,
            "probe_results": [
                {"probe_id": p.probe_id, "expectation": p.expectation, "score": p.score,
                 "correct": p.correct, "trials": [t.model_dump(mode="json") for t in p.trials]}
                for p in results.probe_results
            ],
            "metrics": {"precision": results.precision, "recall": results.recall,
                        "f1": results.f1, "tp": results.tp, "fp": results.fp,
                        "fn": results.fn, "tn": results.tn},
            "interpretation": {"status": results.status, "issues": list(results.issues),
                               "suggestions": list(results.suggestions)},
        }
        return save_summary(self._results(experiment_name), summary, datetime.now(UTC))

    def _results(self, experiment_name: str) -> Path:
        if experiment_name not in self._dirs:
            for path in list_experiments(self.lab):
                data = load_yaml_file(path / "experiment.yaml")
                if isinstance(data, dict) and isinstance(data.get("name"), str):
                    self._dirs.setdefault(data["name"], path)
        if experiment_name not in self._dirs:
            raise ConfigError(f"no experiment named {experiment_name!r} in lab {self.lab}",
                              field="experiment_name")
        return self._dirs[experiment_name] / "results"
