"""`ix plugins`: the runtime, sensor, probe, scorer and reporter kinds installed from other
distributions."""

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ix.api.plugins import list_plugins, plugins_output
from ix.cli.options import Json
from ix.cli.output import err, out, print_json


def plugins(
    check: Annotated[bool, typer.Option(
        "--check", help="Import each plugin and report the ones that fail (exit 1 if any "
                        "does).")] = False,
    lab: Annotated[str | None, typer.Option(
        "--lab", help="Accepted for symmetry with the other commands; unused.",
        show_default=False, hidden=True)] = None,
    json_out: Json = False,
) -> None:
    """List the installed plugins: runtime, sensor, probe, scorer and reporter kinds that
    other distributions provide (entry points ix.runtimes, ix.sensors, ix.probes,
    ix.scorers, ix.reporters), with their distribution and version. A plugin whose name a
    built-in kind has is shadowed: the built-in wins.

    Exit codes: 0 listed, 1 with --check when a plugin does not import.
    """
    found = list_plugins(check=check)
    if json_out:
        print_json(plugins_output(found))
    elif not found:
        out.print("no plugins installed (entry-point groups ix.runtimes, ix.sensors, "
                  "ix.probes, ix.scorers, ix.reporters; docs/plugins.md)", soft_wrap=True)
    else:
        table = Table(show_edge=False)
        for col in ("group", "name", "distribution", "version", "target"):
            table.add_column(col, no_wrap=True)
        if check:
            table.add_column("loads", overflow="fold", min_width=20)
        for p in found:
            name = p.plugin.name + (" (shadowed)" if p.shadowed else "")
            row = [p.plugin.kind, name, p.plugin.distribution or "-",
                   p.plugin.version or "-", p.plugin.target]
            if check:
                row.append("yes" if p.loads else f"no: {p.error}")
            table.add_row(*(Text(x) for x in row))
        out.print(table)
        if any(p.shadowed for p in found):
            err.print("note: a shadowed plugin is never used: the built-in kind of that name "
                      "wins", soft_wrap=True, markup=False)
    if check and any(p.error is not None for p in found):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("plugins")(plugins)
