"""Off a terminal, stdout writes the lines ix laid out itself (prose, a table's records, a table
of ix's style that fits) without taking them through rich again (`layout.plain_pieces`): the
same characters rich writes, at any width, for every kind of part a report prints."""

import io
import shutil

import pytest
from rich.console import Group
from rich.table import Table
from rich.text import Text

from conftest import EXAMPLE_LAB, ix_in_process, offline_example
from ix.api.reports import report
from ix.cli.output import _Out
from ix.report.tables import Keyed, column, fit, plain_pieces, table
from ix.report.terminal import report_renderable

WIDTHS = (24, 40, 80, 132)


class _ThroughRich(_Out):
    """ix's stdout as it was: every part printed by rich."""

    def _plain_ok(self, kwargs: dict) -> bool:
        return False


def _both(objects: list, width: int) -> tuple[str, str]:
    """What `ix`'s stdout prints of `objects`, and what it printed through rich alone."""
    options = dict(file=io.StringIO(), width=width, highlight=False, markup=False, emoji=False)
    ours, rich = _Out(**options), _ThroughRich(**{**options, "file": io.StringIO()})
    assert ours._plain_ok({}) and not rich._plain_ok({})
    ours.print(*objects)
    rich.print(*objects)
    return ours.file.getvalue(), rich.file.getvalue()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The example lab's four runs, reported (the outcome experiment's tables of tokens,
    time and cost among them)."""
    lab = tmp_path_factory.mktemp("plain") / "lab"
    shutil.copytree(EXAMPLE_LAB, lab, ignore=offline_example(".ix"))
    r = ix_in_process("run", "--lab", str(lab), "--progress", "none")
    assert r.code == 0, r.output
    return [dict(report(lab, run.name)) for run in lab.glob("*/results/runs/*")]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_report_prints_as_rich_prints_it_and_mostly_without_rich(reports, width):
    assert len(reports) == 4
    for data in reports:
        view = report_renderable(data)
        ours, theirs = _both([view], width)
        assert ours == theirs
        console = _Out(file=io.StringIO(), width=width)
        pieces = list(plain_pieces(console, console.options, fit(view)))
        written = sum(isinstance(p, str) for p in pieces)
        if width >= 80:  # narrower, more lines hold a token wider than the line: rich's
            assert written >= 0.9 * len(pieces), (written, len(pieces))


def _tables() -> list:
    wide = table("title that is longer than the table itself", "name", "rate [95% CI]", "n",
                 right=("rate [95% CI]", "n"))
    wide.add_row("a-only", "1.000 [0.85, 1.00]", "17")
    wide.add_row("名前-with-wide-characters", "0.5", "3")
    wide.add_row("trailing spaces   ", "  0.1  ", "")
    empty = table(None, "only", "headers", right=("headers",))
    one = table("one row", "x")
    one.add_row("y")
    prose = table("prose", "case", "why", prose=("why",))
    prose.add_row("must-001", "a reason that is long enough to wrap at a narrow width " * 2)
    styled = Table(title="another box", show_edge=True)  # not ix's style: rich lays it out
    styled.add_column("a")
    styled.add_row("b")
    centred = table(None, "c")
    column(centred, "centre")
    centred.columns[-1].justify = "center"
    centred.add_row("x", "y")
    several = table(None, "lines")
    several.add_row("one\ntwo")
    right_text = table(None, "k", "v")
    right_text.add_row("k", Text("right  ", justify="right"))
    keyed = Keyed(["frontend-design-plus-theme-factory[ctx=0]", "b[ctx=8]"], lambda label: [
        _named(label("frontend-design-plus-theme-factory[ctx=0]"), label("b[ctx=8]"))])
    return [wide, empty, one, prose, styled, centred, several, right_text, keyed,
            Text("a line with :tada: and [b]brackets[/b] that wraps at the width " * 3),
            Text("right", justify="right"), Text("tab\there"),
            Group(Text("in a group"), one, Text(""))]


def _named(*names: str) -> Table:
    t = table("by condition", "condition", "rate", right=("rate",))
    for n in names:
        t.add_row(n, "0.500")
    return t


@pytest.mark.parametrize("width", WIDTHS)
def test_every_kind_of_part_prints_as_rich_prints_it(width):
    for part in _tables():
        ours, theirs = _both([part], width)
        assert ours == theirs, (width, part)
    ours, theirs = _both(_tables(), width)  # all in one print
    assert ours == theirs


def test_names_are_text_not_emoji_codes():
    console = _Out(file=io.StringIO(), width=80, highlight=False, markup=False, emoji=False)
    console.print("skill :tada: and base[ctx=8]")
    assert console.file.getvalue() == "skill :tada: and base[ctx=8]\n"
    from ix.cli.output import err, out
    assert not out._emoji and not err._emoji
