"""`ix compare`: runs of an experiment side by side."""

from typing import Annotated

import typer

from ix import api
from ix.cli.options import Json, Lab
from ix.cli.output import out, print_json
from ix.report.console import run_comparison_renderable


def compare(
    runs: Annotated[list[str], typer.Argument(
        help="Run ids (or unique prefixes, or run folders); the first is the baseline.",
        show_default=False)],
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Compare runs of an experiment: metric deltas with intervals, flipped cases, a verdict."""
    result = api.compare_runs(lab, runs)
    if json_out:
        print_json(result)
        return
    out.print(run_comparison_renderable(result))




def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("compare")(compare)
