"""`ix cache stats|clear`: the lab's record/replay cache of observations (docs/cache.md)."""

import sys
from typing import Annotated

import typer

from ix.api import cache as api_cache
from ix.cli.options import SETTINGS, Lab
from ix.cli.options import JsonText as Json
from ix.cli.output import err, out, print_json
from ix.domain.errors import ConfigError

app = typer.Typer(
    name="cache",
    help="The lab's observation cache (<lab>/.ix/cache/observations/), which `ix run --cache` "
         "records to and replays from. trials.jsonl stays the record of every run.",
    **SETTINGS,
)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _interactive() -> bool:
    return sys.stdin.isatty()


@app.command("stats")
def stats(lab: Lab = None, json_out: Json = False) -> None:
    """How many observations the cache holds and how much disk they take."""
    s = api_cache.cache_stats(lab)
    if json_out:
        print_json(s.as_dict())
        return
    out.print(f"cache: {s.path}", soft_wrap=True, markup=False)
    out.print(f"  entries: {s.entries}   size: {_size(s.bytes)}   shards: {s.shards}")


@app.command("clear")
def clear(
    lab: Lab = None,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Do not ask for confirmation (needed when not on a terminal).")]
        = False,
    json_out: Json = False,
) -> None:
    """Remove every recorded observation of the lab (trials.jsonl is not touched).

    Asks first on a terminal; elsewhere it needs --yes. Exit codes: 0 cleared (or nothing to
    clear), 1 declined at the prompt, 2 no --yes and no terminal to ask on.
    """
    s = api_cache.cache_stats(lab)
    if (s.entries or s.bytes) and not yes:
        if not _interactive():
            raise ConfigError(f"would remove {s.entries} cached observation(s) from {s.path}; "
                              "pass --yes to confirm (no terminal to ask on)", field="--yes")
        if not typer.confirm(f"Remove {s.entries} cached observation(s) ({_size(s.bytes)}) "
                             f"from {s.path}?", default=False, err=True):
            err.print("nothing removed")
            raise typer.Exit(1)
    cleared = api_cache.clear_cache(lab)
    if json_out:
        print_json(cleared.as_dict())
        return
    out.print(f"removed {cleared.removed} cached observation(s) from {cleared.path}",
              soft_wrap=True, markup=False)


def register(app_: typer.Typer) -> None:
    """Add the group to the `ix` application."""
    app_.add_typer(app, name="cache")
