"""An `ix optimize` session on the terminal (rich): `optimize_renderable(state)`.

It formats `ix.report.optimize.outline(state)`, as the Markdown and HTML reports do, in the
same order, the answer first. Every lab string is a `Text`, never markup; at 80 columns
nothing is cut: tables that do not fit become records (`ix.report.tables`), and text wraps
at spaces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ix.report import tables as layout
from ix.report.optimize import PAIRS, Outline, Part, outline

__all__ = ["optimize_renderable"]


_STYLE = {"recommended": "bold green", "not-recommended": "bold yellow",
          "no-candidate": "bold yellow", "unfinished": "bold red"}


class _Wrapped:
    """Lab text (a description, a reason, a path) wrapped at spaces, `indent` cells in,
    without a `Padding`'s trailing spaces. A word longer than the line (a path) stays whole
    on a line of its own, as `layout.Prose` keeps it; unlike Prose, brackets do not hold
    words together (one unclosed `[` in a description would hold all the rest)."""

    def __init__(self, text: Text, indent: int = 0) -> None:
        self.text, self.indent = text, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width - self.indent)
        for paragraph in self.text.split("\n", allow_blank=True):
            for line in paragraph.divide(_breaks(paragraph.plain, width)):
                line.rstrip()
                if self.indent:
                    line = Text(" " * self.indent) + line
                line.no_wrap, line.overflow = True, "ignore"  # fits, or one word: whole
                yield line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        m = Measurement.get(console, options, self.text)
        return Measurement(m.minimum + self.indent, m.maximum + self.indent)


def _breaks(plain: str, width: int) -> list[int]:
    """Offsets that break `plain` after a space into lines of at most `width` cells, but
    for a word longer than that, which gets a line of its own."""
    cuts, start = [], 0
    for word in re.finditer(r"\S+\s*", plain):
        if word.start() > start and cell_len(plain[start:word.end()].rstrip()) > width:
            cuts.append(word.start())
            start = word.start()
    return cuts


def _wrapped(text: Text, indent: int = 0) -> _Wrapped:
    return _Wrapped(text, indent)


def _parts(parts: Sequence[Part]) -> Text:
    text = Text()
    for kind, value in parts:
        text.append(value, style="cyan" if kind == "code" else "")
    return text


def _tab(title: Text | None, *columns: str | Text, right: Sequence[int] = (),
         prose: Sequence[int] = ()) -> Table:
    """A table whose headers are text, never markup (a subject may be named `[x]`)."""
    t = layout.table(title)
    for i, name in enumerate(columns):
        layout.column(t, name if isinstance(name, Text) else Text(name), right=i in right,
                      prose=i in prose)
    return t


def _holdout_parts(o: Outline) -> list[RenderableType]:
    parts: list[RenderableType] = [Text("holdout", style="bold"),
                                   _wrapped(Text(o.holdout_note), 2)]
    for s in o.holdout:
        t = _tab(Text(str(s["subject"]), style="bold"), "", "original",
                 Text(f"candidate {o.candidate}"), right=(1, 2))
        for label, a, b in s["rows"]:
            t.add_row(Text(label), Text(a), Text(b))
        pairs = _tab(Text(f"paired majority votes on the {s['cases']} cases"), "cases",
                     *PAIRS, right=(1, 2, 3, 4))
        for name, cells in s["pairs"]:
            pairs.add_row(Text(f"{name} ({sum(cells)})"), *(Text(str(x)) for x in cells))
        mc = "" if s["mc_error"] is None else f" (Monte Carlo error {s['mc_error']})"
        parts += [Text(""), layout.fitted(t),
                  layout.Prose(Text(f"difference (candidate − original): {s['difference']} "
                                    f"({s['sided']})")),
                  layout.Prose(Text(f"P(holdout F1 better) = {s['prob_better']}{mc}"))]
        if s["exact"]:
            parts.append(layout.Prose(Text(s["exact"])))
        parts += [_wrapped(Text(f"not met: {x}", style="yellow"), 2) for x in s["failed"]]
        parts.append(layout.fitted(pairs))
    return parts


def _rounds_parts(o: Outline) -> list[RenderableType]:
    several = len(o.subjects) > 1
    heads: list[str | Text] = ["round", "candidate"]
    heads += (["mean F1"] + [Text(f"{s} F1 [95% CI]") for s in o.subjects] if several
              else ["train F1 [95% CI]", "TP/FP/FN/TN"])
    t = layout.key(_tab(None, *heads, "wrong", "chosen", right=(0, 2, len(heads))), 1)
    for r in o.rows:
        cells = [Text(str(r["round"])), Text(r["id"])]
        if several:
            cells += [Text(r["f1"])] + [Text((r["by_subject"].get(s) or {}).get("f1", ""))
                                        for s in o.subjects]
        else:
            one = next(iter(r["by_subject"].values()), {"f1": r["f1"], "counts": r["counts"]})
            cells += [Text(one["f1"]), Text(one["counts"])]
        cells += [Text(r["wrong"]), Text(r["mark"], style="bold" if r["mark"] else "")]
        t.add_row(*cells)
    parts: list[RenderableType] = [Text("rounds", style="bold"),
                                   _wrapped(Text(o.rounds_note + "; wrong: train cases it "
                                                 "gets wrong"), 2),
                                   layout.fitted(t)]
    if o.stopped_early:
        parts.append(_wrapped(Text(f"stopped early: {o.stopped_early}")))
    for rnd, text in o.rationales:
        parts.append(_wrapped(Text(f"the proposer's rationale, round {rnd}: {text}",
                                   style="dim"), 2))
    if o.rejected:
        parts.append(Text("rejected proposals", style="bold"))
        for x in o.rejected:
            parts.append(_wrapped(Text.assemble(f"round {x['round']}: ", (x["text"], "italic"),
                                                (f" — {x['reason']}", "yellow")), 2))
    return parts


def _diff_text(ops: Sequence[tuple[str, str]]) -> Text:
    """Deletions `[-struck, red-]`, insertions `{+green+}`: the brackets say it without
    colour too (git's plain word diff)."""
    text = Text()
    for i, (op, words) in enumerate(ops):
        if i:
            text.append(" ")
        if op == "del":
            text.append(f"[-{words}-]", style="red strike")
        elif op == "ins":
            text.append(f"{{+{words}+}}", style="green")
        else:
            text.append(words)
    return text


def _description_parts(o: Outline) -> list[RenderableType]:
    parts: list[RenderableType] = [Text("description", style="bold"), Text("original:"),
                                   _wrapped(Text(o.original), 2)]
    if o.best is None:
        return [*parts, Text(o.best_label, style="dim")]
    return [*parts, Text(f"{o.best_label}:"), _wrapped(Text(o.best), 2),
            Text("word diff (original → best): [-deleted-] {+inserted+}"),
            _wrapped(_diff_text(o.diff), 2)]


def optimize_renderable(state: Mapping[str, Any]) -> RenderableType:
    """The session for a terminal: never cut at any width (tables become records, text
    wraps at spaces; a path longer than the width stays whole on its line)."""
    o = outline(state)
    head = Text(o.verdict, style=_STYLE[o.kind])
    parts: list[RenderableType] = [_wrapped(head)]
    parts += [_wrapped(_parts(note), 2) for note in o.notes]
    parts += [_wrapped(Text(o.head, style="dim")), Text(""), *_holdout_parts(o), Text(""),
              *_rounds_parts(o), Text(""), *_description_parts(o), Text("")]
    parts += [_wrapped(Text.assemble((f"{k}: ", "dim"), v)) for k, v in o.facts]
    parts += [layout.Prose(Text.assemble((f"{k}: ", "dim"), (v, "cyan"))) for k, v in o.files]
    return layout.fit(Group(*parts))
