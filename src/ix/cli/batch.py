"""`ix batch`: a battery of runs (experiments x subjects x seeds) and its combined report."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ix import api
from ix.api.battery import outcome_lines, plan_battery, run_battery
from ix.cli.options import Address, Executor, Json, Lab
from ix.cli.output import err, out, print_json
from ix.cli.progress import RunProgress
from ix.domain.errors import ConfigError


def batch(
    battery: Annotated[Path, typer.Argument(
        help="The battery file: experiments (names or globs) × subjects × seeds.",
        show_default=False)],
    lab: Lab = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Validate and list the runs; run and write nothing.")] = False,
    executor: Executor = "local",
    address: Address = None,
    json_out: Json = False,
) -> None:
    """Run a battery: each (experiment, seed) is one run in that experiment's results; the
    battery folder gets a snapshot and a combined report."""
    if not battery.is_file():
        raise ConfigError("no such battery file", file=battery)
    if dry_run:
        spec, _, plans = plan_battery(battery, lab)
        rows: list[dict[str, Any]] = [
            {"experiment": p.loaded.experiment.name, "seed": p.seed,
             "subjects": [sp.subject.name for sp in p.subjects], "trials": p.total}
            for p in plans]
        if json_out:
            print_json({"battery": spec.name, "runs": rows})
        else:
            for row in rows:
                out.print(f"{row['experiment']} seed {row['seed']}: {row['trials']} trials, "
                          f"subjects {', '.join(row['subjects'])}")
            out.print(f"[dim]{len(rows)} runs; dry run: nothing executed[/]", markup=True)
        return
    with RunProgress(enabled=not json_out) as progress:
        result = run_battery(battery, lab, command=["ix", *sys.argv[1:]],
                             observer=progress,
                             executor=executor, address=address)
    if json_out:
        print_json({"folder": str(result.folder), **result.report})
    else:
        out.print((result.folder / "report.md").read_text(encoding="utf-8"), markup=False,
                  highlight=False, soft_wrap=True)  # names in it are text, not rich markup
        out.print(f"[dim]battery folder: {result.folder}[/]", soft_wrap=True, markup=True)
    for line in outcome_lines(result.report):  # why it exits non-zero, even with --json
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    if any(r.status == "cancelled" for r in result.runs):
        raise typer.Exit(130)
    failed = [r.summary for r in result.runs if r.status == "failed"]
    if failed:
        raise typer.Exit(api.failure_exit_code(failed))
    if any((goal := r.summary.get("goal")) and goal["verdict"] == "refuted"
           for r in result.runs):
        raise typer.Exit(1)




def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("batch")(batch)
