"""`ix schema [NAME]`: the JSON Schemas of ix's files and of every command's `--json` output."""

from typing import Annotated

import typer
from rich.table import Table

from ix.api.schemas import SCHEMA_VERSION, SCHEMAS, all_schemas, json_schema
from ix.cli.output import out, print_json
from ix.domain.errors import ConfigError


def schema(
    name: Annotated[str | None, typer.Argument(
        help="One schema: trial, summary, or a command (run, validate, ls, compare, report, "
             "results, ...; see --list). Default: all of them.", show_default=False)] = None,
    list_: Annotated[bool, typer.Option("--list", "-l", help="List the schemas' names.")] = False,
    lab: Annotated[str | None, typer.Option(
        "--lab", help="Accepted for symmetry with the other commands; unused.",
        show_default=False, hidden=True)] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="With --list: the names as JSON (the schemas are always JSON).")] = False,
) -> None:
    """Print JSON Schemas (draft 2020-12) generated from ix's pydantic models: the trial line,
    the summary, and each command's --json output. Versioned: docs/json.md."""
    if list_:
        if name is not None:
            raise ConfigError("--list takes no NAME", field="--list")
        if json_out:
            print_json({"schema_version": SCHEMA_VERSION,
                        "schemas": [{"name": e.name, "describes": e.describes}
                                    for e in SCHEMAS.values()]})
            return
        table = Table(title=f"ix JSON schemas, version {SCHEMA_VERSION}", title_justify="left",
                      show_edge=False)
        table.add_column("name", no_wrap=True)
        table.add_column("describes", overflow="fold")  # prose: wraps at spaces
        for e in SCHEMAS.values():
            table.add_row(e.name, e.describes)
        out.print(table)
        return
    if name is None:
        print_json(all_schemas())
        return
    if name not in SCHEMAS:
        raise ConfigError(f"unknown schema {name!r}; allowed: {', '.join(SCHEMAS)}",
                          field="NAME")
    print_json(json_schema(name))


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("schema")(schema)
