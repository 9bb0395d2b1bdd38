"""The runs of a lab, and a run named by a reference that came from outside (a URL).

`list_runs` is what `ix view` lists; `resolve_run` is how `ix report` finds a run; `lab_run`
looks up a run id or tag the same way, but only ever answers with a run folder inside the lab:
a reference that is a path, that holds glob characters, or that resolves (through a symlink
or a tag) outside the lab is refused. Everything here reads, and nothing here reports: a
command that only finds a run does not import the report machinery.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.paths import lies_within
from ix.fs.resolve import find_lab
from ix.fs.resolve import list_experiments as experiment_dirs
from ix.store.layout import ExperimentDir, RunDir
from ix.store.lookup import RUN_REF, lab_run_folder, resolve_run, run_folders
from ix.store.spec import read_spec


@dataclass(frozen=True)
class RunEntry:
    """One run folder, as its `spec.yaml` describes it (what a report prints of a run is
    `ix.report.schemas.RunInfo`, the name `ix schema` gives it)."""

    run_id: str
    experiment: str
    experiment_dir: Path
    folder: Path
    status: str | None
    started_at: str | None
    finished_at: str | None
    seed: Any
    trials_per_case: Any
    has_summary: bool
    #: the kind of the first sensor its spec names (None: none named, e.g. an imported run)
    sensor: str | None = None


def run_info(folder: Path) -> RunEntry:
    """A run folder's facts; an unreadable `spec.yaml` gives status `unreadable`."""
    run = RunDir(folder)
    spec: Mapping[str, Any]
    try:
        spec = read_spec(folder) if run.spec.is_file() else {}
        status = spec.get("status")
    except ConfigError:
        spec, status = {}, "unreadable"
    experiment_dir = run.experiment.path
    return RunEntry(run_id=folder.name, experiment=str(spec.get("experiment")
                                                      or experiment_dir.name),
                   experiment_dir=experiment_dir, folder=folder,
                   status=str(status) if status is not None else None,
                   started_at=_text(spec.get("started_at")),
                   finished_at=_text(spec.get("finished_at")), seed=spec.get("seed"),
                   trials_per_case=spec.get("trials"),
                   has_summary=run.summary.is_file(), sensor=_first_sensor(spec))


def _first_sensor(spec: Mapping[str, Any]) -> str | None:
    """The kind of the spec's first sensor: `config.sensors[0]`, else `config.sensor`."""
    config = spec.get("config")
    if not isinstance(config, Mapping):
        return None
    listed = config.get("sensors") or [config.get("sensor")]
    first = listed[0] if isinstance(listed, list) and listed else None
    kind = first.get("kind") if isinstance(first, Mapping) else None
    return kind if isinstance(kind, str) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def list_runs(lab: str | Path | None = None) -> dict[Path, list[RunEntry]]:
    """Each experiment folder of the lab -> its runs, newest first."""
    lab_path = find_lab(lab)
    out: dict[Path, list[RunEntry]] = {}
    for experiment in experiment_dirs(lab_path):
        folders = run_folders(ExperimentDir.at(experiment).results)
        out[experiment] = [run_info(p) for p in reversed(folders) if lies_within(p, lab_path)]
    return out


def lab_run(lab: Path, ref: str) -> RunEntry:
    """The run that `ref` (a run id, a unique prefix of one, or a tag) names in the lab, never
    a path and never outside the lab (`ix.store.lookup.lab_run_folder`)."""
    return run_info(lab_run_folder(lab, ref))


def fingerprint(run: RunEntry) -> tuple[Any, ...]:
    """Changes whenever the run's summary, spec or trial log changes (a cache key)."""
    stamps: list[Any] = [str(run.folder)]
    folder = RunDir(run.folder)
    for path in (folder.summary, folder.spec, ExperimentDir.at(run.experiment_dir).trials):
        try:
            st = path.stat()
            stamps.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


__all__ = ["RUN_REF", "RunEntry", "fingerprint", "lab_run", "list_runs", "resolve_run",
           "run_info"]
