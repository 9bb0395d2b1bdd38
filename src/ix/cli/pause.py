"""`ix pause [RUN]` and `ix continue [RUN]`."""

from typing import Annotated

import typer

from ix.api import pausing as api_pausing
from ix.cli.options import JsonFormat as Json
from ix.cli.options import Lab
from ix.cli.output import out, print_json

Run = Annotated[str | None, typer.Argument(
    help="The run (id, unique prefix or suffix, or tag); none: the lab's one running run.",
    show_default=False, metavar="RUN")]


def pause(run: Run = None, lab: Lab = None, json_out: Json = False) -> None:
    """Pause a running run: no new trial starts, the trials in flight finish, the run stays
    open until `ix continue RUN`.

    The `ix run` executing it obeys within a fraction of a second (Ctrl-Z in its terminal
    does the same). A run that is not running is exit 2."""
    state = api_pausing.pause(lab, run)
    if json_out:
        print_json(state)
        return
    again = "" if state["changed"] else " (it already was)"
    out.print(f"paused run {state['run']} ({state['experiment']}){again}: no new trial "
              f"starts; `ix continue {state['run']}` goes on", markup=False, soft_wrap=True)


def continue_(run: Run = None, lab: Lab = None, json_out: Json = False) -> None:
    """Continue a paused run: trials start again where it paused.

    Sending SIGCONT to the `ix run` executing it does the same. A run that is not running is
    exit 2 (`ix run --resume` continues a run that stopped)."""
    state = api_pausing.resume(lab, run)
    if json_out:
        print_json(state)
        return
    was = "" if state["changed"] else " (it was not paused)"
    out.print(f"continued run {state['run']} ({state['experiment']}){was}", markup=False,
              soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the commands to the `ix` application."""
    app.command("pause")(pause)
    app.command("continue")(continue_)
