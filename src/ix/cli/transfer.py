"""`ix export RUN` and `ix import PATH`: runs out of the lab, outside results in.

docs/export.md has the formats and the rules.
"""

import sys
from pathlib import Path
from typing import Annotated

import typer

from ix.api import transfer
from ix.cli.options import JsonText as Json
from ix.cli.options import Lab
from ix.cli.output import out, print_json, warn


def export(
    run: Annotated[str, typer.Argument(help="A run id (or a unique prefix) of any experiment "
                                            "of the lab.", show_default=False)],
    out_path: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Where to write: a file, or for inspect and mlflow a folder.",
        show_default=False)] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help="jsonl (the run's trial lines, byte for byte; the default), "
                               "json (the run's spec, summary and trials), csv, parquet, "
                               "inspect (Inspect AI eval logs), folder (as --folder) or "
                               "mlflow (a local MLflow tracking folder).",
        show_default=False)] = None,
    folder: Annotated[Path | None, typer.Option(
        "--folder", help="Write a portable run folder here: the run's trial lines (latest "
                         "attempts), spec, summary and a manifest of digests, which `ix "
                         "import` and `ix report` read back.", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out.")]
        = False,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Export a run: its trials as jsonl, json, csv or parquet, Inspect AI eval logs,
    a portable run folder or an MLflow tracking folder.

    Exit codes: 0 written, 2 bad input (unknown run or format, --out exists without --force,
    mlflow not installed).
    """
    fmt, where_to = transfer.export_target(fmt, out_path, folder)
    result = transfer.export_run(lab, run, fmt, where_to, force=force, warn=warn)
    if json_out:
        print_json(result.as_dict())
        return
    where = ", ".join(str(f) for f in result.files) if result.format == "inspect" \
        else str(result.out)
    out.print(f"exported run {result.run_id} ({result.experiment}, {result.trials} trial "
              f"lines) as {result.format}: {where}", soft_wrap=True, markup=False)


def import_(
    path: Annotated[Path, typer.Argument(help="The file to import (for inspect: a JSON eval "
                                              "log, or a folder of them).",
                                         show_default=False)],
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help="inspect (Inspect AI JSON eval logs), jsonl (ix trial lines), "
                               "csv (the columns of `ix export --format csv`) or folder (a "
                               "folder `ix export --folder` wrote; the default for a folder "
                               "holding manifest.json).", show_default=False)] = None,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", help="The experiment to add the run to (created if the lab has "
                             "none of that name). Default: the one the file names.",
        show_default=False)] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Import a file the experiment has imported before (same bytes) "
                        "again, as one more run: its trials then count twice.")] = False,
    lab: Lab = None,
    json_out: Json = False,
) -> None:
    """Import outside results as a new, completed run of an experiment in the lab.

    The run appears whole or not at all. A file the experiment imported before is refused
    unless --force.

    Exit codes: 0 imported, 2 bad input (the file, the format, a re-import without --force,
    a full disk; nothing is written).
    """
    result = transfer.import_results(lab, path, transfer.import_format(fmt, path),
                                     experiment=experiment, force=force,
                                     command=["ix", *sys.argv[1:]], warn=warn)
    if json_out:
        print_json(result.as_dict())
        return
    made = " (new experiment)" if result.created_experiment else ""
    out.print(f"imported {result.trials} trials ({len(result.subjects)} subject(s), "
              f"{result.cases} cases) as run {result.run_id} of {result.experiment}{made}",
              soft_wrap=True, markup=False)
    out.print(f"run folder: {result.run_dir}", soft_wrap=True, markup=False, style="dim")


def register(app: typer.Typer) -> None:
    """Add `export` and `import` to the `ix` command."""
    app.command("export")(export)
    app.command("import")(import_)
