"""A run's trials out of the lab: the original lines (jsonl) and one JSON document (json);
csv and parquet come from the query layer (`ix.api.results`), Inspect logs from
`ix.lab.inspect_log`.

The trial log is only read here. An export file is written to a temporary file and renamed,
so an interrupted export never leaves half a file; an existing `--out` is refused unless the
caller forces it (`check_out`).
"""

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.lab.results import write_text_atomic

Warn = Callable[[str], None]


def run_lines(trials: Path, run_id: str, warn: Warn | None = None) -> list[bytes]:
    """Every line of `run_id` in a trial log, byte for byte (each ends with a newline).

    Torn or corrupt lines are skipped with a warning, as `read_trials` does."""
    lines: list[bytes] = []
    marker = run_id.encode()
    if not trials.is_file():
        return lines
    with trials.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if marker not in raw:
                continue
            try:
                record = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                record = None
            if not isinstance(record, dict) or not raw.endswith(b"\n"):
                if warn is not None:
                    what = "torn last line" if not raw.endswith(b"\n") else "corrupt line"
                    warn(f"{trials}: line {number}: skipped {what}")
                continue
            if record.get("run_id") == run_id:
                lines.append(raw)
    return lines


def latest_attempts(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One record per (subject, probe_id, trial): the latest attempt (a later line wins a
    tie), as aggregation counts them; in the order of their first line."""
    latest: dict[tuple[str, str, int], Mapping[str, Any]] = {}
    for r in records:
        key = (str(r.get("subject")), str(r.get("probe_id")), int(r.get("trial") or 0))
        old = latest.get(key)
        if old is None or int(r.get("attempt") or 0) >= int(old.get("attempt") or 0):
            latest[key] = r
    return list(latest.values())


def check_out(out: Path, *, force: bool, directory: bool = False) -> None:
    """Refuse to overwrite an existing `--out` unless forced, and a file where a directory
    is wanted (or the reverse) even then."""
    if not out.exists():
        if not out.parent.is_dir():
            raise ConfigError(f"the folder {out.parent} does not exist", field="--out")
        return
    if directory and not out.is_dir():
        raise ConfigError(f"{out} is a file; --format inspect writes a folder (one log per "
                          "subject)", field="--out")
    if not directory and out.is_dir():
        raise ConfigError(f"{out} is a folder; give a file path", field="--out")
    if not force:
        raise ConfigError(f"{out} already exists; pass --force to overwrite it", field="--out")


def write_jsonl(lines: Sequence[bytes], out: Path) -> None:
    write_text_atomic(out, b"".join(lines).decode("utf-8"))


def write_json(document: Mapping[str, Any], out: Path) -> None:
    write_text_atomic(out, json.dumps(document, ensure_ascii=False, indent=2,
                                      allow_nan=False) + "\n")
