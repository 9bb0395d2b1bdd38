"""Where the command writes: results to stdout, progress and problems to stderr."""

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group
from rich.text import Text

from ix.domain.redaction import Redactor, environment_secrets
from ix.fs.files import indented
from ix.report.tables import fit, hanging, plain_pieces


class _Out(Console):
    """stdout: every table printed is fitted to the width (`ix.report.tables`): a table when
    it fits, else one record per row; text wraps at spaces outside brackets. No id, name,
    number or interval is ever cut. One wrapping rule for all text (`layout.Prose`): never
    inside a name, an id, a number, an interval or a `command`, never between a label and its
    value; `soft_wrap=True` is read the same way (a terminal's own wrap would cut words)."""

    def __init__(self, *args: Any, lines: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lines = lines  # off a terminal, lines as written (`diagnostic` lays out `ix:`)

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if self.lines and not self.is_terminal:
            kwargs["soft_wrap"] = True
            super().print(*objects, **kwargs)
            return
        kwargs.pop("soft_wrap", None)
        if objects and all(isinstance(o, str | Text) for o in objects):  # one text, wrapped
            markup, highlight = kwargs.pop("markup", None), kwargs.pop("highlight", None)
            text = Text(style=kwargs.pop("style", None) or "")
            for i, o in enumerate(objects):
                if i:
                    text.append(kwargs.get("sep", " "))
                text.append_text(self.render_str(o, markup=markup, highlight=highlight)
                                 if isinstance(o, str) else o)
            objects = (text,)
        objects = tuple(fit(o) for o in objects)
        kwargs.setdefault("crop", False)  # a path longer than the width is printed whole
        with _collector_paused():
            if self._plain_ok(kwargs):
                self._print_plain(objects, kwargs)
            else:
                super().print(*objects, **kwargs)

    def _plain_ok(self, kwargs: dict[str, Any]) -> bool:
        """Off a terminal with no colour, and nothing asked of rich's layout but the
        defaults: the lines ix laid out itself can be written as they are."""
        return self.color_system is None and not self.record and not self._buffer_index \
            and kwargs.get("end", "\n") == "\n" \
            and not set(kwargs) - {"crop", "sep", "end", "style"}

    def _print_plain(self, objects: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """What `print` writes, the text of each line laid out by `layout` written as it is
        (`plain_pieces`), the rest printed by rich."""
        text: list[str] = []
        for piece in (p for o in objects for p in plain_pieces(self, self.options, o)):
            if isinstance(piece, str):
                text.append(piece)
                continue
            if text:
                self.file.write("".join(text))
                text.clear()
            # in a Group, a line prints as inside the part it came from (a Text printed
            # alone would be joined into a new Text, losing its `no_wrap`)
            super().print(Group(piece) if isinstance(piece, Text) else piece, **kwargs)
        if text:
            self.file.write("".join(text))
            self.file.flush()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while rich renders: printing a report makes some
    hundred thousand short-lived objects, freed as they go, whose count alone set off
    collections that walked the command's whole heap (~50 ms for `ix report`)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


# names are text, `base[ctx=8]` and `:tada:` alike: neither markup nor emoji codes
out = _Out(highlight=False, soft_wrap=False, markup=False, emoji=False)
# stderr: wrapped by the same rule on a terminal; through a pipe or into a CI log each line is
# written as it is. An `ix:` message (an error, a warning, a note) is laid out by `diagnostic`
# at the width, a terminal's or `COLUMNS` else 80, its prefix on its first line for grep.
err = _Out(stderr=True, highlight=False, soft_wrap=False, emoji=False, lines=True)


def print_json(data: Any) -> None:
    sys.stdout.write(indented(data, default=str, allow_nan=True) + "\n")
    sys.stdout.flush()


def diagnostic(prefix: str, message: str, style: str = "") -> None:
    """An `ix:` message on stderr: `prefix` (`ix: warning:`, in `style` on a terminal) and
    the text of `message` (never markup), any secret of the environment in it `[REDACTED]`,
    wrapped to the width by `ix.report.tables.hanging` (continuations indented, never a
    value cut)."""
    lines = hanging(f"{prefix} {_redact(message)}", err.width, keep=len(prefix))
    text = Text("\n".join(lines), no_wrap=True, overflow="ignore")  # laid out: as it is
    if style:
        text.stylize(style, 0, len(prefix))
    err.print(Group(text), soft_wrap=True)


def warn(message: str) -> None:
    """A warning on stderr; the message is text (a `[view]` in it is not markup), any secret
    of the environment in it `[REDACTED]`."""
    diagnostic("ix: warning:", message, "yellow")


def note(message: str) -> None:
    """A line on stderr that says what a command chose for the user (`ix: report of ...`);
    text, never markup."""
    diagnostic("ix:", message)


def fail(message: str) -> None:
    """An error on stderr; the message is text, never markup, any secret of the environment
    in it `[REDACTED]`."""
    diagnostic("ix: error:", message, "bold red")


def _redact(message: str) -> str:
    return Redactor(environment_secrets(os.environ)).text(message)
