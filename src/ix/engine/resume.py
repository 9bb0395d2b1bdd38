"""Continuing a run: `--resume` runs exactly the trials not yet recorded, `--retry-failed`
re-runs the ones whose latest attempt errored.

The trial log is the truth: a run's records are read back from `trials.jsonl` (a torn last
line is skipped with a warning, so that trial runs again), the latest attempt of each
(subject, probe_id, trial) counts, and the tallies are rebuilt from them before the missing
trials run — so the final summary equals that of an uninterrupted run. A retried trial keeps
its trial seed and gets the next attempt number, which runtimes mix into their draws.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ix.domain.errors import ConfigError
from ix.lab.results import TRIALS_FILE, read_trials
from ix.lab.runs import RUNS_DIR, read_spec

Key = tuple[str, str, int]
Mode = Literal["resume", "retry_failed"]


@dataclass(frozen=True)
class Continuation:
    run_id: str
    mode: Mode
    spec: dict[str, Any]
    keep: dict[Key, dict[str, Any]]    # recorded trials that stand: not run again
    attempts: dict[Key, int]           # the attempt number each re-run trial gets
    recorded: int = 0                  # lines the run has in the log (all attempts)


def latest_records(trials: Path, run_id: str, warn: Callable[[str], None] | None = None,
                   counted: list[int] | None = None) -> dict[Key, dict[str, Any]]:
    """The latest attempt of every (subject, probe_id, trial) recorded for `run_id`
    (`counted`, if given, receives the number of the run's lines)."""
    latest: dict[Key, dict[str, Any]] = {}
    lines = 0
    for record in read_trials(trials, warn=warn):
        if record.get("run_id") != run_id:
            continue
        lines += 1
        try:
            key = (str(record["subject"]), str(record["probe_id"]), int(record["trial"]))
        except (KeyError, TypeError, ValueError):
            continue
        old = latest.get(key)
        if old is None or int(record.get("attempt", 0)) >= int(old.get("attempt", 0)):
            latest[key] = record
    if counted is not None:
        counted.append(lines)
    return latest


def find_continuation(results: Path, run_id: str | None, mode: Mode,
                      warn: Callable[[str], None] | None = None) -> Continuation:
    """The run to continue: `run_id`, else the experiment's latest run."""
    runs = results / RUNS_DIR
    if run_id is None:
        ids = sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
        if not ids:
            raise ConfigError("this experiment has no run to continue", field="--run")
        run_id = ids[-1]
    directory = runs / run_id
    if not (directory / "spec.yaml").is_file():
        known = ", ".join(sorted(p.name for p in runs.iterdir())[-5:]) if runs.is_dir() else ""
        raise ConfigError(f"no run {run_id!r} in {results}" + (f" (latest: {known})"
                                                                if known else ""),
                          field="--run")
    spec = read_spec(directory)
    if (spec.get("trials_mode") or {}).get("mode") == "auto":
        raise ConfigError("a run with trials: auto cannot be resumed yet; start a new run",
                          field="--resume")
    counted: list[int] = []
    records = latest_records(results / TRIALS_FILE, run_id, warn, counted)
    if mode == "resume":
        keep, attempts = records, {}
    else:
        keep = {k: r for k, r in records.items() if not r.get("error")}
        attempts = {k: int(r.get("attempt", 0)) + 1 for k, r in records.items()
                    if r.get("error")}
    return Continuation(run_id=run_id, mode=mode, spec=spec, keep=keep, attempts=attempts,
                        recorded=counted[0])
