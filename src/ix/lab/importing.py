"""Outside results into the lab (`ix import`): read and check a whole file, then append.

Reading checks everything before anything is written: a bad line, row or sample is a
`ConfigError` naming the file and the field. `append_trials` writes every line in one go and,
if that fails, truncates the log back to its old length, so `trials.jsonl` either gains the
whole run or nothing. docs/export.md has the rules.
"""

import csv
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.eval.models import EXPECTATIONS
from ix.lab.inspect_read import log_trials, parse_log
from ix.lab.results import TRIALS_FILE, TrialWriter, log_lock
from ix.lab.runs import iso
from ix.lab.yamlio import dump_yaml, read_text

FORMATS = ("inspect", "jsonl", "csv")
#: The order of a trial line's keys, as the engine writes them (resume reads this order fast).
LINE_KEYS = ("run_id", "experiment", "subject", "probe_id", "trial", "seed", "attempt",
             "expectation", "started_at", "duration_ms", "observation", "reading", "error")
_BAD_ID = re.compile(r"[/\\\x00-\x1f]|^\.|^$")


@dataclass
class Imported:
    """What an import file holds: trial records (without `run_id`), the prompts it has, the
    experiment and models it names, and where it came from."""

    path: Path
    format: str
    records: list[dict[str, Any]] = field(default_factory=list)
    where: list[tuple[Path, str]] = field(default_factory=list)  # each record's place
    prompts: dict[str, str] = field(default_factory=dict)
    experiments: list[str] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)
    origin: dict[str, Any] = field(default_factory=dict)

    @property
    def subjects(self) -> list[str]:
        return list(dict.fromkeys(r["subject"] for r in self.records))

    @property
    def case_ids(self) -> list[str]:
        return list(dict.fromkeys(r["probe_id"] for r in self.records))


def read_import(path: Path, fmt: str) -> Imported:
    """Read and check an import file (a folder of logs for `inspect`)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown import format {fmt!r}; allowed: {', '.join(FORMATS)}",
                          field="--format")
    if not path.exists():
        raise ConfigError("no such file", file=path)
    reader = {"inspect": _read_inspect, "jsonl": _read_jsonl, "csv": _read_csv}[fmt]
    imported = reader(path)
    if not imported.records:
        raise ConfigError("holds no trials", file=path)
    _check_records(imported)
    return imported


def _files(path: Path, suffix: str) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix == suffix)
        if not files:
            raise ConfigError(f"the folder holds no {suffix} file", file=path)
        return files
    return [path]


def _read_inspect(path: Path) -> Imported:
    imported = Imported(path, "inspect")
    owner: dict[str, Path] = {}
    for file in _files(path, ".json"):
        if file.suffix == ".eval":
            raise ConfigError("ix reads Inspect's JSON log format; convert this log with "
                              "`inspect log convert --to json`", file=file)
        log = parse_log(file, read_text(file))
        subject, records, prompts = log_trials(file, log)
        if subject in owner:
            raise ConfigError(f"subject {subject!r} is also the subject of {owner[subject]}; "
                              "each log of a folder must be a different subject", file=file,
                              field="eval.model")
        owner[subject] = file
        for r in records:
            where = f"samples[id={r['probe_id']}, epoch={r['trial'] + 1}]"
            r["started_at"] = _timestamp(r.get("started_at"), file, f"{where}.started_at")
            imported.where.append((file, where))
        imported.records += records
        for case_id, prompt in prompts.items():
            imported.prompts.setdefault(case_id, prompt)
        imported.experiments.append(log.eval.task)
        imported.models[subject] = log.eval.model
        meta = (log.eval.metadata or {}).get("ix") or {}
        imported.origin.setdefault("logs", []).append(
            {"file": file.name, "eval_id": getattr(log.eval, "eval_id", None),
             "task": log.eval.task, "model": log.eval.model, "status": log.status,
             **({"ix_run_id": meta["run_id"]} if meta.get("run_id") else {})})
    return imported


def _read_jsonl(path: Path) -> Imported:
    imported = Imported(path, "jsonl")
    runs: list[str] = []
    try:
        f = path.open("rb")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=path) from None
    with f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            where = f"line {number}"
            try:
                record = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                raise ConfigError("not a JSON object (a torn or corrupt line)", file=path,
                                  field=where) from None
            if not isinstance(record, dict):
                raise ConfigError("not a JSON object", file=path, field=where)
            run_id = record.pop("run_id", None)
            if run_id is not None and run_id not in runs:
                runs.append(str(run_id))
            experiment = record.pop("experiment", None)
            if isinstance(experiment, str) and experiment not in imported.experiments:
                imported.experiments.append(experiment)
            imported.where.append((path, where))
            imported.records.append(record)
    if len(runs) > 1:
        raise ConfigError(f"holds the trials of {len(runs)} runs ({', '.join(runs[:3])}"
                          f"{', ...' if len(runs) > 3 else ''}); import one run at a time "
                          "(`ix export RUN --format jsonl` writes one)", file=path,
                          field="run_id")
    if runs:
        imported.origin["run_id"] = runs[0]
    return imported


_CSV_REQUIRED = ("subject", "probe_id", "trial", "passed")


def _read_csv(path: Path) -> Imported:
    imported = Imported(path, "csv")
    text = read_text(path)
    reader = csv.DictReader(text.splitlines())
    columns = reader.fieldnames or []
    missing = [c for c in _CSV_REQUIRED if c not in columns]
    if missing:
        raise ConfigError(f"missing column(s) {', '.join(missing)}; the columns of "
                          "`ix export --format csv` are expected", file=path, field="header")
    runs: list[str] = []
    try:
        for number, row in enumerate(reader, start=2):
            if None in row:
                raise ConfigError("more values than columns", file=path,
                                  field=f"row {number}")
            imported.records.append(_csv_record(path, number, row, imported, runs))
            imported.where.append((path, f"row {number}"))
    except csv.Error as exc:
        raise ConfigError(f"not valid CSV ({exc})", file=path) from None
    if len(runs) > 1:
        raise ConfigError(f"holds the trials of {len(runs)} runs; import one run at a time",
                          file=path, field="run_id")
    if runs:
        imported.origin["run_id"] = runs[0]
    return imported


def _csv_record(path: Path, number: int, row: Mapping[str, str | None], imported: Imported,
                runs: list[str]) -> dict[str, Any]:
    where = f"row {number}"

    def cell(name: str) -> str:
        return (row.get(name) or "").strip()

    def number_of(name: str, kind: Callable[[str], Any], default: Any = None) -> Any:
        text = cell(name)
        if not text:
            return default
        try:
            return kind(text)
        except ValueError:
            raise ConfigError(f"{text!r} is not a {kind.__name__}", file=path,
                              field=f"{where}.{name}") from None

    if cell("run_id") and cell("run_id") not in runs:
        runs.append(cell("run_id"))
    if cell("experiment") and cell("experiment") not in imported.experiments:
        imported.experiments.append(cell("experiment"))
    passed_text = cell("passed").lower()
    if passed_text not in ("true", "false", "1", "0", ""):
        raise ConfigError(f"{cell('passed')!r} is not true, false or empty", file=path,
                          field=f"{where}.passed")
    error = None
    if cell("error") or cell("error_message"):
        error = {"kind": cell("error") or "error", "message": cell("error_message")}
    reading = None
    if error is None and passed_text:
        passed = passed_text in ("true", "1")
        reading = {"sensor_name": cell("sensor") or "imported", "passed": passed,
                   "score": number_of("score", float, 1.0 if passed else 0.0),
                   "metrics": {}, "details": ""}
    observation = None
    if reading is not None:
        observation = {"content": "", "tool_calls": [],
                       "duration_ms": round(number_of("duration", float, 0.0)),
                       "tokens_input": number_of("tokens_input", int, 0),
                       "tokens_output": number_of("tokens_output", int, 0),
                       "cost_usd": number_of("cost", float, 0.0)}
    return {"subject": cell("subject"), "probe_id": cell("probe_id"),
            "trial": number_of("trial", int), "seed": number_of("seed", int),
            "attempt": number_of("attempt", int, 0),
            "expectation": cell("expectation") or "must_trigger",
            "started_at": _timestamp(cell("started_at"), path, f"{where}.started_at"),
            "duration_ms": number_of("duration", float, 0.0),
            "observation": observation, "reading": reading, "error": error}


def _check_records(imported: Imported) -> None:
    """Every record is a trial ix can count; one expectation per case."""
    expectations: dict[str, str] = {}
    for r, (file, where) in zip(imported.records, imported.where, strict=True):

        def bad(message: str, key: str, file: Path = file, where: str = where) -> ConfigError:
            return ConfigError(message, file=file, field=f"{where}.{key}")

        if not isinstance(r.get("subject"), str) or not r["subject"]:
            raise bad("needs a subject name (a non-empty string)", "subject")
        case_id = r.get("probe_id")
        if not isinstance(case_id, str) or _BAD_ID.search(case_id) or ".." in case_id:
            raise bad(f"invalid case id {case_id!r}: a non-empty string without path "
                      "separators, control characters or a leading dot", "probe_id")
        trial = r.get("trial")
        if not isinstance(trial, int) or isinstance(trial, bool) or not 0 <= trial < 100_000:
            raise bad(f"must be a whole number from 0 (got {trial!r})", "trial")
        attempt = r.get("attempt", 0)
        if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 0:
            raise bad(f"must be a whole number from 0 (got {attempt!r})", "attempt")
        seed = r.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise bad(f"must be a whole number (got {seed!r})", "seed")
        expectation = r.get("expectation")
        if expectation not in EXPECTATIONS:
            raise bad(f"must be one of {', '.join(EXPECTATIONS)} (got {expectation!r})",
                      "expectation")
        if expectations.setdefault(case_id, expectation) != expectation:
            raise bad(f"case {case_id!r} is {expectations[case_id]} elsewhere in the file",
                      "expectation")
        error, reading = r.get("error"), r.get("reading")
        if error is not None and not (isinstance(error, dict) and "kind" in error):
            raise bad("must be null or {kind, message}", "error")
        if error is None and not (isinstance(reading, dict)
                                  and isinstance(reading.get("passed"), bool)):
            raise bad("a trial without an error needs a reading with 'passed' "
                          "(true or false)", "reading")
        for key in ("observation", "readings"):
            if r.get(key) is not None and not isinstance(r[key], dict | list):
                raise bad("must be an object", key)


def _timestamp(value: Any, file: Path, field: str) -> str | None:
    """A time as trial lines hold it (ISO-8601 UTC, milliseconds, `Z`); None when empty."""
    if value in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{value!r} is not an ISO-8601 time", file=file,
                          field=field) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso(moment)


def trial_line(record: Mapping[str, Any], *, run_id: str, experiment: str,
               seed: int, started_at: str) -> dict[str, Any]:
    """The `trials.jsonl` line of an imported record, keys in the engine's order."""
    values = dict(record)
    values.update(run_id=run_id, experiment=experiment, seed=seed,
                  attempt=values.get("attempt") or 0,
                  started_at=values.get("started_at") or started_at,
                  duration_ms=values.get("duration_ms") or 0.0)
    line = {k: values.get(k) for k in LINE_KEYS}
    line.update((k, v) for k, v in values.items() if k not in line)
    return line


def append_trials(results_dir: Path, lines: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """Append every line to `trials.jsonl` in one write under the log's lock, as a run's
    writer does (a torn last line repaired first), fsynced; on failure nothing is left.
    Returns the log's (size before, size after) for `truncate_trials`."""
    with TrialWriter(results_dir / TRIALS_FILE) as writer:
        return writer.write_all(lines)


def truncate_trials(results_dir: Path, span: tuple[int, int]) -> bool:
    """Undo `append_trials`: cut the log back to its size before, unless another writer has
    appended since (then the lines stay, and False says so)."""
    began, ended = span
    with (results_dir / TRIALS_FILE).open("r+b") as f, log_lock(f.fileno()):
        if os.fstat(f.fileno()).st_size != ended:
            return False
        f.truncate(began)
    return True


def write_experiment(directory: Path, *, name: str, source: Path, fmt: str,
                     subjects: Iterable[str], cases: Iterable[tuple[str, str, str]]) -> None:
    """A new experiment for imported results: experiment.yaml naming the subjects, and one
    case file per case (its prompt, or a note that the file had none)."""
    (directory / "cases").mkdir(parents=True)
    config = {"name": name,
              "description": f"Imported from {source.name} ({fmt}) by `ix import`.",
              "subjects": [{"name": s} for s in subjects]}
    (directory / "experiment.yaml").write_text(dump_yaml(config), encoding="utf-8")
    for case_id, expectation, prompt in cases:
        body = prompt.strip() or f"(imported from {source.name}: no prompt was recorded)"
        text = f"---\n{dump_yaml({'id': case_id, 'expectation': expectation})}---\n{body}\n"
        (directory / "cases" / f"{case_id}.md").write_text(text, encoding="utf-8")
