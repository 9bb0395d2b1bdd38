"""Recording one run: start or reopen it under its lock -> record its trial lines -> finish.

The one way a run gets into `results/`, for the engine (`ix run`) and for `ix import`:

- `RunRecorder.start` (a new run: its folder appears whole, with its `spec.yaml`) and
  `RunRecorder.reopen` (a run continued) hold the run's lock until `finish` or `abandon`, so
  a run is never recorded by two processes at once (`RunBusy`). Each line `record`ed is in
  the trial log when it returns (a crash or Ctrl-C loses no completed trial); `finish`
  writes the summaries and the final `spec.yaml`; `abandon` marks a run that could not
  finish without losing its lines.
- `RunRecorder.whole` (an import) writes nothing until `finish`, which writes the run all at
  once — staged and committed by one append (`store/import_run.py`) — so a failure, or
  `abandon`, leaves no trace of it.
"""

import contextlib
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ix.store.import_run import add_run, write_run
from ix.store.layout import ExperimentDir, RunDir
from ix.store.runs import RunLock, create_run, lock_run
from ix.store.spec import write_spec
from ix.store.spec_schema import RunSpec
from ix.store.summaries import save_summary
from ix.store.trials import TrialWriter

Line = dict[str, Any]


class RunRecorder:
    """One run being recorded (see the module's docstring for its lifecycle)."""

    def __init__(self, results: Path, run_id: str, lock: RunLock | None, *,
                 whole: bool = False, fresh: bool = False):
        self.experiment = ExperimentDir(results)
        self.run: RunDir = self.experiment.run(run_id)
        self._lock = lock
        self._whole, self._fresh = whole, fresh
        self._lines: list[Line] = []
        #: The open trial log (`open_log`); `record` is its `write`.
        self.log: TrialWriter | None = None

    # ----------------------------------------------------------------------- start

    @classmethod
    def start(cls, results: Path, started: datetime,
              spec_for: Callable[[str], RunSpec]) -> "RunRecorder":
        """A new run in `results`: its folder, holding `spec_for(run_id)`, and its lock
        (`runs.create_run`: on failure nothing is left)."""
        run_id, _, lock = create_run(results, started, spec_for)
        return cls(results, run_id, lock)

    @classmethod
    def reopen(cls, results: Path, run_id: str) -> "RunRecorder":
        """Run `run_id` of `results`, to be continued: its lock, or `RunBusy` at once."""
        return cls(results, run_id, lock_run(ExperimentDir(results).run(run_id).path))

    @classmethod
    def whole(cls, results: Path, run_id: str, *, fresh: bool = False) -> "RunRecorder":
        """A run written all at once by `finish` (an import); `fresh`: `results` belongs to
        an experiment nobody sees yet (built in a staging folder), so it is written as is."""
        return cls(results, run_id, None, whole=True, fresh=fresh)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    # ----------------------------------------------------------------------- record

    def write_spec(self, spec: RunSpec) -> None:
        """Rewrite the run's `spec.yaml` (never recreating a folder deleted meanwhile)."""
        write_spec(self.run.path, spec, create=False)

    def open_log(self, *, fsync: str = "end",
                 warn: Callable[[str], None] | None = None) -> TrialWriter:
        """Open the trial log for `record` (the log's own lock is taken per line)."""
        self.log = TrialWriter(self.experiment.trials, fsync=fsync, warn=warn)
        return self.log

    def record(self, line: Line) -> None:
        """One trial line: on disk when this returns (kept for `finish` by a `whole` run)."""
        if self._whole:
            self._lines.append(line)
        elif self.log is None:
            raise RuntimeError("open_log() before record()")
        else:
            self.log.write(line)

    @property
    def written(self) -> int:
        """Lines recorded by this recorder."""
        if self._whole:
            return len(self._lines)
        return self.log.written if self.log is not None else 0

    def close_log(self) -> None:
        """Sync and close the trial log (an `OSError` if it could not be synced)."""
        if self.log is not None:
            self.log.close()

    # ----------------------------------------------------------------------- finish

    def finish(self, summary: Mapping[str, Any], spec: RunSpec, finished: datetime) -> Path:
        """The run's summaries (`summary-<stamp>.json`, `summary-latest.json`, the run's
        `summary.json`) and its final `spec.yaml`; returns the archived summary's path (a
        `whole` run, written here all at once with its lines: its `summary.json`). The lock
        is still held (`release`)."""
        results = self.experiment.results
        if self._whole:
            write = write_run if self._fresh else add_run
            write(results, self.run_id, spec, summary, self._lines, finished)
            self._lines = []
            return self.run.summary
        # never recreated: a lab deleted under a run stays deleted
        path = save_summary(results, summary, finished, self.run, parents=False)
        self.write_spec(spec)
        return path

    def abandon(self, spec: RunSpec | None = None) -> None:
        """Give the run up: a `whole` run leaves no trace; a started one keeps its lines,
        and `spec` (if given) is written, best effort, so the run does not claim to be
        running. Does not release the lock (`release`)."""
        self._lines = []
        if spec is not None and not self._whole:
            with contextlib.suppress(OSError):
                self.write_spec(spec)

    def release(self) -> None:
        """Let go of the run's lock (the kernel also does when the process ends)."""
        if self._lock is not None:
            self._lock.release()


__all__ = ["RunRecorder"]
