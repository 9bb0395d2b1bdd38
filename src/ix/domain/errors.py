"""Errors a user can fix. Every layer raises them; the CLI prints them as one line, exit 2.

    Exception
    ├── IxError          one line for the user: `file: field: message`; exit 2, no traceback
    │   ├── ConfigError      bad input or configuration; says what is allowed
    │   │   ├── ConfigErrors     several problems at once (`ix validate` lists each)
    │   │   ├── UnsafePath       a write outside the lab, through a link (ix.fs.paths)
    │   │   ├── MissingSkill     a skill that is not in the lab's skills/ (ix.lab.loader)
    │   │   └── DesignError      design checks refused under --strict (ix.api.design)
    │   ├── StorageError     the disk refused a write: full, read-only (ix.fs.storage_faults)
    │   ├── RunBusy          another ix process is executing the run (holds its lock)
    │   └── NotFound         the run, case or trial named does not exist (the viewer's 404)
    └── TrialError       one trial failed as its runtime understands it: recorded in the
                         trial's `error` (`kind` groups them), never shown as a command's error

`except IxError` is "anything the user can fix"; catch a narrower class only when the handling
differs. Pydantic's errors become `ConfigError`s in `ix.eval.validation`.
"""

import difflib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

#: Where a warning goes: one line for the user (the CLI prints it on stderr, a library caller
#: may collect it). Passed down by the commands that can warn; never an exception.
Warn = Callable[[str], None]


class IxError(Exception):
    """An error a user can fix: names the file and the field when there are ones, and what to
    do; the CLI prints `render()` as one line and exits 2."""

    def __init__(self, message: str, *, file: Path | str | None = None, field: str | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.field = field
        super().__init__(self.render())

    def render(self) -> str:
        where = self.file or ""
        if self.field:
            where = f"{where}: {self.field}" if where else self.field
        return f"{where}: {self.message}" if where else self.message


class ConfigError(IxError):
    """Bad input or configuration: names the file and the field, and says what is allowed."""

    def at(self, file: Path | str | None = None, prefix: str | None = None) -> "ConfigError":
        """The same error located in `file` (unless it already names one), its field nested
        under `prefix`."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return ConfigError(self.message, file=self.file or file, field=field)


class ConfigErrors(ConfigError):
    """Several problems found at once (`ix validate` lists each). Raised, it reads as its first
    problem plus how many more, so a command that stops at bad input still prints one line."""

    def __init__(self, errors: Sequence[ConfigError]):
        if not errors:
            raise ValueError("ConfigErrors needs at least one error")
        self.errors = list(errors)
        first = self.errors[0]
        more = len(self.errors) - 1
        note = (f" (and {more} more problem{'s' if more > 1 else ''}: `ix validate` lists "
                "them all)") if more else ""
        super().__init__(first.message + note, file=first.file, field=first.field)

    def at(self, file: Path | str | None = None, prefix: str | None = None) -> "ConfigError":
        return ConfigErrors([e.at(file, prefix) for e in self.errors])


class StorageError(IxError):
    """The results could not be written (a full disk, a read-only folder, a deleted lab).

    A user can fix it, so the CLI prints it as one line and exits 2, as for bad input;
    `ix.fs.storage_faults` makes it from the `OSError` (or DuckDB error) underneath."""


class RunBusy(IxError):
    """Another process is executing the run (it holds the run's lock)."""

    def __init__(self, directory: Path, holder: str):
        super().__init__(f"run {directory.name} is being executed by another ix process "
                         f"({holder}); wait for it to end, then continue the run",
                         file=directory)


class NotFound(IxError):
    """What was named (a run, a case, a trial) does not exist; the viewer answers 404."""


def flatten(errors: Iterable[ConfigError]) -> list[ConfigError]:
    """Each problem once, in order: a `ConfigErrors` opens into its problems."""
    out: list[ConfigError] = []
    seen: set[str] = set()
    for exc in errors:
        for one in exc.errors if isinstance(exc, ConfigErrors) else [exc]:
            if one.render() not in seen:
                seen.add(one.render())
                out.append(one)
    return out


def raise_all(errors: Sequence[ConfigError]) -> None:
    """Raise the problems found (one as itself, several as `ConfigErrors`); none: return."""
    found = flatten(errors)
    if len(found) == 1:
        raise found[0]
    if found:
        raise ConfigErrors(found)


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`; did you mean 'xlsx'?` when a choice is close to `word` (difflib), else ''."""
    if not isinstance(word, str):
        return ""
    options = [str(c) for c in choices]
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:  # letter case only ("Activation"), or a close prefix
        close = [c for c in options if c.lower() == word.lower()][:1]
    return f"; did you mean {close[0]!r}?" if close else ""


class TrialError(Exception):
    """A trial failed in a way the runtime understands; `kind` groups failures in reports.

    Not an `IxError`: it is data about one trial (its line's `error`), caught by the engine,
    never a command's failure."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")
