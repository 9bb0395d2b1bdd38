"""Human labels: what people said of a judge's trials, in `<experiment>/results/labels.jsonl`
(issue 36, STATS.md §14).

Append-only, one JSON object a line: `{"at", "labeller", "run_id", "subject", "probe_id",
"trial", "sensor", "dimension", "value"}`. A label is on one trial (`run_id`, `subject`,
`probe_id` and `trial` all given) or on a case (`probe_id` alone: the same for every trial of
it); `dimension` is null for a pass/fail label (`value` true or false) and names a judge's
dimension for a score (`value` a number). `ix label` writes them and `ix label --import`
reads them from CSV or JSON Lines; they stay in the lab (`ix export` and `ix sync` carry the
results folder). A later label of the same target, sensor, dimension and labeller replaces
an earlier one (`latest_labels`).
"""

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.appending import append_line, read_log
from ix.fs.storage_faults import storage_faults
from ix.store.audit import now_utc
from ix.store.layout import ExperimentDir

#: The keys of a label line, in the order it is written.
KEYS = ("at", "labeller", "run_id", "subject", "probe_id", "trial", "sensor", "dimension",
        "value")
#: The most labels one import takes (a label set is a sample people made, not a log).
MAX_IMPORT = 100_000

Label = dict[str, Any]


def labels_path(experiment: Path) -> Path:
    return ExperimentDir.at(experiment).labels


def make_label(raw: Mapping[str, Any], *, labeller: str | None = None) -> Label:
    """A label line from `raw` (a row of a table, an answer of `ix label`), checked: a
    `ValueError` saying which key is wrong and why. `labeller` fills one `raw` lacks."""
    def text(key: str, required: bool = False) -> str | None:
        value = raw.get(key)
        if value is None or value == "":
            if required:
                raise ValueError(f"{key}: missing")
            return None
        if not isinstance(value, str):
            raise ValueError(f"{key}: a string, got {value!r}")
        return value.strip()

    run_id, subject = text("run_id"), text("subject")
    probe_id, sensor = text("probe_id", True), text("sensor", True)
    trial = raw.get("trial")
    if trial == "":
        trial = None
    if isinstance(trial, str) and trial.strip().isdigit():
        trial = int(trial)
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int)
                              or trial < 0):
        raise ValueError(f"trial: a whole number >= 0, got {trial!r}")
    given = [run_id is not None, subject is not None, trial is not None]
    if any(given) and not all(given):
        raise ValueError("run_id, subject and trial: all three (a label on one trial) or none "
                         "(a label on the case)")
    dimension = text("dimension")
    value = _value(raw.get("value"), dimension)
    who = text("labeller") or labeller
    if not who:
        raise ValueError("labeller: missing")
    return {"at": text("at") or now_utc(), "labeller": who, "run_id": run_id,
            "subject": subject, "probe_id": probe_id, "trial": trial, "sensor": sensor,
            "dimension": dimension, "value": value}


def _value(value: Any, dimension: str | None) -> bool | float:
    """A pass/fail label's true or false (`pass`/`fail`, `1`/`0` and `yes`/`no` in a table),
    or a dimension's finite number."""
    if dimension is None:
        if isinstance(value, bool):
            return value
        words = {"true": True, "pass": True, "yes": True, "1": True,
                 "false": False, "fail": False, "no": False, "0": False}
        if isinstance(value, str | int) and str(value).strip().lower() in words:
            return words[str(value).strip().lower()]
        raise ValueError(f"value: pass or fail (true/false) for a label without a dimension, "
                         f"got {value!r}")
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"value: a number for dimension {dimension!r}, got {value!r}")
    return number


def add_labels(experiment: Path, labels: Iterable[Label]) -> int:
    """Append labels made by `make_label`, each in one `write` under a lock; how many. A
    storage fault is a `StorageError`, and a line cut short is taken back."""
    path = labels_path(experiment)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with storage_faults("the labels were not all written", file=path):
        for label in labels:
            append_line(path, json.dumps({k: label[k] for k in KEYS}, ensure_ascii=False)
                        + "\n")
            n += 1
    return n


def read_labels(experiment: Path, warn: Callable[[str], None] | None = None) -> list[Label]:
    """The experiment's labels, oldest first. A line that is not one (torn by a crash, edited
    by hand) is skipped with a warning naming it; every other is kept."""
    return read_log(labels_path(experiment), _label, "a label", warn)


def _label(item: Any) -> Label:
    if not isinstance(item, dict):
        raise ValueError("not a JSON object")
    return make_label(item)


def latest_labels(labels: Iterable[Label]) -> list[Label]:
    """One label a (target, sensor, dimension, labeller): the last written."""
    kept: dict[tuple[Any, ...], Label] = {}
    for label in labels:
        key = tuple(label[k] for k in KEYS[1:-1])
        kept.pop(key, None)
        kept[key] = label
    return list(kept.values())


def parse_label_file(path: Path, *, labeller: str | None = None) -> list[Label]:
    """The labels of a CSV (a header naming the keys) or JSON Lines file, every one checked
    before any is kept: a `ConfigError` naming the file, the line and the key otherwise."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=path) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", file=path) from None
    rows: list[tuple[int, Any]]
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = {"probe_id", "sensor", "value"} - set(reader.fieldnames or ())
        if missing:
            raise ConfigError(f"the header lacks {', '.join(sorted(missing))} (the keys: "
                              f"{', '.join(KEYS[1:])})", file=path, field="line 1")
        rows = [(reader.line_num, row) for row in reader]
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except (ValueError, RecursionError):
                raise ConfigError("not a JSON object", file=path,
                                  field=f"line {number}") from None
    else:
        raise ConfigError("a label file ends in .csv or .jsonl", file=path)
    if len(rows) > MAX_IMPORT:
        raise ConfigError(f"{len(rows)} labels; at most {MAX_IMPORT} in one import", file=path)
    out = []
    for number, row in rows:
        if not isinstance(row, dict):
            raise ConfigError("not a JSON object", file=path, field=f"line {number}")
        try:
            out.append(make_label(row, labeller=labeller))
        except ValueError as exc:
            raise ConfigError(str(exc), file=path, field=f"line {number}") from None
    return out


__all__ = ["KEYS", "Label", "add_labels", "labels_path", "latest_labels", "make_label",
           "parse_label_file", "read_labels"]
