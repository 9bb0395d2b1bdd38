"""Progress of a run on stderr: a live bar per subject on a terminal, JSON events on request.

`bar` (the default on a terminal): per subject, trials done/total, rate, errors, tokens and
cost so far, elapsed time and ETA. `json`: one JSON object per line — `start` per
experiment, `trial` per finished trial, for programs that watch a run. `none`: silent (the
default off a terminal and with `--json`). No bar while a person answers on this terminal
(the `human` runtime): it would redraw the line they type on.
"""

import json
import os
import sys
import time
from types import TracebackType
from typing import Any, Literal

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ix.api import Plan
from ix.api.design import DesignWarning
from ix.api.options import Observer
from ix.cli import design as design_cli
from ix.cli.output import err, warn

Mode = Literal["auto", "bar", "json", "none"]

#: The bar is redrawn 8 times a second: its counts are handed to it at most this often, not
#: on every trial (an update costs more than a mock trial does).
REDRAW_S = 0.125


class RunProgress(Observer):
    """The observer of `ix run` and `ix batch`: the progress, and every warning (design
    warnings as errors under `strict`) on stderr."""

    def __init__(self, enabled: bool = True, mode: Mode = "auto", strict: bool = False):
        self._strict = strict
        self._designs: list[tuple[Plan, list[DesignWarning]]] = []  # said before the first run
        if mode == "auto":
            mode = "bar" if enabled and err.is_terminal else "none"
        self.mode = mode
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._stats: dict[str, list[float]] = {}  # subject -> [done, errors, tokens, cost]
        self._experiment = ""
        self._total = 0
        self._done = 0
        self._pending: dict[str, int] = {}  # subject -> trials not yet shown on its bar
        self._shown = 0.0  # when the bar was last given its counts (time.monotonic)
        self._batches: dict[str, dict[str, tuple[int, int]]] = {}  # subject -> id -> counts
        self._paused = False  # the run is paused: the bars say so instead of a rate
        if mode == "none":  # nothing shows a trial: the engine then makes no call per trial
            self.on_trial = super().on_trial  # type: ignore[method-assign]

    def __enter__(self) -> "RunProgress":
        if self.mode == "bar":
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TextColumn("[red]{task.fields[errors]}"),
                TextColumn("[dim]{task.fields[usage]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=err,
                refresh_per_second=8,
            )
            self._progress.__enter__()
        return self

    def on_design(self, plan: Plan, warnings: list[DesignWarning]) -> None:
        """Kept until every experiment's have come (all before anything runs), to be said
        together (`ix.cli.design.say`); under --strict, at once, as errors."""
        if self._strict:
            design_cli.say([(plan, warnings)], strict=True)
        else:
            self._designs.append((plan, warnings))

    def _say_designs(self) -> None:
        found, self._designs = self._designs, []
        if found:
            design_cli.say(found, strict=False)

    def on_warning(self, message: str) -> None:
        warn(message)

    def on_plan(self, plan: Plan) -> None:
        self._say_designs()
        self._show()  # the last experiment's bar ends at its final count
        self._experiment = plan.loaded.experiment.name
        self._total, self._done = plan.total, 0
        self._stats = {sp.subject.name: [0, 0, 0, 0.0] for sp in plan.subjects}
        self._batches = {}
        if self._progress is not None and any(
                sp.runtime_spec.get("kind") == "human" for sp in plan.subjects):
            self._progress.stop()
            self._progress = None
        if self.mode == "json":
            self._emit({"event": "start", "experiment": self._experiment,
                        "total": plan.total, "subjects": list(self._stats)})
        if self._progress is None:
            return
        for task in self._tasks.values():
            self._progress.update(task, visible=False)
        per_subject = plan.total // max(len(plan.subjects), 1)
        self._tasks = {
            name: self._progress.add_task(escape(f"{self._experiment} · {name}"), total=per_subject,
                                          rate="", errors="", usage="")
            for name in self._stats
        }

    def on_trial(self, record: dict[str, Any]) -> None:
        subject = record["subject"]
        stats = self._stats.setdefault(subject, [0, 0, 0, 0.0])
        observation = record.get("observation") or {}
        stats[0] += 1
        stats[1] += record["error"] is not None
        stats[2] += observation.get("tokens_input", 0) + observation.get("tokens_output", 0)
        stats[3] += observation.get("cost_usd", 0.0)
        self._done += 1
        if self.mode == "json":
            self._emit({"event": "trial", "experiment": self._experiment, "subject": subject,
                        "probe_id": record["probe_id"], "trial": record["trial"],
                        "error": (record["error"] or {}).get("kind"),
                        "passed": (record.get("reading") or {}).get("passed"),
                        "done": self._done, "total": self._total, "errors": int(stats[1]),
                        "tokens": int(stats[2]), "cost_usd": round(stats[3], 6)})
            return
        if self._progress is None or subject not in self._tasks:
            return
        self._pending[subject] = self._pending.get(subject, 0) + 1
        if time.monotonic() - self._shown >= REDRAW_S:
            self._show()

    def on_pause(self, run_id: str, paused: bool) -> None:
        """Say that the run paused (and how to go on) or continued; the bars say "paused"."""
        if self.mode == "json":
            self._emit({"event": "paused" if paused else "continued",
                        "experiment": self._experiment, "run_id": run_id})
            return
        if paused:
            err.print(f"paused run {run_id}: no new trial starts, the ones in flight finish; "
                      f"`ix continue {run_id}` (or `kill -CONT {os.getpid()}`) goes on",
                      markup=False, soft_wrap=True)
        else:
            err.print(f"continued run {run_id}", markup=False)
        self._paused = paused
        if self._progress is not None:
            for task in self._tasks.values():
                self._progress.update(task, rate="paused" if paused else "")

    def on_batch(self, status: dict[str, Any]) -> None:
        """A batch's progress: a JSON event, or the subject's bar says how far its batches
        are (`batch 120/400 answered`) while it waits on them."""
        if self.mode == "json":
            self._emit({"event": "batch", "experiment": self._experiment, **status})
            return
        subject = status["subject"]
        batches = self._batches.setdefault(subject, {})
        batches[status["id"]] = (status["requests"], status["answered"])
        if self._progress is None or subject not in self._tasks:
            return
        asked = sum(n for n, _ in batches.values())
        answered = sum(a for _, a in batches.values())
        self._progress.update(self._tasks[subject],
                              rate=f"{len(batches)} batch(es): {answered}/{asked} answered")

    def _show(self) -> None:
        """Hand the bars the trials finished since last time."""
        self._shown = time.monotonic()
        if self._progress is None:
            self._pending.clear()
            return
        for subject, advance in self._pending.items():
            task_id = self._tasks[subject]
            stats = self._stats[subject]
            speed = self._progress.tasks[task_id].speed
            usage = f"{int(stats[2]):,} tok ${stats[3]:.4f}" if stats[2] or stats[3] else ""
            rate = f"{speed:,.0f}/s" if speed else ""
            if subject in self._batches:  # a rate means nothing when a batch answers all
                rate = self._progress.tasks[task_id].fields.get("rate", "")
            if self._paused:
                rate = "paused"
            self._progress.update(task_id, advance=advance, rate=rate,
                                  errors=f"{int(stats[1])} errors" if stats[1] else "",
                                  usage=usage)
        self._pending.clear()

    def _emit(self, event: dict[str, Any]) -> None:
        sys.stderr.write(json.dumps(event) + "\n")
        sys.stderr.flush()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._say_designs()  # a run that never began still says them
        if self._progress is not None:
            self._show()
            self._progress.__exit__(exc_type, exc, tb)
