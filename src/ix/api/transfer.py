"""Runs out of the lab and outside results in (`ix export`, `ix import`); docs/export.md.

Export reads a run and writes files outside its results. Import (`ix.api.imports`, its names
re-exported here) checks a whole file first, then writes a new run of an experiment — its
trial lines, `runs/<run_id>/spec.yaml` and a summary built by the same aggregation as `ix
run` — all at once, so a failed or killed import leaves no trace in the lab.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix._version import __version__
from ix.api.results import query_results
from ix.domain.errors import ConfigError, Warn
from ix.eval.models import EvalCase
from ix.fs.resolve import find_lab
from ix.fs.storage_faults import storage_faults
from ix.interchange.export import (
    check_out,
    latest_attempts,
    run_lines,
    write_folder,
    write_json,
    write_jsonl,
)
from ix.interchange.inspect_log import dumps_log, eval_log, log_file_name
from ix.lab.loader import load_experiment
from ix.store.layout import ExperimentDir, RunDir
from ix.store.lookup import find_run
from ix.store.spec import read_spec
from ix.store.trials import parse_line

if TYPE_CHECKING:
    from ix.api.schemas import ExportOutput

EXPORT_FORMATS = ("csv", "json", "jsonl", "parquet", "inspect")

@dataclass(frozen=True)
class ExportResult:
    run_id: str
    experiment: str
    format: str
    out: Path
    files: tuple[Path, ...]
    trials: int

    def as_dict(self) -> "ExportOutput":
        return {"run_id": self.run_id, "experiment": self.experiment, "format": self.format,
                "out": str(self.out), "files": [str(f) for f in self.files],
                "trials": self.trials}


def _load_json(path: Path) -> dict[str, Any] | None:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def export_run(lab: str | Path | None, run: str, fmt: str, out: Path | str, *,
               force: bool = False, warn: Warn | None = None) -> ExportResult:
    """Write run `run` (an id or unique prefix) as `fmt` to `out` (a folder for inspect)."""
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; allowed: "
                          f"{', '.join(EXPORT_FORMATS)}", field="--format")
    out = Path(out).expanduser().resolve()
    check_out(out, force=force, directory=fmt == "inspect")
    lab_path = find_lab(lab)
    directory = find_run(lab_path, run)
    run_id = directory.name
    place = RunDir(directory).experiment
    spec = read_spec(directory)
    experiment = str(spec.get("experiment") or place.name)
    files: tuple[Path, ...] = (out,)
    # a full disk or a read-only folder: a `StorageError`, and no partial file or folder left
    with storage_faults("nothing was exported"):
        if fmt in ("csv", "parquet"):  # straight from the query layer: no line decoded here
            count = _write_table(lab_path, run_id, fmt, out, warn)
            return ExportResult(run_id, experiment, fmt, out, files, count)
        lines = run_lines(place.trials, run_id, warn)
        # decoded as `run_lines` read them (a key given twice: the first, as the index)
        records = [r for r in map(parse_line, lines) if r is not None]
        if fmt == "jsonl":
            write_jsonl(lines, out)
        elif fmt == "json":
            write_json({"run_id": run_id, "experiment": experiment, "spec": spec,
                        "summary": _load_json(RunDir(directory).summary), "trials": records},
                       out)
        else:
            files = _write_inspect(place.path, lab_path, run_id, experiment, spec,
                                   _load_json(RunDir(directory).summary), records, out, warn)
    return ExportResult(run_id, experiment, fmt, out, files, len(records))


def _write_table(lab: Path, run_id: str, fmt: str, out: Path, warn: Warn | None) -> int:
    """The query layer's flat, typed columns (docs/queries.md), every attempt of the run;
    how many rows were written."""
    rows = query_results(lab, run=run_id, all_attempts=True, warn=warn)
    with rows.snapshot():
        rows.export(fmt, out)
        return rows.count()


def _write_inspect(experiment_dir: Path, lab: Path, run_id: str, experiment: str,
                   spec: Mapping[str, Any], summary: dict[str, Any] | None,
                   records: list[dict[str, Any]], out: Path,
                   warn: Warn | None) -> tuple[Path, ...]:
    """One Inspect eval log per subject of the run, in the folder `out`."""
    cases: dict[str, EvalCase] = {}
    try:
        cases = {c.id: c for c in load_experiment(experiment_dir, lab).experiment.cases}
    except ConfigError as exc:
        if warn is not None:
            warn(f"the samples carry no prompts: the experiment does not load ({exc.render()})")
    blocks = {b["name"]: b for b in (summary or {}).get("subjects") or []}
    latest = latest_attempts(records)
    subjects = list(dict.fromkeys([*blocks, *(str(r["subject"]) for r in latest)]))
    if not records:
        trials = ExperimentDir.at(experiment_dir).trials
        raise ConfigError(f"run {run_id} has no trials in {trials}: there is nothing to put "
                          "in a log", field="RUN")

    def logs() -> Iterator[tuple[str, str]]:
        for subject in subjects:
            block = blocks.get(subject)
            order = [p["probe_id"] for p in (block or {}).get("probe_results") or []]
            log = eval_log(run_id=run_id, experiment=experiment, subject=subject, spec=spec,
                           records=[r for r in latest if r["subject"] == subject],
                           cases=cases, case_order=order, block=block,
                           ix_version=__version__)
            yield log_file_name(log, subject), dumps_log(log)

    return tuple(write_folder(out, logs()))  # all logs or none: no folder left to block a retry


# `ix import` lives in `ix.api.imports`; its names stay importable from here.
from ix.api.imports import IMPORT_FORMATS, ImportResult, import_results  # noqa: E402

__all__ = ["EXPORT_FORMATS", "IMPORT_FORMATS", "ExportResult", "ImportResult", "export_run",
           "import_results"]
