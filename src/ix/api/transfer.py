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
from ix.api.reports import report
from ix.api.results import query_results
from ix.domain.errors import ConfigError, Warn
from ix.eval.models import EvalCase
from ix.eval.summary_table import summary_csv
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
from ix.interchange.mlflow_export import write_mlflow
from ix.interchange.run_folder import folder_files, is_run_folder, standing_lines
from ix.lab.loader import load_experiment
from ix.report.markdown import report_markdown
from ix.store.layout import ExperimentDir, RunDir
from ix.store.lookup import find_run
from ix.store.spec import read_spec
from ix.store.trials import parse_line

if TYPE_CHECKING:
    from ix.api.schemas import ExportOutput

EXPORT_FORMATS = ("csv", "json", "jsonl", "parquet", "inspect", "folder", "mlflow")
#: the formats whose `--out` is a folder
FOLDER_FORMATS = ("inspect", "folder", "mlflow")

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


def export_target(fmt: str | None, out: Path | None, folder: Path | None
                  ) -> tuple[str, Path]:
    """`ix export`'s format and destination from its options: `--folder DIR` is `--format
    folder --out DIR`; else `--out` is needed, and the format defaults to jsonl."""
    if folder is not None:
        if out is not None:
            raise ConfigError("give --folder DIR or --out PATH, not both", field="--folder")
        if fmt not in (None, "folder"):
            raise ConfigError(f"--folder writes a run folder; it does not take --format {fmt}",
                              field="--format")
        return "folder", folder
    if out is None:
        raise ConfigError("say where to write: --out PATH (or --folder DIR for a portable "
                          "run folder)", field="--out")
    return fmt or "jsonl", out


def import_format(fmt: str | None, source: Path) -> str:
    """`ix import`'s format: `--format`, else `folder` for a folder `ix export --folder`
    wrote; anything else must say its format."""
    if fmt is not None:
        return fmt
    if is_run_folder(Path(source).expanduser()):
        return "folder"
    raise ConfigError(f"say which format {source} is in: --format inspect, jsonl, csv or "
                      "folder", field="--format")


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
    # a tracking folder collects runs: an existing one is added to (`write_mlflow`)
    check_out(out, force=force or fmt == "mlflow", directory=fmt in FOLDER_FORMATS, fmt=fmt)
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
        elif fmt == "mlflow":
            summary = _load_json(RunDir(directory).summary)
            if summary is None:
                raise ConfigError(f"run {run_id} has no summary (still running, or it died "
                                  "before writing one): there is nothing to log",
                                  field="RUN")
            write_mlflow(out, run_id=run_id, experiment=experiment, spec=spec,
                         summary=summary, force=force, artifacts=[
                             ("summary.json", RunDir(directory).summary.read_text("utf-8")),
                             ("summary.csv", summary_csv(summary)),
                             ("report.md", report_markdown(
                                 report(lab_path, str(directory), warn=warn)))])
        elif fmt == "folder":
            kept = standing_lines(lines)
            files = _write_run_folder(RunDir(directory), run_id, experiment, kept, out)
            return ExportResult(run_id, experiment, fmt, out, files, len(kept))
        else:
            files = _write_inspect(place.path, lab_path, run_id, experiment, spec,
                                   _load_json(RunDir(directory).summary), records, out, warn)
    return ExportResult(run_id, experiment, fmt, out, files, len(records))


def _write_run_folder(run: RunDir, run_id: str, experiment: str, lines: list[bytes],
                      out: Path) -> tuple[Path, ...]:
    """The portable folder (`ix.interchange.run_folder`): all its files or none."""
    summary_text = run.summary.read_text(encoding="utf-8") if run.summary.is_file() else None
    summary = _load_json(run.summary) if summary_text is not None else None
    files = folder_files(run_id=run_id, experiment=experiment,
                         spec_text=run.spec.read_text(encoding="utf-8"), summary=summary,
                         summary_text=summary_text if summary is not None else None,
                         lines=lines, ix_version=__version__)
    return tuple(write_folder(out, files))


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

__all__ = ["EXPORT_FORMATS", "FOLDER_FORMATS", "IMPORT_FORMATS", "ExportResult", "ImportResult",
           "export_run", "export_target", "import_format", "import_results"]
