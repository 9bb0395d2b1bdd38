"""`ix ls`: the lab's experiments with their cases and last run."""

from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from ix import api
from ix.cli.options import Json, Lab
from ix.cli.output import out, print_json

if TYPE_CHECKING:
    from ix.api.schemas import LsOutput


def list_(lab: Lab = None, json_out: Json = False) -> None:
    """List the lab's experiments with their cases and last run."""
    lab_path, infos = api.list_experiments(lab)
    if json_out:
        listing: LsOutput = {"lab": str(lab_path), "experiments": [
            {"name": i.name, "path": str(i.path), "cases": i.cases, "subjects": i.subjects,
             "last_run": i.last_run, "status": i.status, "f1": i.f1, "error": i.error}
            for i in infos]}
        print_json(listing)
        return
    table = Table(title=f"lab {lab_path}", title_justify="left", show_edge=False)
    for col in ("experiment", "cases (must/not/edge)", "subjects", "last run", "status", "F1"):
        # the subjects list wraps at its commas; every other cell stays whole (ix.report.layout)
        table.add_column(col, overflow="fold" if col == "subjects" else "ellipsis")
    for i in infos:
        if i.error:
            table.add_row(i.path.name, Text(i.error, style="red"), "", i.last_run or "-",
                          i.status or "-", "")
            continue
        c = i.cases
        table.add_row(i.name, f"{c['must_trigger']}/{c['should_not_trigger']}/{c['acceptable']}",
                      ", ".join(i.subjects), i.last_run or "never", i.status or "-",
                      f"{i.f1:.3f}" if i.f1 is not None else "-")
    out.print(table)




def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("ls")(list_)
