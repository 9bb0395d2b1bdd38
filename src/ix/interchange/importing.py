"""Outside results into the lab (`ix import`): read and check a whole file before writing.

Every trial is checked as the line a run would write — `ix.store.trial_schema.TrialLine`, strictly
(no `true` for a number, no `"3"` for a count, no NaN) — and its subject and case by the rules
names meet at load (`ix.fs.names`), so a bad line, row or sample is a `ConfigError` naming the
file, the row and the field, and nothing is written. `ix.store.import_run` writes what passed.
docs/export.md has the rules.
"""

import csv
import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ix.domain.errors import ConfigError
from ix.eval.validation import from_validation_error
from ix.fs.names import check_distinct, check_name, file_part
from ix.fs.yamlio import dump_yaml, read_text
from ix.interchange.inspect_read import log_trials, parse_log
from ix.lab.schema import GoalSpec
from ix.store.runs import iso
from ix.store.trial_schema import TrialLine

FORMATS = ("inspect", "jsonl", "csv")
#: The order of a trial line's keys, as the engine writes them (resume reads this order fast).
LINE_KEYS = ("run_id", "experiment", "subject", "probe_id", "trial", "seed", "attempt",
             "expectation", "started_at", "duration_ms", "observation", "reading", "error")
#: The most trials per case an import may hold (trial indexes 0 to this less one).
MAX_TRIALS = 100_000
#: The deepest nesting of objects and lists a trial line may have: deeper ones are refused
#: (a reader of the log, in Python or DuckDB, would stumble on them).
MAX_DEPTH = 100
#: The earliest `started_at` an imported trial may have (no run of ix is older).
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Imported:
    """What an import file holds: trial records (without `run_id` and `experiment`), the
    prompts it has, the experiment and models it names, where it came from and its digest;
    from logs ix wrote, also the run's order of subjects and its goal."""

    path: Path
    format: str
    records: list[dict[str, Any]] = field(default_factory=list)
    where: list[tuple[Path, str]] = field(default_factory=list)  # each record's place
    prompts: dict[str, str] = field(default_factory=dict)
    experiments: list[str] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)
    origin: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""
    subject_order: list[str] = field(default_factory=list)
    goal: dict[str, Any] | None = None

    @property
    def subjects(self) -> list[str]:
        """The run's order where the file records it (logs ix wrote), else first appearance."""
        seen = list(dict.fromkeys(r["subject"] for r in self.records))
        ranked = [s for s in self.subject_order if s in seen]
        return ranked + [s for s in seen if s not in ranked]

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
    imported.sha256 = source_digest(path, _files(path, ".json") if fmt == "inspect" else [path])
    return imported


def source_digest(path: Path, files: Iterable[Path]) -> str:
    """The sha256 of what is imported: of the file's bytes (what `sha256sum` prints), or for a
    folder of logs, of the sorted digests of its files (their names do not count)."""
    digests = []
    for file in files:
        h = hashlib.sha256()
        try:
            with file.open("rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror or exc}", file=file) from None
        digests.append(h.hexdigest())
    if not path.is_dir():
        return digests[0]
    return hashlib.sha256("\n".join(sorted(digests)).encode()).hexdigest()


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
        imported.where += [(file, f"samples[{i}]") for i in range(len(records))]
        imported.records += records
        for case_id, prompt in prompts.items():
            imported.prompts.setdefault(case_id, prompt)
        if log.eval.task not in imported.experiments:  # a folder of one run's logs names it once
            imported.experiments.append(log.eval.task)
        imported.models[subject] = log.eval.model
        meta = (log.eval.metadata or {}).get("ix") or {}
        if isinstance(meta, dict):
            _run_layout(imported, meta)
        imported.origin.setdefault("logs", []).append(
            {"file": file.name, "eval_id": getattr(log.eval, "eval_id", None),
             "task": log.eval.task, "model": log.eval.model, "status": log.status,
             **({"ix_run_id": str(meta["run_id"])} if isinstance(meta, dict)
                and meta.get("run_id") else {})})
    return imported


def _run_layout(imported: Imported, meta: Mapping[str, Any]) -> None:
    """The order of subjects and the goal a log ix wrote records (`eval.metadata.ix`)."""
    order = meta.get("subjects")
    if isinstance(order, list) and not imported.subject_order:
        imported.subject_order = [str(s) for s in order if isinstance(s, str)]
    goal = meta.get("goal")
    if isinstance(goal, dict) and imported.goal is None:
        imported.goal = dict(goal)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json_line(raw: bytes) -> Any:
    """A line of a jsonl file, or ValueError saying why not (NaN and Infinity, which JSON
    lacks, a number too long to convert, and nesting too deep to decode are all refused)."""
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except ValueError as exc:
        text = str(exc)
        if "digits" in text or "is not a number" in text:
            raise ValueError(text.split(";")[0]) from None
        raise ValueError("not a JSON object (a torn or corrupt line)") from None


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
                record = parse_json_line(raw)
            except ValueError as exc:
                raise ConfigError(str(exc), file=path, field=where) from None
            if not isinstance(record, dict):
                raise ConfigError("not a JSON object", file=path, field=where)
            run_id = record.pop("run_id", None)
            if run_id is not None and str(run_id) not in runs:
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
#: Where a field of the trial line comes from in a csv row (errors name the column).
_CSV_COLUMNS = {"observation.tokens_input": "tokens_input",
                "observation.tokens_output": "tokens_output", "observation.cost_usd": "cost",
                "observation.duration_ms": "duration", "duration_ms": "duration",
                "reading.score": "score", "reading.sensor_name": "sensor",
                "error.kind": "error", "error.message": "error_message"}


def _read_csv(path: Path) -> Imported:
    imported = Imported(path, "csv")
    text = read_text(path)
    reader = csv.DictReader(text.splitlines())
    try:
        columns = reader.fieldnames or []
    except csv.Error as exc:
        raise ConfigError(f"not valid CSV ({exc})", file=path, field="header") from None
    missing = [c for c in _CSV_REQUIRED if c not in columns]
    if missing:
        raise ConfigError(f"missing column(s) {', '.join(missing)}; the columns of "
                          "`ix export --format csv` are expected", file=path, field="header")
    runs: list[str] = []
    number = 1
    try:
        for number, row in enumerate(reader, start=2):
            if None in row:
                raise ConfigError("more values than columns", file=path,
                                  field=f"row {number}")
            imported.records.append(_csv_record(path, number, row, imported, runs))
            imported.where.append((path, f"row {number}"))
    except csv.Error as exc:
        raise ConfigError(f"not valid CSV ({exc})", file=path,
                          field=f"row {number + 1}") from None
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

    def whole(name: str, default: Any = None) -> Any:
        text = cell(name)
        if not text:
            return default
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{text[:40]!r} is not a whole number", file=path,
                              field=f"{where}.{name}") from None

    def number_of(name: str, default: float) -> float:
        text = cell(name)
        if not text:
            return default
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{text[:40]!r} is not a number", file=path,
                              field=f"{where}.{name}") from None
        if not math.isfinite(value):
            raise ConfigError(f"{text[:40]!r} is not a finite number", file=path,
                              field=f"{where}.{name}")
        return value

    if cell("run_id") and cell("run_id") not in runs:
        runs.append(cell("run_id"))
    if cell("experiment") and cell("experiment") not in imported.experiments:
        imported.experiments.append(cell("experiment"))
    passed_text = cell("passed").lower()
    if passed_text not in ("true", "false", "1", "0", ""):
        raise ConfigError(f"{cell('passed')[:40]!r} is not true, false or empty", file=path,
                          field=f"{where}.passed")
    error = None
    if cell("error") or cell("error_message"):
        error = {"kind": cell("error") or "error", "message": cell("error_message")}
    reading = None
    if error is None and passed_text:
        passed = passed_text in ("true", "1")
        reading = {"sensor_name": cell("sensor") or "imported", "passed": passed,
                   "score": number_of("score", 1.0 if passed else 0.0),
                   "metrics": {}, "details": ""}
    duration = number_of("duration", 0.0)
    observation = None
    if reading is not None:
        observation = {"content": "", "tool_calls": [], "duration_ms": round(duration),
                       "tokens_input": whole("tokens_input", 0),
                       "tokens_output": whole("tokens_output", 0),
                       "cost_usd": number_of("cost", 0.0)}
    return {"subject": cell("subject"), "probe_id": cell("probe_id"),
            "trial": whole("trial"), "seed": whole("seed"), "attempt": whole("attempt", 0),
            "expectation": cell("expectation") or "must_trigger",
            "started_at": cell("started_at") or None, "duration_ms": duration,
            "observation": observation, "reading": reading, "error": error}


def _check_records(imported: Imported) -> None:
    """Every record is a trial line a run could have written; one expectation per case;
    no two subjects (or cases) that are one name in another form or look alike."""
    expectations: dict[str, str] = {}
    csv_columns = imported.format == "csv"
    subjects: dict[str, str] = {}
    cases: dict[str, str] = {}
    for i, (r, (file, where)) in enumerate(zip(imported.records, imported.where,
                                               strict=True)):
        line = check_record(r, file, where, csv_columns=csv_columns)
        imported.records[i] = line
        case_id, expectation = line["probe_id"], line["expectation"]
        if expectations.setdefault(case_id, expectation) != expectation:
            raise ConfigError(f"case {case_id!r} is {expectations[case_id]} elsewhere in the "
                              "file", file=file, field=f"{where}.expectation")
        subjects.setdefault(line["subject"], f"{where}.subject")
        cases.setdefault(case_id, f"{where}.probe_id")
    check_distinct(subjects.items(), what="subject", file=imported.path)
    check_distinct(cases.items(), what="case id", file=imported.path)


def check_record(record: Mapping[str, Any], file: Path, where: str, *,
                 csv_columns: bool = False) -> dict[str, Any]:
    """The record as a trial line (without `run_id` and `experiment`; `seed` may be None and
    `started_at` None), checked by the rules of a run's lines; else a `ConfigError` naming
    `file` and the field at `where`."""
    def bad(message: str, key: str) -> ConfigError:
        if csv_columns:
            key = _CSV_COLUMNS.get(key, key)
        return ConfigError(message, file=file, field=f"{where}.{key}")

    line = dict(record)
    line.pop("trace", None)  # the transcript stays in the lab it was made in
    for key, default in (("attempt", 0), ("duration_ms", 0.0)):
        if line.get(key) is None:
            line[key] = default
    for key in ("seed", "started_at", "observation", "reading", "error"):
        line.setdefault(key, None)
    if isinstance(line["reading"], dict) and "sensor_name" not in line["reading"]:
        line["reading"] = {"sensor_name": "imported", **line["reading"]}
    problem = _unwritable(line)
    if problem is not None:
        raise bad(problem[1], problem[0])
    try:
        TrialLine.model_validate({**line, "run_id": "-", "experiment": "-",
                                  "started_at": "-"}, strict=True)
    except ValidationError as exc:
        located = from_validation_error(exc, TrialLine)
        raise bad(located.message, located.field or "line") from None
    for key, what in (("subject", "subject name"), ("probe_id", "case id")):
        try:
            line[key] = check_name(line[key], what=what)
        except ConfigError as exc:
            raise bad(exc.message, key) from None
    if line["trial"] >= MAX_TRIALS:
        raise bad(f"must be a whole number from 0 to {MAX_TRIALS - 1} (got {line['trial']})",
                  "trial")
    if line["error"] is None and line["reading"] is None:
        raise bad("a trial without an error needs a reading with 'passed' (true or false)",
                  "reading")
    try:
        line["started_at"] = timestamp(line["started_at"])
    except ValueError as exc:
        raise bad(str(exc), "started_at") from None
    return line


def _writable(value: Any) -> bool:
    """Whether `_unwritable` would find nothing: the same walk without the paths, which
    only a problem needs (building one per value was most of an import's checking)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return False
            stack += [(v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                else item)]
    return True


def _unwritable(value: Any) -> tuple[str, str] | None:
    """(path, why) of the first value no trial line may hold — nesting deeper than
    `MAX_DEPTH`, a float that is not finite (JSON has no NaN or infinity) — or None.
    Iterative, so any depth is safe to check."""
    if _writable(value):
        return None
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path or "line", f"{item!r} is not a finite number"
        if not isinstance(item, dict | list):
            continue
        if depth >= MAX_DEPTH:
            shown = path if len(path) <= 60 else path[:57] + "..."
            return shown, f"nested more than {MAX_DEPTH} deep"
        pairs: Iterator[tuple[str, Any]] = (
            ((f"{path}.{k}" if path else str(k)), v) for k, v in item.items()
        ) if isinstance(item, dict) else ((f"{path}[{i}]", v) for i, v in enumerate(item))
        stack += [(v, p, depth + 1) for p, v in pairs]
    return None


def timestamp(value: Any) -> str | None:
    """A time as trial lines hold it (ISO-8601 UTC, milliseconds, `Z`); None when empty.
    ValueError when it is not a time, is before 1970 or is more than a day ahead."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not an ISO-8601 time")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value[:40]!r} is not an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except (ValueError, OverflowError):  # year 1 at +05:00 is in year 0
        moment = EARLIEST - timedelta(days=1)
    if not EARLIEST <= moment <= datetime.now(UTC) + timedelta(days=1):
        raise ValueError(f"{value[:40]!r} is not a time ix can have recorded (from 1970 "
                         "to now)")
    return iso(moment)


def trial_line(record: Mapping[str, Any], *, run_id: str, experiment: str,
               seed: int, started_at: str) -> dict[str, Any]:
    """The `trials.jsonl` line of a checked record, keys in the engine's order."""
    values = dict(record)
    values.update(run_id=run_id, experiment=experiment, seed=seed,
                  started_at=values.get("started_at") or started_at)
    line = {k: values.get(k) for k in LINE_KEYS}
    line.update((k, v) for k, v in values.items() if k not in line)
    return line


def write_experiment(directory: Path, *, name: str, source: Path, fmt: str,
                     subjects: Iterable[str], cases: Iterable[tuple[str, str, str]],
                     goal: Mapping[str, Any] | None = None, trials: int | None = None) -> None:
    """A new experiment for imported results: experiment.yaml naming the subjects in the run's
    order, its goal when the file records one, and `imported:` (where from, and whether every
    case has its prompt: `ix run` refuses an imported experiment without); one case file per
    case, with its prompt or, where the file has none, a placeholder naming the case."""
    (directory / "cases").mkdir(parents=True)
    cases = list(cases)
    subjects = list(subjects)
    config: dict[str, Any] = {
        "name": name,
        "description": f"Imported from {source.name} ({fmt}) by `ix import`.",
        "imported": {"source": source.name, "format": fmt,
                     "prompts": all(prompt.strip() for _, _, prompt in cases)},
        "subjects": [{"name": s} for s in subjects],
    }
    if trials is not None:
        config["trials"] = trials
    kept = importable_goal(goal, subjects)
    if kept is not None:
        config["goal"] = kept
    _write(directory / "experiment.yaml", dump_yaml(config))
    for case_id, expectation, prompt in cases:
        body = prompt.strip() or (f"(imported from {source.name}: no prompt was recorded for "
                                  f"case {case_id})")
        text = f"---\n{dump_yaml({'id': case_id, 'expectation': expectation})}---\n{body}\n"
        _write(directory / "cases" / f"{file_part(case_id)}.md", text)


def importable_goal(goal: Mapping[str, Any] | None, subjects: Sequence[str]
                    ) -> dict[str, Any] | None:
    """The recorded goal, if it is one `experiment.yaml` accepts and it compares subjects that
    were imported; else None (a goal about subjects the file lacks cannot be judged)."""
    from pydantic import ValidationError as Invalid


    if not goal:
        return None
    try:
        checked = GoalSpec.model_validate(dict(goal))
    except Invalid:
        return None
    if not set(checked.compare) <= set(subjects) or (not checked.compare and len(subjects) < 2):
        return None
    return {k: v for k, v in dict(goal).items() if k in GoalSpec.model_fields}


def _write(path: Path, text: str) -> None:
    """`path.write_text`, its `OSError` naming `path` (a full disk's names no file)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise type(exc)(exc.errno, exc.strerror, str(path)) from None
        raise
