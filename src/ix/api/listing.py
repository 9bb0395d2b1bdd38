"""`ix ls`: the lab's experiments with their cases and last run. Its own module, light to
import: listing reads the experiments and the latest summaries, and needs nothing of the
engine (`ix.api.experiments` re-exports it)."""

import json
from dataclasses import dataclass
from pathlib import Path

from ix.domain.errors import ConfigError
from ix.lab.loader import load_experiment
from ix.lab.resolve import find_lab
from ix.lab.resolve import list_experiments as _experiment_dirs
from ix.store.layout import ExperimentDir
from ix.store.runs import latest_run, read_spec

__all__ = ["ExperimentInfo", "list_experiments"]


@dataclass(frozen=True)
class ExperimentInfo:
    name: str
    path: Path
    cases: dict[str, int]
    subjects: list[str]
    last_run: str | None
    status: str | None
    f1: float | None
    error: str | None = None


def list_experiments(lab: str | Path | None = None) -> tuple[Path, list[ExperimentInfo]]:
    """Every experiment of the lab with its last run; one that fails to load says why."""
    lab_path = find_lab(lab)
    infos = []
    for path in _experiment_dirs(lab_path):
        last_run, status, f1 = _last_run(ExperimentDir.at(path).results)
        try:
            exp = load_experiment(path, lab_path).experiment
        except ConfigError as exc:
            infos.append(ExperimentInfo(path.name, path, {}, [], last_run, status, f1,
                                        error=exc.render()))
            continue
        counts = {e: sum(1 for c in exp.cases if c.expectation == e)
                  for e in ("must_trigger", "should_not_trigger", "acceptable")}
        infos.append(ExperimentInfo(exp.name, path, counts, [s.name for s in exp.subjects],
                                    last_run, status, f1))
    return lab_path, infos


def _last_run(results: Path) -> tuple[str | None, str | None, float | None]:
    folder = latest_run(results)
    if folder is None:
        return None, None, None
    last = folder.name
    status: str | None
    try:
        status = read_spec(folder).get("status")
    except ConfigError:
        status = "unreadable"
    f1 = None
    try:
        summary = json.loads(ExperimentDir(results).latest_summary.read_text(encoding="utf-8"))
        if summary.get("run_id") == last:
            f1 = summary.get("metrics", {}).get("f1")
    except (OSError, ValueError):
        pass
    return last, status, f1
