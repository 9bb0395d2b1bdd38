"""`ix sync push|pull URL`: the lab's results in object storage (docs/sync.md)."""

from types import TracebackType
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from ix.api import sync as api_sync
from ix.cli.options import SETTINGS, Lab
from ix.cli.options import JsonText as Json
from ix.cli.output import err, out, print_json, warn

app = typer.Typer(
    name="sync",
    help="Push the lab's results to object storage (s3://, gs://, az://, file://) or pull "
         "them back.\n\n"
         "Trial logs merge by trial and attempt: nothing is lost or duplicated. Credentials "
         "come only from the environment or the backend's own configuration.",
    **SETTINGS,
)

Url = Annotated[str, typer.Argument(
    help="s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, az://CONTAINER/PREFIX or file:///PATH.",
    show_default=False)]


class _Bar:
    """A rich progress bar on stderr while objects move; nothing when stderr is not a
    terminal (piped, CI) or with --json."""

    def __init__(self, enabled: bool):
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if enabled and err.is_terminal:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), console=err, transient=True)

    def __enter__(self) -> "_Bar":
        if self._progress is not None:
            self._progress.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, exc, tb)

    def start(self, what: str, total: int) -> None:
        if self._progress is not None:
            if self._task is not None:
                self._progress.remove_task(self._task)
            self._task = self._progress.add_task(what, total=total)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)


def _report(result: api_sync.SyncResult, json_out: bool) -> None:
    data = result.as_dict()
    if json_out:
        print_json(data)
        return
    pushed = result.direction == "push"
    verb = "pushed to" if pushed else "pulled from"
    out.print(f"{verb} {result.url}: {data['lines']:,} lines in {data['objects']:,} objects "
              f"({data['lines_skipped']:,} lines and {data['objects_skipped']:,} objects "
              f"already there) in {data['seconds']:.1f} s", soft_wrap=True)
    if data["experiments_added"]:
        out.print(f"added experiment(s) {', '.join(data['experiments_added'])}: their "
                  "definitions come from the remote; read them before you run them",
                  soft_wrap=True)
    if data["runs_added"]:
        out.print(f"added run(s) {', '.join(data['runs_added'])}", soft_wrap=True)
    if data["superseded"]:
        out.print(f"{data['superseded']:,} trial line(s) are later attempts of trials the lab "
                  "held: they now count instead", soft_wrap=True)
    if data["conflicts"]:
        keep, other = ("the remote's", "delete it there") if pushed else \
            ("the lab's", "delete the lab's copy and pull again")
        out.print(f"{len(data['conflicts'])} file(s) differ on both sides; {keep} copy is "
                  f"kept (to take the other, {other}):", soft_wrap=True)
        for rel in data["conflicts"]:
            out.print(f"  {rel}", soft_wrap=True)
    if data["damaged"]:
        out.print(f"{data['damaged']} damaged segment(s) ignored (an interrupted push; the "
                  "next push rewrites them)", soft_wrap=True)


@app.command("push")
def push(url: Url, lab: Lab = None, json_out: Json = False) -> None:
    """Send the lab's results to URL: trial lines, run folders, summaries, annotations,
    tags, the audit log and the experiments' definitions. Only what the remote lacks is
    sent, and nothing there is replaced (a file that differs is reported as a conflict); a
    push cut short is completed by running it again. URL must be empty or a prefix ix
    pushes to.

    Exit codes: 0 done, 2 bad URL, not a sync prefix, backend not installed, or the store
    refused (no credentials, no such bucket).
    """
    with _Bar(not json_out) as bar:
        result = api_sync.push(url, lab, progress=bar, warn=warn)
    _report(result, json_out)


@app.command("pull")
def pull(url: Url, lab: Lab = None, json_out: Json = False) -> None:
    """Bring URL's results into the lab: trial lines the lab lacks are appended, missing
    files written; nothing the lab has is replaced or lost (a file that differs is reported
    as a conflict). The query index is refreshed, so `ix results` and `ix query` see the
    pulled trials. Only a prefix `ix sync push` made is read; experiments and runs it adds
    are listed (a remote is trusted like a git remote: see docs/sync.md).

    Exit codes: 0 done, 2 bad URL, not a sync prefix, backend not installed, or the store
    refused.
    """
    with _Bar(not json_out) as bar:
        result = api_sync.pull(url, lab, progress=bar, warn=warn)
    _report(result, json_out)


def register(app_: typer.Typer) -> None:
    """Add the group to the `ix` application."""
    app_.add_typer(app, name="sync")
