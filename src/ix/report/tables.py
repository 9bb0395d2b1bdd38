"""Tables that never cut a value: every table ix prints goes through `fitted`.

A table is shown as a table when its natural width (every cell on one line; prose columns may
wrap at spaces down to `PROSE_MIN`) fits the console; otherwise each row becomes a record: the
row's key on a line, then `column: value` pairs packed into lines of the console's width. An
id, a name, a number or an interval is never folded, wrapped or ellipsised, so whatever is
printed can be pasted back into a command. docs/cli.md ("Output") describes it.
"""

import copy
import weakref
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from rich.box import HEAVY_HEAD
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Span, Text

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
    """A table as a table when it fits the console's width, else as records (see module).
    Its cells are measured once (`_measure`) and rich prints it at the widths measured
    (`_pinned`): rich's own measurement of the table takes every cell through its layers
    twice, and printing it once more."""

    def __init__(self, t: Table, key: int | None = None) -> None:
        self.table = copy.copy(t)
        self.table.title = None  # printed above, at the console's width, never squeezed
        self.title = t.title
        self.key = _KEYS.get(t, 0) if key is None else key
        for col in t.columns:
            if not _is_prose(col):
                col.no_wrap = True
            col.overflow = "fold"  # never an ellipsis, whatever the width
        self._measured: tuple[Console, ConsoleOptions, list[int]] | None = None

    def widths(self, console: Console, options: ConsoleOptions) -> list[int]:
        """`_measure` of the table, kept for the next ask on the same console and options
        (`Keyed` asks before printing)."""
        wide = options.update_width(_WIDE)
        if self._measured is None or self._measured[0] is not console \
                or self._measured[1] != wide:
            self._measured = (console, wide, _measure(console, options, self.table))
        return self._measured[2]

    def fits(self, console: Console, options: ConsoleOptions) -> bool:
        """Whether the table shows as a table at the console's width (else as records)."""
        widths = self.widths(console, options)
        return _needed(console, options, self.table, widths) <= options.max_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title is not None:
            yield console.render_str(self.title, style="table.title", highlight=False) \
                if isinstance(self.title, str) else self.title
        if not _flat(self.table):  # nested renderables: printed as rich lays them out
            yield self.table
        elif not self.fits(console, options):
            yield from _joined(_records(console, self.table, self.key, options.max_width))
        else:
            yield _pinned(console, options, self.table, self.widths(console, options))

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


def plain_pieces(console: Console, options: ConsoleOptions, renderable: Any
                 ) -> Iterator[str | Any]:
    """`renderable` as a console with no colour prints it: the text of each line whose
    layout ix settled itself (`Prose`, a table's records), the line's end included; anything
    else (a table shown as a table) as itself, for rich to print. The same characters rich
    writes, without taking every line through rich's segments once more: that pass was most
    of the time `ix report` and `ix results` spent printing (tests/report/test_plain_print.py
    compares the two)."""
    width = options.max_width
    if isinstance(renderable, Group):
        for child in renderable.renderables:
            yield from plain_pieces(console, options, child)
    elif isinstance(renderable, Prose):
        for line in renderable._lines(width):
            yield _plain(line, width)
    elif isinstance(renderable, Keyed):
        for part in renderable.parts(console, options):
            yield from plain_pieces(console, options, part)
    elif isinstance(renderable, Fitted) and _flat(renderable.table):
        if renderable.title is not None:
            title = renderable.title
            yield _plain(console.render_str(title, style="table.title", highlight=False)
                         if isinstance(title, str) else title, width)
        if not renderable.fits(console, options):
            for line in _records(console, renderable.table, renderable.key, width):
                yield _plain(line, width)
        else:
            widths = renderable.widths(console, options)
            rows = _plain_rows(console, options, renderable.table, widths)
            yield from rows if rows is not None else \
                [_pinned(console, options, renderable.table, widths)]
    else:
        yield renderable


def _plain_rows(console: Console, options: ConsoleOptions, t: Table,
                widths: list[int]) -> list[str] | None:
    """The lines of `t`, a table of ix's style (`table`) that fits at the `widths` measured, as
    rich prints it with no colour: each cell on one line, padded and justified as its column
    says, `┃` between the headers, a `━╇━` rule under them, `│` between the cells. None for
    any table rich must lay out itself (another box or padding, a cell of several lines, a
    centred column, a caption)."""
    if t.box is not HEAVY_HEAD or t.show_edge or t.pad_edge or t.padding != (0, 1, 0, 1) \
            or not t.show_header or t.show_footer or t.show_lines or t.leading \
            or t.collapse_padding or t.caption is not None or _sizes_itself(t) \
            or options.ascii_only or options.legacy_windows \
            or _natural(console, options, t, widths) > options.max_width:  # prose wraps
        return None
    last = len(t.columns) - 1
    columns = []
    for i, (col, width) in enumerate(zip(t.columns, widths, strict=True)):
        inner = width - t._get_padding_width(i)
        cells = []
        for cell in (col.header, *col.cells):
            text = _render(console, cell)
            plain = text.plain
            justify = text.justify or col.justify
            if "\n" in plain or "\t" in plain or justify not in ("left", "default", "right"):
                return None
            if justify == "right":
                plain = plain.rstrip()
            room = inner - cell_len(plain)
            if room < 0:
                return None  # wider than measured: rich folds it
            fill = " " * room
            cells.append(f"{' ' if i else ''}"
                         f"{fill + plain if justify == 'right' else plain + fill}"
                         f"{' ' if i < last else ''}")
        columns.append(cells)
    rows = list(zip(*columns, strict=True))
    lines = [HEAVY_HEAD.head_vertical.join(rows[0]) + "\n",
             HEAVY_HEAD.get_row(widths, "head", edge=False) + "\n"]
    for n, row in enumerate(rows[1:], 1):  # the last row is rich's footer row
        vertical = HEAVY_HEAD.foot_vertical if n == len(rows) - 1 else HEAVY_HEAD.mid_vertical
        lines.append(vertical.join(row) + "\n")
    return lines


def _plain(line: Text, width: int) -> str | Text:
    """The line as rich would write it off a terminal: its text and end, when rich would
    neither wrap, pad, fold nor expand it; else the line, for rich to print."""
    plain = line.plain
    if line.end == "\n" and line.justify in (None, "default") and "\t" not in plain \
            and "\n" not in plain \
            and (cell_len(plain) <= width or (line.no_wrap and line.overflow == "ignore")):
        return plain + "\n"
    return line


class Prose:
    """Text wrapped by ix's one rule (`_cuts`): an interval `[0.22, 0.88]`, a `command`, a
    label and its number stay on one line; an indented line's continuation hangs two
    columns deeper. A token longer than the width is printed whole. `whole`: phrases never
    broken inside either (`cost per success`), as one word would not be."""

    def __init__(self, text: Text, whole: Sequence[str] = ()) -> None:
        self.text = text
        self.whole = [p for p in whole if " " in p]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from _joined(self._lines(options.max_width))

    def _lines(self, width: int) -> Iterator[Text]:
        """The text's lines, each cut at `width` by `_cuts`."""
        for line in self.text.split("\n", allow_blank=True):
            if line.cell_len <= width or self.text.no_wrap:
                yield line
                continue
            indent = len(line.plain) - len(line.plain.lstrip(" "))
            hang = indent + 2 if 0 < indent < width // 2 else 0  # an indented line hangs
            cuts = _cuts(_glued(line.plain, self.whole), width - hang)
            for i, piece in enumerate(line.divide(cuts) if cuts else [line]):
                piece.rstrip()
                if i and hang:
                    piece = Text(" " * hang) + piece
                if piece.cell_len > width:  # one path or id longer than the width: whole
                    piece.no_wrap, piece.overflow = True, "ignore"
                yield piece

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)


def _cuts(plain: str, width: int) -> list[int]:
    """Offsets at which to break `plain` into lines of at most `width` cells: ix's one rule for
    wrapping terminal text. A line breaks after a space, never inside brackets `[0.22, 0.88]`
    or a `command`, and — unless no other break fits the line — not between a label and its
    number (`(not) 0.156`, `>= 0.95`) nor inside parentheses. A token wider than the line (a
    path, an id) is never cut: it stands alone on its line, where it can be copied whole."""
    strong, weak = _breaks(plain)
    kinds = sorted([(b, True) for b in strong] + [(b, False) for b in weak])
    offsets = [b for b, _ in kinds]
    cuts: list[int] = []
    start = 0
    reach = 4 * width + 8
    while len(plain) - start > reach or cell_len(plain[start:].rstrip()) > width:
        # breaks within reach: a line of `width` cells holds at most a few times as many
        # characters (zero-width ones), so the scan stays linear in the text
        lo, hi = bisect_right(offsets, start), bisect_right(offsets, start + reach)
        ahead = kinds[lo:hi] or kinds[lo:lo + 1]
        fitting = [(b, firm) for b, firm in ahead if cell_len(plain[start:b].rstrip()) <= width]
        firm = [b for b, is_firm in fitting if is_firm]
        if firm or fitting:  # the last strong break that fits, else the last weak one
            cut = firm[-1] if firm else fitting[-1][0]
        elif ahead:  # one unbreakable run wider than the line: alone on its line
            cut = ahead[0][0]
        else:
            break
        cuts.append(cut)
        start = cut
    return cuts


def _glued(plain: str, phrases: Sequence[str]) -> str:
    """`plain` with the spaces inside each of `phrases` made no-break (U+00A0, one character
    as a space is), where `_cuts` finds no break; only the cuts are taken from it."""
    for phrase in phrases:
        plain = plain.replace(phrase, phrase.replace(" ", "\xa0"))
    return plain


def hanging(text: str, width: int, hang: int = 2, keep: int = 0) -> list[str]:
    """`text` in lines of at most `width` cells by ix's one rule (`_cuts`), each line's
    continuation indented `hang` columns deeper than it; its first `keep` characters (a
    prefix, `ix: warning:`) are never broken when they fit the width, so a message on stderr
    keeps its prefix on its first line, where grep finds it. Lines break at spaces only (never
    inside brackets `[too-few-cases]`, an interval or a `command`); a token wider than a line
    (a path, a URL) stands whole on a line of its own. Only the spaces at the breaks are
    dropped: no word is cut or lost."""
    lines: list[str] = []
    for n, line in enumerate(text.rstrip().split("\n")):
        line = line.rstrip()
        pad = " " * (len(line) - len(line.lstrip(" ")) + hang)
        glued = line if n or cell_len(line[:keep]) > width else \
            _glued(line, [line[:keep]])  # no break inside the prefix
        cut = next(iter(_cuts(glued, width)), len(line))
        lines.append(line[:cut].rstrip())
        rest = line[cut:]
        cuts = _cuts(rest, max(1, width - len(pad)))
        lines += (pad + rest[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(rest)],
                                                         strict=True) if rest[a:b].strip())
    return lines


_OPERATORS = ("=", "==", ">=", "<=", ">", "<", "≥", "≤", "→", "±")


def _breaks(plain: str) -> tuple[list[int], list[int]]:
    """Where a line may break: `strong` (after a space between words) and `weak` (after a
    space inside parentheses or before a number), neither inside brackets or backticks."""
    strong: list[int] = []
    weak: list[int] = []
    square = paren = 0
    tick = False
    word_start = 0  # where the word before the current space starts
    for i, ch in enumerate(plain):
        if ch == "`":
            tick = not tick
        elif not tick:
            square += (ch == "[") - (ch == "]")
            paren += (ch == "(") - (ch == ")")
        if ch != " ":
            continue
        before, word_start = plain[word_start:i], i + 1
        if tick or square > 0 or i + 1 >= len(plain) or plain[i + 1] == " ":
            continue
        end = plain.find(" ", i + 1)
        after = plain[i + 1:end if end >= 0 else len(plain)]
        numeric = after[:1].isdigit() or (after[:1] in "+-−" and after[1:2].isdigit())
        operator = before in _OPERATORS or after in _OPERATORS
        count = before.replace(",", "").isdigit()  # `783 trials`: a count and its unit
        (weak if paren > 0 or numeric or operator or count else strong).append(i + 1)
    return strong, weak


def needed_width(console: Console, options: ConsoleOptions, t: Table) -> int:
    """The width at which `t` shows every identifier and number on one line."""
    return _needed(console, options, t, _measure(console, options, t))


def _needed(console: Console, options: ConsoleOptions, t: Table, widths: list[int]) -> int:
    """`needed_width` of `t`, its columns' `widths` known."""
    natural = _natural(console, options, t, widths)
    for col in t.columns:
        if _is_prose(col):
            longest = max((_widest(_render(console, c)) for c in (col.header, *col.cells)),
                          default=0)
            natural -= max(0, longest - PROSE_MIN)
    return natural


def _measure(console: Console, options: ConsoleOptions, t: Table) -> list[int]:
    """Each column's width with every cell on one line, padding included: what rich measures
    as the column's maximum, at an unbounded width."""
    wide = options.update_width(_WIDE)
    return [_column_width(console, wide, t, col) for col in t.columns]


def _column_width(console: Console, options: ConsoleOptions, t: Table, col: Column) -> int:
    """The column's maximum width as rich measures it. A column of text is as wide as its
    widest line, padded and clamped as rich does it, which rich learns by taking every cell
    through several layers (Padding, Measurement, casts) at many times the cost; any other
    column, rich measures."""
    cells = [*([col.header] if t.show_header else []), *col.cells,
             *([col.footer] if t.show_footer else [])]
    widths = [w for w in (_text_width(console, options, c) for c in cells) if w is not None]
    if t.collapse_padding or col.width is not None or not cells or len(widths) < len(cells):
        return t._measure_column(console, options, col).maximum
    pad = t._get_padding_width(col._index)
    return Measurement(0, min(max(widths) + pad, options.max_width)).clamp(
        None if col.min_width is None else col.min_width + pad,
        None if col.max_width is None else col.max_width + pad).maximum


def _text_width(console: Console, options: ConsoleOptions, cell: Any) -> int | None:
    """The width of a cell of text (`str` or `Text`) as rich measures it; None for any
    other renderable."""
    if isinstance(cell, str):
        cell = console.render_str(cell, markup=options.markup, highlight=False)
    return _widest(cell) if isinstance(cell, Text) else None


def _widest(text: Text) -> int:
    """The width of `text`'s widest line (what rich measures as its maximum)."""
    return min(max(map(cell_len, text.plain.splitlines()), default=0), _WIDE)


def _natural(console: Console, options: ConsoleOptions, t: Table, widths: list[int]) -> int:
    """The width of `t` with every cell on one line, as `Measurement.get` has it."""
    if _sizes_itself(t):
        return Measurement.get(console, options.update_width(_WIDE), t).maximum
    return max(0, sum(widths) + t._extra_width)


def _pinned(console: Console, options: ConsoleOptions, t: Table, widths: list[int]) -> Table:
    """`t` with the widths rich prints its columns at given, so that it measures none of their
    cells again: every column's measured width when the table fits as it is; else (rich
    wraps its prose columns to fit) the width of each column that never wraps."""
    if _sizes_itself(t):
        return t  # rich sizes it as the table asks
    fits = _natural(console, options, t, widths) <= options.max_width
    pinned = copy.copy(t)
    pinned.columns = [
        replace(col, width=width - t._get_padding_width(col._index))
        if fits or (col.no_wrap and col.min_width is None and col.max_width is None) else col
        for col, width in zip(t.columns, widths, strict=True)]
    return pinned


def _sizes_itself(t: Table) -> bool:
    """A table with a width, a minimum width or `expand`: rich sizes it to that."""
    return t.expand or t.min_width is not None


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


def _records(console: Console, t: Table, key: int, width: int) -> Iterator[Text]:
    """Each row: its key cell, then `header: value` pairs packed two spaces apart."""
    columns = t.columns
    labels = [f"{_render(console, col.header).plain}: " for col in columns]
    rows = zip(*(list(col.cells) for col in columns), strict=True) if columns else iter(())
    for cells in rows:
        head = _render(console, cells[key]).copy() if key < len(cells) else Text()
        head.stylize("bold")
        yield head
        line = Text("  ")
        for i, (label, cell) in enumerate(zip(labels, cells, strict=True)):
            value = _render(console, cell)
            if i == key or not value.plain.strip():
                continue
            pair = Text.assemble((label, "dim"), value)
            if line.plain.strip() and line.cell_len + 2 + pair.cell_len > width:
                yield line
                line = Text("  ")
            if line.plain.strip():
                line.append("  ")
            line.append_text(pair)
        if line.plain.strip():
            yield line


def _joined(lines: Iterable[Text]) -> Iterator[Text]:
    """`lines`, each run of them that rich prints alike joined into one Text: rich's cost is
    per Text printed, and it prints a joined run line by line, as it would each alone."""
    run: list[Text] = []
    for line in lines:
        if run and not _alike(run[0], line):
            yield _join(run)
            run = []
        run.append(line)
    if run:
        yield _join(run)


def _alike(a: Text, b: Text) -> bool:
    """Whether `a` and `b` print by the same rules (style, wrapping, justification, tabs),
    each ending its line."""
    return a.end == b.end == "\n" and (a.style, a.justify, a.overflow, a.no_wrap, a.tab_size) \
        == (b.style, b.justify, b.overflow, b.no_wrap, b.tab_size)


def _join(run: list[Text]) -> Text:
    """The lines of `run` (alike) as one Text with their rules and their spans."""
    if len(run) == 1:
        return run[0]
    joined = run[0].blank_copy("\n".join(line.plain for line in run))
    spans: list[Span] = []
    offset = 0
    for line in run:
        spans += (span.move(offset) for span in line.spans)
        offset += len(line) + 1
    joined.spans = spans
    return joined


class Keyed:
    """Tables that name conditions (subjects, `name[ctx=32]`, sweep cells): shown with the
    names when every table fits the width; else each name becomes a key (`A`, `B`, ...) and
    a legend above them says which (`A = frontend-design-plus-theme-factory`), so a name is
    never wrapped, cut or ellipsised. `build(label)` makes the parts, naming each condition
    `label(name)`."""

    def __init__(self, names: Iterable[str], build: Any) -> None:
        self.names = list(dict.fromkeys(names))
        self.build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.parts(console, options)

    def parts(self, console: Console, options: ConsoleOptions) -> list[Any]:
        """The parts with the names when every table fits, else the legend and the parts
        with the keys."""
        parts = [fit(p) for p in self.build(lambda name: name)]
        if all(p.fits(console, options) for p in parts if isinstance(p, Fitted)):
            return parts  # measured once: the fit is known when they are printed
        keys = dict(zip(self.names, letters(len(self.names)), strict=True))
        return [legend(keys, options.max_width),
                *(fit(p) for p in self.build(lambda name: keys.get(name, name)))]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def letters(n: int) -> list[str]:
    """`A` … `Z`, then `AA`, `AB`, …: the keys of `n` names."""
    out = []
    for i in range(n):
        key = ""
        i += 1
        while i:
            i, r = divmod(i - 1, 26)
            key = chr(65 + r) + key
        out.append(key)
    return out


def legend(keys: dict[str, str], width: int) -> Text:
    """`A = name` entries packed into lines of `width`, never broken inside an entry."""
    text, line = Text(), 0
    for name, key in keys.items():
        entry = f"{key} = {name}"
        if line and line + 2 + len(entry) > width:
            text.append("\n")
            line = 0
        elif line:
            text.append("  ")
            line += 2
        text.append(key, style="bold")
        text.append(f" = {name}")
        line += len(entry)
    text.no_wrap = True  # packed here; an entry wider than the line stays whole
    return text


def decimal(value: float, digits: int = 3, *, grouping: bool = False) -> str:
    """ix's one rule for a fractional number shown to a reader (`ix query`, `ix results`,
    the viewer): `digits` decimals, trailing zeros kept (0.750, 0.300, 0.889), so a column
    lines up and a value never looks more or less precise than its neighbours; a non-zero
    value that would show as zero keeps 3 significant digits (1.23e-05). docs/queries.md."""
    if value != 0 and abs(value) < 0.5 * 10 ** -digits:
        return f"{value:.2e}"
    return f"{value:,.{digits}f}" if grouping else f"{value:.{digits}f}"


__all__ = ["PROSE_MIN", "Fitted", "Keyed", "column", "decimal", "fit", "fitted", "hanging", "key",
           "legend", "letters", "needed_width", "table"]
