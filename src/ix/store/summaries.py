"""A run's summary on disk: `runs/<run_id>/summary.json`, `results/summary-<stamp>.json` and
`summary-latest.json`, written by `save_summary` and read by `read_summary` (checked against
its type, `ix.eval.schemas.Summary`) or `summary_as_written` (the JSON object as it stands,
for a reader that takes a few keys and must stay fast: `ix ls`, the viewer, `ix plan`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import orjson

from ix._lazy import Loading, in_background
from ix.domain.errors import ConfigError
from ix.eval.schema_version import SCHEMA_VERSION
from ix.eval.summary_table import summary_csv
from ix.fs.files import dumps, write_text_atomic
from ix.store.layout import ExperimentDir, RunDir
from ix.store.trials import stamp

if TYPE_CHECKING:
    from ix.eval.schemas import Summary


_warming: list[Loading] = []  # the checker being built in the background, if it is


def warm_checker() -> None:
    """Build the summary checker (~0.2 s: the schema's types, then pydantic's validator) in
    a background thread, while a run's trials leave the interpreter waiting: the check of
    the summary at the run's end (`checked_sha256`) then does not wait for it."""
    if not _warming:
        _warming.append(in_background(_build_checker, "ix-summary-checker"))


def _schemas() -> ModuleType:
    """`ix.eval.schemas`, imported when a summary must be checked: the schema's sixty-odd
    types are most of what importing a reader of runs would cost."""
    from ix.eval import schemas

    return schemas


def _build_checker() -> None:
    _schemas().summary_adapter()


def _summary_problems(data: object) -> list[str]:
    """`ix.eval.schemas.summary_problems`, once the checker is built."""
    for loading in _warming:  # never two threads building it at once
        loading.join()
    problems: list[str] = _schemas().summary_problems(data)
    return problems


def read_summary(run_dir: Path, *, checked: str | None = None) -> Summary:
    """The run's `summary.json`, checked against its type (`ix.eval.schemas.Summary`); a
    `ConfigError` naming the file and what is wrong with it if it is none.

    `checked`: the sha256 of the summary as the run wrote and checked it (its `report.json`
    keeps it): the very same bytes are not checked again, since building the checker is
    most of what reading a summary costs."""
    path = RunDir(run_dir).summary
    raw = _read(path)
    data = _json(raw, path)
    if checked is not None and isinstance(data, dict) \
            and hashlib.sha256(raw).hexdigest() == checked:
        return cast("Summary", data)
    problems = _summary_problems(data)
    if problems:
        shown = "; ".join(problems[:4]) + (f"; and {len(problems) - 4} more problems"
                                           if len(problems) > 4 else "")
        raise ConfigError(f"not a run summary of schema {SCHEMA_VERSION}: {shown}", file=path)
    return cast("Summary", data)


def save_summary(results_dir: Path, summary: Mapping[str, Any], finished: datetime,
                 run: RunDir | None = None, *, parents: bool = True) -> Path:
    """`summary-<stamp>.json` (never overwriting an older one), `summary-latest.json`, and
    with `run` the run's own pair (`write_run_summary`). `parents=False`: a deleted
    `results_dir` is an error (`FileNotFoundError`), not recreated."""
    text = dumps(summary)
    place = ExperimentDir(results_dir)
    archived = next(p for p in place.archived_summaries(stamp(finished)) if not p.exists())
    for path in (archived, place.latest_summary):
        write_text_atomic(path, text, parents=parents, shared=True)
    if run is not None:
        write_run_summary(run, summary, text=text, parents=parents)
    return archived


def write_run_summary(run: RunDir, summary: Mapping[str, Any], *, text: str | None = None,
                      parents: bool = True) -> None:
    """The run folder's `summary.json` and, beside it, `summary.csv` (the same figures, one
    row per subject and metric: `ix.eval.summary_table`)."""
    write_text_atomic(run.summary, dumps(summary) if text is None else text, parents=parents,
                      shared=True)
    write_text_atomic(run.summary_csv, summary_csv(summary), parents=parents, shared=True)


def checked_sha256(run_dir: Path) -> str | None:
    """The sha256 of the run's `summary.json` when it is a summary (checked against its type),
    else None: what `read_summary(checked=...)` takes to skip the check of the same bytes."""
    try:
        raw = RunDir(run_dir).summary.read_bytes()
        return hashlib.sha256(raw).hexdigest() if not _summary_problems(orjson.loads(raw)) \
            else None
    except (OSError, ValueError):
        return None


def summary_as_written(path: Path) -> dict[str, Any]:
    """The summary file at `path` as a JSON object, unchecked; a `ConfigError` naming the
    file when there is none, it does not read, or it holds no JSON object."""
    data = _json(_read(path), path)
    if not isinstance(data, dict):
        raise ConfigError("not a run summary (no JSON object)", file=path)
    return data


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("this run has no summary (it is still running, or it died before "
                          "writing one)", file=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=path) from None


def _json(raw: bytes, path: Path) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise ConfigError("not valid JSON", file=path) from None
