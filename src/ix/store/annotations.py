"""Annotations: notes on a run, or on one case of it, in `runs/<run_id>/annotations.jsonl`.

Append-only, one JSON object per line: `{"at", "user", "host", "case", "text"}` (`case` null
for a note on the whole run). They live in the run's folder, so they travel with the run.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.appending import append_line, read_log
from ix.fs.storage_faults import storage_faults
from ix.store.audit import identity, now_utc
from ix.store.layout import RunDir

MAX_TEXT = 10_000


def annotations_path(run_dir: Path) -> Path:
    return RunDir(run_dir).annotations


def make_annotation(text: str, case: str | None = None) -> dict[str, Any]:
    """The line `add_annotation` appends; a `ConfigError` for an empty or huge text."""
    text = text.strip()
    if not text:
        raise ConfigError("the annotation is empty", field="TEXT")
    if len(text) > MAX_TEXT:
        raise ConfigError(f"the annotation has {len(text)} characters; at most {MAX_TEXT}",
                          field="TEXT")
    return {"at": now_utc(), **identity(), "case": case, "text": text}


def add_annotation(run_dir: Path, line: dict[str, Any]) -> None:
    """Append one annotation (one `write` on a file opened for appending, under a lock).

    A storage fault (a full disk, a read-only run folder) is a `StorageError`, and the file
    keeps exactly the bytes it had: a line cut short is taken back, a new file removed."""
    path = annotations_path(run_dir)
    with storage_faults("the annotation was not written", file=path):
        append_line(path, json.dumps(line, ensure_ascii=False) + "\n")


def read_annotations(run_dir: Path,
                     warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """A run's annotations, oldest first. Like `trials.jsonl`, the file is a log: a line torn
    by a crash (or otherwise unreadable) is skipped with a warning naming it, and every other
    line is kept."""
    return read_log(annotations_path(run_dir), _annotation, "an annotation", warn)


def _annotation(item: Any) -> dict[str, Any]:
    if not (isinstance(item, dict) and isinstance(item.get("text"), str)
            and (item.get("case") is None or isinstance(item.get("case"), str))):
        raise ValueError("a JSON object with a string `text`")
    return item
