"""`context:` (DESIGN.md §7): a shared prefix of turns before every case, at several lengths.

The prefix is a file of turns in the format of a case's `history` (or `builtin:<name>`, a
prefix shipped with ix). Each subject expands into one subject per length, named
`<subject>[ctx=<length>]`, the first subject at the first length first (the control), so
trial keys, resume, the cache, the index and comparisons see ordinary subjects. A length
counts `unit`s from the start of the prefix: `turns`; `tool_calls` (the prefix up to the turn
that makes that many); or `tokens`, estimated as one per four characters of the turns' text,
tool names, inputs (as JSON) and results, rounded up — the prefix ends at the first turn
that reaches the length. The prefix comes before the case's own history.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Final, Literal

from ix.domain.errors import ConfigError
from ix.domain.types import ORIGIN, Subject
from ix.eval.models import Turn
from ix.fs.yamlio import load_yaml_file, parse_yaml
from ix.lab.history import turns_of
from ix.lab.schema import ContextSpec, PrefixSpec, validate

__all__ = ["BUILTIN", "ORIGIN", "Context", "chars", "expanded_name", "load_context", "tokens"]

Unit = Literal["turns", "tool_calls", "tokens"]
#: `prefix: builtin:<name>`: the prefixes shipped with ix (`ix/lab/prefixes/<name>.yaml`).
BUILTIN = ("coding-session",)
#: The subject config key that holds an expanded subject's length and its base's name.
KEY: Final = "context"


def expanded_name(subject: str, length: int) -> str:
    return f"{subject}[ctx={length}]"


def chars(turn: Turn) -> int:
    """The characters a turn sends: its text, and each tool call's name, input (JSON) and
    result."""
    return len(turn.content) + sum(len(c.name) + len(json.dumps(c.input)) + len(c.result)
                                   for c in turn.tool_calls)


def tokens(turn: Turn) -> int:
    """The documented estimate: one token per four characters, rounded up."""
    return math.ceil(chars(turn) / 4)


def _units(turn: Turn, unit: Unit) -> int:
    return {"turns": 1, "tool_calls": len(turn.tool_calls), "tokens": tokens(turn)}[unit]


@dataclass(frozen=True)
class Context:
    """An experiment's prefix, the unit its lengths count and the lengths."""

    prefix: tuple[Turn, ...]
    unit: Unit
    lengths: tuple[int, ...]
    source: str

    def total(self) -> int:
        """The prefix's length in units."""
        return sum(_units(t, self.unit) for t in self.prefix)

    def cut(self, length: int) -> tuple[Turn, ...]:
        """The shortest start of the prefix holding `length` units (none for 0)."""
        count = 0
        for i, turn in enumerate(self.prefix):
            if count >= length:
                return self.prefix[:i]
            count += _units(turn, self.unit)
        return self.prefix

    def expand(self, subjects: Sequence[Subject]) -> list[Subject]:
        """Every subject at every length: `<subject>[ctx=<length>]`, subject by subject."""
        return [Subject(name=expanded_name(s.name, n), description=s.description,
                        config={**s.config, KEY: {"of": s.name, "length": n},
                                ORIGIN: s.config.get(ORIGIN, s.name)})
                for s in subjects for n in self.lengths]


def load_context(spec: ContextSpec, experiment_dir: Path, file: Path) -> Context:
    """The experiment's `context:`, its prefix read and checked; `ConfigError` naming the
    experiment file (or the prefix file) and the field."""
    if spec.prefix.startswith("builtin:"):
        name = spec.prefix.removeprefix("builtin:")
        if name not in BUILTIN:
            raise ConfigError(f"no built-in prefix {name!r}; built-in: "
                              f"{', '.join(BUILTIN)}", file=file, field="context.prefix")
        where: Path | str = f"builtin:{name}"
        data = parse_yaml(files("ix.lab").joinpath("prefixes", f"{name}.yaml").read_text(
            encoding="utf-8"), file=where)
    else:
        where = (experiment_dir / spec.prefix).resolve()
        if not where.is_file():
            raise ConfigError(f"no prefix file {spec.prefix!r} (looked for {where})",
                              file=file, field="context.prefix")
        data = load_yaml_file(where)
    turns = turns_of(validate(PrefixSpec, {"history": data}, file=where, what="prefix").history,
                     where)
    if not turns:
        raise ConfigError("the prefix has no turns", file=where, field="history")
    context = Context(turns, spec.unit, tuple(spec.lengths), spec.prefix)
    longest, total = max(spec.lengths), context.total()
    if longest > total:
        raise ConfigError(f"the longest length, {longest} {spec.unit}, is more than the prefix "
                          f"holds ({total} {spec.unit} in {spec.prefix})", file=file,
                          field="context.lengths")
    return context
