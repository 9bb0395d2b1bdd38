"""A live progress bar for a run: trials done/total, rate, ETA, errors. Silent off a terminal."""

from types import TracebackType
from typing import Any

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

from ix.cli.output import err
from ix.engine.plan import Plan


class RunProgress:
    def __init__(self, enabled: bool):
        self.enabled = enabled and err.is_terminal
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._errors = 0

    def __enter__(self) -> "RunProgress":
        if self.enabled:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TextColumn("[red]{task.fields[errors]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=err,
                refresh_per_second=8,
            )
            self._progress.__enter__()
        return self

    def start(self, plan: Plan) -> None:
        self._errors = 0
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.update(self._task, visible=True)
        self._task = self._progress.add_task(plan.loaded.experiment.name, total=plan.total,
                                             rate="", errors="")

    def trial(self, record: dict[str, Any]) -> None:
        if self._progress is None or self._task is None:
            return
        if record["error"] is not None:
            self._errors += 1
        task = self._progress.tasks[-1]
        speed = task.speed
        self._progress.update(
            self._task, advance=1,
            rate=f"{speed:,.0f}/s" if speed else "",
            errors=f"{self._errors} errors" if self._errors else "",
        )

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.__exit__(exc_type, exc, tb)
