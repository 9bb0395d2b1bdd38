"""Tables that never cut a value: every table ix prints goes through `fitted`.

A table is shown as a table when its natural width (every cell on one line; prose columns may
wrap at spaces down to `PROSE_MIN`) fits the console; otherwise each row becomes a record: the
row's key on a line, then `column: value` pairs packed into lines of the console's width. An
id, a name, a number or an interval is never folded, wrapped or ellipsised, so whatever is
printed can be pasted back into a command. docs/cli.md ("Output") describes it.
"""

import copy
import weakref
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

#: The narrowest a prose column (descriptions, messages, lists) is wrapped to inside a table.
PROSE_MIN = 24
_WIDE = 100_000
#: The column that heads a table's records when it is not the first (`key`).
_KEYS: "weakref.WeakKeyDictionary[Table, int]" = weakref.WeakKeyDictionary()


def table(title: str | Text | None = None, *columns: str, right: Iterable[str] = (),
          prose: Iterable[str] = ()) -> Table:
    """A table in ix's style with `columns` added: identifiers and numbers never wrap,
    `prose` columns wrap at spaces, `right` columns are right-aligned."""
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    right, prose = set(right), set(prose)
    for name in columns:
        column(t, name, right=name in right, prose=name in prose)
    return t


def column(t: Table, header: str | Text, *, right: bool = False, prose: bool = False) -> None:
    """Add a column: never cut (no ellipsis); only a `prose` column wraps, at spaces."""
    t.add_column(header, justify="right" if right else "left", no_wrap=not prose,
                 overflow="fold", min_width=PROSE_MIN if prose else None)


def key(t: Table, index: int) -> Table:
    """Head each record of `t` with column `index` (e.g. the subject, not the rank)."""
    _KEYS[t] = index
    return t


class Fitted:
    """A table as a table when it fits the console's width, else as records (see module)."""

    def __init__(self, t: Table, key: int | None = None) -> None:
        self.table = copy.copy(t)
        self.table.title = None  # printed above, at the console's width, never squeezed
        self.title = t.title
        self.key = _KEYS.get(t, 0) if key is None else key
        for col in t.columns:
            if not _is_prose(col):
                col.no_wrap = True
            col.overflow = "fold"  # never an ellipsis, whatever the width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title is not None:
            yield console.render_str(self.title, style="table.title", highlight=False) \
                if isinstance(self.title, str) else self.title
        if needed_width(console, options, self.table) <= options.max_width \
                or not _flat(self.table):
            yield self.table
            return
        yield from _records(console, self.table, self.key, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)


def fitted(t: Table, key: int | None = None) -> Fitted:
    """`t` made safe to print at any width; `key` is the column that heads each record when
    the table does not fit (default: the one `key()` set, else the first)."""
    return Fitted(t, key)


def fit(renderable: Any) -> Any:
    """`renderable` with every Table in it (at any depth of Groups) fitted and every Text
    wrapped as `Prose`."""
    if isinstance(renderable, Table):
        return Fitted(renderable)
    if isinstance(renderable, Text):
        return Prose(renderable)
    if isinstance(renderable, Group):
        return Group(*(fit(r) for r in renderable.renderables), fit=renderable.fit)
    return renderable


class Prose:
    """Text wrapped at spaces but never inside brackets: an interval `[0.22, 0.88]` stays
    on one line. A run of text with no such space longer than the width wraps as rich does."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for line in self.text.split("\n", allow_blank=True):
            if line.cell_len <= width or self.text.no_wrap:
                yield line
                continue
            cuts = _cuts(line.plain, width)
            for piece in line.divide(cuts) if cuts else [line]:
                piece.rstrip()
                if piece.cell_len > width:  # one path or id longer than the width: whole
                    piece.no_wrap, piece.overflow = True, "ignore"
                yield piece

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)


def _cuts(plain: str, width: int) -> list[int]:
    """Offsets at which to break `plain` into lines of at most `width` cells (where it can):
    after a space outside brackets."""
    from rich.cells import cell_len

    breaks, depth = [], 0
    for i, ch in enumerate(plain):
        depth += (ch == "[") - (ch == "]")
        if ch == " " and depth <= 0 and i + 1 < len(plain) and plain[i + 1] != " ":
            breaks.append(i + 1)
    cuts: list[int] = []
    start, last = 0, None  # the current line's start, its last break that still fits

    def fits(end: int) -> bool:
        return cell_len(plain[start:end].rstrip()) <= width

    for b in [*breaks, len(plain)]:
        if fits(b):
            last = b
            continue
        if last is not None and last > start:
            cuts.append(last)
            start, last = last, None
            if fits(b):
                last = b
                continue
        if b < len(plain):  # one unbreakable run longer than the width: alone on its line
            cuts.append(b)
            start, last = b, None
    return cuts


def needed_width(console: Console, options: ConsoleOptions, t: Table) -> int:
    """The width at which `t` shows every identifier and number on one line."""
    wide = options.update_width(_WIDE)
    natural = Measurement.get(console, wide, t).maximum
    for col in t.columns:
        if _is_prose(col):
            longest = max((Measurement.get(console, wide, _render(console, c)).maximum
                           for c in (col.header, *col.cells)), default=0)
            natural -= max(0, longest - PROSE_MIN)
    return natural


def _is_prose(col: Column) -> bool:
    """A column that may wrap at spaces: one added with `column(prose=True)`, or any column
    its table asked to wrap and fold (`no_wrap=False, overflow="fold"`)."""
    return not col.no_wrap and (col.min_width == PROSE_MIN or col.overflow == "fold")


def _flat(t: Table) -> bool:
    """Every cell is text (a table of nested renderables is printed as it is)."""
    return all(isinstance(c, str | Text) for col in t.columns
               for c in (col.header, *col.cells))


def _render(console: Console, cell: Any) -> Text:
    if isinstance(cell, Text):
        return cell
    return console.render_str(str(cell), highlight=False)


def _records(console: Console, t: Table, key: int, width: int) -> RenderResult:
    """Each row: its key cell, then `header: value` pairs packed two spaces apart."""
    columns = t.columns
    rows = zip(*(list(col.cells) for col in columns), strict=True) if columns else iter(())
    for cells in rows:
        head = _render(console, cells[key]).copy() if key < len(cells) else Text()
        head.stylize("bold")
        yield head
        line = Text("  ")
        for i, (col, cell) in enumerate(zip(columns, cells, strict=True)):
            value = _render(console, cell)
            if i == key or not value.plain.strip():
                continue
            pair = Text.assemble((f"{_render(console, col.header).plain}: ", "dim"), value)
            if line.plain.strip() and line.cell_len + 2 + pair.cell_len > width:
                yield line
                line = Text("  ")
            if line.plain.strip():
                line.append("  ")
            line.append_text(pair)
        if line.plain.strip():
            yield line


def decimal(value: float, digits: int = 3, *, grouping: bool = False) -> str:
    """ix's one rule for a fractional number shown to a reader (`ix query`, `ix results`,
    the viewer): `digits` decimals, trailing zeros kept (0.750, 0.300, 0.889), so a column
    lines up and a value never looks more or less precise than its neighbours; a non-zero
    value that would show as zero keeps 3 significant digits (1.23e-05). docs/queries.md."""
    if value != 0 and abs(value) < 0.5 * 10 ** -digits:
        return f"{value:.2e}"
    return f"{value:,.{digits}f}" if grouping else f"{value:.{digits}f}"


__all__ = ["PROSE_MIN", "Fitted", "column", "decimal", "fit", "fitted", "key", "needed_width",
           "table"]
