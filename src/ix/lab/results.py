"""`results/`: the trial log (single source of truth) and the summaries derived from it.

`trials.jsonl` is appended one line per trial and flushed per line, so a crash loses at most
the line being written; a reader skips such a torn line with a warning and keeps every line
before it. Summaries are written to a temporary file and renamed, so they are never half-written.
"""

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

TRIALS_FILE = "trials.jsonl"
LATEST_SUMMARY = "summary-latest.json"

Warn = Callable[[str], None]

# One encoder for every trial line: `json.dumps` with options builds a new one per call.
_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def stamp(moment: datetime) -> str:
    """UTC `YYYYMMDDTHHMMSSZ`, the timestamp of file names."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


class TrialWriter:
    """Appends trial records to `trials.jsonl`, one flushed line each; fsync on close."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: TextIO = path.open("a", encoding="utf-8", newline="\n")
        self.written = 0
        if self._file.tell() > 0 and not _ends_with_newline(path):
            # a crash tore the last line: start ours on a fresh line so both stay readable
            self._file.write("\n")
            self._file.flush()

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(_LINE.encode(record) + "\n")
        self._file.flush()
        self.written += 1

    def close(self) -> None:
        if self._file.closed:
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()

    def __enter__(self) -> "TrialWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def read_trials(path: Path, warn: Warn | None = None) -> Iterator[dict[str, Any]]:
    """Every well-formed record of a trial log; torn or corrupt lines are skipped with a warning."""
    if not path.is_file():
        return
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                record = None
            if not isinstance(record, dict):
                if warn is not None:
                    torn = not raw.endswith(b"\n")
                    what = "torn last line (a run stopped mid-write)" if torn else "corrupt line"
                    warn(f"{path}: line {number}: skipped {what}")
                continue
            yield record


def dumps(data: Any) -> str:
    """JSON as ix writes it to files: indented, UTF-8, and never NaN (which JSON lacks)."""
    return json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, dumps(data))


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, fsync, then rename: never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_summary(results_dir: Path, summary: dict[str, Any], finished: datetime,
                 also: tuple[Path, ...] = ()) -> Path:
    """`summary-<stamp>.json` (never overwriting an older one), `summary-latest.json`, and
    the same text at each path of `also`."""
    text = dumps(summary)
    name = f"summary-{stamp(finished)}"
    archived = results_dir / f"{name}.json"
    n = 2
    while archived.exists():
        archived = results_dir / f"{name}-{n}.json"
        n += 1
    for path in (archived, results_dir / LATEST_SUMMARY, *also):
        write_text_atomic(path, text)
    return archived
