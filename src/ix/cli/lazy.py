"""The `ix` command tree with its commands loaded on demand.

Each command lives in its own module (`ix.cli.run`, `ix.cli.validate`, ...), which imports
what it needs at its top (`ix.api`, pydantic, rich, ...). The root group knows each command
by name, module and one-line summary only, and imports a module when one of its commands is
looked up (to run it, or for its own `--help`): `ix --help` and `ix --version` import typer
and nothing of weight.
"""

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup

from ix.cli.options import SETTINGS


@dataclass(frozen=True)
class Entry:
    """A command of the root group: `module` adds it to a Typer with its `register(app)`;
    `summary` is its line in `ix --help` (the first paragraph of its help; a test keeps the
    two equal)."""

    module: str
    summary: str


def _load(name: str, entry: Entry) -> Any:
    holder = typer.Typer(add_completion=False, **SETTINGS)
    importlib.import_module(entry.module).register(holder)
    built = typer.main.get_command(holder)
    return built.commands[name] if isinstance(built, TyperGroup) else built


class _Commands(MutableMapping[str, Any]):
    """The root group's commands: every name known up front, each command built when it is
    first looked up."""

    def __init__(self, entries: Mapping[str, Entry], built: MutableMapping[str, Any]):
        self._entries = entries
        self._built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._entries:
                raise KeyError(name)
            self._built[name] = _load(name, self._entries[name])
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("the commands of ix are fixed")

    def __iter__(self) -> Iterator[str]:
        yield from self._entries
        yield from (n for n in self._built if n not in self._entries)

    def __len__(self) -> int:
        return len(set(self._entries) | set(self._built))


class LazyGroup(TyperGroup):
    """A `TyperGroup` whose commands are `entries`, imported when looked up; its help lists
    them from their summaries without importing any."""

    entries: ClassVar[Mapping[str, Entry]] = {}

    def __init__(self, **attrs: Any):
        super().__init__(**attrs)
        self.commands = _Commands(self.entries, self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """As `TyperGroup.format_commands`, with each summary in place of the command."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, make_default_short_help(self.entries[n].summary, limit)
                 if n in self.entries else self.commands[n].get_short_help_str(limit))
                for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def lazy_group(entries: Mapping[str, Entry]) -> type[LazyGroup]:
    """The group class (`typer.Typer(cls=...)`) of a command tree made of `entries`."""
    return type("IxGroup", (LazyGroup,), {"entries": entries})
